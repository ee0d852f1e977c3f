"""Estimate one operating point: agg (in-flight batching), disagg or a static batch, like `aiconfigurator cli estimate`.

--semantics legacy reproduces aiconfigurator 0.12.0; uncached (the default) counts only uncached
prompt tokens against the --ctx-tokens budget. --json prints the full unrounded result row;
--detail time adds the scheduling line and per-step per-op tables with SOL (roofline) columns.
--estimate-mode disagg prices --prefill-num-workers prefill workers (static batches of
--prefill-batch-size prompts) and --decode-num-workers decode workers; each --prefill-* /
--decode-* size and memory setting defaults to the shared one (the reference's short forms
--p-tp, --d-bs, --p-workers, ... are accepted). The Python API: estimator.estimate(**flags).
"""

from __future__ import annotations

import argparse
import json
import sys

from estimator.api import ESTIMATE, ExitStatus, estimate_with
from estimator.api.deployments import layout_label
from estimator.api.estimating import price
from estimator.api.status import describe
from estimator.cli.common import register_command
from estimator.closedloop.runs import kv_pool_setting
from estimator.disagg import DisaggResult
from estimator.scheduler import AggResult
from estimator.settings import FIELDS, EngineSettings, system_defaults
from estimator.steps import StepCost

EXAMPLE = ESTIMATE.example
EXIT_STATUS = describe(ExitStatus.FOUND, ExitStatus.BAD_INPUT, ExitStatus.OUT_OF_MEMORY)
BAR_WIDTH = 12


def register(p: argparse.ArgumentParser) -> None:
    output = register_command(p, ESTIMATE)
    output.add_argument("--json", action="store_true", help="print the full unrounded result row as one JSON object")
    output.add_argument("--detail", choices=("time",), default=None, help="time: scheduling and per-op tables")
    output.add_argument("--strict", action="store_true", help="exit 4 when the point is out of memory (default: a warning, exit 0)")


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
    lines = [f"{row['model']} disagg: {row['(p)workers']} x prefill {layout_label(row, '(p)')} bs {row['(p)bs']} ({row['(p)system']}), "
             f"{row['(d)workers']} x decode {layout_label(row, '(d)')} bs {row['(d)bs']} ({row['(d)system']}), {row['(p)backend']} {row['(p)version']}",
             f"  isl {row['isl']}  osl {row['osl']}  prefix {row['prefix']}  GPUs {row['num_total_gpus']}"]  # fmt: skip
    memory = (("Prefill memory", "(p)memory", " GiB"), ("Decode memory", "(d)memory", " GiB"))
    return "\n".join(lines + metric_lines(row, LATENCY + THROUGHPUT + memory + OOM))


def render_summary(row: dict) -> str:
    """A short human-readable summary of a result row."""
    lines = [f"{row['model']} on {row['system']} ({row['backend']} {row['version']}), {layout_label(row)}"]
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
    cap = refined.get("max_num_seqs")
    if cap is not None and cap < min(row["bs"], system_defaults(row["backend"], row["system"], row["version"]).max_num_seqs or row["bs"]):
        pool = kv_pool_setting(EngineSettings(**{k: v for k, v in refined.items() if k in FIELDS}))
        lines.append(f"  running requests capped at {cap} of {row['bs']} per rank by the KV-cache pool ({pool}); the others queue")
    return "\n".join(lines)


def run(ns: argparse.Namespace) -> int:
    """Everything is computed before anything is printed: a bad input is its error line alone."""
    result = estimate_with(ESTIMATE.bind(ESTIMATE.given(ns)))
    detail = render_time_detail(result.priced, price(result.arguments, "sol")) if ns.detail == "time" and not ns.json else None
    for line in result.warnings:
        print(line, file=sys.stderr)
    row, refined = result.row, result.row.get("closed_loop")
    if ns.json:
        print(json.dumps(row))
    else:
        print((render_disagg_summary if isinstance(result.priced, DisaggResult) else render_summary)(row))
        if refined:
            print()
            print(render_closed_loop(row, refined))
        if detail:
            print()
            print(detail)
    return ExitStatus.OUT_OF_MEMORY if ns.strict and result.oom else ExitStatus.FOUND
