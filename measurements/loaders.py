"""Loaders: aiconfigurator-core's shipped `systems/silicon_sample.csv`, and the project's own measurement CSVs.

Both yield `Measurement`s. The project's files use the flat columns of `schema.CSV_COLUMNS`
(empty cell = not recorded); `write_measurements` writes that format and `load_measurements`
reads it back unchanged. `read_measurements` keeps a row the schema refuses (a cell outside its
column's domain, `schema.cell_reason`) as `Refused`, naming the row, column and value, so a batch
can report it and go on; `load_measurements` refuses the whole file for it.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from estimator.errors import EstimatorError, UnknownBackendError, UnknownSystemError
from estimator.settings import system_defaults
from measurements import builds, clients, recipes
from measurements.layout import run_layout
from measurements.provenance import provenance_fields
from measurements.schema import (
    ADDED_COLUMNS,
    CSV_COLUMNS,
    Layout,
    Measurement,
    Protocol,
    bare,
    cell_reason,
    column_types,
    flatten,
    is_missing,
    layout_reason,
    unflatten,
)
from measurements.topologies.runs import with_twin_protocols

_LAYOUT_FIELDS = ("batch_size", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")


def silicon_sample_path() -> Path:
    """aiconfigurator-core's shipped silicon_sample.csv (read in place, never copied)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("aiconfigurator-core is not installed: no silicon_sample.csv")
    return Path(spec.origin).parent / "systems" / "silicon_sample.csv"


def load_silicon_sample(path: str | Path | None = None) -> list[Measurement]:
    """Every row of silicon_sample.csv as a Measurement, in file order; a gap-analysis row that is an
    InferenceX run takes its twin's protocol and settings (topologies.runs.with_twin_protocols)."""
    frame = pd.read_csv(path or silicon_sample_path(), dtype={"backend_version": str})
    return with_twin_protocols([silicon_measurement(row) for row in frame.to_dict("records")])


def silicon_measurement(row: dict) -> Measurement:
    """One silicon_sample.csv row in the schema."""
    fields = provenance_fields(row["silicon_data_source"])
    source = source_of(row["silicon_data_source"])
    concurrency = _int(fields.get("silicon_concurrency"))
    agg = _layout(row, "", workers=1) if row["mode"] == "agg" else None
    run = _run_agg_layout(str(row["id"]), row["system"], agg, concurrency)
    launched = recipes.launched_moe_layout(source, row["backend"], row["model_path"], _str(row["precision"]), row["system"], row["mode"],
                                           _date(fields.get("measured")), run, int(row["isl"]), int(row["osl"]), concurrency) if run else None  # fmt: skip
    run = launched[0] if launched else run
    recipe = recipes.recipe_settings(source, row["backend"], int(row["isl"]), int(row["osl"]), concurrency, row["model_path"], row["system"],
                                       _str(row["precision"]), run.tp * (run.attention_dp or 1) if run else None, row["mode"],
                                       fields.get("image"), (run.attention_dp or 1) if run else 1, fields.get("measured"),
                                       run.moe_ep if run else None)  # fmt: skip
    client = clients.CLIENTS[source]
    m = Measurement(
        id=str(row["id"]),
        source=source,
        provenance=row["silicon_data_source"],
        engine=row["backend"],
        engine_version=_str(row["backend_version"]),
        image=fields.get("image"),
        system=row["system"],
        model=row["model_path"],
        precision=_str(row["precision"]),
        gemm_quant=_str(row["gemm_quant_mode"]),
        moe_quant=_str(row["moe_quant_mode"]),
        mode=row["mode"],
        isl=int(row["isl"]),
        osl=int(row["osl"]),
        concurrency=concurrency,
        agg=agg,
        prefill=_layout(row, "prefill_") if row["mode"] == "disagg" else None,
        decode=_layout(row, "decode_") if row["mode"] == "disagg" else None,
        ttft_ms=float(row["silicon_ttft_ms"]),
        tpot_ms=float(row["silicon_tpot_ms"]),
        ttft_statistic=client.ttft_statistic,
        tpot_definition=client.tpot_definition,
        statistics=None,
        measured_date=_date(fields.get("measured")),
        protocol=_protocol(source, row, concurrency, fields.get("measured")),
        settings=recipe or system_defaults(row["backend"], row["system"], _str(row["backend_version"])),
    )
    settings = recipes.with_launch_kv_cache(m.settings, source, m.engine, m.model, m.precision, m.system, m.mode, m.image)
    settings = recipes.with_vllm_async_scheduling(settings, source, m.engine, m.model)
    settings = recipes.with_vllm_memory_utilization(settings, source, m.engine, m.model, m.precision, m.system, m.image)
    return builds.with_build_compiles(dataclasses.replace(m, settings=settings))


def source_of(provenance: str) -> str:
    """The source key a provenance string names (see README: how rows are attributed)."""
    if provenance.startswith("db-dump/") or re.match(r"source_file=\d{4}-\d{2}-\d{2}\.csv", provenance):
        return clients.INFERENCEX
    if "gap-analysis" in provenance:
        return clients.AIC_GAP_ANALYSIS
    return clients.UNKNOWN_SOURCE


def _protocol(source: str, row: dict, concurrency: int | None, measured: str | None) -> Protocol:
    """The row's client protocol (clients.protocol_for), with the prompt count of the runner that ran it where that runner set it."""
    protocol = clients.protocol_for(source, concurrency, measured)
    prompts = recipes.b200_docker_prompts(row["backend"], row["model_path"], _str(row["precision"]), row["system"], int(row["osl"]),
                                          concurrency, measured) if source == clients.INFERENCEX else None  # fmt: skip
    if prompts is None:
        return protocol
    return dataclasses.replace(protocol, num_prompts=prompts, client_citation=f"{protocol.client_citation}; {recipes.B200_DOCKER_PROMPTS_CITATION}")


def _run_agg_layout(row_id: str, system: str, agg: Layout | None, concurrency: int | None) -> Layout | None:
    """The agg layout the mapping prices (layout.run_layout), as the run's launch recipe takes it;
    None for disagg rows or an unrecorded tp."""
    if agg is None or agg.tp is None:
        return None
    run = run_layout(row_id, system, agg, concurrency)
    return run[0] if run else agg


def _layout(row: dict, prefix: str, workers: int | None = None) -> Layout:
    sizes = [_int(row.get(prefix + name)) for name in _LAYOUT_FIELDS]
    if workers is None:
        workers = _int(row.get(prefix + "num_workers"))
    batch, tp, pp, dp, moe_tp, moe_ep = sizes
    return Layout(batch_size=batch, workers=workers, tp=tp, pp=pp, attention_dp=dp, moe_tp=moe_tp, moe_ep=moe_ep)


def _int(value: Any) -> int | None:
    return None if is_missing(value) else int(float(value))


def _str(value: Any) -> str | None:
    return None if is_missing(value) else str(value)


def _date(value: str | None) -> str | None:
    """The ISO date of an ISO timestamp."""
    return None if value is None else value[:10]


# ---- the project's own measurement files ------------------------------------------------------


def write_measurements(measurements: Iterable[Measurement], path: str | Path) -> None:
    """Write measurements as a flat CSV (columns CSV_COLUMNS, empty cell = not recorded)."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for m in measurements:
            writer.writerow({k: _cell(v) for k, v in flatten(m).items()})


def is_measurement_file(path: str | Path) -> bool:
    """True when the file's first line is a measurement CSV header (it names the id and latency columns)."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:  # -sig: a leading byte-order mark is not the id column's
        header = next(csv.reader([fh.readline()]), [])
    return {"id", "ttft_ms", "tpot_ms"} <= set(header)


@dataclass(frozen=True)
class Refused:
    """A row of a measurement CSV that the schema refuses: what of it reads (schema.bare, each refused
    cell empty) and why, naming the file, the row and each refused column with its value."""

    row: Measurement  # schema.bare: the row's top-level facts that read
    reason: str  # "<file>: row <id>: <column> must be ..., got <value>" ("; " between several)


def read_measurements(path: str | Path) -> list[Measurement | Refused]:
    """Every row of a project measurement CSV in file order: a Measurement, or Refused when a cell
    does not parse as its column's type or lies outside its domain (schema.cell_reason), its layout
    does not fit its mode, its cells do not match the header, or its settings are refused. A missing,
    unknown or repeated column, or no row at all, raises ValueError naming it (a column of ADDED_COLUMNS
    may be absent: files written before it read it as empty)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:  # a spreadsheet's byte-order mark is dropped
        reader = csv.DictReader(fh)
        names = reader.fieldnames or []
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)
        if repeated:  # csv.DictReader would keep the last cell of each silently
            raise ValueError(f"{path}: the header names a column more than once: {repeated}")
        header = set(names)
        missing, extra = sorted(set(CSV_COLUMNS) - header - ADDED_COLUMNS), sorted(header - set(CSV_COLUMNS))
        if missing or extra:
            raise ValueError(f"{path}: columns differ from the schema (missing {missing}, unknown {extra})")
        absent = dict.fromkeys(ADDED_COLUMNS - header, "")
        rows = [_row(path, reader.line_num, absent | record, len(header)) for record in reader]
    if not rows:
        raise ValueError(f"no measurement rows in {path} (a header only)")
    return rows


def load_measurements(path: str | Path) -> list[Measurement]:
    """Every row of a project measurement CSV (read_measurements); a refused row raises ValueError with its reason."""
    rows = read_measurements(path)
    refused = next((r for r in rows if isinstance(r, Refused)), None)
    if refused is not None:
        raise ValueError(refused.reason)
    return rows


def _row(path: str | Path, line: int, record: dict, cells: int) -> Measurement | Refused:
    """One CSV record (cells as text, keyed by column) as a Measurement, or Refused naming why."""
    label = f"row {record['id']}" if record.get("id") else f"line {line}"  # how the reason names the row
    row_id = record.get("id") or f"{Path(path).stem} {label}"  # the id it is reported under
    where = f"{path}: {label}"
    if None in record or None in record.values():  # csv.DictReader's keys and values for cells beyond and short of the header
        held = cells + len(record.get(None, ())) - sum(v is None for v in record.values())
        return Refused(bare({"id": row_id}), f"{where}: {held} cells where the header has {cells}")
    typed, reasons = _typed(record)
    if not reasons:
        try:
            return unflatten(typed, system_defaults)
        except EstimatorError as exc:
            reasons = [_settings_reason(exc)]
    return Refused(bare(typed | {"id": row_id}), f"{where}: " + "; ".join(reasons))


def _typed(record: dict) -> tuple[dict[str, Any], list[str]]:
    """The record's typed values (None where empty or refused) and the reasons of each refused cell,
    then of a layout that does not fit the mode."""
    types, typed, reasons = column_types(), {}, []
    for column, text in record.items():
        try:
            value = _parse(text, types[column])
        except ValueError:
            value, reason = None, f"{column} must be {_KIND_WORDS[types[column]]}, got {text!r}"
        else:
            reason = cell_reason(column, value)
        typed[column] = None if reason else value
        reasons += [reason] if reason else []
    layouts = {kind: _layout_of(typed, kind) for kind in ("agg", "prefill", "decode")}
    mismatch = layout_reason(typed["mode"], layouts)
    return typed, reasons + ([mismatch] if mismatch else [])


_KIND_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "text"}


def _layout_of(typed: dict[str, Any], kind: str) -> Layout | None:
    """The typed record's layout of one kind of worker (None when none of its cells is recorded)."""
    values = {f.name: typed[f"{kind}_{f.name}"] for f in dataclasses.fields(Layout)}
    return Layout(**values) if any(v is not None for v in values.values()) else None


def _settings_reason(exc: EstimatorError) -> str:
    """A refused setting's reason; an unknown system or engine named by its column."""
    column = {UnknownSystemError: "system", UnknownBackendError: "engine"}.get(type(exc))
    return f"{column}: {exc}" if column else str(exc)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _parse(text: str, kind: type) -> Any:
    """A cell's value of its column's type (None when empty); ValueError when it is not one."""
    if text == "":
        return None
    if kind is bool:
        if text not in ("true", "false"):
            raise ValueError(f"expected true/false, got {text!r}")
        return text == "true"
    return math.inf if kind is float and text == "inf" else kind(text)


__all__ = [
    "Refused",
    "is_measurement_file",
    "load_measurements",
    "load_silicon_sample",
    "read_measurements",
    "provenance_fields",
    "silicon_measurement",
    "silicon_sample_path",
    "source_of",
    "write_measurements",
]
