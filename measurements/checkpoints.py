"""The quant formats a run's GEMM and MoE kernels computed in, read from the checkpoint that ran.

silicon_sample.csv labels a row's GEMM and MoE quant modes by a generic name ("fp8", "nvfp4"). The
checkpoint that ran carries its exact format in its config.json `quantization_config`. Where the
label and the checkpoint store weights at the same width, the label names this checkpoint; it may
still name the wrong arithmetic. gpt-oss-120b rows are labelled nvfp4 (4-bit weights and 4-bit
activations), but the checkpoint keeps attention in BF16 and stores its experts in MXFP4, which the
engines run with BF16 or MXFP8 activations: other kernels, at several times the cost. A label that
differs from the checkpoint only in scale granularity (fp8 per-tensor vs the 128x128 blocks of
MiniMax-M2.5 or DeepSeek-V3/R1) names the same 8-bit arithmetic; whether it is kept depends on the
engine's tables (below).

Activation scaling counts too. A per-tensor FP8 checkpoint with calibrated activation scales
(`fp8_static`, as ModelOpt writes them) runs one quantize pass per GEMM input; the `fp8` label is
priced from the engine's fp8 GEMM table, which TensorRT-LLM's collector measured with dynamic
activation scales (an amax pass more; `DYNAMIC_FP8_TABLES`) and vLLM's with static ones. On an
engine with a dynamic table such a checkpoint is priced at `fp8_static`, the reference's own mode
for it (the fp8 table less the compute_scale table); elsewhere the label already names its cost.

A row whose model id has no bundled config is read through the checkpoint its source's published
config ran, where a bundled config carries that checkpoint's quantization (`RAN_CHECKPOINTS`).

The labels stay the row's inputs (the baseline's, which the legacy method prices). `checkpoint_modes`
gives the checkpoint's own modes when the labels do not price the kernels that ran: other
arithmetic, other activation scaling or, where the tables time them alike, other scale
granularity. The report prices them first when they price with SILICON data for every op
(estimator.report.methods.priced_inputs).
On B200 under vLLM the MXFP8-activation format has no SILICON data for gpt-oss's experts; the
checkpoint's BF16-activation reading has, but it is not what InferenceX's recipe ran, so those rows
keep the baseline's pricing.

Scale granularity counts where the engine's tables time every granularity alike: TensorRT-LLM's
collector replays every GEMM and MoE dtype in a CUDA graph (`GRANULARITY_TIMED_ALIKE`), so a
label that differs from the checkpoint only in scale granularity (per-tensor fp8 for the 128x128
blocks of DeepSeek-V3/R1) is priced at the checkpoint's blocks, the kernels that ran. vLLM's
collector times its fp8_block GEMMs eagerly (`use_cuda_graph=gemm_type != "fp8_block"`), so its
block table holds launch overhead at small m; there, and on engines whose collector is not read,
the label's kernel stays the proxy.

`granularity_fallbacks` serves a label that differs from the checkpoint only in scale granularity
where the labels are priced first, and the checkpoint's modes where they miss data. Where the
priced modes' SILICON data lack an op (MiniMax-M2.5's experts have no per-tensor fp8 rows on H100
or B300 under vLLM), the same arithmetic at the other granularity is a measured kernel for that
op, priced before the reference's empirical transfer (HYBRID mode). The fallbacks change as few
ops as possible: the experts, then the GEMMs, then both.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from estimator.caching import memo
from estimator.errors import EstimatorError
from estimator.models import BF16, checkpoint_quant, checkpoint_quant_modes
from measurements.schema import Measurement

WEIGHT_AND_ACTIVATION_BITS = MappingProxyType({
    "bfloat16": (16, 16), "int8_wo": (8, 16), "sq": (8, 8), "fp8": (8, 8), "fp8_static": (8, 8), "fp8_block": (8, 8),
    "fp8_ootb": (8, 8), "int4_wo": (4, 16), "w4afp8": (4, 8), "nvfp4": (4, 4), "nvfp4_wo": (4, 16), "w4a16_nvfp4": (4, 16),
    "w4a16_mxfp4": (4, 16), "w4a16_mxfp4_cutlass": (4, 16), "w4a8_mxfp4_mxfp8": (4, 8), "w4a8_mxfp4_mxfp8_trtllm": (4, 8),
})  # fmt: skip
# ^ every GEMM and MoE quant mode of estimator.models.quant -> (weight bits, activation bits) of its MMA
STATIC_FP8 = "fp8_static"  # per-tensor FP8 weights and calibrated per-tensor activation scales
DYNAMIC_FP8_TABLES = MappingProxyType({
    "trtllm": "ai-dynamo/aiconfigurator collector/trtllm/collect_gemm.py @ 0009590 loads each fp8 Linear with weight and weight_scale "
              "only, so TensorRT-LLM's FP8QDQLinearMethod.apply takes its dynamic path (quantize_e4m3_per_tensor: an amax pass, "
              "then the quantize); vLLM's collector builds Fp8Config(activation_scheme=\"static\")",
})  # fmt: skip
# ^ engine -> why its per-tensor fp8 GEMM table carries a dynamic activation-scale pass
GRANULARITY_TIMED_ALIKE = MappingProxyType({
    "trtllm": "ai-dynamo/aiconfigurator collector/trtllm/collect_gemm.py @ 0009590 and collect_moe.py @ 006afd7 time every dtype "
              "through benchmark_with_power's CUDA-graph replay; vLLM's collect_gemm.py @ 00e9bde times fp8_block eagerly "
              "(use_cuda_graph=gemm_type != \"fp8_block\")",
})  # fmt: skip
# ^ engine -> why its tables price per-tensor and block-scaled kernels alike (the checkpoint's granularity is priced there)
MXFP4_BF16_ACTIVATIONS = "w4a16_mxfp4"  # MXFP4 experts, BF16 activations: the checkpoint's default reading
MXFP4_MXFP8_ACTIVATIONS = "w4a8_mxfp4_mxfp8"  # MXFP4 experts, MXFP8 activations


@dataclass(frozen=True)
class Mxfp8Activations:
    """Where a documented setup runs MXFP4 experts with MXFP8 activations."""

    engine: str  # trtllm | vllm
    systems: frozenset[str]  # the GPU systems the citation names
    source: str | None  # the measurement source whose recipe sets it; None: the engine's own choice
    citation: str  # the public document


MXFP8_ACTIVATIONS = (
    Mxfp8Activations("trtllm", frozenset({"b200_sxm", "gb200", "b300_sxm", "gb300"}), None,
                     "TensorRT-LLM deployment guides for GPT-OSS on Blackwell (quick start and deployment guide, "
                     "1.2.0rc2.post2 and later): its MoE backends run MXFP4 weights with MXFP8 activations on B200/GB200/B300/GB300"),
    Mxfp8Activations("vllm", frozenset({"b200_sxm"}), "inferencex",
                     "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_b200.sh @ 1fc5d73: VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"),
)  # fmt: skip


@dataclass(frozen=True)
class RanCheckpoint:
    """The checkpoint a source's published config ran for rows whose model id has no bundled config,
    read through a bundled config that carries the same quantization."""

    source: str  # the measurement source whose config names it
    measured: str  # the row's model id
    gemm_quant: str  # the row's GEMM label
    checkpoint: str  # the checkpoint that ran
    read_as: str  # bundled config with the checkpoint's quantization (and architecture)
    citation: str  # the public document


RAN_CHECKPOINTS = (
    RanCheckpoint("inferencex", "meta-llama/Llama-3.1-70B", "fp8", "nvidia/Llama-3.3-70B-Instruct-FP8", "nvidia/Llama-3.1-70B-Instruct-FP8",
                  "SemiAnalysisAI/InferenceX .github/configs/master.yaml @ 78f6b8d: every 70b-fp8 key (b200 and h200 trt, b200, "
                  "h100 and h200 vllm) serves nvidia/Llama-3.3-70B-Instruct-FP8, a ModelOpt FP8 checkpoint as the bundled one"),
)  # fmt: skip


@dataclass(frozen=True)
class CheckpointModes:
    """GEMM and MoE quant modes to price a run at: the checkpoint's own (checkpoint_modes), or the
    labels with some ops at the checkpoint's scale granularity (granularity_fallbacks)."""

    gemm: str  # dense GEMMs (attention projections included)
    moe: str | None  # routed experts (the label's, for a dense model)
    note: str  # where the modes come from, for the report


def checkpoint_modes(m: Measurement, model_used: str, moe: bool) -> CheckpointModes | None:
    """The checkpoint's modes when the label names this checkpoint (the same weight width for the
    experts of an MoE model, or the GEMMs of a dense one) but other kernels: other arithmetic, other
    activation scaling, or another scale granularity on an engine whose tables time granularities
    alike (GRANULARITY_TIMED_ALIKE). None otherwise, for an aliased model
    whose run names no bundled checkpoint and for a quantization the estimator cannot read. A
    missing label stands for the checkpoint's own mode (what the pricer infers)."""
    modes = _own_and_labelled(m, model_used, moe)
    if modes is None:
        return None
    (gemm, moe_mode), labelled = modes
    ran = _ran_checkpoint(m, model_used)
    name = ran.checkpoint if ran is not None else "the checkpoint"
    note = f"{name}'s own {gemm}/{moe_mode} (its config.json quantization_config)"
    rule = _mxfp8_activations(m) if moe_mode == MXFP4_BF16_ACTIVATIONS else None
    if rule is not None:
        moe_mode = MXFP4_MXFP8_ACTIVATIONS
        note = f"{name}'s own {gemm}/{moe_mode}: MXFP4 experts (its config.json quantization_config) with MXFP8 activations ({rule.citation})"
    if _same_kernels((gemm, moe_mode), labelled, m.engine):
        return None
    blocks = [f"{b} where the labels name {a}" for a, b in zip(labelled, (gemm, moe_mode)) if _regranulated(a, b)]
    if blocks and m.engine in GRANULARITY_TIMED_ALIKE:
        note += f"; {', '.join(blocks)}: scale granularities the {m.engine} tables time alike ({GRANULARITY_TIMED_ALIKE[m.engine]})"
    if any(b == STATIC_FP8 != a for a, b in zip(labelled, (gemm, moe_mode))) and m.engine in DYNAMIC_FP8_TABLES:
        note += f"; static activation scales, while the {m.engine} fp8 table quantizes activations dynamically ({DYNAMIC_FP8_TABLES[m.engine]})"
    if any(a == STATIC_FP8 != b for a, b in zip(labelled, (gemm, moe_mode))):
        note += f"; static activation scales, which the {m.engine} fp8 table times already (only {', '.join(DYNAMIC_FP8_TABLES)} tables quantize dynamically)"
    if ran is not None:
        note += f"; read as {ran.read_as} ({ran.citation})"
    return CheckpointModes(gemm, moe_mode, note)


def granularity_fallbacks(m: Measurement, model_used: str, moe: bool, first: CheckpointModes | None) -> tuple[CheckpointModes, ...]:
    """The labels with the experts', then the GEMMs', then both ops' modes replaced by the checkpoint's
    when those differ from the labels only in scale granularity (the same weight and activation bits
    and scaling), less `first`, the modes priced before the labels (checkpoint_modes of the row);
    () otherwise (and wherever checkpoint_modes finds other arithmetic or scaling)."""
    modes = _own_and_labelled(m, model_used, moe)
    if modes is None or not _same_kernels(*modes, engine=None):
        return ()
    (own_gemm, own_moe), (gemm, moe_mode) = modes
    candidates = ((gemm, own_moe), (own_gemm, moe_mode), (own_gemm, own_moe))
    unique = dict.fromkeys(c for c in candidates if c != (gemm, moe_mode) and (first is None or c != (first.gemm, first.moe)))
    return tuple(
        CheckpointModes(g, e, f"{g}/{e} (GEMMs/experts) for the labelled {gemm}/{moe_mode}: the same arithmetic, "
                              "at the checkpoint's scale granularity where they differ (its config.json quantization_config)")
        for g, e in unique
    )  # fmt: skip


def _own_and_labelled(m: Measurement, model_used: str, moe: bool) -> tuple[tuple[str, str | None], tuple[str, str | None]] | None:
    """((GEMM, MoE) modes of the checkpoint, (GEMM, MoE) modes labelled) when the label names this
    checkpoint (the same weight width for the experts of an MoE model, the GEMMs of a dense one);
    None for an aliased model whose run names no bundled checkpoint, an unreadable quantization or
    a label naming another checkpoint. A missing label stands for the checkpoint's own mode; a dense
    model's MoE mode is its label. The checkpoint's static fp8 scales read as fp8 on an engine whose
    fp8 table is static itself (_as_timed); a missing label stays what the pricer infers."""
    ran = _ran_checkpoint(m, model_used)
    if model_used != m.model and ran is None:
        return None
    try:
        modes = checkpoint_quant_modes(checkpoint_quant(ran.read_as if ran is not None else model_used))
    except EstimatorError:  # the labels stand
        return None
    inferred = (modes.get("gemm", BF16), modes.get("moe") if moe else m.moe_quant)  # what the pricer infers without labels
    own_gemm, own_moe = (_as_timed(inferred[0], m.engine), _as_timed(inferred[1], m.engine) if moe else inferred[1])
    label, own = (m.moe_quant, own_moe) if moe else (m.gemm_quant, own_gemm)
    if own is None or _bits(label or own) is None or _bits(label or own)[0] != _bits(own)[0]:
        return None  # the label names another checkpoint, or a mode the rule does not know
    return (own_gemm, own_moe), (m.gemm_quant or inferred[0], m.moe_quant or inferred[1])


def _as_timed(mode: str | None, engine: str) -> str | None:
    """A checkpoint's mode as the engine's tables time it: static fp8 scales are the fp8 table
    itself where that table is static (every engine but DYNAMIC_FP8_TABLES')."""
    return "fp8" if mode == STATIC_FP8 and engine not in DYNAMIC_FP8_TABLES else mode


def _ran_checkpoint(m: Measurement, model_used: str) -> RanCheckpoint | None:
    """The bundled reading of the checkpoint an aliased row ran, or None (unaliased or unnamed)."""
    if model_used == m.model:
        return None
    return next((r for r in RAN_CHECKPOINTS if (r.source, r.measured, r.gemm_quant) == (m.source, m.model, m.gemm_quant)), None)


def _same_kernels(ran: tuple[str, str | None], named: tuple[str, str | None], engine: str | None) -> bool:
    """Whether the labels price the kernels that ran: the same arithmetic op by op, fp8 activations
    scaled the same way (static or not) and, on an engine whose tables time every granularity alike,
    the same scale granularity (engine None: granularity aside)."""
    same_scaling = _all_ops(lambda a, b: (a == STATIC_FP8) == (b == STATIC_FP8), ran, named)
    same_granularity = engine not in GRANULARITY_TIMED_ALIKE or _all_ops(lambda a, b: not _regranulated(a, b), ran, named)
    return _same_arithmetic(ran, named) and same_scaling and same_granularity


def _regranulated(named: str | None, ran: str | None) -> bool:
    """Whether one op's 8-bit operands are scaled in 128x128 blocks by one mode and per tensor by the other."""
    return _bits(named) == _bits(ran) == (8, 8) and (named == "fp8_block") != (ran == "fp8_block")


def _same_arithmetic(ran: tuple[str, str | None], named: tuple[str, str | None]) -> bool:
    """Whether two (GEMM, MoE) mode pairs compute with the same weight and activation bits op by op."""
    return _all_ops(lambda a, b: _bits(a) == _bits(b), ran, named)


def _all_ops(same, ran: tuple[str, str | None], named: tuple[str, str | None]) -> bool:
    return all(same(a, b) for a, b in zip(ran, named))


def declared_kv_cache(m: Measurement, model_used: str) -> str | None:
    """The KV cache quantization the priced config declares, when that config is the checkpoint that ran: its
    weights are as wide as the row's GEMM label says (an alias priced on another format's config, as
    Nemotron-3-Super's BF16 run on the FP8 config's sizes, declares nothing for the run); None otherwise."""
    declared, own = _declared_kv_and_gemm(model_used)
    if declared is None or (m.gemm_quant is not None and (_bits(m.gemm_quant) or (None,))[0] != (_bits(own) or (None,))[0]):
        return None
    return declared


@memo()
def _declared_kv_and_gemm(model_used: str) -> tuple[str | None, str]:
    """(the KV quantization the config declares, its own GEMM mode), read once per config; (None, BF16)
    for a quantization the estimator cannot read (it declares nothing it can price)."""
    try:
        quant = checkpoint_quant(model_used)
        return quant.kv_cache_algo, checkpoint_quant_modes(quant).get("gemm", BF16)
    except EstimatorError:
        return None, BF16


def _bits(mode: str | None) -> tuple[int, int] | None:
    """(weight bits, activation bits) of a quant mode; None for no mode or one the table lacks."""
    return WEIGHT_AND_ACTIVATION_BITS.get(mode) if mode is not None else None


def _mxfp8_activations(m: Measurement) -> Mxfp8Activations | None:
    """The documented setup under which the row's MXFP4 experts ran with MXFP8 activations, or None."""
    return next((r for r in MXFP8_ACTIVATIONS if r.engine == m.engine and m.system in r.systems and r.source in (None, m.source)), None)
