"""Sweep parallel layouts for the best configurations under latency targets (agg or disagg).

--semantics legacy reproduces aiconfigurator 0.12.0's sweeps (3-decimal rows); uncached (the
default) counts only uncached prompt tokens against the prefill budgets. Prints one ranking per
target (each --tpot, or the --request-latency), best tokens/s/gpu first, with replicas and total
GPUs counted within --total-gpus; --json prints the rankings as JSON; --out writes the full table
of evaluated operating points (.csv or .parquet) with a `target` column. --refined-sla gates and
reprices candidates by the closed-loop replay, and its rankings' figures are labelled closed-loop.
Ctrl-C writes the rows computed so far. The Python API: estimator.sweep(**flags).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from estimator.api import SWEEP, ExitStatus, SweepReport, sweep_with
from estimator.api.status import describe
from estimator.api.sweeping import CLOSED_LOOP_SUFFIX, REPLAYED, Ranking, miss_line, partial_table
from estimator.cli.common import printable, register_command
from estimator.deployment import require_positive
from estimator.disagg import DISAGG_COLUMNS
from estimator.errors import InvalidInputError, is_interrupt
from estimator.io import TABLE_WRITERS, atomic_to_table, require_writable
from estimator.scheduler import AGG_COLUMNS

EXAMPLE = SWEEP.example
EXIT_STATUS = describe(ExitStatus.FOUND, ExitStatus.BAD_INPUT, ExitStatus.NOTHING_MEETS_TARGETS, ExitStatus.OUT_OF_MEMORY,
                       ExitStatus.INTERRUPTED)  # fmt: skip
FIGURES = {"ttft": "ms", "tpot": "ms", "tokens/s/gpu": "", "tokens/s/user": "", "seq/s": ""}  # printed figure -> unit
AGG_SHOWN = ("parallel", "replicas", "total_gpus", "bs", "ctx_tokens", "concurrency", *FIGURES, "memory")
DISAGG_SHOWN = ("(p)parallel", "(p)bs", "(p)workers", "(d)parallel", "(d)bs", "(d)workers", "replicas", "total_gpus", "concurrency", *FIGURES)
UNITS = FIGURES | {"memory": "GiB"}
BAR_WIDTH = 30
NO_PAIR_FORMED = ("no configuration meets the targets: no prefill and decode worker pair passed the targets' gates "
                  "(prefill workers by TTFT, decode workers by TPOT), so none is the closest miss")  # fmt: skip


def register(p: argparse.ArgumentParser) -> None:
    output = register_command(p, SWEEP)
    output.add_argument("--show", type=int, default=5, help="best configurations printed per target (default: 5)")
    output.add_argument("--json", action="store_true", help="print the rankings (every best row, unrounded) as one JSON object")
    output.add_argument("--out", default=None, help="write the full table of evaluated points here (.csv or .parquet)")
    output.add_argument("--progress", choices=("auto", "always", "never"), default="auto", help="progress bar on stderr (auto: when a terminal)")
    output.add_argument("--strict", action="store_true", help="exit 4 when no evaluated point fits in GPU memory (default: 3)")


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


def shown_columns(mode: str, closed_loop: bool) -> dict[str, str]:
    """Printed column -> header, with its unit in parentheses; a refined sweep's figures are the
    closed-loop ones (suffixed), and whether the replay priced each row is shown."""
    suffix = CLOSED_LOOP_SUFFIX if closed_loop else ""
    shown = {}
    for c in AGG_SHOWN if mode == "agg" else DISAGG_SHOWN:
        column = c + suffix if c in FIGURES else c
        shown[column] = column + (f"({UNITS[c]})" if UNITS.get(c) else "")
    return shown | ({REPLAYED: REPLAYED} if closed_loop else {})


def render_ranking(ranking: Ranking, mode: str, closed_loop: bool, count: int) -> str:
    """One target's ranking: a heading and its best rows."""
    if ranking.frame.empty:
        return f"{ranking.target.title}: no configuration meets it"
    figures = "closed-loop figures, " if closed_loop else ""
    head = f"{ranking.target.title} ({mode}, {figures}best {min(count, len(ranking.frame))} of {len(ranking.frame)} by tokens/s/gpu)"
    return head + "\n" + printable(ranking.frame, shown_columns(mode, closed_loop), count)


def render(report: SweepReport, count: int) -> str:
    """Every ranking, then, when nothing meets a target, why: the closest miss or no point fitting in memory."""
    blocks = [render_ranking(r, report.mode, report.closed_loop, count) for r in report.rankings]
    if report.status is ExitStatus.OUT_OF_MEMORY:
        blocks.append("no configuration meets the targets: no evaluated point fits in GPU memory")
    elif report.status is ExitStatus.NOTHING_MEETS_TARGETS and report.closest_miss is None:
        blocks.append(NO_PAIR_FORMED)
    elif report.status is ExitStatus.NOTHING_MEETS_TARGETS:
        miss = report.closest_miss
        blocks.append(f"no configuration meets the targets; {miss_line(miss)}\n" + printable(pd.DataFrame([miss]), shown_columns(report.mode, False), 1))
    return "\n\n".join(blocks)


def run(ns: argparse.Namespace) -> int:
    require_positive("show", ns.show)
    path = table_path(ns.out)
    args = SWEEP.bind(SWEEP.given(ns))
    progress = ProgressBar(ns.progress == "always" or (ns.progress == "auto" and sys.stderr.isatty()))
    try:
        report = sweep_with(args, progress)
    except (KeyboardInterrupt, SystemError) as exc:
        if path is not None and is_interrupt(exc):
            columns = AGG_COLUMNS if args.mode == "agg" else DISAGG_COLUMNS
            atomic_to_table(partial_table(args, pd.DataFrame(progress.rows, columns=list(columns))), path)
            print(f"\npartial table ({len(progress.rows)} rows) written to {path}", file=sys.stderr)
        raise
    print(json.dumps(report.to_json()) if ns.json else render(report, ns.show))
    if path is not None:
        atomic_to_table(report.table, path)
        print(f"full table ({len(report.table)} rows) written to {path}", file=sys.stderr)
    if report.status is ExitStatus.OUT_OF_MEMORY and not ns.strict:
        return ExitStatus.NOTHING_MEETS_TARGETS
    return report.status
