"""TensorRT-LLM's trtllm-gen MoE: the kernel a launch's ``moe_config.backend: TRTLLM`` runs, priced at every token count.

AIConfigurator 0.12.0 prices a TRT-LLM nvfp4 MoE from the tables' min-latency curve up to 128 tokens and from
CUTLASS's curve above, whatever the launch set. That min-latency curve is the trtllm-gen kernel's: AIConfigurator's
collector times it with ``moe_backend = "trtllm"`` (``TRTLLMGenFusedMoE``, DeepSeek routing) and logs it as
``kernel_source = "moe_torch_flow_min_latency"`` ("trtllm gen"; ai-dynamo/aiconfigurator collector/trtllm/collect_moe.py,
nvfp4 on SM100 with at most 256 experts), at the same token counts as CUTLASS's (1 to 16,384). A launch whose MoE
backend is TRTLLM (EngineSettings.moe_backend: the srt-slurm recipes set it on every DeepSeek-R1 FP4 prefill worker,
InferenceX's DeepSeek-R1 FP4 B200 agg scripts on most runs without attention DP) runs
those kernels at every token count, so the closed-loop replay prices the phase's Moe op from that curve throughout, at
the reference's op shape (``ReferencePricer.moe_op``) with the native MoE kernel (``pricing.native.TRTLLM_GEN``).

B300 and GB300's tables hold no trtllm-gen curve. TRT-LLM ships its trtllm-gen MoE kernels as SM100-family cubins
(``cpp/tensorrt_llm/kernels/trtllmGenKernels/batchedGemm/trtllmGen_bmm_export/cubins/Bmm_..._sm100f_cubin.cpp``: the
``f`` target runs on SM100, B200/GB200, and SM103, B300/GB300), as it does CUTLASS's, so the same two kernels run on both
generations. There the replay prices trtllm-gen as the system's own CUTLASS curve times the trtllm-gen / CUTLASS ratio the
sibling's tables measure at the same op and token count (``TRTLLM_GEN_SIBLINGS``, ``TransferredCurve``): a transfer
rule, no fitted constant. Where neither holds the curve (other quant modes) or the MoE sits in an Overlap group, the
reference's price stands. The collector times the kernel without its finalize step (``do_finalize=False``), which
an attention-DP prefill runs: the price is a lower bound by that memory-bound reduction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.caching import memo
from estimator.deployment import Backend, Deployment
from estimator.errors import UnknownVersionError
from estimator.kernels.ops import I_TABLE
from estimator.models.ops import Moe
from estimator.perf.stack import load_stack
from estimator.perf.versions import resolve_version
from estimator.pricing.native import TRTLLM_CUTLASS, TRTLLM_GEN, NativePricer

# system whose tables hold no trtllm-gen MoE curve -> the system of the same SM100 family whose tables do
TRTLLM_GEN_SIBLINGS = {"b300_sxm": "b200_sxm", "gb300": "gb200"}


@dataclass(frozen=True)
class TransferredCurve:
    """trtllm-gen's MoE price on a system whose tables lack it: its own CUTLASS price times the trtllm-gen / CUTLASS
    ratio of the sibling's tables at the same op and shapes (ms; the NativePricer interface of one op)."""

    own_cutlass: NativePricer  # the system's CUTLASS curve at every token count
    sibling_gen: NativePricer  # the sibling's trtllm-gen curve
    sibling_cutlass: NativePricer  # the sibling's CUTLASS curve

    def context_many(self, shapes: np.ndarray) -> np.ndarray:
        return self._transferred("context_many", shapes)

    def generation_many(self, shapes: np.ndarray) -> np.ndarray:
        return self._transferred("generation_many", shapes)

    def _transferred(self, many: str, shapes: np.ndarray) -> np.ndarray:
        """own CUTLASS x sibling trtllm-gen / sibling CUTLASS at `shapes`, each priced by its pricer's `many` method."""
        own, gen, cutlass = (getattr(pricer, many)(shapes) for pricer in (self.own_cutlass, self.sibling_gen, self.sibling_cutlass))
        return own * gen / cutlass


def _one_op(system: str, deployment: Deployment, op_fields: tuple, backend: str) -> NativePricer | None:
    """A native pricer of the one Moe op at `backend`'s curve on `system`'s tables (the deployment's version), or None
    when they hold no such curve."""
    engine = deployment.backend.value
    try:
        tables = load_stack(system, engine, resolve_version(system, engine, deployment.version))
    except UnknownVersionError:  # a sibling without the deployment's version: no transfer
        return None
    op = Moe(**{**dict(op_fields), "moe_backend": backend})
    pricer = NativePricer(tables, [op], [op])
    return pricer if pricer.context.ints[0, I_TABLE] >= 0 else None


@memo()
def trtllm_gen_pricer(deployment: Deployment, op_fields: tuple) -> NativePricer | TransferredCurve | None:
    """A pricer of the one Moe op (`op_fields`: its reference fields as sorted (name, value) pairs) at the trtllm-gen
    curve: the deployment's tables', else the transfer from its sibling's (TRTLLM_GEN_SIBLINGS); None when neither holds it."""
    own = _one_op(deployment.system, deployment, op_fields, TRTLLM_GEN)
    sibling = TRTLLM_GEN_SIBLINGS.get(deployment.system)
    if own is not None or sibling is None:
        return own
    parts = (_one_op(deployment.system, deployment, op_fields, TRTLLM_CUTLASS), _one_op(sibling, deployment, op_fields, TRTLLM_GEN),
             _one_op(sibling, deployment, op_fields, TRTLLM_CUTLASS))  # fmt: skip
    return None if any(p is None for p in parts) else TransferredCurve(*parts)


def trtllm_gen_column(full, deployment: Deployment, moe_backend: str | None, phase: str) -> tuple[int, NativePricer | TransferredCurve] | None:
    """(column of the phase's one Moe op in `full`'s op list, its trtllm-gen pricer) when a TRT-LLM launch runs TRTLLM
    and the tables price it, else None (the reference's price stands)."""
    moe_op = getattr(full, "moe_op", None)
    if moe_backend != TRTLLM_GEN or moe_op is None or deployment.backend is not Backend.TRTLLM:
        return None
    fields = moe_op(phase)
    names = full.context_names if phase == "context" else full.generation_names
    if fields is None or names.count(fields["name"]) != 1:
        return None
    pricer = trtllm_gen_pricer(deployment, tuple(sorted(fields.items())))
    return None if pricer is None else (names.index(fields["name"]), pricer)


def with_trtllm_gen(lat: np.ndarray, shapes: np.ndarray, column: tuple[int, NativePricer | TransferredCurve] | None, phase: str) -> np.ndarray:
    """`lat` (per-op latencies at `shapes`) with the Moe op's column priced at the trtllm-gen curve (a copy), or `lat`."""
    if column is None:
        return lat
    col, pricer = column
    out = np.array(lat, dtype=np.float64)
    many = pricer.context_many if phase == "context" else pricer.generation_many
    out[:, col] = many(shapes)[:, 0]
    return out


def priced_apart(moe_backend: str | None) -> str | None:
    """The MoE backend a pass model keeps: TRTLLM, whose kernels the replay prices apart; None for any other (the
    reference's prices, one set of price grids for them all)."""
    return moe_backend if moe_backend == TRTLLM_GEN else None
