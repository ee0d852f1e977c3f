"""Sweep parallel layouts for the best configurations under latency targets (agg or disagg).

--semantics legacy reproduces aiconfigurator 0.12.0's sweeps (3-decimal rows); uncached (the
default) counts only uncached prompt tokens against the prefill budgets. Prints the best
configurations; --out writes the full table of evaluated operating points (.csv or .parquet).
--refined-sla gates and reprices candidates by the closed-loop replay. Ctrl-C writes the rows
computed so far.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from estimator.cli.common import add_long_context_arg, add_pricer_arg, check_fits_model
from estimator.cli.estimate import nextn_accepted
from estimator.closedloop import PRICINGS, ROW, ReplayOptions
from estimator.deployment import Backend, Deployment, QuantOverrides, require_positive
from estimator.disagg import DISAGG_COLUMNS
from estimator.disagg.search import DEFAULT_DECODE_MAX_NUM_TOKENS, DEFAULT_PREFILL_MAX_NUM_TOKENS, DEFAULT_TOP_N, WorkerLimits
from estimator.errors import InvalidInputError, is_interrupt
from estimator.io import TABLE_WRITERS, atomic_to_table, require_writable
from estimator.models.quant import check_overrides
from estimator.perf.versions import resolve_version
from estimator.scheduler import AGG_COLUMNS
from estimator.steps import Semantics
from estimator.sweep import AggOptions, DisaggOptions, Sla, Workload, sweep_agg, sweep_disagg
from estimator.sweep.agg import DEFAULT_TOP_K
from estimator.sweep.grid import DEFAULT_CTX_STRIDE, DEFAULT_MAX_BATCH_SIZE
from estimator.sweep.space import (
    DEFAULT_DP_SIZES,
    DEFAULT_MOE_EP_SIZES,
    DEFAULT_MOE_TP_SIZES,
    DEFAULT_PP_SIZES,
    DEFAULT_TOTAL_GPUS,
    DEFAULT_TP_SIZES,
    MoeSizes,
    sweep_layouts,
)

AGG_SHOWN = ("parallel", "bs", "ctx_tokens", "concurrency", "ttft", "tpot", "tokens/s/gpu", "tokens/s/user", "seq/s", "memory")
DISAGG_SHOWN = ("(p)parallel", "(p)bs", "(p)workers", "(d)parallel", "(d)bs", "(d)workers", "num_total_gpus", "concurrency",
                "ttft", "tpot", "tokens/s/gpu", "tokens/s/user", "seq/s")  # fmt: skip
BAR_WIDTH = 30


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-path", required=True, help="HF model id (bundled config) or path to config.json / model dir")
    p.add_argument("--system", required=True, help="GPU system, e.g. h200_sxm")
    p.add_argument("--backend", required=True, help="trtllm | vllm | sglang")
    p.add_argument("--backend-version", default=None, help="literal version or current/previous/next (default: current)")
    p.add_argument("--mode", choices=("agg", "disagg"), default="agg", help="serving mode to sweep (default agg)")
    p.add_argument("--isl", type=int, default=4000, help="input tokens per request (default 4000)")
    p.add_argument("--osl", type=int, default=1000, help="output tokens per request (default 1000)")
    p.add_argument("--prefix", type=int, default=0, help="cached prefix tokens per request, part of --isl")
    p.add_argument("--nextn", type=int, default=0, help="speculative (MTP) draft depth")
    p.add_argument("--nextn-accepted", type=float, default=None, help="accepted draft tokens per decode step")
    for kind in ("gemm", "moe", "kvcache", "fmha", "comm"):
        p.add_argument(f"--{kind}-quant-mode", default=None, help=f"override the inferred {kind} quant mode")
    p.add_argument("--ttft", type=float, default=1000.0, help="TTFT target, ms (default 1000)")
    p.add_argument("--tpot", type=float, nargs="+", default=[50.0], help="TPOT target(s), ms (default 50); one ranking per target")
    p.add_argument("--request-latency", type=float, default=None, help="request latency target, ms (derives (ttft, tpot) pairs)")
    p.add_argument("--tp-list", type=int, nargs="+", default=list(DEFAULT_TP_SIZES), help="tensor parallel sizes (default 1 2 4 8)")
    p.add_argument("--pp-list", type=int, nargs="+", default=list(DEFAULT_PP_SIZES), help="pipeline parallel sizes (default 1)")
    p.add_argument("--dp-list", type=int, nargs="+", default=list(DEFAULT_DP_SIZES), help="MoE models: attention data-parallel sizes (default 1)")
    p.add_argument("--moe-tp-list", type=int, nargs="+", default=list(DEFAULT_MOE_TP_SIZES), help="MoE models: MoE tensor parallel sizes (default 1)")
    p.add_argument("--moe-ep-list", type=int, nargs="+", default=list(DEFAULT_MOE_EP_SIZES),
                   help="MoE models: MoE expert parallel sizes (default 1 2 4 8); a layout needs tp*dp = moe_tp*moe_ep")  # fmt: skip
    p.add_argument("--total-gpus", type=int, default=DEFAULT_TOTAL_GPUS, help="GPUs per worker (agg) / per replica (disagg) at most (default 8)")
    p.add_argument("--max-batch-size", type=int, default=DEFAULT_MAX_BATCH_SIZE, help="agg: largest batch (default 512)")
    p.add_argument("--ctx-stride", type=int, default=DEFAULT_CTX_STRIDE, help="agg: small prefill-budget stride (default 512)")
    p.add_argument("--enable-chunked-prefill", action="store_true", help="agg: budgets need not be multiples of the prompt")
    p.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, help="agg: best rows per layout and target (0: all; default 10)")
    p.add_argument("--decode-system", default=None, help="disagg: decode workers' system (default --system)")
    p.add_argument("--prefill-tp-list", type=int, nargs="+", default=None, help="disagg: prefill TP sizes (default --tp-list)")
    p.add_argument("--decode-tp-list", type=int, nargs="+", default=None, help="disagg: decode TP sizes (default --tp-list)")
    p.add_argument("--prefill-max-num-tokens", type=int, default=DEFAULT_PREFILL_MAX_NUM_TOKENS, help="disagg: prompt tokens per prefill batch (default 16384)")
    p.add_argument("--decode-max-batch-size", type=int, default=DEFAULT_DECODE_MAX_NUM_TOKENS, help="disagg: largest decode batch (default 512)")
    p.add_argument("--max-prefill-workers", type=int, default=32, help="disagg: prefill replicas at most (default 32)")
    p.add_argument("--max-decode-workers", type=int, default=32, help="disagg: decode replicas at most (default 32)")
    p.add_argument("--top-n", type=int, default=DEFAULT_TOP_N, help="disagg: best rows per target (default 5)")
    p.add_argument("--autoscale", action="store_true",
                   help="disagg: pick prefill and decode engines independently, one worker each, at --ttft and the largest --tpot")  # fmt: skip
    p.add_argument("--semantics", choices=[s.value for s in Semantics], default=Semantics.UNCACHED.value)
    add_pricer_arg(p)
    add_long_context_arg(p)
    p.add_argument("--refined-sla", action="store_true", help="gate and reprice candidates by the closed-loop replay")
    p.add_argument("--replay-pricing", choices=PRICINGS, default=ROW, help="closed-loop pass pricing for --refined-sla (default row)")
    p.add_argument("--show", type=int, default=5, help="best configurations printed (default 5)")
    p.add_argument("--out", default=None, help="write the full table here (.csv or .parquet)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto", help="progress bar on stderr (auto: when a terminal)")


def deployment(args: argparse.Namespace, system: str | None = None) -> Deployment:
    """The swept model on a system; parallel sizes are filled in per layout."""
    quant = QuantOverrides(**{k: getattr(args, f"{k}_quant_mode") for k in ("gemm", "moe", "kvcache", "fmha", "comm")})
    return Deployment(args.model_path, system or args.system, args.backend, args.backend_version, nextn=args.nextn, quant=quant)


def table_path(out: str | None) -> Path | None:
    """--out checked before any pricing."""
    if out is None:
        return None
    path = Path(out)
    if path.suffix.lower() not in TABLE_WRITERS:
        raise InvalidInputError(f"--out must end in {' or '.join(TABLE_WRITERS)}, got {out!r}")
    require_writable(path, "--out")
    return path


class ProgressBar:
    """A sweep's report callback: keeps every row computed so far and draws a bar on stderr."""

    def __init__(self, visible: bool):
        self.visible = visible
        self.rows: list[dict] = []

    def __call__(self, rows: list, done: int, total: int) -> None:
        self.rows += rows
        if self.visible:
            filled = round(BAR_WIDTH * done / total)
            print(f"\rsweep [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}, {len(self.rows)} rows",
                  end="" if done < total else "\n", file=sys.stderr, flush=True)  # fmt: skip


def check_stacks(base: Deployment, decode_system: str | None) -> None:
    """The systems, backend version and quant modes every layout shares, checked once before the
    search: a bad one is one error line, not a skipped-layout warning per layout first."""
    check_overrides(base.quant)
    for system in dict.fromkeys((base.system, decode_system or base.system)):
        resolve_version(system, base.backend, base.version)


def run_sweep(args: argparse.Namespace, report: ProgressBar):
    """The SweepResult of the command line."""
    semantics = Semantics.parse(args.semantics)
    workload = Workload(args.isl, args.osl, args.prefix, nextn_accepted(args))
    sla = Sla(args.ttft, tuple(args.tpot), args.request_latency)
    replay = ReplayOptions(pricing=args.replay_pricing, pricer=args.pricer) if args.refined_sla else None
    base = deployment(args)
    check_stacks(base, args.decode_system)
    for pp in args.pp_list:
        check_fits_model(base.model, pp, args.isl + args.osl, args.allow_long_context)
    moe = MoeSizes(args.dp_list, args.moe_tp_list, args.moe_ep_list)
    if args.mode == "agg":
        layouts = sweep_layouts(base, args.tp_list, args.pp_list, args.total_gpus, moe)
        options = AggOptions(args.max_batch_size, args.ctx_stride, args.enable_chunked_prefill, args.top_k)
        return sweep_agg(layouts, workload, sla, options, semantics, args.pricer, report, refined=replay)
    prefill = sweep_layouts(base, args.prefill_tp_list or args.tp_list, args.pp_list, args.total_gpus, moe)
    decode = sweep_layouts(deployment(args, args.decode_system), args.decode_tp_list or args.tp_list, args.pp_list, args.total_gpus, moe)
    limits = WorkerLimits(
        prefill_workers=tuple(range(1, args.max_prefill_workers + 1)), decode_workers=tuple(range(1, args.max_decode_workers + 1)),
        total_gpus=frozenset(range(1, args.total_gpus + 1)), same_tp=base.backend is Backend.SGLANG,
    )  # fmt: skip
    options = DisaggOptions(args.prefill_max_num_tokens, args.decode_max_batch_size, limits, top_n=args.top_n, autoscale=args.autoscale)
    return sweep_disagg(prefill, decode, workload, sla, options, semantics, args.pricer, report, refined=replay)


def render_best(best: pd.DataFrame, mode: str, count: int) -> str:
    """The best configurations as a fixed-width table."""
    if best.empty:
        return "no configuration meets the targets"
    shown = best[list(AGG_SHOWN if mode == "agg" else DISAGG_SHOWN)].head(count)
    return shown.to_string(index=False, float_format=lambda v: f"{v:.3f}")


def run(args: argparse.Namespace) -> int:
    require_positive("show", args.show)
    path = table_path(args.out)
    report = ProgressBar(args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty()))
    try:
        result = run_sweep(args, report)
    except (KeyboardInterrupt, SystemError) as exc:
        if path is not None and is_interrupt(exc):
            atomic_to_table(pd.DataFrame(report.rows, columns=list(AGG_COLUMNS if args.mode == "agg" else DISAGG_COLUMNS)), path)
            print(f"\npartial table ({len(report.rows)} rows) written to {path}", file=sys.stderr)
        raise
    print(render_best(result.best, args.mode, args.show))
    if path is not None:
        atomic_to_table(result.table, path)
        print(f"full table ({len(result.table)} rows) written to {path}", file=sys.stderr)
    return 0
