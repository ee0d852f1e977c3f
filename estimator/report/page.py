"""The report page: one self-contained HTML file (inline CSS, script, SVG and the per-point JSON;
opens offline) rendered by Jinja2 from the long-form per-point table and its provenance.

Headline, coverage, partition, error-source and mapping tables and the histograms are plain HTML,
readable without JavaScript; the script renders the per-point table and the scatter plots from the
embedded JSON (pointdata). The same points give byte-identical HTML.
"""

from __future__ import annotations

import math
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup

from estimator.report import ablation, analysis, comparison, metrics, narrative, plots
from estimator.report.pointdata import COLOUR_BY, point_data, to_script_json

TEMPLATES = Path(__file__).parent / "templates"


def environment() -> jinja2.Environment:
    """The Jinja2 environment: autoescape on, undefined names are errors."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
    )  # fmt: skip
    env.filters["pct"] = pct
    env.filters["spct"] = signed_pct
    env.filters["ms"] = ms
    return env


def _missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def pct(x: float | None) -> str:
    """A fraction as a percentage, e.g. "53.3%"."""
    return "n/a" if _missing(x) else f"{100 * x:.1f}%"


def signed_pct(x: float | None) -> str:
    """A signed fraction as a percentage, e.g. "+2.4%"."""
    return "n/a" if _missing(x) else f"{100 * x:+.1f}%"


def ms(x: float | None) -> str:
    """A latency in ms, 4 significant digits ("" when missing)."""
    return "" if _missing(x) else f"{x:.4g}"


def render_report(points: pd.DataFrame, provenance: dict, methods: list[str], baseline: comparison.Baseline | None = None) -> str:
    """The report HTML for the given methods (in headline order), compared with baseline if given
    (a table of the same measurements: see comparison.measurement_difference)."""
    return environment().get_template("report.html.j2").render(**report_context(points, provenance, methods, baseline))


def report_context(points: pd.DataFrame, provenance: dict, methods: list[str], baseline: comparison.Baseline | None = None) -> dict:
    """Everything the template shows, computed from the per-point table(s)."""
    ablated = ablation.ablation_table(points)
    points = analysis.method_points(points, methods)
    headline = metrics.by_method(points, methods)
    shown = analysis.shown_methods(headline)
    closing = analysis.error_sources(points, shown)
    if closing is not None:
        closing["protocol_facts"] = narrative.protocol_facts(points)
    return {
        "rows": int(points["id"].nunique()),
        "methods": methods,
        "shown": shown,
        "headline": headline,
        "references": narrative.REFERENCES,
        "common": analysis.common_headline(points, shown),
        "coverage": analysis.coverage_breakdown(points, methods),
        "partitions": analysis.partition_tables(points, shown),
        "histograms": plots.histograms(points, shown),
        "scatters": [(method, metric) for metric in metrics.METRICS for method in shown],
        "colour_by": COLOUR_BY,
        "closing": closing,
        "ablation": ablated,
        "low_concurrency": analysis.LOW_CONCURRENCY,
        "residual_keys": analysis.RESIDUAL_KEYS,
        "mapping": analysis.mapping_decisions(points),
        "point_json": Markup(to_script_json(point_data(points, shown))),
        "baseline": baseline,
        "comparison": comparison.compare(points, analysis.method_points(baseline.points, methods), methods) if baseline else None,
        "provenance": provenance,
    }
