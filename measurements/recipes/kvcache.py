"""The KV cache dtype InferenceX's SGLang and vLLM launches serve where it is not the engine's auto.

A launch without ``--kv-cache-dtype`` serves the engine's auto (estimator.settings.served_kv_cache_dtype:
the checkpoint's declared KV quantization, SGLang's NSA architectures fp8 on Blackwell, else
bfloat16). A rule here names a group of runs whose scripts (at the versions in effect on the runs'
dates, main's first-parent history) or srt-slurm recipes pass ``--kv-cache-dtype fp8`` / ``fp8_e4m3``,
or whose checkpoint that ran (not the bundled config the row is priced on) declares an fp8 KV cache.
Groups whose script at the run date is not public (the B300 runs of 2026-04-03: Qwen3.5 FP8 on
v0.5.9, MiniMax-M2.5 FP8 on a nightly) keep the engine's auto.
"""

from __future__ import annotations

from dataclasses import dataclass

from measurements.recipes.models import DSR1_MODELS, LLAMA_70B_MODELS, QWEN35_MODELS

IX = "SemiAnalysisAI/InferenceX "
SRT = "NVIDIA/srt-slurm "


@dataclass(frozen=True)
class KvCacheRule:
    """Runs of one engine, model set, precision and systems (and image line) launched with an fp8 KV cache."""

    engine: str  # "sglang" | "vllm"
    models: frozenset[str]  # the sample's model ids
    precision: str  # the sample's precision label
    systems: frozenset[str]
    modes: frozenset[str]  # "agg" and/or "disagg"
    citation: str  # the script or recipe lines that set it
    image: str = ""  # a run's image must start with this ("": any image)


def _rule(engine: str, models: frozenset[str] | str, precision: str, systems: str, citation: str, modes: str = "agg", image: str = "") -> KvCacheRule:
    models = frozenset({models}) if isinstance(models, str) else models
    return KvCacheRule(engine, models, precision, frozenset(systems.split()), frozenset(modes.split()), citation, image)


DSR1_FP8_SCRIPTS = "--kv-cache-dtype fp8_e4m3 in every version that ran"
KV_CACHE_RULES: tuple[KvCacheRule, ...] = (
    _rule("sglang", QWEN35_MODELS, "fp4", "b200_sxm", IX + "benchmarks/single_node/qwen3.5_fp4_b200.sh @ 48d35c480 L65 --kv-cache-dtype fp8_e4m3"),
    _rule("sglang", QWEN35_MODELS, "fp4", "b300_sxm", IX + "benchmarks/single_node/qwen3.5_fp4_b300.sh @ 8acbd08b7 L71 --kv-cache-dtype fp8_e4m3"),
    _rule("sglang", QWEN35_MODELS, "fp8", "b200_sxm",
          IX + "benchmarks/single_node/qwen3.5_fp8_b200.sh @ efd49e50b L51, 64c20b6b5 L54, 6a5dad463 L60 --kv-cache-dtype fp8_e4m3"),
    _rule("sglang", QWEN35_MODELS, "fp8", "b300_sxm", IX + "benchmarks/single_node/qwen3.5_fp8_b300.sh @ c0f62a2ef L40 --kv-cache-dtype fp8_e4m3",
          image="lmsysorg/sglang:v0.5.10"),
    _rule("sglang", QWEN35_MODELS, "fp8", "h200_sxm", IX + "benchmarks/single_node/qwen3.5_fp8_h200.sh @ f65d6b4b1 L45 --kv-cache-dtype fp8_e4m3"),
    _rule("sglang", DSR1_MODELS, "fp4", "b200_sxm b300_sxm",
          IX + f"benchmarks/dsr1_fp4_b200_docker.sh @ 4b860b78e L22, single_node/dsr1_fp4_b200.sh @ 64c20b6b5 L40, dsr1_fp4_b300.sh @ 9ebeafb4e L49: {DSR1_FP8_SCRIPTS}"),
    _rule("sglang", DSR1_MODELS, "fp8", "b200_sxm b300_sxm",
          IX + f"benchmarks/dsr1_fp8_b200_docker.sh @ d8fe8f73e L35, single_node/dsr1_fp8_b200.sh @ 64c20b6b5 L73, dsr1_fp8_b300.sh @ 5b302f147 L82: {DSR1_FP8_SCRIPTS}"),
    _rule("sglang", "zhipuai/GLM-5", "fp8", "b200_sxm", IX + "benchmarks/single_node/glm5_fp8_b200.sh @ 13930ca61 L43 --kv-cache-dtype fp8_e4m3"),
    _rule("sglang", DSR1_MODELS, "fp4", "b200_sxm gb200 gb300",
          SRT + "recipes/b200-fp4/, gb200-fp4/, gb300-fp4/ @ 5063eb43, 4a22a181: kv-cache-dtype: \"fp8_e4m3\" on prefill and decode", "disagg"),
    _rule("sglang", DSR1_MODELS, "fp8", "b200_sxm gb200 gb300",
          SRT + "recipes/b200-fp8/, gb200-fp8/ (e.g. 1k1k/low-latency.yaml L66, L93), gb300-fp8/ @ 5063eb43, 4a22a181: kv-cache-dtype: \"fp8_e4m3\"", "disagg"),
    _rule("vllm", "MiniMaxAI/MiniMax-M2.5", "fp4", "b200_sxm b300_sxm",
          IX + "benchmarks/single_node/minimaxm2.5_fp4_b200.sh @ 79bd988e9 L48, minimaxm2.5_fp4_b300.sh @ 22d0f12f7 L52 --kv-cache-dtype fp8"),
    _rule("vllm", "MiniMaxAI/MiniMax-M2.5", "fp8", "b200_sxm b300_sxm",
          IX + "benchmarks/single_node/minimaxm2.5_fp8_b200.sh @ bddbf4031 L49 (PR 947, with the v0.19.0 image; absent on v0.17.0), "
          "minimaxm2.5_fp8_b300.sh @ 340d7854c L53 --kv-cache-dtype fp8", image="vllm/vllm-openai:v0.19.0"),
    _rule("vllm", LLAMA_70B_MODELS, "fp4", "b200_sxm", IX + "benchmarks/70b_fp4_b200_docker.sh @ 4b860b78e L33 kv-cache-dtype: fp8"),
    _rule("vllm", LLAMA_70B_MODELS, "fp8", "b200_sxm h100_sxm h200_sxm",
          IX + "benchmarks/70b_fp8_b200_docker.sh L27, 70b_fp8_h100_docker.sh @ af4ccd03f L15, 70b_fp8_h200_slurm.sh @ 9596d23d7 L34 kv-cache-dtype: fp8"),
    _rule("vllm", "moonshotai/Kimi-K2.5", "fp4", "b200_sxm b300_sxm",
          IX + "benchmarks/single_node/kimik2.5_fp4_b200.sh @ 6c3acebfa L45 --kv-cache-dtype fp8 (from 2026-04-20); before, auto over "
          "nvidia/Kimi-K2.5-NVFP4's ModelOpt kv_cache_scheme (vLLM >= 0.15.1 resolve_kv_cache_dtype_string) serves fp8_e4m3"),
    _rule("vllm", "openai/gpt-oss-120b", "fp4", "b200_sxm", IX + "benchmarks/single_node/gptoss_fp4_b200.sh @ d2c2acb19 L33 kv-cache-dtype: fp8",
          image="vllm/vllm-openai:v0.15.1"),
    _rule("vllm", "moonshotai/Kimi-K2.5", "fp4", "gb200",
          SRT + "recipes/vllm/kimi-k2.5/*/disagg-gb200-*.yaml @ 8294e64e L50, L74 kv-cache-dtype: \"fp8\"", "disagg"),
)  # fmt: skip


def launched_fp8_kv_cache(engine: str, model: str, precision: str | None, system: str, mode: str, image: str | None) -> str | None:
    """The citation of the rule that launches this InferenceX run with an fp8 KV cache, or None
    (the launch serves the engine's auto)."""
    for rule in KV_CACHE_RULES:
        if (rule.engine == engine and model in rule.models and rule.precision == precision and system in rule.systems
                and mode in rule.modes and (image or "").startswith(rule.image)):  # fmt: skip
            return rule.citation
    return None
