"""Attention kernel-lane walk order, as aiconfigurator-core 0.12.0 resolves it for an attention op.

Context and generation attention tables are split by `kernel_source` into lanes (rows with an
empty kernel_source form lane "default"). A query walks an ordered lane list and the first lane
holding the whole slice key answers it. The list is:

  pinned     the user override's lanes, then the framework default from
             `systems/attention_lane_defaults.yaml` (backend -> floor-matched version -> sm_version)
  primary    lanes with rows in the requested version's own file, ranked below
  shared     every other lane: the known vocabulary, "default", then table-only lanes, ranked below

Ranking inside a tier: known lanes by (slice_count desc, row_count desc, name), then "default",
then lanes outside the vocabulary by the same key. With no override and no framework-default
entry (every trtllm version, unmapped vllm versions) the order fails closed to ("default",).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from estimator.caching import memo
from estimator.deployment import Backend
from estimator.errors import InvalidInputError
from estimator.perf.paths import read_yaml, systems_root
from estimator.perf.sources import TableSource, table_sources
from estimator.perf.system_spec import load_system_spec

DEFAULT_LANE = "default"
KNOWN_LANES = ("fa3", "fla", "flashinfer", "triton", "trtllm_mha")  # the user-facing lane vocabulary
CONTEXT_TABLE = "context_attention_perf"
GENERATION_TABLE = "generation_attention_perf"

# User-facing override -> stored kernel_source lanes, per backend (most specific first).
# A backend absent here (trtllm) supports no override other than "default".
OVERRIDE_LANES: dict[str, dict[str, tuple[str, ...]]] = {
    "sglang": {lane: (lane,) for lane in KNOWN_LANES},
    "vllm": {
        "triton": ("vllm_triton_attn",),
        "flashinfer": ("vllm_flashinfer_trtllmprefill", "vllm_flashinfer_trtllmdecode", "vllm_flashinfer"),
    },
}

# Per table: (slice-key columns, axis columns) that make one leaf. "n_kv_lookup" is
# num_key_value_heads with the MHA sentinel 0 when it equals num_heads; "window" defaults to 0;
# generation's sequence axis is isl + step and its slice key has no attention dtype.
_LEAF_LAYOUT = {
    CONTEXT_TABLE: (
        ("attn_dtype", "kv_cache_dtype", "n_kv_lookup", "head_dim", "window"),
        ("num_heads", "isl", "batch_size"),
    ),
    GENERATION_TABLE: (
        ("kv_cache_dtype", "n_kv_lookup", "head_dim", "window"),
        ("num_heads", "batch_size", "seq"),
    ),
}
_READ_COLUMNS = (
    "kernel_source", "attn_dtype", "kv_cache_dtype", "num_heads", "num_key_value_heads",
    "head_dim", "window_size", "isl", "step", "batch_size",
)  # fmt: skip


@dataclass(frozen=True)
class LaneStat:
    """Measured coverage of one lane, the key that ranks it.

    Counts are over the requested version's own file when `in_primary`, else over every source
    (only those counts ever decide the lane's rank in its tier).
    """

    name: str  # kernel_source lane ("default" for rows with an empty kernel_source)
    slice_count: int  # distinct slice keys the lane holds
    row_count: int  # distinct (slice key, axis point) leaves the lane holds, first-wins deduplicated
    in_primary: bool  # the lane has rows in the requested version's own file


def override_lanes(backend: str, override: str) -> tuple[str, ...]:
    """Stored lanes behind a user-facing attention-backend override; InvalidInputError if unsupported."""
    if override == DEFAULT_LANE:
        return (DEFAULT_LANE,)
    supported = OVERRIDE_LANES.get(backend, {})
    if override not in supported:
        raise InvalidInputError(f"attention backend {override!r} is not supported on {backend} (supported: {', '.join([*sorted(supported), DEFAULT_LANE])})")
    return supported[override]


def _floor_key(version: str) -> tuple[int, ...]:
    """Dotted-numeric version tuple for floor matching: numeric segments up to the first other
    segment, keeping that segment's leading digits ("1.3.0rc23" -> (1, 3, 0)); no digits -> (0,)."""
    parts: list[int] = []
    for segment in version.split("."):
        digits = re.match(r"\d+", segment)
        if digits:
            parts.append(int(digits.group()))
        if not segment.isdigit():
            break
    return tuple(parts) or (0,)


def framework_default(backend: str, version: str, sm_version: int | None) -> str | None:
    """The framework-default lane for (backend, floor-matched version, sm_version), or None without an entry.

    The entry may itself be "default" (vllm 0.24.0): that pins nothing but still counts as
    evidence, enabling the table-aware ranking.
    """
    per_version = _lane_defaults().get(backend) or {}
    floors = [v for v in per_version if _floor_key(str(v)) <= _floor_key(version)]
    if not floors:
        return None
    best = max(floors, key=lambda v: _floor_key(str(v)))
    return (per_version[best] or {}).get(sm_version)


@memo()
def _lane_defaults() -> dict:
    """Parsed `systems/attention_lane_defaults.yaml`."""
    return read_yaml(systems_root() / "attention_lane_defaults.yaml")


def _ranked(names, stats: dict[str, LaneStat]) -> list[str]:
    """Names by (slice_count desc, row_count desc, name); lanes without stats count as empty."""

    def key(name: str) -> tuple[int, int, str]:
        stat = stats.get(name)
        return (-stat.slice_count, -stat.row_count, name) if stat else (0, 0, name)

    return sorted(names, key=key)


def _tier_walk(pinned: tuple[str, ...], stats: dict[str, LaneStat]) -> list[str]:
    """Unpinned known lanes ranked, then "default", then lanes outside the vocabulary ranked."""
    donors = [lane for lane in KNOWN_LANES if lane not in pinned]
    vocabulary = {*pinned, *donors, DEFAULT_LANE}
    return _ranked(donors, stats) + [DEFAULT_LANE] + _ranked([n for n in stats if n not in vocabulary], stats)


def lane_order(
    backend: str | Backend,
    version: str,
    sm_version: int | None,
    lane_stats: list[LaneStat],
    override: str | None = None,
) -> tuple[str, ...]:
    """The lane walk order of an attention table (see the module docstring).

    `version` is the literal version dir name; `sm_version` None matches no framework default.
    Raises InvalidInputError for an override the backend does not support or whose lanes hold
    no rows in the table.
    """
    name = Backend.parse(backend).value
    listed = list(override_lanes(name, override)) if override is not None else []
    default_lane = framework_default(name, version, sm_version)
    if default_lane is not None and default_lane not in listed:
        listed.append(default_lane)
    pinned = tuple(lane for lane in listed if lane != DEFAULT_LANE)
    if not pinned and default_lane is None:
        return (DEFAULT_LANE,)
    stats = {s.name: s for s in lane_stats}
    if override not in (None, DEFAULT_LANE) and not stats.keys() & set(override_lanes(name, override)):
        raise InvalidInputError(
            f"attention backend {override!r} has no measurements in this table "
            f"(wanted lanes {', '.join(override_lanes(name, override))}; present: {', '.join(sorted(stats)) or 'none'})"
        )
    primary = {n: s for n, s in stats.items() if s.in_primary}
    return (
        pinned
        + tuple(lane for lane in _tier_walk(pinned, primary) if lane in primary)
        + tuple(lane for lane in _tier_walk(pinned, stats) if lane not in primary)
    )


def _check_table(table_name: str) -> None:
    """InvalidInputError naming `table_name` unless it is one of the two lane-split attention tables."""
    if table_name not in _LEAF_LAYOUT:
        raise InvalidInputError(f"not an attention lane table: {table_name!r} (use {CONTEXT_TABLE} or {GENERATION_TABLE})")


def _leaf_table(table: pa.Table, table_name: str) -> pa.Table:
    """Normalised (lane, slice key..., axes...) columns of an attention table."""
    _check_table(table_name)
    n = table.num_rows
    column = {name: table[name] for name in table.column_names}
    kernel_source = column.get("kernel_source", pa.nulls(n, pa.string())).cast(pa.string())
    lane = pc.if_else(pc.fill_null(pc.not_equal(kernel_source, ""), False), kernel_source, DEFAULT_LANE)
    heads, kv_heads = column["num_heads"], column["num_key_value_heads"]
    derived = {
        "lane": lane,
        "n_kv_lookup": pc.if_else(pc.equal(heads, kv_heads), 0, kv_heads),
        "window": pc.fill_null(column.get("window_size", pa.nulls(n, pa.int64())), 0),
    }
    if "step" in column:
        derived["seq"] = pc.add(column["isl"], column["step"])
    key, axes = _LEAF_LAYOUT[table_name]
    names = ("lane", *key, *axes)
    return pa.table({c: derived[c] if c in derived else column[c] for c in names})


def _lane_counts(leaves: pa.Table, key: tuple[str, ...], axes: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """{lane: (distinct slice keys, distinct leaves)} of a leaf table."""
    unique_leaves = leaves.group_by(["lane", *key, *axes], use_threads=False).aggregate([])
    unique_slices = unique_leaves.group_by(["lane", *key], use_threads=False).aggregate([])
    rows, slices = (_count_per_lane(t) for t in (unique_leaves, unique_slices))
    return {lane: (slices[lane], rows[lane]) for lane in rows}


def _count_per_lane(table: pa.Table) -> dict[str, int]:
    """{lane: number of rows} of a table with a "lane" column."""
    counts = table.group_by("lane", use_threads=False).aggregate([([], "count_all")])
    return dict(zip(counts["lane"].to_pylist(), counts["count_all"].to_pylist()))


def lane_stats_from_table(table, primary_mask, table_name: str) -> list[LaneStat]:
    """Per-lane coverage of an attention table, sorted by lane name.

    `table` (pyarrow Table or pandas DataFrame) concatenates every source's rows in priority
    order, already filtered to each source's admitted kernel_sources; it needs kernel_source
    (optional), num_heads, num_key_value_heads, head_dim, kv_cache_dtype, isl, batch_size,
    window_size (optional), plus attn_dtype (context) or step (generation). `primary_mask`
    (boolean, one per row) marks rows from the requested version's own file. `table_name` is
    CONTEXT_TABLE or GENERATION_TABLE. A leaf is one (lane, slice key, axis point); duplicates
    (later sources re-measuring a point) count once, as the reference's first-wins load keeps one.
    """
    arrow = table if isinstance(table, pa.Table) else pa.Table.from_pandas(table, preserve_index=False)
    leaves = _leaf_table(arrow, table_name)
    key, axes = _LEAF_LAYOUT[table_name]
    everywhere = _lane_counts(leaves, key, axes)
    in_primary = _lane_counts(leaves.filter(pa.array(primary_mask, pa.bool_())), key, axes)
    return [LaneStat(lane, *in_primary.get(lane, counts), in_primary=lane in in_primary) for lane, counts in sorted(everywhere.items())]


def _read_source(source: TableSource) -> pa.Table:
    """The lane-relevant columns of one source, rows restricted to its admitted kernel_sources."""
    available = pq.read_schema(source.path).names
    table = pq.read_table(source.path, columns=[c for c in _READ_COLUMNS if c in available])
    table = table.cast(pa.schema([pa.field(f.name, _normal_type(f.type)) for f in table.schema]))
    if source.kernel_sources is None:
        return table
    if "kernel_source" not in available:
        return table.slice(0, 0)
    return table.filter(pc.is_in(table["kernel_source"], pa.array(source.kernel_sources)))


def _normal_type(arrow_type: pa.DataType) -> pa.DataType:
    """Common type per column across files: strings -> string, integers -> int64."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_dictionary(arrow_type):
        return pa.string()
    return pa.int64() if pa.types.is_integer(arrow_type) else arrow_type


def table_lane_stats(system: str, backend: str | Backend, version: str, table_name: str) -> list[LaneStat]:
    """Lane coverage of an attention table on (system, backend, literal version), from the shipped data.

    Reads the lane columns of every source `table_sources` lists (primary, reuse, fallbacks,
    cross-backend, kernel_source-filtered); [] when no source exists.
    """
    _check_table(table_name)
    sources = table_sources(system, backend, version, "attention", table_name)
    tables = [_read_source(s) for s in sources]
    if not tables:
        return []
    mask = np.concatenate([np.full(t.num_rows, s.channel == "primary") for s, t in zip(sources, tables)])
    return lane_stats_from_table(pa.concat_tables(tables, promote_options="default"), mask, table_name)


def resolve_lane_order(system: str, backend: str | Backend, version: str, table_name: str, override: str | None = None) -> tuple[str, ...]:
    """The lane walk order of an attention table on (system, backend, literal version): `lane_order`
    over `table_lane_stats` with the system's sm_version."""
    stats = table_lane_stats(system, backend, version, table_name)
    return lane_order(backend, version, load_system_spec(system).sm_version, stats, override)
