"""Predictions for every (row, method), in a pool of worker processes, with a progress bar on stderr.

A method that cannot predict a row, or fails on it, yields an uncovered result carrying the
reason; the batch never aborts. Output order is deterministic: rows in input order, methods in
the order given, whatever order the workers finish in.
"""

from __future__ import annotations

import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from queue import Empty
from typing import TextIO

from estimator.closedloop import tablecache
from estimator.numba_cache import KERNEL_WARMERS
from estimator.report.methods import METHODS, Uncovered, first_line
from measurements.mapping import MappedRow

NOT_PRICED = "none (not covered)"
CHUNK_ROWS = 64  # rows per task: small enough for a live progress bar, large enough to amortise pickling
BAR_WIDTH = 30


@dataclass(frozen=True)
class PointResult:
    """One method's outcome on one row."""

    id: str  # the measurement id
    method: str  # a METHODS key
    covered: bool  # the method produced a prediction
    reason: str  # why not covered ("" when covered)
    ttft_pred_ms: float  # predicted TTFT, ms (NaN when not covered)
    tpot_pred_ms: float  # predicted TPOT, ms (NaN when not covered)
    note: str  # a caveat on a covered prediction ("" when none)
    prefill_step_ms: float  # the prefill step price behind TTFT, ms (NaN when unknown)
    decode_step_ms: float  # the decode step price behind TPOT, ms (NaN when unknown)
    pricing: str  # how the method priced the row (methods.pricing; NOT_PRICED when not covered)


def predict(row: MappedRow, method: str) -> PointResult:
    """One method on one row; every failure becomes an uncovered result with its reason."""
    mid = row.measurement.id
    try:
        p = METHODS[method](row)
    except Uncovered as exc:
        return uncovered(mid, method, str(exc))
    except Exception as exc:  # a failing row is reported, never fatal
        return uncovered(mid, method, f"{type(exc).__name__}: {first_line(exc)}")
    return PointResult(mid, method, True, "", p.ttft_ms, p.tpot_ms, p.note, p.prefill_step_ms, p.decode_step_ms, p.pricing)


def uncovered(mid: str, method: str, reason: str) -> PointResult:
    nan = math.nan
    return PointResult(mid, method, False, reason, nan, nan, "", nan, nan, NOT_PRICED)


def predict_rows(rows: list[tuple[int, MappedRow]], methods: tuple[str, ...],
                 progress: Callable[[int], object] | None = None) -> list[tuple[int, list[PointResult]]]:  # fmt: skip
    """Every method on every (index, row), serially, deployment by deployment (so that tables and
    pricers are reused), the engine price grids' disk store open (tablecache); results keyed by
    the row index. `progress` is called with the count of rows done after each CHUNK_ROWS."""
    out = []
    with tablecache.enabled():
        for task in tasks(rows):
            out.extend((index, [predict(row, method) for method in methods]) for index, row in task)
            if progress is not None:
                progress(len(task))
    return out


STDERR = object()  # a progress default read when called: sys.stderr then (a test may have replaced it since import)


def predict_all(rows: list[MappedRow], methods: Iterable[str], workers: int = 2, progress: TextIO | None = STDERR) -> list[PointResult]:
    """Every method on every row, row-major in input order, over `workers` processes (1: in process);
    progress on `progress` (STDERR: sys.stderr when called; None: none)."""
    methods = known_methods(methods)
    with Predictor(workers, progress) as predictor:
        return predictor.predict(rows, methods)


def known_methods(methods: Iterable[str]) -> tuple[str, ...]:
    """The methods as a tuple; ValueError naming any that METHODS lacks."""
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown} (known: {', '.join(METHODS)})")
    return methods


class Predictor:
    """Worker processes that predict rows (none for workers <= 1: in process), started before the
    rows are known: on entering, the processes compile the kernel families into Numba's on-disk
    cache side by side (on a cold cache each would otherwise compile every kernel itself) while
    the caller maps its rows. Leaving does not wait for the processes to exit (their
    teardown overlaps what the caller does next)."""

    def __init__(self, workers: int = 2, progress: TextIO | None = STDERR):
        self.workers, self.progress = workers, sys.stderr if progress is STDERR else progress
        self.pool: ProcessPoolExecutor | None = None
        self.done = None  # the workers' progress queue
        self.warming: list[tuple[Callable[[], object], Future]] = []  # (warmer, its future) until predict waits on them

    def __enter__(self) -> Predictor:
        if self.workers > 1:
            context = multiprocessing.get_context("spawn")  # no inherited Numba / engine state
            self.done = context.Queue()
            self.pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_attach_progress, initargs=(self.done,))
            self.warming = [(warm, self.pool.submit(warm)) for warm in KERNEL_WARMERS]
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.pool is None:
            return
        processes = list(getattr(self.pool, "_processes", {}).values())  # the executor exposes no kill
        self.pool.shutdown(wait=False, cancel_futures=True)
        if exc_type is not None:  # a failure or an interrupt: do not wait for the warm-ups or running stacks
            for process in processes:
                process.terminate()

    def predict(self, rows: list[MappedRow], methods: Iterable[str]) -> list[PointResult]:
        """Every method on every row, row-major in input order. A task is one whole perf-data stack
        (system x backend), so each stack's tables load in one process; tasks go largest first to
        whichever process is free, once the kernels are warm."""
        methods = known_methods(methods)
        bar = Progress(len(rows), self.progress)
        results: dict[int, list[PointResult]] = {}
        if self.pool is None:
            for stack in stacks(rows):
                results.update(predict_rows(stack, methods, bar.advance))
        else:
            self._await_warm_kernels()
            pending = {self.pool.submit(_predict_stack, stack, methods) for stack in stacks(rows)}
            while pending:
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                _drain(self.done, bar)
                for future in finished:
                    results.update(future.result())
            _drain(self.done, bar)
        bar.close()
        return [r for index in range(len(rows)) for r in results[index]]

    def _await_warm_kernels(self) -> None:
        """Wait for the warm-ups. One that failed only costs compile time (the rows compile what
        they use), so it is reported on the progress stream, not raised."""
        for warm, future in self.warming:
            exc = future.exception()
            if exc is not None and self.progress is not None:
                name = getattr(warm, "__name__", repr(warm))
                self.progress.write(f"kernel warm-up {name} failed ({type(exc).__name__}: {first_line(exc)}); kernels compile on first use\n")
        self.warming = []


_progress_queue = None  # in a worker process: where predict_rows reports rows done


def _attach_progress(queue) -> None:
    global _progress_queue
    _progress_queue = queue


def _predict_stack(stack: list[tuple[int, MappedRow]], methods: tuple[str, ...]) -> list[tuple[int, list[PointResult]]]:
    return predict_rows(stack, methods, _progress_queue.put)


def _drain(queue, bar: Progress) -> None:
    """Advance the bar by every count the workers reported so far."""
    while True:
        try:
            bar.advance(queue.get_nowait())
        except Empty:
            return


def stacks(rows: list[MappedRow]) -> list[list[tuple[int, MappedRow]]]:
    """(index, row) lists, one per perf-data stack (system x backend), largest first; rows no method
    prices (no inputs, not even the baseline's) form the last list."""
    groups: dict[tuple[str, str], list[tuple[int, MappedRow]]] = {}
    idle = [(index, row) for index, row in enumerate(rows) if row.some_inputs is None]
    for index, row in enumerate(rows):
        if row.some_inputs is not None:
            groups.setdefault((row.measurement.system, row.measurement.engine), []).append((index, row))
    ordered = sorted(groups.values(), key=lambda s: (-len(s), s[0][0]))
    return ordered + ([idle] if idle else [])


def tasks(indexed: list[tuple[int, MappedRow]]) -> list[list[tuple[int, MappedRow]]]:
    """(index, row) tasks of at most CHUNK_ROWS rows of one deployment each, deployments in order of
    first appearance, so that a worker reuses the tables and pricers it loaded."""
    groups: dict[object, list[tuple[int, MappedRow]]] = {}
    for index, row in indexed:
        groups.setdefault(row.inputs.deployments if row.inputs else None, []).append((index, row))
    return [group[i : i + CHUNK_ROWS] for group in groups.values() for i in range(0, len(group), CHUNK_ROWS)]


class Progress:
    """A progress bar (rows done, elapsed) on a text stream: redrawn in place on a terminal, one line
    per further tenth of the rows elsewhere (logs); silent without a stream."""

    def __init__(self, total: int, stream: TextIO | None):
        self.total, self.stream, self.done, self.start = total, stream, 0, time.monotonic()
        self.live = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.logged_tenths = 0

    def advance(self, n: int) -> None:
        self.done += n
        if self.stream is None:
            return
        tenths = 10 * self.done // max(self.total, 1)
        if not self.live and tenths <= self.logged_tenths:
            return
        self.logged_tenths = tenths
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} rows {time.monotonic() - self.start:.1f}s"
        self.stream.write(f"\r{line}" if self.live else f"{line}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None and self.live:
            self.stream.write("\n")
            self.stream.flush()
