"""Build the accuracy report: predict every measured row by every method, write the per-point CSV, render the HTML.

The measured rows are aiconfigurator-core's silicon_sample.csv (or --measurements, a project
measurement CSV). --from-points re-renders an existing per-point CSV without recomputing; --baseline adds old against
new on the same rows, from an earlier per-point CSV of the same measurements.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from estimator.deployment import require_positive
from estimator.errors import InvalidInputError
from estimator.io import atomic_write_text
from estimator.report import METHOD_NAMES

ROOT = Path(__file__).resolve().parents[2]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="reports/accuracy.html", help="HTML report path (default reports/accuracy.html)")
    p.add_argument("--points", default="reports/out/accuracy_points.csv", help="per-point CSV written (default reports/out/accuracy_points.csv)")
    p.add_argument("--from-points", default=None, metavar="CSV", help="re-render from this per-point CSV instead of computing")
    p.add_argument("--allow-partial", action="store_true", help="with --from-points: render a file holding fewer rows than its provenance records")
    p.add_argument("--baseline", default=None, metavar="CSV", help="compare with this earlier per-point CSV of the same measured rows")
    p.add_argument("--measurements", default=None, metavar="CSV", help="a project measurement CSV instead of silicon_sample.csv")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N measured rows")
    p.add_argument("--methods", nargs="+", choices=METHOD_NAMES, default=list(METHOD_NAMES), help="methods to run (default: all)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (1: in process; default 2)")


def compute_points(args: argparse.Namespace):
    """Load, map and predict; returns the per-point table and its provenance."""
    from estimator.report import provenance
    from estimator.report.batch import Predictor
    from estimator.report.points import points_frame
    from measurements.loaders import (
        load_measurements,
        load_silicon_sample,
        silicon_sample_path,
    )
    from measurements.mapping import map_all

    data_path = Path(args.measurements) if args.measurements else silicon_sample_path()
    measurements = readable(load_measurements if args.measurements else load_silicon_sample, data_path, "measurement file")
    with Predictor(args.workers) as predictor:  # the workers warm their kernels while the rows are mapped
        rows = map_all(measurements[: args.limit] if args.limit is not None else measurements)
        results = predictor.predict(rows, args.methods)
    command = shlex.join(["python", "-m", "estimator", "report", *(sys.argv[2:] if sys.argv[1:2] == ["report"] else [])])
    return points_frame(rows, results), provenance.collect(data_path, len(rows), command, ROOT)


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
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot read {what} {path}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Compute (or read) the per-point table, write it, render the report."""
    from estimator.report.page import render_report
    from estimator.report.points import read_points, write_points

    require_positive("workers", args.workers)
    if args.limit is not None:
        require_positive("limit", args.limit)
    start = time.monotonic()
    if args.from_points:
        points, record = readable(read_points, args.from_points, "per-point file")
        require_complete(points, record, args.from_points, args.allow_partial)
        methods = [m for m in args.methods if m in set(points["method"])]
    else:
        points, record = compute_points(args)
        methods = args.methods
        write_points(points, Path(args.points), record)
        print(f"wrote {args.points}", file=sys.stderr)
    baseline = read_baseline(args.baseline, points, args.from_points or args.points) if args.baseline else None
    out = Path(args.out)
    atomic_write_text(out, render_report(points, record, methods, baseline))
    print(f"wrote {out} ({time.monotonic() - start:.1f}s)", file=sys.stderr)
    return 0


def read_baseline(path: str, points, points_path: str):
    """The baseline per-point table; one that holds other measured rows than points is bad input naming the difference."""
    from estimator.report.comparison import Baseline, measurement_difference
    from estimator.report.points import read_points

    old, record = readable(read_points, path, "baseline per-point file")
    difference = measurement_difference(points, old)
    if difference:
        raise InvalidInputError(f"{points_path} and baseline {path} cover different measurements: {difference}")
    return Baseline(old, record, path)
