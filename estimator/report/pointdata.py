"""The per-point data the page script renders (table, filter, sort, scatter plots), as one compact
JSON document of columnar arrays.

Layout: "fields" maps a field key to an array with one entry per measured row (input order), or to
{"dict": [distinct values], "codes": [index per row]} for a repeated text field; "columns" lists
the table's columns in order ({key, label, kind: text | int | ms | err}; an err column is derived
by the script as 100 * (pred - meas) / meas from its "pred" and "meas" fields, in percent). A
method's prediction is null where it did not predict the row; "<method>_reason" then holds the
reason, "<method>_note" its note otherwise. Latencies in ms, rounded to MS_DIGITS significant
digits. The same points give the same bytes.
"""

from __future__ import annotations

import json

import pandas as pd

from estimator.report import metrics
from estimator.report.analysis import reason_group
from estimator.report.plots import log_ranges

MS_DIGITS = 5  # significant digits kept of a latency: an error shown to 0.1% moves by under 0.01 points
BASE_COLUMNS = (
    ("id", "id", "text"), ("system", "system", "text"), ("backend", "backend", "text"), ("mode", "mode", "text"),
    ("model", "model", "text"), ("concurrency", "C", "int"), ("concurrency_bucket", "C bucket", "text"),
    ("isl", "isl", "int"), ("osl", "osl", "int"), ("ttft_meas_ms", "TTFT meas ms", "ms"), ("tpot_meas_ms", "TPOT meas ms", "ms"),
)  # (field, label, kind)  # fmt: skip
COLOUR_BY = ("backend", "system", "mode", "model", "concurrency_bucket")  # partitions the scatter plots can be coloured by; the first is the default


def point_data(points: pd.DataFrame, shown: list[str]) -> dict:
    """The JSON document (as a dict) for the shown methods' points."""
    rows = points.drop_duplicates("id")
    fields = {key: _encode(rows[key], kind) for key, _, kind in BASE_COLUMNS}
    columns = [{"key": key, "label": label, "kind": kind} for key, label, kind in BASE_COLUMNS]
    for method in shown:
        outcome = points[points["method"] == method].set_index("id").reindex(rows["id"])
        covered = outcome["covered"].fillna(False).astype(bool)
        fields[f"{method}_reason"] = _encode(outcome["reason"].where(~covered, "").fillna("").map(reason_group), "text")
        fields[f"{method}_note"] = _encode(outcome["note"].where(covered, "").fillna(""), "text")
        for metric in metrics.METRICS:
            pred = f"{method}_{metric}_ms"
            fields[pred] = _encode(outcome[f"{metric}_pred_ms"].where(covered), "ms")
            columns.append({"key": pred, "label": f"{method} {metric.upper()} ms", "kind": "ms", "note": f"{method}_note", "reason": f"{method}_reason"})
            columns.append(
                {"key": f"{method}_{metric}_err", "label": f"{method} {metric.upper()} err", "kind": "err", "pred": pred, "meas": f"{metric}_meas_ms"}
            )
    return {
        "rows": len(rows),
        "methods": shown,
        "metrics": list(metrics.METRICS),
        "columns": columns,
        "fields": fields,
        "axes": log_ranges(points[points["method"].isin(shown)]),
        "colour_by": list(COLOUR_BY),
    }


def _encode(values: pd.Series, kind: str) -> list | dict:
    """One field's values: numbers rounded (None where missing), text dictionary-coded when repeated."""
    if kind == "ms":
        return [None if pd.isna(v) else float(f"{v:.{MS_DIGITS}g}") for v in values]
    if kind == "int":
        return [None if pd.isna(v) else int(v) for v in values]
    text = ["" if pd.isna(v) else str(v) for v in values]
    distinct = sorted(set(text))
    if 2 * len(distinct) > len(text):
        return text
    index = {v: i for i, v in enumerate(distinct)}
    return {"dict": distinct, "codes": [index[v] for v in text]}


def to_script_json(data: dict) -> str:
    """data as compact JSON safe inside a <script> element ("<", ">" and "&" escaped)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
