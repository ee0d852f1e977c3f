"""Golden files: one JSON file per (system, backend, model family) under goldens/.

File layout (sorted keys, full float repr, one trailing newline):
    {"provenance": {...}, "records": {record key: {metric: value}}}
A record whose computation raised is stored as {"<error>": "<exception class name>"}; comparing
errors is symmetric (same class passes, one-sided fails).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from parity.compare import MetricDiff, compare_records, explain
from parity.matrix import Shape

ROOT = Path(__file__).resolve().parent.parent
GOLDENS_DIR = ROOT / "goldens"
REL_TOL = 1e-9  # pure deterministic computation: any larger move needs a re-pin
ERROR_KEY = "<error>"


def record_key(surface: str, shape: Shape) -> str:
    """`<surface>|<shape id>`, e.g. `agg.uncached|h200_sxm-sglang-Qwen3-32B-tp2-isl4096-...`."""
    return f"{surface}|{shape.id}"


def golden_path(shape: Shape) -> Path:
    return GOLDENS_DIR / shape.system / shape.backend / f"{shape.family}.json"


def error_record(exc: BaseException) -> dict:
    return {ERROR_KEY: type(exc).__name__}


def canonical(obj: dict) -> str:
    """Deterministic JSON text: sorted keys, full float repr, no NaN (stored as the string "nan")."""
    return json.dumps(_no_nan(obj), sort_keys=True, indent=1, allow_nan=False) + "\n"


def _no_nan(obj):
    if isinstance(obj, float) and math.isnan(obj):
        return "nan"
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    return obj


def golden_file_text(provenance: dict, records: dict) -> str:
    """A golden file's text: valid JSON with one record per line (sorted), so diffs are per record."""
    body = ",\n".join(f"{json.dumps(k)}: {json.dumps(_no_nan(records[k]), sort_keys=True, allow_nan=False)}" for k in sorted(records))
    return f'{{"provenance": {json.dumps(provenance, sort_keys=True)},\n"records": {{\n{body}\n}}}}\n'


def read_golden_file(path: Path) -> dict:
    """{"provenance": ..., "records": ...} of a golden file ({} parts when the file is absent)."""
    if not path.exists():
        return {"provenance": {}, "records": {}}
    return json.loads(path.read_text())


def as_comparable(record: dict) -> dict | BaseException:
    """A stored record as compare_records input: metrics, or a stand-in exception of the stored class."""
    if ERROR_KEY in record:
        return type(record[ERROR_KEY], (Exception,), {})()
    return record


def diff_record(key: str, golden: dict, live: dict, rel_tol: float = REL_TOL) -> list[MetricDiff]:
    """Per-metric diffs of a live record against its golden, error symmetry included."""
    return compare_records(key, as_comparable(golden), as_comparable(live), rel_tol)


def explained(key: str, golden: dict, live: dict, rel_tol: float = REL_TOL) -> str:
    diffs = diff_record(key, golden, live, rel_tol)
    return f"golden record {key}\n" + explain(diffs, limit=80, labels=("golden", "live"), only_failures=False)
