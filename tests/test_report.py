"""The accuracy report: metrics, the method registry and batch error handling, the per-point CSV,
the rendered HTML's structure, and that the page loads in headless Chromium without console errors."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import math
import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from estimator import clear_caches
from estimator.cli import main
from estimator.closedloop import AggRun, Benchmark, replay_run
from estimator.errors import InvalidInputError, PerfDataMissingError
from estimator.report import KV_CAP_NOTE, METHOD_NAMES, analysis, methods, plots
from estimator.report.ablation import ABLATED_METHODS
from estimator.report.analysis import collate_reasons, reason_group
from estimator.report.batch import NOT_PRICED, Predictor, Progress, predict, predict_all
from estimator.report.comparison import Baseline, compare
from estimator.report.metrics import common_rows, error_stats, group_stats
from estimator.report.narrative import protocol_facts
from estimator.report.page import render_report
from estimator.report.points import (
    ADDED_POINT_COLUMNS,
    POINT_COLUMNS,
    bucket_order,
    concurrency_bucket,
    provenance_path,
    read_points,
    row_columns,
    write_points,
)
from estimator.settings import SGLANG_SHAPE_COMPILE_MS
from estimator.steps import Semantics
from measurements import builds
from measurements.loaders import load_silicon_sample
from measurements.mapping import DISAGG_INCOMPLETE, MappedRow, map_measurement

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROVENANCE = {"generated_utc": "2026-01-01 00:00:00 UTC", "git_head": "abc123", "packages": {"numpy": "2.0"}}


def point(id_, method, covered, ttft=None, tpot=None, reason="", **extra) -> dict:
    base = {
        "id": id_, "method": method, "covered": covered, "reason": reason, "note": "",
        "prefill_step_ms": 40.0 if covered else math.nan, "decode_step_ms": 9.0 if covered else math.nan,
        "ttft_pred_ms": ttft if covered else math.nan, "tpot_pred_ms": tpot if covered else math.nan,
        "ttft_meas_ms": 100.0, "tpot_meas_ms": 10.0, "system": "h200_sxm", "backend": "vllm", "mode": "agg",
        "model": "Qwen/Qwen3-32B", "concurrency": 8, "concurrency_bucket": "5-16", "isl": 1024, "osl": 128,
        "attention_dp": 1, "source": "inferencex", "engine_version": "0.19.0", "image": "vllm/vllm-openai:v0.19.0",
        "model_used": "Qwen/Qwen3-32B", "model_note": "", "layout_note": "", "data_version": "0.24.0",
        "version_note": "measured 0.19.0 is older than every data version (0.24.0, 0.27.0): nearest 0.24.0", "pricer": "native",
        "pricing": "native, SILICON" if covered else NOT_PRICED, "step_token_budget": 8192, "chunked_prefill": True, "stream_interval": 1, "recv_interval": 1, "engine_settings": "engine default",
        "replicate_group": f"group-{id_}",
    }  # fmt: skip
    return base | extra


@pytest.fixture
def fixture_points() -> pd.DataFrame:
    """Three rows: two predicted by the closed-form methods, one disagg row nobody predicts; the
    closed-loop methods are unavailable. One reason carries markup that must be escaped."""
    unavailable = "closed-loop replay not available (<script>alert(1)</script>)"
    rows = []
    for id_, ttft, tpot, extra in (("row-a", 80.0, 11.0, {}), ("row-b", 150.0, 9.0, {"backend": "sglang", "concurrency": 64, "concurrency_bucket": "17-64"})):
        rows += [point(id_, "legacy", True, ttft, tpot, **extra), point(id_, "uncached", True, ttft * 1.1, tpot, **extra)]
        rows += [point(id_, m, False, reason=unavailable, **extra) for m in ("closed_loop_steady", "closed_loop")]
    rows += [point("row-c", m, False, reason="disagg estimator not available", mode="disagg", pricer=None) for m in METHOD_NAMES]
    return pd.DataFrame(rows, columns=list(POINT_COLUMNS))


# ---- metrics ----------------------------------------------------------------------------------


def test_error_stats_of_known_errors():
    s = error_stats(np.array([110.0, 80.0, 300.0, 100.0]), np.array([100.0] * 4))  # errors +10%, -20%, +200%, 0
    assert s.n == 4
    assert s.mape == pytest.approx((0.1 + 0.2 + 2.0 + 0.0) / 4)
    assert s.median_ape == pytest.approx(0.15)
    assert s.within == pytest.approx((0.5, 0.75, 0.75))
    assert s.bias == pytest.approx(0.05)


def test_error_stats_of_nothing_is_nan():
    s = error_stats(np.array([]), np.array([]))
    assert s.n == 0 and math.isnan(s.mape) and math.isnan(s.bias)


def test_group_stats_counts_coverage(fixture_points):
    s = group_stats(fixture_points[fixture_points["method"] == "legacy"])
    assert (s.rows, s.covered) == (3, 2)
    assert s.ttft.mape == pytest.approx((0.2 + 0.5) / 2)


def test_common_rows_keep_only_rows_every_method_covered(fixture_points):
    common = common_rows(fixture_points, ["legacy", "uncached"])
    assert sorted(common["id"].unique()) == ["row-a", "row-b"]


@pytest.mark.parametrize("c, bucket", [(1, "1"), (3, "2-4"), (16, "5-16"), (64, "17-64"), (256, "65-256"), (8192, ">256"), (None, "unknown")],
                         ids=lambda v: str(v))  # fmt: skip
def test_concurrency_buckets(c, bucket):
    assert concurrency_bucket(c) == bucket
    assert bucket in bucket_order()


# ---- methods and the batch --------------------------------------------------------------------


@pytest.fixture(scope="module")
def dense_row():
    m = next(m for m in load_silicon_sample() if m.model == "meta-llama/Llama-3.1-70B" and m.source == "inferencex")
    return map_measurement(m)


@pytest.fixture(scope="module")
def undocumented_row():
    return map_measurement(next(m for m in load_silicon_sample() if m.model == "Qwen/Qwen3-32B" and m.source == "aic-gap-analysis"))


def test_registry_holds_the_four_methods_in_order_then_the_ablated_ones():
    assert tuple(methods.METHODS) == METHOD_NAMES + ABLATED_METHODS


def test_legacy_and_uncached_predict_a_dense_row(dense_row):
    for name in ("legacy", "uncached"):
        r = predict(dense_row, name)
        assert r.covered and r.ttft_pred_ms > 0 and r.tpot_pred_ms > 0, r.reason
        assert r.pricing == "native, SILICON"
    assert predict(dataclasses.replace(dense_row, inputs=None, reason="no inputs"), "legacy").pricing == NOT_PRICED


def test_only_legacy_prices_a_relabelled_row_as_recorded(dense_row):
    """A row whose columns contradict its id's layout: legacy prices the columns as recorded (the
    baseline's inputs), the other methods the id's layout."""
    m = dense_row.measurement
    relabelled = map_measurement(dataclasses.replace(m, agg=dataclasses.replace(m.agg, tp=2 * m.agg.tp)))
    assert relabelled.inputs == dense_row.inputs and relabelled.recorded.inputs.deployment.tp == 2 * m.agg.tp

    def figures(row, name):
        r = predict(row, name)
        return r.ttft_pred_ms, r.tpot_pred_ms

    assert figures(relabelled, "legacy") == figures(relabelled.recorded, "legacy") != figures(dense_row, "legacy")
    assert figures(relabelled, "uncached") == figures(dense_row, "uncached")


def test_closed_loop_replays_the_rows_run_protocol_and_engine_settings(dense_row):
    """closed_loop is the typed replay of the row's priced inputs under its recorded client protocol
    and engine settings; another budget moves it (the settings reach the replay)."""
    i, settings = dense_row.inputs, dense_row.measurement.settings
    run = methods.replay_input(dense_row)
    assert run == AggRun(i.deployment, i.isl, i.osl, i.batch_size, nextn_accepted=i.nextn_accepted)
    client = Benchmark(prompts_per_client=10, range_ratio=0.8, seed=0)  # InferenceX's client: its seed-0 length draws
    want = replay_run(run, settings, client)
    r = predict(dense_row, "closed_loop")
    assert (r.covered, r.ttft_pred_ms, r.tpot_pred_ms) == (True, want.stats.ttft_mean, want.stats.tpot_mean)
    assert replay_run(run, settings, Benchmark(prompts_per_client=10, range_ratio=0.8)).stats.ttft_mean != want.stats.ttft_mean
    smaller = replay_run(run, settings.replace(step_token_budget=256, chunked_prefill=True), client)
    assert smaller.stats.ttft_mean != want.stats.ttft_mean


def test_only_natively_modelled_rows_replay_with_their_kv_fraction():
    """Every InferenceX TRT-LLM agg row records its launch's KV-cache memory fraction; the replay caps
    by it only where the memory model is the native one (Llama), not the reference's (DeepSeek-R1)."""
    rows = {m.model: map_measurement(m) for m in load_silicon_sample()
            if m.engine == "trtllm" and m.mode == "agg" and m.settings.kv_free_memory_fraction is not None}  # fmt: skip
    llama, deepseek = rows["meta-llama/Llama-3.1-70B"], rows["deepseek-ai/DeepSeek-R1"]
    assert methods.kv_fraction(llama) == 0.9 and methods.kv_fraction(deepseek) is None
    assert deepseek.measurement.settings.kv_free_memory_fraction in (0.7, 0.75, 0.8)


def test_a_llama_run_queued_for_kv_room_replays_capped():
    """InferenceX's Llama-3.1-70B on one H200 at 1k/8k and C = 128 (TRT-LLM, fp8 KV, fraction 0.9)
    measured 369 s of TTFT waiting for KV room: the replay caps the running requests below C, says
    so, and predicts the queue to within 10%."""
    m = next(m for m in load_silicon_sample() if m.id == "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp1_ep1_417")
    row = map_measurement(m)
    replayed = methods.replay(row, "benchmark")
    assert 1 <= replayed.settings.max_num_seqs < 128 and replayed.settings.kv_free_memory_fraction == 0.9
    assert replayed.stats.ttft_mean == pytest.approx(m.ttft_ms, rel=0.1)
    assert f"{KV_CAP_NOTE} {replayed.settings.max_num_seqs} per rank" in predict(row, "closed_loop").note


def test_a_kv_capped_point_says_so():
    m = next(m for m in load_silicon_sample() if m.engine == "trtllm" and m.settings.kv_free_memory_fraction == 0.9)
    assert methods.kv_cap_note(m.settings, m) == ""
    assert methods.kv_cap_note(None, m) == ""
    note = methods.kv_cap_note(m.settings.replace(max_num_seqs=3), m)
    assert note.startswith(KV_CAP_NOTE) and "3 per rank" in note and "free_gpu_memory_fraction 0.9" in note


def test_a_row_on_a_shape_specializing_build_replays_with_its_compile():
    """A Qwen3.5 SGLang 0.5.9 run records SGLANG_SHAPE_COMPILE_MS in its settings, its points column says so,
    and the replay charges it (without it the same run is faster); the same run on vLLM compiles none, on a PD deployment
    its prefill workers compile alike."""
    m = next(m for m in load_silicon_sample() if m.model == "Qwen/Qwen3.5-397B-A17B" and m.engine_version == "0.5.9" and m.source == "inferencex")
    row = map_measurement(m)
    assert m.settings.shape_compile_ms == SGLANG_SHAPE_COMPILE_MS == row_columns(row)["shape_compile_ms"]
    assert builds.shape_compile_ms(dataclasses.replace(m, engine="vllm")) == 0.0
    assert builds.shape_compile_ms(dataclasses.replace(m, mode="disagg")) == SGLANG_SHAPE_COMPILE_MS
    run, protocol = methods.replay_input(row), methods.replay_protocol(m, "benchmark")
    charged = methods.replay(row, "benchmark").stats.ttft_mean
    assert charged == replay_run(run, m.settings, protocol, row.inputs.pricer).stats.ttft_mean
    assert charged > replay_run(run, m.settings.replace(shape_compile_ms=0.0), protocol, row.inputs.pricer).stats.ttft_mean


def test_benchmark_protocol_needs_a_documented_client(undocumented_row):
    assert predict(undocumented_row, "closed_loop_steady").covered
    r = predict(undocumented_row, "closed_loop")
    assert (r.covered, r.reason) == (False, "benchmark protocol not documented by the source (aic-gap-analysis)")


def test_a_failing_row_is_reported_not_raised(dense_row, monkeypatch):
    def boom(row):
        raise RuntimeError("kaboom\nsecond line")

    monkeypatch.setattr("estimator.report.batch.METHODS", {"legacy": boom})
    r = predict(dense_row, "legacy")
    assert (r.covered, r.reason) == (False, "RuntimeError: kaboom")


def test_batch_keeps_row_major_input_order(dense_row):
    other = map_measurement(next(m for m in load_silicon_sample() if m.mode == "disagg" and m.prefill.batch_size is None))
    results = predict_all([other, dense_row], ["uncached", "legacy"], workers=1, progress=None)
    assert [(r.id, r.method) for r in results] == [
        (other.measurement.id, "uncached"), (other.measurement.id, "legacy"),
        (dense_row.measurement.id, "uncached"), (dense_row.measurement.id, "legacy"),
    ]  # fmt: skip
    assert results[0].reason.startswith(DISAGG_INCOMPLETE)


def test_moe_rows_are_priced_through_the_reference_engine():
    """An MoE (MLA) agg row: reference-priced steps and facts; legacy equals the reference CLI row."""
    row = map_measurement(next(m for m in load_silicon_sample() if m.mode == "agg" and m.model == "deepseek-ai/DeepSeek-V3"
                               and m.engine == "sglang" and m.system == "h200_sxm"))  # fmt: skip
    assert row.inputs.pricer == "reference"
    r = predict(row, "legacy")
    assert r.covered and r.ttft_pred_ms > 0 and r.tpot_pred_ms > 0, r.reason


def test_points_carry_the_draft_depth():
    m = next(m for m in load_silicon_sample() if m.settings.nextn == 3)
    assert row_columns(map_measurement(m))["nextn"] == 3


def test_mtp_rows_commit_the_accepted_drafts_per_step_and_legacy_drafts_nothing():
    """A DeepSeek-R1 MTP run (3 drafts, 1.82 accepted per step): the uncached and closed-loop
    methods price verify steps of 4 query tokens that commit 2.82 tokens each, so TPOT falls below
    the same row priced without drafts; legacy prices the row as the baseline did, without drafts."""
    m = next(m for m in load_silicon_sample() if m.settings.nextn == 3 and m.concurrency == 4 and m.precision == "fp4")
    row = map_measurement(m)
    plain = map_measurement(dataclasses.replace(m, settings=m.settings.replace(nextn=0, nextn_accepted=0.0)))
    for name in ("uncached", "closed_loop"):
        drafted, undrafted = predict(row, name), predict(plain, name)
        assert drafted.covered and undrafted.covered, (drafted.reason, undrafted.reason)
        assert drafted.tpot_pred_ms < undrafted.tpot_pred_ms / 1.5
    assert predict(row, "legacy") == predict(plain, "legacy")


def test_a_silicon_miss_is_repriced_in_hybrid_mode_with_a_note():
    """Kimi-K2.5 int4 weight-only on h200/vLLM has no int4_wo GEMM rows: every method prices the row
    with the reference engine in HYBRID mode and says so."""
    row = map_measurement(next(m for m in load_silicon_sample() if m.mode == "agg" and m.model == "moonshotai/Kimi-K2.5"
                               and m.system == "h200_sxm" and m.engine == "vllm" and m.gemm_quant == "int4_wo"))  # fmt: skip
    assert methods.priced_inputs(row.inputs).pricer == "hybrid"
    r = predict(row, "uncached")
    assert r.covered and methods.HYBRID_NOTE in r.note


def _gpt_oss_row(system: str, engine: str) -> MappedRow:
    return map_measurement(next(m for m in load_silicon_sample() if m.mode == "agg" and m.model == "openai/gpt-oss-120b"
                                and m.system == system and m.engine == engine and m.agg.tp == 1))  # fmt: skip


def test_the_arithmetic_that_ran_is_priced_where_measured_and_legacy_keeps_the_labels():
    """A gpt-oss row on B200/TRT-LLM labelled nvfp4 (no SILICON data: the baseline's HYBRID retry):
    every method but legacy prices the checkpoint's MXFP4 experts with MXFP8 activations, which have
    SILICON data, and says so; legacy prices the labels in HYBRID mode as the baseline."""
    row = _gpt_oss_row("b200_sxm", "trtllm")
    assert methods.priced_inputs(row.inputs) == dataclasses.replace(row.inputs, pricer="hybrid")
    assert methods.priced_inputs(row.inputs, row.checkpoint_inputs) == row.checkpoint_inputs
    uncached, legacy = predict(row, "uncached"), predict(row, "legacy")
    assert methods.CHECKPOINT_NOTE in uncached.note and "w4a8_mxfp4_mxfp8" in uncached.note
    assert methods.HYBRID_NOTE in legacy.note and methods.CHECKPOINT_NOTE not in legacy.note
    assert (uncached.pricing, legacy.pricing) == ("reference engine, SILICON, kernels that ran", "reference engine, HYBRID")
    assert uncached.tpot_pred_ms != legacy.tpot_pred_ms


def test_the_arithmetic_that_ran_is_priced_before_labels_that_have_silicon_data(monkeypatch, fresh_caches):
    """Where both price with SILICON data, the checkpoint's modes win; where the checkpoint's fail in
    any way, the labels stand (and go to HYBRID mode only on a SILICON miss)."""
    row = _gpt_oss_row("h200_sxm", "vllm")
    priced = object()  # a closed-form outcome that is not an exception
    for checkpoint_outcome, labels_outcome, expected in (
        (priced, priced, row.checkpoint_inputs),
        (InvalidInputError("no"), priced, row.inputs),
        (PerfDataMissingError("no"), PerfDataMissingError("no"), dataclasses.replace(row.inputs, pricer="hybrid")),
    ):  # fmt: skip
        outcomes = {row.checkpoint_inputs: checkpoint_outcome, row.inputs: labels_outcome}
        monkeypatch.setattr(methods, "_closed_form_outcome", lambda inputs, semantics, ctx_tokens: outcomes[inputs])
        clear_caches()
        assert methods.priced_inputs(row.inputs, row.checkpoint_inputs) == expected


def test_closed_loop_methods_price_and_label_the_arithmetic_that_ran():
    row = _gpt_oss_row("b200_sxm", "trtllm")
    assert methods.replay_input(row).deployment == row.checkpoint_inputs.deployment
    r = predict(row, "closed_loop_steady")
    assert r.pricing == "reference engine, SILICON, kernels that ran" and methods.CHECKPOINT_NOTE in r.note


def test_checkpoint_modes_without_silicon_data_fall_back_to_the_labels_hybrid_retry():
    """B200/vLLM has no SILICON data for gpt-oss's experts with MXFP8 activations: the row is priced as
    the baseline prices it."""
    row = _gpt_oss_row("b200_sxm", "vllm")
    assert row.checkpoint_inputs is not None
    assert methods.priced_inputs(row.inputs, row.checkpoint_inputs) == dataclasses.replace(row.inputs, pricer="hybrid")
    assert predict(row, "uncached").note == predict(row, "legacy").note == methods.HYBRID_NOTE
    assert predict(row, "uncached").pricing == predict(row, "legacy").pricing == "reference engine, HYBRID"


def _minimax_h100_row() -> MappedRow:
    return map_measurement(next(m for m in load_silicon_sample() if m.mode == "agg" and m.model == "MiniMaxAI/MiniMax-M2.5"
                                and m.system == "h100_sxm" and m.engine == "vllm" and m.moe_quant == "fp8"))  # fmt: skip


def test_a_silicon_miss_at_the_labels_prices_the_checkpoint_granularity_before_hybrid():
    """MiniMax-M2.5 on H100/vLLM: the labelled per-tensor fp8 experts have no SILICON rows, the
    checkpoint's block-FP8 experts have. Every method but legacy prices them and says so; legacy
    keeps the baseline's HYBRID retry."""
    row = _minimax_h100_row()
    assert methods.priced_inputs(row.inputs) == dataclasses.replace(row.inputs, pricer="hybrid")
    uncached, legacy = predict(row, "uncached"), predict(row, "legacy")
    assert uncached.pricing == "reference engine, SILICON, checkpoint's scale granularity"
    assert methods.GRANULARITY_NOTE in uncached.note and "fp8/fp8_block (GEMMs/experts)" in uncached.note
    assert (legacy.pricing, legacy.note) == ("reference engine, HYBRID", methods.HYBRID_NOTE)
    assert uncached.tpot_pred_ms != legacy.tpot_pred_ms


def test_granularity_fallbacks_are_tried_in_order_only_after_a_silicon_miss(monkeypatch, fresh_caches):
    """The labels stand unless SILICON data miss an op (another error is the row's to report); then
    the first fallback that prices wins, and HYBRID mode only when none does."""
    row = _minimax_h100_row()
    first, second, _, kv = (f.inputs for f in row.granularity_fallbacks)
    assert row.granularity_fallbacks[-1].kv_cache and {d.quant.kvcache for d in kv.deployments} == {None}  # the reference's KV rule, last
    assert {d.quant.kvcache for d in row.inputs.deployments} == {"bfloat16"}  # vLLM's auto for MiniMax-M2.5's FP8 checkpoint
    priced, miss = object(), PerfDataMissingError("no")
    hybrid = dataclasses.replace(row.inputs, pricer="hybrid")
    for labels_outcome, first_outcome, expected in (
        (priced, priced, row.inputs),
        (InvalidInputError("no"), priced, row.inputs),
        (miss, priced, first),
        (miss, InvalidInputError("no"), second),
    ):  # fmt: skip
        outcomes = {row.inputs: labels_outcome, first: first_outcome}
        monkeypatch.setattr(methods, "_closed_form_outcome", lambda inputs, semantics, ctx_tokens: outcomes.get(inputs, priced))
        clear_caches()
        assert methods.priced_inputs(row.inputs, None, (first, second)) == expected
    monkeypatch.setattr(methods, "_closed_form_outcome", lambda inputs, semantics, ctx_tokens: miss)
    clear_caches()
    assert methods.priced_inputs(row.inputs, None, (first, second)) == hybrid


def _gpt_oss_moe_tp_row() -> MappedRow:
    return map_measurement(next(m for m in load_silicon_sample() if m.mode == "agg" and m.model == "openai/gpt-oss-120b"
                                and m.system == "h200_sxm" and m.engine == "trtllm" and m.agg.moe_tp == 2 and m.agg.moe_ep == 1))  # fmt: skip


def test_expert_parallel_equivalent_keeps_the_gpus_and_moves_expert_tp_to_ep():
    row = _gpt_oss_moe_tp_row()
    agg = dataclasses.replace(row.inputs, deployment=dataclasses.replace(row.inputs.deployment, moe_tp=2, moe_ep=4))
    assert (methods.expert_parallel_equivalent(agg).deployment.moe_tp, methods.expert_parallel_equivalent(agg).deployment.moe_ep) == (1, 8)
    ep_only = dataclasses.replace(row.inputs, deployment=dataclasses.replace(row.inputs.deployment, moe_tp=1, moe_ep=8))
    assert methods.expert_parallel_equivalent(ep_only) is None
    disagg = map_measurement(next(m for m in load_silicon_sample() if m.mode == "disagg" and m.prefill is not None
                                  and m.decode is not None and (m.prefill.moe_tp or 1) > 1 and map_measurement(m).inputs))  # fmt: skip
    swapped = methods.expert_parallel_equivalent(disagg.inputs)
    for before, after in zip(disagg.inputs.deployments, swapped.deployments, strict=True):
        assert after.moe_tp == 1 and after.moe_ep == (before.moe_tp or 1) * (before.moe_ep or 1)
        assert dataclasses.replace(after, moe_tp=before.moe_tp, moe_ep=before.moe_ep) == before


def test_a_moe_tp_layout_without_silicon_data_prices_its_ep_equivalent_and_legacy_keeps_hybrid():
    """gpt-oss on H200/TRT-LLM at MoE TP 2: the tables hold its MXFP4 experts at MoE EP only. Every
    method but legacy prices the checkpoint's modes at MoE EP 2 and says so; legacy keeps the
    baseline's HYBRID retry of the labels."""
    row = _gpt_oss_moe_tp_row()
    assert isinstance(methods._closed_form_outcome(row.checkpoint_inputs, Semantics.LEGACY, None), PerfDataMissingError)
    priced = methods.priced_inputs(row.inputs, row.checkpoint_inputs)
    assert priced == methods.expert_parallel_equivalent(row.checkpoint_inputs)
    assert methods.priced_inputs(row.inputs, row.checkpoint_inputs, (), False) == dataclasses.replace(row.inputs, pricer="hybrid")
    uncached, legacy = predict(row, "uncached"), predict(row, "legacy")
    assert uncached.pricing == "reference engine, SILICON, kernels that ran, MoE TP as EP"
    assert methods.CHECKPOINT_NOTE in uncached.note and methods.LAYOUT_NOTE in uncached.note
    assert (legacy.pricing, legacy.note) == ("reference engine, HYBRID", methods.HYBRID_NOTE)
    assert row.baseline.allow_ep_equivalents is False


def test_ep_equivalents_follow_each_candidate_in_the_chain(monkeypatch, fresh_caches):
    """checkpoint, its EP equivalent, then (after a SILICON miss at the labels) the labels' EP
    equivalent before any granularity fallback."""
    row = _gpt_oss_moe_tp_row()
    labels, checkpoint = row.inputs, row.checkpoint_inputs
    fallback = dataclasses.replace(labels, isl=labels.isl + 1)  # any other inputs with MoE TP
    priced, miss = object(), PerfDataMissingError("no")
    eq = methods.expert_parallel_equivalent
    for priced_set, expected in (
        ({eq(checkpoint), eq(labels), fallback}, eq(checkpoint)),
        ({eq(labels), fallback}, eq(labels)),
        ({fallback, eq(fallback)}, fallback),
        ({eq(fallback)}, eq(fallback)),
    ):  # fmt: skip
        monkeypatch.setattr(methods, "_closed_form_outcome", lambda inputs, s, c: priced if inputs in priced_set else miss)
        clear_caches()
        assert methods.priced_inputs(labels, checkpoint, (fallback,)) == expected


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream, lines", [(io.StringIO(), 10), (_Terminal(), 1)], ids=["log", "terminal"])
def test_progress_bar_redraws_on_a_terminal_and_logs_tenths_elsewhere(stream, lines):
    bar = Progress(200, stream)
    for _ in range(200):
        bar.advance(1)
    bar.close()
    text = stream.getvalue()
    assert text.count("\n") == lines and "200/200 rows" in text
    assert ("\r" in text) == isinstance(stream, _Terminal)


def comparable(results) -> list[tuple]:
    return [tuple(None if isinstance(v, float) and math.isnan(v) else v for v in vars(r).values()) for r in results]


def test_two_workers_give_the_serial_results_in_order(dense_row):
    sample = load_silicon_sample()
    rows = [map_measurement(m) for m in sample if m.mode == "disagg"][:3] + [dense_row]
    rows += [map_measurement(m) for m in sample if m.engine == "sglang" and m.model == "Qwen/Qwen3-32B"][:2]
    serial = predict_all(rows, ["legacy", "uncached"], workers=1, progress=None)
    assert comparable(predict_all(rows, ["legacy", "uncached"], workers=2, progress=None)) == comparable(serial)


def test_a_predictor_warms_its_workers_before_it_is_given_rows(dense_row, monkeypatch):
    """Entering starts the warm-ups (the caller maps its rows meanwhile); one predictor serves
    several batches, each equal to the serial results."""
    monkeypatch.setattr("estimator.report.batch.KERNEL_WARMERS", (functools.partial(sum, [1, 2]),))
    with Predictor(2, progress=None) as predictor:
        ((warm, future),) = predictor.warming
        assert future.result() == 3
        first, second = predictor.predict([dense_row], ["uncached"]), predictor.predict([dense_row], ["legacy"])
    assert comparable(first) == comparable(predict_all([dense_row], ["uncached"], workers=1, progress=None))
    assert comparable(second) == comparable(predict_all([dense_row], ["legacy"], workers=1, progress=None))


def test_a_failure_inside_a_predictor_stops_its_workers(monkeypatch):
    """A caller that fails (or is interrupted) while the workers warm up does not wait for them:
    leaving terminates the processes."""
    monkeypatch.setattr("estimator.report.batch.KERNEL_WARMERS", (functools.partial(time.sleep, 120),))
    with pytest.raises(RuntimeError, match="mapping failed"):
        with Predictor(2, progress=None) as predictor:
            processes = list(predictor.pool._processes.values())
            raise RuntimeError("mapping failed")
    pids = [process.pid for process in processes]  # the executor's own thread may reap them first, so ask the OS
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(_exited(pid) for pid in pids):
        time.sleep(0.05)
    assert pids and all(_exited(pid) for pid in pids)


def _exited(pid: int) -> bool:
    """The process is gone or a zombie (Linux /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def test_a_failing_kernel_warm_up_is_reported_and_the_batch_completes(dense_row, monkeypatch):
    """The warm-up is a speed-up: a warmer that raises (here int("no kernels")) is reported on the
    progress stream and the rows are still predicted."""
    monkeypatch.setattr("estimator.report.batch.KERNEL_WARMERS", (functools.partial(int, "no kernels"),))
    stream = io.StringIO()
    results = predict_all([dense_row], ["uncached"], workers=2, progress=stream)
    assert comparable(results) == comparable(predict_all([dense_row], ["uncached"], workers=1, progress=None))
    assert "kernel warm-up functools.partial(<class 'int'>, 'no kernels') failed (ValueError: invalid literal" in stream.getvalue()


# ---- the rendered page ------------------------------------------------------------------------


class Outline(HTMLParser):
    """Section ids, table rows per table id/class, svg and canvas counts, and text."""

    def __init__(self):
        super().__init__()
        self.sections, self.svgs, self.canvases, self.text = [], 0, 0, []
        self.tables: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.sections.append(attrs.get("id"))
        elif tag == "svg":
            self.svgs += 1
        elif tag == "canvas":
            self.canvases += 1
        elif tag == "table":
            self.tables.append({"id": attrs.get("id"), "section": self.sections[-1] if self.sections else None, "rows": 0})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"] += 1

    def handle_data(self, data):
        self.text.append(data)


def outline(html: str) -> Outline:
    parser = Outline()
    parser.feed(html)
    return parser


def test_report_has_every_section(fixture_points):
    page = outline(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES)))
    assert page.sections == ["headline", "coverage", "partitions", "plots", "closing", "mapping", "points", "provenance"]


def test_headline_has_a_row_per_method_and_the_reference(fixture_points):
    html = render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))
    headline = next(t for t in outline(html).tables if t["section"] == "headline")
    assert headline["rows"] == 2 + len(METHOD_NAMES) + 2  # two header rows, the methods, two reference lines
    assert "2 / 3" in html and "0 / 3" in html


def test_partition_tables_report_mape_median_and_bias_per_method(fixture_points):
    html = render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))
    partitions = [t for t in outline(html).tables if t["section"] == "partitions"]
    assert len(partitions) == 4
    assert partitions[0]["rows"] == 2 + 3  # two header rows; vllm agg, sglang agg, vllm disagg
    assert partitions[3]["rows"] == 2 + 1  # by pricing, covered points only: "native, SILICON"
    assert "<td>native, SILICON</td><td>2</td>" in html  # the rows with a point in the partition
    for label in ("TTFT MAPE", "TTFT med APE", "TTFT bias", "TPOT MAPE", "TPOT med APE", "TPOT bias"):
        assert label in html


def test_plots_cover_each_method_with_predictions(fixture_points):
    page = outline(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES)))
    assert (page.svgs, page.canvases) == (2 * 2, 2 * 2)  # histograms (SVG) and scatters (canvas) x (TTFT, TPOT) x (legacy, uncached)


def embedded_points(html: str) -> dict:
    """The per-point JSON a page embeds, with dictionary-coded fields decoded."""
    data = json.loads(re.search(r'<script type="application/json" id="point-data">(.*?)</script>', html, re.DOTALL).group(1))
    return data | {"fields": {key: f if isinstance(f, list) else [f["dict"][c] for c in f["codes"]] for key, f in data["fields"].items()}}


def test_per_point_data_has_one_entry_per_measurement(fixture_points):
    data = embedded_points(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES)))
    assert data["rows"] == 3 and data["methods"] == ["legacy", "uncached"]
    fields = data["fields"]
    assert fields["id"] == ["row-a", "row-b", "row-c"] and fields["backend"] == ["vllm", "sglang", "vllm"]
    assert fields["uncached_ttft_ms"] == [88.0, 165.0, None]  # row-c not predicted
    assert fields["uncached_reason"] == ["", "", "disagg estimator not available"]
    assert [c["key"] for c in data["columns"] if c["kind"] == "err"] == [f"{m}_{x}_err" for m in ("legacy", "uncached") for x in ("ttft", "tpot")]


def test_coverage_lists_every_reason(fixture_points):
    text = " ".join(outline(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))).text)
    assert "disagg estimator not available" in text
    assert "closed-loop replay not available (<script>alert(1)</script>)" in text  # as text, escaped in the markup


def test_mtp_rows_are_counted_in_the_protocol_facts(fixture_points):
    """A fact counts the rows that run MTP drafts and names their depths; without any, none is stated."""
    assert not [f for f in protocol_facts(fixture_points) if "MTP" in f]
    drafting = fixture_points.assign(nextn=[3 if i == "row-a" else 0 for i in fixture_points["id"]])
    (fact,) = [f for f in protocol_facts(drafting) if "MTP" in f]
    assert fact.startswith("1 rows run") and "(3 draft tokens" in fact and "2.82 tokens per step with 3 drafts" in fact


def test_shape_compiling_rows_are_counted_in_the_protocol_facts(fixture_points):
    """A fact counts the rows replayed with a per-shape compile and states its cost; without any, none is stated."""
    assert not [f for f in protocol_facts(fixture_points) if "Triton" in f]
    compiling = fixture_points.assign(shape_compile_ms=[90.0 if i == "row-a" else 0.0 for i in fixture_points["id"]])
    (fact,) = [f for f in protocol_facts(compiling) if "Triton" in f]
    assert fact.startswith("1 rows run SGLang builds") and "adds 90 ms" in fact


def test_seeded_rows_are_counted_in_the_protocol_facts(fixture_points):
    """A fact counts the rows whose client seed the replay repeats, per seed."""
    rows = fixture_points["id"].nunique()
    (plain,) = [f for f in protocol_facts(fixture_points) if "NumPy seed" in f]
    assert plain.startswith(f"0 of {rows} rows record")
    seeded = fixture_points.assign(client_seed=[1.0 if i == "row-a" else math.nan for i in fixture_points["id"]])
    (fact,) = [f for f in protocol_facts(seeded) if "NumPy seed" in f]
    assert fact.startswith(f"1 of {rows} rows record") and "NumPy seed (seed 1: 1 rows):" in fact
    assert f"0 of {rows} rows record their benchmark client's NumPy seed: closed_loop" in plain


def test_piecewise_graphed_rows_are_counted_apart_from_the_eager_ones(fixture_points):
    """Rows launched with piecewise CUDA graphs (eager_layer_ms 0) leave the eager count and get their own sentence."""
    trt = fixture_points.assign(backend="trtllm", eager_layer_ms=math.nan)
    (plain,) = [f for f in protocol_facts(trt) if "run eagerly" in f]
    assert "piecewise" not in plain
    graphed = trt.assign(eager_layer_ms=[0.0 if i == "row-a" else math.nan for i in trt["id"]])
    (fact,) = [f for f in protocol_facts(graphed) if "run eagerly" in f]
    rows = trt["id"].nunique()
    assert fact.startswith(f"{rows - 1} rows run SGLang or TensorRT-LLM") and "1 TensorRT-LLM rows launch piecewise CUDA graphs" in fact


def test_closing_note_shows_latency_in_step_prices(fixture_points):
    text = " ".join(outline(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))).text)
    assert "in units of the legacy step prices" in text
    assert "2.00" in text and "1.11" in text  # row-a: 80 ms TTFT over a 40 ms prefill step; 10 ms TPOT over a 9 ms decode step


def test_closing_note_shows_the_ttft_left_at_low_concurrency(fixture_points):
    """The primary method's agg points at C <= 8 per partition: measured minus predicted TTFT, in
    ms and in measured TPOTs; higher concurrencies stay out."""
    text = " ".join(outline(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))).text)
    assert "TTFT left unpredicted at low concurrency (uncached, agg, C ≤ 8)" in text
    (row,) = analysis.low_concurrency_residual(fixture_points[(fixture_points["method"] == "uncached") & fixture_points["covered"]])
    assert (row["backend"], row["n"], row["ttft_pred_ms"], row["gap_ms"]) == ("vllm", 1, 88.0, 12.0)  # row-a: 100 ms measured, 80 x 1.1
    assert row["gap_steps"] == pytest.approx(1.2)  # over its 10 ms measured TPOT; row-b (C = 64) is left out


def test_closing_note_shows_the_floor_replicates_set(fixture_points):
    """Two rows alike to an estimator but measured 100 and 200 ms apart: the best one prediction
    (100 ms) still errs 50% on the second, so the floor is 25% over the two; their own groups' rows
    have none."""
    twins = fixture_points.assign(replicate_group="twins")
    twins.loc[twins["id"] == "row-b", "ttft_meas_ms"] = 200.0
    text = " ".join(outline(render_report(twins, PROVENANCE, list(METHOD_NAMES))).text)
    assert "Measurement repeatability: the error no estimator of the recorded inputs can avoid (uncached)" in text
    hit = twins[(twins["method"] == "uncached") & twins["covered"]]
    *parts, total = analysis.replicate_floors(hit)["rows"]
    assert (total["backend"], total["n"], total["replicated"], total["ttft_floor"], total["tpot_floor"]) == ("all", 2, 2, 0.25, 0.0)
    assert total["ttft_mape"] == pytest.approx((0.12 + 0.175) / 2)  # 88 over 100 ms; 165 over 200 ms
    assert [(p["backend"], p["replicated"], p["ttft_floor"]) for p in parts] == [("sglang", 1, 0.5), ("vllm", 1, 0.0)]
    alone = analysis.replicate_floors(fixture_points[(fixture_points["method"] == "uncached") & fixture_points["covered"]])
    assert [r["ttft_floor"] for r in alone["rows"]] == [0.0, 0.0, 0.0]


def test_points_without_replicate_groups_render_no_floor(fixture_points, tmp_path):
    path = tmp_path / "old.csv"
    fixture_points.drop(columns="replicate_group").to_csv(path, index=False)
    points, _ = read_points(path)
    text = " ".join(outline(render_report(points, PROVENANCE, list(METHOD_NAMES))).text)
    assert "Measurement repeatability" not in text and "TTFT left unpredicted" in text


@pytest.mark.parametrize(
    "reason, group",
    [
        (
            'PerfDataMissingError: MoE data missing for MoeKey { quant: "fp8", topk: 8 } at /x/y/0.24.0',
            "PerfDataMissingError: MoE data missing for MoeKey {...}",
        ),
        (
            "GEMM perf data missing for quant 'nvfp4_wo' at /x/h200/1.3.0rc20; available: [\"fp8\"]",
            "GEMM perf data missing for quant 'nvfp4_wo'; available: [\"fp8\"]",
        ),
        ("disagg estimator not available", "disagg estimator not available"),
    ],
    ids=["braced-key-and-path", "path-mid-message", "plain"],
)
def test_reasons_are_grouped_without_row_detail(reason, group):
    assert reason_group(reason) == group


def test_reasons_differing_in_one_number_are_collated_with_the_values():
    counts = {f"num_heads 128 should be divisible by tp_size {tp}": n for tp, n in ((72, 20), (36, 11), (28, 8), (48, 4), (24, 3), (20, 2), (12, 2), (52, 2))}
    counts |= {"num_heads 32 should be divisible by tp_size 64": 15, "zero or missing parallel sizes": 8, "data for 0.24.0 missing": 1}
    assert collate_reasons(counts) == [
        ("num_heads 128 should be divisible by tp_size in {12, 20, 24, 28, 36, 48, ...}", 52),
        ("num_heads 32 should be divisible by tp_size 64", 15),  # its own line: another num_heads
        ("zero or missing parallel sizes", 8),
        ("data for 0.24.0 missing", 1),  # a version is not a number
    ]


def test_coverage_shows_collated_reasons(fixture_points):
    tp = fixture_points.assign(
        reason=[f"num_heads 128 should be divisible by tp_size {24 + 4 * i}" if not c else "" for i, c in enumerate(fixture_points["covered"])]
    )
    (legacy, *_) = analysis.coverage_breakdown(tp, list(METHOD_NAMES))
    assert legacy == ("legacy", 1, [("num_heads 128 should be divisible by tp_size 56", 1)])  # row-c alone
    text = " ".join(outline(render_report(tp, PROVENANCE, list(METHOD_NAMES))).text)
    assert "num_heads 128 should be divisible by tp_size in {32, 48, 64}" in text  # closed_loop_steady: rows a, b, c


def test_histogram_counts_every_point_with_labelled_edges_and_overflow():
    part = pd.DataFrame({"ttft_pred_ms": [0.0, 50.0, 100.0, 104.0, 500.0], "ttft_meas_ms": [100.0] * 5})  # -100%, -50%, 0, +4%, +400%
    h = plots.histogram(part, "uncached", "ttft")
    counts = [b.count for b in h.bars]
    assert sum(counts) == 5 and counts[0] == 1 and counts[5] == 1 and counts[10] == 2 and counts[-1] == 1
    assert h.bars[0].label == "-100% to -90%" and h.bars[10].label == "0% to +10%" and h.bars[-1].label == "> +200%"
    assert [label for _, _, label in h.x_labels] == ["-100%", "-50%", "0%", "+50%", "+100%", "+150%", "+200%", "> +200%"]
    assert min(x for x, _, _ in h.x_labels) >= h.left > 0  # the -100% tick sits inside the drawing
    assert [count for _, count in h.y_ticks] == [0, 1, 2]
    assert h.bars[10].y == pytest.approx(h.top)  # the tallest bar reaches the axis top


def test_same_points_render_byte_identical_html(fixture_points):
    baseline = Baseline(fixture_points, PROVENANCE, "old.csv")
    first = render_report(fixture_points, PROVENANCE, list(METHOD_NAMES), baseline)
    assert render_report(fixture_points.copy(), dict(PROVENANCE), list(METHOD_NAMES), baseline) == first


@pytest.fixture
def revised_points(fixture_points) -> pd.DataFrame:
    """fixture_points after a modelling change: uncached predicts row-a's TTFT 20% higher, legacy no longer predicts row-b."""
    new = fixture_points.copy()
    new.loc[(new["id"] == "row-a") & (new["method"] == "uncached"), "ttft_pred_ms"] *= 1.2
    lost = (new["id"] == "row-b") & (new["method"] == "legacy")
    new.loc[lost, ["covered", "reason", "ttft_pred_ms", "tpot_pred_ms"]] = [False, "disagg estimator not available", math.nan, math.nan]
    return new


def test_comparison_puts_old_and_new_side_by_side(fixture_points, revised_points):
    legacy, uncached, steady, _ = compare(revised_points, fixture_points, list(METHOD_NAMES))
    assert (steady.changed, steady.moved) == (0, [])
    assert (legacy.changed, legacy.gained, legacy.lost) == (1, 0, 1)
    title, label, old, new = uncached.groups[0]
    assert (title, label, uncached.changed) == ("all rows", "all", 1)
    assert old.ttft.mape == pytest.approx((0.12 + 0.65) / 2) and new.ttft.mape == pytest.approx((abs(80 * 1.1 * 1.2 - 100) / 100 + 0.65) / 2)
    assert [(g[0], g[1]) for g in uncached.groups[1:4]] == [("system x backend x mode", "h200_sxm / sglang / agg"), ("system x backend x mode", "h200_sxm / vllm / agg"),
                                                            ("system x backend x mode", "h200_sxm / vllm / disagg")]  # fmt: skip
    (moved,) = uncached.moved
    assert (moved["id"], moved["metric"], moved["old_ms"]) == ("row-a", "ttft", 88.0)
    assert moved["old_err"] == pytest.approx(-0.12) and moved["new_err"] == pytest.approx(0.056)


def test_cli_compares_with_a_baseline(fixture_points, revised_points, tmp_path):
    old, new, out = tmp_path / "old.csv", tmp_path / "new.csv", tmp_path / "report.html"
    write_points(fixture_points, old, PROVENANCE | {"git_head": "old123"})
    write_points(revised_points, new, PROVENANCE)
    assert main(["report", "--from-points", str(new), "--baseline", str(old), "--out", str(out)]) == 0
    page = outline(out.read_text())
    assert "comparison" in page.sections
    text = " ".join(page.text)
    assert (
        "old123" in text
        and "uncached: 1 of 3 rows changed" in text
        and "legacy: 1 of 3 rows changed (0 predicted now and not before, 1 before and not now)" in text
    )
    assert "closed_loop: 0 of 3 rows changed (0 predicted now and not before, 0 before and not now)" in text


@pytest.mark.parametrize(
    "change, named",
    [(lambda p: p[p["id"] != "row-c"], "1 ids only in the baseline (row-c)"),
     (lambda p: p.assign(ttft_meas_ms=p["ttft_meas_ms"].where(p["id"] != "row-b", 120.0)), "1 ids measured differently (row-b)")],
    ids=["fewer-rows", "other-measurement"],
)  # fmt: skip
def test_cli_refuses_a_baseline_of_other_measurements(fixture_points, tmp_path, capsys, change, named):
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    write_points(fixture_points, old, PROVENANCE)
    write_points(change(fixture_points), new, PROVENANCE)
    assert main(["report", "--from-points", str(new), "--baseline", str(old), "--out", str(tmp_path / "r.html")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and line.endswith(f"cover different measurements: {named}")


def test_markup_in_data_is_escaped(fixture_points):
    html = render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_page_is_self_contained(fixture_points):
    html = render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)


def test_provenance_is_shown(fixture_points):
    text = " ".join(outline(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))).text)
    assert "abc123" in text and "2026-01-01 00:00:00 UTC" in text


def test_points_csv_round_trip_renders_the_same_page(fixture_points, tmp_path):
    path = tmp_path / "points.csv"
    write_points(fixture_points, path, PROVENANCE)
    points, provenance = read_points(path)
    assert provenance == PROVENANCE
    assert render_report(points, provenance, list(METHOD_NAMES)) == render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))


def test_points_and_provenance_are_written_as_a_pair(fixture_points, tmp_path, monkeypatch, capsys):
    """A write interrupted between the two renames leaves the new table beside the old provenance: the
    provenance records the table's sha256, so the reader refuses the pair (one line, exit 2) instead of
    rendering new numbers under old provenance; no temporary file is left."""
    path = tmp_path / "points.csv"
    write_points(fixture_points, path, PROVENANCE | {"git_head": "old123"})
    replace = os.replace

    def interrupted(src, dst):
        if str(dst).endswith(".provenance.json"):
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_points(fixture_points.iloc[::-1], path, PROVENANCE)
    monkeypatch.setattr(os, "replace", replace)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["points.csv", "points.provenance.json"]
    assert "old123" in provenance_path(path).read_text()
    with pytest.raises(ValueError, match="provenance points.provenance.json was written with another points file"):
        read_points(path)
    assert main(["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was written with another points file" in err and not (tmp_path / "r.html").exists()


def test_points_provenance_without_a_sha256_is_read_as_before(fixture_points, tmp_path):
    """Points files written before the pair was bound carry no sha256 in their provenance."""
    path = tmp_path / "points.csv"
    write_points(fixture_points, path, PROVENANCE)
    record = json.loads(provenance_path(path).read_text())
    assert set(record) - set(PROVENANCE) == {"points_sha256"}
    del record["points_sha256"]
    provenance_path(path).write_text(json.dumps(record))
    assert read_points(path)[1] == PROVENANCE


def test_points_csv_without_added_columns_reads_their_defaults(fixture_points, tmp_path):
    path = tmp_path / "points.csv"
    write_points(fixture_points, path, PROVENANCE)
    provenance_path(path).unlink()  # a file of an older release: no provenance binding it
    pd.read_csv(path).drop(columns=list(ADDED_POINT_COLUMNS)).to_csv(path, index=False)
    points, _ = read_points(path)
    for column, default in ADDED_POINT_COLUMNS.items():
        assert (points[column].isna() if default is None else points[column] == default).all(), column
    pd.read_csv(path).drop(columns=["system"]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="system"):
        read_points(path)


def test_cli_rerenders_from_points(fixture_points, tmp_path):
    path, out = tmp_path / "points.csv", tmp_path / "report.html"
    write_points(fixture_points, path, PROVENANCE)
    assert main(["report", "--from-points", str(path), "--out", str(out)]) == 0
    assert 'id="point-table"' in out.read_text()


@pytest.mark.parametrize(
    "argv", [["--from-points", "/nonexistent/points.csv"], ["--limit", "0"], ["--workers", "0"]], ids=["missing-file", "zero-limit", "zero-workers"]
)
def test_cli_bad_input_exits_2(argv, tmp_path, capsys):
    assert main(["report", *argv, "--out", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def chromium_load(page: Path, profile: Path, view: str = "") -> tuple[int, list[str], str]:
    """Load a page in headless Chromium, with a view (the address's "#points?..." state) if given:
    (exit status, console lines, the DOM after scripts ran)."""
    run = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri() + view],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    return run.returncode, console, run.stdout


needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM), reason="Chromium not installed (Debian package `chromium`; .ci/run installs it)")


@needs_chromium
def test_page_loads_in_headless_chromium_without_console_errors(fixture_points, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_report(fixture_points, PROVENANCE, list(METHOD_NAMES)), encoding="utf-8")
    status, console, dom = chromium_load(page, tmp_path / "profile")
    assert status == 0
    assert not console, console
    assert 'data-ready="yes"' in dom  # the page script ran to its end


@needs_chromium
def test_chromium_check_catches_a_script_error(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>notDefined();document.body.dataset.ready = 'yes';</script></body></html>")
    _, console, dom = chromium_load(page, tmp_path / "profile")
    assert any("notDefined" in line for line in console)
    assert 'data-ready="yes"' not in dom


@pytest.fixture
def many_points() -> pd.DataFrame:
    """120 rows, vllm and sglang alternating; legacy predicts every third row not (a TTFT rising with
    the row number), uncached every row."""
    rows = []
    for i in range(120):
        extra = {"backend": "sglang" if i % 2 else "vllm"}
        rows.append(point(f"row-{i:03d}", "legacy", i % 3 != 0, 50.0 + i, 10.0, reason="disagg estimator not available", **extra))
        rows.append(point(f"row-{i:03d}", "uncached", True, 100.0, 10.0, **extra))
    return pd.DataFrame(rows, columns=list(POINT_COLUMNS))


def point_table_view(dom: str) -> tuple[str, list[list[str]]]:
    """The per-point table's status line and its rows' cell texts, from a dumped DOM."""
    status = re.search(r'id="point-status"[^>]*>([^<]*)<', dom).group(1)
    body = re.search(r'<table class="sortable" id="point-table">.*?<tbody>(.*?)</tbody>', dom, re.DOTALL).group(1)
    return status, [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


@needs_chromium
@pytest.mark.parametrize(
    "view, status, check",
    [
        ("", "rows 1\u2013100 of 120 matching (120 in all), page 1 of 2", lambda rows: [r[0] for r in rows[:2]] == ["row-000", "row-001"]),
        ("#points?page=2", "rows 101\u2013120 of 120 matching (120 in all), page 2 of 2", lambda rows: rows[0][0] == "row-100"),
        ("#points?filter=backend%3Dsglang", "rows 1\u201360 of 60 matching (120 in all), page 1 of 1", lambda rows: {r[2] for r in rows} == {"sglang"}),
        ("#points?filter=backend%3Dsglang+legacy_ttft_err%3E50", "rows 1\u20137 of 7 matching (120 in all), page 1 of 1",  # TTFT 50 + i over 100 ms: odd i > 100, no multiple of 3
         lambda rows: all(float(r[12].rstrip("%")) > 50 for r in rows)),
        ("#points?filter=legacy_ttft_ms%3D-", "rows 1\u201340 of 40 matching (120 in all), page 1 of 1", lambda rows: {r[11] for r in rows} == {"-"}),
        ("#points?sort=legacy_ttft_ms&dir=desc&size=500", "rows 1\u2013120 of 120 matching (120 in all), page 1 of 1",
         lambda rows: [r[11] for r in rows[:2]] == ["169", "168"] and {r[11] for r in rows[80:]} == {"-"}),  # not predicted last
        ("#points?sort=legacy_ttft_ms&size=500", "rows 1\u2013120 of 120 matching (120 in all), page 1 of 1",
         lambda rows: [r[11] for r in rows[:2]] == ["51", "52"] and {r[11] for r in rows[80:]} == {"-"}),  # last in this direction too
        ("#points?filter=nosuch%3D1", "rows 1\u2013100 of 120 matching (120 in all), page 1 of 2; ignored: unknown column nosuch", lambda rows: len(rows) == 100),
    ],
    ids=["first-page", "second-page", "filter", "two-terms", "not-predicted", "sort-descending", "sort-ascending", "unknown-column"],
)  # fmt: skip
def test_point_table_pages_filters_and_sorts_in_chromium(many_points, tmp_path, view, status, check):
    page = tmp_path / "report.html"
    page.write_text(render_report(many_points, PROVENANCE, list(METHOD_NAMES)), encoding="utf-8")
    code, console, dom = chromium_load(page, tmp_path / "profile", view)
    assert code == 0 and not console, console
    assert 'data-ready="yes"' in dom
    shown, rows = point_table_view(dom)
    assert shown == status
    assert check(rows), rows[:3]


@needs_chromium
def test_comparison_page_renders_in_chromium(fixture_points, revised_points, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_report(revised_points, PROVENANCE, list(METHOD_NAMES), Baseline(fixture_points, PROVENANCE, "old.csv")), encoding="utf-8")
    code, console, dom = chromium_load(page, tmp_path / "profile")
    assert code == 0 and not console, console
    assert 'data-ready="yes"' in dom and '<section id="comparison">' in dom
    assert "uncached: 1 of 3 rows changed" in dom


@pytest.mark.parametrize(("statistic", "expected"), [(None, (100.0, 10.0)), ("mean", (100.0, 10.0)), ("median", (90.0, 9.0)), ("p99", (300.0, 30.0))])
def test_closed_loop_reports_the_statistic_the_row_measured(statistic, expected):
    """The replay keeps mean, median and p99; a row that states its statistic is compared with that one."""
    import dataclasses as dc

    from estimator.closedloop.stats import LatencyStats
    from estimator.report.methods import replayed_statistic
    from measurements.loaders import load_silicon_sample
    from measurements.schema import Statistics

    stats = LatencyStats(100.0, 90.0, 300.0, 400.0, 10.0, 9.0, 30.0, 10.0, 9.0, 30.0, 1000.0, 1.0, 10, 1000.0)
    m = load_silicon_sample()[0]
    kept = None if statistic is None else Statistics(statistic, *([None] * 6))
    assert replayed_statistic(stats, dc.replace(m, statistics=kept)) == expected


def test_ablated_methods_render_their_table_in_the_error_sources_and_nowhere_else(fixture_points):
    """closed_loop and one ablated replay on the same two rows: the closing section gains the ablation
    table (a row per partition and metric, the mechanism's column); the headline keeps its methods."""
    covered = fixture_points[fixture_points["method"] == "uncached"]
    replayed = covered.assign(method="closed_loop")
    ablated = covered.assign(method="closed_loop-no-overlap", ttft_pred_ms=covered["ttft_pred_ms"] * 0.5)
    points = pd.concat([fixture_points[fixture_points["method"] != "closed_loop"], replayed, ablated], ignore_index=True)
    html = render_report(points, PROVENANCE, list(METHOD_NAMES))
    closing = [t for t in outline(html).tables if t["section"] == "closing"]
    assert "Ablation: closed_loop with each first-token mechanism switched off in turn" in html
    assert "<th>no overlap scheduling</th>" in html and any(t["rows"] == 1 + 2 * (1 + 3) for t in closing)  # head; per metric: its row, all, 2 partitions
    headline = next(t for t in outline(html).tables if t["section"] == "headline")
    assert headline["rows"] == 2 + len(METHOD_NAMES) + 2 and "closed_loop-no-overlap" not in html.split('id="closing"')[0]
    assert "Ablation" not in render_report(fixture_points, PROVENANCE, list(METHOD_NAMES))


def test_a_launch_kv_cache_without_silicon_data_prices_the_reference_rule_and_says_so():
    """Qwen3.5 FP8 on SGLang H200 launches an fp8 KV cache (qwen3.5_fp8_h200.sh); the tables hold none for its
    attention, so the row is priced at the reference's KV rule, labelled and noted, instead of going uncovered."""
    row = map_measurement(next(m for m in load_silicon_sample() if m.engine == "sglang" and m.system == "h200_sxm"
                               and m.model == "Qwen/Qwen3.5-397B-A17B" and m.mode == "agg"))  # fmt: skip
    assert {d.quant.kvcache for d in row.inputs.deployments} == {"fp8"}
    label, caveat = methods.pricing(row)
    assert label.endswith(methods.REFERENCE_KV_CACHE) and "fp8 KV cache" in caveat
    assert methods.priced_inputs(row.inputs, row.checkpoint_inputs, tuple(f.inputs for f in row.granularity_fallbacks)) == row.granularity_fallbacks[-1].inputs
