"""A recommendation shown and saved: the terminal text, the JSON document and the --save-dir folder.

The folder holds ``best_configs.csv`` and ``pareto.csv`` (``summary.SUMMARY_COLUMNS``), ``frontier.html``
(an inline SVG, offline) and per top configuration ``<mode>/top<rank>/`` with its launch files. Every
file is written atomically; the same recommendation writes byte-identical files.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd

from estimator.io import atomic_path
from estimator.recommend import frontier
from estimator.recommend.launch import launch_files
from estimator.recommend.picking import CLUSTER
from estimator.recommend.search import CLOSED_FORM, CLOSED_LOOP, REPLAY_PROTOCOL, Recommendation, miss_line
from estimator.recommend.summary import SUMMARY_COLUMNS, summary_record

SHOWN = ("rank", "backend", "tokens/s/gpu", "tokens/s/user", "ttft_ms", "tpot_ms", "concurrency", "total_gpus", "replicas", "layout")


def launch_dir(mode: str, rank: int) -> str:
    return f"{mode}/top{rank}"


def best_configs(rec: Recommendation) -> pd.DataFrame:
    """Every mode's top configurations as SUMMARY_COLUMNS rows (agg first, rank from 1)."""
    rows = [summary_record(r, mode, i + 1, rec.decided_by, launch_dir(mode, i + 1))
            for mode, result in rec.modes.items() for i, r in enumerate(result.top.to_dict("records"))]  # fmt: skip
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def pareto_rows(rec: Recommendation) -> pd.DataFrame:
    """Every mode's frontier as SUMMARY_COLUMNS rows (closed-form figures, rank along the x axis)."""
    rows = [summary_record(r, mode, i + 1, CLOSED_FORM)
            for mode, result in rec.modes.items() for i, r in enumerate(result.frontier.to_dict("records"))]  # fmt: skip
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def _series(rec: Recommendation) -> tuple[list, tuple[float, float] | None, str]:
    x = rec.task.constraint.x_axis
    series = [(mode, list(zip(r.frontier[x], r.frontier[CLUSTER]))) for mode, r in rec.modes.items() if not r.frontier.empty]
    highlight = None
    if rec.winner is not None:
        top = rec.modes[rec.winner].top.iloc[0]
        highlight = (float(top[x]), float(top[CLUSTER]))
    return series, highlight, x


def headline(rec: Recommendation) -> str:
    t = rec.task
    target = f"request latency <= {t.request_latency:g} ms" if t.request_latency is not None else f"TPOT <= {t.tpot:g} ms"
    return (f"{t.model} on {t.total_gpus} x {t.system}{f' (decode: {t.decode_system})' if t.decode_system else ''}, backend {t.backend}, "
            f"isl {t.isl}, osl {t.osl}{f', prefix {t.prefix}' if t.prefix else ''}: TTFT <= {t.ttft:g} ms, {target}; "
            f"semantics {t.semantics.value}")  # fmt: skip


def decided_line(rec: Recommendation) -> str:
    if rec.decided_by == CLOSED_LOOP:
        p = REPLAY_PROTOCOL
        return (f"ranked by the {CLOSED_LOOP}: ttft, tpot and throughput of the top configurations are closed-loop values "
                f"({p.prompts_per_client} prompts per client, lengths on [{p.range_ratio} L, L]); the frontier is closed-form")  # fmt: skip
    return "ranked by the closed-form estimate (--refined-sla: the closed-loop replay decides)"


def render_text(rec: Recommendation) -> str:
    """The terminal report: headline, each mode's top table, the verdict, the frontier, the notes."""
    out = [headline(rec), decided_line(rec), f"tokens/s/gpu counts all {rec.task.total_gpus} GPUs of the budget (idle ones too)"]
    table = best_configs(rec)
    for mode, result in rec.modes.items():
        shown = table[table["mode"] == mode]
        if shown.empty:
            out += ["", f"{mode}: no configuration meets the targets", miss_line(result, rec.task)]
            continue
        out += ["", f"{mode} top {len(shown)}:",
                shown[list(SHOWN)].to_string(index=False, float_format=lambda v: f"{v:.2f}")]  # fmt: skip
    out += ["", f"verdict: {rec.verdict}"]
    series, highlight, x = _series(rec)
    if series:
        out += ["", frontier.ascii_plot(series, x, "tokens/s/gpu", highlight)]
    out += [f"note: {n}" for n in rec.notes]
    return "\n".join(out)


def json_document(rec: Recommendation) -> dict:
    """The recommendation as JSON values (NaN as None): the task line, what decided, the verdict, and
    per mode its top rows (best_configs.csv's), its frontier (pareto.csv's) and its closest miss."""
    table, front = best_configs(rec), pareto_rows(rec)

    def records(frame: pd.DataFrame, mode: str) -> list[dict]:
        return json.loads(frame[frame["mode"] == mode].to_json(orient="records"))

    return {
        "task": headline(rec), "decided_by": rec.decided_by, "verdict": rec.verdict, "found": rec.found, "notes": list(rec.notes),
        "modes": {mode: {"top": records(table, mode), "frontier": records(front, mode),
                         "closest_miss": None if not r.top.empty else miss_line(r, rec.task)} for mode, r in rec.modes.items()},
    }  # fmt: skip


def _csv(frame: pd.DataFrame) -> str:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue()


def save(rec: Recommendation, folder: str | Path, moe: bool) -> list[Path]:
    """Write the folder (created if needed); returns the files written, in order."""
    folder = Path(folder)
    written: list[Path] = []

    def write(name: str, text: str, executable: bool = False) -> None:
        path = folder / name
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
            if executable:
                os.chmod(tmp, tmp.stat().st_mode | 0o111)
        written.append(path)

    write("best_configs.csv", _csv(best_configs(rec)))
    write("pareto.csv", _csv(pareto_rows(rec)))
    series, highlight, x = _series(rec)
    lines = [headline(rec), decided_line(rec), f"verdict: {rec.verdict}", *(f"note: {n}" for n in rec.notes)]
    write("frontier.html", frontier.html_page("Pareto frontier", frontier.svg_plot(series, x, "tokens/s/gpu", highlight), lines))
    t = rec.task
    for mode, result in rec.modes.items():
        for i, row in enumerate(result.top.to_dict("records")):
            for f in launch_files(row, t.isl, t.osl, t.prefix, moe, REPLAY_PROTOCOL):
                write(f"{launch_dir(mode, i + 1)}/{f.name}", f.text, f.executable)
    return written


__all__ = ["best_configs", "json_document", "pareto_rows", "render_text", "save"]
