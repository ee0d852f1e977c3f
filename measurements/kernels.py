"""The quant formats a run's GEMM and MoE kernels computed in, read from the checkpoint that ran.

silicon_sample.csv labels a row's GEMM and MoE quant modes by a generic name ("fp8", "nvfp4"). The
checkpoint that ran carries its exact format in its config.json `quantization_config`. Where the
label and the checkpoint store weights at the same width, the label names this checkpoint; it may
still name the wrong arithmetic. gpt-oss-120b rows are labelled nvfp4 (4-bit weights and 4-bit
activations), but the checkpoint keeps attention in BF16 and stores its experts in MXFP4, which the
engines run with BF16 or MXFP8 activations: other kernels, at several times the cost. A label that
differs from the checkpoint only in scale granularity (fp8 per-tensor vs the 128x128 blocks of
MiniMax-M2.5 or DeepSeek-V3/R1) names the same 8-bit arithmetic and is kept.

The labels stay the row's inputs (the baseline's, which the legacy method prices). `checkpoint_modes`
gives the checkpoint's own modes when their arithmetic differs from the labels'. The report prices
them first when they price with SILICON data for every op (estimator.report.methods.priced_inputs).
On B200 under vLLM the MXFP8-activation format has no SILICON data for gpt-oss's experts; the
checkpoint's BF16-activation reading has, but it is not what InferenceX's recipe ran, so those rows
keep the baseline's pricing.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from estimator.errors import EstimatorError
from estimator.models.config import checkpoint_quant
from estimator.models.quant import BF16, checkpoint_quant_modes
from measurements.schema import Measurement

WEIGHT_AND_ACTIVATION_BITS = MappingProxyType({
    "bfloat16": (16, 16), "int8_wo": (8, 16), "sq": (8, 8), "fp8": (8, 8), "fp8_static": (8, 8), "fp8_block": (8, 8),
    "fp8_ootb": (8, 8), "int4_wo": (4, 16), "w4afp8": (4, 8), "nvfp4": (4, 4), "nvfp4_wo": (4, 16), "w4a16_nvfp4": (4, 16),
    "w4a16_mxfp4": (4, 16), "w4a16_mxfp4_cutlass": (4, 16), "w4a8_mxfp4_mxfp8": (4, 8), "w4a8_mxfp4_mxfp8_trtllm": (4, 8),
})  # fmt: skip
# ^ every GEMM and MoE quant mode of estimator.models.quant -> (weight bits, activation bits) of its MMA
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
class CheckpointModes:
    """The GEMM and MoE quant modes a run computed in, read from its checkpoint."""

    gemm: str  # dense GEMMs (attention projections included)
    moe: str | None  # routed experts (the label's, for a dense model)
    note: str  # where the modes come from, for the report


def checkpoint_modes(m: Measurement, model_used: str, moe: bool) -> CheckpointModes | None:
    """The checkpoint's modes when the label names this checkpoint (the same weight width for the
    experts of an MoE model, or the GEMMs of a dense one) but other arithmetic. None otherwise, for
    an aliased model (its checkpoint is not bundled) and for a quantization the estimator cannot read.
    A missing label stands for the checkpoint's own mode (what the pricer infers)."""
    if model_used != m.model:
        return None
    try:
        modes = checkpoint_quant_modes(checkpoint_quant(model_used))
    except EstimatorError:  # the labels stand
        return None
    own_gemm, own_moe = modes.get("gemm", BF16), modes.get("moe") if moe else m.moe_quant
    label, own = (m.moe_quant, own_moe) if moe else (m.gemm_quant, own_gemm)
    if own is None or _bits(label or own) is None or _bits(label or own)[0] != _bits(own)[0]:
        return None  # the label names another checkpoint, or a mode the rule does not know
    gemm, moe_mode = own_gemm, own_moe
    note = f"the checkpoint's own {gemm}/{moe_mode} (its config.json quantization_config)"
    rule = _mxfp8_activations(m) if moe_mode == MXFP4_BF16_ACTIVATIONS else None
    if rule is not None:
        moe_mode = MXFP4_MXFP8_ACTIVATIONS
        note = f"the checkpoint's own {gemm}/{moe_mode}: MXFP4 experts (its config.json quantization_config) with MXFP8 activations ({rule.citation})"
    labelled = (m.gemm_quant or own_gemm, m.moe_quant or own_moe)
    if all(_bits(ran) == _bits(named) for ran, named in zip((gemm, moe_mode), labelled)):
        return None
    return CheckpointModes(gemm, moe_mode, note)


def _bits(mode: str | None) -> tuple[int, int] | None:
    """(weight bits, activation bits) of a quant mode; None for no mode or one the table lacks."""
    return WEIGHT_AND_ACTIVATION_BITS.get(mode) if mode is not None else None


def _mxfp8_activations(m: Measurement) -> Mxfp8Activations | None:
    """The documented setup under which the row's MXFP4 experts ran with MXFP8 activations, or None."""
    return next((r for r in MXFP8_ACTIVATIONS if r.engine == m.engine and m.system in r.systems and r.source in (None, m.source)), None)
