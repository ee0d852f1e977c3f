"""Agg estimate speed, ours vs aiconfigurator 0.12.0: warm in-process latency and end-to-end CLI wall time.

Run: `python -m benchmarks.bench_agg`. Not a test: it prints medians and ratios for one operating point.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from estimator.deployment import Deployment
from estimator.pricing import native_model
from estimator.pricing.reference import reference_database
from estimator.scheduler import AggPoint, run_agg
from parity.agg_cases import reference_model

POINT_ARGS = {"model": "Qwen/Qwen3-32B-FP8", "system": "h200_sxm", "backend": "sglang", "tp": 2}
POINT = AggPoint(isl=32768, osl=512, batch_size=16, ctx_tokens=16384)


def per_call_ms(fn, calls: int) -> float:
    """Median over 5 rounds of the mean latency of `calls` warm calls, ms."""
    fn()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls * 1000.0)
    return statistics.median(rounds)


def reference_run_agg(deployment: Deployment):
    """aiconfigurator's run_agg with a fresh backend per call (its cache would otherwise answer)."""
    from aiconfigurator.sdk.backends.factory import get_backend
    from aiconfigurator.sdk.config import RuntimeConfig

    version = native_model(deployment).version
    model, database = reference_model(deployment, version), reference_database(deployment.system, deployment.backend.value, version)
    runtime = RuntimeConfig(batch_size=POINT.batch_size, isl=POINT.isl, osl=POINT.osl, prefix=POINT.prefix)
    return lambda: get_backend(deployment.backend.value).run_agg(model, database, runtime, ctx_tokens=POINT.ctx_tokens, decode_tokens_per_iteration=1.0)


def reference_cli_estimate():
    """aiconfigurator.cli.api.cli_estimate (builds model, database view and backend per call)."""
    from aiconfigurator.cli.api import cli_estimate

    return lambda: cli_estimate(
        POINT_ARGS["model"],
        POINT_ARGS["system"],
        mode="agg",
        backend_name=POINT_ARGS["backend"],
        isl=POINT.isl,
        osl=POINT.osl,
        batch_size=POINT.batch_size,
        ctx_tokens=POINT.ctx_tokens,
        tp_size=POINT_ARGS["tp"],
    )


def cli_seconds(argv: list[str], repeats: int) -> float:
    """Median wall time of a command, s."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cli_commands() -> tuple[list[str], list[str]]:
    shared = ["--model-path", POINT_ARGS["model"], "--system", POINT_ARGS["system"], "--backend", POINT_ARGS["backend"],
              "--tp-size", str(POINT_ARGS["tp"]), "--batch-size", str(POINT.batch_size), "--isl", str(POINT.isl),
              "--osl", str(POINT.osl), "--ctx-tokens", str(POINT.ctx_tokens)]  # fmt: skip
    ours = [sys.executable, "-m", "estimator", "estimate", *shared, "--semantics", "legacy"]
    theirs = ["aiconfigurator", "cli", "estimate", *shared]
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="warm calls per timing round")
    parser.add_argument("--repeats", type=int, default=3, help="CLI runs per command (median)")
    args = parser.parse_args()
    deployment = Deployment(POINT_ARGS["model"], POINT_ARGS["system"], POINT_ARGS["backend"], tp=POINT_ARGS["tp"])
    point = (
        f"{POINT_ARGS['model']} {POINT_ARGS['system']} {POINT_ARGS['backend']} tp{POINT_ARGS['tp']}, "
        f"bs {POINT.batch_size}, isl {POINT.isl}, osl {POINT.osl}, ctx_tokens {POINT.ctx_tokens}"
    )
    print(f"point: {point}")
    ours = {s: per_call_ms(lambda s=s: run_agg(deployment, POINT, s), args.calls) for s in ("legacy", "uncached")}
    theirs = per_call_ms(reference_run_agg(deployment), max(args.calls // 10, 10))
    theirs_api = per_call_ms(reference_cli_estimate(), 5)
    print(f"warm agg estimate: ours legacy {ours['legacy']:.3f} ms, ours uncached {ours['uncached']:.3f} ms")
    print(f"  reference run_agg (fresh backend) {theirs:.3f} ms -> ratio {theirs / ours['legacy']:.1f}x")
    print(f"  reference cli_estimate(mode='agg') {theirs_api:.3f} ms -> ratio {theirs_api / ours['legacy']:.1f}x")
    ours_cli, theirs_cli = (cli_seconds(c, args.repeats) for c in cli_commands())
    print(
        f"CLI wall time (median of {args.repeats}): ours {ours_cli:.2f} s, aiconfigurator cli estimate "
        f"{theirs_cli:.2f} s -> ours/theirs = {ours_cli / theirs_cli:.2f}"
    )


if __name__ == "__main__":
    main()
