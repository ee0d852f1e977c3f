"""Golden lane: every surface of every matrix shape equals its pinned record (rel 1e-9).

The CI tier asserts the seeded subset (parity.matrix.ci_matrix); `--full` asserts the whole
matrix. A failure prints an explained per-metric diff (golden, live, delta, delta %, tolerance,
status) naming the record. Re-pin with `python -m parity.pin` (see README, "Re-pinning goldens").
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from estimator.pricing import native_model
from estimator.pricing.native import NativePricer
from estimator.steps import StepModel
from parity.golden_extension import GoldenExtension
from parity.goldens import canonical, golden_path, read_golden_file, record_key
from parity.matrix import ci_matrix, full_matrix
from parity.surfaces import SURFACES, compute_record, decode_surface, deployment_of


def pytest_generate_tests(metafunc):
    if "shape" in metafunc.fixturenames:
        shapes = full_matrix() if metafunc.config.getoption("--full") else ci_matrix()
        metafunc.parametrize("shape", shapes, ids=lambda s: s.id)


@pytest.fixture
def golden(snapshot):
    return snapshot.use_extension(GoldenExtension)


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_surface_matches_golden(surface, shape, golden):
    assert compute_record(surface, shape) == golden(name=record_key(surface, shape))


def _golden_of(surface, shape) -> dict:
    return read_golden_file(golden_path(shape))["records"][record_key(surface, shape)]


def _stored(key: str, record: dict) -> str:
    return canonical(dict(record, __key__=key))


def test_doctored_golden_fails_with_an_explained_diff():
    shape = ci_matrix()[0]
    key = record_key("agg.uncached", shape)
    golden = _golden_of("agg.uncached", shape)
    doctored = dict(golden, ttft=golden["ttft"] * 1.05)
    ext = GoldenExtension()
    live = ext.serialize(compute_record("agg.uncached", shape))
    assert ext.matches(serialized_data=live, snapshot_data=_stored(key, golden))
    assert not ext.matches(serialized_data=live, snapshot_data=_stored(key, doctored))
    report = "\n".join(ext.diff_lines(live, _stored(key, doctored)))
    assert key in report and "ttft" in report and "FAIL" in report and "-4.762" in report


def test_one_ppm_perturbation_of_a_priced_value_fails_naming_record_and_metric():
    shape = next(s for s in ci_matrix() if s.workload.batch > 1)
    model = native_model(deployment_of(shape))
    arrays = list(model.tables.gemm.arrays)
    arrays[7] = arrays[7] * (1 + 1e-6)  # every GEMM curve latency, +1 ppm
    tables = dataclasses.replace(model.tables, gemm=dataclasses.replace(model.tables.gemm, arrays=tuple(arrays)))
    perturbed = StepModel(NativePricer(tables, model.ops.context, model.ops.generation), nextn=shape.workload.nextn)
    key = record_key("decode", shape)
    ext = GoldenExtension()
    live = ext.serialize({k: float(v) for k, v in decode_surface(shape, perturbed).items()})
    stored = _stored(key, _golden_of("decode", shape))
    assert not ext.matches(serialized_data=live, snapshot_data=stored)
    report = "\n".join(ext.diff_lines(live, stored))
    assert key in report and "genonly_step_ms" in report and "FAIL" in report


def test_error_records_compare_symmetrically():
    ext = GoldenExtension()
    err = {"<error>": "PerfDataMissingError"}
    assert ext.matches(serialized_data=ext.serialize(err), snapshot_data=_stored("k", err))
    assert not ext.matches(serialized_data=ext.serialize({"ttft": 1.0}), snapshot_data=_stored("k", err))
    assert not ext.matches(serialized_data=ext.serialize(err), snapshot_data=_stored("k", {"ttft": 1.0}))


def test_ci_tier_records_are_all_pinned_and_not_vacuous():
    values = 0
    for shape in ci_matrix():
        records = read_golden_file(golden_path(shape))["records"]
        for surface in SURFACES:
            record = records[record_key(surface, shape)]
            values += sum(1 for v in record.values() if isinstance(v, float) and v != 0.0)
    assert values > 1000, "the pinned CI records carry almost no non-zero metrics"


def test_golden_files_are_valid_sorted_json():
    for shape in ci_matrix()[:3]:
        text = golden_path(shape).read_text()
        doc = json.loads(text)
        assert list(doc["records"]) == sorted(doc["records"])
