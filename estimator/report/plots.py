"""Plot geometry: the signed-error histograms (drawn as inline SVG by the page, so they show without
JavaScript) and the log-axis ranges the page script draws its scatter plots on.

Units: coordinates in SVG px from the top-left of the drawing; errors as fractions; ranges as
powers of ten of a latency in ms. The same points give the same geometry.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.report import metrics

HIST_EDGES = np.round(np.arange(-1.0, 2.01, 0.1), 10)  # signed relative error bin edges; larger errors fall in an overflow bin
HIST_WIDTH, HIST_HEIGHT = 372, 180  # plot area, px
HIST_MARGIN = (30, 16, 44, 50)  # top, right, bottom, left: room for count labels, tick labels and axis titles
LABELLED_EDGES = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class Bar:
    """One histogram bin: its box, the points in it, and its range as text."""

    x: float
    y: float
    width: float
    height: float
    count: int
    label: str  # e.g. "-10% to +0%" or "> +200%"


@dataclass(frozen=True)
class Histogram:
    """Signed relative error counts of one method and metric in HIST_EDGES bins plus an overflow bin."""

    method: str
    metric: str
    n: int  # points counted
    bars: list[Bar]
    y_ticks: list[tuple[float, int]]  # (y px, count)
    x_labels: list[tuple[float, int, str]]  # (x px, line, label): the labelled edges (line 0), the overflow bin's centre (line 1)
    width: int  # whole drawing, px
    height: int
    left: int  # plot area's edges, px
    top: int
    right: int
    bottom: int  # the zero-count line


def histograms(points: pd.DataFrame, shown: list[str]) -> list[Histogram]:
    """One signed-error histogram per metric and shown method."""
    hit = points[points["covered"]]
    return [histogram(hit[hit["method"] == method], method, metric) for metric in metrics.METRICS for method in shown]


def histogram(part: pd.DataFrame, method: str, metric: str) -> Histogram:
    """The histogram of one method's covered points; the y axis runs to a round count above the
    tallest bar."""
    err = metrics.signed_error(part[f"{metric}_pred_ms"], part[f"{metric}_meas_ms"])
    counts = np.histogram(np.clip(err, HIST_EDGES[0], HIST_EDGES[-1] + 1.0), bins=[*HIST_EDGES, np.inf])[0]
    tallest = int(counts.max(initial=0))
    step = nice_step(tallest)
    y_max = max(step * math.ceil(tallest / step), step)
    bin_width = HIST_WIDTH / len(counts)
    top, right_margin, bottom_margin, left = HIST_MARGIN
    bars = []
    for i, count in enumerate(counts):
        height = count / y_max * HIST_HEIGHT
        bars.append(Bar(left + i * bin_width, top + HIST_HEIGHT - height, bin_width, height, int(count), bin_label(i)))
    y_ticks = [(top + HIST_HEIGHT - c / y_max * HIST_HEIGHT, c) for c in range(0, y_max + 1, step)]
    x_labels = [(left + float(np.searchsorted(HIST_EDGES, e)) * bin_width, 0, percent(e)) for e in LABELLED_EDGES]
    x_labels.append((left + (len(counts) - 0.5) * bin_width, 1, bin_label(len(counts) - 1)))
    return Histogram(method, metric, int(err.size), bars, y_ticks, x_labels, width=left + HIST_WIDTH + right_margin, height=top + HIST_HEIGHT + bottom_margin,
                     left=left, top=top, right=left + HIST_WIDTH, bottom=top + HIST_HEIGHT)  # fmt: skip


def nice_step(top: int) -> int:
    """A 1, 2 or 5 x 10^k tick step giving at most five ticks up to top (at least 1)."""
    steps = (mantissa * 10**exponent for exponent in itertools.count() for mantissa in (1, 2, 5))
    return next(step for step in steps if top <= 5 * step)


def bin_label(i: int) -> str:
    """The error range of bin i, e.g. "-10% to 0%"; the last bin is the overflow."""
    if i >= len(HIST_EDGES) - 1:
        return f"> {percent(HIST_EDGES[-1])}"
    return f"{percent(HIST_EDGES[i])} to {percent(HIST_EDGES[i + 1])}"


def percent(edge: float) -> str:
    """A bin edge as a signed whole percentage: "-10%", "0%", "+200%"."""
    return "0%" if edge == 0 else f"{100 * edge:+.0f}%"


def log_ranges(points: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per metric, the powers of ten (lo, hi), hi > lo, spanning every positive covered prediction
    and measurement: the scatter plots' shared axis range. A metric with none is left out."""
    hit = points[points["covered"]]
    ranges = {}
    for metric in metrics.METRICS:
        pred, meas = hit[f"{metric}_pred_ms"], hit[f"{metric}_meas_ms"]
        positive = pd.concat([pred[pred > 0], meas[meas > 0]])
        if not positive.empty:
            lo = math.floor(math.log10(positive.min()))
            ranges[metric] = (lo, max(math.ceil(math.log10(positive.max())), lo + 1))
    return ranges
