"""Narrative of the report: the sentences and quoted figures it states, built from the points frame.

Facts count measured rows (one per id, whatever the methods); percentages in REFERENCES are as
published (percent, not fractions). No HTML here: the page escapes every string.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from estimator.closedloop.host import HOST_POINTS
from estimator.report import GRAPHED_PREFILL_NOTE, KV_CAP_NOTE
from measurements.recipes.models import DSR1_MTP_ACCEPTED


@dataclass(frozen=True)
class Reference:
    """Published figures of the reference, for the headline (percent; None: not published)."""

    label: str  # what and where from
    covered: int  # rows predicted
    ttft: tuple[float | None, ...]  # MAPE, median APE, within 10/20/50, bias
    tpot: tuple[float | None, ...]


REFERENCES = (
    Reference("AIConfigurator 0.12.0, all modes (accuracy-baseline.md)", 3611, (53.3, 46.1, None, 19.9, None, -32.7), (32.3, 18.3, None, 53.1, None, 2.4)),
    Reference("AIConfigurator 0.12.0, agg rows (accuracy-baseline.md)", 3456, (52.8, 45.1, None, 20.2, None, -31.1), (32.4, 18.1, None, 53.5, None, 1.3)),
)


def protocol_facts(points: pd.DataFrame) -> list[str]:
    """Counted facts about the protocols and versions the predictions rest on."""
    rows = points.drop_duplicates("id")
    newer = rows["version_note"].str.contains("older than every data version", regex=False).sum()
    undocumented = (rows["source"] != "inferencex").sum()
    unchunked = rows[(rows["chunked_prefill"].astype(str).str.lower() == "false") & (rows["mode"] == "agg")]
    blocked = (unchunked["isl"] + unchunked["concurrency"].fillna(1) > unchunked["step_token_budget"]).sum()
    from_recipes = (rows["engine_settings"] == "source").sum()
    streamed, stream_values = _above(rows["stream_interval"], 1)
    receiving, recv_values = _above(rows["recv_interval"], 1)
    held, wait_values = _above(rows["batch_wait_iters"], 0)
    balanced, balance_values = _above(rows["adp_balance_iters"], 0)
    drafting, draft_values = _above(rows["nextn"], 0)
    compiling, compile_values = _above(rows["shape_compile_ms"], 0)
    cold, cold_values = _above(rows["prefix_compile_ms"], 0)
    facts = [
        (
            f"{from_recipes} of {len(rows)} rows take their engine scheduler settings from the source's launch recipe (InferenceX "
            "TRT-LLM DeepSeek-R1, gpt-oss and Llama-3.1-70B: their max_num_tokens rule, chunked prefill off, an fp8 KV cache on agg runs but gpt-oss's on H200, which keeps the checkpoint's; InferenceX SGLang "
            "DeepSeek-R1/V3 and Qwen3.5 FP8 where every stored recipe version of the runs' era agrees: chunked prefill size, stream interval, "
            "scheduler receive interval); the others use the engines' documented defaults (the sample does not record the launch "
            "flags per row)."
        ),
        (
            f"{streamed} rows stream every {stream_values} tokens (SGLang --stream-interval): SGLang 0.5.6 and 0.5.9 (read in their "
            "source) send the first token at once and the last with the finish, so neither TTFT nor TPOT moves."
        ),
        (
            f"{receiving} rows run SGLang with --scheduler-recv-interval {recv_values}: the scheduler takes in new requests only every "
            "that many decode steps while decodes run, so an arriving prompt waits for the next intake."
        ),
        f"{undocumented} rows come from sources whose client protocol is not published; the benchmark-protocol replay cannot run them.",
        f"{newer} rows were measured on an engine version older than every data version and are priced with the nearest (newer) data.",
        (
            f"{blocked} of {len(unchunked)} agg rows run with chunked prefill off and a prompt plus the running decodes larger than "
            "the step token budget, so the replay admits such a prompt only once the decodes free the budget."
        ),
    ]
    if held:
        facts.insert(
            3,
            f"{held} rows run TRT-LLM with batch waiting (batch_wait_timeout_iters {wait_values}, from the "
            "source's recipe): a prompt that would be prefilled beside running decodes is held, the step only decoding, "
            "until that many steps have passed or the step's tokens reach the recipe's share of the token budget.",
        )
    if balanced:
        facts.insert(
            3,
            f"{balanced} rows run TRT-LLM under attention DP with its balance on (timeout_iters {balance_values}, from the "
            "source's recipe): a prompt that would be prefilled beside running decodes waits until that many steps have "
            "counted since the last release; one rank is replayed, and a backlog left at a release stands for every rank "
            "holding a prompt, which goes at the next step, or after the recipe's batching wait beside decodes (gpt-oss: "
            "up to 10 steps; DeepSeek-R1: none).",
        )
    if compiling:
        facts.insert(
            3,
            f"{compiling} rows run SGLang builds that compile a Triton kernel per prefill shape for gated-delta-net "
            f"layers (the FLA l2norm token count a tl.constexpr before SGLang PR 31558): the closed-loop replay adds "
            f"{compile_values} ms (PR 23448) to a pass that prefills a token count new to the run.",
        )
    if cold:
        facts.insert(
            3,
            f"{cold} rows run SGLang's trtllm_mla backend on B200 from images without flashinfer-jit-cache, measured before "
            "InferenceX's warm-up at the run's concurrency (PR 480): the first pass that extends a prompt from a prefix (a "
            "prompt's second chunk) builds FlashInfer's CUTLASS FMHA with nvcc, and the closed-loop replay adds "
            f"{cold_values} ms to it once (the stall sglang issue 7339 publishes for such a FlashInfer build; this module's "
            "own compile time is not published).",
        )
    fractions = rows["kv_free_memory_fraction"].dropna()
    if len(fractions):
        capped = _kv_capped(points, "trtllm")
        facts.insert(
            3,
            f"{len(fractions)} rows run TRT-LLM with the KV-cache memory fraction of the source's recipe, or "
            "TRT-LLM's default where it sets none "
            f"(free_gpu_memory_fraction {' or '.join(f'{v:g}' for v in sorted(set(fractions)))}): TRT-LLM admits a request "
            "only with KV room for its whole prompt and output (guaranteed-no-evict), so for the natively modelled "
            "(dense) architectures the closed-loop replays cap the running requests at what the pool (that fraction of "
            "the memory the native memory model leaves) holds at the protocol's mean lengths; the cap binds on "
            f"{int(capped.sum())} closed_loop points, whose notes give it. The other architectures' memory model is the "
            "reference's accounting, not checked against their checkpoints, and their pool (a small difference of large "
            "numbers) sets no cap.",
        )
    utilizations = rows.loc[rows["backend"] == "vllm", "gpu_memory_utilization"].dropna()
    if len(utilizations):
        facts.insert(
            3,
            f"{len(utilizations)} rows run vLLM with {' or '.join(f'{v:g}' for v in sorted(set(utilizations)))} of each GPU's "
            "memory for weights, activations and KV cache (--gpu-memory-utilization: the source's launch, or vLLM's 0.9): "
            "vLLM allocates KV blocks as tokens arrive and preempts the newest request when a step cannot get its blocks, "
            "so the closed-loop replays of agg rows cap the running requests at what that share less the weights holds, "
            "each request holding its prompt and half its output at the protocol's mean lengths (an upper bound on the "
            "pool: vLLM also reserves activations and memory outside torch, which the memory model does not estimate "
            f"reliably); the cap binds on {int(_kv_capped(points, 'vllm').sum())} closed_loop points, whose notes give it.",
        )
    if drafting:
        accepted = ", ".join(f"{1 + a:g} tokens per step with {n} draft{'s' * (n > 1)}" for n, a in sorted(DSR1_MTP_ACCEPTED.items()))
        facts.insert(
            3,
            f"{drafting} rows run TRT-LLM DeepSeek-R1 with MTP speculative decoding ({draft_values} draft tokens, from "
            "the source's recipe: on B200 InferenceX's MTP keys alone ran their image, on H200 the run PR 392's merge started): every method but legacy prices verify "
            f"steps of drafts + 1 query tokens per request that commit TRT-LLM's published acceptance ({accepted}); "
            "legacy prices them without drafts, as the baseline.",
        )
    mismatched = rows["layout_note"].fillna("").str.contains("tokenizer mismatch", regex=False).sum()
    facts.append(
        f"{mismatched} rows ran InferenceX's client on a transformers-5 image before its tokenizer repair reached HF repo ids "
        "(PR 937, PR 1381): the server computed about 5x the prompt tokens the client counted (35,921 for 7,140), so every "
        "method but legacy prices the prompt the server computed; their layout_note says so (measurements/tokenizers.py)."
    )
    seeded = rows["client_seed"].notna()
    per_seed = ", ".join(f"seed {int(seed)}: {n} rows" for seed, n in rows.loc[seeded, "client_seed"].value_counts().sort_index().items())
    facts.append(
        f"{seeded.sum()} of {len(rows)} rows record their benchmark client's NumPy seed{f' ({per_seed})' if per_seed else ''}: "
        "closed_loop replays that client's own length draws, request i taking the i-th input and output draw "
        "(estimator/closedloop/lengths.py client_draws; vLLM benchmark_serving.py, which InferenceX's and the multi-node "
        "launchers' clients copy, seeds 0 by default, SGLang bench_serving 1); the others take evenly spaced lengths."
    )
    replayed = points[points["method"] == "closed_loop"]
    cold = replayed.loc[replayed["note"].fillna("").str.contains("first wave measured cold", regex=False), "id"].nunique()
    facts.append(
        f"{cold} rows were measured before InferenceX's client warmed up (PR 480, 2026-01-21: one test prompt, then the measured "
        "pass opens with all C prompts at once): their first wave pays first-use kernel compiles and loads for shapes a batch-1 "
        "request does not reach, which the engines document without a published duration, so none is replayed "
        "(estimator/docs/evidence/cold-start.md); their closed_loop notes say so."
    )
    engines = rows[rows["backend"].isin(["sglang", "trtllm"])]
    graphed = engines["eager_layer_ms"].eq(0).sum()
    graphed_by_sglang = replayed.loc[replayed["note"].fillna("").str.contains(GRAPHED_PREFILL_NOTE, regex=False), "id"].unique()
    eager = engines[~engines["eager_layer_ms"].eq(0) & ~engines["id"].isin(graphed_by_sglang)]
    facts.append(
        f"{len(eager)} rows run SGLang or TensorRT-LLM, whose passes that prefill run eagerly: every method but legacy and "
        "uncached holds such a pass (agg, and a disaggregated prefill worker's batch) for at least the layers it runs (the model's "
        "decoder layers, plus the draft-layer forwards of speculative decoding: one draft extend on SGLang, nextn on "
        "TensorRT-LLM) x the framework's published host cost per layer for its architecture (estimator/closedloop/host.py; a "
        "single request's "
        "median TTFT over the layers it ran, or a measured forward time): "
        + "; ".join(
            f"{b.value} {arch} {p.per_layer_ms:.3f} ms" + (" (speculative decoding)" if p.speculative else "")
            for (b, arch), points in HOST_POINTS.items()
            for p in points
        )
        + ". An architecture with a point with and one without speculative decoding takes the one that matches the deployment,"
        " one with a single point takes it either way; another MoE architecture takes its framework's least cost, a dense one"
        " none."
        + (
            f" {graphed} TensorRT-LLM rows launch piecewise CUDA graphs (their recipe's torch_compile_config): their passes "
            "that prefill replay graphs and take no floor."
            if graphed
            else ""
        )
        + (
            f" {len(graphed_by_sglang)} SGLang agg rows run a build whose piecewise CUDA graphs (on by default from 0.5.10) hold every "
            "pass that prefills for their model and layout: no floor (estimator.closedloop.host.sglang_graphs_every_prefill)."
            if len(graphed_by_sglang)
            else ""
        )
    )
    return facts


def _above(values: pd.Series, floor: int) -> tuple[int, str]:
    """(rows with a value above floor, those values joined by "or"); an empty cell counts as floor."""
    values = values.fillna(floor)
    above = sorted({int(v) for v in values[values > floor]})
    return int((values > floor).sum()), " or ".join(map(str, above)) or str(floor)


def _kv_capped(points: pd.DataFrame, backend: str) -> pd.Series:
    """The closed_loop points of a backend whose note says the KV-cache pool capped their running requests."""
    noted = points["note"].fillna("").str.contains(KV_CAP_NOTE, regex=False)
    return noted & (points["method"] == "closed_loop") & (points["backend"] == backend)
