"""Step composition: the native pricer's steps equal the reference engine's own steps (rel 1e-12),
the uncached mixed step's request groups and their closed forms, and name folding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.deployment import Deployment
from estimator.errors import InvalidInputError
from estimator.pricing import make_pricer
from estimator.pricing.native import MEMO_MAX_BATCH, distinct_rows
from estimator.scheduler.facts import step_pricer
from estimator.steps import (
    MixedShape,
    Semantics,
    StepModel,
    decode_step,
    decode_step_totals,
    mixed_step,
    mixed_step_totals,
    mixed_steps,
    static_context,
    static_generation,
)
from estimator.steps.fold import MIXED_SOURCE, op_fold
from estimator.steps.mixed import GENERATION_ATTENTION, SCALED_CONTEXT_ATTENTION, request_groups
from estimator.steps.phases import static_context_many, static_generation_many

REL = 1e-12
QWEN_FP8 = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)
DEPLOYMENTS = {
    "qwen3-32b-fp8-h200-sglang-tp2": QWEN_FP8,
    "qwen3-32b-fp8-h200-sglang-tp2-mtp2": Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2, nextn=2),
    "llama-8b-h100-vllm-tp1": Deployment("meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "vllm"),
    "llama-70b-b200-trtllm-tp4-pp2": Deployment("meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm", tp=4, pp=2),
}
# (ctx, gen, isl, osl, prefix): chunked, whole request, prefix, two requests with prefix (P1 = 2P),
# decode only, prefill only, long prompt with an odd budget
MIXED = [
    (16384, 15, 32768, 512, 0),
    (4096, 63, 4096, 64, 0),
    (16384, 15, 32768, 512, 29491),
    (8192, 30, 4096, 128, 1024),
    (0, 12, 2048, 256, 0),
    (2048, 0, 2048, 256, 512),
    (5000, 7, 12000, 1000, 3000),
]
SCALES = [(1.0, 1.0), (1.5, 2.0)]


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


@pytest.fixture(scope="module", params=list(DEPLOYMENTS), ids=list(DEPLOYMENTS))
def pair(request):
    d = DEPLOYMENTS[request.param]
    return d, make_pricer("native", d), make_pricer("reference", d).handle


@pytest.mark.reference
@pytest.mark.parametrize("scales", SCALES, ids=lambda s: f"s1={s[0]}-s2={s[1]}")
@pytest.mark.parametrize("shape", MIXED, ids=lambda s: "ctx{}-gen{}-isl{}-osl{}-p{}".format(*s))
def test_legacy_mixed_step_equals_engine(pair, shape, scales):
    d, native, handle = pair
    step = mixed_step(StepModel(native, d.nextn, *scales), MixedShape(*shape), Semantics.LEGACY)
    want = handle.mixed_step_breakdown(*shape, *scales)
    got = (step.latency_ms, step.shared_ms, step.context_attention_ms, step.decode_attention_ms)
    assert all(_close(w, g) for w, g in zip(want, got)), (want, got)
    shared, ctx, dec = handle.mixed_step_breakdown_per_op(*shape, *scales)
    want_ops = [(n, v, s) for n, v, _, s in shared] + [
        (SCALED_CONTEXT_ATTENTION, sum(v for _, v, _, _ in ctx), ctx[0][3] if ctx else "silicon"),
        (GENERATION_ATTENTION, sum(v for _, v, _, _ in dec), dec[0][3] if dec else "silicon"),
    ]
    got_ops = [(o.name, o.latency_ms, o.source) for o in step.ops]
    assert [(n, s) for n, _, s in got_ops] == [(n, s) for n, _, s in want_ops]
    assert all(_close(w[1], g[1]) for w, g in zip(want_ops, got_ops))


@pytest.mark.reference
@pytest.mark.parametrize("gen", [1, 16, 200])
def test_decode_step_equals_engine(pair, gen):
    d, native, handle = pair
    for s2 in (1.0, 2.0):
        step = decode_step(StepModel(native, d.nextn, 1.0, s2), gen, 32768, 512)
        assert _close(step.latency_ms, handle.decode_step_latency(gen, 32768, 512, s2))
        want = handle.decode_step_per_op(gen, 32768, 512, s2)
        assert [(o.name, o.source) for o in step.ops] == [(n, s) for n, _, _, s in want]


@pytest.mark.reference
@pytest.mark.parametrize("batch,isl,osl,prefix", [(16, 32768, 512, 0), (1, 2048, 33, 1024), (4, 1000, 1, 0), (3, 777, 100, 7)])
def test_static_phases_equal_engine(pair, batch, isl, osl, prefix):
    d, native, handle = pair
    model = StepModel(native, d.nextn)
    ctx_ms, gen_ms, _ = handle.run_static(batch_size=batch, isl=isl, osl=osl, prefix=prefix)
    assert _close(static_context(model, batch, isl, prefix).latency_ms, ctx_ms)
    assert _close(static_generation(model, batch, isl, osl).latency_ms, gen_ms)
    want_ctx, want_gen = handle.run_static_per_op(batch_size=batch, isl=isl, osl=osl, prefix=prefix)
    got_gen = static_generation(model, batch, isl, osl).ops
    assert [o.name for o in got_gen] == [n for n, *_ in want_gen]
    assert all(_close(o.latency_ms, v) for o, (_, v, _, _) in zip(got_gen, want_gen))


@pytest.mark.reference
def test_steps_compose_over_the_reference_pricer():
    """The composition is pricer-agnostic: over the reference pricer it reproduces the engine too."""
    reference = make_pricer("reference", QWEN_FP8)
    model = StepModel(reference, 0)
    for shape in MIXED[:4]:
        want = reference.handle.mixed_step_breakdown(*shape)
        assert _close(mixed_step(model, MixedShape(*shape), Semantics.LEGACY).latency_ms, want[0])
    assert _close(decode_step(model, 16, 32768, 512).latency_ms, reference.handle.decode_step_latency(16, 32768, 512))


def test_verified_static_and_decode_numbers():
    """legacy-semantics.md 2.4 and 4.4: static_gen b16 isl32768 osl512, static_ctx b1, decode b16."""
    model = StepModel(make_pricer("native", QWEN_FP8))
    assert round(static_generation(model, 16, 32768, 512).latency_ms, 3) == 11023.677
    assert round(static_context(model, 1, 32768).latency_ms, 4) == 1865.6411
    assert round(decode_step(model, 16, 32768, 512).latency_ms, 4) == 21.5798


def test_prefix_changes_only_context_attention():
    """legacy-semantics.md 2.5: at C=16384 < isl the prefix moves the context-attention slice only."""
    model = StepModel(make_pricer("native", QWEN_FP8))
    steps = mixed_steps(model, [MixedShape(16384, 15, 32768, 512, p) for p in (0, 8192, 16384, 24576, 29491)], Semantics.LEGACY)
    assert [round(s.latency_ms, 4) for s in steps] == [971.4861, 947.0815, 873.8677, 751.8447, 655.2068]
    assert {round(s.shared_ms, 4) for s in steps} == {565.4925}
    assert {round(s.decode_attention_ms, 4) for s in steps} == {14.2522}


def test_many_steps_equal_one_at_a_time():
    model = StepModel(make_pricer("native", QWEN_FP8))
    shapes = [MixedShape(*s) for s in MIXED]
    for semantics in Semantics:
        assert mixed_steps(model, shapes, semantics) == [mixed_step(model, s, semantics) for s in shapes]


@st.composite
def _mixed_shapes(draw):
    isl = draw(st.integers(1, 20000))
    prefix = draw(st.integers(0, isl - 1))
    ctx = draw(st.sampled_from([0, isl - prefix, isl, 2 * isl, draw(st.integers(1, 40000))]))
    return MixedShape(ctx, draw(st.integers(0, 300)), isl, draw(st.integers(1, 4000)), prefix)


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(_mixed_shapes(), min_size=1, max_size=90), semantics=st.sampled_from(list(Semantics)))
def test_step_totals_are_bit_identical_to_the_per_op_steps(shapes, semantics):
    """The sweeps' totals-only paths (vectorised single-group steps, batched decode steps) give
    exactly the latency_ms of the per-op steps, across the memo (<= 64 rows) and bulk paths."""
    model = StepModel(make_pricer("native", QWEN_FP8), nextn=1)
    assert mixed_step_totals(model, shapes, semantics).tolist() == [s.latency_ms for s in mixed_steps(model, shapes, semantics)]
    requests = [s.decode_requests for s in shapes]
    isl, osl = shapes[0].isl, shapes[0].osl
    assert decode_step_totals(model, np.array(requests), isl, osl).tolist() == [decode_step(model, n, isl, osl).latency_ms for n in requests]


@settings(max_examples=15, deadline=None)
@given(batches=st.lists(st.integers(1, 512), min_size=1, max_size=12), isl=st.integers(1, 8000), osl=st.integers(1, 700))
def test_static_phases_of_many_batches_equal_one_at_a_time(batches, isl, osl):
    model = StepModel(make_pricer("native", QWEN_FP8))
    assert static_generation_many(model, batches, isl, osl) == [static_generation(model, b, isl, osl) for b in batches]
    assert static_context_many(model, batches, isl, isl // 2) == [static_context(model, b, isl, isl // 2) for b in batches]


@pytest.mark.parametrize(
    "ctx,isl,prefix,groups,chunks",
    [
        (300, 1000, 0, ((1, 1.0),), 4),  # P == 0: legacy ceil packing
        (8192, 4096, 0, ((2, 1.0),), 1),
        (300, 1000, 100, ((1, 1.0),), 3),  # chunked: ceil(900 / 300)
        (7680, 4096, 256, ((2, 1.0),), 1),  # two whole uncached requests
        (4096, 4096, 256, ((1, 14 / 15), (2, 1 / 15)), 1),  # uncached-budget.md 5: fill 256/3840 = 1/15
        (0, 4096, 256, ((0, 1.0),), 1),
    ],
    ids=["p0-chunked", "p0-two-requests", "chunked-with-prefix", "whole-requests", "partial-request", "decode-only"],
)
def test_request_groups(ctx, isl, prefix, groups, chunks):
    got_groups, got_chunks = request_groups(ctx, isl, prefix)
    assert got_chunks == chunks
    assert [n for n, _ in got_groups] == [n for n, _ in groups]
    assert np.allclose([w for _, w in got_groups], [w for _, w in groups], rtol=0, atol=1e-15)


def test_uncached_at_prefix_zero_is_legacy():
    model = StepModel(make_pricer("native", QWEN_FP8), 0, 1.5, 2.0)
    for shape in [MixedShape(c, g, i, o, 0) for c, g, i, o, _ in MIXED]:
        assert mixed_step(model, shape, Semantics.UNCACHED) == mixed_step(model, shape, Semantics.LEGACY)


def test_uncached_whole_uncached_prompt_is_legacy_full_prompt():
    """ctx = isl - P new tokens (uncached) is legacy's ctx = isl with prefix P."""
    model = StepModel(make_pricer("native", QWEN_FP8))
    for isl, p, g in [(32768, 16384, 15), (4096, 256, 3), (2048, 2047, 0)]:
        uncached = mixed_step(model, MixedShape(isl - p, g, isl, 256, p), Semantics.UNCACHED)
        legacy = mixed_step(model, MixedShape(isl, g, isl, 256, p), Semantics.LEGACY)
        assert uncached == legacy


def test_chunked_context_attention_moves_by_exactly_four_thirds():
    """uncached-budget.md 5: ISL 1000, P 100, ctx 300 divides by 3 chunks instead of legacy's 4."""
    model = StepModel(make_pricer("native", QWEN_FP8))
    shape = MixedShape(300, 5, 1000, 100, 100)
    legacy, uncached = mixed_step(model, shape, Semantics.LEGACY), mixed_step(model, shape, Semantics.UNCACHED)
    assert uncached.shared_ms == legacy.shared_ms and uncached.decode_attention_ms == legacy.decode_attention_ms
    assert uncached.context_attention_ms == pytest.approx(legacy.context_attention_ms * 4 / 3, rel=1e-14)


def test_partial_request_is_a_convex_combination():
    model = StepModel(make_pricer("native", QWEN_FP8))
    ctx_many = model.pricer.context_many
    step = mixed_step(model, MixedShape(4096, 3, 4096, 128, 256), Semantics.UNCACHED)
    attention = model.pricer.context_names.index("context_attention")
    one, two = ctx_many(np.array([[1, 3840, 256], [2, 3840, 256]]))[:, attention]
    assert step.context_attention_ms == pytest.approx(14 / 15 * one + 1 / 15 * two, rel=1e-14)


@pytest.mark.parametrize("semantics", list(Semantics), ids=lambda s: s.value)
def test_prefix_at_or_above_isl_is_rejected(semantics):
    model = StepModel(make_pricer("native", QWEN_FP8))
    with pytest.raises(InvalidInputError, match=r"prefix \(4096\) must be smaller than isl \(4096\)"):
        mixed_step(model, MixedShape(4096, 1, 4096, 128, 4096), semantics)
    with pytest.raises(InvalidInputError, match="prefix"):
        static_context(model, 1, 100, 100)


def test_fold_adds_same_name_columns_in_order_and_marks_mixed_sources():
    fold = op_fold(("a", "b", "a", "c"), ("silicon", "empirical", "sol", "silicon"), exclude="c")
    lat = np.array([[1.0, 2.0, 0.1, 9.0], [3.0, 4.0, 0.2, 9.0]])
    assert fold.names == ("a", "b") and fold.sources == (MIXED_SOURCE, "empirical")
    assert fold.apply(lat).tolist() == [[1.0 + 0.1, 2.0], [3.0 + 0.2, 4.0]]
    only = op_fold(("a", "b", "a"), ("x", "x", "x"), only="a")
    assert only.names == ("a",) and only.sources == ("x",) and only.apply(lat[:, :3]).tolist() == [[1.1], [3.2]]


def test_static_generation_weights_each_sample_by_the_steps_it_stands_for():
    """osl-1 = 40 decode steps at stride 32: samples at i = 0 (32 steps) and i = 32 (8 steps)."""
    model = StepModel(make_pricer("native", QWEN_FP8))
    lat = model.pricer.generation_many(np.array([[4, 1001], [4, 1033]])).sum(axis=1)
    assert static_generation(model, 4, 1000, 41).latency_ms == pytest.approx(32 * lat[0] + 8 * lat[1], rel=1e-14)
    assert static_generation(model, 4, 1000, 1).ops == ()


@pytest.mark.reference
@pytest.mark.parametrize("name", ["qwen3-32b-fp8-h200-sglang-tp2", "llama-70b-b200-trtllm-tp4-pp2"])
def test_sol_pricer_equals_reference_sol_mode(name):
    """The SOL pricer (estimate --detail time's SOL columns) is the reference engine in SOL database mode."""
    import json

    import aiconfigurator_core
    from aiconfigurator_core.sdk.engine import EngineHandle

    from estimator.pricing import native_model
    from estimator.pricing.reference import reference_engine_spec
    from estimator.pricing.sol import sol_pricer

    d = DEPLOYMENTS[name]
    spec = reference_engine_spec(d, native_model(d).version)
    spec["engine"]["database_mode"] = "SOL"
    handle = EngineHandle(bytes(aiconfigurator_core.engine_spec_bincode_from_json(json.dumps(spec))))
    sol, n = sol_pricer(d), len(spec["context_ops"])
    for b, s, p in [(1, 16399, 0), (2, 1000, 3000), (7, 333, 0)]:
        want = handle.evaluate_context_ops(list(range(n)), batch_size=b, s=s, prefix=p)
        got = sol.context_ops(b, s, p)
        assert [(o.name, o.source) for o in got] == [(w[0], w[3]) for w in want]
        assert all(_close(o.latency_ms, w[1]) for o, w in zip(got, want))
    for b, s in [(16, 33025), (256, 8000)]:
        want = handle.evaluate_generation_ops(list(range(n)), batch_size=b, s=s)
        got = sol.generation_ops(b, s)
        assert [(o.name, o.source) for o in got] == [(w[0], w[3]) for w in want]
        assert all(_close(o.latency_ms, w[1]) for o, w in zip(got, want))


@pytest.mark.parametrize("kind", ["native", "sol", "reference"])
def test_restricted_views_price_each_op_as_the_full_lists(kind):
    """Pricer.restricted keeps op order and prices every kept op exactly as the full lists do."""
    full = step_pricer(kind, QWEN_FP8)
    keep_c, keep_g = {"context_attention", "context_qkv_gemm"}, {"generation_attention"}
    view = full.restricted(frozenset(keep_c), frozenset(keep_g))
    ctx = np.array([[1, 3000, 0], [4, 2048, 512]], dtype=np.float64)
    gen = np.array([[64, 4100], [3, 300]], dtype=np.float64)
    c_cols = [i for i, n in enumerate(full.context_names) if n in keep_c]
    g_cols = [i for i, n in enumerate(full.generation_names) if n in keep_g]
    assert view.context_names == tuple(full.context_names[i] for i in c_cols) and len(c_cols) == 2
    assert view.generation_names == ("generation_attention",)
    assert view.context_many(ctx, 1.5).tolist() == full.context_many(ctx, 1.5)[:, c_cols].tolist()
    assert view.generation_many(gen).tolist() == full.generation_many(gen)[:, g_cols].tolist()


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(0, 2)), min_size=1, max_size=40))
def test_distinct_rows_rebuild_the_input(rows):
    shapes = np.array(rows, dtype=np.float64)
    distinct, inverse = distinct_rows(shapes)
    assert len({tuple(r) for r in distinct.tolist()}) == len(distinct) == len(set(rows))
    assert (distinct if inverse is None else distinct[inverse]).tolist() == shapes.tolist()


def test_bulk_pricing_of_repeated_shapes_equals_pricing_each_alone():
    pricer = make_pricer("native", QWEN_FP8)
    base = np.array([[1, 2048, 0], [4, 512, 128], [2, 64, 0]], dtype=np.float64)
    shapes = base[np.arange(3 * MEMO_MAX_BATCH) % 3]  # more rows than the memo takes: one kernel call
    alone = np.vstack([pricer.context_many(row[None, :]) for row in base])
    assert pricer.context_many(shapes).tolist() == alone[np.arange(len(shapes)) % 3].tolist()
