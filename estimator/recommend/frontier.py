"""The Pareto frontier drawn: ASCII for the terminal, an inline SVG in a small offline HTML page.

A series is (label, [(x, y), ...]) with x tokens/s/user (or request latency, ms) and y budget-wide
tokens/s/gpu; both drawings start their axes at 0 and are deterministic (fixed sizes, fixed decimals).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

Series = tuple[str, Sequence[tuple[float, float]]]
MARKERS = "*o+#"  # one per series, in order
HIGHLIGHT = "X"  # the recommended configuration
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
WIDTH, HEIGHT = 64, 16  # ASCII plot area, characters
SVG_W, SVG_H, MARGIN = 640, 400, 60  # SVG size and margin, px


def _limits(series: Sequence[Series], highlight: tuple[float, float] | None) -> tuple[float, float]:
    points = [p for _, pts in series for p in pts] + ([highlight] if highlight else [])
    x_max = max((x for x, _ in points), default=1.0) * 1.05 or 1.0
    y_max = max((y for _, y in points), default=1.0) * 1.1 or 1.0
    return x_max, y_max


def ascii_plot(series: Sequence[Series], x_label: str, y_label: str, highlight: tuple[float, float] | None = None) -> str:
    """The frontier on a character grid: one marker per series, X for the highlighted point."""
    x_max, y_max = _limits(series, highlight)
    grid = [[" "] * WIDTH for _ in range(HEIGHT)]

    def put(x: float, y: float, mark: str) -> None:
        col = min(WIDTH - 1, max(0, round(x / x_max * (WIDTH - 1))))
        row = min(HEIGHT - 1, max(0, round(y / y_max * (HEIGHT - 1))))
        grid[HEIGHT - 1 - row][col] = mark

    for (_, points), mark in zip(series, MARKERS):
        for x, y in points:
            put(x, y, mark)
    if highlight:
        put(*highlight, HIGHLIGHT)
    lines = [f"{y_label} vs {x_label}"]
    for i, row in enumerate(grid):
        value = y_max * (HEIGHT - 1 - i) / (HEIGHT - 1)
        tick = f"{value:8.1f} |" if i % 5 == 0 or i == HEIGHT - 1 else "         |"
        lines.append(tick + "".join(row).rstrip())
    lines.append("         +" + "-" * WIDTH)
    ticks = [f"{x_max * k / 4:.1f}" for k in range(5)]
    axis = [" "] * (WIDTH + 12)
    for k, text in enumerate(ticks):
        start = min(9 + round(k / 4 * (WIDTH - 1)), len(axis) - len(text))
        axis[start : start + len(text)] = text
    lines.append("".join(axis).rstrip())
    legend = [f"{m} {label}" for (label, _), m in zip(series, MARKERS)] + ([f"{HIGHLIGHT} recommended"] if highlight else [])
    lines.append(f"{' ' * 10}{x_label}    " + "   ".join(legend))
    return "\n".join(lines)


def svg_plot(series: Sequence[Series], x_label: str, y_label: str, highlight: tuple[float, float] | None = None) -> str:
    """The frontier as an SVG element: a polyline and dots per series, axes with five ticks each."""
    x_max, y_max = _limits(series, highlight)
    inner_w, inner_h = SVG_W - 2 * MARGIN, SVG_H - 2 * MARGIN

    def at(x: float, y: float) -> tuple[float, float]:
        return MARGIN + x / x_max * inner_w, SVG_H - MARGIN - y / y_max * inner_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_W}" height="{SVG_H}" viewBox="0 0 {SVG_W} {SVG_H}" '
             'font-family="sans-serif" font-size="11">',
             f'<rect x="0" y="0" width="{SVG_W}" height="{SVG_H}" fill="white"/>',
             f'<line x1="{MARGIN}" y1="{SVG_H - MARGIN}" x2="{SVG_W - MARGIN}" y2="{SVG_H - MARGIN}" stroke="black"/>',
             f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{SVG_H - MARGIN}" stroke="black"/>']  # fmt: skip
    for k in range(5):
        px, _ = at(x_max * k / 4, 0)
        _, py = at(0, y_max * k / 4)
        parts.append(f'<text x="{px:.1f}" y="{SVG_H - MARGIN + 16}" text-anchor="middle">{x_max * k / 4:.1f}</text>')
        parts.append(f'<text x="{MARGIN - 6}" y="{py + 4:.1f}" text-anchor="end">{y_max * k / 4:.1f}</text>')
    parts.append(f'<text x="{SVG_W / 2:.1f}" y="{SVG_H - 16}" text-anchor="middle">{html.escape(x_label)}</text>')
    parts.append(f'<text x="16" y="{SVG_H / 2:.1f}" text-anchor="middle" transform="rotate(-90 16 {SVG_H / 2:.1f})">{html.escape(y_label)}</text>')
    for i, ((label, points), color) in enumerate(zip(series, COLORS)):
        coords = [at(x, y) for x, y in sorted(points)]
        if coords:
            parts.append(f'<polyline fill="none" stroke="{color}" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in coords)}"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in coords]
        parts.append(f'<text x="{SVG_W - MARGIN}" y="{MARGIN + 14 * i}" text-anchor="end" fill="{color}">{html.escape(label)}</text>')
    if highlight:
        hx, hy = at(*highlight)
        parts.append(f'<circle cx="{hx:.1f}" cy="{hy:.1f}" r="6" fill="none" stroke="black" stroke-width="2"/>')
        parts.append(f'<text x="{SVG_W - MARGIN}" y="{MARGIN + 14 * len(series)}" text-anchor="end">o recommended</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def html_page(title: str, svg: str, lines: Sequence[str]) -> str:
    """A self-contained page: the title, the SVG and a few lines of text (no script, no external resource)."""
    body = "\n".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n</head>\n'
            f"<body>\n<h1>{html.escape(title)}</h1>\n{svg}\n{body}\n</body>\n</html>\n")  # fmt: skip
