"""Old against new on the same rows: a per-point table compared with a baseline table of the same
measurements, per method and partition, and the rows whose error moved most.

Units: errors as fractions (an APE change of 0.1 is 10 points); latencies in ms. Two tables compare
only when they hold the same measured rows (ids and measured latencies); measurement_difference
says how they differ otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.report import metrics
from estimator.report.analysis import PARTITIONS
from estimator.report.metrics import GroupStats

MOVED_SHOWN = 10  # rows listed per method and metric
IDS_NAMED = 3  # ids a difference names before "..."
MEASURED = ["ttft_meas_ms", "tpot_meas_ms"]


@dataclass(frozen=True)
class Baseline:
    """The per-point table compared against, with its provenance and the file it came from."""

    points: pd.DataFrame
    provenance: dict
    label: str


@dataclass(frozen=True)
class MethodComparison:
    """One method in both tables: stats per partition group, coverage changes and the rows that moved."""

    method: str
    groups: list[tuple[str, str, GroupStats, GroupStats]]  # (partition title, group label, old, new); the first is every row
    changed: int  # rows whose coverage or prediction differs
    gained: int  # rows predicted now and not before
    lost: int  # rows predicted before and not now
    moved: list[dict]  # id, metric, meas_ms, old_ms, new_ms, old_err, new_err: largest |new APE - old APE| first


def measurement_difference(new: pd.DataFrame, old: pd.DataFrame) -> str | None:
    """None when both tables hold the same measured rows; else what differs, in one line."""
    new_rows, old_rows = (t.drop_duplicates("id").set_index("id")[MEASURED] for t in (new, old))
    only_new, only_old = sorted(set(new_rows.index) - set(old_rows.index)), sorted(set(old_rows.index) - set(new_rows.index))
    if only_new or only_old:
        sides = [f"{len(ids)} ids only in {side}{_named(ids)}" for side, ids in (("the new file", only_new), ("the baseline", only_old)) if ids]
        return "; ".join(sides)
    same = np.isclose(new_rows.to_numpy(float), old_rows.reindex(new_rows.index).to_numpy(float), rtol=1e-9, equal_nan=True).all(axis=1)
    differ = sorted(new_rows.index[~same])
    return f"{len(differ)} ids measured differently{_named(differ)}" if differ else None


def _named(ids: list[str]) -> str:
    if not ids:
        return ""
    return " (" + ", ".join(ids[:IDS_NAMED]) + (", ..." if len(ids) > IDS_NAMED else "") + ")"


def compare(new: pd.DataFrame, old: pd.DataFrame, methods: list[str]) -> list[MethodComparison]:
    """Per method of `methods` present in both tables, in that order (tables of the same measurements)."""
    both = [m for m in methods if (new["method"] == m).any() and (old["method"] == m).any()]
    return [_compare_method(new[new["method"] == m], old[old["method"] == m], m) for m in both]


def _compare_method(new: pd.DataFrame, old: pd.DataFrame, method: str) -> MethodComparison:
    groups = [("all rows", "all", metrics.group_stats(old), metrics.group_stats(new))]
    for title, keys, covered_only in PARTITIONS:
        if covered_only:  # a key that varies between a row's methods, and so between revisions: not a like-for-like group
            continue
        for key, part in new.groupby(list(keys), sort=True, dropna=False, observed=True):
            label = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
            groups.append((title, label, metrics.group_stats(old[old["id"].isin(part["id"])]), metrics.group_stats(part)))
    joined = new.merge(old, on="id", suffixes=("_new", "_old"))
    moved = pd.concat([_moved(joined, metric) for metric in metrics.METRICS], ignore_index=True)
    predicted = [f"{metric}_pred_ms" for metric in metrics.METRICS]
    same = np.isclose(joined[[f"{c}_new" for c in predicted]].to_numpy(float), joined[[f"{c}_old" for c in predicted]].to_numpy(float),
                      rtol=1e-12, atol=0.0, equal_nan=True).all(axis=1) & (joined["covered_new"] == joined["covered_old"])  # fmt: skip
    return MethodComparison(method, groups, changed=int((~same).sum()), gained=int((joined["covered_new"] & ~joined["covered_old"]).sum()),
                            lost=int((~joined["covered_new"] & joined["covered_old"]).sum()), moved=moved.to_dict("records"))  # fmt: skip


def _moved(joined: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The MOVED_SHOWN rows predicted in both tables whose APE in metric changed most (ties by id)."""
    both = joined[joined["covered_new"] & joined["covered_old"]]
    meas = both[f"{metric}_meas_ms_new"]
    frame = pd.DataFrame({
        "id": both["id"], "metric": metric, "meas_ms": meas,
        "old_ms": both[f"{metric}_pred_ms_old"], "new_ms": both[f"{metric}_pred_ms_new"],
        "old_err": metrics.signed_error(both[f"{metric}_pred_ms_old"], meas), "new_err": metrics.signed_error(both[f"{metric}_pred_ms_new"], meas),
    })  # fmt: skip
    frame["change"] = (frame["new_err"].abs() - frame["old_err"].abs()).abs()
    frame = frame[frame["change"] > 0].sort_values(["change", "id"], ascending=[False, True], kind="stable")
    return frame.head(MOVED_SHOWN).drop(columns="change")
