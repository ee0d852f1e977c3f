"""Closed-loop replay properties over generated configurations, for the agg calendar and the P/D
tandem, row (affine) and engine pricing, steady and benchmark protocols:

* the Numba kernels equal the literal Python replay bit for bit (stall reports included);
* replays are deterministic;
* at C = 1 (no turnaround) every TTFT is exactly the solo prefill (plus the hand-off in disagg);
* steady protocol: C/X = TTFT + (osl - 1)*TPOT within 1/win_gens. Why that tolerance: the window
  opens and closes on completions, not on whole periods of the steady state (which can be long or
  aperiodic, e.g. head-of-line blocking without chunking), so the in-flight work at its two edges
  differs by at most about one request latency per client, 1/win_gens of the window's work
  (Little's law on the window). Periodic steady states close exactly (median error 1e-15 over
  5,000 random configurations); the worst seen was 0.32/win_gens;
* benchmark protocol (finite run, no turnaround): every client is busy from t = 0 to its last
  completion, so N * mean latency = C * T_end - the drain (the clients' idle time after their last
  request), exactly up to float rounding; with fixed lengths mean latency = TTFT + (osl - 1)*TPOT.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from estimator.closedloop import AggSpec, Benchmark, NoProgressError, Steady, TandemSpec, replay_agg, replay_tandem, run_plan
from estimator.closedloop.compiled import decode_progress
from estimator.closedloop.engine import PassModel, TableExtent, engine_tables
from estimator.closedloop.pricing import PassShape, affine_pricer, decode_fixed, decode_walk_ms, engine_ms, engine_pricer, row_pricer
from estimator.closedloop.spec import LIMIT_MESSAGE, NONFINITE_MESSAGE, STALLED_MESSAGE
from estimator.deployment import Deployment
from estimator.settings import EngineSettings

MAX_CLIENTS = 24
EXTENT = TableExtent(tokens=2048, chunks=64, chunk=2048, start=2048, rows=128, kv=4096)


@functools.cache
def qwen_tables():
    return engine_tables(PassModel(Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)), EXTENT)


affine_prices = st.builds(
    affine_pricer,
    prefill_base=st.floats(0.0, 20.0), prefill_slope=st.floats(0.001, 0.05), prefill_floor=st.sampled_from([0.0, 1.0]),
    prefill_divisor=st.sampled_from([1.0, 3.0, 512.0]), decode_floor=st.floats(0.5, 2.0), decode_base=st.floats(1.0, 12.0),
    decode_per_request=st.floats(0.0, 0.2), decode_per_kv=st.floats(0.0, 0.002),
)  # fmt: skip
row_prices = st.builds(row_pricer, st.floats(1.0, 200.0), st.integers(1, 4096), st.floats(1.0, 50.0))  # flat decode
engine_prices = st.sampled_from([1, 2]).map(lambda m: engine_pricer(qwen_tables(), m))
prices = st.one_of(affine_prices, row_prices, engine_prices)
protocols = st.one_of(st.builds(Steady, st.integers(0, 3), st.sampled_from([4, 8])), st.builds(Benchmark, st.integers(1, 4), st.sampled_from([0.5, 0.8, 1.0])))
progress = st.sampled_from([1.0, 1.0, 1.25, 1.5, 2.0])


@st.composite
def agg_configs(draw, clients=st.integers(1, MAX_CLIENTS), turnaround=st.sampled_from([0.0, 0.0, 7.5]), protocol=protocols,
                compile_ms=st.sampled_from([0.0, 0.0, 90.0]), path=st.sampled_from([0.0, 0.0, 9.97])):  # fmt: skip
    """(plan, spec, pricer) of an agg replay."""
    isl = draw(st.integers(1, 1500))
    plan = run_plan(draw(protocol), draw(clients), isl, draw(st.integers(1, 48)))
    budget = draw(st.integers(2, 24) | st.integers(16, 2048))  # small budgets starve decoders
    wait_iters, wait_ratio = draw(
        st.sampled_from([(0, 0.0), (0, 0.0)]) | st.tuples(st.integers(0, 30), st.sampled_from([0.0, 0.1, 0.5, 0.9, 2.0]))
    )  # TRT-LLM batch waiting
    balance = (
        (0, 0) if wait_iters or wait_ratio else draw(st.sampled_from([(0, 0)]) | st.tuples(st.integers(1, 8) | st.integers(1, 60), st.integers(0, 10)))
    )  # its ADP balance
    settings_ = EngineSettings(budget, draw(st.booleans()), draw(st.none() | st.integers(1, MAX_CLIENTS)), mixed_batches=draw(st.booleans()),
                               recv_interval=draw(st.sampled_from([1, 1, 3, 30])), batch_wait_iters=wait_iters,
                               batch_wait_tokens_ratio=wait_ratio, adp_balance_iters=balance[0], adp_batching_wait_iters=balance[1],
                               shape_compile_ms=draw(compile_ms), prefix_compile_ms=draw(compile_ms), overlap_scheduler=draw(st.booleans()),
                               request_path_ms=draw(path))  # fmt: skip
    spec = AggSpec(
        settings_, prefix=draw(st.integers(0, int(plan.isl.min()) - 1)), decode_budget_tokens=draw(st.sampled_from([1, 1, 2])),
        tokens_per_decode=draw(progress), turnaround_ms=draw(turnaround), encoder_ms=draw(st.sampled_from([0.0, 0.0, 3.25])),
        dispatch_ms=draw(st.sampled_from([0.0, 0.0, 1.5])), prefill_floor_ms=draw(st.sampled_from([0.0, 0.0, 0.0, 2.0, 40.0])),
    )  # fmt: skip
    return plan, spec, draw(prices)


@st.composite
def tandem_configs(draw, clients=st.integers(1, MAX_CLIENTS), turnaround=st.sampled_from([0.0, 0.0, 7.5]), protocol=protocols,
                   osl=st.integers(1, 48), tokens_per_decode=progress, compile_ms=st.sampled_from([0.0, 0.0, 90.0])):  # fmt: skip
    """(plan, spec, prefill pricer, decode pricer) of a tandem replay."""
    plan = run_plan(draw(protocol), draw(clients), draw(st.integers(1, 1500)), draw(osl))
    bound = draw(st.booleans())
    spec = TandemSpec(
        draw(st.integers(1, 3)), draw(st.integers(1, 3)), prefill_batch=draw(st.integers(1, 4)), decode_max_seqs=draw(st.integers(1, 8)),
        prefix=draw(st.integers(0, int(plan.isl.min()) - 1)), tokens_per_decode=draw(tokens_per_decode), turnaround_ms=draw(turnaround),
        handoff_ms=draw(st.sampled_from([0.0, 2.5])), encoder_ms=draw(st.sampled_from([0.0, 3.25])),
        prefill_floor_ms=draw(st.sampled_from([0.0, 0.0, 40.0])), prefill_compile_ms=draw(compile_ms),
        first_token_on_admission=draw(st.booleans()), admission_lag=draw(st.booleans()), decode_bound_at_dispatch=bound,
        decode_intake_interval=draw(st.sampled_from([1, 2, 3, 10])) if bound else 1,
        prefill_overlap=draw(st.booleans()),
    )  # fmt: skip
    return plan, spec, draw(prices), draw(prices)


def outcome(replay, *args, impl):
    """The replay's result, or the message of the NoProgressError it reports."""
    try:
        return replay(*args, impl=impl)
    except NoProgressError as exc:
        return str(exc)


NO_PROGRESS = (STALLED_MESSAGE, "stalled: a prompt of", "stalled: a decode step needs", LIMIT_MESSAGE, NONFINITE_MESSAGE)


def check_or_no_progress(result, check, plan) -> None:
    """check(result, plan) for a replay that made progress; else the replay reported one of the
    documented no-progress outcomes (an assertion either way: no example is vacuous). The event
    statistics (--hypothesis-show-statistics) give the share of each."""
    if isinstance(result, str):
        event("no progress")
        assert result.startswith(NO_PROGRESS), result
    else:
        event("replayed")
        check(result, plan)


def same(a, b) -> bool:
    return a == b if isinstance(a, str) or isinstance(b, str) else a.same_as(b)


# ---------------------------------------------------------------------------------------------
# Numba == Python, determinism
# ---------------------------------------------------------------------------------------------


@given(agg_configs())
def test_agg_numba_equals_python(config):
    assert same(outcome(replay_agg, *config, impl="numba"), outcome(replay_agg, *config, impl="python"))


@given(tandem_configs())
def test_tandem_numba_equals_python(config):
    assert same(outcome(replay_tandem, *config, impl="numba"), outcome(replay_tandem, *config, impl="python"))


# The report's speculative decode rates (1 + accepted MTP drafts: 1.92, 2.58, 2.82), whose float
# sums floor unevenly, and exact ones; long outputs put many exceptions in each request's life.
speculative = st.sampled_from([1.25, 1.92, 2.58, 2.82, 3.0])


@given(tandem_configs(clients=st.integers(1, 12), osl=st.integers(2, 300), tokens_per_decode=speculative))
def test_tandem_speculative_cohort_equals_python(config):
    """The decode cohort at k != 1 (members' tokens and KV from compiled.decode_progress) is the
    literal per-request walk."""
    assert same(outcome(replay_tandem, *config, impl="numba"), outcome(replay_tandem, *config, impl="python"))


def progress_mismatches(k: float, osl_max: int, table) -> list[str]:
    """Where decode_progress(k, osl_max)'s table differs from requests decoded one by one as
    oracle._Run.decode does (progress += k, floor differences emitted, capped at osl)."""
    made, done_after, base, ex_n, ex_w = table
    exceptions = dict(zip(ex_n.tolist(), ex_w.tolist()))
    out = []
    for osl in range(2, osl_max + 1):
        progress, tokens, decodes, history = 0.0, 1, 0, [1]
        while tokens < osl:
            before, progress = progress, progress + k
            tokens += min(math.floor(progress) - math.floor(before), osl - tokens)
            decodes += 1
            history.append(1 + math.floor(progress))
        if done_after[osl] != decodes:
            out.append(f"osl {osl}: done after {done_after[osl]} decodes, walked {decodes}")
        if list(made[: decodes + 1]) != history:
            out.append(f"osl {osl}: uncapped tokens {list(made[: decodes + 1])}, walked {history}")
        for n in range(1, decodes):  # the increments a member's KV takes while in the cohort
            if made[n + 1] - made[n] != base + exceptions.get(n, 0):
                out.append(f"osl {osl}: decode {n + 1} adds {made[n + 1] - made[n]}, marked {base} + {exceptions.get(n, 0)}")
    return out


@given(st.floats(1.0, 4.0) | speculative, st.integers(1, 400))
def test_decode_progress_is_the_per_request_walk(k, osl_max):
    assert progress_mismatches(k, osl_max, decode_progress(k, osl_max)) == []


def test_decode_progress_comparison_flags_perturbed_table():
    made, done_after, base, ex_n, ex_w = decode_progress(1.92, 64)
    assert progress_mismatches(1.92, 64, (made, done_after, base, ex_n, ex_w)) == []
    later = done_after.copy()
    later[40] += 1
    heavier = ex_w.copy()
    heavier[0] += 1
    for perturbed in ((made, later, base, ex_n, ex_w), (made, done_after, base, ex_n, heavier), (made, done_after, base + 1, ex_n, ex_w)):
        assert progress_mismatches(1.92, 64, perturbed)


@given(st.integers(1, 96), st.sampled_from([1, 2]), st.sampled_from([1, 3, 8]), st.integers(1, 5000),
       st.lists(st.integers(0, 300), min_size=1, max_size=40), st.integers(-1, 80))  # fmt: skip
def test_decode_walk_prices_a_stretch_as_engine_ms(n_dec, multiplier, dp_ranks, kv_mean, steps, hint):
    """decode_fixed + decode_walk_ms (the stretches' decode prices: the KV cell walked forward from
    the previous pass's, or from any hint) equal engine_ms bit for bit, KV sums on and between
    nodes, past the axis and falling back below a stale cell."""
    pricer = engine_pricer(qwen_tables(), multiplier, dp_ranks)
    args = pricer.params, pricer.data, pricer.hdr
    none = np.zeros(0, dtype=np.int64)
    own, other, i, wi = decode_fixed(*args, n_dec)
    kv, cell = n_dec * kv_mean, hint
    for step in steps:
        kv += step if step % 7 else -step  # mostly growing, sometimes falling
        kv = max(kv, n_dec)
        walked, cell = decode_walk_ms(*args, n_dec, kv, own, other, i, wi, cell)
        assert walked == engine_ms(*args, 0, none, none, n_dec, kv)


@given(agg_configs(clients=st.integers(1, 64)), tandem_configs(clients=st.integers(1, 64)))
def test_replays_are_deterministic(agg, tandem):
    assert same(outcome(replay_agg, *agg, impl="numba"), outcome(replay_agg, *agg, impl="numba"))
    assert same(outcome(replay_tandem, *tandem, impl="numba"), outcome(replay_tandem, *tandem, impl="numba"))


# ---------------------------------------------------------------------------------------------
# C = 1: TTFT is the solo prefill, exactly
# ---------------------------------------------------------------------------------------------


def solo_prefill(plan, spec, pricer) -> float:
    """The request's own prefill passes, added in order: chunks of at most the budget, the encoder
    in the first one, each pass at least the prefill floor; under overlap a chunk's launch starts as
    the previous chunk's launch is done, so the floor binds less that launch's lead (agg_calendar)."""
    new, budget = int(plan.isl[0]) - spec.prefix, spec.settings.step_token_budget
    total, done, t, launched = 0.0, 0, spec.path_ms, None
    while done < new:
        take = min(budget, new - done)
        lead = 0.0 if launched is None else t - launched
        dur = max(pricer.pass_ms(PassShape((spec.prefix + done,), (take,), 0, 0)) + spec.encoder_ms * (done == 0), spec.prefill_floor_ms - lead)
        launched = t + min(max(spec.prefill_floor_ms - lead, 0.0), dur) if spec.settings.overlap_scheduler else None
        t += dur
        total += dur
        done += take
    return total


def assert_every_ttft_is(stats, ttft: float):
    """Every request's TTFT equals ttft: the extremes exactly, the mean to its own rounding."""
    assert stats.ttft_p50 == stats.ttft_p99 == stats.ttft_max == ttft
    assert stats.ttft_mean == pytest.approx(ttft, rel=1e-14)


fixed_lengths = st.one_of(st.builds(Steady, st.integers(0, 3), st.just(4)), st.builds(Benchmark, st.integers(1, 4), st.just(1.0)))


@given(agg_configs(clients=st.just(1), turnaround=st.just(0.0), protocol=fixed_lengths, compile_ms=st.just(0.0), path=st.sampled_from([0.0, 9.97])))
def test_single_client_agg_ttft_is_the_solo_prefill_plus_the_request_path(config):
    """Exactly the solo prefill without a request path (AggSpec.path_ms: the larger of EngineSettings.request_path_ms and
    the reference's per-request dispatch overhead); with one, that path adds to every TTFT one for one (to the clock's
    rounding: t - born)."""
    stats = outcome(replay_agg, *config, impl="numba")
    if isinstance(stats, str):
        assert "chunked prefill is off" in stats
        return
    path = config[1].path_ms
    if path == 0.0:
        assert_every_ttft_is(stats.stats, solo_prefill(*config))
    else:
        expected = path + solo_prefill(*config)
        assert stats.stats.ttft_mean == pytest.approx(expected, rel=1e-12) and stats.stats.ttft_max == pytest.approx(expected, rel=1e-12)


@given(tandem_configs(clients=st.just(1), turnaround=st.just(0.0), protocol=fixed_lengths, compile_ms=st.just(0.0)))
def test_single_client_disagg_ttft_is_the_solo_prefill_plus_handoff(config):
    """The solo prefill batch: its priced pass and encoder, at least the prefill worker's eager floor."""
    plan, spec, prefill, decode = config
    stats = replay_tandem(*config).stats
    solo = max(prefill.pass_ms(PassShape((spec.prefix,), (int(plan.isl[0]) - spec.prefix,), 0, 0)) + spec.encoder_ms, spec.prefill_floor_ms)
    if spec.first_token_on_admission and plan.osl.min() > 1:  # admitted at once by the idle decode worker: t - born, to the clock's rounding
        assert stats.ttft_max == pytest.approx((0.0 + solo) + spec.handoff_ms, rel=1e-9, abs=1e-9)
        assert stats.ttft_mean == pytest.approx((0.0 + solo) + spec.handoff_ms, rel=1e-9, abs=1e-9)
    else:
        assert_every_ttft_is(stats, (0.0 + solo) + spec.handoff_ms)


# ---------------------------------------------------------------------------------------------
# Closed-loop identity: steady protocol, and its finite-run form in the benchmark protocol
# ---------------------------------------------------------------------------------------------

steady = st.builds(Steady, st.integers(1, 3), st.sampled_from([4, 8]))


def assert_steady_identity(result, plan):
    s = result.stats
    cycle = plan.clients / s.throughput_rps * 1000
    win_gens = (plan.stop - plan.warm) // plan.clients
    assert abs(cycle - (s.ttft_mean + (int(plan.osl[0]) - 1) * s.tpot_mean)) <= cycle / win_gens


@given(agg_configs(clients=st.integers(1, 64), protocol=steady, compile_ms=st.just(0.0)))
def test_steady_identity_agg(config):
    """The identity needs a stationary window: a shape compile is paid once, by the first pass of each
    new token count, wherever in the run that falls (its own test: test_closed_loop.py)."""
    check_or_no_progress(outcome(replay_agg, *config, impl="numba"), assert_steady_identity, config[0])


@given(tandem_configs(clients=st.integers(1, 64), protocol=steady, compile_ms=st.just(0.0)))
def test_steady_identity_disagg(config):
    """A stationary window, as the agg identity's: no compile, which a new batch token count pays wherever it falls."""
    assert_steady_identity(replay_tandem(*config), config[0])


benchmark = st.builds(Benchmark, st.integers(1, 4), st.sampled_from([0.5, 1.0]))


def assert_finite_run_identity(result, plan):
    s, done = result.stats, result.completions.done_ms
    end = done.max()
    drain = sum(end - t for t in done[-plan.clients :])
    assert s.requests == plan.stop and s.window_ms == end
    assert s.requests * s.latency_mean == pytest.approx(plan.clients * end - drain, rel=1e-9)
    if plan.osl.min() == plan.osl.max():
        assert s.latency_mean == pytest.approx(s.ttft_mean + (int(plan.osl[0]) - 1) * s.tpot_mean, rel=1e-9)


@given(agg_configs(clients=st.integers(1, 64), turnaround=st.just(0.0), protocol=benchmark))
def test_finite_run_identity_agg(config):
    check_or_no_progress(outcome(replay_agg, *config, impl="numba"), assert_finite_run_identity, config[0])


@given(tandem_configs(clients=st.integers(1, 64), turnaround=st.just(0.0), protocol=benchmark))
def test_finite_run_identity_disagg(config):
    assert_finite_run_identity(replay_tandem(*config), config[0])


def test_identity_tolerance_is_not_vacuous():
    """A throughput off by half a request per client per window would fail the steady check."""
    plan = run_plan(Steady(), 8, 2048, 64)
    good = replay_agg(plan, AggSpec(EngineSettings(8192, True)), affine_pricer(10.0, 0.02, 0.0, 1.0, 1.0, 2.0, 0.05, 0.001))
    assert_steady_identity(good, plan)
    skewed = dataclasses.replace(good, stats=dataclasses.replace(good.stats, throughput_rps=good.stats.throughput_rps * 0.7))
    with pytest.raises(AssertionError):
        assert_steady_identity(skewed, plan)
