"""The recommendation: agg and disagg (and every backend under ``auto``) swept within a GPU budget by
the project's sweep drivers, picked as AIConfigurator 0.12.0's ``cli default`` picks (``picking``).

``recommend_task(task)`` runs one experiment per (backend, mode): the sweep's best rows under every TPOT of
the frontier grid (``space.tpot_grid``) are the experiment's candidates; the frontier and the top-N
are picked from them within the budget. With ``refined`` the top-N comes instead from a sweep at the
user's targets whose candidates the closed-loop replay gates and reprices (``estimator.sweep``'s
refined SLA) under the benchmark protocol, so the replay decides; the frontier stays closed-form.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from estimator.closedloop import ROW, Benchmark, ReplayOptions
from estimator.deployment import Backend, Deployment, require_positive
from estimator.errors import EstimatorError, InvalidInputError, UnknownBackendError
from estimator.models.config import is_natively_modelled
from estimator.pricing.reference import is_moe_model
from estimator.recommend import picking
from estimator.recommend.picking import Constraint
from estimator.recommend.space import (
    DECODE_MAX_BATCH,
    MIN_DISAGG_GPUS,
    NOT_SEARCHED,
    replica_limits,
    tpot_grid,
    worker_layouts,
)
from estimator.recommend.summary import layout_label
from estimator.steps import Semantics
from estimator.sweep import AggOptions, DisaggOptions, Sla, Workload, sweep_agg, sweep_disagg

log = logging.getLogger(__name__)

MODES = ("agg", "disagg")
AUTO = "auto"  # every backend
GROUP = {"agg": "parallel", "disagg": "(d)parallel"}  # the layout the top-N keeps one row of
REPLAY_PROTOCOL = Benchmark()  # what --refined-sla replays: bench.sh's 10 prompts per client and lengths in [0.8 L, L], evenly spaced (no one seed's draws)
CLOSED_FORM = "closed-form"
CLOSED_LOOP = "closed-loop replay"


def _parse_backend(value: str) -> str:
    """A backend's name; UnknownBackendError listing auto beside the backends otherwise."""
    try:
        return Backend.parse(value).value
    except UnknownBackendError:
        raise UnknownBackendError(f"unknown backend {value!r} (known: {', '.join(b.value for b in Backend)}, {AUTO})") from None


@dataclass(frozen=True)
class RecommendTask:
    """What to deploy, on what, and the targets."""

    model: str  # HF id (bundled config) or a path to a config.json / model dir
    system: str  # GPU system of agg and prefill workers
    total_gpus: int  # GPUs of the whole deployment (>= 1): replicas x GPUs per replica fit in it
    isl: int  # input tokens per request (>= 1)
    osl: int  # output tokens per request (>= 1)
    ttft: float  # TTFT target, ms (> 0)
    tpot: float  # TPOT target, ms (> 0)
    backend: str = AUTO  # trtllm | vllm | sglang | auto (every backend)
    decode_system: str | None = None  # disagg decode workers' system; None: system
    prefix: int = 0  # cached prefix tokens per request, part of isl
    request_latency: float | None = None  # ms (> 0); ranks by request latency instead of TPOT
    top_n: int = 5  # configurations per mode (>= 1)
    semantics: Semantics = Semantics.UNCACHED  # legacy: AIConfigurator's numbers exactly
    refined: bool = False  # the closed-loop replay decides the top-N
    backend_version: str | None = None  # perf-table version (None: current)
    pricer: str = AUTO  # op pricer: native | reference | auto (native for the natively modelled families)

    def __post_init__(self) -> None:
        require_positive("total_gpus", self.total_gpus)
        require_positive("top_n", self.top_n)
        object.__setattr__(self, "semantics", Semantics.parse(self.semantics))
        if str(self.backend).lower() == AUTO:  # any case, as Backend.parse reads the backends
            object.__setattr__(self, "backend", AUTO)
        else:
            object.__setattr__(self, "backend", _parse_backend(self.backend))
        Sla(self.ttft, (self.tpot,), self.request_latency)  # checks the targets
        Workload(self.isl, self.osl, self.prefix).require_prefix_below_isl("agg or disagg run")

    @property
    def backends(self) -> tuple[Backend, ...]:
        return tuple(Backend) if self.backend == AUTO else (Backend.parse(self.backend),)

    @property
    def constraint(self) -> Constraint:
        return Constraint(self.tpot, self.request_latency)

    @property
    def resolved_pricer(self) -> str:
        if self.pricer != AUTO:
            return self.pricer
        return "native" if is_natively_modelled(self.model) else "reference"


@dataclass(frozen=True)
class ModeResult:
    """One serving mode's outcome across the searched backends."""

    mode: str  # agg | disagg
    top: pd.DataFrame  # the configurations meeting the targets, best first (budget columns added; empty: none)
    frontier: pd.DataFrame  # the Pareto frontier of every candidate of the mode (closed-form figures)
    closest: Mapping | None  # when `top` is empty: the candidate closest to the targets (None: no candidate)
    candidates: int  # rows the mode's experiments produced (0: nothing fits the targets' TTFT or memory)


@dataclass(frozen=True)
class Recommendation:
    """The decision: per mode its top configurations and frontier, and the verdict between the modes."""

    task: RecommendTask
    modes: Mapping[str, ModeResult]  # "agg", "disagg" (a mode the budget rules out is absent)
    decided_by: str  # CLOSED_FORM | CLOSED_LOOP
    notes: tuple[str, ...] = field(default=())  # what was not searched and which experiments were skipped, one line each

    @property
    def best(self) -> dict[str, float]:
        """Each mode's best budget-wide tokens/s/gpu among the configurations meeting the targets."""
        return {m: float(r.top[picking.CLUSTER].iloc[0]) for m, r in self.modes.items() if not r.top.empty}

    @property
    def winner(self) -> str | None:
        """The mode with the highest best budget-wide tokens/s/gpu (the first on ties; None: no mode meets the targets)."""
        best = self.best
        return max(best, key=best.get) if best else None

    @property
    def verdict(self) -> str:
        return picking.verdict(self.best)

    @property
    def found(self) -> bool:
        return bool(self.best)


def recommend_task(task: RecommendTask) -> Recommendation:
    """Search every mode and backend of the task within its GPU budget; InvalidInputError when no
    searched layout fits in memory within the budget. The sweeps' warnings are logged when a
    recommendation is returned and dropped with an error, which is then the one line a caller sees."""
    with _held_warnings():
        return _search(task)


@contextlib.contextmanager
def _held_warnings(name: str = "estimator"):
    """Records the `name` logger's tree logs inside the block, held back (not propagated) and handled
    in order after it returns; dropped when it raises."""
    logger, held = logging.getLogger(name), _Held()
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(held)
    try:
        yield
    finally:
        logger.removeHandler(held)
        logger.propagate = propagate
    for record in held.records:
        logging.getLogger(record.name).handle(record)


class _Held(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _search(task: RecommendTask) -> Recommendation:
    pricer = task.resolved_pricer
    notes = [NOT_SEARCHED[b] for b in task.backends if b in NOT_SEARCHED]
    modes = ["agg"] + (["disagg"] if task.total_gpus >= MIN_DISAGG_GPUS else [])
    if "disagg" not in modes:
        notes.append(f"disagg not searched: it needs at least {MIN_DISAGG_GPUS} GPUs")
    results, fitted, errors = {}, False, []
    for mode in modes:
        frames, fronts, tops = [], [], []
        for backend in task.backends:
            try:
                experiment = _experiment(task, backend, mode, pricer)
            except EstimatorError as exc:
                notes.append(f"{mode} {backend.value} skipped: {exc}")
                errors.append(exc)
                continue
            fitted |= experiment.fits
            frames.append(experiment.candidates)
            fronts.append(experiment.frontier)
            tops.append(experiment.top)
        results[mode] = _mode_result(task, mode, frames, fronts, tops)
    if errors and all(not r.candidates for r in results.values()) and not fitted:
        raise errors[0]
    if not fitted:
        raise InvalidInputError(f"{task.model} fits in no searched layout of at most {task.total_gpus} GPUs on {task.system} "
                                "(every layout runs out of memory): give more GPUs")  # fmt: skip
    return Recommendation(task, results, CLOSED_LOOP if task.refined else CLOSED_FORM, tuple(notes))


@dataclass(frozen=True)
class _Experiment:
    candidates: pd.DataFrame  # the frontier grid's best rows with budget columns and a backend column
    frontier: pd.DataFrame
    top: pd.DataFrame  # picking.best_under of the deciding rows (may be the closest rows)
    fits: bool  # some point of some layout fits in memory


def _experiment(task: RecommendTask, backend: Backend, mode: str, pricer: str) -> _Experiment:
    """One backend and mode: the frontier grid sweep, then the top-N (from a refined sweep under --refined-sla)."""
    base = Deployment(task.model, task.system, backend, task.backend_version)
    moe = is_moe_model(task.model)
    layouts = worker_layouts(base, task.total_gpus, moe)
    decode = worker_layouts(Deployment(task.model, task.decode_system or task.system, backend, task.backend_version), task.total_gpus, moe)
    if not layouts or (mode == "disagg" and not decode):
        raise InvalidInputError(f"no {backend.value} layout of at most {task.total_gpus} GPUs")
    workload = Workload(task.isl, task.osl, task.prefix)
    grid = Sla(task.ttft, tpot_grid(task.semantics is Semantics.LEGACY, task.tpot), task.request_latency)

    def sweep(sla: Sla, refined: ReplayOptions | None):
        if mode == "agg":
            return sweep_agg(layouts, workload, sla, AggOptions(), task.semantics, pricer, refined=refined)
        budget = task.isl if task.semantics is Semantics.LEGACY else task.isl - task.prefix  # one request per prefill batch
        options = DisaggOptions(budget, DECODE_MAX_BATCH, replica_limits(task.total_gpus, backend))
        return sweep_disagg(layouts, decode, workload, sla, options, task.semantics, pricer, refined=refined)

    result = sweep(grid, None)
    candidates = _framed(result.best, task.total_gpus, backend)
    frontier = picking.pareto_front(candidates, task.constraint.x_axis, maximize_x=task.request_latency is None)
    deciding = candidates
    if task.refined:
        replay = ReplayOptions(pricing=ROW, protocol=REPLAY_PROTOCOL, pricer=pricer)
        deciding = _framed(sweep(Sla(task.ttft, (task.tpot,), task.request_latency), replay).best, task.total_gpus, backend)
    top = picking.best_under(deciding, task.constraint, GROUP[mode], task.top_n)
    fits = not candidates.empty or len(result.table) > 0
    return _Experiment(candidates, frontier, top, fits)


def _framed(best: pd.DataFrame, total_gpus: int, backend: Backend) -> pd.DataFrame:
    framed = picking.with_budget(best, total_gpus)
    framed["backend"] = backend.value
    return framed


def _mode_result(task: RecommendTask, mode: str, frames: list, fronts: list, tops: list) -> ModeResult:
    """One mode across backends: a single backend's top-N as picked, several merged (AIConfigurator's
    _merge_into_top_n), the frontier recomputed over the backends' frontiers."""
    constraint = task.constraint
    top = tops[0] if len(tops) == 1 else picking.merge_backends(tops, task.top_n)
    fronts = [f for f in fronts if not f.empty]
    if len(fronts) > 1:
        frontier = picking.pareto_front(pd.concat(fronts, ignore_index=True), constraint.x_axis, maximize_x=task.request_latency is None)
    else:
        frontier = fronts[0] if fronts else pd.DataFrame()
    shown = picking.meeting_targets(top, constraint, task.top_n)
    closest = None
    if shown.empty and not top.empty:
        closest = top.sort_values(by=constraint.column, kind="stable").iloc[0].to_dict()
    candidates = sum(len(f) for f in frames)
    return ModeResult(mode, shown, frontier, closest, candidates)


def miss_line(mode: ModeResult, task: RecommendTask) -> str:
    """The closest miss of a mode as one line (targets named), or why there is none."""
    if mode.closest is None:
        return f"{mode.mode}: no configuration meets TTFT <= {task.ttft:g} ms"
    row, column = mode.closest, task.constraint.column
    value = row[column]
    shown = "nan" if isinstance(value, float) and math.isnan(value) else f"{value:.2f}"
    return (f"{mode.mode}: closest miss {row.get('backend', '')} {layout_label(row)}: {column} {shown} ms "
            f"(target {task.constraint.target:g} ms), ttft {row['ttft']:.2f} ms")  # fmt: skip
