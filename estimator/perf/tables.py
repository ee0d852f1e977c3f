"""Built perf tables: parquet rows merged first-row-wins and laid out as Numba-ready arrays.

Each builder takes the ordered sources of one table (primary first) and returns an immutable
structure of NumPy arrays (see estimator.kernels.interp for the layouts) plus the Python-side
index from categorical keys to slice / curve ids. Nothing here interpolates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from estimator.jit import njit
from estimator.kernels.sol import sol


def read_rows(sources: list, columns: list[str], optional: dict[str, object] | None = None) -> dict[str, np.ndarray]:
    """Concatenate the given columns of every source (estimator.perf.sources.TableSource: .path,
    .kernel_sources) in priority order, file order kept.

    Optional columns absent from a file are filled with their default. String columns come back as
    object arrays; integer axes as float64 (exact: every key is < 2**53)."""
    optional = optional or {}
    parts: list[dict[str, np.ndarray]] = []
    for src in sources:
        if not src.path.exists():
            continue
        names = set(pq.read_schema(src.path).names)
        wanted = [c for c in columns if c in names] + [c for c in optional if c in names]
        if src.kernel_sources is not None and "kernel_source" in names and "kernel_source" not in wanted:
            wanted.append("kernel_source")
        table = pq.read_table(src.path, columns=wanted)
        if src.kernel_sources is not None and "kernel_source" in names:
            table = table.filter(pc.is_in(table["kernel_source"], pa.array(list(src.kernel_sources))))
        part = {}
        for c in columns:
            part[c] = _column(table, c)
        for c, default in optional.items():
            part[c] = _column(table, c) if c in names else np.full(table.num_rows, default, dtype=object if isinstance(default, str) else np.float64)
        parts.append(part)
    if not parts:
        return {c: np.empty(0) for c in [*columns, *optional]}
    return {c: np.concatenate([p[c] for p in parts]) for c in [*columns, *optional]}


def _column(table: pa.Table, name: str) -> np.ndarray:
    col = table[name]
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return np.asarray(col.to_pylist(), dtype=object)
    return col.to_numpy().astype(np.float64)


def first_wins(key_columns: list[np.ndarray]) -> np.ndarray:
    """Indices of the first row of every distinct full key, in ascending row order."""
    if len(key_columns[0]) == 0:
        return np.empty(0, dtype=np.int64)
    combined = _combined_codes([_codes(c) for c in key_columns])
    _, first = np.unique(combined, axis=0 if combined.ndim == 2 else None, return_index=True)
    return np.sort(first)


RADIX_LIMIT = 1 << 62  # combined keys of more distinct tuples than this stay [n, columns] rows


def _codes(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values): each row's index among the column's distinct values in ascending
    order. String columns are hashed (pandas.factorize), ~4x faster than sorting Python objects,
    with the same codes."""
    if column.dtype == object:
        codes, distinct = pd.factorize(column, sort=True)
        if len(distinct) and (codes >= 0).all():  # factorize codes None / NaN as -1; np.unique orders them
            return codes.astype(np.int64), np.asarray(distinct, dtype=object)
    distinct, codes = np.unique(column, return_inverse=True)
    return codes.astype(np.int64).ravel(), distinct


def _combined_codes(coded: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """One int64 per row whose order is the lexicographic order of the rows' per-column codes (mixed
    radix); as int64 rows ([n, columns]) when the radix product would overflow."""
    if math.prod(max(len(d), 1) for _, d in coded) >= RADIX_LIMIT:
        return np.stack([c for c, _ in coded], axis=1)
    combined = np.zeros(len(coded[0][0]), dtype=np.int64)
    for codes, distinct in coded:
        combined = combined * max(len(distinct), 1) + codes
    return combined


@dataclass(frozen=True)
class Grid3:
    """Slices of a 3-axis table: arrays (s_off, k0, o1, k1, o2, k2, v) and the key -> slice id index."""

    arrays: tuple  # (s_off, k0, o1, k1, o2, k2, v, leaf_xyz, leaf_log), see estimator.kernels.interp
    slices: dict  # categorical slice key tuple -> slice id


@dataclass(frozen=True)
class Grid2:
    arrays: tuple  # (s_off, k0, o1, k1, v, leaf_xy, leaf_log)
    slices: dict


@dataclass(frozen=True)
class Curves:
    arrays: tuple  # (c_off, x, y)
    curves: dict  # categorical key tuple -> curve id


def _group_starts(*cols: np.ndarray) -> np.ndarray:
    """Row indices (of already sorted rows) where any of cols changes, plus the end sentinel."""
    n = len(cols[0])
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    return np.append(np.flatnonzero(change), n).astype(np.int64)


def _offsets_of(parent_starts: np.ndarray, child_starts: np.ndarray) -> np.ndarray:
    """For each parent group, the index of its first child group (plus the end sentinel)."""
    return np.searchsorted(child_starts, parent_starts).astype(np.int64)


def build_grid3(slice_ids: np.ndarray, a0: np.ndarray, a1: np.ndarray, a2: np.ndarray, v: np.ndarray, n_slices: int) -> tuple:
    """Nested CSR over rows already deduplicated on (slice, a0, a1, a2)."""
    order = np.lexsort((a2, a1, a0, slice_ids))
    sid, a0, a1, a2, v = slice_ids[order], a0[order], a1[order], a2[order], v[order]
    g1 = _group_starts(sid, a0, a1)  # level-1 node starts (leaf offsets)
    g0 = _group_starts(sid, a0)  # level-0 node starts
    o2 = g1
    o1 = _offsets_of(g0, g1)
    k1 = a1[g1[:-1]]
    k0 = a0[g0[:-1]]
    s_of_l0 = sid[g0[:-1]]
    s_off = np.searchsorted(s_of_l0, np.arange(n_slices + 1)).astype(np.int64)
    xyz = np.ascontiguousarray(np.stack([a0, a1, a2], axis=1), dtype=np.float64)
    return (s_off, k0.astype(np.float64), o1, k1.astype(np.float64), o2, a2.astype(np.float64), v.astype(np.float64), xyz, _log2_coords(xyz))


def _log2_coords(xyz: np.ndarray) -> np.ndarray:
    """log2(max(v, 1e-12)) per coordinate, the hold's distance space."""
    return np.log2(np.maximum(xyz, 1e-12))


def build_grid2(slice_ids: np.ndarray, a0: np.ndarray, a1: np.ndarray, v: np.ndarray, n_slices: int) -> tuple:
    order = np.lexsort((a1, a0, slice_ids))
    sid, a0, a1, v = slice_ids[order], a0[order], a1[order], v[order]
    g0 = _group_starts(sid, a0)
    o1 = g0
    k0 = a0[g0[:-1]]
    s_off = np.searchsorted(sid[g0[:-1]], np.arange(n_slices + 1)).astype(np.int64)
    xy = np.ascontiguousarray(np.stack([a0, a1], axis=1), dtype=np.float64)
    return (s_off, k0.astype(np.float64), o1, a1.astype(np.float64), v.astype(np.float64), xy, _log2_coords(xy))


def build_curves(curve_ids: np.ndarray, x: np.ndarray, y: np.ndarray, n_curves: int) -> tuple:
    order = np.lexsort((x, curve_ids))
    cid, x, y = curve_ids[order], x[order], y[order]
    c_off = np.searchsorted(cid, np.arange(n_curves + 1)).astype(np.int64)
    return (c_off, x.astype(np.float64), y.astype(np.float64))


def slice_ids_of(key_columns: list[np.ndarray]) -> tuple[dict, np.ndarray]:
    """Map each row's categorical key tuple to a dense slice id (ids in sorted key order)."""
    n = len(key_columns[0])
    if n == 0:
        return {}, np.empty(0, dtype=np.int64)
    coded = [_codes(c) for c in key_columns]
    combined = _combined_codes(coded)
    distinct, ids = np.unique(combined, axis=0 if combined.ndim == 2 else None, return_inverse=True)
    first = np.zeros(len(distinct), dtype=np.int64)
    first[ids.ravel()] = np.arange(n)  # a row of each distinct key (any: they share the key)
    keys = zip(*[d[c[first]].tolist() for c, d in coded])
    return {k: i for i, k in enumerate(keys)}, ids.astype(np.int64).ravel()


@njit(cache=True)
def floor_at_sol(kind, params, slice_ids, coords, lat):
    """lat[r] = max(lat[r], SOL(params[slice_ids[r]], coords[r])) for every row, in place."""
    for r in range(lat.shape[0]):
        s = sol(kind, params[slice_ids[r]], coords[r])
        if s > lat[r]:
            lat[r] = s
