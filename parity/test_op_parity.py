"""Per-op parity: the native Numba pricer equals the reference engine to rel 1e-12.

500 seeded random queries per op family per stack, including off-grid, past-the-frontier and
miss queries. A miss must raise on both sides (error symmetry).
"""

from __future__ import annotations

import dataclasses

import pytest

from parity.compare import compare_records, explain, failures
from parity.op_queries import FAMILIES, make_queries, price_native, price_reference, stack
from parity.stacks import STACKS, stack_id

QUERIES_PER_FAMILY = 500
REL_TOL = 1e-12
# families whose queries must include both priced results and misses (anti-vacuous)
FAMILIES_WITH_MISSES = ("gemm", "context_attention", "generation_attention", "nccl", "moe")


def _run(system: str, backend: str, family: str, seed: int = 20261129):
    st = stack(system, backend)
    results = []
    for q in make_queries(family, st, QUERIES_PER_FAMILY, seed):
        expected, actual = price_reference(st, q), price_native(st, q)
        results.append((q, expected, actual, compare_records(q.label, expected, actual, REL_TOL)))
    return results


@pytest.mark.reference
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("stack_key", STACKS, ids=stack_id)
def test_native_op_prices_equal_reference(stack_key, family):
    results = _run(*stack_key, family)
    diffs = [d for *_, ds in results for d in ds]
    assert not failures(diffs), explain(diffs)
    priced = sum(1 for _, e, _, _ in results if not isinstance(e, BaseException))
    assert priced >= QUERIES_PER_FAMILY // 2, f"only {priced} of {len(results)} queries priced: the lane is vacuous"
    if family in FAMILIES_WITH_MISSES:
        assert priced < len(results), "no miss query: error symmetry is untested for this family"


def test_comparison_flags_a_one_ppm_perturbation():
    expected = {"latency_ms": 1.2345, "source": "silicon"}
    perturbed = {"latency_ms": 1.2345 * (1 + 1e-6), "source": "silicon"}
    diffs = compare_records("gemm q", expected, perturbed, REL_TOL)
    assert [d.metric for d in failures(diffs)] == ["latency_ms"]
    assert "gemm q" in explain(diffs) and "latency_ms" in explain(diffs)


def test_comparison_flags_a_changed_source_tag():
    diffs = compare_records("q", {"latency_ms": 1.0, "source": "silicon"}, {"latency_ms": 1.0, "source": "mixed"}, REL_TOL)
    assert [d.metric for d in failures(diffs)] == ["source"]


def test_error_symmetry_passes_same_class_and_fails_one_sided():
    assert not failures(compare_records("q", KeyError("a"), KeyError("b"), REL_TOL))
    assert failures(compare_records("q", KeyError("a"), {"latency_ms": 1.0}, REL_TOL))
    assert failures(compare_records("q", {"latency_ms": 1.0}, ValueError("x"), REL_TOL))
    assert failures(compare_records("q", KeyError("a"), ValueError("a"), REL_TOL))


def test_lane_detects_a_perturbed_table_value():
    """Scaling the native GEMM table by 1 + 1e-6 makes the lane fail on exact-hit queries."""
    st = stack("h200_sxm", "sglang")
    arrays = list(st.gemm.arrays)
    arrays[7] = arrays[7] * (1 + 1e-6)  # curve latencies
    skewed = dataclasses.replace(st, gemm=dataclasses.replace(st.gemm, arrays=tuple(arrays)))
    q = next(q for q in make_queries("gemm", st, 200, 3) if not isinstance(price_reference(st, q), BaseException))
    assert not failures(compare_records(q.label, price_reference(st, q), price_native(st, q), REL_TOL))
    assert failures(compare_records(q.label, price_reference(st, q), price_native(skewed, q), REL_TOL))
