"""The accuracy report build: its wall time on the worker pool and where its CPU time goes.

    python -m benchmarks.bench_report [--limit N] [--builds N] [--expect CSV] [--top N]

* Phases (in this process, CPU seconds, so other load on the machine does not inflate them): load
  and map the rows, then every method on every row in the batch runner's order (stacks, then
  deployments, so tables and pricers are reused as in a worker), each (row, method) split into the
  engine price tables built for it (estimator.closedloop.engine; read from the disk store when it
  holds them, as in the report, unless --no-table-store), the replay kernels run
  (estimator.closedloop.cases.Prepared.run) and the rest (closed forms, mapping glue, memo hits);
  then the page rendered from the points. Totals per method and row class (agg / disagg, pricer,
  MTP or not), per perf-data stack (a worker's unit of work) and the slowest rows.
* Builds (--builds N): `python -m estimator report` N times on its worker pool (default 2
  processes), wall seconds each and their median, with the 1-minute load average before each (a
  shared machine inflates wall time); --expect CSV checks each build's points file is byte-identical
  to CSV.

Not a test: nothing here asserts on time. The first build after a kernel source change compiles
the kernels (cold); later builds load them from the on-disk cache (warm).
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class PhaseClock:
    """CPU seconds spent in the engine table builds and the replay kernels since the last reset."""

    def __init__(self):
        import estimator.closedloop.cases as cases

        self.tables = self.kernel = 0.0
        build, run = cases.engine_tables, cases.Prepared.run

        def timed_tables(*args):
            start = time.process_time()
            try:
                return build(*args)
            finally:
                self.tables += time.process_time() - start

        def timed_run(prepared):
            start = time.process_time()
            try:
                return run(prepared)
            finally:
                self.kernel += time.process_time() - start

        cases.engine_tables, cases.Prepared.run = timed_tables, timed_run

    def reset(self) -> None:
        self.tables = self.kernel = 0.0


def row_class(row) -> str:
    """agg | disagg, the priced inputs' pricer, and mtp when the replay decodes speculatively."""
    from estimator.report.methods import replay_input
    from measurements.mapping import DisaggInputs

    inputs = row.some_inputs
    if inputs is None:
        return "unpriced"
    try:
        mtp = replay_input(row).tokens_per_decode != 1.0
    except Exception:
        mtp = False
    mode = "disagg" if isinstance(inputs, DisaggInputs) else "agg"
    return f"{mode} {inputs.pricer}{' mtp' if mtp else ''}"


def profile(limit: int | None, top: int, stored_tables: bool) -> None:
    """Every method on every row in this process, timed by phase (the engine price grids' disk store
    open unless stored_tables is False); prints the tables."""
    start = time.process_time()
    from estimator.closedloop import tablecache
    from estimator.report import METHOD_NAMES
    from estimator.report.batch import predict, stacks, tasks
    from estimator.report.page import render_report
    from estimator.report.points import points_frame
    from measurements.loaders import load_silicon_sample, silicon_sample_path
    from measurements.mapping import map_all

    measurements = load_silicon_sample(silicon_sample_path())
    loaded = time.process_time()
    rows = map_all(measurements[:limit] if limit else measurements)
    mapped = time.process_time()
    clock = PhaseClock()
    by_method: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    by_stack: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    per_row: list[tuple[float, int, str]] = []
    results = {}
    with tablecache.enabled() if stored_tables else contextlib.nullcontext():  # as the report's batch runner
        for stack in stacks(rows):
            name = f"{stack[0][1].measurement.system} {stack[0][1].measurement.engine}" if stack[0][1].some_inputs else "(unpriced rows)"
            for task in tasks(stack):
                for index, row in task:
                    row_total, out, spans = 0.0, [], []
                    for method in METHOD_NAMES:
                        clock.reset()
                        begin = time.process_time()
                        out.append(predict(row, method))
                        spent = time.process_time() - begin
                        spans.append((method, clock.tables, clock.kernel, spent - clock.tables - clock.kernel))
                        row_total += spent
                    cls = row_class(row)  # after the methods: it reads their memoized closed forms
                    for method, *split in spans:
                        by_method[(method, cls)] = [a + b for a, b in zip(by_method[(method, cls)], split)]
                    results[index] = out
                    by_stack[name][0] += row_total
                    by_stack[name][1] += 1
                    per_row.append((row_total, index, f"{row.measurement.id} ({cls})"))
    predicted = time.process_time()
    frame = points_frame(rows, [r for i in range(len(rows)) for r in results[i]])
    render_report(frame, {}, list(METHOD_NAMES))
    rendered = time.process_time()

    print(f"CPU seconds, one process, {len(rows)} rows x {len(METHOD_NAMES)} methods")
    print(f"  import + load {loaded - start:7.1f}\n  map           {mapped - loaded:7.1f}")
    print(f"  predict       {predicted - mapped:7.1f}\n  points+render {rendered - predicted:7.1f}")
    print(f"  total         {rendered - start:7.1f}\n")
    print(f"{'method':20s} {'rows':24s} {'tables':>8s} {'kernel':>8s} {'other':>8s}")
    for (method, cls), (tables, kernel, other) in sorted(by_method.items()):
        if tables + kernel + other >= 0.05:
            print(f"{method:20s} {cls:24s} {tables:8.1f} {kernel:8.1f} {other:8.1f}")
    for method in METHOD_NAMES:
        cells = [v for (m, _), v in by_method.items() if m == method]
        print(f"{method:20s} {'(all)':24s} " + " ".join(f"{sum(c[i] for c in cells):8.1f}" for i in range(3)))
    print(f"\n{'stack (a worker task)':28s} {'rows':>6s} {'cpu s':>8s}")
    for name, (spent, count) in sorted(by_stack.items(), key=lambda item: -item[1][0]):
        print(f"{name:28s} {count:6d} {spent:8.1f}")
    print(f"\nslowest {top} rows (all methods, cpu s)")
    for spent, index, label in sorted(per_row, reverse=True)[:top]:
        print(f"{spent:8.2f}  #{index} {label}")


def builds(count: int, expect: Path | None, workers: int) -> None:
    """`python -m estimator report` count times; wall seconds, median, byte-identity against expect."""
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        points, page = Path(tmp) / "points.csv", Path(tmp) / "report.html"
        for i in range(count):
            load = os.getloadavg()[0]
            begin = time.perf_counter()
            subprocess.run([sys.executable, "-m", "estimator", "report", "--workers", str(workers), "--points", str(points), "--out", str(page)],
                           cwd=ROOT, check=True, capture_output=True)  # fmt: skip
            walls.append(time.perf_counter() - begin)
            same = "" if expect is None else (", points byte-identical" if filecmp.cmp(points, expect, shallow=False) else ", POINTS DIFFER")
            print(f"build {i + 1}: {walls[-1]:6.1f} s wall (load average before {load:.2f}){same}", flush=True)
    print(f"median {statistics.median(walls):.1f} s wall over {count} builds, {workers} workers, {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="profile only the first N rows")
    parser.add_argument("--top", type=int, default=10, help="slowest rows listed")
    parser.add_argument("--no-table-store", action="store_true", help="profile with the engine price grids' disk store closed (every grid priced)")
    parser.add_argument("--builds", type=int, default=0, help="time this many full builds (no profile)")
    parser.add_argument("--workers", type=int, default=2, help="the builds' worker processes")
    parser.add_argument("--expect", type=Path, default=None, help="with --builds: points CSV each build must equal byte for byte")
    args = parser.parse_args()
    if args.builds:
        builds(args.builds, args.expect, args.workers)
    else:
        profile(args.limit, args.top, not args.no_table_store)


if __name__ == "__main__":
    main()
