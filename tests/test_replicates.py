"""Replicate runs: the key separates exactly what an estimator reads, and the floor is the least
summed APE one prediction per group can reach."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from measurements.loaders import load_silicon_sample
from measurements.replicates import best_constant, id_stem, replicate_floor, replicate_key

POSITIVE = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)


@pytest.fixture(scope="module")
def run():
    """A measured InferenceX row with a dated, serial-numbered id."""
    return next(m for m in load_silicon_sample() if m.id.startswith("2026_") and "_tp8_0_ep8_0_" in m.id)


def test_id_stem_drops_date_and_serial_and_spells_the_layout_one_way():
    assert id_stem("2026_03_25_dsr1_h200_sxm_trtllm_fp8_agg_1024x1024_c48_tp8_0_ep8_0_357") == "dsr1_h200_sxm_trtllm_fp8_agg_1024x1024_c48_tp8_ep8"
    assert id_stem("2026_04_06_dsr1_h200_sxm_trtllm_fp8_agg_1024x1024_c48_tp8_ep8_1542") == "dsr1_h200_sxm_trtllm_fp8_agg_1024x1024_c48_tp8_ep8"
    assert id_stem("minimaxm2_5_b300_vllm_fp8_agg_8192x1024_c128_cfg733") == "minimaxm2_5_b300_vllm_fp8_agg_8192x1024_c128_cfg733"


def test_a_rerun_of_the_same_deployment_is_a_replicate(run):
    rerun = dataclasses.replace(
        run, id=f"2027_01_01_{id_stem(run.id)}_99", provenance="another run", measured_date="2027-01-01",
        ttft_ms=run.ttft_ms * 3, tpot_ms=run.tpot_ms / 2,
    )  # fmt: skip
    assert replicate_key(rerun) == replicate_key(run)


@pytest.mark.parametrize("change", [
    lambda m: {"concurrency": 999}, lambda m: {"isl": 4096}, lambda m: {"engine_version": "9.9.9"},
    lambda m: {"settings": m.settings.replace(stream_interval=7)},
    lambda m: {"agg": dataclasses.replace(m.agg, moe_ep=1)},
])  # fmt: skip
def test_any_recorded_fact_separates_rows(run, change):
    assert replicate_key(dataclasses.replace(run, **change(run))) != replicate_key(run)


def test_the_ids_layout_separates_rows(run):
    other = dataclasses.replace(run, id=run.id.replace("_tp8_0_ep8_0_", "_tp8_0_ep1_0_"))
    assert replicate_key(other) != replicate_key(run)


def test_best_constant_of_two_measurements():
    # sum(|p - v| / v) over v = 100, 200: slope 1/100 - 1/200 > 0 right of 100, so p = 100
    assert best_constant(np.array([200.0, 100.0])) == 100.0
    assert best_constant(np.array([7.0])) == 7.0


@given(st.lists(POSITIVE, min_size=1, max_size=12), POSITIVE)
@settings(max_examples=200, deadline=None)
def test_no_other_prediction_has_a_smaller_summed_ape(values, other):
    values = np.array(values)
    best = best_constant(values)
    assert np.abs(best / values - 1).sum() <= np.abs(other / values - 1).sum() * (1 + 1e-12)


@pytest.mark.parametrize("values", [[], [100.0, 0.0], [-1.0]])
def test_best_constant_rejects_what_has_no_ape(values):
    with pytest.raises(ValueError, match="positive measurements"):
        best_constant(np.array(values))


def test_floor_is_zero_for_single_and_alike_measurements_only():
    floor = replicate_floor(np.array([100.0, 200.0, 50.0, 80.0, 80.0]), np.array(["g", "g", "solo", "same", "same"]))
    assert floor.tolist() == [0.0, 0.5, 0.0, 0.0, 0.0]


def test_sample_replicates_share_every_mapped_input():
    """Rows with one key map to the same estimator inputs (so every method predicts them alike)."""
    from measurements.mapping import map_measurement

    groups: dict[str, list] = {}
    for m in load_silicon_sample():
        groups.setdefault(replicate_key(m), []).append(m)
    replicated = [g for g in groups.values() if len(g) > 1]
    assert len(replicated) > 100
    for group in replicated[::10]:
        inputs = {repr(map_measurement(m).inputs) for m in group}
        assert len(inputs) == 1, [m.id for m in group]
