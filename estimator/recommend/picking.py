"""Picking within a GPU budget: replicas, budget-wide tokens/s/gpu, the Pareto frontier and the top-N.

Mirrors aiconfigurator 0.12.0 ``sdk/picking.py`` ``pick_default``, ``sdk/pareto_analysis.py``
``get_pareto_front`` / ``_get_best_configs_under_constraint``, ``cli/utils.py`` ``_merge_into_top_n`` and
the top table of ``cli/report_and_save.py`` ``_plot_worker_setup_table``, orderings included (the same
pandas sorts):

* a configuration of g GPUs runs ``replicas = N // g`` times in a budget of N GPUs; its budget-wide
  throughput per GPU is ``tokens/s/gpu * replicas * g / N`` (idle GPUs count);
* the frontier keeps the rows no other row beats on both tokens/s/user and budget-wide tokens/s/gpu
  (request latency, minimised, instead of tokens/s/user under a request-latency target);
* the top-N keeps the best row per layout (``parallel``; disagg: the decode layout) among the rows
  meeting the TPOT (or request-latency) target, best first; when none meets it, the closest rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

CLUSTER = "tokens/s/gpu_cluster"  # budget-wide tokens/s per GPU, idle GPUs included
REPLICAS = "replicas"  # copies of the configuration the budget holds (>= 1)
USED = "total_gpus_used"  # replicas x GPUs per replica


@dataclass(frozen=True)
class Constraint:
    """What the top-N must meet: a TPOT target, or a request-latency target when one is given."""

    tpot: float  # ms per output token (> 0)
    request_latency: float | None = None  # ms (> 0); replaces the TPOT target

    @property
    def column(self) -> str:
        return "request_latency" if self.request_latency is not None else "tpot"

    @property
    def target(self) -> float:
        return self.request_latency if self.request_latency is not None else self.tpot

    @property
    def x_axis(self) -> str:
        """The frontier's x axis: tokens/s/user (maximised) or request latency (minimised)."""
        return "request_latency" if self.request_latency is not None else "tokens/s/user"


def with_budget(frame: pd.DataFrame, total_gpus: int) -> pd.DataFrame:
    """The rows with budget-wide tokens/s/gpu, replicas and the GPUs those replicas use."""
    out = frame.copy()
    gpus = out["num_total_gpus"]
    out[CLUSTER] = out["tokens/s/gpu"] * (total_gpus // gpus) * gpus / total_gpus
    out[REPLICAS] = (total_gpus // gpus).astype(np.int64)
    out[USED] = out[REPLICAS] * gpus
    return out


def pareto_front(frame: pd.DataFrame, x: str, y: str = CLUSTER, maximize_x: bool = True) -> pd.DataFrame:
    """The rows no other row beats on both x and y (y maximised), sorted by x; rows with a
    non-finite x or y are left out."""
    if frame.empty:
        return frame.iloc[0:0].copy()
    finite = frame[[x, y]].replace([np.inf, -np.inf], np.nan).notna().all(axis=1)
    rows = frame.loc[finite].sort_values(by=x)
    costs = rows[[x, y]].to_numpy(dtype=np.float64)
    if not maximize_x:
        costs[:, 0] = -costs[:, 0]
    kept = np.ones(len(costs), dtype=bool)
    for i, c in enumerate(costs):
        if kept[i]:
            kept[kept] = np.any(costs[kept] > c, axis=1)
            kept[i] = True
    return rows[kept].sort_values(by=x).reset_index(drop=True)


def best_under(frame: pd.DataFrame, constraint: Constraint, group: str, top_n: int) -> pd.DataFrame:
    """The best row per `group` value among the rows meeting the constraint, best first (budget-wide
    tokens/s/gpu, then tokens/s/user; request-latency targets: lower latency), top_n of them; when
    no row meets it, the closest rows (smallest constraint value first)."""
    if frame.empty:
        return frame
    column, target = constraint.column, constraint.target
    meeting = frame[frame[column] <= target]
    exceeded = meeting.empty
    candidates = (frame if exceeded else meeting).replace([np.inf, -np.inf], np.nan)
    candidates = candidates.loc[candidates[[column, CLUSTER]].notna().all(axis=1)]
    if candidates.empty:
        return candidates
    candidates = candidates.loc[candidates.groupby(group)[CLUSTER].idxmax().dropna()]
    if exceeded:
        order, ascending = [column], [True]
    elif constraint.request_latency is not None:
        order, ascending = [CLUSTER, "request_latency"], [False, True]
    else:
        order, ascending = [CLUSTER, "tokens/s/user"], [False, False]
    return candidates.sort_values(by=order, ascending=ascending).head(top_n).reset_index(drop=True)


def merge_backends(tops: Sequence[pd.DataFrame], top_n: int) -> pd.DataFrame:
    """Several backends' top rows (each with a backend column) as one top-N by budget-wide tokens/s/gpu."""
    kept = [t for t in tops if not t.empty]
    if not kept:
        return pd.DataFrame()
    return pd.concat(kept, ignore_index=True).sort_values(CLUSTER, ascending=False).head(top_n)


def meeting_targets(top: pd.DataFrame, constraint: Constraint, top_n: int) -> pd.DataFrame:
    """The rows of a top-N that meet the constraint, best first: the table the user is shown."""
    if top.empty:
        return top
    shown = top[top[constraint.column] <= constraint.target]
    return shown.sort_values(by=CLUSTER, ascending=False).head(top_n).reset_index(drop=True)


def verdict(best: dict[str, float]) -> str:
    """One line comparing the modes' best budget-wide tokens/s/gpu (modes with no configuration
    meeting the targets are absent from `best`), as AIConfigurator words it."""
    if not best:
        return "no configuration meets the targets"
    if len(best) == 1:
        ((mode, value),) = best.items()
        return f"only {mode} meets the targets ({value:.2f} tokens/s/gpu)"
    (first, a), (second, b) = best.items()
    if a == b:
        return f"{first} and {second} tied"
    (winner, w), (loser, lo) = ((first, a), (second, b)) if a >= b else ((second, b), (first, a))
    ratio = float("inf") if lo == 0 else w / lo
    return f"{winner} {ratio:.2f}x better than {loser}"
