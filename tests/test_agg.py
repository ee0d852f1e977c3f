"""The agg scheduler: verified legacy numbers, the uncached budget rules, prefix-0 byte identity,
the result cache, and the estimate command's errors."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.cli import main
from estimator.deployment import Backend, Deployment
from estimator.errors import InvalidInputError
from estimator.scheduler import POLICIES, AggEstimator, AggPoint, agg_plans, plan_agg, run_agg
from estimator.scheduler.agg import agg_memories
from estimator.scheduler.facts import deployment_facts
from estimator.steps import Semantics

LEGACY, UNCACHED = Semantics.LEGACY, Semantics.UNCACHED
MODEL, SYSTEM = "Qwen/Qwen3-32B-FP8", "h200_sxm"
BACKENDS = [b.value for b in Backend]
# every latency, throughput and step figure of a row (not the echoed budget, token count or memory)
TIMING_COLUMNS = (
    "ttft", "tpot", "request_latency", "request_rate", "seq/s", "seq/s/gpu", "tokens/s", "tokens/s/gpu",
    "tokens/s/user", "mix_step_ms", "genonly_step_ms", "prefill_step_ms", "num_mix_steps", "num_genonly_steps",
    "balance_score", "power_w",
)  # fmt: skip


def qwen(backend: str, nextn: int = 0) -> Deployment:
    return Deployment(MODEL, SYSTEM, backend, tp=2, nextn=nextn)


def row(backend: str, semantics: Semantics, nextn: int = 0, **point) -> dict:
    return dict(run_agg(qwen(backend, nextn), AggPoint(**point), semantics).row)


def rounded(r: dict, *columns: str, digits: int = 3) -> tuple:
    return tuple(round(r[c], digits) for c in columns)


# ---------------------------------------------------------------------------------------------
# Verified legacy numbers (legacy-semantics.md 1.7, 1.9, 1.10, 5)
# ---------------------------------------------------------------------------------------------

SECTION_5 = [
    # backend, prefix, ttft, tpot, req-lat, tokens/s, tok/s/gpu, tok/s/user, seq/s, T_mix, T_gen, memory
    ("sglang", 0, 6703.254, 75.700, 45386.050, 197.27, 98.63, 13.21, 0.386, 971.486, 21.580, 55.46),
    ("sglang", 8192, 6534.862, 74.310, 44507.144, 201.06, 100.53, 13.46, 0.393, 947.082, 21.580, 55.46),
    ("sglang", 16384, 6029.687, 70.138, 41870.425, 213.35, 106.67, 14.26, 0.418, 873.868, 21.580, 55.46),
    ("sglang", 24576, 5187.728, 63.186, 37475.894, 237.55, 118.78, 15.83, 0.465, 751.845, 21.580, 55.46),
    ("sglang", 29491, 4520.927, 57.680, 33995.581, 261.01, 130.50, 17.34, 0.511, 655.207, 21.580, 55.46),
    ("vllm", 0, 3178.774, 93.297, 50853.404, 160.78, 80.39, 10.72, 0.315, 1033.991, 30.584, 53.94),
    ("trtllm", 0, 6678.582, 70.275, 42589.254, 211.41, 105.70, 14.23, 0.414, 967.910, 16.043, 53.13),
]


@pytest.mark.parametrize("case", SECTION_5, ids=lambda c: f"{c[0]}-p{c[1]}")
def test_cli_reproduction_table(case):
    backend, prefix, *want = case
    r = row(backend, LEGACY, isl=32768, osl=512, batch_size=16, ctx_tokens=16384, prefix=prefix)
    assert rounded(r, "ttft", "tpot", "request_latency") == tuple(want[:3])
    assert rounded(r, "tokens/s", "tokens/s/gpu", "tokens/s/user", "memory", digits=2) == (*want[3:6], want[9])
    assert rounded(r, "seq/s", "mix_step_ms", "genonly_step_ms") == (want[6], want[7], want[8])
    assert (r["num_mix_steps"], r["num_genonly_steps"]) == (32, 480)
    assert (r["balance_score"], r["num_ctx_reqs"], r["num_gen_reqs"], r["num_tokens"], r["gen_tokens"], r["concurrency"]) == (
        0.0625,
        1,
        15,
        16399,
        15,
        16,
    )


@pytest.mark.parametrize("backend,activations,total", [("sglang", 2.4460, 55.46), ("vllm", 1.6265, 53.94), ("trtllm", 0.8125, 53.13)])
def test_memory_breakdown(backend, activations, total):
    result = run_agg(qwen(backend), AggPoint(32768, 512, 16, 16384), LEGACY)
    use = result.memory.use
    assert (round(use.weights, 4), use.kvcache, round(use.activations, 4), round(use.total, 2)) == (15.9802, 32.5, activations, total)
    assert not result.memory.oom and not result.memory.kv_oom


EDGE_CASES = [
    # backend, isl, osl, b, C, prefix, (mix, gen-only), G_mix, ttft, tpot, tokens/s
    ("sglang", 4096, 64, 64, 2048, 0, (128, 0), 32, 726.459, 90.807, 346.888),
    ("vllm", 4096, 64, 64, 2048, 0, (128, 0), 63, 447.327, 102.208, 308.196),
    ("sglang", 2048, 256, 1, 2048, 0, (1, 255), 0, 145.611, 8.292, 116.377),
    ("trtllm", 8192, 1024, 32, 16384, 0, (16, 1008), 30, 1826.966, 22.354, 1315.121),
    ("sglang", 8192, 1024, 32, 16384, 4096, (16, 1008), 30, 939.923, 19.687, 1546.751),
]


@pytest.mark.parametrize("case", EDGE_CASES, ids=lambda c: f"{c[0]}-isl{c[1]}-osl{c[2]}-b{c[3]}-C{c[4]}-p{c[5]}")
def test_verified_edge_cases(case):
    backend, isl, osl, b, c, prefix, steps, g_mix, *want = case
    result = run_agg(qwen(backend), AggPoint(isl, osl, b, c, prefix), LEGACY)
    assert (result.row["num_mix_steps"], result.row["num_genonly_steps"]) == steps
    assert result.plan.mix[0].shape.decode_requests == g_mix
    assert rounded(result.row, "ttft", "tpot", "tokens/s") == tuple(want)


def test_speculative_decoding_schedule():
    """legacy-semantics.md 1.9: N=2, A=1.4 gives D = 427.25 and 32 + 395.25 steps."""
    result = run_agg(qwen("sglang", nextn=2), AggPoint(8192, 1024, 32, 8192, nextn_accepted=1.4), LEGACY)
    r = result.row
    assert result.plan.decode_iterations == 427.25 and result.plan.mix[0].shape.decode_requests == 31
    assert (r["num_mix_steps"], r["num_genonly_steps"], r["decode_tokens_per_iteration"]) == (32, 395.25, 2.4)
    assert rounded(r, "ttft", "tpot") == (1202.803, 22.648) and round(r["tokens/s"], 2) == 1358.02


def test_imbalance_scales_move_only_attention():
    """legacy-semantics.md 2.5: (s1, s2) = (1.5, 2.0) turns the decode step 21.580 into 36.115."""
    r = row("sglang", LEGACY, isl=32768, osl=512, batch_size=16, ctx_tokens=16384, seq_imbalance_scale=1.5, gen_seq_imbalance_scale=2.0)
    assert round(r["genonly_step_ms"], 3) == 36.115


# ---------------------------------------------------------------------------------------------
# Uncached budget rules (uncached-budget.md sections 3 and 5)
# ---------------------------------------------------------------------------------------------


def test_worked_example_mixed_steps():
    prefixes = (0, 8192, 16384, 24576, 29491)
    deployment = qwen("sglang")
    uncached = [run_agg(deployment, AggPoint(32768, 512, 16, 16384, p), UNCACHED).row["num_mix_steps"] for p in prefixes]
    legacy = [run_agg(deployment, AggPoint(32768, 512, 16, 16384, p), LEGACY).row["num_mix_steps"] for p in prefixes]
    assert uncached == [32, 24, 16, 8, 4] and legacy == [32] * 5


points = st.builds(
    lambda isl, frac, osl, b, knob, a: (isl, min(int(isl * frac), isl - 1), osl, b, knob, a),
    st.integers(1, 40000), st.floats(0, 1), st.integers(1, 2048), st.integers(1, 512),
    st.one_of(st.none(), st.integers(1, 300000)), st.sampled_from([0.0, 0.5, 1.0, 2.0]),
)  # fmt: skip


@given(points, st.sampled_from(BACKENDS))
def test_uncached_plan_closed_forms(p, backend):
    isl, prefix, osl, b, knob, accepted = p
    point = AggPoint(isl, osl, b, knob, prefix)
    plan = plan_agg(POLICIES[Backend(backend)], point, UNCACHED, 1.0 + accepted)
    isl_new = isl - prefix
    budget = min(knob if knob is not None else isl_new, b * isl_new)
    assert plan.ctx_knob == (knob if knob is not None else max(isl_new, 1)) and plan.ctx_budget == budget
    assert plan.steps_to_finish_ctx == math.ceil(isl_new * b / budget)
    assert plan.chunks == math.ceil(isl_new / budget)
    if b > 1:
        assert plan.num_mix_steps == plan.steps_to_finish_ctx
    assert 1 <= plan.num_ctx_requests <= b and 0 <= plan.num_gen_requests <= b
    for group in plan.mix:
        assert 0 <= group.shape.decode_requests <= b and 0 < group.shape.ctx_tokens <= b * isl_new
        assert 0 <= group.tpot_count <= group.count
    assert plan.genonly_steps >= 0 and plan.genonly_requests in (0, b)
    if math.ceil(budget / isl_new) >= b:  # whole-batch rule: the first mixed step decodes nothing
        assert plan.mix[0].shape.decode_requests == 0 and plan.mix[0].tpot_count == 0


@given(st.integers(1, 40000), st.floats(0, 1), st.integers(1, 2048), st.lists(st.tuples(st.integers(1, 512), st.integers(1, 300000)), min_size=1, max_size=12),
       st.sampled_from(BACKENDS), st.sampled_from([LEGACY, UNCACHED]), st.sampled_from([0.0, 1.5]))  # fmt: skip
def test_schedules_planned_together_equal_each_planned_alone(isl, frac, osl, points, backend, semantics, accepted):
    """agg_plans over many points is elementwise: entry i is point i's own schedule, and the
    memory verdicts of the batch are each point's own."""
    prefix = min(int(isl * frac), isl - 1) if semantics is UNCACHED else 0
    policy, dtpi = POLICIES[Backend(backend)], 1.0 + accepted
    plans = agg_plans(policy, isl, osl, prefix, [b for b, _ in points], [knob for _, knob in points], semantics, dtpi)
    deployment = qwen(backend)
    use, oom, kv_oom = agg_memories(deployment_facts(deployment), deployment, policy, plans, isl + osl, None)
    for i, (b, knob) in enumerate(points):
        alone = agg_plans(policy, isl, osl, prefix, [b], [knob], semantics, dtpi)
        assert plans.plan(i) == alone.plan(0) == plan_agg(policy, AggPoint(isl, osl, b, knob, prefix), semantics, dtpi)
        alone_use, alone_oom, alone_kv_oom = agg_memories(deployment_facts(deployment), deployment, policy, alone, isl + osl, None)
        assert (use.total[i], oom[i], kv_oom[i]) == (alone_use.total[0], alone_oom[0], alone_kv_oom[0])


@given(st.integers(2, 8000), st.floats(0, 1), st.integers(1, 1500), st.integers(1, 300), st.sampled_from(BACKENDS))
def test_whole_uncached_budget_equals_legacy_full_budget(isl, frac, osl, b, backend):
    """Uncached ctx_tokens = isl - P describes exactly what legacy ctx_tokens = isl does."""
    prefix = min(int(isl * frac), isl - 1)
    uncached = row(backend, UNCACHED, isl=isl, osl=osl, batch_size=b, ctx_tokens=isl - prefix, prefix=prefix)
    legacy = row(backend, LEGACY, isl=isl, osl=osl, batch_size=b, ctx_tokens=isl, prefix=prefix)
    assert {c: uncached[c] for c in TIMING_COLUMNS} == {c: legacy[c] for c in TIMING_COLUMNS}


def test_without_budget_every_prefix_keeps_timing():
    """No --ctx-tokens: the default isl - P packs one request per step in both modes."""
    for prefix in (0, 1000, 3000):
        uncached = row("vllm", UNCACHED, isl=4096, osl=128, batch_size=8, prefix=prefix)
        legacy = row("vllm", LEGACY, isl=4096, osl=128, batch_size=8, prefix=prefix)
        assert {c: uncached[c] for c in TIMING_COLUMNS} == {c: legacy[c] for c in TIMING_COLUMNS}
        assert uncached["ctx_tokens"] == 4096 - prefix and legacy["ctx_tokens"] == 4096


def test_whole_batch_rule_prices_decode_free_and_partial_steps_separately():
    """b=2, isl_new=1920, budget 2048: step 1 prefills 2048 tokens and decodes nothing; step 2 prefills
    1792 while request 1 decodes; only step 2 enters TPOT."""
    result = run_agg(qwen("sglang"), AggPoint(2048, 64, 2, 2048, prefix=128), UNCACHED)
    first, last = result.plan.mix
    assert (first.shape.ctx_tokens, first.shape.decode_requests, first.count, first.tpot_count) == (2048, 0, 1, 0)
    assert (last.shape.ctx_tokens, last.shape.decode_requests, last.count, last.tpot_count) == (1792, 1, 1, 1)
    t_first, t_last = (s.latency_ms for s in result.mix_steps)
    t_gen, gen_steps = result.genonly_step.latency_ms, result.plan.genonly_steps
    assert gen_steps == 62 and result.row["tpot"] == (t_last * 1 + t_gen * gen_steps) / (1 + gen_steps)
    assert result.row["prefill_step_ms"] == t_first and (result.row["num_ctx_reqs"], result.row["num_gen_reqs"]) == (2, 0)


def test_single_request_budget_is_capped_at_the_prompt():
    """b=1, ctx 16384, ISL 4096: legacy prices four prefills; uncached prices the one request there is."""
    capped = row("sglang", UNCACHED, isl=4096, osl=64, batch_size=1, ctx_tokens=16384)
    exact = row("sglang", UNCACHED, isl=4096, osl=64, batch_size=1, ctx_tokens=4096)
    legacy = row("sglang", LEGACY, isl=4096, osl=64, batch_size=1, ctx_tokens=16384)
    assert {c: capped[c] for c in TIMING_COLUMNS} == {c: exact[c] for c in TIMING_COLUMNS}
    assert capped["ctx_tokens"] == 16384 and legacy["mix_step_ms"] > 3 * capped["mix_step_ms"]


def test_over_batch_budget_has_no_negative_counts():
    legacy = row("trtllm", LEGACY, isl=1024, osl=64, batch_size=4, ctx_tokens=8192)
    uncached = row("trtllm", UNCACHED, isl=1024, osl=64, batch_size=4, ctx_tokens=8192)
    assert (legacy["num_ctx_reqs"], legacy["num_gen_reqs"]) == (8, -4)  # the reference's over-batch quirk
    assert (uncached["num_ctx_reqs"], uncached["num_gen_reqs"]) == (4, 0)


def test_prefix_at_or_above_isl_is_rejected_before_pricing():
    for semantics in Semantics:
        with pytest.raises(InvalidInputError) as err:
            run_agg(qwen("sglang"), AggPoint(4096, 64, 8, prefix=4096), semantics)
        assert str(err.value) == "prefix (4096) must be smaller than the effective isl (4096) for an agg run"


def test_result_cache_separates_every_input():
    estimator = AggEstimator(qwen("sglang"), UNCACHED)
    base = AggPoint(8192, 256, 8, 4096)
    variants = [
        base,
        AggPoint(8192, 256, 8, 4096, prefix=2048),
        AggPoint(8192, 256, 8, 4096, seq_imbalance_scale=1.5),
        AggPoint(8192, 256, 8, 4096, gen_seq_imbalance_scale=1.5),
        AggPoint(8192, 256, 8, 4096, free_gpu_memory_fraction=0.1),
    ]
    rows = [estimator.estimate(v).row for v in variants]
    assert estimator.estimate(base) is estimator.estimate(AggPoint(8192, 256, 8, 4096))
    assert len({json.dumps(dict(r)) for r in rows[:4]}) == 4
    assert estimator.estimate(variants[-1]).memory.kv_oom and not estimator.estimate(base).memory.kv_oom
    assert AggEstimator(qwen("sglang"), LEGACY).estimate(variants[1]).row != rows[1]


# ---------------------------------------------------------------------------------------------
# The estimate command: prefix-0 byte identity, errors
# ---------------------------------------------------------------------------------------------


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["estimate", "--model-path", MODEL, "--system", SYSTEM, "--tp-size", "2", *argv])
    return code, out.getvalue(), err.getvalue()


inert_points = st.integers(1, 64).flatmap(
    lambda b: st.tuples(
        st.just(b), st.integers(1, 20000), st.integers(1, 1024), st.floats(0.01, 1.0),
        st.sampled_from(BACKENDS), st.sampled_from([0, 0, 1, 3]),
    )
)  # fmt: skip


@given(inert_points)
def test_prefix_zero_cli_output_is_byte_identical(p):
    """Where the batch cap and whole-batch rule are inert, both semantics print the same bytes."""
    b, isl, osl, frac, backend, nextn = p
    ctx = max(1, int(frac * (isl if b == 1 else (b - 1) * isl)))
    args = [
        "--backend",
        backend,
        "--batch-size",
        str(b),
        "--isl",
        str(isl),
        "--osl",
        str(osl),
        "--ctx-tokens",
        str(ctx),
        "--nextn",
        str(nextn),
        "--nextn-accepted",
        str(nextn / 2),
    ]
    for view in (["--json"], ["--detail", "time"]):
        legacy, uncached = cli(*args, *view, "--semantics", "legacy"), cli(*args, *view)
        assert legacy[0] == 0 and legacy == uncached


def test_json_row_has_every_column_unrounded():
    code, out, _ = cli(
        "--backend", "sglang", "--batch-size", "16", "--isl", "32768", "--osl", "512", "--ctx-tokens", "16384", "--json", "--semantics", "legacy"
    )
    r = json.loads(out)
    assert code == 0 and r["ttft"] == row("sglang", LEGACY, isl=32768, osl=512, batch_size=16, ctx_tokens=16384)["ttft"]
    assert list(r)[-7:] == ["mix_step_ms", "genonly_step_ms", "prefill_step_ms", "num_mix_steps", "num_genonly_steps", "decode_tokens_per_iteration", "oom"]
    assert r["oom"] is False


def test_detail_time_report():
    code, out, _ = cli("--backend", "sglang", "--batch-size", "16", "--isl", "32768", "--osl", "512", "--ctx-tokens", "16384", "--detail", "time")
    assert code == 0
    assert "Scheduling: 32 mix steps + 480 gen-only steps" in out
    assert "  ttft               6703.254 ms    3386.704 ms    50.5%" in out
    assert "Mix Step (total = 971.486 ms, SOL = 490.827 ms, SOL% = 50.5%)" in out
    assert "Gen-Only Step (total = 21.580 ms, SOL = 10.726 ms, SOL% = 49.7%)" in out


@pytest.mark.parametrize("mode", ["static", "static_ctx", "static_gen"])
def test_static_modes(mode):
    code, out, _ = cli("--backend", "sglang", "--batch-size", "16", "--isl", "32768", "--osl", "512", "--estimate-mode", mode, "--json")
    r = json.loads(out)
    assert code == 0 and r["tp"] == 2
    if mode == "static_gen":
        assert (round(r["tpot"], 4), round(r["seq/s"], 5), round(r["tokens/s"], 3), round(r["memory"], 2)) == (21.5728, 1.45142, 741.676, 53.12)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--isl", "4096", "--prefix", "4096"], "prefix (4096) must be smaller than the effective isl (4096) for an agg run"),
        (["--ctx-tokens", "0"], "ctx_tokens must be a positive integer, got 0"),
        (["--batch-size", "-3"], "batch_size must be a positive integer, got -3"),
        (["--nextn", "2"], "nextn=2 requires --nextn-accepted"),
        (["--nextn", "2", "--nextn-accepted", "2.5"], "nextn_accepted (2.5) must be within [0, nextn=2]"),
        (["--estimate-mode", "static", "--prefix", "9000", "--isl", "9000"], "prefix (9000) must be within [0, isl (9000))"),
        (["--backend", "tgi"], "unknown backend 'tgi'"),
    ],
    ids=["prefix-at-isl", "zero-budget", "negative-batch", "mtp-without-acceptance", "acceptance-above-nextn", "static-prefix", "unknown-backend"],
)
def test_bad_input_is_one_line_and_exit_2(argv, message):
    argv = argv if "--backend" in argv else ["--backend", "sglang", *argv]
    code, out, err = cli(*argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
