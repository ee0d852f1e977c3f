"""The long-form per-point table: one line per (row id, method), predictions beside measurements and
the row's partition and provenance columns. Written to CSV; the report renders from it alone.
"""

from __future__ import annotations

import hashlib
import json
import typing
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from estimator.io import atomic_path, read_csv_table
from estimator.report.batch import PointResult
from estimator.settings import POINT_FIELDS, EngineSettings
from measurements.mapping import AggInputs, DisaggInputs, MappedRow
from measurements.replicates import replicate_key
from measurements.schema import SETTINGS_COLUMNS, is_bare

STAGE_COLUMNS = tuple(f"{stage}_{size}" for stage in ("prefill", "decode") for size in ("workers", "tp", "ep", "attention_dp"))
POINT_COLUMNS = (
    "id", "method", "covered", "reason", "ttft_pred_ms", "tpot_pred_ms", "ttft_meas_ms", "tpot_meas_ms", "note",
    "prefill_step_ms", "decode_step_ms",
    "system", "backend", "mode", "model", "concurrency", "concurrency_bucket", "isl", "osl", "attention_dp",
    "source", "engine_version", "image", "model_used", "model_note", "layout_note", "data_version", "version_note", "pricer", "pricing",
    *(SETTINGS_COLUMNS[name] for name in POINT_FIELDS), "replicate_group", *STAGE_COLUMNS, "recipe_key", "recipe_commit", "client_seed",
)  # fmt: skip
# columns added after the first format, with the value a file written before them implies
ADDED_POINT_COLUMNS = MappingProxyType(
    {
        "layout_note": "",
        "recv_interval": 1,
        "batch_wait_iters": 0,
        "adp_balance_iters": 0,
        "nextn": 0,
        "pricing": "not recorded",
        "shape_compile_ms": 0.0,
        "prefix_compile_ms": 0.0,
        "kv_free_memory_fraction": None,
        "moe_backend": None,
        "cudagraph_max_tokens": None,
        "piecewise_cuda_graph": None,
        "replicate_group": "",
        **dict.fromkeys(STAGE_COLUMNS),
        "recipe_key": "",
        "recipe_commit": "",
        "client_seed": None,
    }
)
# upper bounds (inclusive) of the concurrency buckets; larger concurrencies fall in the last one
BUCKET_EDGES = (1, 4, 16, 64, 256)


def bucket_order() -> list[str]:
    """Every bucket label, in ascending concurrency ("unknown" last)."""
    labels, low = [], 1
    for high in BUCKET_EDGES:
        labels.append(f"{low}-{high}" if low < high else str(high))
        low = high + 1
    return labels + [f">{BUCKET_EDGES[-1]}", "unknown"]


def concurrency_bucket(c: int | None) -> str:
    """The bucket label of a client concurrency, e.g. "2-4"; "unknown" when not recorded."""
    if c is None:
        return "unknown"
    for high, label in zip(BUCKET_EDGES, bucket_order()):
        if c <= high:
            return label
    return f">{BUCKET_EDGES[-1]}"


def row_columns(row: MappedRow) -> dict:
    """The measurement and mapping columns of one row (of a row the loader refused, schema.bare: its
    top-level facts, no settings and no replicate group)."""
    m = row.measurement
    if isinstance(row.inputs, AggInputs):
        attention_dp = row.inputs.deployment.attention_dp  # the layout priced (see MappedRow.layout_note)
    else:
        attention_dp = (m.agg.attention_dp or 1) if m.agg else None
    return {
        "ttft_meas_ms": m.ttft_ms,
        "tpot_meas_ms": m.tpot_ms,
        "system": m.system,
        "backend": m.engine,
        "mode": m.mode,
        "model": m.model,
        "concurrency": m.concurrency,
        "concurrency_bucket": concurrency_bucket(m.concurrency),
        "isl": m.isl,
        "osl": m.osl,
        "attention_dp": attention_dp,
        "source": m.source,
        "engine_version": m.engine_version,
        "image": m.image,
        "model_used": row.model_used,
        "model_note": row.model_note,
        "layout_note": row.layout_note,
        "data_version": row.data_version,
        "version_note": row.version_note,
        "pricer": row.some_inputs.pricer if row.some_inputs else None,
        **{SETTINGS_COLUMNS[name]: None if is_bare(m) else getattr(m.settings, name) for name in POINT_FIELDS},
        "replicate_group": "" if is_bare(m) else replicate_key(m),
        **stage_columns(row),
        "recipe_key": row.recipe.key if row.recipe else "",
        "recipe_commit": row.recipe.commit if row.recipe else "",
        "client_seed": None if is_bare(m) else m.protocol.client_seed,
    }


def stage_columns(row: MappedRow) -> dict:
    """The priced disaggregated stages' workers, tp, MoE EP and attention-DP sizes (empty for other rows)."""
    inputs = row.inputs
    if not isinstance(inputs, DisaggInputs):
        return dict.fromkeys(STAGE_COLUMNS)
    out = {}
    for stage, d, workers in (("prefill", inputs.prefill, inputs.prefill_workers), ("decode", inputs.decode, inputs.decode_workers)):
        out |= {f"{stage}_workers": workers, f"{stage}_tp": d.tp, f"{stage}_ep": d.moe_ep, f"{stage}_attention_dp": d.attention_dp}
    return out


def points_frame(rows: list[MappedRow], results: list[PointResult]) -> pd.DataFrame:
    """The long-form table of results (row-major, as predict_all returns them)."""
    by_id = {row.measurement.id: row_columns(row) for row in rows}
    records = [{**vars(r), **by_id[r.id]} for r in results]
    return pd.DataFrame.from_records(records, columns=list(POINT_COLUMNS))


POINTS_SHA256 = "points_sha256"  # provenance key: sha256 of the points file's bytes it was written with


def write_points(points: pd.DataFrame, path: str | Path, provenance: dict) -> None:
    """Write the table as CSV and the provenance beside it (`<name>.provenance.json`) as a pair: both
    to temporary files, the table renamed first and the provenance, holding the table's sha256, last,
    so a reader that finds a table with another table's provenance refuses it (read_points)."""
    path = Path(path)
    data = points.to_csv(index=False).encode()
    record = provenance | {POINTS_SHA256: hashlib.sha256(data).hexdigest()}
    with atomic_path(provenance_path(path)) as sidecar, atomic_path(path) as table:  # renamed inner first
        table.write_bytes(data)
        sidecar.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def read_points(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """The table and its provenance (empty when the sidecar is missing; without POINTS_SHA256). A
    missing or repeated column, a row with more cells than the header (read_csv_table), no point at
    all, a value outside its column's domain or a point repeated (_checked), a provenance that is not
    a JSON object or records a data_rows that is not a count (read_provenance), or one recording
    another table's sha256, raises ValueError naming it (one of ADDED_POINT_COLUMNS takes its default)."""
    path = Path(path)
    data = path.read_bytes()
    provenance = read_provenance(provenance_path(path))
    recorded = provenance.pop(POINTS_SHA256, None)
    if recorded is not None and recorded != hashlib.sha256(data).hexdigest():
        raise ValueError(f"its provenance {provenance_path(path).name} was written with another points file (sha256 {str(recorded)[:12]}...): "
                         "an interrupted or concurrent write; rebuild the report")  # fmt: skip
    points = read_csv_table(data, dtype={"id": str, "reason": str, "note": str, "engine_version": str, "data_version": str, "replicate_group": str, "recipe_key": str, "recipe_commit": str},
                            keep_default_na=True)  # fmt: skip
    for column, default in ADDED_POINT_COLUMNS.items():
        if column not in points.columns:
            points[column] = default
    missing = [c for c in POINT_COLUMNS if c not in points.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    if points.empty:
        raise ValueError(f"{path} holds no points (a header only)")
    points = _checked(points)
    for column in ("reason", "note", "model_note", "layout_note", "version_note", "replicate_group", "recipe_key", "recipe_commit"):
        points[column] = points[column].fillna("")
    return points, provenance


def read_provenance(sidecar: Path) -> dict:
    """A points file's provenance record (empty when the sidecar is missing); ValueError unless it
    is a JSON object whose data_rows, if recorded, is a count of rows (an integer >= 0)."""
    if not sidecar.is_file():
        return {}
    record = json.loads(sidecar.read_text())
    if not isinstance(record, dict):
        raise ValueError(f"its provenance {sidecar.name} must be a JSON object, got a {type(record).__name__}")
    rows = record.get("data_rows")
    if rows is not None and (type(rows) is not int or rows < 0):
        raise ValueError(f"its provenance {sidecar.name}: data_rows must be a count of rows (an integer >= 0), got {rows!r}")
    return record


LABEL_COLUMNS = ("id", "method", "backend", "mode", "model", "system", "concurrency_bucket", "source")  # never empty where covered
MEASURED_COLUMNS = ("ttft_meas_ms", "tpot_meas_ms")  # positive numbers; empty only where not covered (a row the loader refused)
PREDICTED_COLUMNS = ("ttft_pred_ms", "tpot_pred_ms")  # empty where not predicted, else finite numbers >= 0
_SETTINGS_TYPES = typing.get_type_hints(EngineSettings)
NUMERIC_COLUMNS = (
    "prefill_step_ms", "decode_step_ms", "concurrency", "isl", "osl", "attention_dp",
    *(SETTINGS_COLUMNS[name] for name in POINT_FIELDS if _SETTINGS_TYPES[name] in (int, float, int | None, float | None)), *STAGE_COLUMNS,
)  # finite numbers or empty  # fmt: skip
# column -> (what its values must be, the test of a finite number)
_DOMAINS = {
    **dict.fromkeys(MEASURED_COLUMNS, ("a positive number", lambda v: v > 0)),  # finite; empty only where not covered
    **dict.fromkeys(PREDICTED_COLUMNS, ("a finite number >= 0 or empty", lambda v: v >= 0)),
    **dict.fromkeys(NUMERIC_COLUMNS, ("a finite number or empty", lambda v: v.notna())),
}


def _checked(points: pd.DataFrame) -> pd.DataFrame:
    """The table with covered read as booleans and the numeric columns as floats; ValueError naming
    the first point whose covered is not True or False, with an empty id or method or, covered, an
    empty label (LABEL_COLUMNS), whose number is outside its column's domain (_DOMAINS), or that
    repeats an earlier (id, method)."""
    flags = points["covered"].astype(str).str.lower()
    _refuse_first(points, ~flags.isin(["true", "false"]), "covered must be True or False", points["covered"])
    points = points.assign(covered=flags == "true")
    for column in LABEL_COLUMNS:  # the keys the page groups covered points by (a refused row may lack them)
        empty = points[column].isna() | (points[column].astype(str).str.strip() == "")
        _refuse_first(points, empty & (points["covered"] | (column in ("id", "method"))), f"{column} must not be empty", points[column])
    repeated = points.duplicated(["id", "method"])
    if repeated.any():
        raise ValueError(f"{_point(points, repeated.idxmax())} appears more than once: a table holds one point per measured row and method")
    for column, (wanted, holds) in _DOMAINS.items():
        values = pd.to_numeric(points[column], errors="coerce")
        may_be_empty = ~points["covered"] if column in MEASURED_COLUMNS else pd.Series(True, index=points.index)
        bad = (values.isna() & ~(points[column].isna() & may_be_empty)) | (values.notna() & ~(np.isfinite(values) & holds(values)))
        _refuse_first(points, bad, f"{column} must be {wanted}", points[column])
        points[column] = values
    return points


def _refuse_first(points: pd.DataFrame, bad: pd.Series, problem: str, values: pd.Series) -> None:
    """ValueError naming the first point where bad holds, the problem and its value."""
    if bad.any():
        i = bad.idxmax()
        got = "an empty cell" if pd.isna(values[i]) else repr(str(values[i]))
        raise ValueError(f"{_point(points, i)}: {problem}, got {got}")


def _point(points: pd.DataFrame, i) -> str:
    """How a message names the point at index i: its row id and method, or its line when the id is empty."""
    if pd.isna(points.at[i, "id"]) or not str(points.at[i, "id"]).strip():
        return f"line {i + 2}"
    return f"row {points.at[i, 'id']} ({points.at[i, 'method']})"


def provenance_path(points_path: Path) -> Path:
    return points_path.with_name(points_path.stem + ".provenance.json")
