"""The perf-table cache file: one stack's built tables as plain numbers, read without running code.

Layout: two .npy records (numpy's format, read with allow_pickle=False): a UTF-8 JSON manifest and
one uint8 blob holding every array at a 64-byte aligned offset. Nothing in the file names a type or
a callable: the tables are rebuilt by the fixed TABLE_TYPES schema, each array is a view of the blob
in a plain dtype (float64, int64, fixed-width unicode), and each dict's keys are typed columns (str,
int or float), so a planted or damaged file can only fail to load (read returns None).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np

from estimator.perf import families as F
from estimator.perf.tables import Curves, Grid2, Grid3

FORMAT = 4  # bump when the built layout or this file layout changes; another format's file is ignored
TABLE_TYPES = {
    "gemm": F.GemmSites,
    "context_attention": Grid3,
    "generation_attention": Grid3,
    "allreduce": Curves,
    "compute_scale": Grid2,
    "scale_matrix": Grid2,
    "nccl": Curves,
    "moe": F.MoeCurves,
}  # each: an `arrays` tuple and one dict from categorical keys to ids
NAME_TUPLES = ("context_lanes", "generation_lanes")  # tuples of str
_ALIGN = 64  # bytes: every array starts aligned, as a freshly allocated one is
_DTYPE = re.compile(r"<(f8|i8|U[1-9]\d{0,3})")  # the only dtypes a file may declare
_COLUMN_DTYPES = {str: np.str_, int: np.int64, float: np.float64}


class Uncacheable(ValueError):
    """A built value this file cannot hold exactly (the tables are then used without caching)."""


def write(path: Path, stack: str, built: dict) -> None:
    """Write the built tables of `stack` (its label) to `path` (the caller makes it atomic).
    Uncacheable when a value has no exact plain form."""
    arrays: list[np.ndarray] = []

    def slot(a: np.ndarray) -> int:
        arrays.append(np.ascontiguousarray(a))
        return len(arrays) - 1

    tables = {}
    for name, cls in TABLE_TYPES.items():
        table = built[name]
        (field,) = [f.name for f in dataclasses.fields(cls) if f.name != "arrays"]
        keyed = getattr(table, field)
        keys = [k if isinstance(k, tuple) else (k,) for k in keyed]
        tables[name] = {
            "arrays": [slot(a) for a in table.arrays],
            "field": field,
            "tuple": bool(keyed) and isinstance(next(iter(keyed)), tuple),
            "columns": [slot(_column([k[i] for k in keys])) for i in range(len(keys[0]) if keys else 0)],
            "ids": slot(np.asarray(list(keyed.values()), dtype=np.int64)),
        }
    offsets = np.cumsum([0, *(-(-a.nbytes // _ALIGN) * _ALIGN for a in arrays)])
    blob = np.zeros(int(offsets[-1]), dtype=np.uint8)
    for a, start in zip(arrays, offsets):
        if not _DTYPE.fullmatch(a.dtype.str):
            raise Uncacheable(f"array of dtype {a.dtype.str}")
        blob[start : start + a.nbytes] = a.reshape(-1).view(np.uint8)
    manifest = {
        "format": FORMAT,
        "stack": stack,
        "arrays": [[a.dtype.str, list(a.shape), int(start)] for a, start in zip(arrays, offsets)],
        "tables": tables,
        "names": {name: list(built[name]) for name in NAME_TUPLES},
    }
    with open(path, "wb") as f:
        np.save(f, np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8), allow_pickle=False)
        np.save(f, blob, allow_pickle=False)


def _column(values: list) -> np.ndarray:
    kind = type(values[0])
    column = np.asarray(values, dtype=_COLUMN_DTYPES.get(kind, object))
    if any(type(v) is not kind for v in values) or column.dtype == object or column.tolist() != values:
        raise Uncacheable(f"key column of {kind.__name__} values")
    return column


def read(path: Path, stack: str) -> dict | None:
    """The built tables in `path`; None when it is missing, unreadable, malformed, of another format
    or of another stack."""
    try:
        with open(path, "rb") as f:
            manifest = json.loads(np.load(f, allow_pickle=False).tobytes())
            if manifest.get("format") != FORMAT or manifest.get("stack") != stack:
                return None
            blob = np.load(f, allow_pickle=False)
        arrays = [_view(blob, *spec) for spec in manifest["arrays"]]
        built = {name: _table(cls, manifest["tables"][name], arrays) for name, cls in TABLE_TYPES.items()}
        built.update({name: tuple(str(v) for v in manifest["names"][name]) for name in NAME_TUPLES})
        return built
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _view(blob: np.ndarray, dtype: str, shape: list, start: int) -> np.ndarray:
    if blob.dtype != np.uint8 or blob.ndim != 1 or not _DTYPE.fullmatch(dtype):
        raise ValueError(f"array of dtype {dtype}")
    dt = np.dtype(dtype)
    size = dt.itemsize * int(np.prod(shape, dtype=np.int64))
    if start < 0 or start % _ALIGN or start + size > blob.size:
        raise ValueError("array outside the blob")
    return blob[start : start + size].view(dt).reshape(shape)


def _table(cls: type, entry: dict, arrays: list[np.ndarray]):
    (field,) = [f.name for f in dataclasses.fields(cls) if f.name != "arrays"]
    if entry["field"] != field:
        raise ValueError(f"{cls.__name__} field {entry['field']!r}")
    columns = [arrays[i].tolist() for i in entry["columns"]]
    ids = arrays[entry["ids"]].tolist()
    keys = zip(*columns, strict=True) if entry["tuple"] else (columns[0] if columns else [])
    keyed = dict(zip(keys, ids, strict=True))
    table_arrays = tuple(arrays[i] for i in entry["arrays"])
    if any(a.dtype.kind not in "fi" for a in table_arrays):
        raise ValueError(f"{cls.__name__} array of text")
    return cls(**{"arrays": table_arrays, field: keyed})
