"""aiperf's ``profile_export_aiperf.csv`` -> one `ResultRun`.

ai-dynamo/aiperf ``aiperf/exporters/csv_exporter.py`` @ db4f6397d11ee2d4cfbb41f70b2327315163dcf0
(v0.1.1) writes the same statistics as the JSON export in two sections: the metrics with
percentiles under the header ``Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std``
(``STAT_KEYS``), then, after a blank line, the single-valued metrics under ``Metric,Value``. A row
is named ``"<header> (<display unit>)"`` (``_format_metric_name``; no unit for counts and requests),
its numbers formatted to two decimals. The headers are the metric classes' ``header``
(``aiperf/metrics/types/``: "Time to First Token" and "Inter Token Latency" in ms, "Input Sequence
Length" / "Output Sequence Length" in tokens, "Request Count", "Error Request Count"). The CSV keeps
no configuration: the concurrency, request rate, lengths' configuration, warm-ups and the model
come from the supplied facts (flags, the deployment's ``client:`` block).
"""

from __future__ import annotations

import csv
import io
import math
import re
import reprlib
from collections.abc import Iterator
from typing import Any

from estimator.errors import InvalidInputError
from measurements.importers import aiperf
from measurements.importers import profile_export as pe
from measurements.importers.document import Document
from measurements.importers.result import ResultRun

CITATION = "ai-dynamo/aiperf aiperf/exporters/csv_exporter.py@db4f6397d11ee2d4cfbb41f70b2327315163dcf0"
_SHOWN = reprlib.Repr()  # a refused row or cell as its error line shows it: a long cell (up to 131,072 characters) cut
_SHOWN.maxstring, _SHOWN.maxlist = 60, 16
STAT_HEADER = ["Metric", "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"]
VALUE_HEADER = ["Metric", "Value"]
HEADERS = {
    "Time to First Token": pe.TTFT,
    "Inter Token Latency": pe.ITL,
    "Input Sequence Length": pe.ISL,
    "Output Sequence Length": pe.OSL,
    "Request Count": pe.REQUEST_COUNT,
    "Error Request Count": "error_request_count",
}  # the metric classes' headers -> their tags
_NAME = re.compile(r"^(?P<header>.*?)(?: \((?P<unit>[^()]+)\))?$")


def matches(document: Document) -> str | None:
    first = document.text.lstrip("\ufeff").split("\n", 1)[0].strip()
    try:
        header = next(csv.reader([first]), None)
    except csv.Error:  # a cell past the csv module's field size limit: no header
        header = None
    if header != STAT_HEADER:
        return f"first line is not aiperf's CSV header {','.join(STAT_HEADER)}"
    return None


def runs(document: Document) -> list[ResultRun]:
    blocks = metric_blocks(document.text.lstrip("\ufeff"), str(document.path))
    return [aiperf.run(blocks, {}, str(document.path), "aiperf profile (CSV export)", CITATION, None, {"client": "aiperf"})]


def metric_blocks(text: str, where: str) -> dict[str, dict[str, Any]]:
    """The known metrics of the CSV as profile-export metric blocks (tag -> unit and statistics)."""
    blocks: dict[str, dict[str, Any]] = {}
    keys = None
    for line, row in _rows(text, where):
        if not row:
            keys = None
            continue
        if row in (STAT_HEADER, VALUE_HEADER):
            keys = ["avg"] if row == VALUE_HEADER else row[1:]
            continue
        if keys is None or len(row) != len(keys) + 1:
            raise InvalidInputError(f"{where} line {line}: expected {len(keys) + 1 if keys else 'a header'} cells, got {_SHOWN.repr(row)}")
        name = _NAME.match(row[0])
        tag = HEADERS.get(name["header"])
        if tag is not None:
            blocks[tag] = {"unit": name["unit"] or "count", **{k: _cell(v, where, line) for k, v in zip(keys, row[1:], strict=True)}}
    return blocks


def _rows(text: str, where: str) -> Iterator[tuple[int, list[str]]]:
    """The CSV's rows, numbered from 1; InvalidInputError naming the line the csv module refuses (a cell past its field size limit)."""
    reader = csv.reader(io.StringIO(text))
    try:
        yield from enumerate(reader, start=1)
    except csv.Error as exc:
        raise InvalidInputError(f"{where} line {reader.line_num}: {exc}") from None


def _cell(text: str, where: str, line: int) -> float | None:
    """A statistic's cell as a float (None: empty); InvalidInputError unless it is a finite number (not inf or nan)."""
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InvalidInputError(f"{where} line {line}: {_SHOWN.repr(text)} is not a finite number")
    return value
