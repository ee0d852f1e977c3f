"""Benchmark clients per measurement source, each as its source documents it (None: undocumented)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from measurements.schema import Protocol


@dataclass(frozen=True)
class ClientProtocol:
    """What a source documents about its benchmark client (None: undocumented)."""

    client: str  # benchmark client and dataset
    prompts_per_concurrency: int | None  # num_prompts = this x C (>= 1)
    request_rate: float | None  # offered requests/s; inf: all dispatched at t = 0
    random_range_ratio: float | None  # r: lengths uniform on [r*L, L]
    ignore_eos: bool | None  # outputs always run to osl tokens
    seed: int | None  # the NumPy seed its random lengths are drawn from (0 <= seed < 2**32); None: per run, or undocumented
    citation: str  # the public document, or why there is none
    ttft_statistic: str  # which TTFT statistic the source reports
    tpot_definition: str  # how the source defines TPOT


INFERENCEX = "inferencex"
AIC_GAP_ANALYSIS = "aic-gap-analysis"
SGL_COOKBOOK = "sgl-cookbook"
UNKNOWN_SOURCE = "unknown"

_VLLM_CLIENT_TPOT = "(e2e - ttft)/(output_len - 1) per request, mean over requests"


def _undocumented(client: str, why: str) -> ClientProtocol:
    """A source whose benchmark client is not published: every client fact None, the figures as shipped."""
    return ClientProtocol(
        client=client, prompts_per_concurrency=None, request_rate=None, random_range_ratio=None, ignore_eos=None, seed=None,
        citation=f"undocumented: {why}", ttft_statistic="as shipped in silicon_sample.csv (statistic not stated)",
        tpot_definition="as shipped in silicon_sample.csv (definition not stated)",
    )  # fmt: skip


CLIENTS: Mapping[str, ClientProtocol] = MappingProxyType(
    {
        INFERENCEX: ClientProtocol(
            client="vLLM benchmark_serving.py, random dataset",
            prompts_per_concurrency=10,
            request_rate=math.inf,
            random_range_ratio=0.8,
            ignore_eos=True,
            seed=0,
            citation=(
                "SemiAnalysisAI/InferenceX benchmarks/benchmark_lib.sh run_benchmark_serving "
                "(--dataset-name random --random-range-ratio $RANDOM_RANGE_RATIO --request-rate inf --ignore-eos, no --seed) "
                "with the per-recipe --num-prompts $((CONC * 10)) --max-concurrency $CONC and RANDOM_RANGE_RATIO=0.8; "
                "utils/bench_serving/benchmark_serving.py @ d053ae24e (kimbochen/bench_serving before it): --seed default 0, "
                "np.random.seed(args.seed) in main (L635-L636), sample_random_requests draws np.random.randint(int(L*r), L + 1, "
                "size=num_prompts) for the inputs, then the outputs (L115), request i dispatched i-th"
            ),
            ttft_statistic="mean over requests",
            tpot_definition=_VLLM_CLIENT_TPOT,
        ),
        AIC_GAP_ANALYSIS: _undocumented("undocumented (AIConfigurator gap-analysis runs)", "the gap-analysis benchmark protocol is not published"),
        SGL_COOKBOOK: ClientProtocol(
            client="SGLang bench_serving (python -m sglang.bench_serving), random dataset",
            prompts_per_concurrency=None,  # each run's --num-prompts, recorded per row
            request_rate=math.inf,  # the default; a run's --request-rate is recorded per row
            random_range_ratio=None,  # per row: SGLang's default 0.0 is recorded as 1/max(isl, osl) (measurements/published/derive.py)
            ignore_eos=True,
            seed=None,  # per row: --seed, default 1 (SGLANG_BENCH_DEFAULTS)
            citation=(
                "sgl-project/sglang python/sglang/bench_serving.py in the PyPI wheels 0.5.6, 0.5.6.post1, 0.5.6.post2, 0.5.8, 0.5.9 "
                "and 0.5.10.post1, alike in these facts (lines @ 0.5.9): --dataset-name default sharegpt (L3026); random dataset "
                "lengths np.random.randint(max(int(L*r), 1), L + 1) per request, inputs then outputs (compute_random_lens L1528; "
                "0.5.10.post1 benchmark/datasets/common.py L56; 0.5.6 and 0.5.6.post1 draw outputs from int(L*r): [0, L] at r = 0, "
                "L1232); --random-range-ratio default 0.0 (L3091); --random-input-len / --random-output-len default 1024; "
                "--num-prompts default 1000 (L3061); --request-rate default inf (L3131); --seed default 1 (L3184), np.random.seed(args.seed) "
                "before the dataset is drawn (L2819); "
                "--warmup-requests default 1 (L3306): the first prompt with output min(osl, 32) (L2389), sent before and not measured; "
                "ignore_eos = not --disable-ignore-eos (L603, L3186); TPOT (latency - ttft)/(output_len - 1) per request with "
                "output_len > 1 (L2126); the result block prints mean, median and p99 TTFT and TPOT over the successful requests"
            ),
            ttft_statistic="mean over requests (median and p99 in the statistics columns)",
            tpot_definition="(e2e - ttft)/(output_len - 1) per request with output_len > 1, mean over requests",
        ),
        UNKNOWN_SOURCE: _undocumented("undocumented", "provenance names no known source"),
    }
)


# SGLang bench_serving's flag defaults (the citation of CLIENTS[SGL_COOKBOOK]): a run's flag overrides its default.
SGLANG_BENCH_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "--backend": "sglang",
        "--dataset-name": "sharegpt",
        "--num-prompts": "1000",
        "--random-input-len": "1024",
        "--random-output-len": "1024",
        "--random-range-ratio": "0.0",
        "--request-rate": "inf",
        "--seed": "1",
        "--warmup-requests": "1",
    }
)


# InferenceX's warm-up: from PR 480 (d053ae24e, 2026-01-21T17:53:38Z) the client sends the first prompt 2 x C times at
# concurrency C before the measured pass (utils/bench_serving/benchmark_serving.py L371-L387); before it, kimbochen/bench_serving
# sent that prompt once, alone ("initial single prompt test run", benchmark_serving.py @ 406abc35).
INFERENCEX_WARMUP_FROM = "2026-01-21T17:53:38Z"
INFERENCEX_WARMUPS_PER_CONCURRENCY = 2


def protocol_for(source: str, concurrency: int | None, measured: str | None = None) -> Protocol:
    """A row's client protocol: its source's documented client at concurrency C, measured at `measured`
    (UTC; a bare date reads as that day's end), which decides InferenceX's warm-up."""
    client = CLIENTS[source]
    per_c = client.prompts_per_concurrency
    return Protocol(
        client=client.client,
        num_prompts=per_c * concurrency if per_c is not None and concurrency is not None else None,
        request_rate=client.request_rate,
        random_range_ratio=client.random_range_ratio,
        ignore_eos=client.ignore_eos,
        client_citation=client.citation,
        num_warmups=_inferencex_warmups(concurrency, measured) if source == INFERENCEX else None,
        client_seed=client.seed,
    )


def _inferencex_warmups(concurrency: int | None, measured: str | None) -> int | None:
    """Warm-up requests InferenceX's client sent before a run's measured pass (None: date or concurrency unknown)."""
    if concurrency is None or not measured:
        return None
    stamp = measured if "T" in measured else f"{measured}T23:59:59Z"
    return INFERENCEX_WARMUPS_PER_CONCURRENCY * concurrency if stamp >= INFERENCEX_WARMUP_FROM else 1
