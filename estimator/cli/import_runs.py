"""Import benchmark result files into a measurement CSV: RESULT... --deployment DEPLOY.yaml --out runs.csv.

Formats: the benchmark_serving result JSON family (vLLM `vllm bench serve --save-result` and
benchmarks/benchmark_serving.py, SGLang bench_serving, the InferenceX client; one object per file
or one per line), auto-detected or forced with --format. The deployment file says what ran
(--write-template prints a commented one). A fact a result lacks comes from --isl, --osl,
--random-range-ratio, --num-warmups, --statistic, --ignore-eos, else the same keys under the
deployment's client: block; each row's provenance lists the facts supplied that way. A bad result
file is listed with its reason and the others are imported (exit 2 when any was bad); OUT is
written atomically, and only when some row imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from estimator.errors import EstimatorError, InvalidInputError
from estimator.io import atomic_path, require_writable
from measurements.importers import benchmark_serving
from measurements.importers.deployment import STATISTICS, TEMPLATE, load_deployment
from measurements.loaders import write_measurements
from measurements.schema import Measurement

FORMATS = {benchmark_serving.FORMAT: benchmark_serving}


EXAMPLE = "python -m estimator import result.json --deployment deploy.yaml --random-range-ratio 0.8 --out runs.csv"


def register(p: argparse.ArgumentParser) -> None:
    inputs, facts, output = (p.add_argument_group(title) for title in ("inputs", "facts a result lacks", "output"))
    inputs.add_argument("results", nargs="*", type=Path, metavar="RESULT", help="benchmark result files")
    inputs.add_argument("--deployment", type=Path, default=None, metavar="DEPLOY.yaml", help="the deployment file: what ran")
    inputs.add_argument("--format", choices=["auto", *FORMATS], default="auto", help="result format (default: auto-detected)")
    facts.add_argument("--isl", type=int, default=None, help="nominal input tokens per request, when the result lacks it")
    facts.add_argument("--osl", type=int, default=None, help="nominal output tokens per request, when the result lacks it")
    facts.add_argument("--random-range-ratio", type=float, default=None, help="lengths uniform on [r*L, L], when the result lacks it")
    facts.add_argument("--num-warmups", type=int, default=None, help="warm-up requests the client sent before the measured ones")
    facts.add_argument("--statistic", choices=STATISTICS, default=None, help="which statistic the rows' ttft_ms/tpot_ms are (default: mean)")
    facts.add_argument("--ignore-eos", action=argparse.BooleanOptionalAction, default=None, help="the client set ignore_eos")
    output.add_argument("--out", type=Path, default=None, metavar="CSV", help="measurement CSV written")
    output.add_argument("--write-template", action="store_true", help="print a commented deployment file and exit")


def import_file(path: Path, fmt: str, deployment, supplied) -> tuple[list[Measurement], list[str]]:
    """The rows of one result file and their warnings."""
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    candidates = FORMATS if fmt == "auto" else {fmt: FORMATS[fmt]}
    reasons = []
    for fmt, module in candidates.items():  # the first format that reads the file (each parses it once)
        try:
            records = module.read_records(path)
            break
        except InvalidInputError as exc:
            reasons.append(str(exc))
    else:
        raise InvalidInputError(reasons[0] if len(reasons) == 1 else f"{path}: unknown format ({'; '.join(reasons)})")
    rows, warnings = [], []
    for i, record in enumerate(records):
        row_id = path.stem if len(records) == 1 else f"{path.stem}#{i + 1}"
        label = str(path) if len(records) == 1 else f"{path} record {i + 1}"
        row, notes = FORMATS[fmt].import_record(record, deployment, supplied, row_id, label)
        rows.append(row)
        warnings += notes
    return rows, warnings


def _unique_ids(rows: list[Measurement]) -> list[Measurement]:
    """The rows with an id repeated by an earlier row suffixed -2, -3, ..."""
    import dataclasses

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


def run(args: argparse.Namespace) -> int:
    if args.write_template:
        sys.stdout.write(TEMPLATE)
        return 0
    if not args.results:
        raise InvalidInputError("no result files given (or --write-template for a deployment file)")
    if args.deployment is None or args.out is None:
        raise InvalidInputError("--deployment and --out are required (--write-template prints a deployment file)")
    require_writable(args.out, "--out")
    deployment = load_deployment(args.deployment)
    flags = {name: getattr(args, name) for name in ("isl", "osl", "random_range_ratio", "num_warmups", "statistic", "ignore_eos")}
    supplied = benchmark_serving.Supplied.of(flags, deployment.client)
    rows: list[Measurement] = []
    bad: list[str] = []
    for path in args.results:
        try:
            file_rows, warnings = import_file(path, args.format, deployment, supplied)
        except EstimatorError as exc:
            bad.append(str(exc))
            continue
        rows += file_rows
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    if not rows:
        if len(bad) == 1:
            raise InvalidInputError(bad[0])
        raise InvalidInputError(f"no result imported ({len(bad)} bad): " + "; ".join(bad))
    with atomic_path(args.out) as tmp:
        write_measurements(_unique_ids(rows), tmp)
    print(f"wrote {args.out}: {len(rows)} rows from {len(args.results) - len(bad)} of {len(args.results)} files", file=sys.stderr)
    for reason in bad:
        print(f"not imported: {reason}", file=sys.stderr)
    return 2 if bad else 0
