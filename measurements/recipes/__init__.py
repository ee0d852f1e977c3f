"""Launch recipes: the engine settings a source documents for a run (EngineSettings, origin "source").

``recipe_settings`` dispatches to the engine's recipes (``trtllm``, ``sglang``); a run no recipe
resolves takes the engine's documented defaults (estimator.settings.engine_defaults) in the loader.
"""

from __future__ import annotations

from estimator.settings import EngineSettings
from measurements.clients import INFERENCEX
from measurements.recipes.kvcache import launched_fp8_kv_cache
from measurements.recipes.models import DSR1_MODELS, MULTINODE_DISAGG_CITATION, MULTINODE_DISAGG_ONLY
from measurements.recipes.moe_layout import launched_moe_layout as _launched_moe_layout
from measurements.recipes.sglang import sglang_recipe, sglang_speculative_run
from measurements.recipes.trtllm import trtllm_recipe
from measurements.recipes.vllm import vllm_async_scheduling, vllm_client_cap_reason, vllm_memory_utilization, vllm_recipe
from measurements.schema import Layout


def recipe_settings(source: str, engine: str, isl: int, osl: int, concurrency: int | None, model: str = "", system: str = "",
                    precision: str | None = None, tp: int | None = None, mode: str = "agg", image: str | None = None,
                    attention_dp: int = 1, measured: str | None = None, moe_ep: int | None = None) -> EngineSettings | None:  # fmt: skip
    """The engine settings a source's launch recipe documents for a run, or None when it documents none.

    InferenceX's TRT-LLM recipes leave chunked prefill off and size max_num_tokens per model
    (trtllm_recipe): DeepSeek-R1 to hold one whole prompt next to every running decode (C + ISL + 64,
    rounded up to 64, at least 8192; its MTP runs, (MTP + 1) x max batch + ISL + 64, rounded up, with
    their drafts), gpt-oss at 20000, Llama-3.1-70B at max_model_len (with batch
    waiting on its agg 1k/1k runs below TP 8); the other
    models' TRT-LLM recipes are not resolved. Its SGLang recipes for DeepSeek-R1/V3 (FP8 on H200, B200,
    B300; FP4 on B200, B300), Qwen3.5 (FP8 on H200, B200, B300; BF16 and FP4 on B200, B300) and GLM-5
    (FP8, FP4 on B200) set the chunked prefill size, stream interval and scheduler receive interval
    (sglang_recipe, agg rows only: the disagg runs use other recipes; `tp` is the run's tensor-parallel
    size); those whose scripts changed later only for the runs of the image line or dates of the
    version that ran (SGLANG_RECIPE_RUNS). Its vLLM recipes keep the engine default budget (8192,
    chunked) but MiniMax-M2.5's on B200 and B300 on the v0.19.0 image and Kimi-K2.5 FP4's on B200 from
    2026-04-20 (vllm_recipe: twice the ISL, stream interval 20)."""
    if source != INFERENCEX or not concurrency:
        return None
    if engine == "trtllm":
        agg = mode == "agg"
        return trtllm_recipe(model, isl, osl, concurrency, tp if agg else None, attention_dp if agg else 1, agg, system, image, precision, measured,
                             moe_ep if agg else None)  # fmt: skip
    if engine == "sglang" and mode == "agg":  # single-node agg recipes; an -mtp key's runs the sample records as plain rows
        speculative = sglang_speculative_run(model, precision, system, tp, isl, osl, concurrency, image, measured)
        return speculative or sglang_recipe(model, precision, system, tp, concurrency, image, measured)
    if engine == "vllm" and mode == "agg":
        return vllm_recipe(model, precision, system, image, isl, measured)
    return None


def with_launch_kv_cache(settings: EngineSettings, source: str, engine: str, model: str, precision: str | None, system: str, mode: str,
                         image: str | None) -> EngineSettings:  # fmt: skip
    """The settings with the fp8 KV cache an InferenceX SGLang or vLLM launch sets (measurements.recipes.kvcache), cited;
    unchanged where the launch serves the engine's auto or a recipe already set the dtype."""
    if multinode_disagg_reason(source, model, system, mode) is not None:  # labelled agg, run as multi-node disagg
        mode = "disagg"
    citation = launched_fp8_kv_cache(engine, model, precision, system, mode, image) if source == INFERENCEX else None
    if citation is None or settings.kv_cache_dtype is not None:
        return settings
    return settings.cited(f"KV cache: {citation}", kv_cache_dtype="fp8")


def with_vllm_async_scheduling(settings: EngineSettings, source: str, engine: str, model: str) -> EngineSettings:
    """The settings with the async scheduling an InferenceX vLLM launch ran (measurements.recipes.vllm), cited;
    unchanged where it is the engine version's default."""
    fact = vllm_async_scheduling(model) if source == INFERENCEX and engine == "vllm" else None
    if fact is None:
        return settings
    on, citation = fact
    return settings.cited(f"async scheduling: {citation}", overlap_scheduler=on)


def with_vllm_memory_utilization(settings: EngineSettings, source: str, engine: str, model: str, precision: str | None, system: str,
                                 image: str | None) -> EngineSettings:  # fmt: skip
    """The settings with the --gpu-memory-utilization an InferenceX vLLM launch ran (measurements.recipes.vllm), cited;
    unchanged where it is vLLM's 0.9."""
    fact = vllm_memory_utilization(model, precision, system, image) if source == INFERENCEX and engine == "vllm" else None
    if fact is None:
        return settings
    utilization, citation = fact
    return settings.cited(f"GPU memory utilization: {citation}", gpu_memory_utilization=utilization)


def multinode_disagg_reason(source: str, model: str, system: str, mode: str) -> str | None:
    """Why an agg row of a source that runs this model on this system only as a multi-node
    disaggregated deployment cannot be priced as recorded, or None: its tp column is the run's GPU
    count and its prefill/decode workers are not in the row."""
    if source != INFERENCEX or mode != "agg" or (model, system) not in MULTINODE_DISAGG_ONLY:
        return None
    return (
        f"labelled agg, but InferenceX runs {model} on {system} only as multi-node disaggregated deployments "
        f"({MULTINODE_DISAGG_CITATION}): the tp column is the run's GPU count and its prefill/decode workers are not recorded"
    )


def client_cap_reason(source: str, engine: str, model: str, system: str, measured_date: str | None, concurrency: int | None,
                      tp: int | None, isl: int, osl: int) -> str | None:  # fmt: skip
    """Why a run whose recorded concurrency is its client's constant cap, not the server's, cannot be replayed
    (measurements.recipes.vllm.GPT_OSS_H100_CLIENT_CAP), or None."""
    if source != INFERENCEX or engine != "vllm":
        return None
    return vllm_client_cap_reason(model, system, measured_date, concurrency, tp, isl, osl)


def launched_moe_layout(source: str, engine: str, model: str, precision: str | None, system: str, mode: str, measured_date: str | None,
                        layout: Layout, isl: int, osl: int, concurrency: int | None) -> tuple[Layout, str] | None:  # fmt: skip
    """(layout, citation) of an InferenceX agg launch whose MoE or attention layout the row's columns misstate
    (measurements.recipes.moe_layout), or None."""
    if source != INFERENCEX or mode != "agg":
        return None
    return _launched_moe_layout(engine, model, precision, system, measured_date, layout, isl, osl, concurrency)


# InferenceX's B200 docker runner set the prompt count for DeepSeek-R1-0528 runs from PR 89 until PR 480 removed it, and was
# the only runner the SGLang DeepSeek-R1 FP8 B200 runs of the sample could have run on.
B200_DOCKER_PROMPTS = ("2025-10-06", "2026-01-21T17:53:38Z")  # (from, until)
B200_DOCKER_PROMPTS_CITATION = (
    "SemiAnalysisAI/InferenceX runners/launch_b200-nvd.sh @ 189ae51cc L51-L59, L72 (from 15b7c00b0, PR 89, 2025-10-06, until "
    "d053ae24e, PR 480, 2026-01-21): NUM_PROMPTS=$((CONC * 20)) at OSL 8192, else $((CONC * 50)), for deepseek-ai/DeepSeek-R1-0528; "
    "runners.yaml @ 189ae51cc: b200 = b200-nvd_0..3; the slurm runners (b200-nb, b200-nv) set no NUM_PROMPTS, which "
    "run_benchmark_serving refuses, so a recorded run of the docker script came from b200-nvd or b200-dgxc"
)


def b200_docker_prompts(engine: str, model: str, precision: str | None, system: str, osl: int, concurrency: int | None,
                        measured: str | None) -> int | None:  # fmt: skip
    """The prompt count InferenceX's B200 docker runner gave an SGLang DeepSeek-R1 FP8 run (B200_DOCKER_PROMPTS), or None."""
    first, until = B200_DOCKER_PROMPTS
    if (engine, precision, system) != ("sglang", "fp8", "b200_sxm") or model not in DSR1_MODELS or not concurrency:
        return None
    if measured is None or not first <= measured < until:
        return None
    return concurrency * (20 if osl == 8192 else 50)
