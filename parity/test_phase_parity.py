"""Whole-phase parity: every op of the native op list priced natively equals the reference engine's
own compiled model (its op builder and its pricer) at rel 1e-12, names, order and sources included."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.deployment import Deployment
from estimator.pricing import make_pricer
from parity.compare import compare_records, explain, failures
from parity.stacks import STACKS, stack_id

MODELS = ("Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B", "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-70B")
TPS = (1, 2, 4, 8)
REL_TOL = 1e-12
# (batch, new tokens, prefix): short, long, chunk-with-prefix, past-the-frontier
CONTEXT_SHAPES = np.array([[1, 128, 0], [4, 2048, 0], [16, 3000, 1000], [1, 32768, 0], [2, 20000, 12000]])
# (batch, KV position): small, mid-run decode, large batch long context
GENERATION_SHAPES = np.array([[1, 129], [16, 33025], [256, 8000], [64, 70000]])


def _rows(names, sources, matrix, shapes) -> dict:
    return {
        f"{tuple(int(v) for v in shape)}:{i}:{name}": {"latency_ms": float(matrix[r, i]), "source": src}
        for r, shape in enumerate(shapes)
        for i, (name, src) in enumerate(zip(names, sources))
    }


def _phase_diffs(native, reference, phase: str):
    shapes = CONTEXT_SHAPES if phase == "context" else GENERATION_SHAPES
    got, want = [], []
    for pricer, out in ((native, got), (reference, want)):
        many = pricer.context_many if phase == "context" else pricer.generation_many
        names = pricer.context_names if phase == "context" else pricer.generation_names
        sources = pricer.context_sources if phase == "context" else pricer.generation_sources
        out.append(_rows(names, sources, many(shapes), shapes))
    diffs = []
    for key in sorted(set(want[0]) | set(got[0])):
        diffs += compare_records(key, want[0].get(key, KeyError(key)), got[0].get(key, KeyError(key)), REL_TOL)
    return diffs


@pytest.mark.reference
@pytest.mark.parametrize("tp", TPS, ids=lambda tp: f"tp{tp}")
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.split("/")[1])
@pytest.mark.parametrize("stack_key", STACKS, ids=stack_id)
def test_phase_prices_equal_reference(stack_key, model, tp):
    deployment = Deployment(model, stack_key[0], stack_key[1], tp=tp)
    native, reference = make_pricer("native", deployment), make_pricer("reference", deployment)
    for phase in ("context", "generation"):
        diffs = _phase_diffs(native, reference, phase)
        assert not failures(diffs), f"{phase}:\n" + explain(diffs)


def test_phase_comparison_flags_a_missing_op():
    want = {"(1, 128, 0):0:context_embedding": {"latency_ms": 1.0, "source": "empirical"}}
    diffs = compare_records("(1, 128, 0):0:context_embedding", want["(1, 128, 0):0:context_embedding"], KeyError("x"), REL_TOL)
    assert failures(diffs)
