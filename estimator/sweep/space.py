"""The search space: the parallel layouts a sweep enumerates for one model, system and backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from estimator.deployment import Deployment, require_positive
from estimator.models.config import is_natively_modelled

DEFAULT_TP_SIZES = (1, 2, 4, 8)
DEFAULT_PP_SIZES = (1,)
DEFAULT_TOTAL_GPUS = 8


def parallel_layouts(base: Deployment, tp_sizes: Sequence[int] = DEFAULT_TP_SIZES, pp_sizes: Sequence[int] = DEFAULT_PP_SIZES,
                     total_gpus: int = DEFAULT_TOTAL_GPUS) -> list[Deployment]:  # fmt: skip
    """Dense-model layouts (aiconfigurator's enumerate_parallel_config): every tp x pp with at most
    total_gpus GPUs, attention DP 1 and MoE tp = ep = 1, tp outer."""
    require_positive("total_gpus", total_gpus)
    for name, sizes in (("tp", tp_sizes), ("pp", pp_sizes)):
        for size in sizes:
            require_positive(name, size)
    return [
        dataclasses.replace(base, tp=tp, pp=pp, attention_dp=1, moe_tp=1, moe_ep=1)
        for tp in tp_sizes for pp in pp_sizes if tp * pp <= total_gpus
    ]  # fmt: skip


DEFAULT_DP_SIZES = (1,)
DEFAULT_MOE_TP_SIZES = (1,)
DEFAULT_MOE_EP_SIZES = (1, 2, 4, 8)


@dataclasses.dataclass(frozen=True)
class MoeSizes:
    """The MoE-side size lists a sweep crosses with tp and pp (every size >= 1)."""

    dp: Sequence[int] = DEFAULT_DP_SIZES  # attention data-parallel sizes
    moe_tp: Sequence[int] = DEFAULT_MOE_TP_SIZES  # MoE tensor-parallel sizes
    moe_ep: Sequence[int] = DEFAULT_MOE_EP_SIZES  # MoE expert-parallel sizes


def moe_layouts(base: Deployment, tp_sizes: Sequence[int] = DEFAULT_TP_SIZES, pp_sizes: Sequence[int] = DEFAULT_PP_SIZES,
                total_gpus: int = DEFAULT_TOTAL_GPUS, sizes: MoeSizes = MoeSizes()) -> list[Deployment]:  # fmt: skip
    """MoE-model layouts (aiconfigurator's enumerate_parallel_config, MoE branch, no context parallel):
    tp x pp x dp x moe_tp x moe_ep, tp outer, with dp*tp*pp <= total_gpus and dp*tp == moe_tp*moe_ep;
    TRT-LLM has no attention TP under attention DP, vLLM no MoE TP together with MoE EP."""
    require_positive("total_gpus", total_gpus)
    for name, values in (("tp", tp_sizes), ("pp", pp_sizes), ("dp", sizes.dp), ("moe_tp", sizes.moe_tp), ("moe_ep", sizes.moe_ep)):
        for size in values:
            require_positive(name, size)
    backend = base.backend.value
    return [
        dataclasses.replace(base, tp=tp, pp=pp, attention_dp=dp, moe_tp=moe_tp, moe_ep=moe_ep)
        for tp in tp_sizes for pp in pp_sizes for dp in sizes.dp for moe_tp in sizes.moe_tp for moe_ep in sizes.moe_ep
        if dp * tp * pp <= total_gpus and dp * tp == moe_tp * moe_ep
        and not (backend == "trtllm" and dp > 1 and tp > 1) and not (backend == "vllm" and moe_tp > 1 and moe_ep > 1)
    ]  # fmt: skip


def sweep_layouts(base: Deployment, tp_sizes: Sequence[int] = DEFAULT_TP_SIZES, pp_sizes: Sequence[int] = DEFAULT_PP_SIZES,
                  total_gpus: int = DEFAULT_TOTAL_GPUS, sizes: MoeSizes = MoeSizes()) -> list[Deployment]:  # fmt: skip
    """The layouts of the base deployment's model: MoE layouts for MoE models, dense ones otherwise
    (a natively modelled architecture is dense without asking the reference)."""
    from estimator.pricing.reference import is_moe_model

    if not is_natively_modelled(base.model) and is_moe_model(base.model):
        return moe_layouts(base, tp_sizes, pp_sizes, total_gpus, sizes)
    return parallel_layouts(base, tp_sizes, pp_sizes, total_gpus)
