"""Recommend a deployment within a GPU budget: agg against disagg (and every backend with --backend auto).

Searches the layouts AIConfigurator 0.12.0's `cli default` searches, counts replicas as it does (a
configuration of g GPUs runs N // g times in --total-gpus N) and prints each mode's top configurations,
a verdict line and the Pareto frontier. --semantics legacy reproduces `aiconfigurator cli default`'s top
rows; --refined-sla lets the closed-loop replay rank them; --save-dir writes best_configs.csv,
pareto.csv, frontier.html and per configuration its launch files, bench.sh and deployment.yaml.
Exit status: 0 found, 2 bad input, 3 no configuration meets the targets (the closest miss is printed).

example: python -m estimator recommend --model-path Qwen/Qwen3-32B-FP8 --system h200_sxm --total-gpus 8 --isl 4000 --osl 1000 --ttft 1000 --tpot 30
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from estimator.cli.common import add_long_context_arg, add_pricer_arg, check_fits_model
from estimator.io import require_writable
from estimator.pricing.reference import is_moe_model
from estimator.recommend import AUTO, RecommendTask, recommend
from estimator.recommend.output import render_text, save, to_json
from estimator.steps import Semantics

NOT_FOUND = 3  # exit status when no configuration meets the targets


def register(p: argparse.ArgumentParser) -> None:
    task = p.add_argument_group("task")
    task.add_argument("--model-path", required=True, help="HF model id (bundled config) or path to config.json / model dir")
    task.add_argument("--system", required=True, help="GPU system of agg and prefill workers, e.g. h200_sxm")
    task.add_argument("--decode-system", default=None, help="GPU system of disagg decode workers (default --system)")
    task.add_argument("--backend", default=AUTO, help="trtllm | vllm | sglang | auto (every backend; default)")
    task.add_argument("--backend-version", default=None, help="perf-table version or current/previous/next (default current)")
    task.add_argument("--total-gpus", type=int, required=True, help="GPUs of the whole deployment: replicas x GPUs per replica fit in it")
    task.add_argument("--isl", type=int, default=4000, help="input tokens per request (default 4000)")
    task.add_argument("--osl", type=int, default=1000, help="output tokens per request (default 1000)")
    task.add_argument("--prefix", type=int, default=0, help="cached prefix tokens per request, part of --isl")
    targets = p.add_argument_group("targets")
    targets.add_argument("--ttft", type=float, default=1000.0, help="TTFT target, ms (default 1000)")
    targets.add_argument("--tpot", type=float, default=30.0, help="TPOT target, ms (default 30)")
    targets.add_argument("--request-latency", type=float, default=None, help="request latency target, ms (ranks by it instead of TPOT)")
    targets.add_argument("--refined-sla", action="store_true", help="the closed-loop replay (benchmark protocol) ranks the top configurations")
    out = p.add_argument_group("output")
    out.add_argument("--top-n", type=int, default=5, help="configurations per mode (default 5)")
    out.add_argument("--save-dir", default=None, help="write best_configs.csv, pareto.csv, frontier.html and launch files here")
    out.add_argument("--json", action="store_true", help="print the recommendation as JSON")
    model = p.add_argument_group("modelling")
    model.add_argument("--semantics", choices=[s.value for s in Semantics], default=Semantics.UNCACHED.value,
                       help="legacy: AIConfigurator 0.12.0's numbers exactly; uncached (default): only uncached prompt tokens count against budgets")  # fmt: skip
    add_pricer_arg(model)
    add_long_context_arg(model)


def run(args: argparse.Namespace) -> int:
    check_fits_model(args.model_path, 1, args.isl + args.osl, args.allow_long_context)
    folder = Path(args.save_dir) if args.save_dir else None
    if folder is not None:
        require_writable(folder / "best_configs.csv", "--save-dir")
    task = RecommendTask(model=args.model_path, system=args.system, total_gpus=args.total_gpus, isl=args.isl, osl=args.osl, ttft=args.ttft,
                         tpot=args.tpot, backend=args.backend, decode_system=args.decode_system, prefix=args.prefix,
                         request_latency=args.request_latency, top_n=args.top_n, semantics=args.semantics, refined=args.refined_sla,
                         backend_version=args.backend_version, pricer=args.pricer)  # fmt: skip
    rec = recommend(task)
    print(to_json(rec) if args.json else render_text(rec))
    if folder is not None:
        written = save(rec, folder, is_moe_model(args.model_path))
        print(f"wrote {len(written)} files to {folder}", file=sys.stderr)
    return 0 if rec.found else NOT_FOUND
