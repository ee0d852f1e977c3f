"""The search space of a recommendation: AIConfigurator 0.12.0's ``cli default`` layouts within a GPU budget.

Derived from aiconfigurator 0.12.0 ``sdk/task_v2.py`` (``_resolve_agg_search``, ``build_disagg_parallel_lists``,
``_apply_total_gpus_budget``, ``_resolve_replica_budget``, ``sweep_disagg_kwargs``, ``_LEGACY_TPOT_SWEEP``) and
``sdk/utils.py`` ``enumerate_parallel_config`` (the MoE filters, shared with ``estimator.sweep.space``):

* per-worker GPU counts 1, 2, 4, 8 (dense; 16 too on GB200 / GB300) or 1, 2, 4, 8, 16 (MoE: the same list
  for tp, attention dp, MoE tp and MoE ep), each at most the GPU budget; pp 1;
* a disagg replica (xPyD) holds 1, 2, 4, 8, 16, 24, ..., 128 GPUs, at most the budget, with 1..32 prefill
  and 1..32 decode workers; a prefill batch is one request; decode batches up to 512; SGLang pairs need
  the same tp;
* the frontier is built from the best rows under each TPOT of the legacy grid (1..19, 20..295 by 5 ms).

Not searched (the estimator does not model them): SGLang context parallelism (cp 2, 4, 8, which
AIConfigurator sweeps for CP-capable model families on SGLang) and the multi-node large-EP ladder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from estimator.deployment import Backend, Deployment, require_positive
from estimator.disagg.search import WorkerLimits
from estimator.sweep.space import MoeSizes, moe_layouts, parallel_layouts

LEGACY_TPOT_GRID_MS = tuple(float(t) for t in (*range(1, 20), *range(20, 300, 5)))  # task_v2._LEGACY_TPOT_SWEEP
DENSE_GPU_COUNTS = (1, 2, 4, 8)  # _resolve_agg_search / build_disagg_parallel_lists, dense
WIDE_DENSE_GPU_COUNTS = (1, 2, 4, 8, 16)  # the same on the GB200 / GB300 NVL systems
WIDE_DENSE_SYSTEMS = frozenset({"gb200", "gb300"})
MOE_SIZES = (1, 2, 4, 8, 16)  # every MoE size list (tp, dp, moe_tp, moe_ep, GPUs per worker)
REPLICA_GPU_COUNTS = (1, 2, 4, 8, *range(16, 129, 8))  # _resolve_replica_budget num_gpu_per_replica
MAX_WORKERS_PER_POOL = 32  # max_prefill_workers / max_decode_workers
DECODE_MAX_BATCH = 512  # decode_max_batch_size
MIN_DISAGG_GPUS = 2  # build_default_tasks skips disagg below this budget
NOT_SEARCHED = {
    Backend.SGLANG: "SGLang context-parallel layouts (cp 2/4/8; AIConfigurator sweeps them for CP-capable families) are not modelled",
}


def gpu_counts(system: str, moe: bool) -> tuple[int, ...]:
    """The GPU counts one worker may have on `system` (before the budget)."""
    if moe:
        return MOE_SIZES
    return WIDE_DENSE_GPU_COUNTS if system in WIDE_DENSE_SYSTEMS else DENSE_GPU_COUNTS


def worker_layouts(base: Deployment, total_gpus: int, moe: bool) -> list[Deployment]:
    """Every layout of one worker within total_gpus GPUs, in AIConfigurator's enumeration order
    (tp outer, then pp, dp, MoE tp, MoE ep); `moe` takes the MoE branch."""
    require_positive("total_gpus", total_gpus)
    counts = [n for n in gpu_counts(base.system, moe) if n <= total_gpus]
    if not moe:
        return parallel_layouts(base, counts, (1,), total_gpus)
    sizes = [n for n in MOE_SIZES if n <= total_gpus]
    layouts = moe_layouts(base, sizes, (1,), total_gpus, MoeSizes(sizes, sizes, sizes))
    return [d for d in layouts if d.tp * d.pp * d.attention_dp in counts]


def replica_limits(total_gpus: int, backend: Backend) -> WorkerLimits:
    """The rate matching's worker counts and the GPU counts a disagg replica may have."""
    budget = min(total_gpus, REPLICA_GPU_COUNTS[-1])
    workers = tuple(range(1, MAX_WORKERS_PER_POOL + 1))
    return WorkerLimits(workers, workers, frozenset(n for n in REPLICA_GPU_COUNTS if n <= budget), same_tp=backend is Backend.SGLANG)


def tpot_grid(semantics_legacy: bool, tpot: float) -> tuple[float, ...]:
    """The TPOT targets whose best rows build the frontier: the legacy grid, plus the user's target
    when it is not on the grid and the semantics is not legacy (so its best rows are searched)."""
    if semantics_legacy or tpot in LEGACY_TPOT_GRID_MS:
        return LEGACY_TPOT_GRID_MS
    return tuple(sorted((*LEGACY_TPOT_GRID_MS, tpot)))


def with_system(layouts: Sequence[Deployment], system: str) -> list[Deployment]:
    return [dataclasses.replace(d, system=system) for d in layouts]
