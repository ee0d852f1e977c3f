"""The disagg search: worker candidates per role, worker-count rate matching, best row per
decode-parallel category, top-N (aiconfigurator 0.12.0 ``sweep._get_disagg_worker_candidates``,
``sweep_disagg._match_workers`` and ``sweep._find_best_disagg_under_constraint``; legacy-semantics.md 3.3).

Orderings follow the reference exactly, ties included: prefill candidates by a stable
(seq/s/gpu desc, global_bs asc) sort, decode candidates grouped by ``parallel`` (sorted keys) and
ordered by pandas' quicksort on seq/s/gpu, the first best combination per category kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from estimator.caching import memo
from estimator.deployment import Deployment, require_positive
from estimator.disagg.combine import disagg_row
from estimator.disagg.ranking import quicksort_desc
from estimator.disagg.workers import STATIC_MODES, Calibration, Role, WorkerRow, round_decimals, worker_rows
from estimator.errors import InvalidInputError, PerfDataMissingError
from estimator.pricing import AUTO
from estimator.scheduler import StaticPoint
from estimator.scheduler.facts import deployment_facts
from estimator.scheduler.static import static_memories
from estimator.steps import Semantics

log = logging.getLogger(__name__)

DECODE_BATCH_SCHEDULE = tuple(range(1, 16)) + tuple(range(16, 32, 2)) + tuple(range(32, 128, 4)) + tuple(range(128, 512, 8)) + (512,)
DEFAULT_PREFILL_MAX_NUM_TOKENS = 16384  # sweep_disagg's prefill token budget per batch
DEFAULT_DECODE_MAX_NUM_TOKENS = 512  # sweep_disagg's decode batch cap
MAX_PREFILL_CANDIDATES = 32  # prefill candidates kept per constraint
MAX_DECODE_CANDIDATES = 16  # decode candidates kept per decode-parallel category
DEFAULT_TOP_N = 5  # best rows kept per constraint
DEFAULT_WORKER_COUNTS = tuple(range(1, 33))  # replica counts tried per pool


def prefill_batch_sizes(max_num_tokens: int, tokens_per_request: int) -> range:
    """Prefill batches 1..max_num_tokens // tokens_per_request (the budget is at least one request)."""
    return range(1, max(max_num_tokens, tokens_per_request) // tokens_per_request + 1)


def decode_batch_sizes(max_num_tokens: int) -> tuple[int, ...]:
    """The decode batch schedule up to the cap; a cap above 512 is appended to the whole schedule."""
    cap = max(max_num_tokens, 1)
    if cap > DECODE_BATCH_SCHEDULE[-1]:
        return DECODE_BATCH_SCHEDULE + (cap,)
    return tuple(b for b in DECODE_BATCH_SCHEDULE if b <= cap)


def worker_candidates(
    deployment: Deployment,
    batches: Iterable[int],
    point: StaticPoint,
    role: Role,
    semantics: Semantics,
    calibration: Calibration,
    pricer: str = AUTO,
) -> list[WorkerRow]:
    """Worker rows of one deployment at growing batches, up to the first that does not fit (memory
    needs no pricing, so the walk runs first and the fitting batches are priced together); a batch
    with no perf data is skipped."""
    fitting = fitting_batches(deployment, batches, point, role)
    try:
        return worker_rows(deployment, point, fitting, role, semantics, calibration, pricer)
    except PerfDataMissingError:
        rows = []
        for b in fitting:
            try:
                rows += worker_rows(deployment, point, (b,), role, semantics, calibration, pricer)
            except PerfDataMissingError as exc:
                log.debug("%s batch %d skipped: %s", role.value, b, exc)
        return rows


def fitting_batches(deployment: Deployment, batches: Iterable[int], point: StaticPoint, role: Role) -> list[int]:
    """The batches before the first one whose worker does not fit in memory (OOM or KV-OOM)."""
    batches = list(batches)
    fitting = []
    for b, memory in zip(batches, static_memories(deployment_facts(deployment), deployment, point, batches, STATIC_MODES[role])):
        if memory.oom or memory.kv_oom:
            break
        fitting.append(b)
    return fitting


@dataclass(frozen=True)
class WorkerLimits:
    """What the rate matching may choose."""

    prefill_workers: tuple[int, ...] = DEFAULT_WORKER_COUNTS  # prefill replica counts tried (each >= 1)
    decode_workers: tuple[int, ...] = DEFAULT_WORKER_COUNTS  # decode replica counts tried (each >= 1)
    total_gpus: frozenset[int] = frozenset()  # allowed deployment GPU counts; empty: any
    max_prefill_gpus: int | None = None  # prefill pool GPU cap (the reference applies it only with the decode cap)
    max_decode_gpus: int | None = None  # decode pool GPU cap (likewise)
    same_tp: bool = False  # prefill and decode TP must match (SGLang KV transfer layout)

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers"):
            counts = getattr(self, name)
            if not counts:
                raise InvalidInputError(f"{name} must list at least one replica count")
            for count in counts:
                require_positive(name, count)


@memo(256)
def _count_grid(limits: WorkerLimits, prefill_gpus: int, decode_gpus: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decode counts (column), prefill counts (row), deployment GPUs and the allowed pairs, (decode, prefill) grid."""
    n_d = np.array(limits.decode_workers, dtype=np.int64)[:, None]
    n_p = np.array(limits.prefill_workers, dtype=np.int64)[None, :]
    gpus = prefill_gpus * n_p + decode_gpus * n_d
    allowed = np.ones(gpus.shape, dtype=bool)
    if limits.max_prefill_gpus is not None and limits.max_decode_gpus is not None:
        allowed &= (prefill_gpus * n_p <= limits.max_prefill_gpus) & (decode_gpus * n_d <= limits.max_decode_gpus)
    if limits.total_gpus:
        allowed &= np.isin(gpus, sorted(limits.total_gpus))
    return n_d, n_p, gpus, allowed


@memo(1 << 16)
def match_workers(
    prefill_rate: float, prefill_gpus: int, decode_rate: float, decode_gpus: int, limits: WorkerLimits, calibration: Calibration
) -> tuple[int, int] | None:
    """(prefill workers, decode workers) maximising requests/s per GPU; the first best in
    (decode outer, prefill inner) order wins; None when no count pair has a positive rate."""
    n_d, n_p, gpus, allowed = _count_grid(limits, prefill_gpus, decode_gpus)
    rate = np.minimum(prefill_rate * n_p * calibration.prefill_degradation, decode_rate * n_d * calibration.decode_degradation)
    per_gpu = np.where(allowed, rate / gpus, -np.inf)
    best = int(np.argmax(per_gpu))
    if not per_gpu.flat[best] > 0.0:
        return None
    d, p = np.unravel_index(best, per_gpu.shape)
    return int(limits.prefill_workers[p]), int(limits.decode_workers[d])


def prefill_shortlist(prefill: Sequence[WorkerRow], ttft_target: float, gate_factor: float) -> list[int]:
    """Indices of prefill candidates with ttft * gate_factor < target, best seq/s/gpu first (ties:
    smaller global batch, then enumeration order), at most MAX_PREFILL_CANDIDATES."""
    kept = [i for i, w in enumerate(prefill) if w.row["ttft"] * gate_factor < ttft_target]
    kept.sort(key=lambda i: (-prefill[i].row["seq/s/gpu"], prefill[i].row["global_bs"]))
    return kept[:MAX_PREFILL_CANDIDATES]


def decode_categories(decode: Sequence[WorkerRow], tpot_target: float) -> list[list[int]]:
    """Indices of decode candidates with 0 < tpot < target grouped by parallel layout (sorted
    labels), each group best seq/s/gpu first (pandas quicksort); the whole group, uncut."""
    groups: dict[str, list[int]] = {}
    for i, w in enumerate(decode):
        if 0.0 < w.row["tpot"] < tpot_target:
            groups.setdefault(w.row["parallel"], []).append(i)
    return [_by_seq_s_gpu(groups[label], decode) for label in sorted(groups)]


def _by_seq_s_gpu(indices: list[int], workers: Sequence[WorkerRow]) -> list[int]:
    return [indices[k] for k in quicksort_desc([workers[i].row["seq/s/gpu"] for i in indices])]


@dataclass(frozen=True, eq=False)
class Combo:
    """A rate-matched (prefill, decode) worker pair."""

    row: dict  # the unrounded disagg row at the matched worker counts
    prefill: WorkerRow
    decode: WorkerRow


class Combos:
    """Rate-matched pairs of prefill and decode candidates, each computed once, on demand."""

    def __init__(self, prefill: Sequence[WorkerRow], decode: Sequence[WorkerRow], limits: WorkerLimits, calibration: Calibration):
        self.prefill, self.decode = tuple(prefill), tuple(decode)
        self.limits, self.calibration = limits, calibration
        self.matched: list[Combo] = []  # in the order first asked for
        self._index: dict[tuple[int, int], Combo | None] = {}

    def combo(self, d: int, p: int) -> Combo | None:
        """Decode candidate d with prefill candidate p; None when the pair is excluded (TP mismatch
        under same_tp) or no worker counts give a positive rate."""
        if (d, p) not in self._index:
            self._index[d, p] = self._match(self.prefill[p], self.decode[d])
        return self._index[d, p]

    def _match(self, prefill: WorkerRow, decode: WorkerRow) -> Combo | None:
        pr, dr = prefill.row, decode.row
        if self.limits.same_tp and pr["tp"] != dr["tp"]:
            return None
        counts = match_workers(pr["seq/s"], pr["num_total_gpus"], dr["seq/s"], dr["num_total_gpus"], self.limits, self.calibration)
        if counts is None:
            return None
        row = disagg_row(pr, counts[0], dr, counts[1], self.calibration, decode_tokens_per_iteration=decode.decode_tokens_per_iteration)
        self.matched.append(Combo(row, prefill, decode))
        return self.matched[-1]


def combo_rank(row: dict) -> tuple[float, int]:
    """The category ranking key: tokens/s/gpu, then fewer GPUs."""
    return row["tokens/s/gpu"], -row["num_total_gpus"]


def ranked(combos: Sequence[Combo]) -> list[Combo]:
    """Combos best first by combo_rank; equal keys keep their order (so [0] is the reference's max)."""
    return sorted(combos, key=lambda c: combo_rank(c.row), reverse=True)


CategoryPick = Callable[[list[Combo], Sequence[WorkerRow]], "dict | None"]  # (ranked combos, the category's decode candidates) -> kept row


def first_combo(combos: list[Combo], decode: Sequence[WorkerRow]) -> dict | None:
    """The legacy pick: the best-ranked combination's row."""
    return combos[0].row if combos else None


def rank_value(row: dict, column: str, semantics: Semantics) -> float:
    """The value a ranking sorts on: 3-decimal rounded in legacy mode (the reference sorts rounded frames)."""
    return round_decimals(row[column]) if semantics is Semantics.LEGACY else row[column]


def best_under_constraint(
    combos: Combos,
    ttft_target: float,
    tpot_target: float,
    semantics: Semantics,
    top_n: int = DEFAULT_TOP_N,
    *,
    gate_factor: float | None = None,
    pick: CategoryPick = first_combo,
) -> list[dict]:
    """The best rows for one (ttft, tpot) target pair: filter both pools, rate-match each decode
    category's pairs (decode outer, prefill inner), keep the picked row per category, then the
    top-N by tokens/s/gpu. gate_factor multiplies prefill TTFT in the filter (default: the TTFT factor)."""
    factor = combos.calibration.ttft_factor if gate_factor is None else gate_factor
    shortlist = prefill_shortlist(combos.prefill, ttft_target, factor)
    best = []
    for category in decode_categories(combos.decode, tpot_target) if shortlist else []:
        matched = [combos.combo(d, p) for d in category[:MAX_DECODE_CANDIDATES] for p in shortlist]
        picked = pick(ranked([c for c in matched if c is not None]), [combos.decode[d] for d in category])
        if picked is not None:
            best.append(picked)
    order = quicksort_desc([rank_value(r, "tokens/s/gpu", semantics) for r in best])
    return [best[i] for i in order[:top_n]]
