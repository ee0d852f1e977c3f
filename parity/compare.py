"""Pure comparison functions over priced rows: per-metric explained diffs with error symmetry.

A side is either a mapping metric -> float or an exception. Both sides raising the same class
passes; one side raising while the other computes fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDiff:
    record: str  # which record (query / row key)
    metric: str  # which metric of the record
    expected: float | str  # reference or golden value (or exception class name)
    actual: float | str  # live value (or exception class name)
    rel_tol: float
    ok: bool

    @property
    def delta(self) -> float:
        if isinstance(self.expected, str) or isinstance(self.actual, str):
            return math.nan
        return self.actual - self.expected

    @property
    def delta_pct(self) -> float:
        if isinstance(self.expected, str) or isinstance(self.actual, str) or self.expected == 0:
            return math.nan
        return 100.0 * (self.actual - self.expected) / abs(self.expected)


def close(expected: float, actual: float, rel_tol: float) -> bool:
    """Relative closeness with exact equality required at zero; NaN never matches."""
    if math.isnan(expected) or math.isnan(actual):
        return False
    if expected == actual:
        return True
    return abs(actual - expected) <= rel_tol * max(abs(expected), abs(actual))


def compare_records(record: str, expected, actual, rel_tol: float) -> list[MetricDiff]:
    """Every metric of two records (mappings or exceptions), with error symmetry."""
    if isinstance(expected, BaseException) or isinstance(actual, BaseException):
        e = type(expected).__name__ if isinstance(expected, BaseException) else "value"
        a = type(actual).__name__ if isinstance(actual, BaseException) else "value"
        return [MetricDiff(record, "<outcome>", e, a, rel_tol, e == a)]
    assert isinstance(expected, Mapping) and isinstance(actual, Mapping)
    diffs = []
    for metric in sorted(set(expected) | set(actual)):
        if metric not in expected or metric not in actual:
            diffs.append(MetricDiff(record, metric, expected.get(metric, "<absent>"), actual.get(metric, "<absent>"), rel_tol, False))
            continue
        e, a = expected[metric], actual[metric]
        if isinstance(e, (int, float)) and isinstance(a, (int, float)) and not isinstance(e, bool):
            diffs.append(MetricDiff(record, metric, float(e), float(a), rel_tol, close(float(e), float(a), rel_tol)))
        else:
            diffs.append(MetricDiff(record, metric, str(e), str(a), rel_tol, e == a))
    return diffs


def failures(diffs: list[MetricDiff]) -> list[MetricDiff]:
    return [d for d in diffs if not d.ok]


def explain(diffs: list[MetricDiff], limit: int = 20, *, labels: tuple[str, str] = ("expected", "actual"), only_failures: bool = True) -> str:
    """A fixed-width table of metrics: record, metric, expected, actual, delta, delta %, tolerance, status.

    only_failures=False lists every metric of the diffed records, so the moved ones stand out."""
    bad = failures(diffs)
    if not bad:
        return "all metrics within tolerance"
    shown = bad if only_failures else diffs
    lines = [
        f"{len(bad)} metric(s) out of tolerance (showing {min(limit, len(shown))} of {len(shown)}):",
        f"{'record':<60} {'metric':<28} {labels[0]:>22} {labels[1]:>22} {'delta':>12} {'delta %':>10} {'rel tol':>8} status",
    ]
    for d in shown[:limit]:
        lines.append(
            f"{d.record[:60]:<60} {d.metric[:28]:<28} {_fmt(d.expected):>22} {_fmt(d.actual):>22} "
            f"{_fmt(d.delta, 4):>12} {_fmt(d.delta_pct, 4):>10} {d.rel_tol:>8.0e} {'ok' if d.ok else 'FAIL'}"
        )
    return "\n".join(lines)


def _fmt(v, digits: int = 17) -> str:
    if isinstance(v, str):
        return v
    if math.isnan(v):
        return "-"
    return f"{v:.{digits}g}"
