"""The result formats, keyed by name, and the import of result files into measurement rows.

A file is read once (`read_document`: its text, and its JSON objects when it is JSON or JSON
lines); each format's reader says whether the document is its own (`matches`, by the keys or
header only it writes) and turns it into `ResultRun`s (`runs`). With --format auto the first
format that matches reads the file; a forced format reads it or says why not.
"""

from __future__ import annotations

import dataclasses
import json
import math
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from estimator.errors import EstimatorError, InvalidInputError
from measurements.importers import aiperf, aiperf_csv, benchmark_serving, genai_perf
from measurements.importers.deployment import DeploymentFile
from measurements.importers.document import Document
from measurements.importers.result import ResultRun, Supplied, to_row
from measurements.schema import Measurement


class Format(Enum):
    """A result format, by the name --format takes."""

    BENCHMARK_SERVING = "benchmark_serving"
    AIPERF = "aiperf"
    AIPERF_CSV = "aiperf_csv"
    GENAI_PERF = "genai_perf"


@dataclass(frozen=True)
class Reader:
    """One format's reader."""

    matches: Callable[[Document], str | None]  # None: the document is this format's; else why it is not
    runs: Callable[[Document], list[ResultRun | EstimatorError]]  # its runs in file order, a run it cannot read as the error naming it


READERS: Mapping[Format, Reader] = MappingProxyType(
    {
        Format.BENCHMARK_SERVING: Reader(benchmark_serving.matches, benchmark_serving.runs),
        Format.AIPERF: Reader(aiperf.matches, aiperf.runs),
        Format.AIPERF_CSV: Reader(aiperf_csv.matches, aiperf_csv.runs),
        Format.GENAI_PERF: Reader(genai_perf.matches, genai_perf.runs),
    }
)
FORMAT_NAMES = tuple(f.value for f in Format)


def read_document(path: str | Path) -> Document:
    """The file's text and, when it is JSON (one object or JSON lines), its objects."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is not JSON
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        values = _json_values(text, path)
    except (ValueError, RecursionError) as exc:  # JSON no reader can hold: an integer past float range, nesting past Python's limit
        raise InvalidInputError(f"{path}: cannot read its JSON: {exc}") from None
    return Document(path, text, values)


def _json_values(text: str, path: Path) -> tuple[Any, ...] | None:
    """The JSON value of a text holding one; else, when some line holds a JSON object, one entry per
    non-blank line (JSON lines), a line that holds no object as the InvalidInputError naming it; None otherwise."""
    try:
        return (json.loads(text, parse_int=_json_int),)
    except json.JSONDecodeError:
        pass
    except (ValueError, RecursionError):  # JSON no reader can hold: a file's own error, unless lines follow (then line 1's)
        if sum(1 for line in text.split("\n") if line.strip()) < 2:
            raise
    lines = tuple(_json_line(line, f"{path} line {number}") for number, line in enumerate(text.split("\n"), 1) if line.strip())
    return lines if any(isinstance(v, Mapping) for v in lines) else None


def _json_line(line: str, where: str) -> Mapping[str, Any] | InvalidInputError:
    """The JSON object of one line of JSON lines, or the error naming the line (`where`) and why it holds
    none: not JSON (a line cut short when the benchmark was killed mid-append), JSON no reader can hold, not an object."""
    try:
        value = json.loads(line, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        return InvalidInputError(f"{where}: not JSON ({exc.msg} at column {exc.colno})")
    except (ValueError, RecursionError) as exc:
        return InvalidInputError(f"{where}: cannot read its JSON: {exc}")
    return value if isinstance(value, Mapping) else InvalidInputError(f"{where}: not a JSON object, got {reprlib.repr(value)}")


def _json_int(digits: str) -> int:
    """A JSON integer; ValueError for one past float range, which no reader (they take numbers as floats) can hold."""
    if math.isinf(float(digits)):
        raise ValueError(f"an integer of {len(digits.lstrip('-'))} digits is past float range")
    return int(digits)


def format_of(document: Document, forced: str) -> Format:
    """The document's format: the forced one when it matches, else the first that matches (forced "auto")."""
    candidates = list(Format) if forced == "auto" else [Format(forced)]
    reasons = []
    for fmt in candidates:
        reason = READERS[fmt].matches(document)
        if reason is None:
            return fmt
        reasons.append(f"not {fmt.value}: {reason}" if forced == "auto" else reason)
    raise InvalidInputError(f"{document.path}: unknown format ({'; '.join(reasons)})")


def import_file(path: str | Path, forced: str, deployment: DeploymentFile, supplied: Supplied) -> Imported:
    """The rows of one result file (ids: the file's stem, #n per run of a multi-run file), their
    warnings, and each run that cannot be imported with its reason (the file's when it cannot be read)."""
    document = read_document(path)
    fmt = format_of(document, forced)
    runs = READERS[fmt].runs(document)
    rows, warnings, bad = [], [], []
    stem = document.path.stem
    for i, run in enumerate(runs):
        if isinstance(run, EstimatorError):
            bad.append(str(run))
            continue
        row_id, label = (stem, str(document.path)) if len(runs) == 1 else (f"{stem}#{i + 1}", f"{document.path} run {i + 1}")
        try:
            row, notes = to_row(run, deployment, supplied, row_id, label, fmt.value)
        except EstimatorError as exc:
            bad.append(str(exc))
            continue
        rows.append(row)
        warnings += notes
    return Imported(tuple(rows), tuple(warnings), tuple(bad))


@dataclass(frozen=True)
class Imported:
    """Imported rows, their warnings, and what could not be imported."""

    rows: tuple[Measurement, ...]
    warnings: tuple[str, ...]
    bad: tuple[str, ...]  # one line per file or run not imported, naming it and why


def import_files(paths: Sequence[str | Path], forced: str, deployment: DeploymentFile, supplied: Supplied) -> Imported:
    """Every file's rows (ids unique); a bad file or run is listed with its reason and the others are imported."""
    rows: list[Measurement] = []
    warnings: list[str] = []
    bad: list[str] = []
    for path in paths:
        try:
            imported = import_file(path, forced, deployment, supplied)
        except EstimatorError as exc:
            bad.append(str(exc))
            continue
        rows += imported.rows
        warnings += imported.warnings
        bad += imported.bad
    return Imported(tuple(unique_ids(rows)), tuple(warnings), tuple(bad))


def unique_ids(rows: Sequence[Measurement]) -> list[Measurement]:
    """The rows with an id repeated by an earlier row suffixed -2, -3, ..."""
    seen: set[str] = set()
    out = []
    for row in rows:
        rid, n = row.id, 1
        while rid in seen:
            n += 1
            rid = f"{row.id}-{n}"
        seen.add(rid)
        out.append(dataclasses.replace(row, id=rid) if rid != row.id else row)
    return out
