"""recommend's warm wall time against `aiconfigurator cli default` on the same task, side by side in one run.

Run: `python -m benchmarks.bench_recommend [--repeats 3]`. The task is issue 27's: Qwen/Qwen3-32B-FP8 on 8
h200_sxm GPUs, isl 4000, osl 1000, TTFT 1000 ms, TPOT 30 ms, TRT-LLM (both tools' default backend), agg against
disagg. Each side runs as the user runs it, a fresh process from the command line, after one untimed
warm-up run of each (our Numba and perf-table caches on disk, the reference's imports and data in the
page cache). The timed runs alternate ours / reference; the ratio is taken per pair and its median
reported. The best budget-wide tokens/s/gpu each side prints for the winning mode must agree (legacy
semantics), else the script fails. Not a test: the machine may be shared, so read the median.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time

TASK = ["--model-path", "Qwen/Qwen3-32B-FP8", "--system", "h200_sxm", "--total-gpus", "8", "--isl", "4000", "--osl", "1000",
        "--ttft", "1000", "--tpot", "30"]  # fmt: skip
OURS = [sys.executable, "-m", "estimator", "recommend", *TASK, "--backend", "trtllm", "--json"]
REFERENCE = ["aiconfigurator", "cli", "default", *TASK, "--backend", "trtllm"]
CHOSEN = re.compile(r"Best Experiment Chosen: \S*?(agg|disagg)\S* at ([0-9.]+) tokens/s/gpu")


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout + done.stderr


def our_best(output: str) -> tuple[str, str]:
    doc = json.loads(output[output.index("{") : output.rindex("}") + 1])
    best = max(((m, r["top"][0]["tokens/s/gpu"]) for m, r in doc["modes"].items() if r["top"]), key=lambda p: p[1])
    return best[0], f"{best[1]:.2f}"


def reference_best(output: str) -> tuple[str, str]:
    match = CHOSEN.search(re.sub(r"\x1b\[[0-9;]*m", "", output))
    if match is None:
        raise SystemExit("the reference printed no 'Best Experiment Chosen' line")
    return match.group(1), match.group(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed pairs (default 3)")
    args = parser.parse_args()
    for semantics in ("legacy", "uncached"):
        command = [*OURS, "--semantics", semantics]
        timed(command), timed(REFERENCE)  # warm-up
        pairs = []
        for _ in range(args.repeats):
            ours, our_out = timed(command)
            theirs, their_out = timed(REFERENCE)
            pairs.append((ours, theirs))
            if semantics == "legacy" and our_best(our_out) != reference_best(their_out):
                raise SystemExit(f"results differ: ours {our_best(our_out)}, reference {reference_best(their_out)}")
        ratios = [o / t for o, t in pairs]
        print(f"recommend --semantics {semantics}: ours " + ", ".join(f"{o:.2f}" for o, _ in pairs) + " s; reference "
              + ", ".join(f"{t:.2f}" for _, t in pairs) + f" s; ratio median {statistics.median(ratios):.3f}x "
              f"(runs {', '.join(f'{r:.3f}' for r in ratios)})")  # fmt: skip


if __name__ == "__main__":
    main()
