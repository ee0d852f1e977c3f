"""Parity of the native perf-table resolution (paths, versions, sources, system specs, lanes) with
aiconfigurator-core 0.12.0, plus error behaviour. Every parity comparison goes through `mismatches`,
and each has a companion test proving a perturbed value is flagged."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from estimator.errors import (
    InvalidInputError,
    PerfDataMissingError,
    UnknownBackendError,
    UnknownSystemError,
    UnknownVersionError,
)
from estimator.perf import lanes
from estimator.perf.paths import list_systems, system_data_dir, systems_root
from estimator.perf.sources import CHANNELS, TableSource, nccl_source, oneccl_source, table_sources
from estimator.perf.system_spec import QUANT_PROFILES, flops, load_system_spec, p2p_bw, quant_profile
from estimator.perf.versions import SLOT_ALIASES, list_stacks, resolve_version, version_slots

ref_core = pytest.importorskip("aiconfigurator_core")
from aiconfigurator_core.sdk import common as ref_common  # noqa: E402
from aiconfigurator_core.sdk import perf_database as ref_pdb  # noqa: E402
from aiconfigurator_core.sdk.engine_table_view import fetch_attention_lane_density  # noqa: E402
from aiconfigurator_core.sdk.operations.attention import resolved_lane_order_for_op  # noqa: E402
from aiconfigurator_core.sdk.operations.base import resolve_op_data_path  # noqa: E402
from aiconfigurator_core.sdk.system_spec import SystemSpec as RefSystemSpec  # noqa: E402

logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)

BACKENDS = ("sglang", "trtllm", "vllm")
TABLE_FAMILIES = {
    "gemm_perf": "gemm",
    "context_attention_perf": "attention",
    "generation_attention_perf": "attention",
    "custom_allreduce_perf": "comm",
    "moe_perf": "moe",
    "computescale_perf": "quantize",
    "scale_matrix_perf": "quantize",
}
LANE_TABLES = {lanes.CONTEXT_TABLE: "_context_attention_data", lanes.GENERATION_TABLE: "_generation_attention_data"}
STACKS = list_stacks()
CURRENT_STACKS = [(s, b, version_slots(s, b).current) for s, b in dict.fromkeys((s, b) for s, b, _ in STACKS)]
NEXT_TRTLLM_STACKS = [(s, b, v) for s, b, v in STACKS if b == "trtllm" and v == version_slots(s, b).next]
_MISSING = object()


def mismatches(expected: Mapping | Sequence, got: Mapping | Sequence) -> list[str]:
    """Human-readable differences between two mappings (by key) or sequences (by position); [] = equal."""
    exp = dict(expected) if isinstance(expected, Mapping) else dict(enumerate(expected))
    act = dict(got) if isinstance(got, Mapping) else dict(enumerate(got))
    keys = sorted(exp.keys() | act.keys(), key=str)
    return [f"{k}: expected {exp.get(k, _MISSING)!r}, got {act.get(k, _MISSING)!r}" for k in keys if exp.get(k, _MISSING) != act.get(k, _MISSING)]


def stack_id(*parts: object) -> str:
    return "-".join(map(str, parts))


# ----------------------------------------------------------------------------- reference oracles


@functools.cache
def ref_sources(system: str, backend: str, version: str, table: str) -> tuple[tuple, ...]:
    """The reference resolver's existing sources as (path, channel, version, kernel_sources)."""
    root = str(systems_root())
    report = json.loads(
        ref_core.resolve_op_sources_report_json(
            root, str(system_data_dir(system)), backend, version, f"{table}.parquet", None,
            enable_shared_layer=True, strict=False,
        )
    )  # fmt: skip
    return tuple(
        (r["path"], r["channel"], r["version"], tuple(r["ks_filter"]) if r["ks_filter"] is not None else None) for r in report["records"] if r["exists"]
    )


def as_tuples(sources: list[TableSource]) -> tuple[tuple, ...]:
    return tuple((str(s.path), s.channel, s.version, s.kernel_sources) for s in sources)


@functools.cache
def ref_db(system: str, backend: str, version: str):
    db = ref_pdb.get_database(system, backend, version)
    assert db is not None, (system, backend, version)
    return db


@functools.cache
def ref_lane_case(system: str, backend: str, version: str, table: str) -> tuple[tuple[str, ...], dict, dict]:
    """(reference walk order, shared-layer lane density, primary-only lane density)."""
    db, attr = ref_db(system, backend, version), LANE_TABLES[table]
    order = tuple(resolved_lane_order_for_op(db, attr))
    return order, fetch_attention_lane_density(db, attr), fetch_attention_lane_density(db, attr, shared_layer=False)


def expected_lane_stats(shared: dict, primary: dict) -> dict[str, tuple]:
    """LaneStat contract: primary-file counts for lanes in the primary file, all-source counts otherwise."""
    return {lane: (*primary.get(lane, counts), lane in primary) for lane, counts in shared.items()}


@functools.cache
def native_lane_stats(system: str, backend: str, version: str, table: str) -> tuple[lanes.LaneStat, ...]:
    return tuple(lanes.table_lane_stats(system, backend, version, table))


# ----------------------------------------------------------------------------- paths


def test_list_systems_requires_yaml_and_data_dir():
    systems = list_systems()
    assert systems == sorted(systems)
    assert {"h200_sxm", "b200_sxm", "gb200", "a100_pcie"} <= set(systems)
    assert not {"query_versions", "attention_lane_defaults", "perf_data_reuse_manifest"} & set(systems)
    assert all((systems_root() / f"{s}.yaml").is_file() and system_data_dir(s).is_dir() for s in systems)


# ----------------------------------------------------------------------------- versions


@pytest.mark.reference
def test_list_stacks_matches_reference_supported_databases():
    supported = ref_pdb.get_supported_databases()
    expected = sorted((s, b, v) for s in supported for b in supported[s] for v in supported[s][b])
    assert not mismatches(expected, sorted(STACKS))
    assert ("b200_sxm", "trtllm", "1.3.0rc23") in STACKS and ("b60", "vllm", "0.20.0") in STACKS


@pytest.mark.reference
def test_stack_comparison_flags_perturbed_stack():
    supported = ref_pdb.get_supported_databases()
    expected = sorted((s, b, v) for s in supported for b in supported[s] for v in supported[s][b])
    assert mismatches(expected[:-1], sorted(STACKS))
    assert mismatches([("h200_sxm", "sglang", "0.5.10"), *expected[1:]], sorted(STACKS))


def native_slots(system: str, backend: str) -> dict[str, str] | None:
    try:
        slots = version_slots(system, backend)
    except UnknownBackendError:
        return None
    return {alias: slots.get(alias) for alias in SLOT_ALIASES if slots.get(alias)}


@pytest.mark.reference
@pytest.mark.parametrize("system", list_systems())
def test_version_slots_match_reference(system):
    for backend in BACKENDS:
        expected = ref_pdb.get_version_slots(system, backend) or {}
        assert not mismatches(expected, native_slots(system, backend) or {}), backend


@pytest.mark.reference
def test_slot_comparison_flags_perturbed_slot():
    expected = ref_pdb.get_version_slots("h200_sxm", "trtllm")
    assert mismatches({**expected, "next": "1.3.0rc22"}, native_slots("h200_sxm", "trtllm"))
    assert mismatches({"current": expected["current"]}, native_slots("h200_sxm", "trtllm"))


def ref_outcome(system: str, backend: str, version: str) -> str:
    try:
        return ref_pdb.resolve_query_version(system, backend, version)
    except ValueError:
        return "<rejected>"


def native_outcome(system: str, backend: str, version: str) -> str:
    try:
        return resolve_version(system, backend, version)
    except UnknownVersionError:
        return "<rejected>"


@pytest.mark.reference
@pytest.mark.parametrize("system,backend", sorted({(s, b) for s, b, _ in STACKS}), ids=stack_id)
def test_resolve_version_matches_reference(system, backend, monkeypatch):
    monkeypatch.delenv("AIC_ALLOW_UNLISTED_VERSIONS", raising=False)
    probes = [*SLOT_ALIASES, *version_slots(system, backend).versions(), "1.3.0rc10", "0.5.10", "0.19.0"]
    expected = {v: ref_outcome(system, backend, v) for v in probes}
    assert not mismatches(expected, {v: native_outcome(system, backend, v) for v in probes})


@pytest.mark.reference
def test_resolve_version_comparison_flags_perturbed_outcome():
    probes = ["next", "1.3.0rc10"]
    got = {v: native_outcome("h200_sxm", "trtllm", v) for v in probes}
    assert mismatches({"next": "1.3.0rc20", "1.3.0rc10": "<rejected>"}, got)
    assert mismatches({"next": "1.3.0rc23", "1.3.0rc10": "1.3.0rc10"}, got)


def test_resolve_version_defaults_aliases_and_dirless_next():
    assert resolve_version("h200_sxm", "sglang") == "0.5.14"
    assert resolve_version("h200_sxm", "trtllm", "next") == "1.3.0rc23"
    assert resolve_version("b60", "vllm", "previous") == "0.20.0"
    assert resolve_version("h200_sxm", "vllm", "next") == "0.27.0"  # no 0.27.0 dir on h200: fallback-served


def test_unlisted_versions_need_explicit_opt_in(monkeypatch):
    monkeypatch.delenv("AIC_ALLOW_UNLISTED_VERSIONS", raising=False)
    with pytest.raises(UnknownVersionError) as err:
        resolve_version("h200_sxm", "trtllm", "1.3.0rc10")
    assert "'1.3.0rc10'" in str(err.value) and "current=1.3.0rc20" in str(err.value) and "next=1.3.0rc23" in str(err.value)
    assert resolve_version("h200_sxm", "trtllm", "1.3.0rc10", allow_unlisted=True) == "1.3.0rc10"
    monkeypatch.setenv("AIC_ALLOW_UNLISTED_VERSIONS", "1")
    assert resolve_version("h200_sxm", "trtllm", "1.3.0rc10") == "1.3.0rc10"
    with pytest.raises(UnknownVersionError, match="'9.9.9'"):
        resolve_version("h200_sxm", "trtllm", "9.9.9")  # allowed, but no data directory


@pytest.mark.parametrize(
    "call,error,names",
    [
        (lambda: resolve_version("h900_sxm", "vllm"), UnknownSystemError, "'h900_sxm'"),
        (lambda: resolve_version("h200_sxm", "tensorrt"), UnknownBackendError, "'tensorrt'"),
        (lambda: resolve_version("a100_pcie", "vllm"), UnknownBackendError, "'a100_pcie'"),
        (lambda: resolve_version("b60", "sglang"), UnknownBackendError, "'sglang'"),
        (lambda: resolve_version("h200_sxm", "sglang", "previous"), UnknownVersionError, "'previous'"),
        (lambda: resolve_version("a100_sxm", "vllm", "next"), UnknownVersionError, "'next'"),
        (lambda: resolve_version("h200_sxm", "sglang", "0.5.9"), UnknownVersionError, "'0.5.9'"),
        (lambda: table_sources("h900_sxm", "vllm", "0.24.0", "gemm", "gemm_perf"), UnknownSystemError, "'h900_sxm'"),
        (lambda: table_sources("h200_sxm", "tgi", "0.24.0", "gemm", "gemm_perf"), UnknownBackendError, "'tgi'"),
        (lambda: load_system_spec("h900_sxm"), UnknownSystemError, "'h900_sxm'"),
        (lambda: nccl_source("h900_sxm"), UnknownSystemError, "'h900_sxm'"),
        (lambda: flops(load_system_spec("h200_sxm"), "fp4"), PerfDataMissingError, "fp4"),
        (lambda: quant_profile("gemm", "int3"), InvalidInputError, "'int3'"),
        (lambda: lanes.lane_order("trtllm", "1.3.0rc20", 90, [], "triton"), InvalidInputError, "'triton'"),
        (lambda: lanes.resolve_lane_order("h200_sxm", "sglang", "0.5.14", "mla_perf"), InvalidInputError, "'mla_perf'"),
    ],
    ids=[
        "unknown-system", "unknown-backend", "estimate-only-system", "backend-without-data", "missing-previous-slot",
        "override-system-has-no-next", "unlisted-version", "sources-unknown-system", "sources-unknown-backend",
        "spec-unknown-system", "nccl-unknown-system", "fp4-on-h200", "unknown-quant", "trtllm-override",
        "not-a-lane-table",
    ],
)  # fmt: skip
def test_errors_name_the_bad_value(call, error, names):
    with pytest.raises(error) as err:
        call()
    assert names in str(err.value)


# ----------------------------------------------------------------------------- sources

SOURCE_CASES = [pytest.param(s, b, v, t, id=stack_id(s, b, v, t)) for s, b, v in CURRENT_STACKS + NEXT_TRTLLM_STACKS for t in TABLE_FAMILIES]


@pytest.mark.reference
@pytest.mark.parametrize("system,backend,version,table", SOURCE_CASES)
def test_table_sources_match_reference(system, backend, version, table):
    got = table_sources(system, backend, version, TABLE_FAMILIES[table], table)
    assert not mismatches(ref_sources(system, backend, version, table), as_tuples(got))
    assert all(s.channel in CHANNELS and s.path.is_file() for s in got)


@pytest.mark.reference
def test_source_comparison_flags_perturbed_source():
    expected = ref_sources("h200_sxm", "sglang", "0.5.14", "custom_allreduce_perf")
    assert [r[1] for r in expected] == ["primary", "fallback", "fallback", "fallback"]
    got = as_tuples(table_sources("h200_sxm", "sglang", "0.5.14", "comm", "custom_allreduce_perf"))
    swapped = (expected[0], expected[2], expected[1], expected[3])
    relabelled = ((*expected[0][:1], "fallback", *expected[0][2:]), *expected[1:])
    for perturbed in (swapped, expected[:-1], relabelled):
        assert mismatches(perturbed, got)


@pytest.mark.reference
@pytest.mark.parametrize("system,backend,version", STACKS, ids=stack_id)
def test_every_table_of_every_shipped_stack_matches_reference(system, backend, version):
    for filename in ref_common.PerfDataFilename:
        table = filename.value.removesuffix(".parquet")
        got = as_tuples(table_sources(system, backend, version, "none", table))
        assert not mismatches(ref_sources(system, backend, version, table), got), table


def test_doc_described_resolutions():
    def channels(system, backend, version, table):
        return [(s.channel, s.version) for s in table_sources(system, backend, version, TABLE_FAMILIES[table], table)]

    assert channels("b200_sxm", "trtllm", "1.3.0rc23", "gemm_perf") == [("declared_reuse", "1.3.0rc20")]
    assert channels("h200_sxm", "trtllm", "1.3.0rc23", "gemm_perf") == [("fallback", "1.3.0rc20")]
    assert channels("b200_sxm", "vllm", "0.24.0", "context_attention_perf") == [("primary", "0.24.0"), ("fallback", "0.22.0")]
    assert channels("h200_sxm", "sglang", "0.5.14", "custom_allreduce_perf") == [
        ("primary", "0.5.14"), ("fallback", "0.5.10"), ("fallback", "0.5.9"), ("fallback", "0.5.6.post2"),
    ]  # fmt: skip
    mla_bmm = table_sources("h200_sxm", "sglang", "0.5.14", "mla_bmm", "mla_bmm_perf")
    assert [(s.channel, s.version, s.kernel_sources) for s in mla_bmm][1:] == [("cross_backend", "1.3.0rc20", ("default",))]
    assert all(s.path.is_file() for s in mla_bmm)


@pytest.mark.reference
@pytest.mark.parametrize("system", list_systems())
def test_collective_sources_match_reference_primary(system):
    spec = load_system_spec(system)
    for library, source in (("nccl", nccl_source(system)), ("oneccl", oneccl_source(system))):
        version = getattr(spec, f"{library}_version")
        expected = resolve_op_data_path(str(system_data_dir(system)), library, version, f"{library}_perf.parquet") if version else None
        exists = expected is not None and Path(expected).is_file()
        assert not mismatches({library: expected if exists else None}, {library: str(source.path) if source else None})


def test_collective_comparison_flags_perturbed_path():
    path = str(nccl_source("h200_sxm").path)
    assert mismatches({"nccl": path.replace("2.26.2", "2.29.2")}, {"nccl": path})
    assert mismatches({"nccl": None}, {"nccl": path})


def test_collective_sources_take_no_extras():
    assert nccl_source("h200_sxm").path.parts[-3:] == ("nccl", "2.26.2", "nccl_perf.parquet")
    assert nccl_source("b200_sxm").version == "2.27.3"
    assert nccl_source("b60") is None and oneccl_source("b60").version == "2021.15.9"
    assert [s.channel for s in table_sources("h200_sxm", "sglang", "0.5.14", "comm", "nccl_perf")] == []


# ----------------------------------------------------------------------------- system specs

# SystemSpec field -> reference yaml path.
SPEC_FIELDS = {
    "mem_bw": ("gpu", "mem_bw"),
    "mem_bw_empirical_scaling_factor": ("gpu", "mem_bw_empirical_scaling_factor"),
    "mem_empirical_constant_latency": ("gpu", "mem_empirical_constant_latency"),
    "mem_capacity": ("gpu", "mem_capacity"),
    "sm_version": ("gpu", "sm_version"),
    "num_gpus_per_node": ("node", "num_gpus_per_node"),
    "num_gpus_per_rack": ("node", "num_gpus_per_rack"),
    "intra_node_bw": ("node", "intra_node_bw"),
    "inter_node_bw": ("node", "inter_node_bw"),
    "inter_rack_bw": ("node", "inter_rack_bw"),
    "p2p_latency": ("node", "p2p_latency"),
    "nccl_version": ("misc", "nccl_version"),
    "oneccl_version": ("misc", "oneccl_version"),
    "other_mem": ("misc", "other_mem"),
}
GPU_COUNTS = (1, 2, 4, 8, 16, 64, 72, 73, 256)
REF_QUANT_ENUMS = {
    "gemm": ref_common.GEMMQuantMode,
    "moe": ref_common.MoEQuantMode,
    "fmha": ref_common.FMHAQuantMode,
    "kv": ref_common.KVCacheQuantMode,
    "comm": ref_common.CommQuantMode,
}


def ref_spec_view(system: str) -> dict:
    """Every reference spec value the pricer uses, keyed like `native_spec_view`."""
    raw = ref_pdb.load_system_spec(system)
    view = {field: raw.get(section, {}).get(key) for field, (section, key) in SPEC_FIELDS.items()}
    view["nccl_mem"] = sorted(raw["misc"].get("nccl_mem", {}).items())
    view.update({f"p2p_bw({n})": RefSystemSpec(raw).get_p2p_bandwidth(n) for n in GPU_COUNTS})
    for kind, enum in REF_QUANT_ENUMS.items():
        for mode in enum:
            if mode.value.compute_dtype is not None:
                try:
                    view[f"flops({kind}:{mode.name})"] = ref_common.get_quant_tc_flops(raw, mode)
                except ValueError:
                    view[f"flops({kind}:{mode.name})"] = "<missing>"
    return view


def native_spec_view(spec) -> dict:
    view = {field: getattr(spec, field) for field in SPEC_FIELDS}
    view["nccl_mem"] = list(spec.nccl_mem)
    view.update({f"p2p_bw({n})": p2p_bw(spec, n) for n in GPU_COUNTS})
    for kind, profiles in QUANT_PROFILES.items():
        for profile in profiles.values():
            if profile.flops_key is not None:
                try:
                    view[f"flops({kind}:{profile.name})"] = flops(spec, profile.flops_key)
                except PerfDataMissingError:
                    view[f"flops({kind}:{profile.name})"] = "<missing>"
    return view


@pytest.mark.reference
@pytest.mark.parametrize("system", list_systems())
def test_system_spec_matches_reference(system):
    assert not mismatches(ref_spec_view(system), native_spec_view(load_system_spec(system)))


@pytest.mark.reference
def test_spec_comparison_flags_perturbed_field():
    spec = load_system_spec("gb200")
    expected = ref_spec_view("gb200")
    for change in ({"mem_bw": spec.mem_bw * (1 + 1e-12)}, {"inter_rack_bw": None}, {"tc_flops": spec.tc_flops[:-1]}):
        assert mismatches(expected, native_spec_view(dataclasses.replace(spec, **change))), change


def test_spec_values_and_flops_gate():
    h200, b200 = load_system_spec("h200_sxm"), load_system_spec("b200_sxm")
    assert (h200.mem_bw, h200.sm_version, h200.nccl_version, h200.num_gpus_per_rack) == (4.8e12, 90, "2.26.2", None)
    assert flops(b200, "fp4") == 9000e12 and flops(h200, "fp8") == flops(h200, "int8") == 1978e12
    assert load_system_spec("b60").sm_version is None
    assert hash(h200) == hash(load_system_spec("h200_sxm"))


def native_profile_view(kind: str) -> dict:
    return {name: (p.bytes_per_element, p.flops_key) for name, p in QUANT_PROFILES[kind].items()}


def ref_profile_view(kind: str) -> dict:
    key = {"bfloat16": "bf16", "fp8": "fp8", "int8": "int8", "fp4": "fp4", None: None}
    return {m.name: (m.value.memory, key[m.value.compute_dtype]) for m in REF_QUANT_ENUMS[kind]}


@pytest.mark.reference
@pytest.mark.parametrize("kind", sorted(REF_QUANT_ENUMS))
def test_quant_profiles_match_reference_enums(kind):
    assert not mismatches(ref_profile_view(kind), native_profile_view(kind))


@pytest.mark.reference
def test_quant_profile_comparison_flags_perturbed_bytes():
    assert quant_profile("gemm", "nvfp4").bytes_per_element == 9 / 16
    assert mismatches(ref_profile_view("gemm"), {**native_profile_view("gemm"), "nvfp4": (0.5, "fp4")})


# ----------------------------------------------------------------------------- attention lanes

LANE_CASES = [pytest.param(s, b, v, t, id=stack_id(s, b, v, t)) for s, b, v in CURRENT_STACKS for t in LANE_TABLES]


@pytest.mark.reference
@pytest.mark.parametrize("system,backend,version,table", LANE_CASES)
def test_lane_order_and_stats_match_reference(system, backend, version, table):
    order, shared, primary = ref_lane_case(system, backend, version, table)
    stats = native_lane_stats(system, backend, version, table)
    got = {s.name: (s.slice_count, s.row_count, s.in_primary) for s in stats}
    assert not mismatches(expected_lane_stats(shared, primary), got)
    assert not mismatches(order, lanes.resolve_lane_order(system, backend, version, table))


@pytest.mark.reference
def test_lane_comparison_flags_perturbed_stats():
    case = ("b200_sxm", "sglang", "0.5.14", lanes.CONTEXT_TABLE)
    order, shared, primary = ref_lane_case(*case)
    stats = native_lane_stats(*case)
    boosted = [dataclasses.replace(s, slice_count=999) if s.name == "flashinfer" else s for s in stats]
    assert mismatches(expected_lane_stats(shared, primary), {s.name: (s.slice_count, s.row_count, s.in_primary) for s in boosted})
    assert mismatches(order, lanes.lane_order("sglang", "0.5.14", 100, boosted))
    assert not mismatches(order, lanes.lane_order("sglang", "0.5.14", 100, list(stats)))


OVERRIDE_CASES = [
    pytest.param(*case, override, id=stack_id(*case, override))
    for case, overrides in [
        (("h200_sxm", "sglang", "0.5.14"), ("fa3", "triton", "flashinfer", "default")),
        (("b200_sxm", "sglang", "0.5.14"), ("trtllm_mha", "flashinfer", "fa3")),
        (("b200_sxm", "vllm", "0.24.0"), ("triton", "flashinfer", "default")),
        (("h200_sxm", "trtllm", "1.3.0rc20"), ("default",)),
    ]
    for override in overrides
]


def outcome(fn):
    try:
        return tuple(fn())
    except (InvalidInputError, ValueError):
        return "<rejected>"


@pytest.mark.reference
@pytest.mark.parametrize("system,backend,version,override", OVERRIDE_CASES)
def test_lane_override_matches_reference(system, backend, version, override):
    for table, attr in LANE_TABLES.items():
        expected = outcome(lambda: resolved_lane_order_for_op(ref_db(system, backend, version), attr, override))
        got = outcome(lambda: lanes.lane_order(backend, version, load_system_spec(system).sm_version,
                                               list(native_lane_stats(system, backend, version, table)), override))  # fmt: skip
        assert not mismatches([expected], [got]), table


@pytest.mark.reference
def test_lane_override_comparison_flags_perturbed_order():
    stats = list(native_lane_stats("h200_sxm", "sglang", "0.5.14", lanes.CONTEXT_TABLE))
    got = outcome(lambda: lanes.lane_order("sglang", "0.5.14", 90, stats, "triton"))
    assert got[:2] == ("triton", "fa3")
    assert mismatches([("fa3", *got[1:])], [got]) and mismatches(["<rejected>"], [got])


def test_lane_order_rules_on_synthetic_stats():
    stat = lanes.LaneStat
    donor_heavy = [stat("fa3", 1, 10, True), stat("triton", 5, 50, True), stat("zz_custom", 9, 90, False)]
    assert lanes.lane_order("sglang", "0.5.14", 90, donor_heavy) == (
        "fa3", "triton", "fla", "flashinfer", "trtllm_mha", "default", "zz_custom",
    )  # fmt: skip
    assert lanes.lane_order("sglang", "0.5.14", 120, donor_heavy)[:3] == ("flashinfer", "triton", "fa3")
    assert lanes.lane_order("sglang", "0.5.9", 90, donor_heavy) == ("default",)  # below every mapped version
    assert lanes.lane_order("sglang", "0.5.16", None, donor_heavy) == ("default",)  # no sm entry
    assert lanes.lane_order("trtllm", "1.3.0rc20", 100, donor_heavy) == ("default",)
    assert lanes.lane_order("vllm", "0.27.0", 90, [stat("b", 1, 1, False), stat("a", 1, 1, True)])[0] == "a"


def test_lane_stats_count_deduplicated_leaves_per_lane():
    import pandas as pd

    base = dict(attn_dtype="bfloat16", kv_cache_dtype="bfloat16", head_dim=128, batch_size=1, isl=1)
    rows = [
        dict(base, kernel_source="fa3", num_heads=8, num_key_value_heads=8, step=3),  # MHA: kv lookup 0
        dict(base, kernel_source="fa3", num_heads=16, num_key_value_heads=16, step=3),  # same slice, new leaf
        dict(base, kernel_source="fa3", num_heads=8, num_key_value_heads=8, step=3),  # fallback duplicate
        dict(base, kernel_source="fa3", num_heads=8, num_key_value_heads=2, step=3),  # GQA: new slice
        dict(base, kernel_source="", num_heads=8, num_key_value_heads=8, step=3),  # empty -> "default"
        dict(base, kernel_source="fa3", num_heads=8, num_key_value_heads=8, step=2, isl=2),  # isl+step: dup (gen)
    ]
    frame = pd.DataFrame(rows)
    primary = [True, True, False, False, False, False]
    generation = lanes.lane_stats_from_table(frame, primary, lanes.GENERATION_TABLE)
    assert generation == [lanes.LaneStat("default", 1, 1, False), lanes.LaneStat("fa3", 1, 2, True)]
    everywhere = lanes.lane_stats_from_table(frame, [False] * len(rows), lanes.CONTEXT_TABLE)
    assert everywhere == [lanes.LaneStat("default", 1, 1, False), lanes.LaneStat("fa3", 2, 4, False)]
