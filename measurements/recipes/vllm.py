"""InferenceX's vLLM launches whose async scheduling is not the engine version's default (settings.VLLM_ASYNC_SCHEDULING_FROM)."""

from __future__ import annotations

from collections.abc import Mapping
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
