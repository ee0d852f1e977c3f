"""Op specs: the per-GPU operations of one forward pass, shape-only (no perf data).

Field names and meanings mirror aiconfigurator-core's OpSpec JSON, so an op list can be priced by
either pricer and compared field by field with the reference model builder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Op:
    name: str  # e.g. "context_qkv_gemm"; unique within a phase except where the reference repeats
    scale_factor: float  # multiplier on the per-call latency (layer count, MTP scale, pp-1 for P2P)

    kind: str = field(init=False, default="")  # OpSpec tag, set by subclasses

    def spec(self) -> dict:
        """This op as one OpSpec JSON object ({tag: fields})."""
        fields = asdict(self)
        fields.pop("kind")
        return {self.kind: fields}


@dataclass(frozen=True)
class Embedding(Op):
    vocab_size: int
    hidden_size: int
    quant_mode: str = "bfloat16"
    seq_split: int = 1
    kind: str = field(init=False, default="Embedding")


@dataclass(frozen=True)
class Elementwise(Op):
    bytes_per_token: float  # 2*(dim_in + dim_out) bytes moved per token
    scale_num_tokens: int = 1
    seq_split: int = 1
    kind: str = field(init=False, default="Elementwise")


@dataclass(frozen=True)
class Gemm(Op):
    n: int
    k: int
    quant_mode: str
    scale_num_tokens: int = 1
    low_precision_input: bool = False
    seq_split: int = 1
    below_grid_sol: bool = False
    kind: str = field(init=False, default="Gemm")


@dataclass(frozen=True)
class ContextAttention(Op):
    n: int  # query heads per GPU
    n_kv: int  # KV heads per GPU
    head_size: int
    window_size: int
    kv_cache_dtype: str
    fmha_quant_mode: str
    use_qk_norm: bool
    cp_size: int = 1
    lane_order: tuple[str, ...] = ("default",)
    kind: str = field(init=False, default="ContextAttention")


@dataclass(frozen=True)
class GenerationAttention(Op):
    n: int
    n_kv: int
    head_size: int
    window_size: int
    kv_cache_dtype: str
    lane_order: tuple[str, ...] = ("default",)
    kind: str = field(init=False, default="GenerationAttention")


@dataclass(frozen=True)
class CustomAllReduce(Op):
    hidden_size: int
    tp_size: int
    quant: str = "half"
    seq_split: int = 1
    kind: str = field(init=False, default="CustomAllReduce")


@dataclass(frozen=True)
class P2P(Op):
    pp_size: int
    hidden_size: int
    seq_split: int = 1
    kind: str = field(init=False, default="P2P")


@dataclass(frozen=True)
class Nccl(Op):
    hidden_size: float  # elements moved per token (may be fractional, e.g. KV bytes / comm bytes)
    num_gpus: int  # ranks taking part in the collective
    dtype: str  # comm quant mode: "half", "int8" or "fp8"
    operation: str  # "all_gather", "alltoall", "reduce_scatter" or "all_reduce"
    seq_split: int = 1  # context-parallel shard factor: the busiest rank sends ceil(tokens / seq_split)
    kind: str = field(init=False, default="Nccl")


@dataclass(frozen=True)
class Moe(Op):
    hidden_size: int  # model hidden size
    inter_size: int  # expert FFN intermediate size
    topk: int  # experts routed per token
    num_experts: int  # experts in the layer
    moe_tp_size: int  # tensor-parallel split of each expert
    moe_ep_size: int  # expert-parallel groups
    attention_dp_size: int  # attention data-parallel ranks whose tokens meet in the expert pool
    quant_mode: str  # MoE quant mode, e.g. "fp8_block"
    workload_distribution: str  # token routing skew, e.g. "power_law_1.01"
    is_gated: bool = True  # gated (SwiGLU, 3 GEMMs) or not (2 GEMMs)
    moe_backend: str | None = None  # sglang's ("deepep_moe" retired: a miss), or TRT-LLM's TRTLLM: trtllm-gen's curve at every token count
    enable_eplb: bool = False  # expert-parallel load balancing (sglang context ops price 0.8 x tokens)
    is_context: bool = False  # the op belongs to the context phase (gates EPLB)
    kind: str = field(init=False, default="Moe")


def ops_spec(ops: list[Op] | tuple[Op, ...]) -> list[dict]:
    """The OpSpec JSON list of an op list (lane orders as lists)."""
    out = []
    for op in ops:
        spec = op.spec()
        body = next(iter(spec.values()))
        if "lane_order" in body:
            body["lane_order"] = list(body["lane_order"])
        out.append(spec)
    return out
