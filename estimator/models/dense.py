"""Dense decoder op graph (Llama 3.x, Qwen2/Qwen3 dense, MiMo-7B): the per-GPU ops of one forward pass.

Mirrors aiconfigurator-core 0.12.0 ``sdk/models/llama.py:LLAMAModel.__init__`` (with
``sdk/models/base.py:BaseModel.__init__`` and ``sdk/models/helpers.py:mtp_scale_factor``), as serialized
by ``sdk/engine.py:build_engine_spec_json``. Each phase is, in order:

    embedding, add_norm_1, qkv_gemm, attention, proj_gemm, add_norm_2, gate_ffn1_gemm, act_gate,
    ffn2_gemm, logits_gemm, embedding_ar, ar_1, ar_2, p2p

Per-layer ops are scaled by the full layer count L (not L/pp); the embedding, logits and embedding
all-reduce by 1; P2P by pp-1 (present, with scale 0, when pp == 1). Generation ops are further scaled by
the MTP factor (L+nextn)/L; context ops never are. MiMo-7B's checkpoint MTP layer is not modelled
(the reference maps MiMoForCausalLM to its plain LLAMA builder). attention_dp does not change the
per-GPU ops. Context parallelism is not modelled (cp_size 1, seq_split 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from estimator.deployment import Deployment
from estimator.errors import InvalidInputError
from estimator.models.config import ModelConfig
from estimator.models.ops import (
    P2P,
    ContextAttention,
    CustomAllReduce,
    Elementwise,
    Embedding,
    Gemm,
    GenerationAttention,
    Op,
)
from estimator.models.quant import BF16, GEMM_WEIGHT_BYTES, QuantModes

CONTEXT = "context"
GENERATION = "generation"
DEFAULT_LANE_ORDER = ("default",)
ACTIVATION_BYTES = 2  # bytes per activation element moved by element-wise ops (bf16)
EMBEDDING_WEIGHT_BYTES = 2.0  # the embedding table is bf16 whatever the GEMM mode


@dataclass(frozen=True)
class PhaseOps:
    """The op lists of one deployment's two phases, in reference order."""

    context: tuple[Op, ...]  # prefill (context) ops
    generation: tuple[Op, ...]  # decode (generation) ops, MTP-scaled


@dataclass(frozen=True)
class _GpuShape:
    """Per-GPU widths under tensor parallelism, with the reference's integer divisions."""

    hidden: int  # model width h (replicated)
    heads: int  # query heads per GPU, n // tp
    kv_heads: int  # KV heads per GPU, ceil(n_kv / tp)
    head_size: int  # d
    attn_width: int  # n * d // tp: Q width, and the proj GEMM's k
    qkv_width: int  # attn_width + 2 * d * kv_heads: the fused QKV GEMM's n
    gate_up_width: int  # 2 * inter // tp: the fused gate/up GEMM's n
    inter: int  # inter // tp: the down GEMM's k
    vocab: int  # vocab // tp: embedding rows and logits GEMM n


@dataclass(frozen=True)
class _Scales:
    """Scale factors (latency multipliers) of one phase."""

    per_layer: float  # L * m
    once: float  # 1 * m (embedding, logits, embedding all-reduce)
    p2p: float  # (pp - 1) * m


def build_dense_ops(
    cfg: ModelConfig,
    deployment: Deployment,
    quant: QuantModes,
    lane_orders: Mapping[str, tuple[str, ...]] | None = None,
) -> PhaseOps:
    """Build both phases' op lists for a dense model.

    lane_orders maps "context"/"generation" to the attention op's kernel-lane order
    (default ("default",)). Raises InvalidInputError if tp does not divide the query heads.
    """
    shape = _gpu_shape(cfg, deployment.tp)
    lanes = lane_orders or {}
    return PhaseOps(
        context=_phase_ops(CONTEXT, cfg, deployment, quant, shape, lanes.get(CONTEXT, DEFAULT_LANE_ORDER), multiplier=1.0),
        generation=_phase_ops(
            GENERATION,
            cfg,
            deployment,
            quant,
            shape,
            lanes.get(GENERATION, DEFAULT_LANE_ORDER),
            multiplier=mtp_scale_factor(deployment.nextn, cfg.num_layers),
        ),
    )


def mtp_scale_factor(nextn: int, num_layers: int) -> float:
    """Decode compute multiplier of MTP with nextn draft layers: (L + nextn) / L; 1.0 without MTP."""
    if nextn <= 0:
        return 1.0
    return (nextn + num_layers) / num_layers


def weight_bytes(cfg: ModelConfig, deployment: Deployment, quant: QuantModes) -> float:
    """Weight bytes held per GPU across ALL layers (the reference's sum of op.get_weights() over the
    context ops; its memory model divides this by pp). GEMMs store n*k elements at the GEMM mode's
    bytes (the logits GEMM is bf16), the embedding vocab/tp * h bf16 elements; other ops hold none."""
    context = build_dense_ops(cfg, deployment, quant).context
    return sum(_op_weight_bytes(op) for op in context)


def _op_weight_bytes(op: Op) -> float:
    """Weight bytes of one op, times its scale factor (layer count)."""
    if isinstance(op, Gemm):
        return op.n * op.k * GEMM_WEIGHT_BYTES[op.quant_mode] * op.scale_factor
    if isinstance(op, Embedding):
        return op.vocab_size * op.hidden_size * EMBEDDING_WEIGHT_BYTES * op.scale_factor
    return 0.0


def _gpu_shape(cfg: ModelConfig, tp: int) -> _GpuShape:
    """Per-GPU widths; tp must divide the query heads (the reference asserts it)."""
    if cfg.num_heads % tp != 0:
        raise InvalidInputError(f"tp {tp} does not divide the {cfg.num_heads} attention heads of {cfg.model!r}")
    kv_heads = (cfg.num_kv_heads + tp - 1) // tp
    attn_width = cfg.num_heads * cfg.head_size // tp
    return _GpuShape(
        hidden=cfg.hidden_size,
        heads=cfg.num_heads // tp,
        kv_heads=kv_heads,
        head_size=cfg.head_size,
        attn_width=attn_width,
        qkv_width=attn_width + cfg.head_size * kv_heads * 2,
        gate_up_width=2 * cfg.inter_size // tp,
        inter=cfg.inter_size // tp,
        vocab=cfg.vocab_size // tp,
    )


def _phase_ops(
    phase: str,
    cfg: ModelConfig,
    deployment: Deployment,
    quant: QuantModes,
    shape: _GpuShape,
    lane_order: tuple[str, ...],
    multiplier: float,
) -> tuple[Op, ...]:
    """One phase's ops; multiplier is 1.0 for context and the MTP factor for generation."""
    scales = _Scales(per_layer=cfg.num_layers * multiplier, once=1 * multiplier, p2p=(deployment.pp - 1) * multiplier)
    h, layer, gemm_mode = shape.hidden, scales.per_layer, quant.gemm
    return (
        Embedding(f"{phase}_embedding", scales.once, vocab_size=shape.vocab, hidden_size=h),
        _elementwise(f"{phase}_add_norm_1", layer, 2 * h, 2 * h),
        Gemm(f"{phase}_qkv_gemm", layer, n=shape.qkv_width, k=h, quant_mode=gemm_mode),
        _attention(phase, cfg, quant, shape, layer, lane_order),
        Gemm(f"{phase}_proj_gemm", layer, n=h, k=shape.attn_width, quant_mode=gemm_mode, low_precision_input=True),
        _elementwise(f"{phase}_add_norm_2", layer, 2 * h, 2 * h),
        Gemm(f"{phase}_gate_ffn1_gemm", layer, n=shape.gate_up_width, k=h, quant_mode=gemm_mode),
        _elementwise(f"{phase}_act_gate", layer, shape.gate_up_width, shape.inter),
        Gemm(f"{phase}_ffn2_gemm", layer, n=h, k=shape.inter, quant_mode=gemm_mode, low_precision_input=True),
        Gemm(f"{phase}_logits_gemm", scales.once, n=shape.vocab, k=h, quant_mode=BF16),
        CustomAllReduce(f"{phase}_embedding_ar", scales.once, hidden_size=h, tp_size=deployment.tp),
        CustomAllReduce(f"{phase}_ar_1", layer, hidden_size=h, tp_size=deployment.tp),
        CustomAllReduce(f"{phase}_ar_2", layer, hidden_size=h, tp_size=deployment.tp),
        P2P(f"{phase}_p2p", scales.p2p, pp_size=deployment.pp, hidden_size=h),
    )


def _elementwise(name: str, scale: float, dim_in: int, dim_out: int) -> Elementwise:
    """An element-wise op reading dim_in and writing dim_out bf16 elements per token."""
    return Elementwise(name, scale, bytes_per_token=float(ACTIVATION_BYTES * (dim_in + dim_out)))


def _attention(phase: str, cfg: ModelConfig, quant: QuantModes, shape: _GpuShape, scale: float, lane_order: tuple[str, ...]) -> Op:
    """The phase's attention op (full attention: window 0)."""
    common = dict(n=shape.heads, n_kv=shape.kv_heads, head_size=shape.head_size, window_size=0, kv_cache_dtype=quant.kvcache, lane_order=tuple(lane_order))
    if phase == CONTEXT:
        return ContextAttention(f"{phase}_attention", scale, fmha_quant_mode=quant.fmha, use_qk_norm=cfg.use_qk_norm, **common)
    return GenerationAttention(f"{phase}_attention", scale, **common)
