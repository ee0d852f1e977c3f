"""The search space: the parallel layouts a sweep enumerates for one model, system and backend."""
from __future__ import annotations

import dataclasses
from typing import Sequence

from estimator.deployment import Deployment, require_positive

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
