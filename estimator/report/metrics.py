"""Accuracy metrics over the long-form per-point table: APE, MAPE, median APE, shares within 10/20/50%,
bias (median signed relative error) and coverage, overall and per partition.

APE = |pred - meas| / meas; signed error = (pred - meas) / meas. Shares and errors are fractions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

METRICS = ("ttft", "tpot")
THRESHOLDS = (0.10, 0.20, 0.50)


@dataclass(frozen=True)
class ErrorStats:
    """Error statistics of one metric over a set of covered points (NaN when the set is empty)."""

    n: int  # points
    mape: float  # mean APE
    median_ape: float  # median APE
    within: tuple[float, ...]  # share of points with APE <= each of THRESHOLDS
    bias: float  # median signed relative error


@dataclass(frozen=True)
class GroupStats:
    """Coverage and per-metric errors of one method over one group of rows."""

    rows: int  # rows in the group
    covered: int  # rows the method predicted
    ttft: ErrorStats
    tpot: ErrorStats

    @property
    def coverage(self) -> float:
        return self.covered / self.rows if self.rows else float("nan")


def signed_error(pred: pd.Series | np.ndarray, meas: pd.Series | np.ndarray) -> np.ndarray:
    """(pred - meas) / meas, elementwise."""
    pred, meas = np.asarray(pred, dtype=float), np.asarray(meas, dtype=float)
    return (pred - meas) / meas


def error_stats(pred, meas) -> ErrorStats:
    """ErrorStats of predictions against measurements (both finite, meas > 0)."""
    err = signed_error(pred, meas)
    if err.size == 0:
        nan = float("nan")
        return ErrorStats(0, nan, nan, tuple(nan for _ in THRESHOLDS), nan)
    ape = np.abs(err)
    return ErrorStats(
        n=int(err.size),
        mape=float(ape.mean()),
        median_ape=float(np.median(ape)),
        within=tuple(float((ape <= t).mean()) for t in THRESHOLDS),
        bias=float(np.median(err)),
    )


def group_stats(points: pd.DataFrame) -> GroupStats:
    """GroupStats of one method's points (a long-form slice with one line per row)."""
    hit = points[points["covered"]]
    return GroupStats(
        rows=len(points),
        covered=len(hit),
        ttft=error_stats(hit["ttft_pred_ms"], hit["ttft_meas_ms"]),
        tpot=error_stats(hit["tpot_pred_ms"], hit["tpot_meas_ms"]),
    )


def by_method(points: pd.DataFrame, methods: list[str]) -> dict[str, GroupStats]:
    """GroupStats per method, in the given order."""
    return {m: group_stats(points[points["method"] == m]) for m in methods}


def partition_stats(points: pd.DataFrame, keys: list[str], methods: list[str]) -> list[tuple[tuple, int, dict[str, GroupStats]]]:
    """Per partition (sorted by its key values): the key, the measured rows with a point in it, and
    GroupStats per method."""
    out = []
    for key, part in points.groupby(keys, sort=True, dropna=False):
        out.append((key if isinstance(key, tuple) else (key,), int(part["id"].nunique()), by_method(part, methods)))
    return out


def common_rows(points: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """The points of the rows every listed method covered (a like-for-like comparison)."""
    covered = points[points["covered"] & points["method"].isin(methods)]
    counts = covered.groupby("id")["method"].nunique()
    ids = counts.index[counts == len(methods)]
    return points[points["id"].isin(ids) & points["method"].isin(methods)]


def error_contributions(points: pd.DataFrame, method: str, metric: str, keys: list[str], top: int) -> pd.DataFrame:
    """The partitions that contribute most absolute relative error for one method and metric:
    columns keys..., n, mape, bias, share (of the method's total APE over all its covered rows)."""
    hit = points[(points["method"] == method) & points["covered"]].copy()
    err = signed_error(hit[f"{metric}_pred_ms"], hit[f"{metric}_meas_ms"])
    hit["ape"], hit["err"] = np.abs(err), err
    total = hit["ape"].sum()
    grouped = hit.groupby(keys, dropna=False).agg(n=("ape", "size"), mape=("ape", "mean"), bias=("err", "median"), ape_sum=("ape", "sum"))
    grouped["share"] = grouped["ape_sum"] / total if total > 0 else np.nan
    return grouped.drop(columns="ape_sum").sort_values("share", ascending=False).head(top).reset_index()
