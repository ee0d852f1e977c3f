"""TensorRT-LLM's trtllm-gen MoE: the kernel a launch's ``moe_config.backend: TRTLLM`` runs, priced at every token count.

AIConfigurator 0.12.0 prices a TRT-LLM nvfp4 MoE from the tables' min-latency curve up to 128 tokens and from
CUTLASS's curve above, whatever the launch set. That min-latency curve is the trtllm-gen kernel's: AIConfigurator's
collector times it with ``moe_backend = "trtllm"`` (``TRTLLMGenFusedMoE``, DeepSeek routing) and logs it as
``kernel_source = "moe_torch_flow_min_latency"`` ("trtllm gen"; ai-dynamo/aiconfigurator collector/trtllm/collect_moe.py,
nvfp4 on SM100 with at most 256 experts), at the same token counts as CUTLASS's (1 to 16,384). A launch whose MoE
backend is TRTLLM (EngineSettings.moe_backend: the srt-slurm recipes set it on every DeepSeek-R1 FP4 prefill worker,
InferenceX's DeepSeek-R1 FP4 B200 agg scripts on most runs without attention DP) runs
those kernels at every token count, so the closed-loop replay prices the phase's Moe op from that curve throughout, at
the reference's op shape (``ReferencePricer.moe_op``) with the native MoE kernel (``pricing.native.TRTLLM_GEN``). Where
the tables hold no trtllm-gen curve for the shape (B300, GB300; other quant modes) or the MoE sits in an Overlap group,
the reference's price stands. The collector times the kernel without its finalize step (``do_finalize=False``), which
an attention-DP prefill runs: the price is a lower bound by that memory-bound reduction.
"""

from __future__ import annotations

import numpy as np

from estimator.caching import memo
from estimator.deployment import Backend, Deployment
from estimator.kernels.ops import I_TABLE
from estimator.models.ops import Moe
from estimator.perf.stack import load_stack
from estimator.perf.versions import resolve_version
from estimator.pricing.native import TRTLLM_GEN, NativePricer


@memo()
def trtllm_gen_pricer(deployment: Deployment, op_fields: tuple) -> NativePricer | None:
    """A native pricer of the one Moe op (`op_fields`: its reference fields as sorted (name, value) pairs) at the
    trtllm-gen curve, or None when the deployment's tables hold no such curve for it."""
    backend = deployment.backend.value
    tables = load_stack(deployment.system, backend, resolve_version(deployment.system, backend, deployment.version))
    op = Moe(**{**dict(op_fields), "moe_backend": TRTLLM_GEN})
    pricer = NativePricer(tables, [op], [op])
    return pricer if pricer.context.ints[0, I_TABLE] >= 0 else None


def trtllm_gen_column(full, deployment: Deployment, moe_backend: str | None, phase: str) -> tuple[int, NativePricer] | None:
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


def with_trtllm_gen(lat: np.ndarray, shapes: np.ndarray, column: tuple[int, NativePricer] | None, phase: str) -> np.ndarray:
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
