"""Price every op of one phase of a deployment (per-op latency in ms and its source).

For --phase context, --isl is the full prompt length: the ops see isl - prefix new tokens over
prefix cached ones. For --phase generation, --isl is the KV position s of the decode step.
"""

from __future__ import annotations

import argparse
import json

from estimator.cli.common import (
    add_deployment_args,
    check_fits_model,
    deployment_from_args,
    positive,
)
from estimator.errors import InvalidInputError
from estimator.pricing import make_pricer
from estimator.pricing.base import OpPrice


def register(p: argparse.ArgumentParser) -> None:
    add_deployment_args(p)
    p.add_argument("--phase", choices=("context", "generation"), required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--isl", type=int, required=True, help="prompt length (context) or KV position (generation), tokens")
    p.add_argument("--prefix", type=int, default=0, help="cached prefix tokens (context phase)")
    p.add_argument("--json", action="store_true", help='print {"ops": [...], "total_ms": ...}')


def price_phase(args: argparse.Namespace) -> list[OpPrice]:
    """The priced ops of the requested phase, after validating sizes."""
    positive("batch-size", args.batch_size)
    positive("isl", args.isl)
    if args.prefix < 0:
        raise InvalidInputError(f"prefix must be >= 0, got {args.prefix}")
    if args.phase == "context" and args.prefix >= args.isl:
        raise InvalidInputError(f"prefix ({args.prefix}) must be smaller than isl ({args.isl})")
    if args.phase == "generation" and args.prefix:
        raise InvalidInputError("--prefix applies to the context phase only")
    deployment = deployment_from_args(args)
    check_fits_model(deployment.model, deployment.pp, args.isl, args.allow_long_context, "isl")
    pricer = make_pricer(args.pricer, deployment)
    if args.phase == "context":
        return pricer.context_ops(args.batch_size, args.isl - args.prefix, args.prefix)
    return pricer.generation_ops(args.batch_size, args.isl)


def render_table(ops: list[OpPrice]) -> str:
    width = max([len(op.name) for op in ops] + [len("total")])
    lines = [f"{'op':<{width}}  {'latency_ms':>14}  source"]
    lines += [f"{op.name:<{width}}  {op.latency_ms:>14.6f}  {op.source}" for op in ops]
    lines.append(f"{'total':<{width}}  {sum(op.latency_ms for op in ops):>14.6f}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    ops = price_phase(args)
    if args.json:
        payload = {"ops": [{"name": o.name, "latency_ms": o.latency_ms, "source": o.source} for o in ops], "total_ms": sum(o.latency_ms for o in ops)}
        print(json.dumps(payload))
    else:
        print(render_table(ops))
    return 0
