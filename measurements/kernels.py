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
them first when they have SILICON data for every op (estimator.report.methods.priced_inputs).
"""
from __future__ import annotations

from dataclasses import dataclass

from estimator.errors import EstimatorError
from estimator.models.config import checkpoint_quant
from estimator.models.quant import checkpoint_quant_modes
from estimator.perf.system_spec import load_system_spec
from measurements.schema import Measurement

ARITHMETIC = {
    "bfloat16": (16, 16), "int8_wo": (8, 16), "sq": (8, 8), "fp8": (8, 8), "fp8_static": (8, 8), "fp8_block": (8, 8),
    "fp8_ootb": (8, 8), "int4_wo": (4, 16), "w4afp8": (4, 8), "nvfp4": (4, 4), "nvfp4_wo": (4, 16), "w4a16_nvfp4": (4, 16),
    "w4a16_mxfp4": (4, 16), "w4a16_mxfp4_cutlass": (4, 16), "w4a8_mxfp4_mxfp8": (4, 8), "w4a8_mxfp4_mxfp8_trtllm": (4, 8),
}  # fmt: skip  # every GEMM and MoE quant mode (estimator.models.quant) -> (weight bits, activation bits)
MXFP4_BF16_ACTIVATIONS = "w4a16_mxfp4"  # MXFP4 experts, BF16 activations: the checkpoint's default reading
MXFP4_MXFP8_ACTIVATIONS = "w4a8_mxfp4_mxfp8"  # MXFP4 experts, MXFP8 activations
BLACKWELL_SM = 100


@dataclass(frozen=True)
class Mxfp8Activations:
    """An engine (and source) whose MXFP4 experts run with MXFP8 activations on Blackwell."""

    engine: str  # trtllm | vllm
    source: str | None  # the measurement source whose recipe sets it; None: the engine's default
    citation: str


MXFP8_ACTIVATIONS = (
    Mxfp8Activations("trtllm", None, "TensorRT-LLM deployment guide for GPT-OSS on Blackwell (1.2.0rc2.post2 and later): "
                     "the MoE backends run MXFP4 weights with MXFP8 activations on B200/GB200/B300/GB300"),
    Mxfp8Activations("vllm", "inferencex", "SemiAnalysisAI/InferenceX benchmarks/gptoss_fp4_b200.sh @ 1fc5d73: "
                     "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"),
)  # fmt: skip


def checkpoint_modes(m: Measurement, model_used: str) -> tuple[str, str, str] | None:
    """(gemm, moe, note) of the checkpoint that ran, when the label names this checkpoint (the same
    weight width for the experts, or the GEMMs of a dense model) but other arithmetic; None otherwise,
    and for an aliased model (its checkpoint is not bundled)."""
    if model_used != m.model:
        return None
    try:
        modes = checkpoint_quant_modes(checkpoint_quant(model_used))
    except EstimatorError:  # a checkpoint quantization the estimator cannot read: the labels stand
        return None
    kind = "moe" if "moe" in modes else "gemm"
    label = m.moe_quant if kind == "moe" else m.gemm_quant
    if kind not in modes or label not in ARITHMETIC or ARITHMETIC[modes[kind]][0] != ARITHMETIC[label][0]:
        return None
    gemm, moe = modes["gemm"], modes.get("moe", m.moe_quant)
    note = f"the checkpoint's own {gemm}/{moe} (its config.json quantization_config)"
    rule = _mxfp8_activations(m) if moe == MXFP4_BF16_ACTIVATIONS else None
    if rule is not None:
        moe = MXFP4_MXFP8_ACTIVATIONS
        note = f"the checkpoint's own {gemm}/{moe}: MXFP4 experts (its config.json quantization_config) with MXFP8 activations ({rule.citation})"
    same = all(ARITHMETIC.get(a) == ARITHMETIC.get(b) for a, b in ((gemm, m.gemm_quant), (moe, m.moe_quant)))
    return None if same else (gemm, moe, note)


def _mxfp8_activations(m: Measurement) -> Mxfp8Activations | None:
    """The rule under which the row's MXFP4 experts ran with MXFP8 activations, or None."""
    if (load_system_spec(m.system).sm_version or 0) < BLACKWELL_SM:
        return None
    return next((r for r in MXFP8_ACTIVATIONS if r.engine == m.engine and r.source in (None, m.source)), None)
