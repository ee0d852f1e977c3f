"""Closed-loop replay: the reference cases of closed-loop.md section 5 (row pricing, steady protocol),
the section 6 corrections, engine pricing against the step composition, the DataFrame API and the
refine command."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from estimator.cli import main
from estimator.closedloop import (
    AggSpec,
    Benchmark,
    NoProgressError,
    ReplayOptions,
    Steady,
    TandemSpec,
    closed_loop_for_agg_row,
    compiled,
    filter_closed_loop_sla,
    oracle,
    pick_under_closed_loop_sla,
    refine_closed_loop_latency,
    replay_agg,
    replay_tandem,
    reprice_closed_loop_row,
    run_plan,
    solo_prefill_ms,
)
from estimator.closedloop.cases import replay_case
from estimator.closedloop.engine import PassModel, TableExtent, engine_tables, lattice
from estimator.closedloop.host import (
    HOST_POINTS,
    draft_layer_runs,
    eager_cost,
    every_pass_graphed,
    prefill_floor_ms,
    sglang_graphs_every_prefill,
)
from estimator.closedloop.lengths import benchmark_lengths, uniform_quantile_lengths
from estimator.closedloop.oracle import Request, _AdpBalance
from estimator.closedloop.pricing import CallablePricer, PassShape, affine_pricer, engine_pricer, flat_pricer
from estimator.closedloop.protocol import BURST_STEP_MS, RunPlan
from estimator.closedloop.quantile import nearest_rank, round_half_even
from estimator.closedloop.rows import agg_case, case_of
from estimator.closedloop.runs import AggRun, agg_engine_case, kv_capped
from estimator.deployment import Backend, Deployment, Role
from estimator.errors import InvalidInputError
from estimator.pricing import make_pricer
from estimator.scheduler import AggPoint, run_agg
from estimator.scheduler.facts import deployment_facts
from estimator.scheduler.memory import kv_pool_bytes, vllm_kv_pool_bytes
from estimator.scheduler.policies import POLICIES
from estimator.settings import (
    SGLANG_SHAPE_COMPILE_MS,
    TRTLLM_REQUEST_PATH_MS,
    VLLM_REQUEST_PATH_MS,
    EngineSettings,
    engine_defaults,
    kv_running_cap,
    served_kv_cache_dtype,
    system_defaults,
)
from estimator.steps import MixedShape, StepModel, decode_step, mixed_step

IMPLS = ("numba", "python")
ROW = ReplayOptions("row")


# The spec's test callables and their AFFINE encoding (the Numba replay's form of the same functions).
def pf(b, e, s):
    return 10 + 0.02 * b * max(0, e - s)


def dm(b, ctx):
    return max(1, 2 + 0.05 * b + 0.001 * ctx)


SPEC_CALLABLES = CallablePricer(pf, dm)
SPEC_AFFINE = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)


def matches(value: float, reference: str) -> bool:
    """value equals a reference figure to the digits it is given with (and to 1e-9 relative)."""
    decimals = len(reference.split(".")[1]) if "." in reference else 0
    return abs(value - float(reference)) <= 0.5 * 10.0**-decimals + 1e-9 * abs(float(reference))


def agg(clients, isl, osl, impl="numba", budget=8192, chunked=True, **facts):
    pricer = SPEC_CALLABLES if impl == "python" else SPEC_AFFINE
    return replay_agg(run_plan(Steady(), clients, isl, osl), AggSpec(EngineSettings(budget, chunked, overlap_scheduler=False), **facts), pricer, impl)


def tandem(clients, isl, osl, prefill_ms, decode_ms, impl="numba", **spec):
    spec = {"prefill_workers": 1, "decode_workers": 1} | spec
    pricers = flat_pricer(prefill_ms, 0.0), flat_pricer(0.0, decode_ms)
    return replay_tandem(run_plan(Steady(), clients, isl, osl), TandemSpec(**spec), *pricers, impl)


def reference_throughput(stats, decode_ms) -> float:
    """The reference tandem's throughput: its window ends at the launch of the last decode
    iteration instead of its end (one decode step short); ours ends at the last completion."""
    return stats.requests / ((stats.window_ms - decode_ms) / 1000)


# ---------------------------------------------------------------------------------------------
# Reference cases 1-10: the estimators with the cases' timing functions (both implementations)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
def test_case_01_agg_solo_request(impl):
    s = agg(1, 2048, 16, impl).stats
    assert s.ttft_mean == pf(1, 2048, 0)
    assert matches(s.ttft_mean, "50.96") and matches(s.tpot_mean, "4.106") and matches(s.throughput_rps, "8.88494")


@pytest.mark.parametrize("impl", IMPLS)
def test_case_02_agg_turnaround_and_identity(impl):
    s = agg(8, 2048, 64, impl, turnaround_ms=15.0).stats
    assert [matches(v, ref) for v, ref in ((s.ttft_mean, "276.97925"), (s.ttft_p50, "188.84"), (s.ttft_p99, "372.857"),
                                           (s.tpot_mean, "5.994107"), (s.throughput_rps, "12.221054"))] == [True] * 5  # fmt: skip
    cycle = 8 / s.throughput_rps * 1000
    assert matches(cycle, "654.608") and matches(s.ttft_mean + 63 * s.tpot_mean, "654.608")


@pytest.mark.parametrize("impl", IMPLS)
def test_case_03_agg_ttft_rises_with_concurrency(impl):
    ttfts = [agg(c, 4096, 64, impl).stats.ttft_mean for c in (1, 4, 16)]
    assert ttfts[0] < ttfts[1] < ttfts[2]
    assert [matches(v, ref) for v, ref in zip(ttfts, ("91.92", "98.198", "182.774"))] == [True] * 3


@pytest.mark.parametrize("impl", IMPLS)
def test_case_04_agg_prefix_cache_is_warmer(impl):
    cold, warm = (agg(4, 4096, 32, impl, prefix=p).stats.ttft_mean for p in (0, 3072))
    assert warm < cold and matches(warm, "91.92") and matches(cold, "98.18175")


@pytest.mark.parametrize("impl", IMPLS)
def test_case_05_chunking_changes_the_transient(impl):
    on, off = (agg(8, 6000, 16, impl, chunked=c).stats for c in (True, False))
    assert matches(on.ttft_max, "1060.908") and matches(off.ttft_max, "1097.416")
    assert on.ttft_max != off.ttft_max


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: run_plan(Steady(), 0, 2048, 16), id="agg-zero-clients"),
        pytest.param(lambda: agg(1, 2048, 16, prefix=2048), id="agg-prefix-equals-isl"),
        pytest.param(lambda: TandemSpec(0, 1), id="disagg-zero-prefill-workers"),
    ],
)
def test_case_06_invalid_inputs_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize("impl", IMPLS)
def test_case_07_disagg_solo_request(impl):
    s = tandem(1, 4096, 8, 2000.0, 21.0, impl, handoff_ms=5.0).stats
    assert s.ttft_mean == 2005.0 and s.tpot_mean == 21.0
    assert s.throughput_rps == pytest.approx(1000 / (2005 + 7 * 21), rel=1e-12)
    assert matches(reference_throughput(s, 21.0), "0.46582")


@pytest.mark.parametrize("impl", IMPLS)
def test_case_08_disagg_deep_queue_inflates_ttft_not_tpot(impl):
    shallow, deep = (tandem(c, 4096, 256, 2000.0, 21.0, impl, decode_max_seqs=64).stats for c in (2, 16))
    assert deep.ttft_mean > 4 * shallow.ttft_mean and deep.tpot_mean == pytest.approx(shallow.tpot_mean, rel=0.05)
    assert (shallow.ttft_mean, deep.ttft_mean) == (2000.0, 26634.875)
    assert matches(shallow.tpot_mean, "21.0627") and matches(deep.tpot_mean, "21.0396")


@pytest.mark.parametrize("impl", IMPLS)
def test_case_09_disagg_decode_slots_inflate_tpot(impl):
    few, many = (tandem(c, 1024, 256, 500.0, 21.0, impl, prefill_workers=2, decode_max_seqs=4).stats for c in (4, 12))
    assert many.tpot_mean > 2 * few.tpot_mean and many.ttft_mean < 3 * few.ttft_mean
    assert matches(few.tpot_mean, "21.0157") and matches(many.tpot_mean, "61.0392") and few.ttft_mean == many.ttft_mean == 500.0


@pytest.mark.parametrize("impl", IMPLS)
def test_case_10_disagg_second_prefill_worker(impl):
    one, two = (tandem(8, 4096, 256, 2000.0, 21.0, impl, prefill_workers=p).stats.ttft_mean for p in (1, 2))
    assert two < one and matches(one, "10635.03") and matches(two, "2635.44")


# ---------------------------------------------------------------------------------------------
# Reference cases 11-16: the DataFrame API
# ---------------------------------------------------------------------------------------------

AGG_ROW = {"model": "m", "parallel": "tp4", "bs": 4, "isl": 2048, "osl": 32, "ctx_tokens": 8192, "prefill_step_ms": 50.96,
           "genonly_step_ms": 5.0, "ttft": 80.0, "tpot": 4.5, "tokens/s": 100.0}  # fmt: skip
DISAGG_ROW = {"model": "m", "concurrency": 8, "isl": 4096, "osl": 64, "(p)workers": 1, "(d)workers": 1, "(p)bs": 1, "(d)bs": 64,
              "(p)prefill_step_ms": 2000.0, "tpot": 21.0, "ttft": 3600.0, "num_total_gpus": 2, "seq/s": 1.0,
              "tokens/s": 64.0, "tokens/s/gpu": 32.0, "request_latency": 4923.0}  # fmt: skip


def refined(rows, options=ROW) -> pd.DataFrame:
    return refine_closed_loop_latency(pd.DataFrame(rows), options)


def row_case(row):
    return case_of(row, ROW)


def test_case_11_refine_adds_columns_and_keeps_the_input():
    df = pd.DataFrame([AGG_ROW, AGG_ROW | {"bs": 0}])
    before = df.copy()
    out = refine_closed_loop_latency(df, ROW)
    pd.testing.assert_frame_equal(df, before)
    pd.testing.assert_frame_equal(out[list(df.columns)], before)
    good, bad = out.iloc[0], out.iloc[1]
    assert [matches(v, r) for v, r in zip(good[["ttft_refined", "tpot_refined", "throughput_refined"]], ("203.84", "5.0", "11.14703"))] == [True] * 3
    assert good.refine_reason == ""
    assert math.isnan(bad.ttft_refined) and math.isnan(bad.tpot_refined) and math.isnan(bad.throughput_refined)
    assert "bs" in bad.refine_reason
    assert 4 / good.throughput_refined * 1000 == pytest.approx(good.ttft_refined + 31 * good.tpot_refined, rel=0.02)


def test_case_12_filter_tightens_only_where_priced():
    df = pd.DataFrame([AGG_ROW, AGG_ROW | {"bs": 0}])
    before = df.copy()
    ttft = refined([AGG_ROW]).ttft_refined[0]
    assert list(filter_closed_loop_sla(df, ttft_ms=ttft - 1, options=ROW).index) == [1]
    assert list(filter_closed_loop_sla(df, ttft_ms=ttft + 1, tpot_ms=1e9, options=ROW).index) == [0, 1]
    pd.testing.assert_frame_equal(df, before)


def test_case_13_pick_falls_back_to_a_compliant_batch():
    small, large = AGG_ROW | {"bs": 2, "tokens/s": 10.0}, AGG_ROW | {"bs": 16, "tokens/s": 20.0}
    out = refined([small, large])
    assert [matches(v, r) for v, r in zip(out.iloc[0][["ttft_refined", "tpot_refined", "throughput_refined"]], ("101.92", "5.0", "7.78452"))] == [True] * 3
    assert [matches(v, r) for v, r in zip(out.iloc[1][["ttft_refined", "tpot_refined", "throughput_refined"]], ("161.0716", "26.2685", "15.96544"))] == [
        True
    ] * 3
    midpoint = (out.ttft_refined[0] + out.ttft_refined[1]) / 2
    assert filter_closed_loop_sla(pd.DataFrame([large]), ttft_ms=midpoint, options=ROW).empty
    assert list(pick_under_closed_loop_sla(pd.DataFrame([small, large]), ttft_ms=midpoint, options=ROW).bs) == [2]


def test_case_14_disagg_row():
    row = refined([DISAGG_ROW]).iloc[0]
    assert row.ttft_refined == 14677.0 and row.tpot_refined == pytest.approx(21.0, rel=0.05)
    assert row.throughput_refined == pytest.approx(0.5, rel=1e-12)  # prefill-bound: one prompt per 2000 ms
    stats = replay_case(case_of(DISAGG_ROW, ROW)).stats
    assert matches(reference_throughput(stats, 21.0), "0.500164")


def test_case_15_knee_concurrency():
    ttft = refined([DISAGG_ROW | {"concurrency": c} for c in range(1, 65)]).set_index("concurrency").ttft_refined
    assert ttft[64] == 126677.0
    knee = int(ttft[ttft <= 6000.0].index.max())
    assert knee == 3 and (ttft[knee], ttft[knee + 1]) == (4677.0, 6677.0)
    tuned = reprice_closed_loop_row(DISAGG_ROW | {"concurrency": knee}, ROW)
    assert tuned["request_latency"] == 6000.0 and tuned["tokens/s"] == tuned["seq/s"] * 64
    assert tuned["tokens/s/gpu"] == tuned["tokens/s"] / 2
    assert matches(reference_throughput(replay_case(row_case(DISAGG_ROW | {"concurrency": 3})).stats, 21.0), "0.500438")


def test_case_16_reprice_disagg_row():
    before = dict(DISAGG_ROW)
    out = reprice_closed_loop_row(DISAGG_ROW, ROW)
    assert DISAGG_ROW == before
    assert out["ttft"] != 3600.0 and out["ttft"] > 2000.0 and out["ttft"] == 14677.0
    assert out["request_latency"] == out["ttft"] + 63 * out["tpot"] == 16000.0
    assert out["tokens/s"] == out["seq/s"] * 64 and out["tokens/s/gpu"] == out["tokens/s"] / 2
    missing = {k: v for k, v in DISAGG_ROW.items() if k != "(p)prefill_step_ms"}
    assert reprice_closed_loop_row(missing, ROW) == missing


# ---------------------------------------------------------------------------------------------
# Quantile rule, lengths, engine defaults
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,q,rank", [(5, 0.5, 2), (7, 0.5, 4), (50, 0.99, 50), (1, 0.99, 1), (4, 0.5, 2), (200, 0.99, 198)])
def test_nearest_rank_quantile(n, q, rank):
    assert nearest_rank(list(range(n, 0, -1)), q) == rank


def test_nearest_rank_of_nothing_is_nan():
    assert math.isnan(nearest_rank([], 0.5))


@pytest.mark.parametrize("x,rounded", [(2.5, 2), (3.5, 4), (0.5, 0), (1.5000001, 2), (-0.5, 0), (49.5, 50)])
def test_round_half_even_matches_python(x, rounded):
    assert round_half_even(x) == rounded == round(x)


def test_uniform_lengths_are_evenly_spaced_quantiles():
    lengths = uniform_quantile_lengths(1000, 0.8, 20)
    assert lengths.min() >= 800 and lengths.max() <= 1000 and list(lengths) == sorted(lengths)
    assert list(uniform_quantile_lengths(7, 1.0, 3)) == [7, 7, 7]


# prompt counts of benchmark runs (prompts per client x concurrency); at 20, 80 and 180 the earlier dealing (a, a**2 mod N)
# put the output lengths in dispatch order (a**2 = 1 mod N), 80 being InferenceX's concurrency 8 at 10 prompts per client
@pytest.mark.parametrize("count", [16, 20, 40, 80, 100, 180, 640, 1280, 20480])
def test_benchmark_lengths_are_dealt_in_a_mixed_order(count):
    isl, osl = benchmark_lengths(1024, 1024, 0.8, count)
    assert sorted(isl) == sorted(osl) == sorted(uniform_quantile_lengths(1024, 0.8, count))
    assert list(isl) != sorted(isl) and list(isl) != list(osl)
    order = np.arange(count)
    for a, b in ((order, isl), (order, osl), (isl, osl)):
        assert abs(np.corrcoef(a, b)[0, 1]) < 0.25


@pytest.mark.parametrize("clients,per_client", [(8, 10), (4, 20), (2, 10), (16, 5), (64, 10)])
def test_a_first_wave_draws_outputs_across_the_range(clients, per_client):
    _, osl = benchmark_lengths(1024, 1024, 0.8, clients * per_client)
    low, high = int(0.8 * 1024), 1024
    assert abs((osl[:clients].mean() - low) / (high - low) - 0.5) < 0.2  # not the shortest (or longest) outputs together


def _client_sample_random_requests(seed: int, isl: int, osl: int, ratio: float, count: int) -> tuple[list[int], list[int]]:
    """The length draws of vLLM benchmark_serving.py's random dataset as InferenceX and sa-bench run it (no prefix, no
    chat template): np.random.seed(args.seed) in main, then sample_random_requests' calls in their order."""
    np.random.seed(seed)
    np.random.randint(0, 129280, size=0)  # prefix_token_ids (prefix_len 0)
    ins = np.random.randint(int(isl * ratio), isl + 1, size=count)
    outs = np.random.randint(int(osl * ratio), osl + 1, size=count)
    np.random.randint(0, 129280, size=count)  # offsets
    return ins.tolist(), outs.tolist()


@pytest.mark.parametrize("seed,isl,osl,count", [(0, 1024, 1024, 5), (0, 8192, 1024, 640), (1, 1024, 8192, 80), (7, 100, 3, 12)])
def test_client_draws_repeat_the_clients_own_lengths(seed, isl, osl, count):
    ins, outs = benchmark_lengths(isl, osl, 0.8, count, seed)
    assert (list(ins), list(outs)) == _client_sample_random_requests(seed, isl, osl, 0.8, count)
    lattice = benchmark_lengths(isl, osl, 0.8, count)
    assert count < 12 or list(ins) != list(lattice[0])


def test_seed_zero_draws_what_inferencex_dealt_its_first_prompts():
    """The first five requests of an InferenceX 1k/1k run (np.random.seed(0); randint(819, 1025) inputs, then outputs)."""
    ins, outs = benchmark_lengths(1024, 1024, 0.8, 5, 0)
    assert list(ins) == [991, 866, 936, 1011, 886] and list(outs) == [1014, 922, 828, 840, 855]


def test_a_seeded_benchmark_plan_replays_its_draws_alike_in_both_implementations():
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)
    seeded, lattice = (run_plan(Benchmark(prompts_per_client=4, range_ratio=0.5, seed=seed), 3, 512, 64) for seed in (0, None))
    assert list(seeded.isl) == list(benchmark_lengths(512, 64, 0.5, 12, 0)[0]) and list(seeded.isl) != list(lattice.isl)
    spec = AggSpec(EngineSettings(4096, True))
    assert replay_agg(seeded, spec, pricer, "numba").stats == replay_agg(seeded, spec, pricer, "python").stats
    assert replay_agg(seeded, spec, pricer, "numba").stats != replay_agg(lattice, spec, pricer, "numba").stats


@pytest.mark.parametrize("impl", ["numba", "python"])
def test_a_benchmark_burst_reaches_the_engine_in_dispatch_order(impl):
    """The first wave arrives one request after another (protocol.BURST_STEP_MS): an idle engine's first pass holds
    request 0 alone, the other three prefill in the next beside its decode (10 + 1 ms): TTFTs 10, 21, 21, 21. All at
    once, one pass holds all four (10 ms each). Each of two prefill workers' first batch holds its first request alone
    (10, 10, then 20, 20 behind them); a steady run keeps its burst simultaneous (the reference's protocol)."""
    spec = AggSpec(EngineSettings(4096, True, overlap_scheduler=False))
    tandem = TandemSpec(2, 1, prefill_batch=4)

    def stats(staggered):
        plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0, staggered=staggered), 4, 100, 2)
        agg = replay_agg(plan, spec, flat_pricer(10.0, 1.0), impl).stats
        return agg, replay_tandem(plan, tandem, flat_pricer(10.0, 0.0), flat_pricer(0.0, 1.0), impl).stats

    (agg, pd_), (agg_once, pd_once) = stats(True), stats(False)
    assert (agg.ttft_mean, agg.ttft_max) == (18.25, 21.0) and (agg_once.ttft_mean, agg_once.ttft_max) == (10.0, 10.0)
    assert pd_.ttft_mean == pytest.approx(15.0) and pd_once.ttft_mean == 10.0
    assert run_plan(Steady(), 4, 100, 2).burst_step_ms == 0.0 and run_plan(Benchmark(), 4, 100, 2).burst_step_ms == BURST_STEP_MS


@pytest.mark.parametrize("seed", [-1, 2**32, 2**40, True, 1.5])
def test_a_client_seed_numpy_cannot_take_is_refused(seed):
    with pytest.raises(InvalidInputError, match=f"a client seed must be an integer within \\[0, 2\\*\\*32\\), got {seed}"):
        Benchmark(seed=seed)
    with pytest.raises(InvalidInputError, match="client seed"):
        benchmark_lengths(1024, 1024, 0.8, 4, seed)


@pytest.mark.parametrize(
    "backend,system,gib,want",
    [
        (
            "vllm",
            "h200_sxm",
            141,
            EngineSettings(
                8192,
                True,
                1024,
                overlap_scheduler=True,
                eager_layer_ms=0.0,
                request_path_ms=VLLM_REQUEST_PATH_MS,
                gpu_memory_utilization=0.9,
                qk_norm_allreduces=1,
            ),
        ),
        (
            "vllm",
            "a100_sxm",
            80,
            EngineSettings(
                2048,
                True,
                256,
                overlap_scheduler=True,
                eager_layer_ms=0.0,
                request_path_ms=VLLM_REQUEST_PATH_MS,
                gpu_memory_utilization=0.9,
                qk_norm_allreduces=1,
            ),
        ),
        ("sglang", "h100_sxm", 80, EngineSettings(8192, True, None, mixed_batches=False, qk_norm_allreduces=1)),
        ("sglang", "b200_sxm", 180, EngineSettings(16384, True, None, mixed_batches=False, qk_norm_allreduces=1)),
        ("trtllm", "h200_sxm", 141, EngineSettings(8192, False, 2048, request_path_ms=TRTLLM_REQUEST_PATH_MS)),
    ],
)
def test_engine_defaults_per_backend(backend, system, gib, want):
    assert engine_defaults(backend, system, gib << 30) == want


@pytest.mark.parametrize("version, overlap", [("0.13.0", False), ("v0.10.2", False), ("0.14.0", True), ("0.19.0", True), (None, True),
                                              ("nightly-5b8c30d", True)])  # fmt: skip
def test_vllm_schedules_asynchronously_by_default_from_0_14(version, overlap):
    """vLLM V1's async scheduling (overlap) is its default from 0.14.0 and off through 0.13 (first-token-path.md 1c);
    an unrecorded version or a nightly reads as a current release."""
    assert engine_defaults("vllm", "h200_sxm", 141 << 30, version).overlap_scheduler is overlap


# ---------------------------------------------------------------------------------------------
# Section 6 corrections
# ---------------------------------------------------------------------------------------------


def test_visual_tokens_lengthen_the_prompt_and_the_encoder_sits_on_the_ttft_path():
    text = refined([AGG_ROW | {"bs": 1}]).iloc[0]
    absent_columns = refined([AGG_ROW | {"bs": 1, "visual_tokens": 0, "encoder_latency": 0.0}]).iloc[0]
    assert text.ttft_refined == absent_columns.ttft_refined and text.tpot_refined == absent_columns.tpot_refined
    multimodal = refined([AGG_ROW | {"bs": 1, "visual_tokens": 2048, "encoder_latency": 30.0}]).iloc[0]
    # C = 1: encoder time + the prefill of 4096 tokens at the row's per-chunk price (chunk_ref = 4096)
    assert multimodal.ttft_refined == 30.0 + 50.96
    two = refined([AGG_ROW | {"bs": 2, "visual_tokens": 2048, "encoder_latency": 30.0}]).iloc[0]
    assert two.ttft_refined > refined([AGG_ROW | {"bs": 2}]).ttft_refined[0]


def test_disagg_encoder_occupies_the_prefill_worker():
    s = replay_case(row_case(DISAGG_ROW | {"concurrency": 1, "encoder_latency": 300.0})).stats
    assert s.ttft_mean == 2300.0


def test_hand_off_joins_the_decode_list_in_arrival_order():
    def handed_off(visible: float) -> Request:
        return Request(isl=8, osl=4, new=8, born=0.0, visible=visible, todo=0)

    run = [handed_off(visible) for visible in (1.0, 5.0, 5.0, 9.0)]
    late, tie = handed_off(7.0), handed_off(5.0)
    oracle.arrive(run, late)
    oracle.arrive(run, tie)
    assert [r.visible for r in run] == [1.0, 5.0, 5.0, 5.0, 7.0, 9.0] and run[3] is tie and run[4] is late


def test_out_of_order_hand_offs_replay_alike_in_both_implementations(monkeypatch):
    """Two prefill workers with length-dependent prefill prices: a short prompt launched later lands
    on the decode worker before a long one launched earlier; with one decode slot the list order
    decides who decodes first, and the Numba tandem must agree with the oracle."""
    plan = run_plan(Benchmark(prompts_per_client=6, range_ratio=0.2), 6, 1200, 24)
    spec = TandemSpec(2, 1, prefill_batch=1, decode_max_seqs=1)
    prefill, decode = affine_pricer(5.0, 0.05, 0.0, 1.0, 1.0, 2.0, 0.0, 0.0), affine_pricer(0.0, 0.0, 0.0, 1.0, 1.0, 3.0, 0.0, 0.0)
    overtakes = []
    arrive = oracle.arrive

    def spy(run, r):
        overtakes.append(bool(run) and run[-1].visible > r.visible)
        arrive(run, r)

    monkeypatch.setattr(oracle, "arrive", spy)
    python = replay_tandem(plan, spec, prefill, decode, "python")
    assert any(overtakes)
    assert replay_tandem(plan, spec, prefill, decode, "numba").same_as(python)


INTAKE_PLAN = run_plan(Benchmark(prompts_per_client=2, range_ratio=1.0), 2, 100, 6)
INTAKE_PREFILL = affine_pricer(5.0, 0.0, 0.0, 1.0, 0.0, 0.0)  # 5 ms a prefill batch
INTAKE_DECODE = affine_pricer(0.0, 0.0, 0.0, 1.0, 3.0, 3.0)  # 3 ms a decode pass


@pytest.mark.parametrize("impl", IMPLS)
def test_a_busy_decode_workers_intake_gates_the_prefill(impl):
    """Two clients, one prefill worker (batch 1, 5 ms), one decode worker (3 ms passes), osl 6, first
    tokens at the hand-off. Intake every 10 passes: A prefills [0, 5], B [5, 10]; A completes at 20
    while B decodes, so A's next request waits for the worker's intake, which comes when B completes
    and the worker goes idle at 26 (passes since the last intake: 5 < 10); it prefills [26, 31] (TTFT
    11) and B's next [31, 36] (TTFT 10). TTFTs 5, 10, 11, 10: mean 9. At interval 1 A's next request
    prefills at once: mean 6.25."""
    means = {}
    for interval in (1, 10):
        spec = TandemSpec(1, 1, prefill_batch=1, decode_bound_at_dispatch=True, decode_intake_interval=interval)
        means[interval] = replay_tandem(INTAKE_PLAN, spec, INTAKE_PREFILL, INTAKE_DECODE, impl).stats.ttft_mean
    assert means == {1: 6.25, 10: 9.0}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(("prefill_ms", "means"), [(5.0, {False: 7.5, True: 10.0}), (8.0, {False: 12.0, True: 13.0})])
def test_a_back_to_back_prefill_launch_delays_the_previous_batchs_hand_offs(impl, prefill_ms, means):
    """Prefill overlap: two clients, one prefill worker (batch 1, host floor 5 ms), one decode worker
    (3 ms passes), osl 2. Batches of 5 ms: A prefills [0, 5]; B's batch launches at 5, back to back,
    so A's KV goes out after that launch's 5 ms: A joins the decode worker at 10, with B (whose batch
    ends with the queue empty): TTFTs 10, 10; without it A is admitted at 5 and B at 10: mean 7.5.
    Batches of 8 ms: B's launch overlaps A's last 3 ms of GPU time, so A's KV goes out 5 - 3 = 2 ms
    after A's end: TTFTs 10 and 16 (13), against 8 and 16 (12)."""
    plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0), 2, 100, 2)
    prefill = affine_pricer(prefill_ms, 0.0, 0.0, 1.0, 0.0, 0.0)
    got = {}
    for overlap in (False, True):
        spec = TandemSpec(1, 1, prefill_batch=1, prefill_floor_ms=5.0, first_token_on_admission=True, prefill_overlap=overlap)
        got[overlap] = replay_tandem(plan, spec, prefill, INTAKE_DECODE, impl).stats.ttft_mean
    assert got == means


@pytest.mark.parametrize("impl", IMPLS)
def test_a_prefill_batch_of_a_new_token_count_compiles_as_it_launches(impl):
    """A prefill worker's first batch of a token count pays the inline compile (TandemSpec.prefill_compile_ms), a later
    batch of the same count does not: two clients of 100-token prompts, one prefill worker (batch 1, 5 ms a batch, a
    40 ms compile), first tokens at the hand-off. A's batch runs [0, 45], B's [45, 50]: TTFTs 45 and 50, mean 47.5;
    without the compile 5 and 10."""
    plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0), 2, 100, 2)
    prefill = affine_pricer(5.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    got = {
        compile_ms: replay_tandem(plan, TandemSpec(1, 1, prefill_batch=1, prefill_compile_ms=compile_ms), prefill, INTAKE_DECODE, impl).stats
        for compile_ms in (0.0, 40.0)
    }
    assert (got[0.0].ttft_mean, got[40.0].ttft_mean, got[40.0].ttft_max) == (7.5, 47.5, 50.0)
    with pytest.raises(InvalidInputError, match="prefill_compile_ms"):
        TandemSpec(1, 1, prefill_compile_ms=-1.0)


@pytest.mark.parametrize("impl", IMPLS)
def test_an_overlapping_prefill_worker_launches_its_next_batch_while_the_last_one_runs(impl):
    """Prefill overlap: one prefill worker (batch 1, host floor 5 ms, 1 ms a prompt token), one decode worker (3 ms
    passes), osl 2, A of 12 tokens and B of 1. A's batch runs [0, 12]; the loop iteration launching B starts once A's
    5 ms launch is done, at 5, and its intake takes B; B's 5 ms launch is done at 10, before A ends, so B's batch ends at
    13 (its 1 ms of GPU work after A's) and A's KV leaves at 12. A is admitted at 12, B at 15 behind A's decode pass:
    mean TTFT 13.5. Without overlap B's launch starts at 12 and ends at 17: mean 14.5."""
    plan = RunPlan(2, 0, 2, 2, np.array([12, 1]), np.array([2, 2]))
    got = {}
    for overlap in (False, True):
        spec = TandemSpec(1, 1, prefill_batch=1, prefill_floor_ms=5.0, first_token_on_admission=True, prefill_overlap=overlap)
        got[overlap] = replay_tandem(plan, spec, affine_pricer(0.0, 1.0, 0.0, 1.0, 0.0, 0.0), INTAKE_DECODE, impl).stats.ttft_mean
    assert got == {False: 14.5, True: 13.5}


@pytest.mark.parametrize("impl", IMPLS)
def test_an_overlapping_prefill_worker_forms_its_next_batch_from_what_it_held_at_its_last_launch(impl):
    """Five clients, two prompts each, one prefill worker (batches of 2, 10 ms, no host floor, so no KV
    delay), one decode worker (1 ms passes), osl 2. A, B prefill at 0, C, D at 10; A and B finish at 11
    and send A', B'. Without overlap the batch at 20 takes E and A' (mean TTFT 20.5: 10 10 20 20 30 19 29
    19 29 19). With it the worker formed that batch while [10, 20] ran, polling at 10: it takes E alone,
    then A', B' at 30, C', D' at 40, E' at 50 (mean 23.5: 10 10 20 20 30 29 29 29 29 29); a batch whose
    poll found nothing is formed from what the worker finds when it idles (C, D at 10). The first wave arrives at once."""
    plan = run_plan(Benchmark(prompts_per_client=2, range_ratio=1.0, staggered=False), 5, 100, 2)
    got = {}
    for overlap in (False, True):
        spec = TandemSpec(1, 1, prefill_batch=2, first_token_on_admission=True, prefill_overlap=overlap)
        got[overlap] = replay_tandem(plan, spec, flat_pricer(10.0, 0.0), flat_pricer(0.0, 1.0), impl).stats.ttft_mean
    assert got == {False: 20.5, True: 23.5}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"decode_intake_interval": 10}, "needs decode_bound_at_dispatch"),
        ({"decode_intake_interval": 0, "decode_bound_at_dispatch": True}, "decode_intake_interval must be an integer >= 1, got 0"),
        ({"decode_intake_interval": 2.5, "decode_bound_at_dispatch": True}, "decode_intake_interval must be an integer >= 1, got 2.5"),
    ],
)
def test_decode_intake_settings_are_checked(changes, message):
    with pytest.raises(InvalidInputError, match=message):
        TandemSpec(1, 1, **changes)


def test_decode_recv_interval_is_sglangs_alone():
    """A TRT-LLM disagg run has no receive interval to set; an SGLang one binds its decode worker at dispatch and
    replays its prefill workers' overlap loop unless the run turns it off."""
    from estimator.closedloop.protocol import parse_protocol
    from estimator.closedloop.runs import DisaggRun, replay_run, tandem_engine_case

    def run(backend, interval):
        worker = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", backend, tp=2)
        return DisaggRun(worker, worker, 1024, 64, 8, 1, 1, 1, 8, decode_recv_interval=interval)

    with pytest.raises(InvalidInputError, match="decode_recv_interval is SGLang's --scheduler-recv-interval; backend 'trtllm' has none, got 10"):
        run("trtllm", 10)
    spec = tandem_engine_case(run("sglang", 10), parse_protocol("steady"), "native").spec
    assert (spec.decode_bound_at_dispatch, spec.decode_intake_interval, spec.prefill_overlap) == (True, 10, True)
    trtllm = tandem_engine_case(run("trtllm", 1), parse_protocol("steady"), "native").spec
    assert not trtllm.decode_bound_at_dispatch and not trtllm.prefill_overlap
    off = dataclasses.replace(run("sglang", 1), prefill_overlap=False)
    assert not tandem_engine_case(off, parse_protocol("steady"), "native").spec.prefill_overlap
    with pytest.raises(InvalidInputError, match="reads its launch facts from the run"):
        replay_run(run("sglang", 10), EngineSettings(8192, True, recv_interval=10))


def test_throughput_scales_with_pp_and_attention_dp():
    rank = refined([AGG_ROW]).iloc[0]
    system = refined([AGG_ROW | {"concurrency": 16}]).iloc[0]
    assert system.throughput_refined == rank.throughput_refined * 4 and system.ttft_refined == rank.ttft_refined
    assert 16 / system.throughput_refined * 1000 == pytest.approx(system.ttft_refined + 31 * system.tpot_refined, rel=0.02)


@pytest.mark.parametrize("row", [AGG_ROW | {"osl": 1}, DISAGG_ROW | {"osl": 1}], ids=["agg", "disagg"])
def test_single_output_token_has_zero_tpot(row):
    case = row_case(row)
    s = replay_case(case).stats
    assert s.tpot_mean == 0.0 and math.isnan(s.itl_p50)
    repriced = reprice_closed_loop_row(row, ROW)
    assert repriced["tpot"] == 0.0 and repriced["request_latency"] == repriced["ttft"]
    clients = row["concurrency"] if "concurrency" in row else row["bs"]
    assert clients / s.throughput_rps * 1000 == pytest.approx(s.ttft_mean, rel=0.02)


@pytest.mark.parametrize("impl", IMPLS)
def test_speculative_decoding_advances_k_tokens_per_pass(impl):
    one = agg(1, 2048, 65, impl).stats
    two = agg(1, 2048, 65, impl, tokens_per_decode=2.0).stats
    assert two.tpot_mean == pytest.approx(one.tpot_mean / 2, rel=0.02) and two.ttft_mean == one.ttft_mean
    assert two.throughput_rps > one.throughput_rps


def test_fractional_progress_emits_floor_differences():
    # k = 1.5: emissions 1, 2, 1, 2 ... so osl = 1 + 3*10 tokens take 20 decode passes
    s = agg(1, 128, 31, tokens_per_decode=1.5).stats
    assert s.itl_mean == pytest.approx(s.tpot_mean * 30 / 20, rel=1e-9)


def test_requests_are_distinct_even_when_equal():
    twins = Request(8, 4, 8, 0.0, 0.0, 8), Request(8, 4, 8, 0.0, 0.0, 8)
    assert twins[0] != twins[1] and [r for r in twins if r is not twins[0]] == [twins[1]]


# ---------------------------------------------------------------------------------------------
# Progress, bad rows, memo
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
def test_prompt_larger_than_the_budget_without_chunking_is_reported(impl):
    with pytest.raises(NoProgressError, match="exceeds the token budget"):
        agg(2, 9000, 8, impl, chunked=False)


def test_unchunked_refinement_reports_instead_of_looping():
    out = refined([AGG_ROW | {"isl": 9000}], ReplayOptions("row", settings=EngineSettings(8192, False)))
    assert math.isnan(out.ttft_refined[0]) and "chunked prefill is off" in out.refine_reason[0]


@pytest.mark.parametrize(
    "change,reason",
    [
        ({"prefill_step_ms": float("nan")}, "prefill_step_ms"),
        ({"genonly_step_ms": None}, "genonly_step_ms"),
        ({"isl": 2048.5}, "isl"),
        ({"prefix": 4096}, "prefix"),
        ({"ctx_tokens": "many"}, "ctx_tokens"),
    ],
    ids=["nan-step", "missing-step", "fractional-isl", "prefix-too-long", "non-numeric"],
)
def test_unpriceable_rows_carry_their_reason(change, reason):
    out = refined([AGG_ROW | change])
    assert math.isnan(out.ttft_refined[0]) and reason in out.refine_reason[0]


def test_engine_settings_take_numpy_integers_and_reject_the_rest():
    assert EngineSettings(np.int64(4096), np.bool_(False), np.int32(64)) == EngineSettings(4096, False, 64)
    for budget in (0, 2.5, True, "8192"):
        with pytest.raises(InvalidInputError):
            EngineSettings(budget, True)


@pytest.mark.parametrize("spelling, mode", [("auto", None), ("", None), (None, None), ("fp8_e4m3", "fp8"), ("FP8", "fp8"),
                                            ("fp8_e5m2", "fp8"), ("bf16", "bfloat16"), ("bfloat16", "bfloat16")])  # fmt: skip
def test_engine_settings_read_the_launch_kv_cache_dtype_spellings(spelling, mode):
    assert EngineSettings(8192, True, kv_cache_dtype=spelling).kv_cache_dtype == mode


@pytest.mark.parametrize("spelling", ["fp16x", "fp4", 8])
def test_engine_settings_refuse_an_unknown_kv_cache_dtype_by_name(spelling):
    with pytest.raises(InvalidInputError, match=f"kv_cache_dtype must be one of .*got {spelling!r}"):
        EngineSettings(8192, True, kv_cache_dtype=spelling)


@pytest.mark.parametrize(
    "backend, launched, checkpoint_kv, served",
    [("sglang", None, None, "bfloat16"), ("vllm", None, None, "bfloat16"), ("sglang", None, "fp8", "fp8"),
     ("vllm", "fp8", None, "fp8"), ("sglang", "bfloat16", "fp8", "bfloat16"), ("trtllm", None, None, None), ("trtllm", "fp8", None, "fp8")],
)  # fmt: skip
def test_served_kv_cache_dtype_is_the_launchs_else_the_engines_auto(backend, launched, checkpoint_kv, served):
    """SGLang's and vLLM's --kv-cache-dtype auto serves the checkpoint's declared KV quantization,
    else the model dtype; TRT-LLM keeps the reference's checkpoint rule (None)."""
    assert served_kv_cache_dtype(backend, launched, checkpoint_kv) == served


@pytest.mark.parametrize(
    "backend, architecture, sm, version, checkpoint_kv, served",
    [("sglang", "GlmMoeDsaForCausalLM", 100, None, None, "fp8"), ("sglang", "GlmMoeDsaForCausalLM", 90, None, None, "bfloat16"),
     ("sglang", "DeepseekV3ForCausalLM", 100, None, None, "bfloat16"), ("vllm", "GlmMoeDsaForCausalLM", 100, None, None, "bfloat16"),
     ("vllm", None, 100, "0.11.2", "fp8", "bfloat16"), ("vllm", None, 100, "0.15.1", "fp8", "fp8"), ("vllm", None, 100, "nightly-5b8c", "fp8", "fp8")],
)  # fmt: skip
def test_the_engines_auto_follows_sglangs_nsa_rule_and_vllms_release(backend, architecture, sm, version, checkpoint_kv, served):
    """SGLang's NSA architectures serve fp8 on SM >= 100 and bf16 below; vLLM reads a checkpoint's declared KV
    quantization only from 0.15.1 (a nightly counts as later)."""
    assert served_kv_cache_dtype(backend, None, checkpoint_kv, architecture, sm, version) == served


def test_direct_calls_raise_the_documented_value_error():
    with pytest.raises(InvalidInputError):
        ReplayOptions("fast")
    with pytest.raises(InvalidInputError):
        ReplayOptions("row", "soak")
    with pytest.raises(InvalidInputError):
        AggSpec(EngineSettings(8192, True), tokens_per_decode=0.5)


@pytest.mark.parametrize(
    "change,options",
    [({"prefix": 1024}, ROW), ({"genonly_step_ms": 6.0}, ROW), ({"concurrency": 8}, ROW), ({}, ReplayOptions("row", Benchmark())),
     ({}, ReplayOptions("row", settings=EngineSettings(1024, True))), ({"decode_tokens_per_iteration": 1.5}, ROW)],
    ids=["prefix", "step", "ranks", "protocol", "settings", "progress"],
)  # fmt: skip
def test_memo_keys_on_every_input(change, options):
    first = replay_case(agg_case(AGG_ROW, ROW))
    assert replay_case(agg_case(dict(AGG_ROW), ROW)) is first
    assert replay_case(agg_case(AGG_ROW | change, options)) is not first


def test_reprice_keeps_each_row_kinds_token_convention():
    agg_out = reprice_closed_loop_row(AGG_ROW | {"request_rate": 1.0, "tokens/s/user": 1.0, "num_total_gpus": 4}, ROW)
    assert agg_out["tokens/s"] == agg_out["seq/s"] * 31 and agg_out["request_rate"] == agg_out["seq/s"]
    assert agg_out["tokens/s/user"] == 1000.0 / agg_out["tpot"] and agg_out["tokens/s/gpu"] == agg_out["tokens/s"] / 4


def test_pick_ranks_priced_rows_first_per_deployment():
    rows = [AGG_ROW | {"bs": 0, "tokens/s": 999.0}, AGG_ROW | {"bs": 2, "tokens/s": 1.0}, AGG_ROW | {"parallel": "tp8", "bs": 2}]
    assert list(pick_under_closed_loop_sla(pd.DataFrame(rows), options=ROW).index) == [2, 1]  # equal refined: tokens/s breaks the tie


@pytest.mark.parametrize("isl,ctx", [(2048, 8192), (5000, 2048), (4097, 4096)])
def test_solo_prefill_is_the_linear_bound_not_the_ceil_gate(isl, ctx):
    row = AGG_ROW | {"isl": isl, "ctx_tokens": ctx}
    chunk_ref = min(ctx, isl)
    assert solo_prefill_ms(row, ROW) == pytest.approx(50.96 * isl / chunk_ref, rel=1e-12)
    assert solo_prefill_ms(row, ROW) <= 50.96 * math.ceil(isl / chunk_ref)
    assert refined([row]).ttft_refined[0] >= solo_prefill_ms(row, ROW)


def test_solo_prefill_of_a_disagg_row():
    assert solo_prefill_ms(DISAGG_ROW | {"encoder_latency": 40.0}, ROW) == 2040.0


# ---------------------------------------------------------------------------------------------
# Engine pricing
# ---------------------------------------------------------------------------------------------

QWEN = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)
EXTENT = TableExtent(tokens=4096, chunks=8, chunk=4096, start=8192, rows=64, kv=8192)


@pytest.fixture(scope="module")
def qwen_pricer():
    return engine_pricer(engine_tables(PassModel(QWEN), EXTENT), 1)


@pytest.mark.parametrize("isl,osl,decoders", [(2048, 1, 0), (2048, 4094, 15), (1024, 2046, 63), (1000, 2048, 7)])
def test_engine_pass_is_one_mixed_step(qwen_pricer, isl, osl, decoders):
    """A whole prompt with decoders at the midpoint KV is the uncached mixed step (a pass is never
    prefill + decode added): equal on table nodes (KV 4096 / 2048), interpolated off them (isl 1000)."""
    step = mixed_step(StepModel(make_pricer("native", QWEN)), MixedShape(isl, decoders, isl, osl)).latency_ms
    kv = isl + osl // 2 + 1
    on_nodes = isl in (1024, 2048)
    assert qwen_pricer.pass_ms(PassShape((0,), (isl,), decoders, decoders * kv)) == pytest.approx(step, rel=1e-12 if on_nodes else 1e-3)


def test_engine_decode_pass_is_the_decode_step_and_depends_on_occupancy(qwen_pricer):
    step = decode_step(StepModel(make_pricer("native", QWEN)), 32, 2048, 4094).latency_ms
    kv = 2048 + 4094 // 2 + 1
    assert qwen_pricer.pass_ms(PassShape((), (), 32, 32 * kv)) == pytest.approx(step, rel=1e-12)
    prices = [qwen_pricer.pass_ms(PassShape((), (), n, n * kv)) for n in (1, 16, 64)]
    assert prices[2] > prices[1] and len(set(prices)) == 3


def test_attention_dp_pass_is_priced_at_the_busiest_ranks_share():
    """A tandem worker with 4 DP ranks: 6 prompts and 9 decoders cost rank 0's 2 prompts (0 and 4)
    and 3 decoders at the mean KV, not the whole pass on one rank."""
    tables = engine_tables(PassModel(QWEN), EXTENT)
    whole, ranked = engine_pricer(tables, 1), engine_pricer(tables, 1, dp_ranks=4)
    starts, takes = (0, 10, 20, 30, 40, 50), (500, 600, 700, 800, 900, 1000)
    shape = PassShape(starts, takes, 9, 9 * 3000)
    assert ranked.pass_ms(shape) == whole.pass_ms(PassShape((0, 40), (500, 900), 3, 3 * 3000))
    assert ranked.pass_ms(shape) < whole.pass_ms(shape)
    assert ranked.pass_ms(PassShape((), (), 8, 8 * 2000)) == whole.pass_ms(PassShape((), (), 2, 2 * 2000))


def test_engine_tables_interpolate_within_half_a_percent(qwen_pricer):
    pricer = make_pricer("native", QWEN)
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 4))
        takes, starts = rng.integers(1, 4096 // n, n), rng.integers(0, 4000, n)
        lat = pricer.context_many(np.column_stack([np.ones(1), [takes.sum()], [0.0]]))[0]
        attention = pricer.context_many(np.column_stack([np.full(n, n), takes, starts]).astype(float))
        i = list(pricer.context_names).index("context_attention")
        exact = lat.sum() - lat[i] + attention[:, i].mean()
        assert qwen_pricer.pass_ms(PassShape(tuple(starts.tolist()), tuple(takes.tolist()), 0, 0)) == pytest.approx(exact, rel=5e-3)


def test_lattice_holds_powers_of_two_and_stops_at_the_top():
    nodes = lattice(4096, 8, 4)
    assert list(nodes[:8]) == list(range(1, 9)) and nodes[-1] == 4096 and {16, 32, 1024} <= set(nodes)


def test_grown_grid_prices_only_new_nodes_and_equals_a_fresh_build():
    """Growing a grid keeps the held block and prices the rest: the result equals a grid built at
    the grown tops from scratch, and no node is priced twice."""
    from estimator.closedloop.engine import _GrownGrid

    priced = []

    def price(model, nodes):
        priced.extend(map(tuple, nodes))
        return nodes[:, 0] * 1000.0 + nodes[:, 1] + 0.5

    grid = _GrownGrid(lambda model, a, b: (lattice(a, 4, 2), lattice(b, 8, 2)), price)
    model = PassModel(QWEN)
    grid(model, 16, 32)
    axes, values = grid(model, 64, 48)
    fresh_axes, fresh = _GrownGrid(grid.axes, price).build(model, (64, 48))
    assert all(np.array_equal(a, f) for a, f in zip(axes, fresh_axes)) and np.array_equal(values, fresh)
    assert len(priced) == len(set(priced)) + fresh.size  # the growth priced every node once; the fresh build all again
    small_axes, small = grid(model, 16, 32)
    assert np.array_equal(small, fresh[: len(small_axes[0]), : len(small_axes[1])])


def test_closed_loop_for_agg_row_in_both_pricings():
    row = dict(run_agg(QWEN, AggPoint(2048, 128, 1)).row)
    engine = closed_loop_for_agg_row(row, QWEN)
    by_row = closed_loop_for_agg_row(row, QWEN, pricing="row")
    assert engine["ttft"] == pytest.approx(row["prefill_step_ms"], rel=1e-9) == by_row["ttft"]
    assert (engine["pricing"], engine["step_token_budget"], engine["chunked_prefill"]) == ("engine", 8192, True)
    assert by_row["step_token_budget"] == row["ctx_tokens"]
    assert engine["request_latency"] == engine["ttft"] + 127 * engine["tpot"]


def test_vllm_engine_replay_pays_the_prefill_dispatch_overhead_once_per_prefill_pass():
    """C = 1 on vLLM: TTFT = the prefill pass + 0.8 ms per layer (the reference's legacy dispatch
    overhead, 64 layers for Qwen3-32B, which holds the request path: vLLM's own is not added); row
    pricing keeps the reference's wiring (no overhead), and SGLang pays none
    (test_closed_loop_for_agg_row_in_both_pricings)."""
    vllm = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm", tp=2)
    row = dict(run_agg(vllm, AggPoint(2048, 128, 1)).row)
    engine = closed_loop_for_agg_row(row, vllm)
    assert engine["ttft"] == pytest.approx(row["prefill_step_ms"] + 64 * 0.8, rel=1e-9)
    assert closed_loop_for_agg_row(row, vllm, pricing="row")["ttft"] == pytest.approx(row["prefill_step_ms"], rel=1e-9)


def test_vllm_replay_charges_no_dispatch_when_every_pass_replays_a_cuda_graph():
    """A launch whose capture size holds its step budget replays every pass, prefills included, as a CUDA graph
    (piecewise): C = 1 TTFT is the prefill pass plus vLLM's request path alone; one token over the capture size and
    the eager dispatch, which holds the path, is back."""
    vllm = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm", tp=2)
    row = dict(run_agg(vllm, AggPoint(2048, 128, 1)).row)
    graphed = engine_defaults("vllm", "h200_sxm", 141 << 30).replace(step_token_budget=2048, cudagraph_max_tokens=2048)
    ttft = closed_loop_for_agg_row(row, vllm, settings=graphed)["ttft"]
    assert ttft == pytest.approx(row["prefill_step_ms"] + VLLM_REQUEST_PATH_MS, rel=1e-9)
    eager = graphed.replace(cudagraph_max_tokens=2047)
    assert closed_loop_for_agg_row(row, vllm, settings=eager)["ttft"] == pytest.approx(row["prefill_step_ms"] + 64 * 0.8, rel=1e-9)


@pytest.mark.parametrize(("request_path", "dispatch", "path"), [(10.2, 0.0, 10.2), (10.2, 51.2, 51.2), (0.0, 0.0, 0.0), (9.97, 0.0, 9.97), (60.0, 51.2, 60.0)])
def test_a_requests_path_is_the_larger_of_the_fitted_dispatch_and_the_request_path(request_path, dispatch, path):
    """The reference's dispatch overhead is fitted to the whole TTFT beyond the kernels (HTTP and tokenization included),
    so a request charged it pays no separate request path: the path is the larger of the two."""
    spec = AggSpec(EngineSettings(2048, True, request_path_ms=request_path), dispatch_ms=dispatch)
    assert spec.path_ms == path


@pytest.mark.parametrize(
    ("backend", "budget", "capture", "max_seqs", "graphed"),
    [
        ("vllm", 2048, 2048, None, True),
        ("vllm", 4096, 2048, None, False),
        ("vllm", 512, None, None, True),  # vLLM's default capture size: min(2 x max_num_seqs, 512)
        ("vllm", 512, None, 128, False),  # 2 x 128 = 256 tokens graphed
        ("vllm", 8192, None, 1024, False),  # the engine's defaults: prefills above 512 tokens run eagerly
        ("sglang", 512, None, None, False),  # the other engines' eager passes: prefill_floor_ms
    ],
)
def test_every_pass_is_graphed_where_the_capture_size_holds_the_step_budget(backend, budget, capture, max_seqs, graphed):
    settings = EngineSettings(budget, True, max_seqs, cudagraph_max_tokens=capture)
    assert every_pass_graphed(Backend.parse(backend), settings) is graphed


@pytest.mark.parametrize(
    ("model", "version", "layout", "setting", "graphed"),
    [
        ("MiniMaxAI/MiniMax-M2.5", "0.5.10", {}, None, True),  # on by default from 0.5.10 (PR 16331)
        ("MiniMaxAI/MiniMax-M2.5", None, {}, None, True),  # a current release
        ("MiniMaxAI/MiniMax-M2.5", "0.5.9", {}, None, False),  # opt-in through 0.5.9
        ("MiniMaxAI/MiniMax-M2.5", "0.5.9", {}, True, True),  # --enable-piecewise-cuda-graph
        ("MiniMaxAI/MiniMax-M2.5", "0.5.10", {}, False, False),  # turned off by the launch
        ("MiniMaxAI/MiniMax-M2.5", "0.5.10", {"nextn": 1}, None, False),  # speculative decoding
        ("MiniMaxAI/MiniMax-M2.5", "0.5.10", {"tp": 4, "attention_dp": 2}, None, False),  # attention DP
        ("MiniMaxAI/MiniMax-M2.5", "0.5.10", {"role": Role.PREFILL}, None, False),  # a PD prefill worker
        ("openai/gpt-oss-120b", "0.5.10", {}, None, True),
        ("deepseek-ai/DeepSeek-R1", "0.5.10", {}, None, False),  # MLA: passes above 2,048 tokens stay eager
        ("Qwen/Qwen3.5-397B-A17B", "0.5.10", {}, None, False),  # a multimodal architecture
        ("zai-org/GLM-5-FP8", "0.5.10", {}, None, False),  # DeepSeek sparse attention, on SGLang's disabled list
    ],
)
def test_sglang_graphs_every_prefill_from_0_5_10_where_the_model_and_layout_allow(model, version, layout, setting, graphed):
    deployment = Deployment(model, "b200_sxm", "sglang", version=version, **({"tp": 8, "moe_ep": 8} | layout))
    settings = EngineSettings(16384, True, piecewise_cuda_graph=setting)
    assert sglang_graphs_every_prefill(deployment, settings) is graphed
    assert not sglang_graphs_every_prefill(dataclasses.replace(deployment, backend=Backend.TRTLLM), EngineSettings(16384, True))


def test_an_sglang_launch_that_graphs_its_prefills_pays_no_eager_floor():
    """MiniMax-M2.5 prefills eagerly with the graphs off (its published 116.10 ms over 62 layers); a current SGLang
    graphs every pass that prefills by default, so the replay charges no floor."""
    minimax = Deployment("MiniMaxAI/MiniMax-M2.5", "b200_sxm", "sglang", tp=8, moe_ep=8)
    run, defaults = AggRun(minimax, 1024, 64, 1), system_defaults("sglang", "b200_sxm")
    eager, graphed = (agg_engine_case(run, settings, Steady(), "reference").spec for settings in
                      (defaults.replace(piecewise_cuda_graph=False), defaults))  # fmt: skip
    assert defaults.piecewise_cuda_graph is None
    assert eager.prefill_floor_ms == pytest.approx(116.10, rel=1e-12) and graphed.prefill_floor_ms == 0.0


def test_eager_prefill_passes_last_at_least_layers_times_the_per_layer_host_cost():
    """SGLang prefills eagerly; a single DeepSeek-R1 request's median TTFT is 140.76 ms over 61 layers
    whatever its length up to 4k tokens (sgl-cookbook). C = 1: a short prompt's TTFT is that floor, a
    long one's its priced pass. An explicit setting overrides the published cost; a dense architecture
    has none."""
    deepseek = Deployment("deepseek-ai/DeepSeek-R1", "h200_sxm", "sglang", tp=8, moe_tp=8, moe_ep=1)
    floor = prefill_floor_ms(deepseek, None)
    assert floor == pytest.approx(140.76, rel=1e-12)
    assert prefill_floor_ms(deepseek, 0.5) == pytest.approx(61 * 0.5)
    assert prefill_floor_ms(dataclasses.replace(deepseek, backend="trtllm"), None) == pytest.approx(124.11 - TRTLLM_REQUEST_PATH_MS)
    assert prefill_floor_ms(Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2), None) == 0.0
    assert engine_defaults("sglang", "h200_sxm", 141 << 30).eager_layer_ms is None
    assert engine_defaults("vllm", "h200_sxm", 141 << 30).eager_layer_ms == 0.0
    short, long = (dict(run_agg(deepseek, AggPoint(isl, 2, 1), pricer="reference").row) for isl in (16, 8192))
    assert float(short["prefill_step_ms"]) < floor < float(long["prefill_step_ms"])
    assert closed_loop_for_agg_row(short, deepseek, pricer="reference")["ttft"] == pytest.approx(floor, rel=1e-12)
    assert closed_loop_for_agg_row(long, deepseek, pricer="reference")["ttft"] == pytest.approx(float(long["prefill_step_ms"]), rel=2e-2)


@pytest.mark.parametrize(
    ("backend", "model", "moe", "per_layer"),
    [
        ("sglang", "deepseek-ai/DeepSeek-R1", True, 140.76 / 61),
        ("sglang", "Qwen/Qwen3.5-397B-A17B", True, (208.46 - 90.0) / 61),  # its MTP layer runs in the measured pass, its compile apart
        ("sglang", "zai-org/GLM-5-FP8", True, 244.0 / 78),  # its point without speculative decoding (B200)
        ("sglang", "Qwen/Qwen3-235B-A22B-FP8", True, 31.79 / 36),  # no point of its own: the framework's least (gpt-oss)
        ("trtllm", "moonshotai/Kimi-K2.5", True, 30.0 / 36),
        ("trtllm", "meta-llama/Meta-Llama-3.1-70B", False, 0.0),
        ("vllm", "deepseek-ai/DeepSeek-R1", True, 0.0),
    ],
)
def test_published_eager_cost_per_framework_and_architecture(backend, model, moe, per_layer):
    cost = eager_cost(Backend.parse(backend), model, moe)
    assert cost.per_layer_ms == pytest.approx(per_layer, rel=1e-12) and cost.source


def test_a_host_point_measured_on_a_build_that_compiles_per_length_leaves_the_compile_to_the_replay():
    """The Qwen3.5 point (sgl-cookbook, SGLang main of 2026-02, before PR 31558) is a median over prompts whose new lengths
    each compiled the FLA l2norm kernel inline; the replay charges that compile apart (shape_compile_ms), so a single
    request of the point's launch (its 61 layers: 60 and the MTP layer) replays the published median, not more."""
    qwen = Deployment("Qwen/Qwen3.5-397B-A17B", "h200_sxm", "sglang", tp=8, moe_tp=8, moe_ep=1)
    settings = EngineSettings(16384, True, shape_compile_ms=SGLANG_SHAPE_COMPILE_MS)
    plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0), 1, 610, 2)
    floor = prefill_floor_ms(dataclasses.replace(qwen, nextn=3), None)  # its 60 layers and the MTP layer
    pricer = affine_pricer(1e-3, 0.0, 0.0, 1.0, 1e-3, 1e-3)  # the GPU work is negligible against the host's
    for impl in IMPLS:
        assert replay_agg(plan, AggSpec(settings, prefill_floor_ms=floor), pricer, impl).stats.ttft_max == pytest.approx(208.46, rel=1e-12)


def test_every_host_point_is_cited_and_positive():
    points = [p for own in HOST_POINTS.values() for p in own]
    assert all(p.host_ms > 0 and p.layers >= 1 and len(p.citation) > 40 for p in points)
    assert all(0 < len(own) == len({p.speculative for p in own}) <= 2 for own in HOST_POINTS.values())


def test_a_speculative_pass_that_prefills_also_launches_its_draft_layer_forwards():
    """The floor counts the layers a pass runs, as the points do (HostPoint.layers): SGLang's EAGLE worker extends its
    draft model once after the target (one more layer at any depth), TensorRT-LLM's MTP worker runs its MTP layer nextn
    times in every forward, context included; without speculative decoding, the decoder layers alone."""
    sglang = Deployment("deepseek-ai/DeepSeek-R1", "b200_sxm", "sglang", tp=8, moe_tp=1, moe_ep=8)
    trtllm = dataclasses.replace(sglang, backend="trtllm")
    trt_layer = (124.11 - TRTLLM_REQUEST_PATH_MS) / 61
    assert [draft_layer_runs(dataclasses.replace(sglang, nextn=n)) for n in (0, 1, 3)] == [0, 1, 1]
    assert [draft_layer_runs(dataclasses.replace(trtllm, nextn=n)) for n in (0, 1, 3)] == [0, 1, 3]
    assert prefill_floor_ms(dataclasses.replace(sglang, nextn=3), None) == pytest.approx(140.76 * 62 / 61, rel=1e-12)
    assert prefill_floor_ms(dataclasses.replace(trtllm, nextn=3), None) == pytest.approx(trt_layer * 64, rel=1e-12)
    assert prefill_floor_ms(trtllm, None) == pytest.approx(trt_layer * 61, rel=1e-12)


def test_a_host_point_matches_the_deployment_s_speculative_decoding():
    """GLM-5 has a point without speculative decoding (8xB200, 244 ms over 78 layers) and one with EAGLE (8xH200, 282.34 ms
    over 78 + the draft layer): each deployment takes the one that matches it; Qwen3.5, with only its MTP point, takes that
    one either way."""
    glm = Deployment("zai-org/GLM-5-FP8", "b200_sxm", "sglang", tp=8, moe_tp=8, moe_ep=1)
    assert prefill_floor_ms(glm, None) == pytest.approx(244.0, rel=1e-12)
    assert prefill_floor_ms(dataclasses.replace(glm, nextn=3), None) == pytest.approx(282.34, rel=1e-12)  # its 78 layers + the draft's
    assert eager_cost(Backend.SGLANG, "zai-org/GLM-5-FP8", True, speculative=True).per_layer_ms == pytest.approx(282.34 / 79)
    qwen = (208.46 - SGLANG_SHAPE_COMPILE_MS) / 61
    for speculative in (False, True):
        assert eager_cost(Backend.SGLANG, "Qwen/Qwen3.5-397B-A17B", True, speculative).per_layer_ms == pytest.approx(qwen)


@pytest.mark.parametrize("impl", IMPLS)
def test_overlap_scheduling_returns_a_pass_s_first_tokens_after_the_next_pass_is_launched(impl):
    """Two clients, one whole prompt per pass (the budget holds a prompt and a decoder), a host-bound prefill of
    40 ms against 10 ms of GPU work: under overlap scheduling the first client's first token leaves
    with the launch of the second client's prefill, 40 ms later; without it, at its pass's end. The
    delay spans TTFT only: the closed-loop identity still holds (TPOT spans from the delivered token)."""
    pricer = affine_pricer(10.0, 0.0, 0.0, 1.0, 1.0, 2.0)
    plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0), 2, 512, 8)

    def run(overlap):
        spec = AggSpec(EngineSettings(600, False, overlap_scheduler=overlap), prefill_floor_ms=40.0)
        return replay_agg(plan, spec, pricer, impl)

    on, off = run(True), run(False)
    assert off.stats.ttft_max == on.stats.ttft_max == 80.0  # the second client's pass is followed by a decode pass
    assert on.stats.ttft_mean == off.stats.ttft_mean + 40.0 / 2
    assert on.stats.tpot_mean < off.stats.tpot_mean
    assert on.stats == replay_agg(plan, AggSpec(EngineSettings(600, False), prefill_floor_ms=40.0), pricer, "python" if impl == "numba" else "numba").stats


@pytest.mark.parametrize("impl", IMPLS)
def test_overlap_scheduling_takes_a_completed_client_s_next_request_two_passes_after_the_next(impl):
    """Under overlap scheduling the loop iteration that launches pass n+1 returns pass n's tokens
    only after the launch, and the next iteration polls for requests at once, while pass n+1 runs, to
    form pass n+2: a client whose request completes in pass n sends its next one after pass n+2 was
    formed, so it joins pass n+3. Two clients (osl 2 and 6), flat prices (a prefill pass 10 ms, a
    decode pass 5 ms, no host floor so no first-token delay): the first client's next request waits
    out two of the other client's decode passes (TTFT 20 ms, not 10); an engine with nothing else to
    run takes it at once (C = 1: unchanged)."""
    pricer = flat_pricer(10.0, 5.0)

    def run(overlap, clients=2, osl=(2, 6, 2)):
        plan = RunPlan(clients, 0, 3, 3, np.array([8, 8, 8]), np.array(osl))
        return replay_agg(plan, AggSpec(EngineSettings(600, False, mixed_batches=False, overlap_scheduler=overlap)), pricer, impl).stats

    on, off = run(True), run(False)
    assert (off.ttft_max, on.ttft_max) == (10.0, 20.0)
    assert on.ttft_mean == pytest.approx(off.ttft_mean + 10.0 / 3, rel=1e-12)
    alone_on, alone_off = run(True, 1, (2, 2, 2)), run(False, 1, (2, 2, 2))
    assert alone_on.ttft_max == pytest.approx(alone_off.ttft_max, rel=1e-12) == 10.0


@pytest.mark.parametrize("impl", IMPLS)
def test_under_overlap_a_host_bound_launch_runs_while_the_previous_pass_is_on_the_gpu(impl):
    """The loop iteration that launches pass n+1 starts once pass n is launched and pass n-1 returned, so an eager
    launch overlaps the GPU time of the pass before it. Two clients (osl 2 and 6), flat prices (prefill 10 ms, decode
    5 ms), a 30 ms host floor: the first client's next request, dispatched at 35, is taken in by the intake at 40 (the
    start of the decode pass 40-45, which was launched at once) and its prefill's 30 ms launch starts then, so that pass
    ends at 70 and its TTFT is 35 ms (45 - 35 + 25), not the 40 of a launch started at the decode pass's end. Without
    overlap the intake at 35 takes it at once (TTFT 30)."""
    plan = RunPlan(2, 0, 3, 3, np.array([8, 8, 8]), np.array((2, 6, 2)))

    def run(overlap):
        spec = AggSpec(EngineSettings(600, False, mixed_batches=False, overlap_scheduler=overlap), prefill_floor_ms=30.0)
        return replay_agg(plan, spec, flat_pricer(10.0, 5.0), impl).stats

    on, off = run(True), run(False)
    assert (on.ttft_max, off.ttft_max) == (35.0, 30.0)
    assert on.ttft_mean == pytest.approx((30.0 + 30.0 + 35.0) / 3, rel=1e-12)


def test_a_launch_that_ends_with_its_pass_keeps_the_two_replays_equal():
    """A compile stall makes a pass's end and its launch's end two sums that round differently; the next iteration's start
    is held within the pass (agg_calendar: launched <= the pass's end), so no later pass sees a negative lead and the
    Python and Numba replays agree bit for bit (a case where they differed by one ulp without it)."""
    plan = RunPlan(1, 0, 3, 3, np.array([159, 285, 49]), np.array([2, 7, 10]))
    settings = EngineSettings(256, True, mixed_batches=False, recv_interval=3, prefix_compile_ms=13328.49352440608, overlap_scheduler=True)
    spec = AggSpec(settings, turnaround_ms=29.224036251468714, prefill_floor_ms=38.858556590789846)
    pricer = affine_pricer(9.687748365230892, 0.19335683248984972, 0.0, 1.0, -np.inf, 34.74884101734917, 0.3830913830520506, 0.0)
    assert replay_agg(plan, spec, pricer, "python").same_as(replay_agg(plan, spec, pricer, "numba"))


def test_the_prefill_floor_holds_only_passes_that_prefill():
    """A pass that prefills lasts at least the floor, in both implementations; decode-only passes
    keep their price (TPOT unchanged at C = 1), and a floor below every prefill pass changes nothing."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)
    plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=0.5), 1, 512, 64)

    def run(floor, impl="numba"):
        return replay_agg(plan, AggSpec(EngineSettings(4096, True), prefill_floor_ms=floor), pricer, impl).stats

    assert run(5.0) == run(0.0)
    assert run(100.0).ttft_max == 100.0 and run(100.0).tpot_mean == run(0.0).tpot_mean
    assert run(100.0) == run(100.0, "python")
    with pytest.raises(InvalidInputError, match="prefill_floor_ms"):
        AggSpec(EngineSettings(4096, True), prefill_floor_ms=-1.0)


def test_a_pass_pays_the_shape_compile_once_per_new_token_count():
    """SGLang's FLA l2norm compiles per token count: a prefilling pass whose tokens the run has not
    seen lasts shape_compile_ms longer, in both implementations. C = 1 with fixed lengths compiles
    once (the first TTFT only); lengths that vary compile again; decode-only passes never do."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)

    def run(compile_ms, range_ratio, impl="numba"):
        plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=range_ratio), 1, 512, 64)
        return replay_agg(plan, AggSpec(EngineSettings(4096, True, shape_compile_ms=compile_ms)), pricer, impl).stats

    fixed, fixed_compiling = run(0.0, 1.0), run(90.0, 1.0)
    assert fixed_compiling.ttft_max == pytest.approx(fixed.ttft_max + 90.0) and fixed_compiling.ttft_mean == pytest.approx(fixed.ttft_mean + 90.0 / 4)
    assert fixed_compiling.tpot_mean == fixed.tpot_mean
    varied, varied_compiling = run(0.0, 0.5), run(90.0, 0.5)
    assert varied_compiling.ttft_mean == pytest.approx(varied.ttft_mean + 90.0)  # four distinct prompt lengths at C = 1
    assert run(90.0, 0.5) == run(90.0, 0.5, "python")
    with pytest.raises(InvalidInputError, match="shape_compile_ms"):
        EngineSettings(4096, True, shape_compile_ms=-1.0)


def test_the_first_pass_that_extends_a_prefix_pays_the_prefix_compile_once():
    """SGLang's trtllm_mla backend builds FlashInfer's CUTLASS FMHA at the first prefix extend: the
    run's first pass with a chunk past token 0 (a prompt's second chunk, or past a cached prefix)
    lasts prefix_compile_ms longer, once, in both implementations; prompts that fit the budget
    uncached never pay it."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)

    def run(compile_ms, budget, prefix=0, impl="numba"):
        plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=1.0), 1, 512, 64)
        spec = AggSpec(EngineSettings(budget, True, prefix_compile_ms=compile_ms), prefix=prefix)
        return replay_agg(plan, spec, pricer, impl).stats

    assert run(20_000.0, 4096) == run(0.0, 4096)  # whole prompts from token 0: nothing extends a prefix
    chunked, chunked_compiling = run(0.0, 256), run(20_000.0, 256)
    assert chunked_compiling.ttft_max == pytest.approx(chunked.ttft_max + 20_000.0)
    assert chunked_compiling.ttft_mean == pytest.approx(chunked.ttft_mean + 20_000.0 / 4)  # the first request only
    assert chunked_compiling.tpot_mean == pytest.approx(chunked.tpot_mean)
    cached, cached_compiling = run(0.0, 4096, prefix=128), run(20_000.0, 4096, prefix=128)
    assert cached_compiling.ttft_mean == pytest.approx(cached.ttft_mean + 20_000.0 / 4)
    assert run(20_000.0, 256, impl="python") == chunked_compiling
    with pytest.raises(InvalidInputError, match="prefix_compile_ms"):
        EngineSettings(4096, True, prefix_compile_ms=-1.0)


def test_under_overlap_the_prefix_compile_holds_the_previous_pass_first_tokens_too():
    """The compile is host time: under overlap scheduling the tokens of the pass before it go out only once
    the compiling pass is launched, so at C = 2 both first prompts' TTFTs carry it (one chunk each side of
    the budget); without overlap only the prompt the compiling pass completes does. Both prompts arrive at once."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)
    plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0, staggered=False), 2, 512, 8)

    def rise(overlap, impl):
        def ttft(compile_ms):
            spec = AggSpec(EngineSettings(768, True, prefix_compile_ms=compile_ms, overlap_scheduler=overlap))
            return replay_agg(plan, spec, pricer, impl).stats.ttft_mean

        return ttft(20_000.0) - ttft(0.0)

    for impl in ("numba", "python"):
        assert rise(True, impl) == pytest.approx(20_000.0, rel=1e-3)
        assert rise(False, impl) == pytest.approx(20_000.0 / 2, rel=1e-3)


def test_without_mixed_batches_decoders_pause_while_prompts_prefill():
    """SGLang's default: a pass that prefills carries no decoder. At C = 2 with staggered prompts a
    decoder skips the other prompt's prefill pass: its TPOT grows; C = 1 is unchanged."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)

    def run(clients, mixed, impl="numba"):
        plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=0.5), clients, 512, 64)
        return replay_agg(plan, AggSpec(EngineSettings(4096, True, mixed_batches=mixed)), pricer, impl).stats

    assert run(1, False) == run(1, True)
    assert run(2, False).tpot_mean > run(2, True).tpot_mean
    assert run(2, False) == run(2, False, "python")


def test_recv_interval_holds_new_requests_behind_running_decodes():
    """SGLang's --scheduler-recv-interval n: a request that arrives while decodes run is taken in
    only after up to n decode passes. At C = 1 nothing else runs (the scheduler idles and takes
    each request in at once): unchanged; at C = 4 the staggered arrivals wait, so TTFT grows, and
    they are prefilled together, so fewer prefill passes interrupt the decoders and TPOT shrinks;
    Numba equals the oracle."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)

    def run(clients, interval, impl="numba"):
        plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=0.5), clients, 512, 64)
        return replay_agg(plan, AggSpec(EngineSettings(4096, True, mixed_batches=False, recv_interval=interval)), pricer, impl).stats

    assert run(1, 30) == run(1, 1)
    assert run(4, 30).ttft_mean > run(4, 1).ttft_mean and run(4, 30).tpot_mean < run(4, 1).tpot_mean
    assert run(4, 30) == run(4, 30, "python") and run(4, 1) == run(4, 1, "python")
    with pytest.raises(InvalidInputError, match="recv_interval"):
        EngineSettings(8192, True, recv_interval=0)


def test_batch_waiting_holds_prefill_beside_running_decodes():
    """TRT-LLM batch waiting (batch_wait_timeout_iters / batch_wait_max_tokens_ratio): a prompt that
    would be prefilled beside running decoders is held, the pass only decoding, until the held
    passes reach the timeout or the pass's tokens reach the ratio of the budget. At C = 1 no
    decoder runs beside a prompt: unchanged. At C = 4 TTFT grows by at most the timeout's decode
    passes per request; a ratio the pass already reaches, or a timeout without a ratio (the token
    test always passes), holds nothing; Numba equals the oracle."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)

    def run(clients, iters, ratio, impl="numba"):
        plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=0.5), clients, 512, 64)
        settings = EngineSettings(2048, False, batch_wait_iters=iters, batch_wait_tokens_ratio=ratio)
        return replay_agg(plan, AggSpec(settings), pricer, impl).stats

    off = run(4, 0, 0.0)
    held = run(4, 20, 0.9)
    assert run(1, 20, 0.9) == run(1, 0, 0.0)
    assert off.ttft_mean < held.ttft_mean <= off.ttft_mean + 20 * off.tpot_mean * 1.5
    assert run(4, 20, 0.1) == off  # one 256-512-token prompt beside the decoders already fills 10% of 2048
    assert run(4, 20, 0.0) == off
    assert held == run(4, 20, 0.9, "python")
    with pytest.raises(InvalidInputError, match="batch_wait_iters"):
        EngineSettings(8192, False, batch_wait_iters=-1)
    with pytest.raises(InvalidInputError, match="batch_wait_tokens_ratio"):
        EngineSettings(8192, False, batch_wait_tokens_ratio=float("nan"))


def test_batch_waiting_is_off_under_attention_dp():
    """TRT-LLM holds no prefill under attention DP (PyExecutor._schedule): the replay drops the settings."""
    deployment = Deployment("deepseek-ai/DeepSeek-V3", "h200_sxm", "trtllm", tp=1, attention_dp=8, moe_ep=8)
    row = {"bs": 4, "isl": 1024, "osl": 64, "concurrency": 32}
    case = agg_case(row, ReplayOptions("engine", settings=EngineSettings(8192, False, batch_wait_iters=20, batch_wait_tokens_ratio=0.9)), deployment)
    assert (case.spec.settings.batch_wait_iters, case.spec.settings.batch_wait_tokens_ratio, case.spec.settings.step_token_budget) == (0, 0.0, 8192)


def _balanced(clients, timeout, batching_wait, budget=2048, impl="numba"):
    """Replay stats under TRT-LLM's attention-DP balance (timeout 0: off)."""
    pricer = affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001)
    plan = run_plan(Benchmark(prompts_per_client=4, range_ratio=0.5), clients, 512, 64)
    settings = EngineSettings(budget, False, adp_balance_iters=timeout, adp_batching_wait_iters=batching_wait)
    return replay_agg(plan, AggSpec(settings), pricer, impl).stats


def test_attention_dp_balance_holds_prefill_until_the_timeout_count():
    """TRT-LLM's attention-DP balance (enable_balance): every pass counts, and a prompt beside
    running decoders waits for the count to reach the timeout. At C = 1 no decoder runs beside a
    prompt: unchanged. At C = 4 TTFT grows, by at most the timeout's decode passes per request; a
    timeout of 1 releases every pass; Numba equals the oracle."""
    off = _balanced(4, 0, 0)
    held = _balanced(4, 20, 0)
    assert _balanced(1, 20, 0) == _balanced(1, 0, 0)
    assert off.ttft_mean < held.ttft_mean <= off.ttft_mean + 20 * off.tpot_mean * 1.5
    assert _balanced(4, 1, 0) == off
    assert held == _balanced(4, 20, 0, impl="python")
    for field in ("adp_balance_iters", "adp_batching_wait_iters"):
        with pytest.raises(InvalidInputError, match=field):
            EngineSettings(8192, False, **{field: -1})


def test_attention_dp_balance_counts_every_pass_in_both_implementations():
    """The count runs on passes that hold nothing too (PyExecutor._balance_adp_requests counts every
    pass in which not every rank holds a prefill), so a prompt arriving late in the count goes at
    the timeout, not a full timeout later; a backlog releases at once and restarts the count; a
    pass without decoders releases. Script: (walked, decoders, draining) -> held."""
    script = [(0, 4, False)] * 3 + [(1, 4, False), (1, 4, False), (1, 4, True), (1, 4, False), (1, 0, False)]
    expected = [False] * 3 + [True, False, False, True, False]
    balance = _AdpBalance(timeout=5, batching_wait=0)
    count = batched = 0
    for (walked, decoders, draining), held in zip(script, expected, strict=True):
        hold, count, batched = compiled._adp_balance(count, batched, 5, 0, draining, walked, decoders)
        balance.draining = draining
        assert hold == balance.holds(walked, decoders) == held
        assert count == balance.counted


def test_attention_dp_balance_batching_wait_in_both_implementations():
    """When every rank holds a prefill (a backlog), prefills beside decoders wait up to
    batching_wait passes; a pass without decoders releases them and leaves the batching count as
    it was (PyExecutor._balance_adp_requests). Script: (walked, decoders) -> (held, batched)."""
    script = [(1, 4), (1, 0), (1, 4), (1, 4), (1, 4)]
    expected = [(True, 1), (False, 1), (True, 2), (False, 0), (True, 1)]
    balance = _AdpBalance(timeout=5, batching_wait=2, draining=True)
    count = batched = 0
    for (walked, decoders), (held, waited) in zip(script, expected, strict=True):
        hold, count, batched = compiled._adp_balance(count, batched, 5, 2, True, walked, decoders)
        assert (hold, batched) == (balance.holds(walked, decoders), balance.batched) == (held, waited)


def test_attention_dp_balance_count_wraps_at_the_timeout_across_a_decode_stretch():
    """Numba replays decode-only stretches in one go and must wrap the count at the timeout as the
    oracle's pass-by-pass count does (a stretch longer than the timeout, then a prompt arrives)."""
    plan = run_plan(Steady(0, 4), 2, 2, 5)
    spec = AggSpec(EngineSettings(3, False, adp_balance_iters=2))
    pricer = affine_pricer(0.0, 0.03125, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0)
    assert replay_agg(plan, spec, pricer).stats == replay_agg(plan, spec, pricer, "python").stats


def test_batch_waiting_and_the_attention_dp_balance_exclude_each_other():
    plan = run_plan(Steady(0, 4), 2, 64, 8)
    spec = AggSpec(EngineSettings(2048, False, batch_wait_iters=20, batch_wait_tokens_ratio=0.9, adp_balance_iters=60))
    with pytest.raises(InvalidInputError, match="adp_balance_iters 60"):
        replay_agg(plan, spec, affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001))


def test_attention_dp_balance_releases_a_backlog_and_waits_for_batching():
    """A backlog left at a release (one 256-512-token prompt fits a 600-token budget beside the
    decoders) stands for every rank holding a prompt: it goes at the next pass, or after the
    batching wait when one is set; Numba equals the oracle."""
    drained, batched = _balanced(8, 50, 0, budget=600), _balanced(8, 50, 5, budget=600)
    assert drained.ttft_mean < batched.ttft_mean
    assert drained.ttft_mean < _balanced(8, 50, 0, budget=600 * 8).ttft_mean + 50 * drained.tpot_mean
    assert batched == _balanced(8, 50, 5, budget=600, impl="python")


def test_attention_dp_balance_runs_under_attention_dp_and_batch_waiting_without():
    """TRT-LLM's PyExecutor._schedule balances prefills under attention DP and batch-waits them
    without: the replay keeps the settings that apply."""
    settings = EngineSettings(8192, False, batch_wait_iters=20, batch_wait_tokens_ratio=0.9, adp_balance_iters=60, adp_batching_wait_iters=10)
    row = {"bs": 4, "isl": 1024, "osl": 64, "concurrency": 32}
    dp = Deployment("deepseek-ai/DeepSeek-V3", "h200_sxm", "trtllm", tp=1, attention_dp=8, moe_ep=8)
    tp = Deployment("deepseek-ai/DeepSeek-V3", "h200_sxm", "trtllm", tp=8, moe_ep=8)
    kept = {name: agg_case(dict(row, concurrency=32 if d is dp else 4), ReplayOptions("engine", settings=settings), d).spec.settings
            for name, d in (("dp", dp), ("tp", tp))}  # fmt: skip
    assert (kept["dp"].batch_wait_iters, kept["dp"].adp_balance_iters, kept["dp"].adp_batching_wait_iters) == (0, 60, 10)
    assert (kept["tp"].batch_wait_iters, kept["tp"].adp_balance_iters, kept["tp"].adp_batching_wait_iters) == (20, 0, 0)


def test_agg_row_figures_report_the_settings_replayed():
    row = dict(run_agg(QWEN, AggPoint(2048, 128, 4)).row)
    settings = EngineSettings(8192, True, 16, mixed_batches=False, recv_interval=30, batch_wait_iters=20, batch_wait_tokens_ratio=0.9)
    out = closed_loop_for_agg_row(row, QWEN, settings=settings)
    assert (out["step_token_budget"], out["chunked_prefill"], out["max_num_seqs"], out["mixed_batches"], out["recv_interval"]) == (8192, True, 16, False, 30)
    assert (out["batch_wait_iters"], out["batch_wait_tokens_ratio"]) == (20, 0.9)


def test_engine_refinement_of_result_rows():
    rows = [dict(run_agg(QWEN, AggPoint(1024, 64, b)).row) for b in (1, 8)]
    out = refine_closed_loop_latency(pd.DataFrame(rows))
    assert (out.refine_reason == "").all() and out.ttft_refined[1] >= out.ttft_refined[0]


# ---------------------------------------------------------------------------------------------
# The refine command
# ---------------------------------------------------------------------------------------------


def test_refine_command_round_trip(tmp_path, capsys):
    src, dst = tmp_path / "rows.csv", tmp_path / "refined.parquet"
    pd.DataFrame([AGG_ROW, AGG_ROW | {"bs": 0}]).to_csv(src, index=False)
    assert main(["refine", str(src), str(dst), "--pricing", "row", "--protocol", "benchmark"]) == 0
    out = pd.read_parquet(dst)
    assert list(out.columns[: len(AGG_ROW)]) == list(AGG_ROW) and out.ttft_refined.notna().tolist() == [True, False]
    assert "1 unpriceable" in capsys.readouterr().err


@pytest.mark.parametrize(
    "source,target,flags",
    [
        ("rows.csv", "out.txt", []),
        ("rows.csv", "out.csv", ["--budget", "0"]),
        ("missing.csv", "out.csv", []),
        ("rows.csv", "out.csv", ["--budget", "8192", "--kv-free-memory-fraction", "1.5"]),
        ("rows.csv", "out.csv", ["--kv-free-memory-fraction", "0.9"]),
        ("rows.csv", "out.csv", ["--budget", "8192", "--pricing", "row", "--kv-free-memory-fraction", "0.9"]),
        ("rows.csv", "out.csv", ["--gpu-memory-utilization", "0.9"]),
        ("rows.csv", "out.csv", ["--budget", "8192", "--gpu-memory-utilization", "0"]),
    ],
    ids=[
        "bad-format",
        "bad-budget",
        "missing-input",
        "bad-kv-fraction",
        "kv-fraction-without-budget",
        "kv-fraction-row-pricing",
        "utilization-without-budget",
        "bad-utilization",
    ],  # fmt: skip
)
def test_refine_command_rejects_bad_input(tmp_path, capsys, source, target, flags):
    pd.DataFrame([AGG_ROW]).to_csv(tmp_path / "rows.csv", index=False)
    assert main(["refine", str(tmp_path / source), str(tmp_path / target), *flags]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_refine_command_caps_trtllm_rows_at_the_kv_pool(tmp_path):
    """--kv-free-memory-fraction reaches the replay: a TRT-LLM row whose pool holds fewer requests
    than its batch queues (TTFT up); a row of another backend reports why instead of a figure."""
    rows = [dict(run_agg(KV_TRT, AggPoint(4096, 256, 32)).row),
            dict(run_agg(dataclasses.replace(KV_TRT, backend="vllm"), AggPoint(4096, 256, 32)).row)]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "rows.csv", index=False)

    def refined(*flags):
        assert main(["refine", str(tmp_path / "rows.csv"), str(tmp_path / "out.csv"), "--budget", "8192", "--no-chunked", *flags]) == 0
        return pd.read_csv(tmp_path / "out.csv", keep_default_na=False)

    free, capped = refined(), refined("--kv-free-memory-fraction", "0.02")
    assert float(capped.ttft_refined[0]) > 2 * float(free.ttft_refined[0])
    assert free.refine_reason[1] == "" and "kv_free_memory_fraction" in capped.refine_reason[1]
    assert free.max_num_seqs_refined[0] == 32.0 and 1.0 <= float(capped.max_num_seqs_refined[0]) < 32  # the cap is shown
    assert capped.max_num_seqs_refined[1] == ""  # unpriced row: no cap


def test_kv_running_cap_reserves_whole_requests():
    """GUARANTEED_NO_EVICT: a request holds the KV bytes of its prompt and output; at least one runs;
    no pool, no cap."""
    per_token = lambda n: 10.0 * n  # noqa: E731
    assert kv_running_cap(10_500.0, per_token, 100.0) == 10
    assert kv_running_cap(9_950.0, per_token, 99.5) == 9  # ceil(99.5) = 100 tokens a request (99 would hold 10)
    assert kv_running_cap(999.0, per_token, 100.0) == 1
    assert kv_running_cap(0.0, per_token, 100.0) is None and kv_running_cap(-5.0, per_token, 100.0) is None


def test_trtllm_kv_pool_is_the_fraction_of_what_the_reserve_leaves():
    facts = deployment_facts(KV_TRT)
    policy = POLICIES[KV_TRT.backend]
    whole = kv_pool_bytes(facts, policy, 8192, 1.0)
    assert 0 < whole < facts.capacity_bytes - facts.weights_bytes
    assert kv_pool_bytes(facts, policy, 8192, 0.5) == pytest.approx(0.5 * whole, rel=1e-12)
    assert kv_pool_bytes(facts, policy, 16384, 1.0) < whole  # a larger step reserves more activations


KV_TRT = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "trtllm", tp=2)


def _kv_replay(deployment, bs, **memory):
    """The 4096/256 benchmark replay of bs clients at a budget of 8192 (chunked on vLLM only) with the KV memory setting given."""
    row = dict(run_agg(deployment, AggPoint(4096, 256, bs)).row)
    settings = EngineSettings(8192, deployment.backend is Backend.VLLM, max_num_seqs=bs, **memory)
    return closed_loop_for_agg_row(row, deployment, settings=settings, protocol=Benchmark(prompts_per_client=2))


def test_trtllm_replay_caps_running_requests_at_the_kv_pool():
    """With a small KV share the pool holds fewer requests than the clients: the replay caps them
    (the cap is kv_running_cap's at the benchmark's mean lengths, 0.9 L) and the waiting clients
    queue, so TTFT grows; a share whose pool holds every client changes nothing."""
    facts = deployment_facts(KV_TRT)
    fraction = 0.02
    pool = kv_pool_bytes(facts, POLICIES[KV_TRT.backend], 8192, fraction)
    cap = kv_running_cap(pool, facts.kv_bytes_per_sequence, 0.9 * 4096 + 0.9 * 256)
    assert 1 <= cap < 32
    capped, free = _kv_replay(KV_TRT, 32, kv_free_memory_fraction=fraction), _kv_replay(KV_TRT, 32)
    assert (capped["max_num_seqs"], free["max_num_seqs"]) == (cap, 32)
    assert capped["ttft"] > 2 * free["ttft"]
    assert _kv_replay(KV_TRT, 4, kv_free_memory_fraction=0.9) == _kv_replay(KV_TRT, 4) | {"kv_free_memory_fraction": 0.9}


KV_VLLM = Deployment("Qwen/Qwen3-32B", "h100_sxm", "vllm", tp=1)


def test_vllm_kv_pool_is_the_utilization_less_the_weights():
    facts = deployment_facts(KV_VLLM)
    assert vllm_kv_pool_bytes(facts, 0.9) == 0.9 * facts.capacity_bytes - facts.weights_bytes
    assert vllm_kv_pool_bytes(facts, 0.5) < 0  # a share below the weights leaves no pool


def test_vllm_replay_caps_running_requests_at_the_kv_pool():
    """vLLM's 0.9 of an H100 less Qwen3-32B's BF16 weights holds fewer 4k-token requests than 32
    clients: the replay caps them where each holds its prompt and half its output (blocks allocated
    as tokens arrive, 0.9 L mean lengths), and the waiting clients queue, so TTFT grows; without a
    documented utilization nothing is capped."""
    facts = deployment_facts(KV_VLLM)
    cap = kv_running_cap(vllm_kv_pool_bytes(facts, 0.9), facts.kv_bytes_per_sequence, 0.9 * 4096 + 0.5 * 0.9 * 256)
    assert 1 <= cap < 32
    capped, free = _kv_replay(KV_VLLM, 32, gpu_memory_utilization=0.9), _kv_replay(KV_VLLM, 32)
    assert (capped["max_num_seqs"], free["max_num_seqs"]) == (cap, 32)
    assert capped["ttft"] > 2 * free["ttft"]
    assert _kv_replay(KV_VLLM, 2, gpu_memory_utilization=0.9) == _kv_replay(KV_VLLM, 2) | {"gpu_memory_utilization": 0.9}


def test_vllm_defaults_cap_at_the_kv_pool():
    """The engine defaults carry vLLM's 0.9, so a replay without settings is capped as with it."""
    run = AggRun(KV_VLLM, 4096, 256, 32)
    defaults = agg_engine_case(run, None, Steady(), "native").spec.settings
    assert defaults.gpu_memory_utilization == 0.9 and defaults.max_num_seqs < 32


@pytest.mark.parametrize(
    "deployment, name, value, what",
    [(Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "trtllm", tp=2), "gpu_memory_utilization", 0.9, "KV-cache setting"),
     (Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2), "gpu_memory_utilization", 0.9, "KV-cache setting"),
     (Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm", tp=2), "kv_free_memory_fraction", 0.9, "KV-cache setting"),
     (Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2), "cudagraph_max_tokens", 2048, "CUDA-graph capture size")],
)  # fmt: skip
def test_an_engine_own_setting_belongs_to_its_engine(deployment, name, value, what):
    settings = EngineSettings(8192, True, **{name: value})
    with pytest.raises(InvalidInputError, match=f"{name} is .*'s {what}; backend '{deployment.backend.value}' has none"):
        kv_capped(settings, deployment, 4, 1024, 0, 64, Steady())


def test_kv_cap_takes_the_protocols_mean_lengths_and_keeps_a_tighter_cap():
    """Steady runs whole lengths L, the benchmark (1 + r) / 2 x L (visual tokens unscaled); a
    max_num_seqs at or below the pool's cap stays."""
    facts = deployment_facts(KV_TRT)
    pool = kv_pool_bytes(facts, POLICIES[KV_TRT.backend], 8192, 0.02)
    settings = EngineSettings(8192, False, max_num_seqs=64, kv_free_memory_fraction=0.02)
    steady = kv_capped(settings, KV_TRT, 64, 4096, 0, 256, Steady()).max_num_seqs
    bench = kv_capped(settings, KV_TRT, 64, 4096, 0, 256, Benchmark(range_ratio=0.5)).max_num_seqs
    visual = kv_capped(settings, KV_TRT, 64, 2048, 2048, 256, Steady()).max_num_seqs
    assert steady == kv_running_cap(pool, facts.kv_bytes_per_sequence, 4096 + 256) < bench
    assert bench == kv_running_cap(pool, facts.kv_bytes_per_sequence, 0.75 * 4096 + 0.75 * 256)
    assert visual == steady  # 2048 text + 2048 visual tokens hold as much KV as 4096 text tokens
    tighter = dataclasses.replace(settings, max_num_seqs=steady - 1)
    assert kv_capped(tighter, KV_TRT, 64, 4096, 0, 256, Steady()) is tighter


@pytest.mark.parametrize(
    "deployment, match",
    [(Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm", tp=2), "backend 'vllm'"),
     (Deployment("deepseek-ai/DeepSeek-V3", "h200_sxm", "trtllm", tp=8, moe_tp=8, moe_ep=1), "not natively modelled")],
)  # fmt: skip
def test_a_kv_fraction_needs_trtllm_and_the_native_memory_model(deployment, match):
    row = {"bs": 4, "isl": 1024, "osl": 64, "concurrency": 4}
    with pytest.raises(InvalidInputError, match=match):
        agg_case(row, ReplayOptions("engine", settings=EngineSettings(8192, False, kv_free_memory_fraction=0.9)), deployment)


def test_a_kv_fraction_needs_engine_pricing():
    with pytest.raises(InvalidInputError, match="engine pricing"):
        agg_case(AGG_ROW, ReplayOptions("row", settings=EngineSettings(8192, False, kv_free_memory_fraction=0.9)))


@pytest.mark.parametrize("name", ["kv_free_memory_fraction", "gpu_memory_utilization"])
@pytest.mark.parametrize("fraction", [0.0, 1.5, float("nan"), True, "0.9"])
def test_kv_fraction_must_be_a_share(name, fraction):
    with pytest.raises(InvalidInputError, match=name):
        EngineSettings(8192, False, **{name: fraction})


@pytest.mark.parametrize("impl", IMPLS)
def test_a_full_decode_batch_holds_the_first_token_back(impl):
    """Disaggregated engines deliver the first token when a decode worker admits the request: with
    one decode slot and two clients the second request waits for the first to finish decoding; at
    its hand-off (the reference's tandem) it would not."""
    plan = run_plan(Steady(1, 4), 2, 512, 32)
    prefill, decode = flat_pricer(100.0, 0.0), flat_pricer(0.0, 10.0)
    on = replay_tandem(plan, TandemSpec(1, 1, decode_max_seqs=1, first_token_on_admission=True), prefill, decode, impl).stats
    off = replay_tandem(plan, TandemSpec(1, 1, decode_max_seqs=1), prefill, decode, impl).stats
    assert off.ttft_mean == pytest.approx(100.0, rel=0.5) and on.ttft_mean > off.ttft_mean + 100.0
    assert on.ttft_max >= 31 * 10.0  # a whole decode of the other request


@pytest.mark.parametrize("impl", IMPLS)
def test_a_busy_decode_worker_admits_a_hand_off_one_iteration_after_seeing_it(impl):
    """Two prompts at t = 0, one prefill worker (100 ms a prompt), decode iterations of 10 ms: the
    first hand-off (100 ms) finds the decode worker idle and is admitted at once; the second (200 ms)
    lands on an iteration boundary of the busy worker, which admits it there without the lag and at
    the next boundary (210 ms) with it (TRT-LLM's transfer-completion check, SGLang <= 0.5.9's
    prebuilt batch)."""
    plan = run_plan(Benchmark(prompts_per_client=1, range_ratio=1.0), 2, 512, 32)
    prefill, decode = flat_pricer(100.0, 0.0), flat_pricer(0.0, 10.0)
    spec = TandemSpec(1, 1, decode_max_seqs=8, first_token_on_admission=True)
    off = replay_tandem(plan, spec, prefill, decode, impl).stats
    on = replay_tandem(plan, dataclasses.replace(spec, admission_lag=True), prefill, decode, impl).stats
    assert (off.ttft_mean, off.ttft_max) == (pytest.approx(150.0), pytest.approx(200.0))
    assert (on.ttft_mean, on.ttft_max) == (pytest.approx(155.0), pytest.approx(210.0))


@pytest.mark.parametrize("pp, overlap", [(1, True), (2, False)])
def test_vllm_async_scheduling_is_off_under_pipeline_parallelism(pp, overlap):
    """vLLM turns its default async scheduling off when pipeline parallelism is on (VllmConfig: incompatible)."""
    run = AggRun(Deployment("Qwen/Qwen3-32B", "h200_sxm", "vllm", "0.24.0", tp=1, pp=pp), isl=512, osl=64, batch_size=4)
    assert agg_engine_case(run, None, Steady(), "native").spec.settings.overlap_scheduler is overlap
