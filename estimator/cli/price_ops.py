"""Price every op of one phase of a deployment (per-op latency in ms and its source).

For --phase context, --isl is the full prompt length: the ops see isl - prefix new tokens over
prefix cached ones. For --phase generation, --isl is the KV position s of the decode step.
"""

from __future__ import annotations

import argparse
import json

from estimator.api.deployments import LAYOUT_PARAMS, LONG_CONTEXT_PARAM, MODEL_PARAMS, PRICER_PARAM, QUANT_PARAMS, check_fits_model, layout_deployment
from estimator.api.flags import Command, Param
from estimator.api.status import ExitStatus, describe
from estimator.cli.common import register_command
from estimator.deployment import require_positive
from estimator.errors import InvalidInputError
from estimator.pricing import make_pricer, resolve_pricer
from estimator.pricing.base import OpPrice

PHASE = "phase"
PRICE_OPS = Command(
    "price-ops",
    (
        *MODEL_PARAMS,
        *LAYOUT_PARAMS,
        Param("phase", str, required=True, group=PHASE, choices=("context", "generation")),
        Param("batch_size", int, required=True, group=PHASE),
        Param("isl", int, required=True, group=PHASE, help="prompt length (context) or KV position (generation), tokens"),
        Param("prefix", int, 0, "cached prefix tokens (context phase)", PHASE),
        *QUANT_PARAMS,
        PRICER_PARAM,
        LONG_CONTEXT_PARAM,
    ),
    example="python -m estimator price-ops --model-path Qwen/Qwen3-32B --system h200_sxm --backend vllm --tp-size 2 --phase context --batch-size 1 --isl 4096",
)
EXAMPLE = PRICE_OPS.example
EXIT_STATUS = describe(ExitStatus.FOUND, ExitStatus.BAD_INPUT)


def register(p: argparse.ArgumentParser) -> None:
    register_command(p, PRICE_OPS).add_argument("--json", action="store_true", help='print {"ops": [...], "total_ms": ...}')


def price_phase(args) -> list[OpPrice]:
    """The priced ops of the requested phase, after validating sizes."""
    require_positive("batch-size", args.batch_size)
    require_positive("isl", args.isl)
    if args.prefix < 0:
        raise InvalidInputError(f"prefix must be >= 0, got {args.prefix}")
    if args.phase == "context" and args.prefix >= args.isl:
        raise InvalidInputError(f"prefix ({args.prefix}) must be smaller than isl ({args.isl})")
    if args.phase == "generation" and args.prefix:
        raise InvalidInputError("--prefix applies to the context phase only")
    deployment = layout_deployment(args)
    check_fits_model(deployment.model, deployment.pp, args.isl, args.allow_long_context, "isl")
    pricer = make_pricer(resolve_pricer(args.pricer, deployment.model), deployment)
    if args.phase == "context":
        return pricer.context_ops(args.batch_size, args.isl - args.prefix, args.prefix)
    return pricer.generation_ops(args.batch_size, args.isl)


def render_table(ops: list[OpPrice]) -> str:
    width = max([len(op.name) for op in ops] + [len("total")])
    lines = [f"{'op':<{width}}  {'latency_ms':>14}  source"]
    lines += [f"{op.name:<{width}}  {op.latency_ms:>14.6f}  {op.source}" for op in ops]
    lines.append(f"{'total':<{width}}  {sum(op.latency_ms for op in ops):>14.6f}")
    return "\n".join(lines)


def run(ns: argparse.Namespace) -> int:
    ops = price_phase(PRICE_OPS.bind(PRICE_OPS.given(ns)))
    if ns.json:
        payload = {"ops": [{"name": o.name, "latency_ms": o.latency_ms, "source": o.source} for o in ops], "total_ms": sum(o.latency_ms for o in ops)}
        print(json.dumps(payload))
    else:
        print(render_table(ops))
    return 0
