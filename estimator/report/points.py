"""The long-form per-point table: one line per (row id, method), predictions beside measurements and
the row's partition and provenance columns. Written to CSV; the report renders from it alone.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from types import MappingProxyType

import pandas as pd

from estimator.io import atomic_path
from estimator.report.batch import PointResult
from estimator.settings import POINT_FIELDS
from measurements.mapping import AggInputs, DisaggInputs, MappedRow
from measurements.replicates import replicate_key
from measurements.schema import SETTINGS_COLUMNS

STAGE_COLUMNS = tuple(f"{stage}_{size}" for stage in ("prefill", "decode") for size in ("workers", "tp", "ep", "attention_dp"))
POINT_COLUMNS = (
    "id", "method", "covered", "reason", "ttft_pred_ms", "tpot_pred_ms", "ttft_meas_ms", "tpot_meas_ms", "note",
    "prefill_step_ms", "decode_step_ms",
    "system", "backend", "mode", "model", "concurrency", "concurrency_bucket", "isl", "osl", "attention_dp",
    "source", "engine_version", "image", "model_used", "model_note", "layout_note", "data_version", "version_note", "pricer", "pricing",
    *(SETTINGS_COLUMNS[name] for name in POINT_FIELDS), "replicate_group", *STAGE_COLUMNS, "recipe_key", "recipe_commit",
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
        "kv_free_memory_fraction": None,
        "replicate_group": "",
        **dict.fromkeys(STAGE_COLUMNS),
        "recipe_key": "",
        "recipe_commit": "",
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
    """The measurement and mapping columns of one row."""
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
        **{SETTINGS_COLUMNS[name]: getattr(m.settings, name) for name in POINT_FIELDS},
        "replicate_group": replicate_key(m),
        **stage_columns(row),
        "recipe_key": row.recipe.key if row.recipe else "",
        "recipe_commit": row.recipe.commit if row.recipe else "",
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
    """The table and its provenance (empty when the sidecar is missing; without POINTS_SHA256); a
    missing column, or a provenance recording another table's sha256, raises ValueError (one of
    ADDED_POINT_COLUMNS takes its default)."""
    path = Path(path)
    data = path.read_bytes()
    sidecar = provenance_path(path)
    provenance = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
    recorded = provenance.pop(POINTS_SHA256, None)
    if recorded is not None and recorded != hashlib.sha256(data).hexdigest():
        raise ValueError(f"its provenance {sidecar.name} was written with another points file (sha256 {recorded[:12]}...): "
                         "an interrupted or concurrent write; rebuild the report")  # fmt: skip
    points = pd.read_csv(io.BytesIO(data), dtype={"id": str, "reason": str, "note": str, "engine_version": str, "data_version": str, "replicate_group": str, "recipe_key": str, "recipe_commit": str},
                         keep_default_na=True)  # fmt: skip
    for column, default in ADDED_POINT_COLUMNS.items():
        if column not in points.columns:
            points[column] = default
    missing = [c for c in POINT_COLUMNS if c not in points.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    points["covered"] = points["covered"].astype(str).str.lower() == "true"
    for column in MEASURED_COLUMNS + PREDICTED_COLUMNS:
        points[column] = _numbers(points, column, positive=column in MEASURED_COLUMNS)
    for column in ("reason", "note", "model_note", "layout_note", "version_note", "replicate_group", "recipe_key", "recipe_commit"):
        points[column] = points[column].fillna("")
    return points, provenance


MEASURED_COLUMNS = ("ttft_meas_ms", "tpot_meas_ms")  # every row's: positive numbers
PREDICTED_COLUMNS = ("ttft_pred_ms", "tpot_pred_ms")  # empty where not predicted, else finite numbers >= 0


def _numbers(points: pd.DataFrame, column: str, positive: bool) -> pd.Series:
    """A column as floats; ValueError naming the first row whose value is not a number (or, for a
    measured column, not a positive one; for a predicted one, negative or infinite)."""
    values = pd.to_numeric(points[column], errors="coerce")
    text = points[column].astype(str)
    bad = values.isna() & ~(points[column].isna() & (not positive))
    bad |= ~(values > 0) if positive else (values < 0) | values.isin([float("inf"), float("-inf")])
    if bad.any():
        i = bad.idxmax()
        wanted = "a positive number" if positive else "a finite number >= 0 or empty"
        raise ValueError(f"row {points.at[i, 'id']} ({points.at[i, 'method']}): {column} must be {wanted}, got {text[i]!r}")
    return values


def provenance_path(points_path: Path) -> Path:
    return points_path.with_name(points_path.stem + ".provenance.json")
