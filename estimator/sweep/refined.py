"""Refined-SLA sweeps: candidates judged by the closed-loop replay (closed-loop.md section 4).

Agg: a point must pass the legacy TPOT gate and the solo prefill bound (its own prefill at the
point's chunk size, ``prefill_step_ms * eff / chunk_ref``; the true bound, not the reference's
ceil); a replayed point then passes on its refined TTFT and TPOT, an unreplayable one on its
legacy TTFT. Passing rows are repriced by the replay before ranking.

Disagg: prefill candidates are gated on their raw solo TTFT (factor 1, strict); per decode
category the top combinations are knee-tuned (the largest concurrency up to the matched one
whose replay meets both targets, with the Little's-law fixed point for the decode step), else
the first remaining combination whose replay does not break a target is kept, repriced.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.closedloop import (
    REFINED_COLUMNS,
    ReplayOptions,
    closed_loop_for_disagg_row,
    refine_closed_loop_latency,
    reprice_closed_loop_row,
)
from estimator.disagg.search import Combo, WorkerRow, combo_rank
from estimator.errors import EstimatorError
from estimator.sweep.agg import Accept

KNEE_CANDIDATES = 3  # combinations knee-tuned per decode category
FIXED_POINT_ITERATIONS = 3  # Little's-law decode-step updates at most
FIXED_POINT_TOLERANCE_MS = 0.3  # decode-step change that ends the fixed point
NOT_REPLAYED = "not replayed: fails the legacy TPOT or the solo prefill gate of every target"


def solo_prefill_ms(table: pd.DataFrame) -> np.ndarray:
    """Each agg point's solo prefill: prefill_step_ms * eff / chunk_ref, eff = max(1, isl - prefix),
    chunk_ref = max(1, min(ctx_tokens, eff)) (the replay's C = 1 prefill time)."""
    eff = np.maximum(1, table["isl"].to_numpy(np.int64) - table["prefix"].to_numpy(np.int64))
    chunk = np.maximum(1, np.minimum(table["ctx_tokens"].to_numpy(np.int64), eff))
    return table["prefill_step_ms"].to_numpy(np.float64) * eff / chunk


@dataclass(frozen=True)
class RefinedAgg:
    """An agg sweep table judged by the replay."""

    table: pd.DataFrame  # the sweep table plus REFINED_COLUMNS (NaN where not replayed)
    repriced: pd.DataFrame  # the sweep table with the replay's latency and throughput where replayed
    accept: Accept  # which rows pass a target pair
    replayed: np.ndarray  # per row: the replay priced it (its repriced figures are the replay's)


def refine_agg(table: pd.DataFrame, pairs: Sequence[tuple[float, float]], options: ReplayOptions) -> RefinedAgg:
    """Replay the points that pass the legacy TPOT gate and the solo bound of some target pair."""
    ttft, tpot = table["ttft"].to_numpy(np.float64), table["tpot"].to_numpy(np.float64)
    solo = solo_prefill_ms(table)

    def gated(ttft_target: float, tpot_target: float) -> np.ndarray:
        return (tpot <= tpot_target) & (solo <= ttft_target)

    replayed = np.zeros(len(table), dtype=bool)
    for pair in pairs:
        replayed |= gated(*pair)
    refined = refine_closed_loop_latency(table[replayed], options)
    full = table.copy()
    for column in REFINED_COLUMNS:
        full[column] = refined[column].reindex(table.index, fill_value=math.nan if column != "refine_reason" else NOT_REPLAYED)
    ttft_r, tpot_r = full["ttft_refined"].to_numpy(np.float64), full["tpot_refined"].to_numpy(np.float64)
    priced = ~np.isnan(ttft_r)

    def accept(ttft_target: float, tpot_target: float) -> np.ndarray:
        judged = np.where(priced, (ttft_r <= ttft_target) & (tpot_r <= tpot_target), ttft <= ttft_target)
        return gated(ttft_target, tpot_target) & judged

    return RefinedAgg(full, _repriced(table, priced, options), accept, priced)


def _repriced(table: pd.DataFrame, priced: np.ndarray, options: ReplayOptions) -> pd.DataFrame:
    """The table with replayed rows repriced (the replay memo answers every row again)."""
    rows = table.to_dict("records")
    return pd.DataFrame([reprice_closed_loop_row(r, options) if p else r for r, p in zip(rows, priced)], columns=table.columns)


def ladder_tpot(ladder: Sequence[tuple[float, float]], concurrency: float) -> float:
    """The decode step at a per-worker concurrency, linear between (concurrency, tpot) rungs,
    clamped at both ends; at equal concurrencies the upper rung's step."""
    concurrencies = [c for c, _ in ladder]
    upper = bisect.bisect_right(concurrencies, concurrency)
    if upper == 0:
        return ladder[0][1]
    if upper == len(ladder):
        return ladder[-1][1]
    (c0, t0), (c1, t1) = ladder[upper - 1], ladder[upper]
    return t0 + (t1 - t0) * (concurrency - c0) / (c1 - c0)


Figures = tuple[float, float, float]  # (ttft ms, tpot ms, requests/s) of a replay


class KneeSearch:
    """The refined category pick (a CategoryPick) for one (ttft, tpot) target pair."""

    def __init__(self, ttft_target: float, tpot_target: float, options: ReplayOptions):
        self.ttft_target, self.tpot_target, self.options = ttft_target, tpot_target, options
        self.replayed: list[dict] = []  # every row it returned with the replay's figures

    def __call__(self, combos: list[Combo], decode: Sequence[WorkerRow]) -> dict | None:
        picked = self.pick(combos, decode)
        if picked is not None and not any(picked is c.row for c in combos):
            self.replayed.append(picked)
        return picked

    def pick(self, combos: list[Combo], decode: Sequence[WorkerRow]) -> dict | None:
        """The category's row: the best knee-tuned combination, else the first whose replay meets
        the targets, else an unreplayable one unchanged; None when none qualifies."""
        ladder = sorted((w.row["concurrency"], w.row["tpot"]) for w in decode)
        tuned = [row for row in (self.tune(c, ladder) for c in combos[:KNEE_CANDIDATES]) if row is not None]
        if tuned:
            return max(tuned, key=combo_rank)
        for combo in combos[KNEE_CANDIDATES:]:
            concurrency = int(combo.row["concurrency"])
            figures = self.replay(combo, concurrency, combo.row["tpot"])
            if figures is None:
                return combo.row
            if not (figures[0] > self.ttft_target or figures[1] > self.tpot_target):
                return knee_row(combo.row, concurrency, figures)
        return None

    def ok(self, figures: Figures | None) -> bool:
        return figures is not None and figures[0] <= self.ttft_target and figures[1] <= self.tpot_target

    def tune(self, combo: Combo, ladder: Sequence[tuple[float, float]]) -> dict | None:
        """The combination at its knee: the largest concurrency up to the matched one that meets
        both targets (binary search); unchanged when unreplayable; None when no concurrency does."""
        priced = functools.lru_cache(maxsize=None)(lambda c: self.priced(combo, c, ladder))
        matched = int(combo.row["concurrency"])
        if priced(matched) is None:
            return combo.row
        knee = matched if self.ok(priced(matched)) else None
        lo, hi = 1, matched
        while knee != matched and lo < hi:
            mid = (lo + hi) // 2
            if self.ok(priced(mid)):
                knee, lo = mid, mid + 1
            else:
                hi = mid
        return None if knee is None else knee_row(combo.row, knee, priced(knee))

    def priced(self, combo: Combo, concurrency: int, ladder: Sequence[tuple[float, float]]) -> Figures | None:
        """The replay at a concurrency, the decode step iterated to its Little's-law fixed point."""
        step, figures = combo.row["tpot"], None
        for _ in range(FIXED_POINT_ITERATIONS):
            figures = self.replay(combo, concurrency, step)
            if figures is None:
                return None
            in_decode = figures[2] * combo.row["osl"] * step / 1000.0 / max(1, combo.row["(d)workers"])
            new = ladder_tpot(ladder, in_decode) if ladder else step
            if abs(new - step) < FIXED_POINT_TOLERANCE_MS:
                break
            step = new
        return figures

    def replay(self, combo: Combo, concurrency: int, step: float) -> Figures | None:
        """(ttft, tpot, requests/s) of the combination replayed at a concurrency and decode step;
        None when it cannot be replayed."""
        row = {**combo.row, "concurrency": concurrency, "tpot": step}
        try:
            f = closed_loop_for_disagg_row(row, combo.prefill.deployment, combo.decode.deployment, pricing=self.options.pricing,
                                           protocol=self.options.protocol, pricer=self.options.pricer)  # fmt: skip
        except EstimatorError:
            return None
        return None if math.isnan(f["ttft"]) else (f["ttft"], f["tpot"], f["seq/s"])


def knee_row(row: dict, concurrency: int, figures: Figures) -> dict:
    """A disagg row at a searched concurrency with the replay's figures."""
    ttft, tpot, rate = figures
    gpus, osl = row["num_total_gpus"], row["osl"]
    return {
        **row, "concurrency": concurrency, "ttft": ttft, "tpot": tpot, "request_latency": ttft + tpot * max(osl - 1, 0),
        "request_rate": rate, "seq/s": rate, "seq/s/gpu": rate / gpus if gpus else 0.0, "tokens/s": rate * osl,
        "tokens/s/gpu": rate * osl / gpus if gpus else 0.0, "tokens/s/user": 1000.0 / tpot if tpot > 0 else 0.0,
    }  # fmt: skip


__all__ = ["KneeSearch", "RefinedAgg", "knee_row", "ladder_tpot", "refine_agg", "solo_prefill_ms"]
