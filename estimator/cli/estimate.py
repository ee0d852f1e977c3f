"""Estimate one operating point: agg (in-flight batching), disagg or a static batch, like `aiconfigurator cli estimate`.

--semantics legacy reproduces aiconfigurator 0.12.0; uncached (the default) counts only uncached
prompt tokens against the --ctx-tokens budget. --json prints the full unrounded result row;
--detail time adds the scheduling line and per-step per-op tables with SOL (roofline) columns.
--estimate-mode disagg prices --prefill-num-workers prefill workers (static batches of
--prefill-batch-size prompts) and --decode-num-workers decode workers; each --prefill-* /
--decode-* size and memory setting defaults to the shared one (the reference's short forms
--p-tp, --d-bs, --p-workers, ... are accepted).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from estimator.cli.common import add_deployment_args, check_fits_model, deployment_from_args
from estimator.deployment import Deployment
from estimator.disagg import DisaggPoint, DisaggResult, run_disagg
from estimator.errors import InvalidInputError
from estimator.scheduler import AggPoint, AggResult, StaticMode, StaticPoint, run_agg, run_static
from estimator.steps import DEFAULT_STRIDE, Semantics, StepCost

MODES = ("agg", "disagg", *(m.value for m in StaticMode))
ROLE_SIZES = {"tp": "tp", "pp": "pp", "attention_dp": "dp", "moe_tp": "etp", "moe_ep": "ep"}  # per-role size -> short flag (--p-tp, --d-ep)
BAR_WIDTH = 12


def register(p: argparse.ArgumentParser) -> None:
    add_deployment_args(p)
    p.add_argument("--estimate-mode", "--mode", dest="mode", choices=MODES, default="agg")
    p.add_argument("--isl", type=int, default=1024, help="input tokens per request (default 1024)")
    p.add_argument("--osl", type=int, default=1024, help="output tokens per request (default 1024)")
    p.add_argument("--prefix", type=int, default=0, help="cached prefix tokens per request, part of --isl")
    p.add_argument("--batch-size", "--bs", type=int, default=128, help="max concurrent requests (default 128)")
    p.add_argument(
        "--ctx-tokens", type=int, default=None, help="agg prefill budget per step, tokens (default: isl for legacy, max(isl - prefix, 1) for uncached)"
    )
    p.add_argument("--nextn-accepted", type=float, default=None, help="accepted draft tokens per decode step")
    p.add_argument("--stride", type=int, default=DEFAULT_STRIDE, help="static decode sampling stride")
    p.add_argument("--free-gpu-memory-fraction", type=float, default=None, help="KV budget fraction (default: backend's)")
    p.add_argument("--max-seq-len", type=int, default=None,
                   help="KV slot per request, tokens (agg: TRT-LLM's max_seq_len; static and disagg: every backend; default isl + osl)")  # fmt: skip
    p.add_argument("--semantics", choices=[s.value for s in Semantics], default=Semantics.UNCACHED.value)
    p.add_argument("--detail", choices=("time",), default=None, help="time: scheduling and per-op tables")
    p.add_argument("--json", action="store_true", help="print the full unrounded result row as one JSON object")
    p.add_argument(
        "--closed-loop",
        choices=("steady", "benchmark"),
        nargs="?",
        const="steady",
        default=None,
        help="agg/disagg: also replay the point closed-loop (engine-priced passes; protocol steady by "
        "default) and print the refined figures beside the closed-form ones",
    )
    for role in ("prefill", "decode"):
        short = role[0]
        for size, alias in ROLE_SIZES.items():
            p.add_argument(f"--{role}-{size.replace('_', '-')}-size", f"--{short}-{alias}", type=int, default=None,
                           help=f"disagg: {role} {size} size (default: shared)")  # fmt: skip
        p.add_argument(f"--{role}-batch-size", f"--{short}-bs", type=int, default=None, help=f"disagg: {role} batch size (required)")
        p.add_argument(f"--{role}-num-workers", f"--{short}-workers", type=int, default=None, help=f"disagg: {role} workers (required)")
        p.add_argument(f"--{role}-free-gpu-memory-fraction", type=float, default=None,
                       help=f"disagg: {role} workers' KV budget fraction (default --free-gpu-memory-fraction)")  # fmt: skip
        p.add_argument(f"--{role}-max-seq-len", type=int, default=None, help=f"disagg: {role} workers' KV slot per request (default --max-seq-len)")
    p.add_argument("--decode-system", default=None, help="disagg: decode workers' system (default --system)")


def nextn_accepted(args: argparse.Namespace) -> float:
    """--nextn-accepted, required (and bounded by --nextn) when MTP is on; ignored otherwise."""
    if args.nextn <= 0:
        return 0.0
    if args.nextn_accepted is None:
        raise InvalidInputError(f"nextn={args.nextn} requires --nextn-accepted (average accepted draft tokens per step, 0 <= nextn_accepted <= nextn)")
    return args.nextn_accepted


def estimate(args: argparse.Namespace, pricer: str):
    """The AggResult, DisaggResult or StaticResult of the command line, priced by `pricer`."""
    deployment = deployment_from_args(args)
    if args.mode == "disagg":
        prefill, decode = role_deployment(args, deployment, "prefill"), role_deployment(args, deployment, "decode")
        for worker in (prefill, decode):
            check_fits_model(worker.model, worker.pp, args.isl + args.osl, args.allow_long_context)
        return run_disagg(prefill, decode, disagg_point(args), args.semantics, pricer)
    check_fits_model(deployment.model, deployment.pp, args.isl + args.osl, args.allow_long_context)
    if args.mode == "agg":
        return run_agg(deployment, agg_point(args), args.semantics, pricer)
    point = StaticPoint(
        isl=args.isl, osl=args.osl, batch_size=args.batch_size, prefix=args.prefix,
        nextn_accepted=nextn_accepted(args), stride=args.stride, free_gpu_memory_fraction=args.free_gpu_memory_fraction,
        max_seq_len=args.max_seq_len,
    )  # fmt: skip
    return run_static(deployment, point, args.mode, pricer)


def agg_point(args: argparse.Namespace) -> AggPoint:
    """The agg operating point of the command line."""
    return AggPoint(
        isl=args.isl, osl=args.osl, batch_size=args.batch_size, ctx_tokens=args.ctx_tokens, prefix=args.prefix,
        nextn_accepted=nextn_accepted(args), free_gpu_memory_fraction=args.free_gpu_memory_fraction, max_seq_len=args.max_seq_len,
    )  # fmt: skip


def role_deployment(args: argparse.Namespace, shared: Deployment, role: str) -> Deployment:
    """A disagg worker's deployment: the shared one with the role's sizes (and decode system)."""
    sizes = {size: getattr(args, f"{role}_{size}_size") for size in ROLE_SIZES}
    system = args.decode_system if role == "decode" and args.decode_system else shared.system
    return dataclasses.replace(shared, system=system, **{k: v for k, v in sizes.items() if v is not None})


def disagg_point(args: argparse.Namespace) -> DisaggPoint:
    """The disagg worker shapes of the command line (the four of them are required)."""
    for name in ("prefill_batch_size", "prefill_num_workers", "decode_batch_size", "decode_num_workers"):
        if getattr(args, name) is None:
            raise InvalidInputError(f"--{name.replace('_', '-')} is required for --estimate-mode disagg")
    return DisaggPoint(
        isl=args.isl, osl=args.osl, prefill_batch_size=args.prefill_batch_size, prefill_workers=args.prefill_num_workers,
        decode_batch_size=args.decode_batch_size, decode_workers=args.decode_num_workers, prefix=args.prefix,
        nextn_accepted=nextn_accepted(args), stride=args.stride, free_gpu_memory_fraction=args.free_gpu_memory_fraction,
        prefill_free_gpu_memory_fraction=args.prefill_free_gpu_memory_fraction,
        decode_free_gpu_memory_fraction=args.decode_free_gpu_memory_fraction, max_seq_len=args.max_seq_len,
        prefill_max_seq_len=args.prefill_max_seq_len, decode_max_seq_len=args.decode_max_seq_len,
    )  # fmt: skip


def step_sections(result) -> list[tuple[str, StepCost]]:
    """(title, step) per priced step of a result, in schedule order."""
    if isinstance(result, AggResult):
        mix = result.mix_steps
        titles = ["Mix Step"] if len(mix) == 1 else ["Mix Step 1 (decode-free)", "Mix Step 2 (final partial)"]
        sections = list(zip(titles, mix))
        return sections + ([("Gen-Only Step", result.genonly_step)] if result.genonly_step.ops else [])
    return [(t, s) for t, s in (("Context phase", result.context), ("Generation phase", result.generation)) if s.ops]


THROUGHPUT = (("tokens/s", "tokens/s", ""), ("tokens/s/gpu", "tokens/s/gpu", ""), ("tokens/s/user", "tokens/s/user", ""),
              ("seq/s", "seq/s", ""), ("Concurrency", "concurrency", ""))  # fmt: skip
LATENCY = (("TTFT", "ttft", " ms"), ("TPOT", "tpot", " ms"), ("Request Latency", "request_latency", " ms"))
OOM = (("Out of memory", "oom", ""),)


def metric_lines(row: dict, metrics) -> list[str]:
    """One aligned line per (label, column, unit)."""
    return [f"  {label + ':':<18}{row[key] if isinstance(row[key], int) else f'{row[key]:.3f}'}{unit}" for label, key, unit in metrics]


def render_disagg_summary(row: dict) -> str:
    """A short human-readable summary of a disagg row."""
    lines = [f"{row['model']} disagg: {row['(p)workers']} x prefill {row['(p)parallel']} bs {row['(p)bs']} ({row['(p)system']}), "
             f"{row['(d)workers']} x decode {row['(d)parallel']} bs {row['(d)bs']} ({row['(d)system']}), {row['(p)backend']} {row['(p)version']}",
             f"  isl {row['isl']}  osl {row['osl']}  prefix {row['prefix']}  GPUs {row['num_total_gpus']}"]  # fmt: skip
    memory = (("Prefill memory", "(p)memory", " GiB"), ("Decode memory", "(d)memory", " GiB"))
    return "\n".join(lines + metric_lines(row, LATENCY + THROUGHPUT + memory + OOM))


def render_summary(row: dict) -> str:
    """A short human-readable summary of a result row."""
    lines = [f"{row['model']} on {row['system']} ({row['backend']} {row['version']}), {row['parallel']}"]
    lines.append(
        f"  isl {row['isl']}  osl {row['osl']}  prefix {row['prefix']}  batch {row['bs']}"
        + (f"  ctx_tokens {row['ctx_tokens']}" if "ctx_tokens" in row else "")
    )
    return "\n".join(lines + metric_lines(row, LATENCY + THROUGHPUT + (("Memory (GPU)", "memory", " GiB"),) + OOM))


def render_time_detail(result, sol_result) -> str:
    """Latency summary vs SOL, the scheduling line (agg) and one per-op table per priced step."""
    lines = ["Latency Summary", f"  {'metric':<16s} {'latency':>13s}  {'SOL':>13s}  {'SOL%':>7s}"]
    for label, key in (("ttft", "ttft"), ("tpot", "tpot"), ("request latency", "request_latency")):
        value, sol = float(result.row[key]), float(sol_result.row[key])
        if value > 0.0 or sol > 0.0:
            lines.append(f"  {label:<16s} {value:>10.3f} ms  {sol:>10.3f} ms  {_pct(sol, value):>6.1f}%")
    if "num_mix_steps" in result.row:
        lines += ["", f"Scheduling: {result.row['num_mix_steps']:.0f} mix steps + {result.row['num_genonly_steps']:.0f} gen-only steps"]
    for (title, step), (_, sol_step) in zip(step_sections(result), step_sections(sol_result)):
        lines += ["", *render_step(title, step, sol_step)]
    return "\n".join(lines)


def render_step(title: str, step: StepCost, sol_step: StepCost) -> list[str]:
    """One step's table: op, latency, SOL, SOL %, share of the step (bar and %), source."""
    total = sum(op.latency_ms for op in step.ops)
    sol_total = sum(op.latency_ms for op in sol_step.ops)
    sol_of = {op.name: op.latency_ms for op in sol_step.ops}
    shown = [op for op in step.ops if op.latency_ms > 0.0]
    head = f"{title} (total = {total:.3f} ms, SOL = {sol_total:.3f} ms, SOL% = {_pct(sol_total, total):.1f}%)"
    if not shown:
        return [head, "  <no measurable per-op data>"]
    width = max(len(op.name) for op in shown)
    lines = [head, f"  {'op':<{width}s}  {'latency':>13s}  {'SOL':>13s}  {'SOL%':>7s}  {'share (%)':<{BAR_WIDTH + 8}s}  source"]
    for op in shown:
        share = op.latency_ms / total
        bar = "█" * round(share * BAR_WIDTH) + "░" * (BAR_WIDTH - round(share * BAR_WIDTH))
        sol = sol_of.get(op.name, 0.0)
        lines.append(
            f"  {op.name:<{width}s}  {op.latency_ms:>10.3f} ms  {sol:>10.3f} ms  {_pct(sol, op.latency_ms):>6.1f}%"
            f"  {bar}  {share * 100.0:>5.1f}%  [{op.source}]"
        )
    return lines


def _pct(part: float, whole: float) -> float:
    return part / whole * 100.0 if whole > 0.0 else 0.0


def out_of_memory(result) -> bool:
    """The point does not fit: the deployment (or a disagg worker) OOMs or its batch exceeds the KV cache."""
    return result.oom if isinstance(result, DisaggResult) else result.memory.oom or result.memory.kv_oom


def warnings(result, batch_size: int) -> list[str]:
    if isinstance(result, DisaggResult):
        return [f"warning: OOM: the {w.role.value} worker ({w.row['memory']:.2f} GiB per GPU, batch {w.row['bs']}) does not fit"
                for w in (result.prefill, result.decode) if not w.fits]  # fmt: skip
    if result.memory.oom:
        return [f"warning: OOM: {result.row['memory']:.2f} GiB per GPU does not fit in GPU memory"]
    if result.memory.kv_oom:
        return [f"warning: batch_size ({batch_size}) exceeds the estimated KV cache capacity"]
    return []


def closed_loop_figures(args: argparse.Namespace, result) -> dict:
    """The closed-loop replay of the estimated point (engine-priced passes, the backend's default
    settings, args.closed_loop protocol): figures in ms and requests/s, then the protocol and the
    settings replayed."""
    from estimator.closedloop import ENGINE, agg_run, disagg_run, record, replay_run

    if args.mode == "agg":
        run = agg_run(deployment_from_args(args), agg_point(args))
    elif args.mode == "disagg":
        shared = deployment_from_args(args)
        run = disagg_run(role_deployment(args, shared, "prefill"), role_deployment(args, shared, "decode"), disagg_point(args))
    else:
        raise InvalidInputError(f"--closed-loop applies to agg and disagg, not --estimate-mode {args.mode}")
    replayed = replay_run(run, None, args.closed_loop, args.pricer)
    return record(replayed, run.osl, ENGINE, replayed.protocol, replayed.settings)


def render_closed_loop(row: dict, refined: dict) -> str:
    """Closed-form vs closed-loop figures side by side (ms)."""
    lines = [
        f"Closed loop ({refined['protocol']} protocol, {refined['pricing']}-priced passes, budget {refined.get('step_token_budget')}, "
        f"chunked {refined.get('chunked_prefill')})",
        f"  {'metric':<16} {'closed form':>14} {'closed loop':>14}",
    ]
    for name in ("ttft", "tpot", "request_latency"):
        lines.append(f"  {name:<16} {row[name]:>11.3f} ms {refined[name]:>11.3f} ms")
    lines.append(f"  {'ttft p50 / p99':<16} {'':>14} {refined['ttft_p50']:>7.1f} / {refined['ttft_p99']:.1f} ms")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Everything is computed before anything is printed: a bad input is its error line alone."""
    result = estimate(args, args.pricer)
    refined = closed_loop_figures(args, result) if args.closed_loop else None
    detail = render_time_detail(result, estimate(args, "sol")) if args.detail == "time" and not args.json else None
    for line in warnings(result, args.batch_size):
        print(line, file=sys.stderr)
    row = dict(result.row) | {"oom": out_of_memory(result)}
    if args.json:
        print(json.dumps(row | ({"closed_loop": refined} if refined else {})))
        return 0
    print((render_disagg_summary if isinstance(result, DisaggResult) else render_summary)(row))
    if refined:
        print()
        print(render_closed_loop(row, refined))
    if detail:
        print()
        print(detail)
    return 0
