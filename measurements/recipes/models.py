"""The model families InferenceX's recipes are resolved for, and the runs it deploys only multi-node disaggregated."""

from __future__ import annotations

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
