"""InferenceX's TensorRT-LLM launch recipes: the engine settings each script launches a run with, cited per script version."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from estimator.deployment import Backend
from estimator.settings import SOURCE_ORIGIN, EngineSettings, engine_defaults
from measurements.recipes.models import DSR1_MODELS, DSR1_MTP_ACCEPTED, DSR1_MTP_ACCEPTED_CITATION, GPTOSS_MODELS, LLAMA_70B_MODELS

# InferenceX's TRT-LLM recipes size max_num_tokens per model (chunked prefill left at its default, off).
TRTLLM_DSR1_CITATION = (
    "SemiAnalysisAI/InferenceX benchmarks/dsr1_{fp4,fp8}_b200_trt_slurm.sh, dsr1_fp8_h200_trt_slurm.sh @ e06929c70, f6a9d0b6a, "
    "008b91a9d: trtllm-serve --max_num_tokens $(( ($CONC+$ISL+64+63)/64*64 )); chunked prefill off"
)
TRTLLM_DSR1_FLOOR = (8192, "2026-01-21T23:05")  # (least max_num_tokens, merge time of the change that set it)
TRTLLM_DSR1_FLOOR_CITATION = ", at least 8192 from 64af5a771 (PR 258, merged 2026-01-21T23:05Z)"
TRTLLM_GPTOSS_CITATION = "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_b200_trt.sh @ 1825e7f: MAX_NUM_TOKENS=20000; chunked prefill off"
TRTLLM_LLAMA_MAX_NUM_TOKENS = 16384
TRTLLM_LLAMA_CITATION = (
    "SemiAnalysisAI/InferenceX benchmarks/70b_fp8_h200_trt_slurm.sh L49, 70b_fp8_b200_trt_slurm.sh L53, 70b_fp4_b200_trt_slurm.sh "
    "L53 @ 9596d23d7 (every version on main from 1b563c858, PR 20): trtllm-serve --max_num_tokens 16384; chunked prefill off"
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
# The MTP keys first ran the non-MTP keys' image: the runs of the workflow run PR 392's merge started, which ran only the keys
# of that PR's perf-changelog entry (the three -trt-mtp keys: B200 FP4 and FP8, H200 FP8), on that day.
TRTLLM_DSR1_PR392_RUN = (frozenset({"h200_sxm", "b200_sxm"}), ("tensorrt-llm/release", "1.1.0rc2.post2"), "2026-01-14")  # (systems, image, day)
TRTLLM_DSR1_PR392_B200_CITATION = (
    "SemiAnalysisAI/InferenceX bf3456727 (PR 392, merged 2026-01-14T22:26:18Z; perf-changelog.yaml L173-L175 names config-keys "
    "dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp, dsr1-fp8-h200-trt-mtp; runners/launch_b200-nv.sh selects the _mtp script "
    "through SPEC_SUFFIX): benchmarks/dsr1_{fp4,fp8}_b200_trt_mtp_slurm.sh L24-L29 MTP=3 (1 under DP_ATTENTION), L50-L52 "
    "speculative_config decoding_type MTP, L64-L70 MAX_BATCH_SIZE CONC (CONC/TP under attention DP), MAX_NUM_TOKENS="
    "$(( ((MTP+1)*MAX_BATCH_SIZE+ISL+64+63)/64*64 )), L45 free_gpu_memory_fraction 0.8; accepted drafts per step from " + DSR1_MTP_ACCEPTED_CITATION
)
TRTLLM_DSR1_H200_MTP_CITATION = (
    "SemiAnalysisAI/InferenceX bf3456727 (PR 392, merged 2026-01-14T22:26:18Z; the sample's runs measured 22:26:21Z that day): "
    "perf-changelog.yaml names config-keys dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp, dsr1-fp8-h200-trt-mtp; "
    "nvidia-master.yaml dsr1-fp8-h200-trt-mtp (image release:1.1.0rc2.post2, spec-decoding: mtp); "
    "benchmarks/dsr1_fp8_h200_trt_mtp_slurm.sh: MTP=3 (1 under DP_ATTENTION), MAX_BATCH_SIZE CONC (CONC/TP under attention DP), "
    "MAX_NUM_TOKENS=$(( ((MTP+1)*MAX_BATCH_SIZE+ISL+64+63)/64*64 )), kv_cache_config free_gpu_memory_fraction 0.75; "
    "accepted drafts per step from " + DSR1_MTP_ACCEPTED_CITATION
)
TRTLLM_DSR1_MTP_DRAFTS = (3, 1)  # num_nextn_predict_layers without / with attention DP
TRTLLM_DSR1_MTP_CITATION = (
    "SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml @ 0004cf5: dsr1-fp4-b200-trt-mtp and dsr1-fp8-b200-trt-mtp "
    "run image release:1.2.0rc6.post3 (every search-space entry spec-decoding: mtp) while dsr1-fp4/fp8-b200-trt run "
    "1.2.0rc6.post2 (perf-changelog.yaml PRs 594, 620, 632, 642); benchmarks/dsr1_fp8_b200_trt_mtp.sh @ 111f031 and "
    "dsr1_fp4_b200_trt_mtp.sh @ 13dd0c2: speculative_config decoding_type MTP, num_nextn_predict_layers 3 (1 under "
    "attention DP), MAX_BATCH_SIZE CONC (CONC/TP under attention DP), --max_num_tokens "
    "$(( ((MTP+1)*MAX_BATCH_SIZE+ISL+64+63)/64*64 )); chunked prefill off; accepted drafts per step from " + DSR1_MTP_ACCEPTED_CITATION
)
TRTLLM_DEFAULT_FREE_MEMORY_FRACTION = 0.9  # tensorrt_llm/llmapi/llm_args.py KvCacheConfig.free_gpu_memory_fraction ("Default is 90%")
TRTLLM_DSR1_MTP_FREE_MEMORY = (0.8, "; kv_cache_config free_gpu_memory_fraction 0.8 (dsr1_fp8_b200_trt_mtp.sh @ 111f031, dsr1_fp4_b200_trt_mtp.sh @ 13dd0c2)")
TRTLLM_LLAMA_FREE_MEMORY = (
    TRTLLM_DEFAULT_FREE_MEMORY_FRACTION,
    "; no free_gpu_memory_fraction (70b_fp8_h200_trt_slurm.sh and 70b_fp4_b200_trt_slurm.sh @ 73ef922): TRT-LLM's default 0.9 (llm_args.KvCacheConfig)",
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


# The DeepSeek-R1 B200 agg scripts of TRT-LLM 1.2 (perf-changelog.yaml PRs 594, 620, 632, 642): the sample's runs on
# 1.2.0rc6.post2 (FP8 measured 2026-01-29, FP4 2026-02-03) and 1.2.0rc6.post3 (the MTP keys, 2026-02-05 and 2026-02-06) are
# each PR's runs, measured the day it merged. Where a script sets PIECEWISE_CUDA_GRAPHS it adds torch_compile_config
# enable_piecewise_cuda_graph with capture_num_tokens up to max_num_tokens: passes that prefill replay graphs for the
# non-attention layers instead of launching every layer eagerly, so the framework's eager host floor does not apply.
TRTLLM_DSR1_B200_GRAPH_IMAGES: Mapping[bool, tuple[str, str]] = MappingProxyType(
    {False: ("tensorrt-llm/release", "1.2.0rc6.post2"), True: TRTLLM_DSR1_MTP_IMAGE}
)  # MTP recipe -> image
TRTLLM_DSR1_B200_PIECEWISE_CITATION: Mapping[tuple[str, bool], str] = MappingProxyType({
    ("fp8", False): "dsr1_fp8_b200_trt.sh @ ec7bafaae (PR 594): PIECEWISE_CUDA_GRAPHS at 1k/1k and 8k/1k from CONC 64, at 1k/8k CONC 128",
    ("fp4", False): "dsr1_fp4_b200_trt.sh @ 6eecc0e66 (PR 620): PIECEWISE_CUDA_GRAPHS at 1k/1k on TP 8 EP 8",
    ("fp8", True): "dsr1_fp8_b200_trt_mtp.sh @ 5d517074c (PR 632): PIECEWISE_CUDA_GRAPHS without attention DP, above CONC 4 (1k/1k), "
                   "8 (1k/8k), 16 (8k/1k)",
    ("fp4", True): "dsr1_fp4_b200_trt_mtp.sh @ 0aae52d4c (PR 642): PIECEWISE_CUDA_GRAPHS at 1k/1k CONC 32 and 64 (and 128 without "
                   "attention DP), at 1k/8k CONC 64",
})  # fmt: skip
TRTLLM_DSR1_B200_DELAY_BATCHING = (40, 0.8)  # batch_wait_timeout_iters, batch_wait_max_tokens_ratio: PR 594's DELAY_BATCHING
TRTLLM_DSR1_B200_DELAY_CITATION = (
    "dsr1_fp8_b200_trt.sh @ ec7bafaae (PR 594): DELAY_BATCHING at 1k/1k from CONC 64: batch_wait_timeout_iters 40, batch_wait_max_tokens_ratio 0.8"
)


def dsr1_b200_piecewise(precision: str | None, mtp: bool, isl: int, osl: int, concurrency: int, tp: int, ep: int | None, attention_dp: int) -> bool:
    """Whether the DeepSeek-R1 B200 agg script of TRT-LLM 1.2 (TRTLLM_DSR1_B200_PIECEWISE_CITATION) launches a run of
    `tp` GPUs (its TP), MoE expert parallel `ep` and attention DP with piecewise CUDA graphs."""
    lengths, c, dp = (isl, osl), concurrency, attention_dp > 1
    if (precision, mtp) == ("fp8", False):
        return (lengths in ((1024, 1024), (8192, 1024)) and c >= 64) or (lengths == (1024, 8192) and 128 <= c < 256)
    if (precision, mtp) == ("fp4", False):
        return lengths == (1024, 1024) and tp == 8 and ep == 8
    if (precision, mtp) == ("fp8", True):
        floor = {(1024, 1024): 4, (1024, 8192): 8, (8192, 1024): 16}.get(lengths)
        return not dp and floor is not None and c > floor
    if (precision, mtp) == ("fp4", True):
        return (lengths == (1024, 1024) and (c in (32, 64) or (c == 128 and not dp))) or (lengths == (1024, 8192) and c == 64)
    return False


def dsr1_b200_graph_settings(settings: EngineSettings, precision: str | None, image: str | None, isl: int, osl: int, concurrency: int,
                             tp: int, ep: int | None, attention_dp: int) -> EngineSettings:  # fmt: skip
    """settings with the piecewise CUDA graphs (no eager prefill floor) and the batch waiting of a DeepSeek-R1 B200 agg run
    of TRT-LLM 1.2's scripts (its image names the recipe: MTP or not), cited; unchanged for other runs."""
    mtp = settings.nextn > 0
    if not _on_image(image, TRTLLM_DSR1_B200_GRAPH_IMAGES[mtp]) or (precision, mtp) not in TRTLLM_DSR1_B200_PIECEWISE_CITATION:
        return settings
    if (precision, mtp, isl, osl) == ("fp8", False, 1024, 1024) and concurrency >= 64:
        iters, ratio = TRTLLM_DSR1_B200_DELAY_BATCHING
        settings = settings.cited(f"SemiAnalysisAI/InferenceX benchmarks/{TRTLLM_DSR1_B200_DELAY_CITATION}", batch_wait_iters=iters,
                                  batch_wait_tokens_ratio=ratio)  # fmt: skip
    if not dsr1_b200_piecewise(precision, mtp, isl, osl, concurrency, tp, ep, attention_dp):
        return settings
    return settings.cited(f"SemiAnalysisAI/InferenceX benchmarks/{TRTLLM_DSR1_B200_PIECEWISE_CITATION[precision, mtp]}: piecewise CUDA "
                          "graphs, no eager prefill floor", eager_layer_ms=0.0)  # fmt: skip


# The MoE backend (moe_config.backend) of InferenceX's DeepSeek-R1 FP4 B200 agg scripts on main, by version: TRTLLM, or
# CUTLASS under attention DP, except from PR 145 to PR 620, where it is CUTLASS on TP 4 and 8 by concurrency (the citations).
TRTLLM_DSR1_FP4_MOE_BY_CONCURRENCY = ("2025-11-03T18:05", "2026-02-03T17:34")  # UTC merge times of PR 145 (17d5e204f) and PR 620 (6eecc0e66)
TRTLLM_DSR1_FP4_MOE_CITATIONS = (
    "moe_config backend TRTLLM, CUTLASS under attention DP (dsr1_fp4_b200_trt_slurm.sh @ 9596d23d7, which sets both together; "
    "dsr1_fp4_b200_trt.sh @ 6eecc0e66, PR 620, whose runs on 1.2.0rc6.post2 the sample holds; the MTP scripts from "
    "dsr1_fp4_b200_trt_mtp_slurm.sh @ bf3456727, PR 392)",
    "moe_config backend TRTLLM, CUTLASS on TP 4 and 8 at ISL 1024 from CONC 256 and at ISL 8192 / OSL 1024 above CONC 32 "
    "(dsr1_fp4_b200_trt_slurm.sh @ 17d5e204f, PR 145, to 64af5a771; dsr1_fp4_b200_trt.sh @ b0c4ed21b to b30c3398a)",
)  # (by attention DP, by concurrency)


def dsr1_fp4_b200_moe_backend(measured: str | None, image: str | None, mtp: bool, tp: int, isl: int, osl: int, concurrency: int,
                              attention_dp: int) -> tuple[str, str]:  # fmt: skip
    """(moe_config.backend, citation) of InferenceX's DeepSeek-R1 FP4 B200 agg script in effect at `measured` (UTC; None: the
    newest) for a run of `tp` GPUs (TRTLLM_DSR1_FP4_MOE_BY_CONCURRENCY); a run on PR 620's image is that PR's own run, on its
    script (TRTLLM_DSR1_B200_GRAPH_IMAGES), whatever its time."""
    first, until = TRTLLM_DSR1_FP4_MOE_BY_CONCURRENCY
    pr620 = _on_image(image, TRTLLM_DSR1_B200_GRAPH_IMAGES[False])
    if not mtp and not pr620 and measured is not None and first <= measured < until:
        long = (isl, osl) == (8192, 1024)
        cutlass = tp in (4, 8) and ((long and concurrency > 32) or ((isl, osl) in ((1024, 1024), (1024, 8192)) and concurrency >= 256))
        return ("CUTLASS" if cutlass else "TRTLLM"), TRTLLM_DSR1_FP4_MOE_CITATIONS[1]
    return ("CUTLASS" if attention_dp > 1 else "TRTLLM"), TRTLLM_DSR1_FP4_MOE_CITATIONS[0]


def trtllm_recipe(model: str, isl: int, osl: int, concurrency: int, tp: int | None = None, attention_dp: int = 1,
                  agg: bool = True, system: str = "", image: str | None = None, precision: str | None = None,
                  measured: str | None = None, moe_ep: int | None = None) -> EngineSettings | None:  # fmt: skip
    """The max_num_tokens an InferenceX TRT-LLM recipe launches with: DeepSeek-R1 by the dsr1 rule (at least 8192 for
    a run measured from PR 258 on; `measured`: the run's UTC time), gpt-oss at 20000, Llama-3.1-70B at 16384, and for Llama's 1k/1k runs
    below TP 8 TRT-LLM's batch waiting (`tp`: the run's GPUs, tensor parallel times attention DP;
    None: unknown, no batch waiting); under attention DP (`attention_dp` > 1) the DeepSeek-R1 and
    gpt-oss recipes' attention-DP balance (TRTLLM_DSR1_ADP_BALANCE, TRTLLM_DEFAULT_ADP_BALANCE); for
    agg runs (the scripts read) their fp8 KV cache (the checkpoint's for gpt-oss on H200), and for the agg DeepSeek-R1 runs of the MTP
    recipes' image, or of the H200 MTP run (dsr1_mtp_drafts; `measured`: the run's UTC time), their MTP drafts and token budget, and for the agg runs of the
    recipes read their KV-cache memory fraction (`precision`: the row's, which picks the DeepSeek-R1
    recipe), and for the agg DeepSeek-R1 B200 runs of TRT-LLM 1.2's scripts their piecewise CUDA graphs and
    batch waiting (dsr1_b200_graph_settings; `moe_ep`: the run's MoE expert parallel size), and for the agg
    DeepSeek-R1 FP4 B200 runs their MoE backend (dsr1_fp4_b200_moe_backend); None for other models."""
    wait_iters, wait_ratio, balance, nextn, free_memory = 0, 0.0, (0, 0), 0, None
    if model in DSR1_MODELS:
        budget, citation = (concurrency + isl + 64 + 63) // 64 * 64, TRTLLM_DSR1_CITATION
        least, since = TRTLLM_DSR1_FLOOR
        if not agg or measured is None or measured >= since:  # undated: every version after the sample's dates; disagg: not these scripts
            budget, citation = max(least, budget), citation + TRTLLM_DSR1_FLOOR_CITATION
        if tp is not None and (nextn := dsr1_mtp_drafts(model, system, image, attention_dp, measured)):  # tp is None for disagg runs
            # MAX_BATCH_SIZE: CONC, or CONC/TP under attention DP (held at 1 or more: no engine runs a batch of 0)
            max_batch = max(1, concurrency // tp) if attention_dp > 1 else concurrency
            budget = ((nextn + 1) * max_batch + isl + 64 + 63) // 64 * 64
            if system == "h200_sxm":
                citation, free_memory = TRTLLM_DSR1_H200_MTP_CITATION, (0.75, "")
            elif _on_image(image, TRTLLM_DSR1_MTP_IMAGE):
                citation, free_memory = TRTLLM_DSR1_MTP_CITATION, TRTLLM_DSR1_MTP_FREE_MEMORY
            else:
                citation, free_memory = TRTLLM_DSR1_PR392_B200_CITATION, (0.8, "")
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
        budget, citation = TRTLLM_LLAMA_MAX_NUM_TOKENS, TRTLLM_LLAMA_CITATION + TRTLLM_LLAMA_BATCH_WAIT_CITATION
        free_memory = TRTLLM_LLAMA_FREE_MEMORY
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
    settings = engine_defaults(Backend.TRTLLM, system, 0).replace(  # TRT-LLM's defaults do not depend on GPU memory
        step_token_budget=budget, chunked_prefill=False, max_num_seqs=concurrency, origin=SOURCE_ORIGIN, citation=citation,
                          batch_wait_iters=wait_iters, batch_wait_tokens_ratio=wait_ratio, adp_balance_iters=balance[0],
                          adp_batching_wait_iters=balance[1], kv_cache_dtype=kv_cache_dtype, nextn=nextn,
                          nextn_accepted=DSR1_MTP_ACCEPTED.get(nextn, 0.0), kv_free_memory_fraction=fraction)  # fmt: skip
    if agg and tp is not None and model in DSR1_MODELS and system == TRTLLM_DSR1_MTP_SYSTEM:
        settings = dsr1_b200_graph_settings(settings, precision, image, isl, osl, concurrency, tp, moe_ep, attention_dp)
        if precision == "fp4":
            backend, moe_citation = dsr1_fp4_b200_moe_backend(measured, image, nextn > 0, tp, isl, osl, concurrency, attention_dp)
            settings = settings.cited(f"SemiAnalysisAI/InferenceX benchmarks: {moe_citation}", moe_backend=backend)
    return settings


def dsr1_mtp_drafts(model: str, system: str, image: str | None, attention_dp: int, measured: str | None = None) -> int:
    """MTP draft tokens of an InferenceX TRT-LLM DeepSeek-R1 run of an MTP recipe: on B200 a run on the
    MTP keys' image (TRTLLM_DSR1_MTP_CITATION), on B200 and H200 one of the run PR 392's merge started
    (TRTLLM_DSR1_PR392_RUN): 3, or 1 under attention DP; 0 for every other run."""
    if model != "deepseek-ai/DeepSeek-R1":
        return 0
    pr392_systems, pr392_image, pr392_day = TRTLLM_DSR1_PR392_RUN
    if system == TRTLLM_DSR1_MTP_SYSTEM and _on_image(image, TRTLLM_DSR1_MTP_IMAGE):
        return TRTLLM_DSR1_MTP_DRAFTS[attention_dp > 1]
    if system in pr392_systems and _on_image(image, pr392_image) and (measured or "").startswith(pr392_day):
        return TRTLLM_DSR1_MTP_DRAFTS[attention_dp > 1]
    return 0


def _on_image(image: str | None, wanted: tuple[str, str]) -> bool:
    """The image is `repository:tag` of wanted (registry prefixes vary: "nvcr.io/", "nvcr.io#")."""
    repository, _, tag = (image or "").rpartition(":")
    return repository.endswith(wanted[0]) and tag == wanted[1]
