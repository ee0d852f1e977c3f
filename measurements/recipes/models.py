"""The model families InferenceX's recipes are resolved for, the runs it deploys only multi-node disaggregated,
and DeepSeek-R1's published MTP acceptance."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

DSR1_MODELS = frozenset({"deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"})
MULTINODE_DISAGG_ONLY = frozenset({("deepseek-ai/DeepSeek-R1", "gb200"), ("deepseek-ai/DeepSeek-R1", "gb300")})  # (model, system)
MULTINODE_DISAGG_CITATION = (
    "SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml @ 0004cf5 and @ 48f302c: every DeepSeek-R1 key on gb200 "
    "and gb300 (dsr1-fp4/fp8-gb200/gb300-dynamo-trt and -dynamo-sglang) is multinode: true, disagg: true, with prefill "
    "and decode workers; no single-node key serves DeepSeek-R1 on these systems"
)

GPTOSS_MODELS = frozenset({"openai/gpt-oss-120b", "openai/gpt-oss-20b"})
LLAMA_70B_MODELS = frozenset({"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B", "nvidia/Llama-3.1-70B-Instruct-FP8"})
QWEN35_MODELS = frozenset({"Qwen/Qwen3.5-397B-A17B"})
GLM5_MODELS = frozenset({"zhipuai/GLM-5"})

# Accepted draft tokens per decode step of DeepSeek-R1's MTP module at each draft depth (chain drafting, top-1, strict
# acceptance): TRT-LLM's published 1.92, 2.58 and 2.82 tokens per step at 1, 2 and 3 MTP layers, less the one token every
# step commits. Acceptance is the checkpoint's MTP head against its own output, so it carries to another engine that drafts
# the same way where that engine's own published figures agree (sglang_dsr1_mtp_accepted).
DSR1_MTP_ACCEPTED: Mapping[int, float] = MappingProxyType({1: 0.92, 2: 1.58, 3: 1.82})
DSR1_MTP_ACCEPTED_CITATION = (
    "NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog1_Pushing_Latency_Boundaries_Optimizing_DeepSeek-R1_Performance_on_NVIDIA_B200_GPUs.md "
    "@ 01c4ece (8xB200, DeepSeek-R1, ISL 1k, OSL 2k, batch 1: 1.92 tokens per step with 1 MTP layer, 2.58 with 2, 2.82 with 3)"
)
# SGLang's own published DeepSeek-R1 accept lengths (tokens per verify step, the verified token included) by
# --speculative-num-steps, with --speculative-eagle-topk 1 and --speculative-num-draft-tokens steps + 1 (chain drafting):
# ranges over batch sizes, not points.
SGLANG_DSR1_ACCEPT_LENGTH: Mapping[int, tuple[float, float]] = MappingProxyType({1: (1.8, 1.9), 2: (2.4, 2.7), 3: (2.9, 3.3)})
SGLANG_DSR1_ACCEPT_LENGTH_CITATION = (
    "lm-sys/lm-sys.github.io blog/2025-09-26-sglang-ant-group.md @ 2896b37 (SGLang v0.5.2, DeepSeek-R1, 16xH20, "
    "'(steps=1, topK=1, draft-tokens=2) -> Accept length ~ 1.8-1.9; (steps=2, topK=1, draft-tokens=3) -> ~ 2.4-2.7; "
    "(steps=3, topK=1, draft-tokens=4) -> ~ 2.9-3.3')"
)


def dsr1_mtp_accepted(engine: str, nextn: int) -> tuple[float, str] | str:
    """(accepted drafts per step, citation) of DeepSeek-R1 MTP at depth nextn on an engine, or why none is published:
    TRT-LLM's own figure; on SGLang the same checkpoint figure where it lies inside SGLang's own published range."""
    accepted = DSR1_MTP_ACCEPTED.get(nextn)
    if accepted is None or engine not in ("trtllm", "sglang"):
        return f"no published acceptance rate for {engine} DeepSeek-R1 MTP at depth {nextn}"
    citation = f"MTP {nextn}: accepted drafts per step from {DSR1_MTP_ACCEPTED_CITATION}"
    if engine == "trtllm":
        return accepted, citation
    low, high = SGLANG_DSR1_ACCEPT_LENGTH[nextn]
    if not low <= 1.0 + accepted <= high:
        return (f"no published acceptance rate for sglang DeepSeek-R1 MTP at depth {nextn}: the checkpoint's {1.0 + accepted:g} "
                f"tokens per step ({DSR1_MTP_ACCEPTED_CITATION}) lies outside SGLang's published {low:g}-{high:g} "
                f"({SGLANG_DSR1_ACCEPT_LENGTH_CITATION})")  # fmt: skip
    return accepted, f"{citation}, inside SGLang's own published {low:g}-{high:g} tokens per step ({SGLANG_DSR1_ACCEPT_LENGTH_CITATION})"


# SGLang's own published Qwen3.5-397B-A17B MTP accept lengths (tokens per verify step, the verified token included) at
# --speculative-num-steps 3, --speculative-eagle-topk 1, --speculative-num-draft-tokens 4 (chain drafting), random dataset.
QWEN35_MTP3_ACCEPT_LENGTHS = (3.12, 3.31)  # concurrency 1 and 100
QWEN35_MTP3_ACCEPTED = sum(QWEN35_MTP3_ACCEPT_LENGTHS) / len(QWEN35_MTP3_ACCEPT_LENGTHS) - 1.0  # accepted drafts per step, their mean
QWEN35_MTP3_ACCEPTED_CITATION = (
    "sgl-project/sgl-cookbook docs/autoregressive/Qwen/Qwen3.5.md @ 7b5bd9c05e3d L752-L791 and L807-L846 (8xH200 TP8, MTP 3 "
    "steps, 4 draft tokens, topk 1, random 1000/1000: accept length 3.12 at concurrency 1, 3.31 at 100; their mean less the "
    "verified token: 2.215 accepted drafts per step)"
)
