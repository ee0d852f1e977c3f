"""Analysis of the long-form per-point table: pure functions from the points frame to the numbers the
report shows. No text beyond group labels, no HTML.

Units: latencies in ms; errors, shares and MAPEs as fractions (0.25 = 25%). Every function leaves its
input frame unchanged and returns the same value for the same frame.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pandas as pd

from estimator.report import metrics
from estimator.report.metrics import GroupStats
from estimator.report.points import bucket_order
from measurements.replicates import replicate_floor

PARTITIONS = (
    ("system x backend x mode", ("system", "backend", "mode"), False),
    ("model", ("model",), False),
    ("concurrency bucket", ("concurrency_bucket",), False),
    ("pricing (covered points: legacy may price a row otherwise than the other methods)", ("pricing",), True),
)  # (title, key columns, covered points only: for a key that varies between a row's methods)
CONTRIBUTION_KEYS = ["system", "backend", "mode", "model"]
PRIMARY_ORDER = ("closed_loop", "closed_loop_steady", "uncached", "legacy")
LOW_CONCURRENCY = 8  # clients at most: the replay's queue is near empty, so what stays unpriced is per request
RESIDUAL_KEYS = ["backend", "system", "model", "isl"]
REPLICATE_KEYS = ["backend", "mode"]
STEP_KEYS = ["system", "backend", "mode"]
COLLECTED_SHOWN = 6  # values listed in a collated reason before "..."


def method_points(points: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """The points of the given methods, concurrency buckets ordered by concurrency."""
    points = points[points["method"].isin(methods)].copy()
    points["concurrency_bucket"] = pd.Categorical(points["concurrency_bucket"], categories=bucket_order(), ordered=True)
    return points


def shown_methods(headline: dict[str, GroupStats]) -> list[str]:
    """The methods that predicted at least one row, in headline order."""
    return [m for m, stats in headline.items() if stats.covered > 0]


def partition_tables(points: pd.DataFrame, shown: list[str]) -> list[tuple[str, list[str], list]]:
    """Per PARTITIONS entry: (title, key columns, metrics.partition_stats over its points)."""
    return [(title, list(keys), metrics.partition_stats(points[points["covered"]] if covered_only else points, list(keys), shown))
            for title, keys, covered_only in PARTITIONS]  # fmt: skip


def common_headline(points: pd.DataFrame, shown: list[str]) -> dict[str, GroupStats] | None:
    """Per-method stats over the rows every shown method covered (None with fewer than two methods)."""
    if len(shown) < 2:
        return None
    return metrics.by_method(metrics.common_rows(points, shown), shown)


def coverage_breakdown(points: pd.DataFrame, methods: list[str]) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """Per method: uncovered rows and (collated reason, rows), most rows first, then by reason."""
    out = []
    for method in methods:
        missed = points[(points["method"] == method) & ~points["covered"]]
        counts = missed["reason"].map(reason_group).value_counts()
        out.append((method, len(missed), collate_reasons({str(r): int(n) for r, n in counts.items()})))
    return out


def reason_group(reason: str) -> str:
    """A reason without its row-specific detail: table paths and braced lookup keys are elided."""
    reason = re.sub(r" at /[^;\s]+", "", str(reason))
    return re.sub(r"\{[^{}]*\}", "{...}", reason)


NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")  # a standalone number; not in "fp8", "h200" or "0.24.0"


def collate_reasons(counts: dict[str, int]) -> list[tuple[str, int]]:
    """Reasons that differ only in one number merged into one line naming the values that varied,
    e.g. "num_heads 128 should be divisible by tp_size in {12, 20, 24}"; (line, rows), most rows
    first. Of reasons alike but for their numbers, the position with the most distinct values is
    collected and the others keep their literal values (so "num_heads 32" stays its own line)."""
    shapes: dict[str, list[tuple[list[str], int]]] = defaultdict(list)
    for reason, n in counts.items():
        shapes[NUMBER.sub("#", reason)].append((NUMBER.findall(reason), n))
    lines = []
    for shape, members in shapes.items():
        positions = len(members[0][0])
        if len(members) == 1 or positions == 0:
            lines += [(_fill(shape, numbers), n) for numbers, n in members]
            continue
        varying = max(range(positions), key=lambda i: (len({m[0][i] for m in members}), -i))
        groups: dict[tuple, list[tuple[str, int]]] = defaultdict(list)
        for numbers, n in members:
            groups[tuple(numbers[:varying] + numbers[varying + 1 :])].append((numbers[varying], n))
        for rest, values in groups.items():
            listed = _listed(sorted({v for v, _ in values}, key=float))
            lines.append((_fill(shape, [*rest[:varying], listed, *rest[varying:]]), sum(n for _, n in values)))
    return sorted(lines, key=lambda kv: (-kv[1], kv[0]))


def _listed(values: list[str]) -> str:
    """One value as itself; several as "in {a, b, ...}" (the first COLLECTED_SHOWN)."""
    if len(values) == 1:
        return values[0]
    more = ", ..." if len(values) > COLLECTED_SHOWN else ""
    return "in {" + ", ".join(values[:COLLECTED_SHOWN]) + more + "}"


def _fill(shape: str, numbers: list[str]) -> str:
    """shape with its "#" placeholders replaced by numbers, in order."""
    parts = iter(numbers)
    return re.sub("#", lambda _: next(parts), shape)


def primary_method(shown: list[str]) -> str | None:
    """The method the error-source analysis follows: the first of PRIMARY_ORDER shown."""
    return next((m for m in PRIMARY_ORDER if m in shown), None)


def error_sources(points: pd.DataFrame, shown: list[str]) -> dict | None:
    """The largest remaining error sources of the primary method, with the evidence behind them
    (None when no method predicted anything)."""
    primary = primary_method(shown)
    if primary is None:
        return None
    hit = points[(points["method"] == primary) & points["covered"]]
    contributions = {metric: metrics.error_contributions(points, primary, metric, CONTRIBUTION_KEYS, 6) for metric in metrics.METRICS}
    return {
        "method": primary,
        "contributions": {k: v.to_dict("records") for k, v in contributions.items()},
        "keys": CONTRIBUTION_KEYS,
        "attention_dp": split_stats(hit, hit["attention_dp"].fillna(1) > 1, "attention-DP rows", "other rows"),
        "steps": step_evidence(points),
        "residual": low_concurrency_residual(hit),
        "replicates": replicate_floors(hit),
    }


def low_concurrency_residual(hit: pd.DataFrame) -> list[dict]:
    """The TTFT a method's covered agg points at low concurrency leave unpredicted, per backend x
    system x model x isl (medians): measured minus predicted TTFT in ms and in measured decode steps
    (one TPOT). A residual that stays flat across isl is latency per request (host or serving
    overhead) that no priced pass carries; one that grows with isl is a prefill price."""
    low = hit[(hit["mode"] == "agg") & (hit["concurrency"] <= LOW_CONCURRENCY)]
    frame = low.assign(gap_ms=low["ttft_meas_ms"] - low["ttft_pred_ms"])
    frame = frame.assign(gap_steps=frame["gap_ms"] / frame["tpot_meas_ms"])
    grouped = frame.groupby(RESIDUAL_KEYS).agg(
        n=("id", "size"), ttft_meas_ms=("ttft_meas_ms", "median"), ttft_pred_ms=("ttft_pred_ms", "median"),
        gap_ms=("gap_ms", "median"), gap_steps=("gap_steps", "median"),
    )  # fmt: skip
    return grouped.reset_index().to_dict("records")


def replicate_floors(hit: pd.DataFrame) -> dict | None:
    """A method's covered points beside the least error any estimator of the recorded inputs could
    reach on them (measurements.replicates): per backend x mode and overall, the points, those
    measured more than once, the method's MAPE and the floor MAPE (replicates' disagreement, summed
    over the partition's points). None when the table records no replicate groups."""
    if (hit["replicate_group"] == "").any() or hit.empty:
        return None
    frame = hit.assign(replicated=hit.groupby("replicate_group")["id"].transform("size") > 1)
    for metric in metrics.METRICS:
        meas = frame[f"{metric}_meas_ms"].to_numpy()
        frame[f"{metric}_ape"] = np.abs(metrics.signed_error(frame[f"{metric}_pred_ms"], meas))
        frame[f"{metric}_floor"] = replicate_floor(meas, frame["replicate_group"].to_numpy())
    columns = {"n": ("id", "size"), "replicated": ("replicated", "sum"), "ttft_mape": ("ttft_ape", "mean"),
                   "ttft_floor": ("ttft_floor", "mean"), "tpot_mape": ("tpot_ape", "mean"), "tpot_floor": ("tpot_floor", "mean")}  # fmt: skip
    rows = frame.groupby(REPLICATE_KEYS).agg(**columns).reset_index().to_dict("records")
    total = frame.assign(**{key: "all" for key in REPLICATE_KEYS}).groupby(REPLICATE_KEYS).agg(**columns)
    return {"keys": REPLICATE_KEYS, "rows": rows + total.reset_index().to_dict("records")}


def step_evidence(points: pd.DataFrame) -> dict | None:
    """Measured and predicted latencies in units of a closed-form method's own step prices, per
    system x backend x mode (medians): how many prefill steps a measured TTFT spans, and how a
    measured TPOT compares with one decode step."""
    steps = points[points["covered"] & (points["prefill_step_ms"] > 0)]
    method = next((m for m in ("legacy", "uncached") if (steps["method"] == m).any()), None)
    if method is None:
        return None
    part = steps[steps["method"] == method]
    frame = part.assign(
        meas_ttft_steps=part["ttft_meas_ms"] / part["prefill_step_ms"],
        pred_ttft_steps=part["ttft_pred_ms"] / part["prefill_step_ms"],
        meas_tpot_steps=part["tpot_meas_ms"] / part["decode_step_ms"],
        pred_tpot_steps=part["tpot_pred_ms"] / part["decode_step_ms"],
    )
    grouped = frame.groupby(STEP_KEYS).agg(
        n=("id", "size"), meas_ttft_steps=("meas_ttft_steps", "median"), pred_ttft_steps=("pred_ttft_steps", "median"),
        meas_tpot_steps=("meas_tpot_steps", "median"), pred_tpot_steps=("pred_tpot_steps", "median"),
    )  # fmt: skip
    return {"method": method, "keys": STEP_KEYS, "rows": grouped.reset_index().to_dict("records")}


def split_stats(hit: pd.DataFrame, mask: pd.Series, yes: str, no: str) -> list[tuple[str, int, metrics.ErrorStats, metrics.ErrorStats]]:
    """(label, points, TTFT stats, TPOT stats) of the covered points in and outside mask."""
    out = []
    for label, part in ((yes, hit[mask]), (no, hit[~mask])):
        out.append((label, len(part), metrics.error_stats(part["ttft_pred_ms"], part["ttft_meas_ms"]),
                    metrics.error_stats(part["tpot_pred_ms"], part["tpot_meas_ms"])))  # fmt: skip
    return out


def mapping_decisions(points: pd.DataFrame) -> dict:
    """Row counts of the model-alias, layout, version and pricer decisions."""
    rows = points.drop_duplicates("id")
    aliased = rows[rows["model_note"] != ""]
    versions = rows.fillna({"engine_version": "not recorded", "data_version": "none"})
    return {
        "aliases": _counts(aliased, ["model", "model_used"]),
        "layouts": _counts(rows[rows["layout_note"] != ""], ["system", "backend", "model"]),
        "versions": _counts(versions, ["backend", "engine_version", "data_version"]),
        "pricers": _counts(rows.fillna({"pricer": "not estimated"}), ["pricer"]),
    }


def _counts(frame: pd.DataFrame, keys: list[str]) -> list[tuple]:
    counts = frame.groupby(keys, dropna=False).size()
    return [(*(k if isinstance(k, tuple) else (k,)), int(n)) for k, n in counts.items()]
