"""The shape matrix: readable unique ids, and a CI tier that covers every axis value."""

from __future__ import annotations

import pytest

from parity.matrix import BACKENDS, MODELS, SYSTEMS, TPS, WORKLOADS, ci_matrix, full_matrix


def test_full_matrix_is_the_whole_product_with_unique_ids():
    full = full_matrix()
    assert len(full) == len(SYSTEMS) * len(BACKENDS) * len(MODELS) * len(TPS) * len(WORKLOADS)
    assert len({s.id for s in full}) == len(full)


@pytest.mark.parametrize(
    "axis, values",
    [("system", SYSTEMS), ("backend", BACKENDS), ("model", MODELS), ("tp", TPS), ("workload", WORKLOADS)],
)
def test_ci_tier_covers_every_axis_value(axis, values):
    seen = {getattr(s, axis) for s in ci_matrix()}
    assert seen == set(values)


def test_ci_tier_is_deterministic_and_a_subset():
    assert ci_matrix() == ci_matrix()
    assert set(ci_matrix()) <= set(full_matrix())


def test_workloads_respect_their_invariants():
    for w in WORKLOADS:
        assert 0 <= w.prefix < w.isl and w.osl >= 1 and w.batch >= 1
        assert w.nextn_accepted <= w.nextn


def test_ids_are_readable():
    shape = next(s for s in full_matrix() if s.system == "h200_sxm" and s.tp == 2 and s.workload == WORKLOADS[2])
    assert shape.id.startswith("h200_sxm-") and "-tp2-isl4096-osl512-p1024-b16-Cdef-n0" in shape.id
