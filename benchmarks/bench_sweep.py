"""Sweep speed, ours (legacy semantics) vs aiconfigurator 0.12.0, with identical results checked.

Run: `python -m benchmarks.bench_sweep`. In one run: a full agg sweep of one parallel layout
(every batch x prefill budget) and a full 8-GPU disagg sweep (tp 1/2/4/8 prefill and decode
layouts, 1-32 workers per pool, at most 8 GPUs per replica), each under one (TTFT, TPOT) target
and under aiconfigurator's Pareto TPOT list (its Task default). Both sides are warmed first on
another workload (tables loaded, engines compiled); every timed sweep is a workload neither side
has priced, so no result cache answers. Not a test: prints times and ratios, and fails loudly if
the results differ.

Both sides run in one process, so a full garbage collection triggered by either lands in whichever
sweep is running, and its cost grows with everything loaded (aiconfigurator's perf databases are
large dict trees): timings swing by 2x between runs. Alternating sweeps also leave each side to
start on caches the other side filled. The cases are therefore timed three ways: sides alternating
with the interpreter's default collector; alternating with the warm heap frozen (``gc.freeze()``,
as a long-running sweep service would do after loading); and, heap frozen, every one of our sweeps
and then every one of the reference's (each side in steady use, as timeit runs it).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import time
import warnings

from estimator.sweep import Sla
from parity.compare import explain, failures
from parity.test_sweep_parity import SweepTask, compare_frames, our_sweep, reference_sweep

MODEL, SYSTEM, BACKEND = "Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang"
WORKLOADS = ((4096, 512), (2048, 1024), (8192, 256))  # timed, each (isl, osl) fresh to both sides
WARMUP = (3000, 300)
PARETO_TPOTS = tuple(range(1, 20)) + tuple(range(20, 300, 5))  # aiconfigurator task_v2._LEGACY_TPOT_SWEEP
TARGETS = {"one target": Sla(2000.0, (50.0,)), "Pareto TPOT list": Sla(2000.0, tuple(float(t) for t in PARETO_TPOTS))}
SWEEPS = {"agg, tp2": ("agg", (2,)), "disagg, 8 GPUs": ("disagg", (1, 2, 4, 8))}


def task(mode: str, tps: tuple[int, ...], isl: int, osl: int, sla: Sla) -> SweepTask:
    return SweepTask(mode, MODEL, SYSTEM, BACKEND, isl, osl, sla, tps)


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def run_case(mode: str, tps: tuple[int, ...], sla: Sla, workloads, alone: bool = False) -> tuple[list[float], list[float], int]:
    """(our seconds per sweep, reference seconds per sweep, best rows compared) over fresh
    workloads, the two sides alternating (alone: every one of our sweeps, then every one of the
    reference's); raises if any result differs."""
    tasks = [task(mode, tps, isl, osl, sla) for isl, osl in workloads]
    ours_timed = lambda t: timed(lambda: our_sweep(t, sla).best)  # noqa: E731
    theirs_timed = lambda t: timed(lambda: reference_sweep(t, sla))  # noqa: E731
    if alone:
        ours_runs = [ours_timed(t) for t in tasks]
        pairs = list(zip(ours_runs, [theirs_timed(t) for t in tasks]))
    else:
        pairs = [(ours_timed(t), theirs_timed(t)) for t in tasks]
    rows = 0
    for t, ((ours, _), (theirs, _)) in zip(tasks, pairs):
        diffs = compare_frames(t.id, theirs, ours, ours.columns)
        if failures(diffs):
            raise AssertionError(explain(diffs))
        rows += len(ours)
    return [o for (_, o), _ in pairs], [r for _, (_, r) in pairs], rows


def fresh(workloads, repeats: int, offset: int) -> list[tuple[int, int]]:
    """Each workload `repeats` times, every copy's isl shifted so that no sweep repeats another's."""
    return [(isl + offset + 3 * r, osl) for isl, osl in workloads for r in range(repeats)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=len(WORKLOADS), help="fresh workloads timed per case (1-3)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh copies of each workload (isl shifted) per case")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    workloads = WORKLOADS[: args.workloads]
    for mode, tps in SWEEPS.values():
        for sla in TARGETS.values():
            run_case(mode, tps, sla, [WARMUP])  # tables, engines and kernels warm on both sides
    print(f"{MODEL} {SYSTEM} {BACKEND}, legacy semantics; workloads (isl, osl) {list(workloads)}, {args.repeats} fresh copies each;")
    print("median ms per sweep (mean in brackets); the ratio is of the medians")
    regimes = (("default collector, sides alternating", 0, False), ("warm heap frozen, sides alternating", 1000, False),
               ("warm heap frozen, each side alone", 2000, True))  # fmt: skip
    for regime, shift, alone in regimes:
        if shift >= 1000:  # heap frozen: what regime 2 allocated too
            gc.collect()
            gc.freeze()
        print(f" {regime}:")
        for (name, (mode, tps)), (targets, sla) in ((s, t) for s in SWEEPS.items() for t in TARGETS.items()):
            offset = shift + (1 if targets != "one target" else 0)  # every case and regime prices fresh workloads
            ours, theirs, rows = run_case(mode, tps, dataclasses.replace(sla), fresh(workloads, args.repeats, offset), alone)
            print(
                f"  {name:<16} {targets:<17} ours {_ms(ours)}, aiconfigurator {_ms(theirs)} -> "
                f"{statistics.median(theirs) / statistics.median(ours):5.1f}x  (identical: {rows} best rows)"
            )


def _ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:7.1f} ({statistics.mean(seconds) * 1000:7.1f})"


if __name__ == "__main__":
    main()
