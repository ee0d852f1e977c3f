"""Closed-loop replay speed: Numba kernels vs the literal Python replay, bulk refinement in row
pricing, and the cost of engine pricing.

Run: `python -m benchmarks.bench_closed_loop [--quick]`. Not a test: it prints timings (CPU seconds
of this process, so other load on the machine does not inflate them) and checks that both
implementations return bit-identical results on the fixed row set.

* Fixed rows (row pricing): an agg row at bs 256, 1024/1024 (steady) and at bs 64, 8192/1024
  (benchmark protocol), a disagg row at C 512 on 4P4D, 1024/1024 (steady) and one at C 64 on
  1P2D (benchmark). Goal: Numba >= 100x faster.
* 5,000 sweep-like rows (4,500 agg over the aiconfigurator batch list x three ISL/OSL pairs x
  three budgets, 500 disagg), every row unique, refined in row pricing on 2 threads. Goal: < 10 s.
* Engine pricing: 200 run_agg rows of Qwen3-32B-FP8 on h200_sxm (sglang, tp2), cold (price tables
  built) and warm (tables cached), steady protocol, and the benchmark protocol warm.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

import pandas as pd

from estimator.closedloop import (
    AggSpec,
    Benchmark,
    ReplayOptions,
    Steady,
    TandemSpec,
    refine_closed_loop_latency,
    replay_agg,
    replay_tandem,
    run_plan,
)
from estimator.closedloop.cases import MEMO
from estimator.closedloop.pricing import flat_pricer, row_pricer
from estimator.deployment import Deployment
from estimator.scheduler import AggPoint, run_agg
from estimator.settings import EngineSettings

BATCHES = [*range(1, 16), 16, 20, 24, 28, 32, 40, 48, 56, *range(64, 256, 16), *range(256, 512, 32), 512]
LENGTHS = [(1024, 1024), (1024, 8192), (8192, 1024)]


def cpu_seconds(fn) -> tuple[float, object]:
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def fixed_rows() -> list[tuple[str, callable]]:
    """(label, replay(impl)) of the fixed row set, row pricing."""
    agg_prices = row_pricer(120.0, 1024, 45.0)
    long_prices = row_pricer(900.0, 8192, 30.0)
    prefill, decode = flat_pricer(120.0, 0.0), flat_pricer(0.0, 40.0)
    agg = AggSpec(EngineSettings(8192, True))
    return [
        ("agg bs256 1024/1024 steady", lambda impl: replay_agg(run_plan(Steady(), 256, 1024, 1024), agg, agg_prices, impl)),
        ("agg bs64 8192/1024 benchmark", lambda impl: replay_agg(run_plan(Benchmark(), 64, 8192, 1024), agg, long_prices, impl)),
        ("disagg C512 4P4D 1024/1024 steady", lambda impl: replay_tandem(run_plan(Steady(), 512, 1024, 1024), TandemSpec(4, 4, 1, 256), prefill, decode, impl)),
        ("disagg C64 1P2D 1024/1024 benchmark",
         lambda impl: replay_tandem(run_plan(Benchmark(), 64, 1024, 1024), TandemSpec(1, 2, 2, 64), prefill, decode, impl)),
    ]  # fmt: skip


def bench_fixed_rows() -> None:
    print("Numba vs literal Python, fixed rows (row pricing)")
    print(f"  {'row':<38s} {'python s':>9s} {'numba ms':>9s} {'speed-up':>9s}  identical")
    for label, replay in fixed_rows():
        replay("numba")  # compile or load the cached kernels
        numba_s, fast = min((cpu_seconds(lambda: replay("numba")) for _ in range(5)), key=lambda r: r[0])
        python_s, slow = cpu_seconds(lambda: replay("python"))
        print(f"  {label:<38s} {python_s:9.2f} {numba_s * 1000:9.2f} {python_s / numba_s:8.0f}x  {fast.same_as(slow)}")


def sweep_rows(count: int, seed: int = 0) -> pd.DataFrame:
    """Unique sweep-like result rows: 90% agg, 10% disagg."""
    rng = random.Random(seed)
    agg_grid = list(itertools.product(BATCHES, LENGTHS, (1, 2, 8)))
    rows = []
    for i in range(count):
        if i % 10 == 9:
            isl, osl = LENGTHS[i % 3]
            rows.append({"concurrency": rng.choice([8, 32, 64, 128, 256, 512]), "isl": isl, "osl": osl, "(p)workers": rng.choice([1, 2, 4]),
                         "(d)workers": rng.choice([1, 2, 4]), "(p)bs": rng.choice([1, 2]), "(d)bs": rng.choice([64, 128, 256]),
                         "(p)prefill_step_ms": isl * 0.12 + rng.random(), "tpot": 20 + 20 * rng.random()})  # fmt: skip
            continue
        bs, (isl, osl), budget_factor = agg_grid[i % len(agg_grid)]
        ctx = min(isl * budget_factor, 16384)
        rows.append({"bs": bs, "isl": isl, "osl": osl, "ctx_tokens": ctx, "prefill_step_ms": 0.06 * ctx + 5 + rng.random(),
                     "genonly_step_ms": 8 + 0.06 * bs + rng.random()})  # fmt: skip
    return pd.DataFrame(rows)


def bench_bulk_row_pricing(count: int) -> None:
    rows = sweep_rows(count)
    refine_closed_loop_latency(rows.head(20), ReplayOptions("row"))  # load the kernels
    MEMO.items.clear()
    start, cpu_start = time.perf_counter(), time.process_time()
    out = refine_closed_loop_latency(rows, ReplayOptions("row"), threads=2)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(
        f"\nRefining {count} unique rows, row pricing, steady protocol, 2 threads: {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"({int((out.refine_reason == '').sum())} priced; wall ~ CPU / 2 on two idle cores)"
    )


def engine_rows(count: int) -> pd.DataFrame:
    deployment = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)
    grid = itertools.cycle(itertools.product(BATCHES[::3], LENGTHS))
    return pd.DataFrame([dict(run_agg(deployment, AggPoint(isl, osl, bs)).row) for bs, (isl, osl) in itertools.islice(grid, count)])


def bench_engine_pricing(count: int) -> None:
    rows = engine_rows(count)
    print(f"\nEngine pricing, {count} run_agg rows (Qwen3-32B-FP8, h200_sxm, sglang tp2)")
    for label, options in (("steady, cold (tables built)", ReplayOptions()), ("steady, warm", ReplayOptions()),
                           ("benchmark, warm", ReplayOptions(protocol=Benchmark()))):  # fmt: skip
        MEMO.items.clear()
        start = time.perf_counter()
        out = refine_closed_loop_latency(rows, options, threads=2)
        wall = time.perf_counter() - start
        print(f"  {label:<28s} {wall:7.2f} s wall ({wall / count * 1000:.1f} ms per row; {int((out.refine_reason == '').sum())} priced)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 bulk rows and 40 engine rows, fixed rows unchanged")
    args = parser.parse_args()
    bench_fixed_rows()
    bench_bulk_row_pricing(500 if args.quick else 5000)
    bench_engine_pricing(40 if args.quick else 200)


if __name__ == "__main__":
    main()
