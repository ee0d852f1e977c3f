"""Recommend a deployment within a GPU budget: agg against disagg (and every backend with --backend auto).

Searches the layouts AIConfigurator 0.12.0's `cli default` searches, counts replicas as it does (a
configuration of g GPUs runs N // g times in --total-gpus N) and prints each mode's top configurations,
a verdict line and the Pareto frontier. --semantics legacy reproduces `aiconfigurator cli default`'s top
rows; --refined-sla lets the closed-loop replay rank them; --save-dir writes best_configs.csv,
pareto.csv, frontier.html and per configuration its launch files, bench.sh and deployment.yaml.
The Python API: estimator.recommend(**flags).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from estimator.api import RECOMMEND, ExitStatus, recommend_with
from estimator.api.status import describe
from estimator.cli.common import register_command
from estimator.io import require_writable
from estimator.recommend.output import render_text

EXAMPLE = RECOMMEND.example
EXIT_STATUS = describe(ExitStatus.FOUND, ExitStatus.BAD_INPUT, ExitStatus.NOTHING_MEETS_TARGETS, wording={
    ExitStatus.FOUND: "found: a mode has configurations meeting the targets",
    ExitStatus.BAD_INPUT: "bad input (or a budget no searched layout fits in): one error line naming the bad value",
    ExitStatus.NOTHING_MEETS_TARGETS: "no configuration meets the targets: each mode's closest miss is printed",
})  # fmt: skip


def register(p: argparse.ArgumentParser) -> None:
    output = register_command(p, RECOMMEND)
    output.add_argument("--save-dir", default=None, help="write best_configs.csv, pareto.csv, frontier.html and launch files here")
    output.add_argument("--json", action="store_true", help="print the recommendation as JSON")


def run(ns: argparse.Namespace) -> int:
    folder = Path(ns.save_dir) if ns.save_dir else None
    if folder is not None:
        require_writable(folder / "best_configs.csv", "--save-dir")
    result = recommend_with(RECOMMEND.bind(RECOMMEND.given(ns)))
    print(json.dumps(result.to_json(), sort_keys=True, indent=1) if ns.json else render_text(result.recommendation))
    if folder is not None:
        written = result.save(folder)
        print(f"wrote {len(written)} files to {folder}", file=sys.stderr)
    return result.status
