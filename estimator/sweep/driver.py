"""Sweep drivers: enumerate every deployment, keep the full table, pick the best rows."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from estimator.closedloop import ReplayOptions
from estimator.deployment import Deployment, require_positive
from estimator.disagg import DISAGG_COLUMNS, Calibration, Role
from estimator.disagg.autoscale import autoscale_pairs, top_by_tokens_per_gpu
from estimator.disagg.ranking import merge_ranked
from estimator.disagg.search import (
    DEFAULT_DECODE_MAX_NUM_TOKENS,
    DEFAULT_PREFILL_MAX_NUM_TOKENS,
    DEFAULT_TOP_N,
    Combos,
    WorkerLimits,
    best_under_constraint,
    decode_batch_sizes,
    prefill_batch_sizes,
    rank_value,
    worker_candidates,
)
from estimator.disagg.workers import LEGACY_DECIMALS
from estimator.errors import EstimatorError, InvalidInputError
from estimator.pricing import AUTO
from estimator.scheduler import StaticPoint
from estimator.steps import Semantics
from estimator.sweep.agg import AggOptions, AggRows, agg_rows, best_indices
from estimator.sweep.refined import KneeSearch, refine_agg
from estimator.sweep.sla import Sla, Workload

log = logging.getLogger(__name__)

# What pricing one layout can raise besides bad input: numeric and indexing failures inside its
# search. Never SystemError (Ctrl-C inside a Numba kernel) or an interrupt.
LAYOUT_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError)  # ValueError: EstimatorError too

Report = Callable[[list, int, int], None]  # (table rows computed in this unit, units done, units total)


REPLAYED = "replayed"  # refined sweeps' best-row column: the row's figures are the closed-loop replay's (False: unreplayable, closed-form)


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep."""

    best: pd.DataFrame  # the best rows over every target, merged and ranked by tokens/s/gpu (3-decimal rounded in legacy mode)
    tabulate: Callable[[], pd.DataFrame] = field(repr=False, compare=False)  # builds `table`
    targets: tuple[tuple[float, float], ...] = ()  # the (ttft, tpot) target pairs ranked, ms
    rank: Callable[[int], pd.DataFrame] | None = field(default=None, repr=False, compare=False)  # target index -> its ranking
    fits: bool = True  # some point (agg) or some worker of each pool (disagg) fits in GPU memory

    @functools.cached_property
    def rankings(self) -> tuple[pd.DataFrame, ...]:
        """Per target pair, its best rows ranked as `best` ranks one target alone (built on first
        access; a single target's is `best`)."""
        if len(self.targets) == 1 or self.rank is None:
            return (self.best,) * len(self.targets)
        return tuple(self.rank(i) for i in range(len(self.targets)))

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        """Every evaluated operating point, unrounded, in evaluation order (built on first access:
        picking the best rows does not need it)."""
        return self.tabulate()


def sweep_agg(
    deployments: Sequence[Deployment],
    workload: Workload,
    sla: Sla,
    options: AggOptions = AggOptions(),
    semantics: Semantics | str = Semantics.UNCACHED,
    pricer: str = AUTO,
    report: Report | None = None,
    refined: ReplayOptions | None = None,
) -> SweepResult:
    """Agg sweep over deployments (parallel layouts of one model, system and backend); with
    `refined`, points are judged and repriced by the closed-loop replay."""
    semantics = Semantics.parse(semantics)
    workload.require_prefix_below_isl("agg run")
    pairs = sla.pairs(workload.osl)
    tick = _Ticker(report, len(deployments), records=lambda chunk: AggRows.concat(chunk).records() if chunk else [])
    rows = AggRows.concat(_per_deployment(deployments, lambda d: [agg_rows(d, workload, options, semantics, pricer)], tick))
    if refined is None:
        ranked, accept, replayed, tabulate = rows, None, None, rows.frame
    else:
        judged = refine_agg(rows.frame(), pairs, refined)
        ranked, accept, replayed, tabulate = AggRows.of(judged.repriced), judged.accept, judged.replayed, lambda: judged.table

    def best(targets: list[tuple[float, float]]) -> pd.DataFrame:
        indices = best_indices(ranked, targets, options.top_k, semantics, accept)
        frame = ranked.take(indices).round(LEGACY_DECIMALS) if semantics is Semantics.LEGACY else ranked.take(indices)
        return frame if replayed is None else frame.assign(**{REPLAYED: replayed[indices] if indices else []})

    merged = best(pairs)
    if merged.empty:
        log.warning("agg sweep: no operating point meets the targets")
    return SweepResult(merged, tabulate, tuple(pairs), lambda i: best([pairs[i]]), fits=len(rows.column("ttft")) > 0)


@dataclass(frozen=True)
class DisaggOptions:
    """How the disagg sweep enumerates workers and matches them."""

    prefill_max_num_tokens: int = DEFAULT_PREFILL_MAX_NUM_TOKENS  # prompt tokens per prefill batch
    decode_max_num_tokens: int = DEFAULT_DECODE_MAX_NUM_TOKENS  # largest decode batch
    limits: WorkerLimits = WorkerLimits()  # worker counts and GPU limits of the rate matching
    calibration: Calibration = Calibration()  # corrections, TTFT factor, degradations
    top_n: int = DEFAULT_TOP_N  # best rows per target
    autoscale: bool = False  # engines picked per pool at one worker each (no rate matching), at the TTFT and the largest TPOT target

    def __post_init__(self) -> None:
        for name in ("prefill_max_num_tokens", "decode_max_num_tokens", "top_n"):
            require_positive(name, getattr(self, name))


def sweep_disagg(
    prefill: Sequence[Deployment],
    decode: Sequence[Deployment],
    workload: Workload,
    sla: Sla,
    options: DisaggOptions = DisaggOptions(),
    semantics: Semantics | str = Semantics.UNCACHED,
    pricer: str = AUTO,
    report: Report | None = None,
    refined: ReplayOptions | None = None,
) -> SweepResult:
    """Disagg sweep: worker candidates of every prefill and decode layout, then for each target the
    best rate-matched row per decode layout, top-N, merged. With `refined`, prefill is gated on its
    raw TTFT and each layout's row is knee-tuned by the closed-loop replay."""
    semantics = Semantics.parse(semantics)
    workload.require_prefix_below_isl("disagg run")
    if options.autoscale and refined is not None:
        raise InvalidInputError("autoscale picking prices no rate-matched deployment, so it does not take refined SLAs")
    if options.autoscale and not sla.tpots:
        raise InvalidInputError("autoscale picking needs TPOT targets (a request-latency SLA gives none)")
    pairs = sla.pairs(workload.osl)
    tick = _Ticker(report, len(prefill) + len(decode) + (1 if options.autoscale else len(pairs)))
    point = StaticPoint(workload.isl, workload.osl, 1, workload.prefix, workload.nextn_accepted,
                        free_gpu_memory_fraction=workload.free_gpu_memory_fraction)  # fmt: skip
    budget_isl = workload.isl if semantics is Semantics.LEGACY else workload.isl - workload.prefix
    batches = {Role.PREFILL: prefill_batch_sizes(options.prefill_max_num_tokens, budget_isl),
               Role.DECODE: decode_batch_sizes(options.decode_max_num_tokens)}  # fmt: skip
    workers = {
        role: _per_deployment(deployments, lambda d, r=role: worker_candidates(
            d, batches[r], point, r, semantics, options.calibration, pricer), lambda _: tick([]))
        for role, deployments in ((Role.PREFILL, prefill), (Role.DECODE, decode))
    }  # fmt: skip
    fits = bool(workers[Role.PREFILL]) and bool(workers[Role.DECODE])
    if options.autoscale:
        result = _autoscaled(workers[Role.PREFILL], workers[Role.DECODE], sla, options, semantics, fits)
        tick(result.table.to_dict("records"))
        return result
    combos = Combos(workers[Role.PREFILL], workers[Role.DECODE], options.limits, options.calibration)
    selections, replayed = [], set()
    for ttft, tpot in pairs:
        known = len(combos.matched)
        picks = {} if refined is None else {"gate_factor": 1.0, "pick": KneeSearch(ttft, tpot, refined)}
        selections.append([row_key(r) for r in best_under_constraint(combos, ttft, tpot, semantics, options.top_n, **picks)])
        replayed |= {row_key(r) for r in getattr(picks.get("pick"), "replayed", ())}
        tick([c.row for c in combos.matched[known:]])

    def best(chosen: list[list[tuple]]) -> pd.DataFrame:
        # The reference concatenates onto an empty frame, so the final ranking sorts an object column.
        keys = merge_ranked(chosen, lambda k: rank_value(dict(zip(DISAGG_COLUMNS, k)), "tokens/s/gpu", semantics), dtype=object)
        frame = disagg_frame([dict(zip(DISAGG_COLUMNS, k)) for k in keys], rounded=semantics is Semantics.LEGACY)
        return frame if refined is None else frame.assign(**{REPLAYED: [k in replayed for k in keys]})

    merged = best(selections)
    if merged.empty:
        log.warning("disagg sweep: no worker combination meets the targets")
    tabulate = lambda: disagg_frame([c.row for c in combos.matched], rounded=False)  # noqa: E731
    return SweepResult(merged, tabulate, tuple(pairs), lambda i: best([selections[i]]), fits)


def _autoscaled(prefill: list, decode: list, sla: Sla, options: DisaggOptions, semantics: Semantics, fits: bool) -> SweepResult:
    """The autoscale pick (aiconfigurator's sweep_disagg(autoscale=True)) at the TTFT and the
    largest TPOT target, its only target; the pairs it formed are the table."""
    pairs = autoscale_pairs(prefill, decode, sla.ttft, max(sla.tpots), semantics, options.calibration, options.top_n)
    best = disagg_frame(top_by_tokens_per_gpu(pairs, options.top_n), rounded=False)
    if best.empty:
        log.warning("disagg sweep: no prefill or decode worker candidate to pick from")
    return SweepResult(best, lambda: disagg_frame(pairs, rounded=False), ((sla.ttft, max(sla.tpots)),), fits=fits)


def row_key(row: dict) -> tuple:
    """A disagg row as a hashable value (for dropping repeated best rows)."""
    return tuple(row[c] for c in DISAGG_COLUMNS)


def disagg_frame(rows: Sequence[dict], rounded: bool) -> pd.DataFrame:
    """Disagg rows as a DataFrame, optionally 3-decimal rounded (legacy best rows)."""
    frame = pd.DataFrame(list(rows), columns=list(DISAGG_COLUMNS))
    return frame.round(LEGACY_DECIMALS) if rounded else frame


class _Ticker:
    """Counts finished units and forwards each unit's rows, as records, to the caller's report."""

    def __init__(self, report: Report | None, total: int, records: Callable[[list], list] = list):
        self.report, self.total, self.done, self.records = report, total, 0, records  # records: a unit's chunk -> row dicts

    def __call__(self, rows: list) -> None:
        self.done += 1
        if self.report:
            self.report(self.records(rows), self.done, self.total)


def layout_name(d: Deployment) -> str:
    """A layout as the warnings name it: tp, pp, attention dp and, when set, MoE tp and ep."""
    moe = "".join(f" {name}{size}" for name, size in (("moe_tp", d.moe_tp), ("moe_ep", d.moe_ep)) if size is not None)
    return f"tp{d.tp} pp{d.pp} dp{d.attention_dp}{moe}"


def _per_deployment(deployments: Sequence[Deployment], compute: Callable[[Deployment], list], tick: Callable[[list], None]) -> list:
    """Every deployment's rows; a deployment that cannot be priced (bad input, missing data, or a
    failure inside its search) is skipped with a warning naming it and the reason, and the first
    error alone is raised when no deployment could be priced (the warnings wait for the first
    priced deployment, so a fault every layout shares is one error, not a warning per layout first)."""
    rows, errors, held, priced = [], [], [], False
    for deployment in deployments:
        try:
            chunk = compute(deployment)
            priced = True
        except LAYOUT_ERRORS as exc:
            reason = str(exc) if isinstance(exc, EstimatorError) else f"{type(exc).__name__}: {exc}"
            held.append(f"{deployment.system} {layout_name(deployment)}: {reason}")
            errors.append(exc)
            chunk = []
        if priced:
            for skipped in held:
                log.warning("sweep: skipping %s", skipped)
            held.clear()
        rows += chunk
        tick(chunk)
    if errors and not priced:
        raise errors[0]
    return rows
