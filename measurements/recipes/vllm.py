"""InferenceX's vLLM launches whose async scheduling (settings.VLLM_ASYNC_SCHEDULING_FROM) or GPU memory utilization
(settings.VLLM_GPU_MEMORY_UTILIZATION) is not the engine's default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.deployment import Backend
from estimator.settings import SOURCE_ORIGIN, EngineSettings, system_defaults
from measurements.recipes.models import LLAMA_70B_MODELS

GPT_OSS_MODELS = frozenset({"openai/gpt-oss-120b"})

# model ids -> (async scheduling on, citation): the gpt-oss and Llama-3.1-70B scripts set it in the config.yaml they pass
# with --config, on images older than v0.14.0, which made it the default.
VLLM_ASYNC_SCHEDULING: Mapping[frozenset[str], tuple[bool, str]] = MappingProxyType({
    GPT_OSS_MODELS: (True, "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_{b200,h100,h200}_*.sh @ e264c0eed: async-scheduling: true "
                           "in the vLLM config (removed once v0.14.0 made it the default: perf-changelog.yaml @ 51e31df4a)"),
    LLAMA_70B_MODELS: (True, "SemiAnalysisAI/InferenceX benchmarks/70b_fp8_h100_docker.sh @ af4ccd03f L14-16, 70b_fp8_h200_slurm.sh "
                             "@ 9596d23d7 L33-35, 70b_fp8_b200_docker.sh and 70b_fp4_b200_docker.sh @ 4b860b78e L26-35: "
                             "async-scheduling: true in the config.yaml passed with --config, on vllm/vllm-openai:v0.10.2 "
                             "(70b-tmpl.yml @ 9596d23d7 L48), whose EngineArgs run it on the mp executor at any TP "
                             "(vllm 0.10.2 engine/arg_utils.py L1282-L1291)"),
})  # fmt: skip


def vllm_async_scheduling(model: str) -> tuple[bool, str] | None:
    """(async scheduling on, citation) of an InferenceX vLLM launch of `model` that sets it apart from its version's default; None otherwise."""
    return next((value for models, value in VLLM_ASYNC_SCHEDULING.items() if model in models), None)


@dataclass(frozen=True)
class MemoryUtilizationRule:
    """InferenceX vLLM runs of one model, precision and systems (and image line) launched with a
    --gpu-memory-utilization other than vLLM's 0.9."""

    model: str  # the sample's model id
    precision: str  # the sample's precision label
    systems: frozenset[str]
    utilization: float  # the launch's --gpu-memory-utilization
    citation: str  # the script lines that set it
    image: str = ""  # a run's image must start with this ("": any image)


IX = "SemiAnalysisAI/InferenceX benchmarks/single_node/"
VLLM_MEMORY_UTILIZATION_RULES: tuple[MemoryUtilizationRule, ...] = (
    MemoryUtilizationRule("moonshotai/Kimi-K2.5", "int4", frozenset({"b200_sxm", "h200_sxm"}), 0.95,
                          IX + "kimik2.5_int4_b200.sh @ eb02101ef L30 (v0.15.1), kimik2.5_int4_h200.sh @ 70072ef5b L32 (v0.16.0): "
                          "--gpu-memory-utilization 0.95 in every version that ran"),
    MemoryUtilizationRule("MiniMaxAI/MiniMax-M2.5", "fp8", frozenset({"h200_sxm"}), 0.95,
                          IX + "minimaxm2.5_fp8_h200.sh @ a36346339 L27 (v0.16.0) to 8014ee637: --gpu-memory-utilization 0.95"),
    MemoryUtilizationRule("MiniMaxAI/MiniMax-M2.5", "fp4", frozenset({"b200_sxm"}), 0.95,
                          IX + "minimaxm2.5_fp4_b200.sh @ 08bcde8f1 (PR 996's branch, 2026-04-02: 'Use vLLM nightly image', whose "
                          "nvidia-master.yaml runs vllm/vllm-openai:nightly-5b8c30d62b754b575e043ce2fc0dcbf8a64f6306) L46: "
                          "--gpu-memory-utilization 0.95 (main's v0.19.0 versions: 0.90)",
                          image="vllm/vllm-openai:nightly-5b8c30d62b754b575e043ce2fc0dcbf8a64f6306"),
    MemoryUtilizationRule("MiniMaxAI/MiniMax-M2.5", "fp8", frozenset({"b200_sxm"}), 0.95,
                          IX + "minimaxm2.5_fp8_b200.sh @ f342df18e L40 to 626932a11 L47 (v0.17.0): --gpu-memory-utilization 0.95 "
                          "(0.90 from bddbf4031, PR 947, with the v0.19.0 image)", image="vllm/vllm-openai:v0.17.0"),
)  # fmt: skip


def vllm_memory_utilization(model: str, precision: str | None, system: str, image: str | None) -> tuple[float, str] | None:
    """(--gpu-memory-utilization, citation) of an InferenceX vLLM launch that sets it apart from vLLM's 0.9; None otherwise."""
    for rule in VLLM_MEMORY_UTILIZATION_RULES:
        if rule.model == model and rule.precision == precision and system in rule.systems and (image or "").startswith(rule.image):
            return rule.utilization, rule.citation
    return None


# InferenceX's MiniMax-M2.5 B200/B300 vLLM scripts on the v0.19.0 image (every version from each script's first on that
# image to 2026-05): --max-cudagraph-capture-size 2048 --max-num-batched-tokens $((ISL * 2)) --stream-interval 20 (the first
# token goes out at once: OutputProcessor sends at the first token, then every stream-interval tokens, v0.19.0
# v1/engine/output_processor.py L285-L298).
MINIMAX_BLACKWELL_SCRIPTS = (
    "minimaxm2.5_fp4_b200.sh @ 79bd988e9 L49-L51, 13962fcfa L51-L53; minimaxm2.5_fp4_b300.sh @ 22d0f12f7 L53-L55, 633fd2377 "
    "L55-L57; minimaxm2.5_fp8_b200.sh @ bddbf4031 (PR 947) L50-L52, 41ed82dc1 L50-L52; minimaxm2.5_fp8_b300.sh @ 340d7854c "
    "L54-L56, 0c2467c15 L54-L56: --max-cudagraph-capture-size 2048 --max-num-batched-tokens $((ISL * 2)) --stream-interval 20, "
    "image vllm/vllm-openai:v0.19.0"
)
MINIMAX_BLACKWELL_VERSION = "0.19.0"
MINIMAX_BLACKWELL_IMAGE = f"vllm/vllm-openai:v{MINIMAX_BLACKWELL_VERSION}"
MINIMAX_BLACKWELL_STREAM_INTERVAL = 20
BLACKWELL_CUDAGRAPH_MAX_TOKENS = 2048  # --max-cudagraph-capture-size of the scripts above and KIMI_K25_B200_SCRIPT


KIMI_K25_B200_SCRIPT = (
    "kimik2.5_fp4_b200.sh @ 6c3acebfa (PR 1047, 2026-04-20) L45-L48: --max-cudagraph-capture-size 2048 --max-num-batched-tokens "
    '"$((ISL * 2 ))" --stream-interval 20 (with --kv-cache-dtype fp8), image vllm/vllm-openai:v0.17.0'
)
KIMI_K25_B200_FROM = "2026-04-20"
KIMI_K25_B200_VERSION = "0.17.0"


def vllm_recipe(model: str, precision: str | None, system: str, image: str | None, isl: int,
                measured: str | None = None) -> EngineSettings | None:  # fmt: skip
    """The scheduler settings an InferenceX vLLM agg script launches a run with where it sets them apart from vLLM's
    defaults (CUDA graphs up to 2,048 tokens, a step budget of twice the ISL and stream interval 20: MiniMax-M2.5 FP4
    and FP8 on B200 and B300 on the v0.19.0 image, Kimi-K2.5 FP4 on B200 from 2026-04-20), or None (the engine defaults
    hold)."""
    if model == "MiniMaxAI/MiniMax-M2.5" and precision in ("fp4", "fp8") and system in ("b200_sxm", "b300_sxm"):
        if not (image or "").startswith(MINIMAX_BLACKWELL_IMAGE):
            return None
        return _twice_the_isl(system, MINIMAX_BLACKWELL_VERSION, isl, MINIMAX_BLACKWELL_SCRIPTS)
    if model == "moonshotai/Kimi-K2.5" and precision == "fp4" and system == "b200_sxm":
        if measured is None or measured[:10] < KIMI_K25_B200_FROM:
            return None
        return _twice_the_isl(system, KIMI_K25_B200_VERSION, isl, KIMI_K25_B200_SCRIPT)
    return None


def _twice_the_isl(system: str, version: str, isl: int, scripts: str) -> EngineSettings:
    """The engine's defaults with CUDA graphs up to 2,048 tokens, a step budget of twice the ISL and stream interval 20
    (the first token goes out at once: OutputProcessor sends at the first token, then every stream-interval tokens,
    v0.19.0 v1/engine/output_processor.py L285-L298)."""
    defaults = system_defaults(Backend.VLLM, system, version)
    return defaults.replace(step_token_budget=2 * isl, stream_interval=MINIMAX_BLACKWELL_STREAM_INTERVAL,
                            cudagraph_max_tokens=BLACKWELL_CUDAGRAPH_MAX_TOKENS, origin=SOURCE_ORIGIN,
                            citation=f"SemiAnalysisAI/InferenceX benchmarks/single_node/{scripts}")  # fmt: skip


@dataclass(frozen=True)
class ClientCapWindow:
    """InferenceX runs whose client capped concurrency at a constant while the server was launched for the
    config's concurrency, which the row does not record: the recorded concurrency is the client's cap."""

    model: str  # the sample's model id
    system: str
    first: str  # ISO date the script began passing the constant cap
    last: str  # ISO date of the fix (a run of that day that records the cap ran the old script)
    client_cap: int  # the --max-concurrency the client ran
    server_concurrency: Mapping[tuple[int, int, int], tuple[int, ...]]  # (tp, isl, osl) -> the config's conc values
    citation: str


_GPT_OSS_H100_CONCURRENCY = (4, 8, 16, 32, 64)
GPT_OSS_H100_CLIENT_CAP = ClientCapWindow(
    "openai/gpt-oss-120b", "h100_sxm", "2025-11-21", "2025-12-08", 512,
    MappingProxyType({
        **{(tp, isl, osl): _GPT_OSS_H100_CONCURRENCY for tp in (2, 4, 8) for isl, osl in ((1024, 1024), (1024, 8192), (8192, 1024))},
        (8, 8192, 1024): (4, 8, 16),
    }),
    "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_h100_docker.sh from d22bf9ca9 (PR 227, 2025-11-21) to 4e135fd3f "
    "(PR 310 'fix h100 docker error', 2025-12-08): the client ran --max-concurrency 512 and --num-prompts $((CONC * 10)) "
    "against vllm serve --max-num-seqs=$CONC; .github/configs/nvidia-master.yaml gptoss-fp4-h100-vllm @ d22bf9ca9 and "
    "25506e87c: conc 4 to 64 (TP 8 at 8192/1024: 4 to 16)",
)  # fmt: skip


def vllm_client_cap_reason(model: str, system: str, measured_date: str | None, concurrency: int | None, tp: int | None, isl: int,
                           osl: int) -> str | None:  # fmt: skip
    """Why an InferenceX vLLM run whose recorded concurrency is the client's constant cap cannot be replayed (the
    server's concurrency, one of the config's values, is not recorded), or None."""
    window = GPT_OSS_H100_CLIENT_CAP
    if model != window.model or system != window.system or concurrency != window.client_cap:
        return None
    if measured_date is None or not window.first <= measured_date[:10] <= window.last:
        return None
    candidates = window.server_concurrency.get((tp, isl, osl))
    named = ", ".join(map(str, candidates)) if candidates else "not in the config"
    return (f"concurrency {concurrency} is the client's cap, not the server's: the server ran --max-num-seqs at the config's "
            f"concurrency ({named}) with 10x that many prompts, and the row does not record which ({window.citation})")  # fmt: skip
