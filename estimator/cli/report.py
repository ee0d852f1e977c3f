"""Build the accuracy report: predict every measured row by every method, write the per-point CSV, render the HTML.

The measured rows are aiconfigurator-core's silicon_sample.csv, or --measurements: measurement CSVs
(written by python -m estimator import) and benchmark result files, imported with --deployment and
the import's fact flags in the same command (a bad result file is listed and the others reported;
a measurement CSV row the schema refuses is listed and reported uncovered with its reason; either:
exit 2). --from-points re-renders an existing per-point CSV without recomputing; --baseline adds old
against new on the same rows, from an earlier per-point CSV of the same measurements. The outputs
are checked before any work and written only once the page has rendered.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from estimator.cli import import_runs
from estimator.deployment import require_positive
from estimator.errors import InvalidInputError
from estimator.io import atomic_write_text, require_distinct, require_writable
from estimator.report import METHOD_NAMES

if TYPE_CHECKING:
    from measurements.loaders import Refused
    from measurements.mapping import MappedRow
    from measurements.schema import Measurement

    Loaded = list[Measurement | Refused]  # rows as measurements.loaders.read_measurements gives them

ROOT = Path(__file__).resolve().parents[2]


EXAMPLE = "python -m estimator report --limit 200 --ablation --out /tmp/accuracy.html --points /tmp/accuracy_points.csv"


def register(p: argparse.ArgumentParser) -> None:
    inputs, facts, outputs, run_ = (p.add_argument_group(title) for title in ("inputs", "facts a result lacks (with --measurements)", "output", "run"))
    outputs.add_argument("--out", default="reports/accuracy.html", help="HTML report path (default reports/accuracy.html)")
    outputs.add_argument("--points", default="reports/out/accuracy_points.csv", help="per-point CSV written (default reports/out/accuracy_points.csv)")
    inputs.add_argument("--from-points", default=None, metavar="CSV", help="re-render from this per-point CSV instead of computing")
    inputs.add_argument("--allow-partial", action="store_true", help="with --from-points: render a file holding fewer rows than its provenance records")
    inputs.add_argument("--baseline", default=None, metavar="CSV", help="compare with this earlier per-point CSV of the same measured rows")
    inputs.add_argument(
        "--measurements",
        nargs="+",
        default=None,
        metavar="FILE",
        help="your runs instead of silicon_sample.csv: measurement CSVs (python -m estimator import) and/or benchmark result files (with --deployment)",
    )
    inputs.add_argument(
        "--deployment", type=Path, default=None, metavar="DEPLOY.yaml", help="with result files in --measurements: what ran (see python -m estimator import)"
    )
    import_runs.register_facts(inputs, facts)
    run_.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N measured rows")
    run_.add_argument("--methods", nargs="+", choices=METHOD_NAMES, default=list(METHOD_NAMES), help="methods to run (default: all)")
    run_.add_argument("--workers", type=int, default=2, help="worker processes (1: in process; default 2)")
    run_.add_argument("--ablation", action="store_true",
                      help="also replay closed_loop with each first-token mechanism off in turn (its table in the error sources; ~2x the build)")  # fmt: skip


def compute_points(args: argparse.Namespace):
    """Load, map and predict; returns the per-point table, its provenance and the count of result
    files, runs and measurement rows not imported or refused (a refused row is every method's
    uncovered point, its reason the loader's, and is listed on stderr)."""
    from estimator.report import provenance
    from estimator.report.ablation import ABLATED_METHODS
    from estimator.report.batch import Predictor
    from estimator.report.points import points_frame
    from measurements.loaders import load_silicon_sample, silicon_sample_path

    if args.measurements:
        measurements, data_paths, bad = own_runs(args)
    else:
        data_paths, bad = [silicon_sample_path()], 0
        measurements = readable(load_silicon_sample, data_paths[0], "measurement file")
    measurements = measurements[: args.limit] if args.limit is not None else measurements
    refused = refused_rows(measurements)
    with Predictor(args.workers) as predictor:  # the workers warm their kernels while the rows are mapped
        rows = mapped(measurements)
        results = predictor.predict(rows, [*args.methods, *(ABLATED_METHODS if args.ablation else ())])
    command = shlex.join(["python", "-m", "estimator", "report", *(sys.argv[2:] if sys.argv[1:2] == ["report"] else [])])
    return points_frame(rows, results), provenance.collect(data_paths, len(rows), command, ROOT), bad + refused


def refused_rows(loaded: Loaded) -> int:
    """Print the reason of each row the loader refused (measurements.loaders.Refused); their count."""
    from measurements.loaders import Refused

    refused = [r.reason for r in loaded if isinstance(r, Refused)]
    for reason in refused:
        print(f"refused (reported uncovered): {reason}", file=sys.stderr)
    return len(refused)


def mapped(loaded: Loaded) -> list[MappedRow]:
    """Each loaded row mapped (measurements.mapping); a refused one is a row no method prices, its reason the loader's."""
    from measurements.loaders import Refused
    from measurements.mapping import MappedRow, map_measurement

    return [MappedRow(r.row, None, r.reason, r.row.model, "", None, "") if isinstance(r, Refused) else map_measurement(r) for r in loaded]


def own_runs(args: argparse.Namespace):
    """(rows, files, not imported) of --measurements: the measurement CSVs' rows (a row the schema
    refuses as measurements.loaders.Refused), then the rows of the other files, benchmark results
    imported with --deployment and the fact flags (each in the order given; an id repeated by an
    earlier row is suffixed -2, -3, ...)."""
    from measurements.importers.deployment import load_deployment
    from measurements.importers.formats import import_files
    from measurements.loaders import is_measurement_file, read_measurements

    paths = [Path(p) for p in args.measurements]
    for path in paths:
        if not path.is_file():
            raise InvalidInputError(f"measurement file {path}: no such file")
    tables = [p for p in paths if readable(is_measurement_file, p, "measurement file")]
    rows = [row for path in tables for row in readable(read_measurements, path, "measurement file")]
    results = [p for p in paths if p not in tables]
    if not results:
        return unique_rows(rows), paths, 0
    if args.deployment is None:
        raise InvalidInputError(f"{results[0]} is not a measurement CSV: a benchmark result file needs --deployment DEPLOY.yaml")
    deployment = load_deployment(args.deployment)
    imported = import_files(results, args.format, deployment, import_runs.supplied_facts(args, deployment))
    import_runs.announce(imported)
    return unique_rows([*rows, *imported.rows]), paths, len(imported.bad)


def unique_rows(loaded: Loaded) -> Loaded:
    """The loaded rows (Measurement or Refused) with an id repeated by an earlier row suffixed -2, -3, ... (importers.formats.unique_ids)."""
    from measurements.importers.formats import unique_ids
    from measurements.loaders import Refused

    renamed = unique_ids([r.row if isinstance(r, Refused) else r for r in loaded])
    return [dataclasses.replace(r, row=m) if isinstance(r, Refused) else m for r, m in zip(loaded, renamed)]


def require_complete(points, record: dict, path: str, allow_partial: bool) -> None:
    """A points file holding fewer measured rows than its provenance records (data_rows) is bad
    input unless allow_partial: a truncated file would render as a smaller, silently partial report."""
    recorded, held = record.get("data_rows"), points["id"].nunique()
    if recorded is not None and held < recorded and not allow_partial:
        raise InvalidInputError(f"{path} holds {held} measured rows but its provenance records {recorded}; --allow-partial renders it anyway")


def readable(load, path, what: str):
    """load(path), with an unreadable or malformed file reported as bad input naming it."""
    try:
        return load(path)
    except (OSError, ValueError, csv.Error) as exc:  # csv.Error: e.g. a cell beyond the csv module's field limit
        raise InvalidInputError(f"cannot read {what} {path}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Check the outputs, compute (or read) the per-point table, render the report, then write the
    table and the page (each atomically)."""
    from estimator.report.page import render_report
    from estimator.report.points import read_points, write_points

    require_positive("workers", args.workers)
    if args.limit is not None:
        require_positive("limit", args.limit)
    if args.ablation and (args.from_points or "closed_loop" not in args.methods):
        raise InvalidInputError("--ablation replays closed_loop's rows: it needs closed_loop among --methods and no --from-points")
    args.methods = list(dict.fromkeys(args.methods))  # a method named twice runs once
    require_outputs(args)
    start = time.monotonic()
    bad = 0
    if args.from_points:
        points, record = readable(read_points, args.from_points, "per-point file")
        require_complete(points, record, args.from_points, args.allow_partial)
        methods = [m for m in args.methods if m in set(points["method"])]
    else:
        points, record, bad = compute_points(args)
        methods = args.methods
    baseline = read_baseline(args.baseline, points, args.from_points or args.points) if args.baseline else None
    page = render_report(points, record, methods, baseline)  # before any write: a failure leaves no output behind
    if not args.from_points:
        write_points(points, Path(args.points), record)
        print(f"wrote {args.points}", file=sys.stderr)
    out = Path(args.out)
    atomic_write_text(out, page)
    print(f"wrote {out} ({time.monotonic() - start:.1f}s)", file=sys.stderr)
    return 2 if bad else 0


def require_outputs(args: argparse.Namespace) -> None:
    """InvalidInputError, before any work, naming an output flag whose path (or, for --points, its
    provenance sidecar's) cannot be written (estimator.io.require_writable) or names the same file as
    another output, an input or a per-point file's provenance sidecar."""
    from estimator.report.points import provenance_path

    outputs = [("--out", args.out), *([] if args.from_points else [("--points", args.points)])]
    for flag, path in outputs:
        require_writable(Path(path), flag)
        if flag == "--points":
            require_writable(provenance_path(Path(path)), "--points's provenance")
    inputs = [("--from-points", args.from_points), ("--baseline", args.baseline), ("--deployment", args.deployment)]
    sidecars = [(f"{flag}'s provenance", provenance_path(Path(path))) for flag, path in [*outputs, *inputs] if path is not None
                and flag in ("--points", "--from-points", "--baseline")]  # fmt: skip
    require_distinct(outputs, [*inputs, *sidecars, *(("--measurements", m) for m in args.measurements or ())], "report")


def read_baseline(path: str, points, points_path: str):
    """The baseline per-point table; one that holds other measured rows than points is bad input naming the difference."""
    from estimator.report.comparison import Baseline, measurement_difference
    from estimator.report.points import read_points

    old, record = readable(read_points, path, "baseline per-point file")
    difference = measurement_difference(points, old)
    if difference:
        raise InvalidInputError(f"{points_path} and baseline {path} cover different measurements: {difference}")
    return Baseline(old, record, path)
