"""Import benchmark result files into a measurement CSV: RESULT... --deployment DEPLOY.yaml --out runs.csv.

Formats (measurements/README.md has each one's field mapping), auto-detected by reading or forced
with --format: the benchmark_serving result JSON family (vLLM `vllm bench serve --save-result` and
benchmarks/benchmark_serving.py, SGLang bench_serving, TensorRT-LLM's benchmark_serving, the
InferenceX client; one object per file or one per line), aiperf's profile_export_aiperf.json and
profile_export_aiperf.csv, genai-perf's profile_export_genai_perf.json. The deployment file says
what ran (--write-template prints a commented one). A fact a result lacks comes from the fact flags
(--isl, --osl, --random-range-ratio, --num-warmups, --client-seed, --statistic, --ignore-eos,
--concurrency, --num-prompts, --request-rate), else the same keys under the deployment's client: block; each row's
provenance lists the facts supplied that way. A bad result file is listed with its reason and the
others are imported (exit 2 when any was bad); OUT is written atomically, and only when some row
imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from estimator.errors import InvalidInputError
from estimator.io import atomic_path, require_distinct, require_writable
from measurements.importers.deployment import CLIENT_KEYS, TEMPLATE, DeploymentFile, load_deployment
from measurements.importers.formats import FORMAT_NAMES, Imported, import_files
from measurements.importers.result import Supplied
from measurements.loaders import write_measurements
from measurements.schema import STATISTICS

EXAMPLE = "python -m estimator import result.json --deployment deploy.yaml --random-range-ratio 0.8 --out runs.csv"


def register(p: argparse.ArgumentParser) -> None:
    inputs, facts, output = (p.add_argument_group(title) for title in ("inputs", "facts a result lacks", "output"))
    inputs.add_argument("results", nargs="*", type=Path, metavar="RESULT", help="benchmark result files")
    inputs.add_argument("--deployment", type=Path, default=None, metavar="DEPLOY.yaml", help="the deployment file: what ran")
    register_facts(inputs, facts)
    output.add_argument("--out", type=Path, default=None, metavar="CSV", help="measurement CSV written")
    output.add_argument("--write-template", action="store_true", help="print a commented deployment file and exit")


def register_facts(inputs: argparse._ArgumentGroup, facts: argparse._ArgumentGroup) -> None:
    """--format and the flags of the facts a result may lack (import and report --measurements share them)."""
    inputs.add_argument("--format", choices=["auto", *FORMAT_NAMES], default="auto", help="result format (default: auto-detected)")
    facts.add_argument("--isl", type=int, default=None, help="nominal input tokens per request, when the result lacks it")
    facts.add_argument("--osl", type=int, default=None, help="nominal output tokens per request, when the result lacks it")
    facts.add_argument("--random-range-ratio", type=float, default=None, help="lengths uniform on [r*L, L], when the result lacks it")
    facts.add_argument("--num-warmups", type=int, default=None, help="warm-up requests the client sent before the measured ones")
    facts.add_argument(
        "--client-seed",
        type=int,
        default=None,
        help="the client's NumPy seed for its random lengths (vLLM benchmark_serving: 0, SGLang bench_serving: 1), whose draws the replay repeats",
    )
    facts.add_argument("--statistic", choices=STATISTICS, default=None, help="which statistic the rows' ttft_ms/tpot_ms are (default: mean)")
    facts.add_argument("--ignore-eos", action=argparse.BooleanOptionalAction, default=None, help="the client set ignore_eos")
    facts.add_argument("--concurrency", type=int, default=None, help="requests in flight at most, when the result lacks it")
    facts.add_argument("--num-prompts", type=int, default=None, help="requests in the measured pass, when the result lacks it")
    facts.add_argument("--request-rate", type=float, default=None, help="requests/s offered (inf: each sent at once), when the result lacks it")


def supplied_facts(args: argparse.Namespace, deployment: DeploymentFile) -> Supplied:
    """The facts of the flags over the deployment's client: block."""
    return Supplied.of({name: getattr(args, name) for name in CLIENT_KEYS}, deployment.client)


def announce(imported: Imported) -> None:
    """Print the warnings and what was not imported to stderr; no row at all is bad input naming why."""
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not imported.rows:
        if len(imported.bad) == 1:
            raise InvalidInputError(imported.bad[0])
        raise InvalidInputError(f"no result imported ({len(imported.bad)} bad): " + "; ".join(imported.bad))
    for reason in imported.bad:
        print(f"not imported: {reason}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.write_template:
        sys.stdout.write(TEMPLATE)
        return 0
    if not args.results:
        raise InvalidInputError("no result files given (or --write-template for a deployment file)")
    if args.deployment is None or args.out is None:
        raise InvalidInputError("--deployment and --out are required (--write-template prints a deployment file)")
    require_writable(args.out, "--out")
    require_distinct([("--out", args.out)], [("--deployment", args.deployment), *(("RESULT", r) for r in args.results)], "import")
    deployment = load_deployment(args.deployment)
    imported = import_files(args.results, args.format, deployment, supplied_facts(args, deployment))
    announce(imported)
    with atomic_path(args.out) as tmp:
        write_measurements(imported.rows, tmp)
    rows, files = len(imported.rows), len(args.results)
    print(f"wrote {args.out}: {rows} row{'s' * (rows != 1)} from {files} file{'s' * (files != 1)}, {len(imported.bad)} not imported", file=sys.stderr)
    return 2 if imported.bad else 0
