"""Disagg: static worker rows, the single-point row in both semantics, rate matching, the search
orderings, and the estimate command's disagg mode."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.cli import main
from estimator.deployment import Deployment
from estimator.disagg import DISAGG_ROLES, Calibration, DisaggPoint, Role, disagg_row, round_row, run_disagg, worker_row
from estimator.disagg.ranking import merge_ranked, quicksort_desc
from estimator.disagg.search import (
    DECODE_BATCH_SCHEDULE,
    WorkerLimits,
    decode_batch_sizes,
    fitting_batches,
    match_workers,
    prefill_batch_sizes,
    worker_candidates,
)
from estimator.errors import InvalidInputError, PerfDataMissingError
from estimator.pricing.native import NativePricer
from estimator.scheduler import StaticPoint
from estimator.steps import Semantics

LEGACY, UNCACHED = Semantics.LEGACY, Semantics.UNCACHED
QWEN = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)
VERIFIED = DisaggPoint(32768, 512, prefill_batch_size=1, prefill_workers=2, decode_batch_size=16, decode_workers=1)


def disagg(semantics: Semantics, point: DisaggPoint = VERIFIED, deployment: Deployment = QWEN) -> dict:
    return dict(run_disagg(deployment, deployment, point, semantics).row)


# ---------------------------------------------------------------------------------------------
# The verified example (legacy-semantics.md 3.2)
# ---------------------------------------------------------------------------------------------


def test_verified_legacy_row():
    r = disagg(LEGACY)
    assert (r["ttft"], r["tpot"], r["request_latency"]) == (3693.969, 23.299, 15599.758)
    assert (r["tokens/s"], r["tokens/s/gpu"], r["tokens/s/user"], r["seq/s"]) == (448.819, 74.803, 42.921, 0.877)
    assert (r["(p)seq/s/worker"], r["(d)seq/s/worker"], r["(p)memory"], r["(d)memory"]) == (0.487, 1.344, 27.402, 53.115)
    assert (r["num_total_gpus"], r["concurrency"], r["(p)workers"], r["(d)workers"]) == (6, 16, 2, 1)


@pytest.mark.parametrize("role", DISAGG_ROLES)
def test_worker_candidates_are_the_fitting_batches_priced_together(role):
    point, batches = StaticPoint(8192, 1024, 1), decode_batch_sizes(512)
    candidates = worker_candidates(QWEN, batches, point, role, LEGACY, Calibration())
    fitting = fitting_batches(QWEN, batches, point, role)
    assert 0 < len(fitting) < len(batches)  # the walk stops at the first batch that does not fit
    assert [c.row["bs"] for c in candidates] == fitting
    assert [c.row for c in candidates] == [worker_row(QWEN, dataclasses.replace(point, batch_size=b), role, LEGACY).row for b in fitting]


def test_a_batch_without_perf_data_is_skipped_and_the_others_kept(monkeypatch):
    point, batches = StaticPoint(2048, 256, 1), (1, 2, 8, 16)
    want = {c.row["bs"]: c.row for c in worker_candidates(QWEN, batches, point, Role.DECODE, LEGACY, Calibration())}
    priced = NativePricer.generation_many

    def missing_at_batch_8(self, shapes, scale=1.0):
        if (np.asarray(shapes)[:, 0] == 8).any():
            raise PerfDataMissingError("no generation data at batch 8")
        return priced(self, shapes, scale)

    monkeypatch.setattr(NativePricer, "generation_many", missing_at_batch_8)
    got = worker_candidates(QWEN, batches, point, Role.DECODE, LEGACY, Calibration())
    assert [c.row for c in got] == [want[b] for b in (1, 2, 16)]


def test_uncached_row_skips_the_intermediate_rounding():
    r = disagg(UNCACHED)
    assert (round(r["tokens/s"], 3), round(r["request_latency"], 3)) == (449.078, 15599.540)
    assert r["ttft"] == pytest.approx(3693.969, abs=5e-4) and r["ttft"] != round(r["ttft"], 3)


def test_worker_rows_apply_the_corrections_before_summing():
    point = StaticPoint(32768, 512, 1)
    prefill = worker_row(QWEN, point, Role.PREFILL, UNCACHED)
    assert prefill.row["ttft"] == pytest.approx(1865.641 * 1.1, abs=1e-3)
    assert sum(op.latency_ms for op in prefill.phase.ops) == pytest.approx(1865.641, abs=1e-3)
    decode = worker_row(QWEN, dataclasses.replace(point, batch_size=16), Role.DECODE, UNCACHED)
    assert decode.row["tpot"] == pytest.approx(11023.677 * 1.08 / 511, rel=1e-6)
    assert (decode.row["ttft"], decode.row["tokens/s"]) == (0.0, decode.row["seq/s"] * 511)


def test_legacy_combines_3_decimal_worker_rows():
    point = StaticPoint(32768, 512, 1)
    p, d = (worker_row(QWEN, dataclasses.replace(point, batch_size=b), r, UNCACHED).row for b, r in ((1, Role.PREFILL), (16, Role.DECODE)))
    assert disagg(LEGACY) == round_row(disagg_row(round_row(p), 2, round_row(d), 1, decode_tokens_per_iteration=1.0))
    assert disagg(UNCACHED) == disagg_row(p, 2, d, 1, decode_tokens_per_iteration=1.0)


def test_prefill_step_is_the_corrected_prefill_before_the_ttft_factor():
    for semantics in (LEGACY, UNCACHED):
        result = run_disagg(QWEN, QWEN, VERIFIED, semantics)
        assert result.row["(p)prefill_step_ms"] == result.prefill.row["ttft"] - result.prefill.row["encoder_latency"]
        assert result.row["ttft"] == pytest.approx(result.prefill.row["ttft"] * 1.8, abs=1e-3)


# ---------------------------------------------------------------------------------------------
# The combination formula
# ---------------------------------------------------------------------------------------------


def worker(**values) -> dict:
    base = {
        "model": "m", "isl": 1000, "osl": 101, "prefix": 0, "concurrency": 8, "bs": 8, "global_bs": 8, "ttft": 100.0,
        "tpot": 10.0, "seq/s": 2.0, "tokens/s/user": 100.0, "encoder_latency": 0.0, "encoder_memory": 0.0,
        "num_total_gpus": 2, "power_w": 0.0, **{c: c for c in ("parallel", "gemm", "kvcache", "fmha", "moe", "comm", "backend", "version", "system")},
        "tp": 2, "pp": 1, "dp": 1, "moe_tp": None, "moe_ep": None, "cp": 1, "memory": 10.0,
    }  # fmt: skip
    return {**base, **values}


@pytest.mark.parametrize("n_p,n_d,limited_by", [(1, 4, "prefill"), (4, 1, "decode")])
def test_rate_is_the_slower_degraded_pool(n_p, n_d, limited_by):
    row = disagg_row(worker(**{"seq/s": 3.0}), n_p, worker(**{"seq/s": 2.0}), n_d, decode_tokens_per_iteration=1.0)
    expected = 3.0 * n_p * 0.9 if limited_by == "prefill" else 2.0 * n_d * 0.92
    assert row["seq/s"] == row["request_rate"] == expected
    assert row["num_total_gpus"] == 2 * (n_p + n_d) and row["tokens/s"] == expected * 101
    assert row["ttft"] == 180.0 and row["request_latency"] == 180.0 + 10.0 * 100
    assert (row["(p)seq/s/worker"], row["(d)seq/s/worker"], row["concurrency"]) == (3.0, 2.0, 8 * n_d)


def test_calibration_factors_are_the_reference_defaults():
    assert Calibration() == Calibration(1.1, 1.08, 1.8, 0.9, 0.92)
    custom = disagg_row(
        worker(), 1, worker(), 1, Calibration(ttft_factor=1.0, prefill_degradation=1.0, decode_degradation=1.0), decode_tokens_per_iteration=1.0
    )
    assert (custom["ttft"], custom["seq/s"]) == (100.0, 2.0)


# ---------------------------------------------------------------------------------------------
# Speculative decoding, OOM, bad input
# ---------------------------------------------------------------------------------------------


def test_mtp_projection_divides_the_decode_step():
    mtp = dataclasses.replace(QWEN, nextn=2)
    plain = run_disagg(mtp, mtp, VERIFIED, UNCACHED)
    projected = run_disagg(mtp, mtp, dataclasses.replace(VERIFIED, nextn_accepted=1.5), UNCACHED)
    assert projected.row["tpot"] == pytest.approx(plain.row["tpot"] / 2.5, rel=1e-12)
    assert projected.decode.row["seq/s"] == pytest.approx(plain.decode.row["seq/s"] * 2.5, rel=1e-12)
    assert projected.row["ttft"] == plain.row["ttft"]
    assert (projected.row["decode_tokens_per_iteration"], plain.row["decode_tokens_per_iteration"]) == (2.5, 1.0)


def test_a_worker_that_does_not_fit_marks_the_row_oom():
    big = dataclasses.replace(VERIFIED, decode_batch_size=4096)
    result = run_disagg(QWEN, QWEN, big, LEGACY)
    assert result.oom and result.prefill.fits and not result.decode.fits


def test_prefill_and_decode_must_serve_one_model():
    other = dataclasses.replace(QWEN, model="Qwen/Qwen3-32B")
    with pytest.raises(InvalidInputError, match="different models"):
        run_disagg(QWEN, other, VERIFIED)


@pytest.mark.parametrize("field", ["prefill_workers", "decode_batch_size"])
def test_non_positive_worker_shapes_are_rejected(field):
    with pytest.raises(InvalidInputError, match=field):
        dataclasses.replace(VERIFIED, **{field: 0})


# ---------------------------------------------------------------------------------------------
# Search pieces: schedules, rate matching, orderings
# ---------------------------------------------------------------------------------------------


def test_batch_schedules():
    from aiconfigurator.sdk.sweep import _DEFAULT_DECODE_BATCH_SCHEDULE

    assert list(DECODE_BATCH_SCHEDULE) == _DEFAULT_DECODE_BATCH_SCHEDULE
    assert decode_batch_sizes(127)[-1] == 124 and decode_batch_sizes(1000)[-2:] == (512, 1000) and decode_batch_sizes(0) == (1,)
    assert list(prefill_batch_sizes(16384, 4096)) == [1, 2, 3, 4] and list(prefill_batch_sizes(1000, 4096)) == [1]


def match_workers_literal(p_rate, p_gpus, d_rate, d_gpus, limits: WorkerLimits, c: Calibration):
    """The reference's loop (sweep_disagg._match_workers without EPD), literally."""
    best, best_tpg = None, 0.0
    for d_num in limits.decode_workers:
        for p_num in limits.prefill_workers:
            if limits.max_prefill_gpus is not None and limits.max_decode_gpus is not None:
                if p_gpus * p_num > limits.max_prefill_gpus or d_gpus * d_num > limits.max_decode_gpus:
                    continue
            required = min(p_rate * p_num * c.prefill_degradation, d_rate * d_num * c.decode_degradation)
            gpus = p_gpus * p_num + d_gpus * d_num
            if limits.total_gpus and gpus not in limits.total_gpus:
                continue
            if required / gpus > best_tpg:
                best_tpg, best = required / gpus, (p_num, d_num)
    return best


@given(
    p_rate=st.floats(0.0, 50.0), d_rate=st.floats(0.0, 50.0), p_gpus=st.sampled_from([1, 2, 4, 8]),
    d_gpus=st.sampled_from([1, 2, 4, 8]), total=st.sampled_from([(), (8,), tuple(range(1, 9)), (6, 12)]),
    caps=st.sampled_from([(None, None), (4, 8), (8, None)]),
)  # fmt: skip
def test_vectorised_rate_matching_equals_the_reference_loop(p_rate, d_rate, p_gpus, d_gpus, total, caps):
    limits = WorkerLimits(total_gpus=frozenset(total), max_prefill_gpus=caps[0], max_decode_gpus=caps[1])
    c = Calibration()
    assert match_workers(p_rate, p_gpus, d_rate, d_gpus, limits, c) == match_workers_literal(p_rate, p_gpus, d_rate, d_gpus, limits, c)


@given(st.lists(st.integers(0, 6).map(lambda v: v / 4), max_size=60), st.sampled_from([np.float64, object]))
def test_quicksort_order_is_pandas_order(values, dtype):
    frame = pd.DataFrame({"x": pd.Series(values, dtype=dtype), "tag": ["t"] * len(values)})
    assert quicksort_desc(values, dtype).tolist() == frame.sort_values(by="x", ascending=False).index.tolist()


def test_merge_keeps_first_occurrences_then_ranks():
    assert merge_ranked([["a", "b"], ["b", "c"]], key={"a": 1.0, "b": 3.0, "c": 2.0}.get) == ["b", "c", "a"]


# ---------------------------------------------------------------------------------------------
# The estimate command
# ---------------------------------------------------------------------------------------------

DISAGG_ARGS = ["estimate", "--model-path", QWEN.model, "--system", QWEN.system, "--backend", "sglang", "--tp-size", "2",
               "--isl", "32768", "--osl", "512", "--estimate-mode", "disagg", "--prefill-batch-size", "1",
               "--prefill-num-workers", "2", "--decode-batch-size", "16", "--decode-num-workers", "1"]  # fmt: skip


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_estimate_disagg_json_is_the_row():
    code, out, _ = cli([*DISAGG_ARGS, "--semantics", "legacy", "--json"])
    assert code == 0 and json.loads(out) == disagg(LEGACY) | {"oom": False}


def test_estimate_disagg_summary_and_role_sizes():
    code, out, _ = cli([*DISAGG_ARGS, "--semantics", "legacy", "--decode-tp-size", "4"])
    assert code == 0 and "TTFT:             3693.969 ms" in out and "1 x decode tp4pp1dp1" in out
    code, out, _ = cli([*DISAGG_ARGS, "--detail", "time"])
    assert code == 0 and "Context phase (total = 1865.641 ms" in out and "Generation phase (total = 11023.677 ms" in out


def test_estimate_disagg_warns_on_oom():
    code, _, err = cli([*DISAGG_ARGS[:-3], "4096", "--decode-num-workers", "1"])
    assert code == 0 and "the decode worker" in err and "does not fit" in err


@pytest.mark.parametrize("drop,message", [("--prefill-num-workers", "--prefill-num-workers is required"),
                                          ("--decode-batch-size", "--decode-batch-size is required")])  # fmt: skip
def test_estimate_disagg_requires_worker_shapes(drop, message):
    i = DISAGG_ARGS.index(drop)
    code, _, err = cli(DISAGG_ARGS[:i] + DISAGG_ARGS[i + 2 :])
    assert code == 2 and err.strip() == f"error: {message} for --estimate-mode disagg"


def test_nan_free_rows():
    assert not any(isinstance(v, float) and math.isnan(v) for v in disagg(UNCACHED).values())
