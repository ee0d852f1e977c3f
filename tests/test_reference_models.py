"""Deployments without a native op builder (MoE, MLA, hybrid attention): deployment facts read off the
reference's model, the reference pricer's narrowed views, the HYBRID database mode, and the
closed-loop tables built for expensive pricers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from estimator.cli import main
from estimator.closedloop.engine import PassModel, TableExtent, engine_tables, lattice
from estimator.closedloop.pricing import PassShape, engine_pricer
from estimator.deployment import Deployment, QuantOverrides
from estimator.errors import InvalidInputError, PerfDataMissingError
from estimator.pricing import make_pricer, resolve_pricer
from estimator.scheduler.facts import native_facts, reference_facts

pytestmark = pytest.mark.reference

DENSE = [
    Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2),
    Deployment("meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm", tp=4, pp=2),
    Deployment("Qwen/Qwen3-32B", "h100_sxm", "vllm", tp=8, nextn=1),
]
MINIMAX = Deployment("MiniMaxAI/MiniMax-M2.5", "h200_sxm", "sglang", tp=8, moe_tp=1, moe_ep=8)
DEEPSEEK = Deployment("deepseek-ai/DeepSeek-V3", "h200_sxm", "sglang", tp=8, moe_tp=1, moe_ep=8)


@pytest.mark.parametrize("deployment", DENSE, ids=lambda d: f"{d.model}-{d.backend.value}-tp{d.tp}")
def test_reference_facts_equal_native_facts_on_dense_models(deployment):
    """Two independent derivations of the same constants agree (the KV rule at several lengths)."""
    ours, theirs = native_facts(deployment), reference_facts(deployment)
    for field in dataclasses.fields(ours):
        if field.name != "kv_bytes_per_sequence":
            assert getattr(ours, field.name) == getattr(theirs, field.name), field.name
    for tokens in (0, 1, 4097, 131072):
        assert ours.kv_bytes_per_sequence(tokens) == theirs.kv_bytes_per_sequence(tokens)


def test_moe_facts_carry_the_dispatch_workspace_and_expert_parallelism():
    facts = reference_facts(DEEPSEEK)
    assert facts.family == "DEEPSEEK" and facts.moe_ep == 8
    assert facts.moe_workspace_bytes(1000) == 1000 * facts.moe_workspace_elements / 8 / 128 * 4 > 0
    assert reference_facts(MINIMAX).moe_workspace_bytes(1000) == 0.0  # MiniMax pays no workspace


def test_moe_width_mismatch_names_the_sizes():
    with pytest.raises(InvalidInputError, match="moe_tp_size"):
        reference_facts(dataclasses.replace(DEEPSEEK, attention_dp=2))


def test_restricted_reference_pricer_prices_only_the_named_ops():
    full = make_pricer("reference", MINIMAX)
    attention = full.restricted({"context_attention"}, {"generation_attention"})
    assert attention.context_names == ("context_attention",) and attention.generation_names == ("generation_attention",)
    shapes = np.array([[1, 1000, 0], [4, 512, 2048]], dtype=float)
    i = full.context_names.index("context_attention")
    assert np.array_equal(attention.context_many(shapes)[:, 0], full.context_many(shapes)[:, i])
    assert full.restricted(set(), set()).context_many(shapes).shape == (2, 0)


def test_hybrid_mode_prices_what_silicon_misses():
    """Kimi-K2.5 int4 weight-only on h200/vLLM has no int4_wo GEMM rows: SILICON misses, HYBRID transfers."""
    deployment = Deployment("moonshotai/Kimi-K2.5", "h200_sxm", "vllm", tp=8, moe_tp=1, moe_ep=8,
                            quant=QuantOverrides(gemm="int4_wo", moe="int4_wo"))  # fmt: skip
    with pytest.raises(PerfDataMissingError):
        make_pricer("reference", deployment).context_many(np.array([[1, 1024, 0]], dtype=float))
    prices = make_pricer("hybrid", deployment).context_many(np.array([[1, 1024, 0]], dtype=float))
    assert np.isfinite(prices).all() and prices.sum() > 0


def test_reference_tables_interpolate_within_one_percent():
    """The coarse lattices of expensive pricers: a prefill pass within 1% of direct pricing."""
    model = PassModel(MINIMAX, "reference")
    pricer, tables = make_pricer("reference", MINIMAX), engine_tables(model, TableExtent(4096, 8, 4096, 8192, 64, 8192))
    passes = engine_pricer(tables, 1)
    i = pricer.context_names.index("context_attention")
    rng = np.random.default_rng(11)
    for _ in range(12):
        n = int(rng.integers(1, 4))
        takes, starts = rng.integers(1, 4096 // n, n), rng.integers(0, 4000, n)
        shared = pricer.context_many(np.array([[1, takes.sum(), 0]], dtype=float))[0]
        attention = pricer.context_many(np.column_stack([np.full(n, n), takes, starts]).astype(float))[:, i]
        exact = shared.sum() - shared[i] + attention.mean()
        assert passes.pass_ms(PassShape(tuple(starts.tolist()), tuple(takes.tolist()), 0, 0)) == pytest.approx(exact, rel=1e-2)


def test_tables_sliced_from_a_larger_extent_equal_tables_built_at_the_smaller_one():
    """Grids grow to the largest extent requested and are sliced: identical to a fresh build."""
    import estimator.closedloop.engine as engine

    model = PassModel(Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2))
    small, large = TableExtent(2048, 4, 2048, 2048, 16, 4096), TableExtent(8192, 16, 4096, 8192, 128, 16384)
    engine_tables(model, large)
    sliced = engine_tables(model, small)
    fresh = engine._chunk_attention.build(model, (small.chunks, small.chunk, small.start))
    assert all(np.array_equal(a, b) for a, b in zip(fresh[0], (sliced.chunk_batch_axis, sliced.chunk_new_axis, sliced.chunk_start_axis)))
    assert np.array_equal(fresh[1], sliced.chunk_attention)
    assert np.array_equal(engine._shared.build(model, (small.tokens,))[1], sliced.shared)
    assert np.array_equal(lattice(2048, 512, 64), lattice(8192, 512, 64)[: len(lattice(2048, 512, 64))])


def test_mla_block_reads_the_kv_cache_in_the_engine_replay():
    """DeepSeek's fused MLA block holds its attention: a decode pass costs more at a longer KV and a
    chunk costs more after a longer cached start, as for models with a separate attention op."""
    passes = engine_pricer(engine_tables(PassModel(DEEPSEEK, "reference"), TableExtent(4096, 4, 4096, 8192, 64, 16384)), 1)
    short, long = (passes.pass_ms(PassShape((), (), 32, 32 * kv)) for kv in (1024, 16000))
    assert long > short * 1.05
    fresh, late = (passes.pass_ms(PassShape((start,), (1024,), 0, 0)) for start in (0, 8000))
    assert late > fresh


def test_cli_prices_moe_models_through_the_reference_engine_by_default(capsys):
    """--pricer auto (the default): an MoE model needs no pricer flag; a dense one stays native."""
    args = ["estimate", "--model-path", "Qwen/Qwen3-235B-A22B-FP8", "--system", "h200_sxm", "--backend", "sglang",
            "--tp-size", "4", "--moe-ep-size", "4", "--isl", "1024", "--osl", "128", "--batch-size", "8", "--json"]  # fmt: skip
    assert main(args) == 0 and '"ttft"' in capsys.readouterr().out
    for model, pricer in (("Qwen/Qwen3-235B-A22B-FP8", "reference"), ("Qwen/Qwen3-32B", "native")):
        assert resolve_pricer("auto", model) == pricer and resolve_pricer("hybrid", model) == "hybrid"
