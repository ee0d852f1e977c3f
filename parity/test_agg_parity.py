"""Legacy agg parity: every column of our legacy run_agg row equals aiconfigurator 0.12.0's own
run_agg row (a fresh backend per point, the CLI's model and database) at rel 1e-9, OOM verdicts
included: dense models with the native and the reference pricer, MoE/MLA/hybrid models (no native
op builder) with the reference pricer."""

from __future__ import annotations

import pytest

from estimator.errors import EstimatorError
from estimator.scheduler import run_agg
from estimator.scheduler.facts import deployment_facts
from parity.agg_cases import AggCase, ci_cases, full_cases, moe_cases, reference_agg_row
from parity.compare import compare_records, explain, failures

REL_TOL = 1e-9
CI_CASES = ci_cases()
FULL_CASES = [c for c in full_cases() if c.id not in {k.id for k in CI_CASES}]


def _ours(case: AggCase, pricer: str):
    try:
        result = run_agg(case.deployment, case.point, "legacy", pricer)
    except EstimatorError as exc:
        return ValueError(str(exc))  # the reference raises plain ValueError for the same inputs
    return {**result.row, "oom": result.memory.oom, "kv_oom": result.memory.kv_oom}


def _theirs(case: AggCase):
    try:
        return reference_agg_row(case.deployment, case.point, deployment_facts(case.deployment).version)
    except ValueError as exc:
        return ValueError(str(exc))


def _diffs(case: AggCase, pricer: str, perturb: dict | None = None):
    ours = _ours(case, pricer)
    if perturb and isinstance(ours, dict):
        ours = {**ours, **{k: ours[k] * f for k, f in perturb.items()}}
    return compare_records(case.id, _theirs(case), ours, REL_TOL)


def _assert_parity(case: AggCase, pricer: str) -> None:
    diffs = _diffs(case, pricer)
    assert not failures(diffs), explain(diffs)


@pytest.mark.reference
@pytest.mark.parametrize("case", CI_CASES, ids=lambda c: c.id)
def test_legacy_row_equals_reference_native(case):
    _assert_parity(case, "native")


@pytest.mark.reference
@pytest.mark.parametrize("case", CI_CASES[::6], ids=lambda c: c.id)
def test_legacy_row_equals_reference_reference_pricer(case):
    _assert_parity(case, "reference")


@pytest.mark.reference
@pytest.mark.parametrize("case", moe_cases(), ids=lambda c: c.id)
def test_legacy_row_equals_reference_moe(case):
    """MoE, MLA and hybrid-attention models: reference-priced steps, facts read off the reference model."""
    _assert_parity(case, "reference")


@pytest.mark.full
@pytest.mark.reference
@pytest.mark.parametrize("pricer", ("native", "reference"))
@pytest.mark.parametrize("case", FULL_CASES, ids=lambda c: c.id)
def test_legacy_row_equals_reference_full(case, pricer):
    _assert_parity(case, pricer)


@pytest.mark.reference
@pytest.mark.parametrize("column", ("ttft", "tokens/s", "memory", "balance_score"))
def test_parity_comparison_fails_on_a_perturbed_value(column):
    diffs = _diffs(CI_CASES[0], "native", perturb={column: 1 + 1e-7})
    assert [d.metric for d in failures(diffs)] == [column]
