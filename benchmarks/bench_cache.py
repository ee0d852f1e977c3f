"""Perf-table disk cache: a cold and a warm `python -m estimator estimate`, and the warm table load
alone, for this tree and (with --baseline REV) a git revision side by side in one run.

Cold: an empty $ESTIMATOR_CACHE_DIR (tables built from parquet); warm: the same folder again. Both
use one Numba cache per tree, compiled by an untimed first run, so only the table cache differs.
Runs alternate between the trees so that the shared machine's load falls on both alike.

Run: python -m benchmarks.bench_cache [--baseline 168e1c0] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ESTIMATE = ["estimate", "--model-path", "Qwen/Qwen3-32B-FP8", "--system", "h200_sxm", "--backend", "sglang", "--tp-size", "2",
            "--batch-size", "16", "--isl", "32768", "--osl", "512", "--ctx-tokens", "16384", "--semantics", "legacy"]  # fmt: skip
STACKS = (("h200_sxm", "sglang"), ("b200_sxm", "trtllm"))  # a small and the largest shipped table set
_LOAD = """
import sys, time
from estimator.perf import stack as S
stack = tuple(sys.argv[1:3])
S.load_stack(*stack)  # fills the disk cache when cold
S.load_stack.cache_clear()
t0 = time.perf_counter(); S.load_stack(*stack); print(time.perf_counter() - t0)
"""


class Tree:
    """One source tree: its import path, a Numba cache of its own and a table-cache folder."""

    def __init__(self, name: str, path: Path, scratch: Path):
        self.name, self.path = name, path
        self.numba = scratch / f"numba-{name}"
        self.tables = scratch / f"tables-{name}"
        for folder in (self.numba, self.tables):
            folder.mkdir(mode=0o700)

    def env(self, cache: Path) -> dict:
        return dict(os.environ, PYTHONPATH=str(self.path), NUMBA_CACHE_DIR=str(self.numba), ESTIMATOR_CACHE_DIR=str(cache))

    def estimate_seconds(self, cache: Path) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "estimator", *ESTIMATE], cwd=self.path, env=self.env(cache), check=True, capture_output=True)
        return time.perf_counter() - start

    def load_seconds(self, system: str, backend: str) -> float:
        out = subprocess.run(
            [sys.executable, "-c", _LOAD, system, backend], cwd=self.path, env=self.env(self.tables), check=True, capture_output=True, text=True
        )
        return float(out.stdout.split()[-1])


def measure(trees: list[Tree], repeats: int, scratch: Path) -> dict[str, dict[str, float]]:
    for tree in trees:  # compile each tree's kernels and fill its warm table cache, untimed
        tree.estimate_seconds(tree.tables)
    samples: dict[str, dict[str, list[float]]] = {t.name: {} for t in trees}
    for i in range(repeats):
        for tree in trees:
            got = samples[tree.name]
            cold = scratch / f"cold-{tree.name}-{i}"
            cold.mkdir(mode=0o700)
            got.setdefault("estimate, cold table cache (s)", []).append(tree.estimate_seconds(cold))
            got.setdefault("estimate, warm table cache (s)", []).append(tree.estimate_seconds(tree.tables))
            for system, backend in STACKS:
                got.setdefault(f"warm table load {system}/{backend} (ms)", []).append(1000 * tree.load_seconds(system, backend))
    return {name: {what: statistics.median(v) for what, v in got.items()} for name, got in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", help="a git revision to measure beside this tree (checked out in a temporary worktree)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        trees = [Tree("this", ROOT, scratch)]
        if args.baseline:
            path = scratch / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), args.baseline], check=True, capture_output=True)
            trees.append(Tree(args.baseline, path, scratch))
        try:
            result = measure(trees, args.repeats, scratch)
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(scratch / "baseline")], check=True)
    names = [t.name for t in trees]
    print(f"{'median of ' + str(args.repeats):<44}" + "".join(f"{n:>14}" for n in names) + ("  this/baseline" if len(names) > 1 else ""))
    for what in result["this"]:
        values = [result[n][what] for n in names]
        ratio = f"  {values[0] / values[1]:>12.2f}" if len(values) > 1 else ""
        print(f"{what:<44}" + "".join(f"{v:>14.3f}" for v in values) + ratio)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
