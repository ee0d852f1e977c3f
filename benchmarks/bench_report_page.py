"""The accuracy report page's size and first render in headless Chromium.

    python -m benchmarks.bench_report_page [--points CSV] [--html PAGE] [--repeats N]

Renders the page from a per-point CSV (default reports/out/accuracy_points.csv; or times an existing
page with --html, e.g. one an older revision rendered) and reports its size, the Python render time
and the first render in headless Chromium: the wall time of a --screenshot run (load, scripts,
layout and paint of a 1400 x 1000 viewport) less that of a blank page, so Chromium's own start-up is
not counted. Medians over repeats. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def render(points: Path, out: Path) -> float:
    """Render the report page from points to out; seconds taken."""
    from estimator.report import METHOD_NAMES
    from estimator.report.page import render_report
    from estimator.report.points import read_points

    frame, provenance = read_points(points)
    start = time.perf_counter()
    out.write_text(render_report(frame, provenance, [m for m in METHOD_NAMES if m in set(frame["method"])]), encoding="utf-8")
    return time.perf_counter() - start


def screenshot_seconds(page: Path, work: Path) -> float:
    """Wall time of one headless Chromium screenshot of page, fresh profile."""
    profile = Path(tempfile.mkdtemp(dir=work))
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--window-size=1400,1000",
               f"--screenshot={work / 'shot.png'}", page.as_uri()]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    elapsed = time.perf_counter() - start
    shutil.rmtree(profile, ignore_errors=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default="reports/out/accuracy_points.csv", help="per-point CSV to render")
    parser.add_argument("--html", default=None, help="time this page instead of rendering one")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        page = Path(args.html) if args.html else work / "report.html"
        render_s = None if args.html else render(Path(args.points), page)
        blank = work / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body><p>blank</p></body></html>")
        blank_s = statistics.median(screenshot_seconds(blank, work) for _ in range(args.repeats))
        page_s = statistics.median(screenshot_seconds(page, work) for _ in range(args.repeats))
        print(json.dumps({
            "page": args.html or args.points, "page_bytes": page.stat().st_size, "python_render_s": render_s and round(render_s, 2),
            "chromium_blank_s": round(blank_s, 2), "chromium_page_s": round(page_s, 2), "first_render_s": round(page_s - blank_s, 2),
            "repeats": args.repeats,
        }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
