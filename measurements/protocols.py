"""Benchmark protocols per measurement source, and engine scheduler defaults, each with its citation.

A source's client protocol is taken from its own public documentation. Engine scheduler settings
(step token budget, chunked prefill, max_num_seqs) vary per launch script; where a source does not
document them per row, the engine's documented default is used and the row says so
(`Protocol.engine_settings == "engine default"`). No value here is chosen to fit the measurements.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from estimator.closedloop.settings import SHAPE_COMPILE_FIXED, SHAPE_COMPILE_MS
from estimator.closedloop.settings import engine_defaults as replay_engine_defaults
from estimator.models.config import linear_attention_layers
from measurements.schema import Measurement, Protocol

GIB = 1 << 30


@dataclass(frozen=True)
class ClientProtocol:
    """What a source documents about its benchmark client (None: undocumented)."""

    client: str  # benchmark client and dataset
    prompts_per_concurrency: int | None  # num_prompts = this x C (>= 1)
    request_rate: float | None  # offered requests/s; inf: all dispatched at t = 0
    random_range_ratio: float | None  # r: lengths uniform on [r*L, L]
    ignore_eos: bool | None  # outputs always run to osl tokens
    citation: str  # the public document, or why there is none
    ttft_statistic: str  # which TTFT statistic the source reports
    tpot_definition: str  # how the source defines TPOT


@dataclass(frozen=True)
class EngineSettings:
    """An engine's scheduler settings and where they are documented."""

    step_token_budget: int  # tokens per step (prefill chunks plus one per running decode), >= 1
    chunked_prefill: bool  # a prompt may be split across steps
    max_num_seqs: int | None  # running-request cap; None: derived by the engine from KV capacity
    citation: str  # the public document
    stream_interval: int = 1  # output tokens per streamed chunk after the first token (SGLang); 1: every token
    mixed_batches: bool = True  # a step may carry prefill chunks and decodes together (SGLang default: off)
    recv_interval: int = 1  # weighted passes between intakes of new requests (SGLang --scheduler-recv-interval); 1: every pass
    batch_wait_iters: int = 0  # passes a prefill is held beside running decodes (TRT-LLM batch_wait_timeout_iters); 0: off
    batch_wait_tokens_ratio: float = 0.0  # a pass with this share of the budget is not held (TRT-LLM batch_wait_max_tokens_ratio)
    adp_balance_iters: int = 0  # attention DP: counted passes before held prefills go (TRT-LLM attention_dp_config.timeout_iters); 0: off
    adp_batching_wait_iters: int = 0  # attention DP: passes prefills on every rank wait (TRT-LLM attention_dp_config.batching_wait_iters)
    kv_cache_dtype: str | None = None  # KV cache dtype the launch sets (TRT-LLM kv_cache_config.dtype); None: the checkpoint's
    nextn: int = 0  # MTP draft tokens per decode step (TRT-LLM speculative_config num_nextn_predict_layers); 0: no speculation
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= this <= nextn), from a cited public figure
    kv_free_memory_fraction: float | None = None  # TRT-LLM kv_cache_config.free_gpu_memory_fraction of the launch; None: not documented


INFERENCEX = "inferencex"
AIC_GAP_ANALYSIS = "aic-gap-analysis"
UNKNOWN_SOURCE = "unknown"

_VLLM_CLIENT_TPOT = "(e2e - ttft)/(output_len - 1) per request, mean over requests"

CLIENTS: Mapping[str, ClientProtocol] = MappingProxyType(
    {
        INFERENCEX: ClientProtocol(
            client="vLLM benchmark_serving.py, random dataset",
            prompts_per_concurrency=10,
            request_rate=math.inf,
            random_range_ratio=0.8,
            ignore_eos=True,
            citation=(
                "SemiAnalysisAI/InferenceX benchmarks/benchmark_lib.sh run_benchmark_serving "
                "(--dataset-name random --random-range-ratio $RANDOM_RANGE_RATIO --request-rate inf --ignore-eos) "
                "with the per-recipe --num-prompts $((CONC * 10)) --max-concurrency $CONC and RANDOM_RANGE_RATIO=0.8"
            ),
            ttft_statistic="mean over requests",
            tpot_definition=_VLLM_CLIENT_TPOT,
        ),
        AIC_GAP_ANALYSIS: ClientProtocol(
            client="undocumented (AIConfigurator gap-analysis runs)",
            prompts_per_concurrency=None,
            request_rate=None,
            random_range_ratio=None,
            ignore_eos=None,
            citation="undocumented: the gap-analysis benchmark protocol is not published",
            ttft_statistic="as shipped in silicon_sample.csv (statistic not stated)",
            tpot_definition="as shipped in silicon_sample.csv (definition not stated)",
        ),
        UNKNOWN_SOURCE: ClientProtocol(
            client="undocumented",
            prompts_per_concurrency=None,
            request_rate=None,
            random_range_ratio=None,
            ignore_eos=None,
            citation="undocumented: provenance names no known source",
            ttft_statistic="as shipped in silicon_sample.csv (statistic not stated)",
            tpot_definition="as shipped in silicon_sample.csv (definition not stated)",
        ),
    }
)


ENGINE_DEFAULT_CITATIONS: Mapping[str, str] = MappingProxyType(
    {
        "vllm": "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (OpenAI API server; V1 chunks prefill by default)",
        "sglang": ("sglang/srt/server_args.py ServerArgs: chunked_prefill_size by GPU memory; max_running_requests from the KV "
                   "pool; enable_mixed_chunk False (a step prefills or decodes)"),  # fmt: skip
        "trtllm": "tensorrt_llm/llmapi/llm_args.py: max_num_tokens 8192, max_batch_size 2048, enable_chunked_prefill False",
    }
)


def engine_defaults(engine: str, gpu_memory_bytes: int, system: str = "") -> EngineSettings:
    """The engine's documented scheduler defaults on a GPU with that much memory: the values the
    replay uses (estimator.closedloop.settings.engine_defaults), with their citation."""
    if engine not in ENGINE_DEFAULT_CITATIONS:
        raise ValueError(f"no documented defaults for engine {engine!r}")
    s = replay_engine_defaults(engine, system, gpu_memory_bytes)
    return EngineSettings(s.budget, s.chunked, s.max_num_seqs, ENGINE_DEFAULT_CITATIONS[engine], mixed_batches=s.mixed)


# InferenceX's TRT-LLM recipes size max_num_tokens per model (chunked prefill left at its default, off).
TRTLLM_DSR1_CITATION = (
    "SemiAnalysisAI/InferenceX benchmarks/dsr1_fp8_b200_trt.sh @ 0a919c5: trtllm-serve "
    "--max_num_tokens $(( ($CONC+$ISL+64+63)/64*64 )), at least 8192; chunked prefill off"
)
TRTLLM_GPTOSS_CITATION = "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_b200_trt.sh @ 1825e7f: MAX_NUM_TOKENS=20000; chunked prefill off"
TRTLLM_LLAMA_CITATION = (
    "SemiAnalysisAI/InferenceX benchmarks/70b_fp8_h200_trt_slurm.sh @ 73ef922: --max_num_tokens $MAX_MODEL_LEN; "
    "MAX_MODEL_LEN is not recorded per row and is taken as isl + osl, the least that serves the run (other stored versions, "
    "70b_fp8_b200_trt_slurm.sh and 70b_fp8_h200_trt_slurm.sh @ a267b4b, 70b_fp4_b200_trt_docker.sh @ c2faa3d, launch with "
    "--max_num_tokens 16384; the rows do not say which ran); chunked prefill off"
)
TRTLLM_LLAMA_BATCH_WAIT = (20, 0.9)  # (batch_wait_timeout_iters, batch_wait_max_tokens_ratio) of the 1k/1k, TP < 8 runs
TRTLLM_LLAMA_BATCH_WAIT_CITATION = (
    "; ISL 1024, OSL 1024 and TP < 8 only: batch_wait_max_tokens_ratio 0.9, batch_wait_timeout_iters 20, in every stored "
    "version from the stream_interval 10 configs on, whichever max_num_tokens it sets (70b_fp8_b200_trt_slurm.sh @ a267b4b, "
    "70b_fp4_b200_trt_slurm.sh @ 73ef922, 70b_fp4_b200_trt_docker.sh @ c2faa3d, 70b_fp8_h200_trt_slurm.sh @ 73ef922)"
)
TRTLLM_KV_CACHE_DTYPE = "fp8"  # kv_cache_config.dtype of every InferenceX TRT-LLM script trtllm_recipe resolves but gpt-oss on H200
TRTLLM_KV_CACHE_CITATION = (
    "; kv_cache_config dtype fp8 in every stored version read (dsr1_fp8_b200_trt.sh @ 0a919c5, dsr1_fp4_b200_trt.sh @ 111f031, "
    "dsr1_fp8_h200_trt.sh @ 1fc5d73, gptoss_fp4_b200_trt.sh @ 1825e7f, 70b_fp8_h200_trt_slurm.sh @ 73ef922 and the other stored "
    "Llama-3.1-70B TRT-LLM scripts' llama-config.yml)"
)
TRTLLM_CHECKPOINT_KV = frozenset({("openai/gpt-oss-120b", "h200_sxm"), ("openai/gpt-oss-20b", "h200_sxm")})  # (model, system): dtype auto
TRTLLM_CHECKPOINT_KV_CITATION = (
    "; kv_cache_config dtype auto, the checkpoint's, in every stored version read (gptoss_fp4_h200_trt.sh @ ffdb196, 111f031, "
    "1fc5d73, c6b96dd, df64f87, 6c5e4c5; gptoss_fp4_h200_trt_slurm.sh @ f7d8340, 2e46dba, f560513, b5ebafa; single_node/ @ "
    "aad5336, 34bc7c4, 7458eea, 187f575; single_node/fixed_seq_len/ @ 8eec0d4)"
)
# (timeout_iters, batching_wait_iters) of TRT-LLM's attention-DP balance (attention_dp_config.enable_balance)
TRTLLM_DSR1_ADP_BALANCE = (60, 0)
TRTLLM_DSR1_ADP_BALANCE_CITATION = (
    "; under attention DP: attention_dp_config enable_balance true, timeout_iters 60, batching_wait_iters 0, in every stored "
    "version (dsr1_fp8_b200_trt.sh @ 0a919c5, dsr1_fp4_b200_trt.sh @ 111f031, dsr1_fp8_h200_trt.sh @ 1fc5d73 and the combined "
    "launchers after them)"
)
TRTLLM_DEFAULT_ADP_BALANCE = (50, 10)  # tensorrt_llm/llmapi/llm_args.py AttentionDpConfig defaults
TRTLLM_GPTOSS_ADP_BALANCE_CITATION = (
    "; under attention DP: attention_dp_config enable_balance true at TRT-LLM's defaults (llm_args.AttentionDpConfig: "
    "timeout_iters 50, batching_wait_iters 10), in every stored version (gptoss_fp4_b200_trt.sh @ 1825e7f, "
    "gptoss_fp4_b200_trt_slurm.sh @ 0d8d7d1)"
)
# InferenceX ran DeepSeek-R1 with MTP speculative decoding under its dsr1-fp4/fp8-b200-trt-mtp keys, and from the TRT-LLM
# 1.2 upgrade on those keys alone ran this image (the non-MTP keys ran 1.2.0rc6.post2): a run on it is an MTP run.
TRTLLM_DSR1_MTP_IMAGE = ("tensorrt-llm/release", "1.2.0rc6.post3")  # (repository, tag); registry prefixes vary ("nvcr.io/", "nvcr.io#")
TRTLLM_DSR1_MTP_SYSTEM = "b200_sxm"
TRTLLM_DSR1_MTP_DRAFTS = (3, 1)  # num_nextn_predict_layers without / with attention DP
# accepted draft tokens per step at each depth: TRT-LLM's published DeepSeek-R1 acceptance, 1.92 and 2.82 tokens per
# step, less the one token every step commits
TRTLLM_DSR1_MTP_ACCEPTED: Mapping[int, float] = MappingProxyType({1: 0.92, 3: 1.82})
TRTLLM_DSR1_MTP_CITATION = (
    "SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml @ 0004cf5: dsr1-fp4-b200-trt-mtp and dsr1-fp8-b200-trt-mtp "
    "run image release:1.2.0rc6.post3 (every search-space entry spec-decoding: mtp) while dsr1-fp4/fp8-b200-trt run "
    "1.2.0rc6.post2 (perf-changelog.yaml PRs 594, 620, 632, 642); benchmarks/dsr1_fp8_b200_trt_mtp.sh @ 111f031 and "
    "dsr1_fp4_b200_trt_mtp.sh @ 13dd0c2: speculative_config decoding_type MTP, num_nextn_predict_layers 3 (1 under "
    "attention DP), MAX_BATCH_SIZE CONC (CONC/TP under attention DP), --max_num_tokens "
    "$(( ((MTP+1)*MAX_BATCH_SIZE+ISL+64+63)/64*64 )); chunked prefill off; accepted drafts per step from NVIDIA/TensorRT-LLM "
    "docs/source/blogs/tech_blog/blog1_Pushing_Latency_Boundaries_Optimizing_DeepSeek-R1_Performance_on_NVIDIA_B200_GPUs.md "
    "@ 01c4ece (8xB200, DeepSeek-R1, ISL 1k, OSL 2k, batch 1: 1.92 tokens per step with 1 MTP layer, 2.82 with 3)"
)
TRTLLM_DEFAULT_FREE_MEMORY_FRACTION = 0.9  # tensorrt_llm/llmapi/llm_args.py KvCacheConfig.free_gpu_memory_fraction ("Default is 90%")
TRTLLM_DSR1_MTP_FREE_MEMORY = (0.8, "; kv_cache_config free_gpu_memory_fraction 0.8 (dsr1_fp8_b200_trt_mtp.sh @ 111f031, dsr1_fp4_b200_trt_mtp.sh @ 13dd0c2)")
TRTLLM_LLAMA_FREE_MEMORY = (
    TRTLLM_DEFAULT_FREE_MEMORY_FRACTION,
    "; no free_gpu_memory_fraction (70b_fp8_h200_trt_slurm.sh and 70b_fp4_b200_trt_slurm.sh @ 73ef922): TRT-LLM's default 0.9 "
    "(llm_args.KvCacheConfig)",
)
TRTLLM_GPTOSS_FREE_MEMORY: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        "b200_sxm": (0.85, "; kv_cache_config free_gpu_memory_fraction 0.85 (gptoss_fp4_b200_trt.sh @ 1825e7f)"),
        "h200_sxm": (0.85, "; kv_cache_config free_gpu_memory_fraction 0.85 (gptoss_fp4_h200_trt.sh @ 111f031)"),
    }
)  # system -> (fraction, citation); other systems' gpt-oss TRT-LLM recipes are not read


def trtllm_dsr1_free_memory(system: str, precision: str | None, isl: int, osl: int, concurrency: int, tp: int) -> tuple[float, str] | None:
    """(free_gpu_memory_fraction, citation) of InferenceX's agg DeepSeek-R1 TRT-LLM recipe without MTP
    for a run of `tp` GPUs; None for a system and precision whose recipe is not read."""
    if system == "h200_sxm" and precision == "fp8":
        return 0.75, "; kv_cache_config free_gpu_memory_fraction 0.75 (dsr1_fp8_h200_trt.sh @ 1fc5d73)"
    if system == "b200_sxm" and precision == "fp4":
        return 0.8, "; kv_cache_config free_gpu_memory_fraction 0.8 (dsr1_fp4_b200_trt.sh @ 111f031)"
    if system == "b200_sxm" and precision == "fp8":
        fraction = 0.7 if (isl, osl) in ((1024, 1024), (1024, 8192)) and concurrency >= 256 else 0.75 if (isl, osl) == (8192, 1024) and tp == 4 else 0.8
        return fraction, ("; kv_cache_config free_gpu_memory_fraction 0.8, 0.7 at ISL 1024 with OSL 1024 or 8192 and CONC >= 256, "
                          "0.75 at ISL 8192, OSL 1024 on TP 4 (dsr1_fp8_b200_trt.sh @ 0a919c5)")  # fmt: skip
    return None


DSR1_MODELS = frozenset({"deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"})
MULTINODE_DISAGG_ONLY = frozenset({("deepseek-ai/DeepSeek-R1", "gb200"), ("deepseek-ai/DeepSeek-R1", "gb300")})  # (model, system)
MULTINODE_DISAGG_CITATION = (
    "SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml @ 0004cf5 and @ 48f302c: every DeepSeek-R1 key on gb200 "
    "and gb300 (dsr1-fp4/fp8-gb200/gb300-dynamo-trt and -dynamo-sglang) is multinode: true, disagg: true, with prefill "
    "and decode workers; no single-node key serves DeepSeek-R1 on these systems"
)

GPTOSS_MODELS = frozenset({"openai/gpt-oss-120b", "openai/gpt-oss-20b"})
LLAMA_70B_MODELS = frozenset({"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B", "nvidia/Llama-3.1-70B-Instruct-FP8"})


def multinode_disagg_reason(source: str, model: str, system: str, mode: str) -> str | None:
    """Why an agg row of a source that runs this model on this system only as a multi-node
    disaggregated deployment cannot be priced as recorded, or None: its tp column is the run's GPU
    count and its prefill/decode workers are not in the row."""
    if source != INFERENCEX or mode != "agg" or (model, system) not in MULTINODE_DISAGG_ONLY:
        return None
    return (f"labelled agg, but InferenceX runs {model} on {system} only as multi-node disaggregated deployments "
            f"({MULTINODE_DISAGG_CITATION}): the tp column is the run's GPU count and its prefill/decode workers are not recorded")


def trtllm_recipe(model: str, isl: int, osl: int, concurrency: int, tp: int | None = None, attention_dp: int = 1,
                  agg: bool = True, system: str = "", image: str | None = None, precision: str | None = None) -> EngineSettings | None:  # fmt: skip
    """The max_num_tokens an InferenceX TRT-LLM recipe launches with: DeepSeek-R1 by the dsr1 rule,
    gpt-oss at 20000, Llama-3.1-70B at its max_model_len (isl + osl), and for Llama's 1k/1k runs
    below TP 8 TRT-LLM's batch waiting (`tp`: the run's GPUs, tensor parallel times attention DP;
    None: unknown, no batch waiting); under attention DP (`attention_dp` > 1) the DeepSeek-R1 and
    gpt-oss recipes' attention-DP balance (TRTLLM_DSR1_ADP_BALANCE, TRTLLM_DEFAULT_ADP_BALANCE); for
    agg runs (the scripts read) their fp8 KV cache (the checkpoint's for gpt-oss on H200), and for the agg DeepSeek-R1 runs of the MTP
    recipes' image (dsr1_mtp_drafts) their MTP drafts and token budget, and for the agg runs of the
    recipes read their KV-cache memory fraction (`precision`: the row's, which picks the DeepSeek-R1
    recipe); None for other models."""
    wait_iters, wait_ratio, balance, nextn, free_memory = 0, 0.0, (0, 0), 0, None
    if model in DSR1_MODELS:
        budget, citation = max(8192, (concurrency + isl + 64 + 63) // 64 * 64), TRTLLM_DSR1_CITATION
        if tp is not None and (nextn := dsr1_mtp_drafts(model, system, image, attention_dp)):  # tp is None for disagg runs
            # MAX_BATCH_SIZE: CONC, or CONC/TP under attention DP (held at 1 or more: no engine runs a batch of 0)
            max_batch = max(1, concurrency // tp) if attention_dp > 1 else concurrency
            budget, citation = ((nextn + 1) * max_batch + isl + 64 + 63) // 64 * 64, TRTLLM_DSR1_MTP_CITATION
            free_memory = TRTLLM_DSR1_MTP_FREE_MEMORY
        elif tp is not None:
            free_memory = trtllm_dsr1_free_memory(system, precision, isl, osl, concurrency, tp)
        if attention_dp > 1:
            balance, citation = TRTLLM_DSR1_ADP_BALANCE, citation + TRTLLM_DSR1_ADP_BALANCE_CITATION
    elif model in GPTOSS_MODELS:
        budget, citation = 20000, TRTLLM_GPTOSS_CITATION
        free_memory = TRTLLM_GPTOSS_FREE_MEMORY.get(system)
        if attention_dp > 1:
            balance, citation = TRTLLM_DEFAULT_ADP_BALANCE, citation + TRTLLM_GPTOSS_ADP_BALANCE_CITATION
    elif model in LLAMA_70B_MODELS:
        budget, citation, free_memory = isl + osl, TRTLLM_LLAMA_CITATION + TRTLLM_LLAMA_BATCH_WAIT_CITATION, TRTLLM_LLAMA_FREE_MEMORY
        if (isl, osl) == (1024, 1024) and tp is not None and tp < 8:
            wait_iters, wait_ratio = TRTLLM_LLAMA_BATCH_WAIT
    else:
        return None
    kv_cache_dtype, fraction = None, None  # the scripts read launch agg runs; the disagg workers' recipes differ
    if agg:
        if (model, system) in TRTLLM_CHECKPOINT_KV:
            citation += TRTLLM_CHECKPOINT_KV_CITATION
        else:
            kv_cache_dtype, citation = TRTLLM_KV_CACHE_DTYPE, citation + TRTLLM_KV_CACHE_CITATION
        if free_memory is not None:
            fraction, citation = free_memory[0], citation + free_memory[1]
    return EngineSettings(step_token_budget=budget, chunked_prefill=False, max_num_seqs=concurrency, citation=citation,
                          batch_wait_iters=wait_iters, batch_wait_tokens_ratio=wait_ratio, adp_balance_iters=balance[0],
                          adp_batching_wait_iters=balance[1], kv_cache_dtype=kv_cache_dtype, nextn=nextn,
                          nextn_accepted=TRTLLM_DSR1_MTP_ACCEPTED.get(nextn, 0.0), kv_free_memory_fraction=fraction)  # fmt: skip


def dsr1_mtp_drafts(model: str, system: str, image: str | None, attention_dp: int) -> int:
    """MTP draft tokens of an InferenceX TRT-LLM DeepSeek-R1 run on the MTP recipes' image and system
    (TRTLLM_DSR1_MTP_CITATION: 3, or 1 under attention DP); 0 for every other run."""
    repository, _, tag = (image or "").rpartition(":")
    on_mtp_image = repository.endswith(TRTLLM_DSR1_MTP_IMAGE[0]) and tag == TRTLLM_DSR1_MTP_IMAGE[1]
    if model != "deepseek-ai/DeepSeek-R1" or system != TRTLLM_DSR1_MTP_SYSTEM or not on_mtp_image:
        return 0
    return TRTLLM_DSR1_MTP_DRAFTS[attention_dp > 1]


@dataclass(frozen=True)
class SglangFlags:
    """The scheduler flags of one SGLang launch that the replay follows."""

    chunked_prefill_size: int  # --chunked-prefill-size (the step token budget)
    stream_interval: int  # --stream-interval (recorded; the first token goes out at once, so TTFT and TPOT do not move)
    recv_interval: int  # --scheduler-recv-interval (1 when not given)


FlagsRule = Callable[[int, int], SglangFlags | None]  # (tp, concurrency) -> the recipe's flags; None: no branch for that tp


def _dsr1_fp8_blackwell(tp: int, c: int) -> SglangFlags | None:
    """dsr1_fp8_b200.sh: a branch per TP (4 or 8); TP 8 receives every 30 passes from CONC 16 on."""
    if tp == 4:
        return SglangFlags(8192, 30, 10)
    return SglangFlags(32768, 30, 30 if c >= 16 else 10) if tp == 8 else None


def _dsr1_fp4_blackwell(tp: int, c: int) -> SglangFlags:
    """dsr1_fp4_b200.sh (without attention DP): one branch; receives every 30 passes from CONC 16 on."""
    return SglangFlags(16384, 10, 30 if c >= 16 else 10)


def _qwen35_fp8_b200(tp: int, c: int) -> SglangFlags:
    """qwen3.5_fp8_b200.sh of March 2026 (v0.5.9 images): one branch; receives every 30 passes from CONC 16 on."""
    return SglangFlags(32768, 30, 30 if c >= 16 else 10)


def _fixed(flags: SglangFlags) -> FlagsRule:
    """A recipe whose flags depend on neither TP nor concurrency."""
    return lambda tp, c: flags


_DSR1_FP8_B200 = ("dsr1_fp8_b200.sh: TP 8: --chunked-prefill-size 32768 --scheduler-recv-interval 30 (CONC >= 16) else 10; "
                  "TP 4: 8192 and 10; --stream-interval 30")  # fmt: skip
_DSR1_FP4 = "--chunked-prefill-size 16384 --scheduler-recv-interval 30 (CONC >= 16) else 10 --stream-interval 10"
SGLANG_RECIPES: Mapping[tuple[str, str, str], tuple[FlagsRule, str]] = MappingProxyType(
    {
        ("dsr1", "fp8", "b200_sxm"): (
            _dsr1_fp8_blackwell,
            f"benchmarks/{_DSR1_FP8_B200} (every stored version: @ 1fc5d73, df64f87, 6c5e4c5; single_node/ @ 3b8a2f9, 16ffb65; "
            "fixed_seq_len/ @ 8eec0d4, 432945d)",
        ),
        ("dsr1", "fp8", "b300_sxm"): (
            _dsr1_fp8_blackwell,
            f"benchmarks/single_node/dsr1_fp8_b300.sh @ 5632483 and fixed_seq_len/ @ 8eec0d4 (the B200 recipe as is): {_DSR1_FP8_B200}",
        ),
        ("dsr1", "fp4", "b200_sxm"): (
            _dsr1_fp4_blackwell,
            f"benchmarks/dsr1_fp4_b200.sh @ 1fc5d73, df64f87; single_node/ @ 3b8a2f9, 285b662; fixed_seq_len/ @ 8eec0d4 "
            f"(without attention DP): {_DSR1_FP4}",
        ),
        ("dsr1", "fp4", "b300_sxm"): (
            _dsr1_fp4_blackwell,
            f"benchmarks/single_node/dsr1_fp4_b300.sh @ b14590a, 5632483; fixed_seq_len/ @ 8eec0d4: {_DSR1_FP4}",
        ),
        ("dsr1", "fp8", "h200_sxm"): (
            _fixed(SglangFlags(32768, 10, 1)),
            "benchmarks/dsr1_fp8_h200.sh @ 1fc5d73, d1c47c8; single_node/ @ 161e7f6, 285b662; fixed_seq_len/ @ 8eec0d4: "
            "--chunked-prefill-size 32768 --stream-interval 10",
        ),
        ("qwen3.5", "fp8", "b200_sxm"): (
            _qwen35_fp8_b200,
            "benchmarks/single_node/qwen3.5_fp8_b200.sh @ 01fa35c, 3e2ebc0 and its _mtp sibling @ 83fafdd, 2ecc5ce (the versions of "
            "the sample's images, lmsysorg/sglang v0.5.9-cu129/cu130, measured March 2026): --chunked-prefill-size 32768 "
            "--scheduler-recv-interval 30 (CONC >= 16) else 10 --stream-interval 30; the later versions (PR 1027 on, April 2026: "
            "16384 or 8192, CONC > 4, stream 50) postdate these runs, and the earliest (@ 10c3d8d, NEXTN) sets none of the flags",
        ),
        ("qwen3.5", "fp8", "b300_sxm"): (
            _fixed(SglangFlags(16384, 50, 10)),
            "benchmarks/single_node/qwen3.5_fp8_b300.sh @ 5632483; fixed_seq_len/ @ f89cdfe, 1534ee2: --chunked-prefill-size 16384 "
            "--stream-interval 50 --scheduler-recv-interval 10",
        ),
        ("qwen3.5", "fp8", "h200_sxm"): (
            _fixed(SglangFlags(16384, 50, 1)),
            "benchmarks/single_node/qwen3.5_fp8_h200.sh @ 2116fc4, 5739244; fixed_seq_len/ @ 8eec0d4: --chunked-prefill-size 16384 "
            "--stream-interval 50",
        ),
    }
)  # (model family, precision, system) -> (flags rule of (TP, CONC), recipe citation); only recipes whose stored versions agree.
# Their --max-running-requests (128 / 256 / 512 by TP and lengths) is not applied: the sample holds these recipes' runs at
# concurrencies above it (256 and 512 against 128), so the versions that ran predate the cap.
# Recipes resolved only for the runs of one image line (the versions of that era agree; later ones differ).
SGLANG_RECIPE_IMAGES: Mapping[tuple[str, str, str], str] = MappingProxyType({("qwen3.5", "fp8", "b200_sxm"): "lmsysorg/sglang:v0.5.9"})
QWEN35_MODELS = frozenset({"Qwen/Qwen3.5-397B-A17B"})


def sglang_recipe(model: str, precision: str | None, system: str, tp: int | None, concurrency: int,
                  image: str | None = None) -> EngineSettings | None:  # fmt: skip
    """The scheduler flags an InferenceX SGLang recipe launches a run of `tp` GPUs with (None: no
    recipe resolved, no recipe branch for that tp, or a run outside the image line a recipe is
    resolved for)."""
    family = "dsr1" if model in DSR1_MODELS else "qwen3.5" if model in QWEN35_MODELS else None
    image_line = SGLANG_RECIPE_IMAGES.get((family, precision, system))
    if image_line is not None and not (image or "").startswith(image_line):
        return None
    entry = SGLANG_RECIPES.get((family, precision, system))
    flags = entry[0](tp, concurrency) if entry is not None and tp is not None else None
    if flags is None:
        return None
    return EngineSettings(
        step_token_budget=flags.chunked_prefill_size, chunked_prefill=True, max_num_seqs=None,
        citation=f"SemiAnalysisAI/InferenceX {entry[1]}", stream_interval=flags.stream_interval, mixed_batches=False,
        recv_interval=flags.recv_interval,
    )  # fmt: skip


def recipe_settings(source: str, engine: str, isl: int, osl: int, concurrency: int | None, model: str = "", system: str = "",
                    precision: str | None = None, tp: int | None = None, mode: str = "agg", image: str | None = None,
                    attention_dp: int = 1) -> EngineSettings | None:  # fmt: skip
    """The engine settings a source's launch recipe documents for a run, or None when it documents none.

    InferenceX's TRT-LLM recipes leave chunked prefill off and size max_num_tokens per model
    (trtllm_recipe): DeepSeek-R1 to hold one whole prompt next to every running decode (C + ISL + 64,
    rounded up to 64, at least 8192; its MTP runs, (MTP + 1) x max batch + ISL + 64, rounded up, with
    their drafts), gpt-oss at 20000, Llama-3.1-70B at max_model_len (with batch
    waiting on its agg 1k/1k runs below TP 8); the other
    models' TRT-LLM recipes are not resolved. Its SGLang recipes for DeepSeek-R1/V3 (FP8 on H200, B200,
    B300; FP4 on B200, B300) and Qwen3.5 FP8 (H200, B300) set the chunked prefill size, stream
    interval and scheduler receive interval (sglang_recipe, agg rows only: the disagg runs use
    other recipes; `tp` is the run's tensor-parallel size); Qwen3.5 FP8 on B200 by the versions of
    the sample's images and dates, for runs on those images only (SGLANG_RECIPE_IMAGES; later
    versions differ); GLM-5, whose versions disagree, is not resolved. Its vLLM recipes keep the engine default budget
    (8192, chunked)."""
    if source != INFERENCEX or not concurrency:
        return None
    if engine == "trtllm":
        agg = mode == "agg"
        return trtllm_recipe(model, isl, osl, concurrency, tp if agg else None, attention_dp if agg else 1, agg, system, image, precision)
    if engine == "sglang" and mode == "agg":  # single-node agg recipes
        return sglang_recipe(model, precision, system, tp, concurrency, image)
    return None


def protocol_for(source: str, concurrency: int | None, engine: EngineSettings, from_source: bool = False) -> Protocol:
    """A row's protocol: its source's client protocol at concurrency C, with the engine settings (from
    the source's recipe when from_source, else the engine's defaults)."""
    client = CLIENTS[source]
    per_c = client.prompts_per_concurrency
    return Protocol(
        client=client.client,
        num_prompts=per_c * concurrency if per_c is not None and concurrency is not None else None,
        request_rate=client.request_rate,
        random_range_ratio=client.random_range_ratio,
        ignore_eos=client.ignore_eos,
        client_citation=client.citation,
        step_token_budget=engine.step_token_budget,
        chunked_prefill=engine.chunked_prefill,
        max_num_seqs=engine.max_num_seqs,
        stream_interval=engine.stream_interval,
        mixed_batches=engine.mixed_batches,
        recv_interval=engine.recv_interval,
        batch_wait_iters=engine.batch_wait_iters,
        batch_wait_tokens_ratio=engine.batch_wait_tokens_ratio,
        adp_balance_iters=engine.adp_balance_iters,
        adp_batching_wait_iters=engine.adp_batching_wait_iters,
        kv_cache_dtype=engine.kv_cache_dtype,
        nextn=engine.nextn,
        nextn_accepted=engine.nextn_accepted,
        kv_free_memory_fraction=engine.kv_free_memory_fraction,
        engine_settings="source" if from_source else "engine default",
        engine_citation=engine.citation,
    )


# SGLang releases whose FLA l2norm.py was read, each declaring the token count T a tl.constexpr (PyPI wheels 0.5.9, 0.5.10,
# 0.5.10.post1: sglang/srt/layers/attention/fla/l2norm.py, l2norm_fwd_kernel)
SHAPE_SPECIALIZING_RELEASES = frozenset({"0.5.9", "0.5.10", "0.5.10.post1"})
_NIGHTLY_DATE = re.compile(r"nightly-dev-(?:[a-z0-9]+-)*?(\d{4})(\d{2})(\d{2})")  # nightly-dev-20260216-..., nightly-dev-cu13-20260317-...
_RELEASE_TAG = re.compile(r"sglang:v?(\d+\.\d+\.\d+(?:\.post\d+)?)")  # lmsysorg/sglang:v0.5.9-cu130


def shape_compile_ms(m: Measurement, model: str) -> float:
    """The Triton compile a pass that prefills a token count new to the run pays on the run's engine
    build (estimator.closedloop.settings, SHAPE_COMPILE_MS), ms: an agg run (the agg replay charges
    it; the P/D tandem does not) of SGLang serving a model with gated-delta-net layers (`model`: the
    bundled config priced) on a build that specializes the FLA l2norm kernel on T
    (sglang_specializes_l2norm); 0 otherwise."""
    if m.mode != "agg" or m.engine != "sglang" or not linear_attention_layers(model) or not sglang_specializes_l2norm(m):
        return 0.0
    return SHAPE_COMPILE_MS


def sglang_specializes_l2norm(m: Measurement) -> bool:
    """Whether the SGLang build of a run compiles the FLA l2norm kernel per token count: a release
    whose source was read (SHAPE_SPECIALIZING_RELEASES, as the version or the image tag), a
    nightly image dated before the fix (SHAPE_COMPILE_FIXED), or any build of a run measured
    before the fix (an assumption for releases not read: the fix is the first change to T that
    the PRs report); False when none of these is recorded (later releases are not assumed)."""
    tag = _RELEASE_TAG.search(m.image or "")
    releases = {(m.engine_version or "").removeprefix("v"), tag.group(1) if tag else ""}
    if releases & SHAPE_SPECIALIZING_RELEASES:
        return True
    for text in (m.engine_version, m.image):
        nightly = _NIGHTLY_DATE.search(text or "")
        if nightly:
            return "-".join(nightly.groups()) < SHAPE_COMPILE_FIXED
    return m.measured_date is not None and m.measured_date[:10] < SHAPE_COMPILE_FIXED
