"""The agg sweep: every deployment x batch x prefill budget, then the best rows under each target.

Mirrors aiconfigurator 0.12.0 ``sweep.sweep_agg`` / ``_sweep_one_parallel_agg`` (legacy-semantics.md
1.12): grid points are walked in the reference's order and a batch stops at its first OOM or
KV-OOM budget. Memory needs no pricing, so the walk runs first and every surviving point of a
deployment is then priced in one batched pass. The full table holds every priced point, unrounded;
the best rows are the reference's: per deployment and target the top-k by seq/s (legacy: ranked on
3-decimal values), merged, deduplicated and ranked by tokens/s/gpu.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.deployment import Deployment, require_positive
from estimator.disagg.ranking import merge_ranked, quicksort_desc
from estimator.disagg.workers import LEGACY_DECIMALS
from estimator.errors import InvalidInputError, PerfDataMissingError
from estimator.pricing import AUTO
from estimator.scheduler import AGG_COLUMNS, POLICIES, AggPlans, agg_plans
from estimator.scheduler.agg import AggColumns, agg_columns, agg_memories, decode_tokens_per_iteration, kv_slot
from estimator.scheduler.facts import deployment_facts, step_pricer
from estimator.steps import Semantics, StepModel, decode_step_totals, mixed_step_totals
from estimator.sweep.grid import DEFAULT_CTX_STRIDE, DEFAULT_MAX_BATCH_SIZE, AggGrid
from estimator.sweep.sla import Workload

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 10  # best rows kept per deployment and target


@dataclass(frozen=True)
class AggOptions:
    """How the agg sweep walks each deployment."""

    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE  # largest batch tried
    ctx_stride: int = DEFAULT_CTX_STRIDE  # small prefill-budget stride, tokens
    chunked_prefill: bool = False  # False: budgets are multiples of the per-request budget tokens
    top_k: int = DEFAULT_TOP_K  # best rows per deployment and target (0: all)

    def __post_init__(self) -> None:
        require_positive("max_batch_size", self.max_batch_size)
        require_positive("ctx_stride", self.ctx_stride)
        if self.top_k < 0:
            raise InvalidInputError(f"top_k must be >= 0, got {self.top_k}")


@dataclass(frozen=True, eq=False)
class PlannedGrid:
    """The grid points of one deployment that fit in memory, in grid order, planned but not priced."""

    plans: AggPlans  # one schedule per point
    memory_gib: np.ndarray  # peak per-GPU footprint of each, GiB

    def __len__(self) -> int:
        return len(self.plans)

    def take(self, at: Sequence[int]) -> PlannedGrid:
        at = np.asarray(at, dtype=np.int64)
        return PlannedGrid(self.plans.take(at), self.memory_gib[at])


def agg_grid(deployment: Deployment, workload: Workload, options: AggOptions, semantics: Semantics) -> AggGrid:
    """The grid of one deployment, on isl (legacy) or isl - prefix (uncached) tokens per request."""
    budget_isl = workload.isl if semantics is Semantics.LEGACY else workload.isl - workload.prefix
    progress = decode_tokens_per_iteration(deployment.nextn, workload.nextn_accepted)
    return AggGrid(budget_isl, workload.osl, options.max_batch_size, options.ctx_stride, options.chunked_prefill, dedup=progress == 1.0)


def grid_points(deployment: Deployment, workload: Workload, options: AggOptions, semantics: Semantics) -> PlannedGrid:
    """The walk: guards and dedup from the grid, each batch stopped at its first OOM / KV-OOM
    budget. Every guarded point is planned and sized in one elementwise pass first (dedup and the
    stops only drop points, so the walk then reads their verdicts)."""
    policy, facts = POLICIES[deployment.backend], deployment_facts(deployment)
    dtpi = decode_tokens_per_iteration(deployment.nextn, workload.nextn_accepted)
    grid = agg_grid(deployment, workload, options, semantics)
    candidates = grid.candidates()
    batch, knob = [b for b, _ in candidates], [ctx for _, ctx in candidates]
    plans = agg_plans(policy, workload.isl, workload.osl, workload.prefix, batch, knob, semantics, dtpi)
    use, oom, kv_oom = agg_memories(facts, deployment, policy, plans, kv_slot(workload), workload.free_gpu_memory_fraction)
    index, stops, kept = {key: i for i, key in enumerate(candidates)}, (oom | kv_oom).tolist(), []
    for b, budgets in grid.rows():
        for ctx in budgets:
            i = index[b, ctx]
            if stops[i]:
                break
            kept.append(i)
    return PlannedGrid(plans, use.total).take(kept)


def price_points(deployment: Deployment, grid: PlannedGrid, semantics: Semantics, pricer: str = AUTO) -> AggColumns:
    """Result rows (AGG_COLUMNS, unrounded, as columns) of planned points: one batched pass; on a
    perf-data miss, point by point, skipping the points without data."""
    model = StepModel(step_pricer(pricer, deployment), deployment.nextn)
    try:
        return _priced_columns(deployment, model, grid, semantics)
    except PerfDataMissingError:
        priced = []
        for i in range(len(grid)):
            try:
                priced.append(_priced_columns(deployment, model, grid.take([i]), semantics))
            except PerfDataMissingError as exc:
                log.debug("agg point b=%d ctx=%d skipped: %s", grid.plans.batch[i], grid.plans.ctx_knob[i], exc)
        return concat_columns(priced) if priced else _priced_columns(deployment, model, grid.take([]), semantics)


def _priced_columns(deployment: Deployment, model: StepModel, grid: PlannedGrid, semantics: Semantics) -> AggColumns:
    """run_agg's pricing and rows for many points: the totals of every mixed step and of every
    distinct decode step, each set from one batched call (rows need no per-op breakdown)."""
    plans = grid.plans
    shapes = [shape for i in range(len(plans)) for shape in plans.shapes(i)]
    mix_ms = plans.group_prices(mixed_step_totals(model, shapes, semantics))
    requests, at = np.unique(plans.genonly_requests, return_inverse=True)
    genonly_ms = decode_step_totals(model, requests, plans.isl, plans.osl)[at.reshape(-1)]
    return agg_columns(deployment_facts(deployment), deployment, POLICIES[deployment.backend], plans, mix_ms, genonly_ms, grid.memory_gib)


def agg_rows(deployment: Deployment, workload: Workload, options: AggOptions, semantics: Semantics, pricer: str = AUTO) -> AggColumns:
    """Every priced point of one deployment, in grid order, as columns (warns when no point passes the guards)."""
    grid = grid_points(deployment, workload, options, semantics)
    if not len(grid):
        log.warning("agg sweep: no grid point of %s passes the batch/budget guards and fits in memory", parallel_name(deployment))
    return price_points(deployment, grid, semantics, pricer)


def parallel_name(deployment: Deployment) -> str:
    """The row's `parallel` label of a deployment."""
    d = deployment
    return f"tp{d.tp}pp{d.pp}dp{d.attention_dp}etp{d.moe_tp}ep{d.moe_ep}"


def concat_columns(chunks: Sequence[AggColumns]) -> AggColumns:
    """Column sets appended in order (text columns become object arrays)."""
    return {c: np.concatenate([np.asarray(chunk[c], dtype=None if isinstance(chunk[c], np.ndarray) else object) for chunk in chunks])
            for c in AGG_COLUMNS}  # fmt: skip


class AggRows:
    """Priced agg rows in table order, held as AGG_COLUMNS columns: ranking reads columns, and
    only the rows picked are assembled into a DataFrame."""

    def __init__(self, columns: AggColumns):
        self.columns = columns  # AGG_COLUMNS -> one value per row, every column the same length

    @classmethod
    def concat(cls, chunks: Sequence[AggColumns]) -> AggRows:
        return cls(concat_columns(chunks)) if chunks else cls.of(agg_table({c: [] for c in AGG_COLUMNS}))

    @classmethod
    def of(cls, table: pd.DataFrame) -> AggRows:
        return cls({c: table[c].to_numpy() for c in AGG_COLUMNS})

    def column(self, name: str, dtype=None) -> np.ndarray:
        return np.asarray(self.columns[name], dtype=dtype)

    def take(self, indices: Sequence[int]) -> pd.DataFrame:
        """The rows at `indices`, in that order, as a DataFrame."""
        at = np.asarray(indices, dtype=np.int64)
        return agg_table({c: self.column(c)[at] for c in AGG_COLUMNS})

    def frame(self) -> pd.DataFrame:
        return agg_table(self.columns)

    def records(self) -> list[dict]:
        """The rows as AGG_COLUMNS records (Python numbers)."""
        return self.frame().to_dict("records")


Accept = Callable[[float, float], np.ndarray]  # (ttft target, tpot target) -> mask of the rows that pass


def within_targets(rows: AggRows) -> Accept:
    """The legacy filter: tpot <= target and ttft <= target, on the unrounded values."""
    ttft, tpot = rows.column("ttft", np.float64), rows.column("tpot", np.float64)
    return lambda ttft_target, tpot_target: (tpot <= tpot_target) & (ttft <= ttft_target)


def best_agg(rows: AggRows, pairs: Sequence[tuple[float, float]], top_k: int, semantics: Semantics,
             accept: Accept | None = None) -> pd.DataFrame:  # fmt: skip
    """The best rows (best_indices) as a DataFrame; legacy mode rounds them to 3 decimals, as the
    reference's DataFrames are."""
    best = rows.take(best_indices(rows, pairs, top_k, semantics, accept))
    return best.round(LEGACY_DECIMALS) if semantics is Semantics.LEGACY else best


def best_indices(rows: AggRows, pairs: Sequence[tuple[float, float]], top_k: int, semantics: Semantics,
                 accept: Accept | None = None) -> list[int]:  # fmt: skip
    """The rows of the best configurations, best first: per deployment (table order) and target,
    the accepted rows (default: within_targets) ranked by seq/s, top_k of them (0 keeps all); then
    merged without repeats and ranked by tokens/s/gpu. Legacy mode ranks 3-decimal values."""
    accept = accept or within_targets(rows)
    seq_s, tps_gpu = (rows.column(c, np.float64) for c in ("seq/s", "tokens/s/gpu"))
    if semantics is Semantics.LEGACY:
        seq_s, tps_gpu = np.round(seq_s, LEGACY_DECIMALS), np.round(tps_gpu, LEGACY_DECIMALS)
    labels = rows.column("parallel", object)
    selections = []
    for label in dict.fromkeys(labels):
        members = np.flatnonzero(labels == label)
        for ttft_target, tpot_target in pairs:
            passing = members[accept(ttft_target, tpot_target)[members]]
            ranked = passing[quicksort_desc(seq_s[passing])]
            selections.append((ranked[:top_k] if top_k > 0 else ranked).tolist())
    return merge_ranked(selections, key=lambda i: tps_gpu[i])


def agg_table(columns: AggColumns) -> pd.DataFrame:
    """Columns as a DataFrame with the AGG_COLUMNS, in that order (numbers typed by numpy, text
    and None-bearing columns as objects)."""
    return pd.DataFrame({c: _column_array(columns[c]) for c in AGG_COLUMNS})


def _column_array(values) -> np.ndarray:
    """A column as typed by numpy: arrays as they are; lists numeric if every value is an int or
    float, else objects. An empty column is float64, whatever it came as."""
    if isinstance(values, np.ndarray) and len(values):
        return values
    values = list(values)
    numeric = all(type(v) in (int, float) for v in values)
    return np.array(values, dtype=np.float64 if not values else None) if numeric else np.array(values, dtype=object)
