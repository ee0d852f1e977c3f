"""Pricing speed, native vs reference, measured side by side in one run.

    python -m benchmarks.bench_pricing [--repeats N]

Reports: per-op pricing throughput (GEMM and attention queries), per-step pricing (a full decode
step and a full context phase), cold start from import to first price for both pricers (fresh
processes), and the warm table load time. Every number is a median over repeats; ratios are
reference time / native time. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

from estimator.deployment import Deployment
from estimator.pricing import make_pricer, native_model
from estimator.pricing.native import NativePricer
from estimator.pricing.reference import price_ops_json
from parity.op_queries import make_queries, stack

DEPLOYMENT = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)


def _median_time(fn, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def per_op(family: str, n_queries: int, repeats: int) -> dict:
    """Seconds per op query: native (every query in one batched kernel call) vs one reference call per query."""
    from estimator.kernels.ops import price_each

    st = stack(DEPLOYMENT.system, DEPLOYMENT.backend.value)
    priced = [q for q in make_queries(family, st, n_queries, 7) if _reference_prices(st, q)]
    compiled = NativePricer(st, [q.op for q in priced], []).context
    shapes = np.array([[q.batch, q.s, q.prefix] for q in priced], dtype=np.float64)
    is_ctx = np.array([q.is_context for q in priced])

    def native():
        price_each(compiled.kinds, compiled.ints, compiled.floats, *st.kernel_tables, shapes, is_ctx)

    def reference():
        for q in priced:
            _reference_prices(st, q)

    native()
    return {
        "what": f"per-op {family}",
        "queries": len(priced),
        "native_s": _median_time(native, repeats) / len(priced),
        "reference_s": _median_time(reference, repeats) / len(priced),
    }


def _reference_prices(st, q) -> bool:
    try:
        price_ops_json(st.system, st.backend, st.version, [q.op.spec()], is_context=q.is_context, batch_size=q.batch, s=q.s, prefix=q.prefix)
        return True
    except Exception:  # noqa: BLE001 - misses are excluded from the throughput sample
        return False


def per_step(repeats: int) -> list[dict]:
    """Seconds per full phase priced (every op of the phase at one shape).

    Distinct shapes defeat both sides' memoization (the cost of a sweep or a replay); a repeated
    shape measures the memoized path (the cost of re-asking the same step)."""
    from estimator.pricing.native import NativePricer as Native

    native, reference = make_pricer("native", DEPLOYMENT), make_pricer("reference", DEPLOYMENT)
    rng = np.random.default_rng(11)
    rows = []
    for phase, n_ops in (("generation", len(native.generation_names)), ("context", len(native.context_names))):

        def shapes():
            b = rng.integers(1, 257, 200) if phase == "generation" else rng.integers(1, 9, 200)
            s = rng.integers(128, 32768, 200)
            return np.stack([b, s] if phase == "generation" else [b, s, np.zeros(200, dtype=np.int64)], axis=1)

        def fresh_native():
            model = native_model(DEPLOYMENT)
            pricer = Native(model.tables, model.ops.context, model.ops.generation)
            return pricer.generation_many if phase == "generation" else pricer.context_many

        nat = _median_time(lambda: fresh_native()(shapes()), repeats) / 200
        ref_many = reference.generation_many if phase == "generation" else reference.context_many
        ref = _median_time(lambda: ref_many(shapes()), repeats) / 200
        rows.append({"what": f"{phase} phase ({n_ops} ops), distinct shapes", "queries": 200, "native_s": nat, "reference_s": ref})
    nat = _median_time(lambda: native.generation_latencies(16, 33025), repeats * 50)
    ref = _median_time(lambda: reference.handle.decode_step_latency(16, 32768, 512), repeats * 50)
    rows.append({"what": "decode step, repeated shape (memoized)", "queries": 1, "native_s": nat, "reference_s": ref})
    return rows


_COLD_NATIVE = """
import time; t0 = time.perf_counter()
from estimator.deployment import Deployment
from estimator.pricing import make_pricer, native_model
p = make_pricer("native", Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2))
p.context_ops(4, 2048)
print(time.perf_counter() - t0)
"""

_COLD_REFERENCE = """
import time; t0 = time.perf_counter()
from aiconfigurator_core.sdk.engine import EngineHandle
e = EngineHandle.compile("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp_size=2)
e.evaluate_context_ops(list(range(14)), batch_size=4, s=2048)
print(time.perf_counter() - t0)
"""

_WARM_LOAD = """
import time
from estimator.perf import stack as S
t0 = time.perf_counter(); S.load_stack("h200_sxm", "sglang"); print(time.perf_counter() - t0)
"""


def _subprocess_seconds(code: str, env_extra: dict | None = None) -> float:
    import os

    env = dict(os.environ, **(env_extra or {}))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def cold_start(repeats: int) -> list[dict]:
    nat = statistics.median(_subprocess_seconds(_COLD_NATIVE) for _ in range(repeats))
    ref = statistics.median(_subprocess_seconds(_COLD_REFERENCE) for _ in range(repeats))
    with tempfile.TemporaryDirectory() as empty_cache:
        build = _subprocess_seconds(_WARM_LOAD, {"ESTIMATOR_CACHE_DIR": empty_cache})
    warm = statistics.median(_subprocess_seconds(_WARM_LOAD) for _ in range(repeats))
    return [
        {"what": "cold start: import to first price (warm caches)", "queries": 1, "native_s": nat, "reference_s": ref},
        {"what": "table load h200/sglang: parquet build (cold) vs disk cache (warm)", "queries": 1, "native_s": warm, "reference_s": build},
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [per_op("gemm", 300, args.repeats), per_op("context_attention", 300, args.repeats), per_op("generation_attention", 300, args.repeats)]
    rows += per_step(args.repeats)
    rows += cold_start(max(3, args.repeats // 2))
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'measurement':<62} {'native':>12} {'reference':>12} {'ratio':>8}")
    for r in rows:
        ratio = r["reference_s"] / r["native_s"] if r["native_s"] > 0 else float("inf")
        print(f"{r['what']:<62} {_fmt(r['native_s']):>12} {_fmt(r['reference_s']):>12} {ratio:>7.1f}x")
    print("(last row compares the warm disk-cache load (native column) with the cold parquet build (reference column))")
    return 0


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


if __name__ == "__main__":
    raise SystemExit(main())
