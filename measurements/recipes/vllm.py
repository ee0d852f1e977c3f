"""InferenceX's vLLM launches whose async scheduling (settings.VLLM_ASYNC_SCHEDULING_FROM) or GPU memory utilization
(settings.VLLM_GPU_MEMORY_UTILIZATION) is not the engine's default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from measurements.recipes.models import LLAMA_70B_MODELS

GPT_OSS_MODELS = frozenset({"openai/gpt-oss-120b"})

# model ids -> (async scheduling on, citation): the gpt-oss scripts set it on every image; the Llama-3.1-70B runs
# record no engine version, and ran an image older than the default.
VLLM_ASYNC_SCHEDULING: Mapping[frozenset[str], tuple[bool, str]] = MappingProxyType({
    GPT_OSS_MODELS: (True, "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_{b200,h100,h200}_*.sh @ e264c0eed: async-scheduling: true "
                           "in the vLLM config (removed once v0.14.0 made it the default: perf-changelog.yaml @ 51e31df4a)"),
    LLAMA_70B_MODELS: (False, "SemiAnalysisAI/InferenceX .github/workflows/70b-tmpl.yml @ 9596d23d7 L48-49: the 70B runs served "
                              "vllm/vllm-openai:v0.10.2, whose async scheduling is off by default"),
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
