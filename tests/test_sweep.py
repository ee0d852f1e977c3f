"""Sweeps: the agg grid (budgets, guards, dedup, memory stops) in both semantics, batched pricing
equal to run_agg, prefix-0 identity, errors and warnings, refined-SLA mode, and the sweep command."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.cli import main
from estimator.closedloop import ROW, ReplayOptions
from estimator.deployment import Deployment
from estimator.disagg.search import Combo, WorkerLimits
from estimator.disagg.workers import Role, WorkerRow
from estimator.errors import InvalidInputError
from estimator.scheduler import AggEstimator, AggPoint, StaticMode, StaticPoint
from estimator.scheduler.static import run_static_batches
from estimator.steps import Semantics
from estimator.sweep import AGG_BATCH_SCHEDULE, AggGrid, AggOptions, DisaggOptions, Sla, Workload, sweep_agg, sweep_disagg
from estimator.sweep.agg import agg_grid
from estimator.sweep.driver import _per_deployment
from estimator.sweep.refined import KneeSearch, knee_row, ladder_tpot, solo_prefill_ms
from estimator.sweep.space import MoeSizes, moe_layouts, parallel_layouts, sweep_layouts

LEGACY, UNCACHED = Semantics.LEGACY, Semantics.UNCACHED
ROOT = Path(__file__).resolve().parents[1]
QWEN = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang")
LAYOUTS = parallel_layouts(QWEN, (1, 2, 4))
TARGETS = Sla(2000.0, (30.0, 50.0))


# ---------------------------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------------------------


def test_batch_schedule_is_the_reference_schedule():
    from aiconfigurator.sdk.sweep import _DEFAULT_AGG_BATCH_SCHEDULE

    assert list(AGG_BATCH_SCHEDULE) == _DEFAULT_AGG_BATCH_SCHEDULE


@given(st.integers(1, 70000), st.sampled_from([128, 512, 1000, 4096]), st.booleans())
def test_budgets_are_the_reference_budgets(isl, stride, chunked):
    from aiconfigurator.sdk.sweep import _agg_ctx_tokens_list

    assert AggGrid(isl, 100, ctx_stride=stride, chunked_prefill=chunked).ctx_tokens() == _agg_ctx_tokens_list(isl, stride, chunked)


def reference_walk(isl: int, osl: int, max_bs: int, dedup: bool) -> list[tuple[int, int]]:
    """The reference loop's (batch, budget) visits without pricing (sweep._sweep_one_parallel_agg), literally."""
    from aiconfigurator.sdk.sweep import _agg_ctx_tokens_list

    visits, capped_b = [], []
    for b in [b for b in AGG_BATCH_SCHEDULE if b <= max_bs]:
        for ctx_tokens in _agg_ctx_tokens_list(isl, 512, False):
            if b - np.ceil(ctx_tokens / isl) < 0:
                break
            if b > 1 and (b - np.ceil(ctx_tokens / isl) < 1):
                break
            if dedup:
                balance_score = isl * b / ctx_tokens / osl
                if balance_score > 1:
                    gen_tokens = b // balance_score
                    if gen_tokens > 1 and gen_tokens in capped_b:
                        continue
                    capped_b.append(gen_tokens)
            visits.append((b, ctx_tokens))
    return visits


@given(st.integers(1, 40000), st.integers(1, 3000), st.sampled_from([16, 512, 1024]), st.booleans())
def test_guards_and_dedup_visit_the_reference_points(isl, osl, max_bs, dedup):
    grid = AggGrid(isl, osl, max_batch_size=max_bs, dedup=dedup)
    assert [(b, c) for b, budgets in grid.rows() for c in budgets] == reference_walk(isl, osl, max_bs, dedup)


# ---------------------------------------------------------------------------------------------
# Agg sweep: pricing, semantics, memory stops
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("semantics,prefix", [(LEGACY, 0), (UNCACHED, 1024)])
def test_batched_rows_equal_run_agg_rows(semantics, prefix):
    deployment = LAYOUTS[1]
    table = sweep_agg([deployment], Workload(4096, 512, prefix), TARGETS, semantics=semantics).table
    estimator = AggEstimator(deployment, semantics)
    for row in table.to_dict("records")[::7]:
        point = AggPoint(4096, 512, row["bs"], row["ctx_tokens"], prefix)
        assert row == dict(estimator.estimate(point).row)


@pytest.mark.parametrize("isl,osl", [(4096, 512), (1000, 100)])
def test_prefix_zero_sweeps_are_identical_in_both_semantics(isl, osl):
    legacy, uncached = (sweep_agg(LAYOUTS, Workload(isl, osl), TARGETS, semantics=s) for s in (LEGACY, UNCACHED))
    assert legacy.table.to_csv(index=False) == uncached.table.to_csv(index=False)
    assert legacy.best.equals(uncached.best.round(3))


def test_prefix_grids_are_multiples_of_the_uncached_tokens():
    isl, prefix = 4096, 3072
    legacy, uncached = (sweep_agg(LAYOUTS[:1], Workload(isl, 512, prefix), TARGETS, semantics=s).table for s in (LEGACY, UNCACHED))
    assert set(uncached["ctx_tokens"] % (isl - prefix)) == {0} and {1024, 2048} <= set(uncached["ctx_tokens"])
    assert set(legacy["ctx_tokens"] % isl) == {0}
    assert uncached["bs"].min() == 1 and len(uncached) > len(legacy)


def test_batches_stop_at_their_first_oom_budget():
    deployment, workload = LAYOUTS[0], Workload(8192, 1024)
    kept = set(zip(*(sweep_agg([deployment], workload, TARGETS, semantics=LEGACY).table[c] for c in ("bs", "ctx_tokens"))))
    estimator, stops = AggEstimator(deployment, LEGACY), 0
    for b, budgets in agg_grid(deployment, workload, AggOptions(), LEGACY).rows():
        for ctx in budgets:
            if (b, ctx) not in kept:
                memory = estimator.estimate(AggPoint(8192, 1024, b, ctx)).memory
                assert memory.oom or memory.kv_oom
                stops += 1
                break
    assert stops > 0


@pytest.mark.parametrize(
    "field, value, message",
    [("max_seq_len", 0, "max_seq_len"), ("max_seq_len", -100, "max_seq_len"), ("free_gpu_memory_fraction", 0.0, "free_gpu_memory_fraction"),
     ("free_gpu_memory_fraction", 1.5, "free_gpu_memory_fraction")],
)  # fmt: skip
def test_workload_rejects_bad_memory_inputs(field, value, message):
    with pytest.raises(InvalidInputError, match=message):
        Workload(2000, 300, **{field: value})


@pytest.mark.parametrize("sweep", ["agg", "disagg"])
def test_prefix_at_or_above_isl_is_rejected_before_any_pricing(sweep):
    unknown = Deployment("no-such/model", "h200_sxm", "sglang")
    workload = Workload(1000, 10, prefix=1000)
    with pytest.raises(InvalidInputError, match=r"^prefix \(1000\) must be smaller than the effective isl \(1000\)"):
        if sweep == "agg":
            sweep_agg([unknown], workload, TARGETS)
        else:
            sweep_disagg([unknown], [unknown], workload, TARGETS)


def test_warnings_when_no_point_fits_or_meets_the_targets(caplog):
    llama70 = Deployment("meta-llama/Meta-Llama-3.1-70B", "h100_sxm", "vllm", tp=1, moe_tp=1, moe_ep=1)
    with caplog.at_level(logging.WARNING, logger="estimator.sweep"):
        result = sweep_agg([llama70], Workload(2048, 128), TARGETS)
    assert result.table.empty and result.best.empty
    assert "no grid point of tp1pp1dp1etp1ep1 passes the batch/budget guards and fits in memory" in caplog.text
    assert "no operating point meets the targets" in caplog.text


def test_a_deployment_that_cannot_be_priced_is_skipped_unless_all_are(caplog):
    bad = dataclasses.replace(LAYOUTS[0], quant=dataclasses.replace(QWEN.quant, gemm="no_such_mode"))
    with caplog.at_level(logging.WARNING, logger="estimator.sweep"):
        result = sweep_agg([bad, LAYOUTS[1]], Workload(4096, 512), TARGETS)
    assert set(result.table["tp"]) == {2} and "skipping h200_sxm tp1" in caplog.text
    with pytest.raises(InvalidInputError, match="no_such_mode"):
        sweep_agg([bad], Workload(4096, 512), TARGETS)


def test_request_latency_pairs_are_the_reference_pairs():
    from aiconfigurator.sdk.utils import enumerate_ttft_tpot_constraints

    for latency, ttft in ((40000.0, 1000.0), (900.0, 250.0), (120000.0, 1e4)):
        assert Sla(ttft, request_latency=latency).pairs(512) == enumerate_ttft_tpot_constraints(512, latency, ttft)


# ---------------------------------------------------------------------------------------------
# Disagg sweep
# ---------------------------------------------------------------------------------------------

LIMITS = DisaggOptions(limits=WorkerLimits(total_gpus=frozenset(range(1, 9)), same_tp=True))


def test_disagg_sweep_at_prefix_zero_differs_only_by_the_legacy_rounding():
    legacy, uncached = (sweep_disagg(LAYOUTS, LAYOUTS, Workload(4096, 512), TARGETS, LIMITS, s) for s in (LEGACY, UNCACHED))
    keys = ["(p)parallel", "(p)bs", "(p)workers", "(d)parallel", "(d)bs", "(d)workers"]
    assert legacy.best[keys].equals(uncached.best[keys])
    assert np.allclose(legacy.best["tokens/s/gpu"], uncached.best["tokens/s/gpu"], rtol=1e-3)
    assert not legacy.best["tokens/s/gpu"].equals(uncached.best["tokens/s/gpu"])


def test_disagg_uncached_prefill_batches_count_uncached_tokens():
    workload = Workload(8192, 256, prefix=6144)
    options = dataclasses.replace(LIMITS, prefill_max_num_tokens=8192)
    legacy, uncached = (sweep_disagg(LAYOUTS[:1], LAYOUTS[:1], workload, Sla(1e6, (1e6,)), options, s).table for s in (LEGACY, UNCACHED))
    assert set(legacy["(p)bs"]) == {1} and set(uncached["(p)bs"]) == {1, 2, 3, 4}


def test_best_disagg_rows_are_one_per_decode_layout_and_target():
    result = sweep_disagg(LAYOUTS, LAYOUTS, Workload(4096, 512), Sla(2000.0, (50.0,)), LIMITS, UNCACHED)
    assert result.best["(d)parallel"].is_unique and len(result.best) <= 5
    assert (result.best["tpot"] < 50.0).all() and (result.best["ttft"] < 2000.0).all()
    assert (result.best["num_total_gpus"] <= 8).all() and (result.best["(p)tp"] == result.best["(d)tp"]).all()
    assert result.best["tokens/s/gpu"].is_monotonic_decreasing and len(result.table) >= len(result.best)


# ---------------------------------------------------------------------------------------------
# Refined-SLA mode
# ---------------------------------------------------------------------------------------------


def test_solo_prefill_is_the_true_bound_not_the_ceil_gate():
    table = pd.DataFrame({"isl": [5000, 4096, 3000], "prefix": [0, 1024, 0], "ctx_tokens": [4096, 4096, 8192], "prefill_step_ms": [100.0] * 3})
    assert solo_prefill_ms(table).tolist() == [100.0 * 5000 / 4096, 100.0, 100.0]


def test_ladder_interpolates_and_clamps():
    ladder = [(1, 10.0), (8, 17.0), (8, 20.0), (16, 30.0)]
    assert [ladder_tpot(ladder, c) for c in (0.5, 1, 4.5, 8, 12, 99)] == [10.0, 10.0, 13.5, 20.0, 25.0, 30.0]


def tandem_combo(concurrency: int) -> Combo:
    """closed-loop.md section 5 case 14: 1P1D, (p)bs 1, (d)bs 64, prefill 2000 ms, decode step 21 ms, 4096/64."""
    row = {"model": QWEN.model, "isl": 4096, "osl": 64, "prefix": 0, "concurrency": concurrency, "(p)workers": 1, "(d)workers": 1,
           "(p)bs": 1, "(d)bs": 64, "(p)global_bs": 1, "(d)global_bs": 64, "(p)prefill_step_ms": 2000.0, "tpot": 21.0, "ttft": 3600.0,
           "encoder_latency": 0.0, "num_total_gpus": 2}  # fmt: skip
    worker = WorkerRow(QWEN, Role.PREFILL, {}, None, None)
    return Combo(row, worker, worker)


def test_knee_search_finds_the_largest_compliant_concurrency():
    search = KneeSearch(6000.0, 30.0, ReplayOptions(pricing=ROW))
    combo = tandem_combo(64)
    assert search.replay(combo, 64, 21.0)[0] > 6000.0
    tuned = search.tune(combo, ladder=[])
    assert tuned["concurrency"] == 3 and tuned["ttft"] <= 6000.0 and tuned["request_latency"] == pytest.approx(6000.0)
    assert search.replay(combo, 4, 21.0)[0] > 6000.0
    assert tuned["tokens/s"] == tuned["seq/s"] * 64 and tuned["tokens/s/gpu"] == tuned["tokens/s"] / 2
    assert KneeSearch(1.0, 30.0, ReplayOptions(pricing=ROW)).tune(combo, ladder=[]) is None


def test_unreplayable_combos_fail_open_and_the_rest_is_walked_best_first():
    search = KneeSearch(6000.0, 30.0, ReplayOptions(pricing=ROW))
    broken = tandem_combo(64)
    broken.row["(p)prefill_step_ms"] = -1.0
    assert search.tune(broken, ladder=[]) is broken.row
    slow, fits = tandem_combo(64), tandem_combo(1)
    slow.row["(p)prefill_step_ms"] = 7000.0
    picked = search([slow, slow, slow, fits], [])
    assert picked["concurrency"] == 1 and picked["ttft"] == pytest.approx(2000.0) and picked["tpot"] <= 30.0
    assert search.replayed == [picked]  # a returned row is flagged replayed only when its figures are the replay's
    broken.row["tokens/s/gpu"] = 1.0  # ranked (alone) among the knee candidates
    assert search([broken], []) is broken.row and search.replayed == [picked]


def test_knee_row_reprices_every_throughput_column():
    row = knee_row(tandem_combo(64).row, 5, (100.0, 20.0, 2.0))
    assert (row["concurrency"], row["request_latency"], row["seq/s/gpu"], row["tokens/s"], row["tokens/s/user"]) == (5, 1360.0, 1.0, 128.0, 50.0)


def test_fixed_point_prices_the_decode_step_at_the_little_occupancy():
    search = KneeSearch(1e9, 1e9, ReplayOptions(pricing=ROW))
    combo = tandem_combo(8)
    flat = search.priced(combo, 8, [])
    laddered = search.priced(combo, 8, [(1, 5.0), (64, 21.0)])
    assert flat == search.replay(combo, 8, 21.0) and laddered[1] < flat[1]


def test_refined_agg_sweep_judges_and_reprices_by_the_replay():
    options = ReplayOptions(pricing=ROW)
    result = sweep_agg(LAYOUTS[1:2], Workload(4096, 512), Sla(1500.0, (40.0,)), AggOptions(top_k=3), UNCACHED, refined=options)
    table = result.table
    replayed = table["refine_reason"] == ""
    assert replayed.any() and (~replayed).any()
    assert (table.loc[~replayed & table["ttft_refined"].isna(), "refine_reason"].str.startswith("not replayed")).all()
    best = result.best
    assert len(best) and (best["ttft"] <= 1500.0).all() and (best["tpot"] <= 40.0).all()
    merged = best.merge(table[["bs", "ctx_tokens", "ttft_refined", "throughput_refined"]], on=["bs", "ctx_tokens"])
    assert np.allclose(merged["ttft"], merged["ttft_refined"]) and np.allclose(merged["seq/s"], merged["throughput_refined"])


def test_refined_off_is_the_legacy_sweep():
    plain = sweep_agg(LAYOUTS[1:2], Workload(4096, 512), TARGETS, semantics=LEGACY)
    assert "ttft_refined" not in plain.table.columns


def test_refined_disagg_sweep_meets_the_targets_after_tuning():
    options = ReplayOptions(pricing=ROW)
    result = sweep_disagg(LAYOUTS[1:2], LAYOUTS[1:2], Workload(4096, 512), Sla(1500.0, (40.0,)), LIMITS, UNCACHED, refined=options)
    assert len(result.best) and (result.best["ttft"] <= 1500.0).all() and (result.best["tpot"] <= 40.0).all()
    assert result.best["replayed"].all() and result.rankings[0].equals(result.best)


# ---------------------------------------------------------------------------------------------
# The sweep command
# ---------------------------------------------------------------------------------------------

SWEEP = ["sweep", "--model-path", QWEN.model, "--system", QWEN.system, "--backend", "sglang", "--isl", "4096", "--osl", "512",
         "--ttft", "2000", "--tpot", "30", "50", "--tp-list", "1", "2"]  # fmt: skip


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sweep_writes_byte_identical_tables(tmp_path, suffix):
    paths = [tmp_path / f"run{i}{suffix}" for i in range(2)]
    outputs = [cli([*SWEEP, "--out", str(p), "--semantics", "legacy"]) for p in paths]
    assert [o[0] for o in outputs] == [0, 0] and outputs[0][1] == outputs[1][1]
    assert paths[0].read_bytes() == paths[1].read_bytes()
    table = pd.read_csv(paths[0]) if suffix == ".csv" else pd.read_parquet(paths[0])
    expected = sweep_agg(parallel_layouts(QWEN, (1, 2)), Workload(4096, 512), Sla(2000.0, (30.0, 50.0)), semantics=LEGACY)
    first = outputs[0][1].splitlines()[2].split()
    assert len(table) == len(expected.table) and [first[0], first[3], first[4]] == [
        expected.rankings[0]["parallel"][0],
        str(expected.rankings[0]["bs"][0]),
        str(expected.rankings[0]["ctx_tokens"][0]),
    ]


def test_sweep_disagg_prints_the_best_configurations():
    code, out, err = cli([*SWEEP[:-2], "2", "--mode", "disagg", "--progress", "always"])
    assert code == 0 and out.splitlines()[1].split()[:3] == ["(p)parallel", "(p)bs", "(p)workers"]
    assert "sweep [" in err and "4/4" in err


def test_autoscale_pairs_one_worker_each_and_ranks_by_tokens_per_gpu():
    options = DisaggOptions(autoscale=True)
    result = sweep_disagg(LAYOUTS, LAYOUTS, Workload(4096, 512), TARGETS, options, UNCACHED)
    best, table = result.best, result.table
    assert not best.empty and len(best) <= options.top_n and set(best["(p)workers"]) == set(best["(d)workers"]) == {1}
    assert best["tokens/s/gpu"].is_monotonic_decreasing and len(table) >= len(best)
    assert (best["ttft"] < TARGETS.ttft).all() and (best["tpot"] < max(TARGETS.tpots)).all()
    assert best["ttft"].tolist() == pytest.approx((best["(p)prefill_step_ms"] * options.calibration.ttft_factor).tolist(), rel=1e-12)
    assert table["(p)parallel"].value_counts().max() == table["(d)parallel"].nunique()  # one engine per layout and pool


@pytest.mark.parametrize("autoscale", [False, True])
def test_disagg_rows_carry_the_decode_progress(autoscale):
    """Matched and autoscaled rows record what one decode iteration commits (1 + accepted drafts),
    so a replay of the row advances that many tokens per decode pass."""
    mtp = [dataclasses.replace(d, nextn=2) for d in LAYOUTS[:2]]
    options = DisaggOptions(autoscale=True) if autoscale else LIMITS
    tables = [sweep_disagg(mtp, mtp, Workload(4096, 512, nextn_accepted=a), Sla(1e6, (1e6,)), options, UNCACHED).table for a in (0.0, 1.5)]
    assert not tables[1].empty and set(tables[0]["decode_tokens_per_iteration"]) == {1.0} and set(tables[1]["decode_tokens_per_iteration"]) == {2.5}


def test_autoscale_falls_back_to_the_closest_engines(caplog):
    with caplog.at_level(logging.WARNING):
        best = sweep_disagg(LAYOUTS, LAYOUTS, Workload(4096, 512), Sla(1.0, (1.0,)), DisaggOptions(autoscale=True), UNCACHED).best
    assert not best.empty and "no prefill candidate meets TTFT < 1 ms" in caplog.text and "no decode candidate meets TPOT < 1 ms" in caplog.text


@pytest.mark.parametrize("sla,refined,message", [
    (TARGETS, ReplayOptions(), "does not take refined SLAs"),
    (Sla(2000.0, (), request_latency=30000.0), None, "needs TPOT targets"),
])  # fmt: skip
def test_autoscale_rejects_what_it_cannot_honour_before_pricing(sla, refined, message, monkeypatch):
    monkeypatch.setattr("estimator.sweep.driver.worker_candidates", lambda *a, **k: pytest.fail("priced before the check"))
    with pytest.raises(InvalidInputError, match=message):
        sweep_disagg(LAYOUTS, LAYOUTS, Workload(4096, 512), sla, DisaggOptions(autoscale=True), UNCACHED, refined=refined)


LEAST_LATENCY = " (the least is 1e-06 ms, a clock's nanosecond)"


@pytest.mark.parametrize("argv,message", [
    (["--out", "table.txt"], "--out must end in .csv or .parquet, got 'table.txt'"),
    (["--prefix", "4096"], "prefix (4096) must be smaller than the effective isl (4096) for an agg run"),
    (["--tpot", "-1"], f"tpot target must be a positive number of ms, got -1.0{LEAST_LATENCY}"),
    (["--ttft", "1e-320"], f"ttft target must be a positive number of ms, got 1e-320{LEAST_LATENCY}"),  # an (infx) miss factor before
    (["--tpot", "50", "1e-320"], f"tpot target must be a positive number of ms, got 1e-320{LEAST_LATENCY}"),
    (["--request-latency", "1e-320"], f"request latency target must be a positive number of ms, got 1e-320{LEAST_LATENCY}"),
    (["--tp-list", "0"], "tp must be a positive integer, got 0"),
])  # fmt: skip
def test_sweep_bad_input_is_one_line_and_exit_2(argv, message):
    code, _, err = cli([*SWEEP, *argv])
    assert code == 2 and err.strip() == f"error: {message}"


def test_ctrl_c_leaves_the_rows_computed_so_far(tmp_path):
    out = tmp_path / "partial.csv"
    targets = [f"{10 + i / 10:g}" for i in range(2000)]  # a long sweep: one unit per target
    argv = [sys.executable, "-m", "estimator", *SWEEP[:-6], "--mode", "disagg", "--tpot", *targets, "--out", str(out), "--progress", "always"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    seen = ""
    while not any(int(n) > 0 for n in re.findall(r", (\d+) rows", seen)) and proc.poll() is None:
        seen += proc.stderr.read(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "partial table" in err and err.rstrip().endswith("interrupted")
    table = pd.read_csv(out)
    assert len(table) > 0 and list(table.columns)[:4] == ["model", "isl", "osl", "prefix"]


def test_moe_layouts_follow_the_reference_enumeration():
    """tp*dp = moe_tp*moe_ep, dp*tp*pp GPUs at most; TRT-LLM: no attention TP under attention DP;
    vLLM: no MoE TP with MoE EP. Dense models keep the dense enumeration."""
    sizes = MoeSizes(dp=(1, 2), moe_tp=(1, 2), moe_ep=(1, 2, 4))

    def shapes(backend: str) -> set[tuple[int, int, int, int]]:
        base = Deployment("Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", backend)
        return {(d.tp, d.attention_dp, d.moe_tp, d.moe_ep) for d in moe_layouts(base, (1, 2, 4), sizes=sizes)}

    sglang = shapes("sglang")
    assert all(tp * dp == mtp * mep for tp, dp, mtp, mep in sglang) and (2, 2, 2, 2) in sglang and (4, 2, 2, 4) in sglang
    assert shapes("trtllm") == {s for s in sglang if not (s[0] > 1 and s[1] > 1)}
    assert shapes("vllm") == {s for s in sglang if not (s[2] > 1 and s[3] > 1)}
    assert sweep_layouts(QWEN, (1, 2), sizes=sizes) == parallel_layouts(QWEN, (1, 2))
    with pytest.raises(InvalidInputError, match="moe_ep"):
        moe_layouts(Deployment("Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "sglang"), sizes=MoeSizes(moe_ep=(0,)))


def test_a_layout_that_raises_inside_its_search_is_skipped_with_its_reason(caplog):
    """One layout's failure (here an IndexError of its own search) costs that layout only; an
    interrupt surfacing as SystemError is never swallowed."""
    layouts = [Deployment(QWEN.model, QWEN.system, "sglang", tp=tp) for tp in (1, 2, 4)]

    def compute(d):
        if d.tp == 2:
            raise IndexError("index 0 is out of bounds")
        return [d.tp]

    ticks = []
    assert _per_deployment(layouts, compute, ticks.append) == [1, 4] and ticks == [[1], [], [4]]
    assert "skipping h200_sxm tp2 pp1 dp1: IndexError: index 0 is out of bounds" in caplog.text

    caplog.clear()
    with pytest.raises(IndexError):  # every layout fails: the first error alone, no warning per layout before it
        _per_deployment(layouts, lambda d: compute(dataclasses.replace(d, tp=2)), ticks.append)
    assert "skipping" not in caplog.text
    caplog.clear()
    late = [layouts[1], layouts[1], layouts[0]]  # the warnings held for the failures before the first priced layout are given then
    assert _per_deployment(late, compute, ticks.append) == [1] and caplog.text.count("skipping h200_sxm tp2") == 2

    def interrupted(d):
        raise SystemError("returned a result with an exception set")

    with pytest.raises(SystemError):
        _per_deployment(layouts, interrupted, ticks.append)


def test_a_worker_with_no_fitting_batch_prices_nothing():
    """The Qwen3-235B-A22B-FP8 h200 sglang disagg sweep over dp, moe-tp and moe-ep 1-8 died at
    layout 30 of 61 on reshaping the decode phase of a layout with no batch that fits (one GPU)."""
    deployment = Deployment("Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "sglang", tp=1, attention_dp=1, moe_tp=1, moe_ep=1)
    assert run_static_batches(deployment, StaticPoint(4096, 512, 1), (), StaticMode.GENERATION, "reference") == []
