"""Render the accuracy report: one self-contained HTML file (inline CSS, JS and SVG; opens offline)
from the long-form per-point table and its provenance.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from estimator.report import KV_CAP_NOTE, metrics
from estimator.report.metrics import GroupStats
from estimator.report.points import bucket_order
from measurements.recipes.trtllm import TRTLLM_DSR1_MTP_ACCEPTED
from measurements.replicates import replicate_floor

TEMPLATES = Path(__file__).parent / "templates"
PARTITIONS = (
    ("system x backend x mode", ("system", "backend", "mode"), False),
    ("model", ("model",), False),
    ("concurrency bucket", ("concurrency_bucket",), False),
    ("pricing (covered points: legacy may price a row otherwise than the other methods)", ("pricing",), True),
)  # (title, key columns, covered points only: for a key that varies between a row's methods)
PLOT = 300  # scatter plot side, px
HIST_BINS = np.arange(-1.0, 2.01, 0.1)  # signed relative error bins; larger errors fall in an overflow bar
CONTRIBUTION_KEYS = ["system", "backend", "mode", "model"]
PRIMARY_ORDER = ("closed_loop", "closed_loop_steady", "uncached", "legacy")


@dataclass(frozen=True)
class Reference:
    """Published figures of the reference, for the headline (percent; None: not published)."""

    label: str  # what and where from
    covered: int  # rows predicted
    ttft: tuple[float | None, ...]  # MAPE, median APE, within 10/20/50, bias
    tpot: tuple[float | None, ...]


REFERENCES = (
    Reference("AIConfigurator 0.12.0, all modes (accuracy-baseline.md)", 3611, (53.3, 46.1, None, 19.9, None, -32.7), (32.3, 18.3, None, 53.1, None, 2.4)),
    Reference("AIConfigurator 0.12.0, agg rows (accuracy-baseline.md)", 3456, (52.8, 45.1, None, 20.2, None, -31.1), (32.4, 18.1, None, 53.5, None, 1.3)),
)


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


def render_report(points: pd.DataFrame, provenance: dict, methods: list[str]) -> str:
    """The report HTML for the given methods (in headline order)."""
    return environment().get_template("report.html.j2").render(**report_context(points, provenance, methods))


def report_context(points: pd.DataFrame, provenance: dict, methods: list[str]) -> dict:
    """Everything the template shows, computed from the per-point table."""
    points = points[points["method"].isin(methods)].copy()
    points["concurrency_bucket"] = pd.Categorical(points["concurrency_bucket"], categories=bucket_order(), ordered=True)
    headline = metrics.by_method(points, methods)
    shown = [m for m in methods if headline[m].covered > 0]
    return {
        "rows": int(points["id"].nunique()),
        "methods": methods,
        "shown": shown,
        "headline": headline,
        "references": REFERENCES,
        "common": common_headline(points, shown),
        "coverage": coverage_breakdown(points, methods),
        "partitions": [(title, list(keys), metrics.partition_stats(points[points["covered"]] if covered_only else points, list(keys), shown))
                       for title, keys, covered_only in PARTITIONS],
        "scatters": scatter_plots(points, shown),
        "histograms": histograms(points, shown),
        "closing": closing_note(points, shown),
        "low_concurrency": LOW_CONCURRENCY,
        "residual_keys": RESIDUAL_KEYS,
        "mapping": mapping_decisions(points),
        "table": point_table(points, shown),
        "provenance": provenance,
    }


def common_headline(points: pd.DataFrame, shown: list[str]) -> dict[str, GroupStats] | None:
    """Per-method stats over the rows every shown method covered (None with fewer than two methods)."""
    if len(shown) < 2:
        return None
    return metrics.by_method(metrics.common_rows(points, shown), shown)


def coverage_breakdown(points: pd.DataFrame, methods: list[str]) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """Per method: uncovered rows and (reason group, rows) sorted by count, then reason."""
    out = []
    for method in methods:
        missed = points[(points["method"] == method) & ~points["covered"]]
        counts = missed["reason"].map(reason_group).value_counts()
        reasons = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append((method, len(missed), [(str(r), int(n)) for r, n in reasons]))
    return out


def reason_group(reason: str) -> str:
    """A reason without its row-specific detail: table paths and braced lookup keys are elided."""
    reason = re.sub(r" at /[^;\s]+", "", str(reason))
    return re.sub(r"\{[^{}]*\}", "{...}", reason)


@dataclass(frozen=True)
class Scatter:
    """Predicted vs measured on log axes; coordinates in px inside a PLOT x PLOT box."""

    method: str
    metric: str
    n: int  # points drawn
    dots: str  # SVG path data, one zero-length segment per point
    ticks: list[tuple[float, str]]  # (px, label) on both axes
    band: list[str]  # SVG path data of y = x and the +-20% lines


def scatter_plots(points: pd.DataFrame, shown: list[str]) -> list[Scatter]:
    """One scatter per shown method and metric; both axes share the metric's range over all methods."""
    hit = points[points["covered"]]
    plots = []
    for metric in metrics.METRICS:
        pred, meas = hit[f"{metric}_pred_ms"], hit[f"{metric}_meas_ms"]
        positive = pd.concat([pred[pred > 0], meas[meas > 0]])
        if positive.empty:
            continue
        lo, hi = math.floor(math.log10(positive.min())), math.ceil(math.log10(positive.max()))
        hi = max(hi, lo + 1)
        scale = _log_scale(lo, hi)
        for method in shown:
            part = hit[(hit["method"] == method) & (hit[f"{metric}_pred_ms"] > 0)]
            xs, ys = scale(part[f"{metric}_meas_ms"]), PLOT - scale(part[f"{metric}_pred_ms"])
            dots = "".join(f"M{x:.1f} {y:.1f}h0" for x, y in zip(xs, ys))
            ticks = [(float(scale(10.0**e)), _tick_label(e)) for e in range(lo, hi + 1)]
            band = [_line(scale, lo, hi, f) for f in (1.0, 0.8, 1.2)]
            plots.append(Scatter(method, metric, len(part), dots, ticks, band))
    return plots


def _log_scale(lo: int, hi: int):
    def scale(v):
        return (np.log10(np.asarray(v, dtype=float)) - lo) / (hi - lo) * PLOT

    return scale


def _line(scale, lo: int, hi: int, factor: float) -> str:
    """Path data of predicted = factor x measured across the plot."""
    a, b = 10.0**lo, 10.0**hi
    return f"M{float(scale(a)):.1f} {PLOT - float(scale(a * factor)):.1f}L{float(scale(b)):.1f} {PLOT - float(scale(b * factor)):.1f}"


def _tick_label(exponent: int) -> str:
    """A power-of-ten latency tick: "100 ms", "10 s"."""
    value = 10.0**exponent
    return f"{value:g} ms" if value < 1000 else f"{value / 1000:g} s"


@dataclass(frozen=True)
class Histogram:
    """Signed relative error counts in HIST_BINS plus underflow/overflow, as bar heights."""

    method: str
    metric: str
    n: int
    bars: list[tuple[float, float, str]]  # (x px, height px, tooltip)
    labels: list[tuple[float, str]]  # (x px, label)


def histograms(points: pd.DataFrame, shown: list[str]) -> list[Histogram]:
    """One signed-error histogram per shown method and metric."""
    hit = points[points["covered"]]
    out = []
    width = PLOT / (len(HIST_BINS) + 1)
    for metric in metrics.METRICS:
        for method in shown:
            part = hit[hit["method"] == method]
            err = metrics.signed_error(part[f"{metric}_pred_ms"], part[f"{metric}_meas_ms"])
            counts = np.histogram(np.clip(err, HIST_BINS[0], HIST_BINS[-1] + 1.0), bins=[*HIST_BINS, np.inf])[0]
            top = max(int(counts.max()), 1) if counts.size else 1
            bars = [(i * width, c / top * (PLOT - 20), _bin_label(i, c)) for i, c in enumerate(counts)]
            labels = [(i * width, f"{100 * HIST_BINS[i]:+.0f}%") for i in range(0, len(HIST_BINS), 5)]
            out.append(Histogram(method, metric, len(part), bars, labels))
    return out


def _bin_label(i: int, count: int) -> str:
    if i >= len(HIST_BINS) - 1:
        return f"> {100 * HIST_BINS[-1]:+.0f}%: {count}"
    return f"{100 * HIST_BINS[i]:+.0f}% to {100 * HIST_BINS[i + 1]:+.0f}%: {count}"


def closing_note(points: pd.DataFrame, shown: list[str]) -> dict | None:
    """The largest remaining error sources of the primary method, with the evidence behind them."""
    primary = next((m for m in PRIMARY_ORDER if m in shown), None)
    if primary is None:
        return None
    hit = points[(points["method"] == primary) & points["covered"]]
    contributions = {metric: metrics.error_contributions(points, primary, metric, CONTRIBUTION_KEYS, 6) for metric in metrics.METRICS}
    return {
        "method": primary,
        "contributions": {k: v.to_dict("records") for k, v in contributions.items()},
        "keys": CONTRIBUTION_KEYS,
        "attention_dp": _split_stats(hit, hit["attention_dp"].fillna(1) > 1, "attention-DP rows", "other rows"),
        "steps": step_evidence(points),
        "residual": low_concurrency_residual(hit),
        "replicates": replicate_floors(hit),
        "protocol_facts": protocol_facts(points),
    }


LOW_CONCURRENCY = 8  # clients at most: the replay's queue is near empty, so what stays unpriced is per request
RESIDUAL_KEYS = ["backend", "system", "model", "isl"]


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


REPLICATE_KEYS = ["backend", "mode"]


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
    columns = dict(n=("id", "size"), replicated=("replicated", "sum"), ttft_mape=("ttft_ape", "mean"),
                   ttft_floor=("ttft_floor", "mean"), tpot_mape=("tpot_ape", "mean"), tpot_floor=("tpot_floor", "mean"))  # fmt: skip
    rows = frame.groupby(REPLICATE_KEYS).agg(**columns).reset_index().to_dict("records")
    total = frame.assign(**{key: "all" for key in REPLICATE_KEYS}).groupby(REPLICATE_KEYS).agg(**columns)
    return {"keys": REPLICATE_KEYS, "rows": rows + total.reset_index().to_dict("records")}


STEP_KEYS = ["system", "backend", "mode"]


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


def _split_stats(hit: pd.DataFrame, mask: pd.Series, yes: str, no: str) -> list[tuple[str, int, metrics.ErrorStats, metrics.ErrorStats]]:
    out = []
    for label, part in ((yes, hit[mask]), (no, hit[~mask])):
        out.append((label, len(part), metrics.error_stats(part["ttft_pred_ms"], part["ttft_meas_ms"]),
                    metrics.error_stats(part["tpot_pred_ms"], part["tpot_meas_ms"])))  # fmt: skip
    return out


def protocol_facts(points: pd.DataFrame) -> list[str]:
    """Counted facts about the protocols and versions the predictions rest on."""
    rows = points.drop_duplicates("id")
    newer = rows["version_note"].str.contains("older than every data version", regex=False).sum()
    undocumented = (rows["source"] != "inferencex").sum()
    unchunked = rows[(rows["chunked_prefill"].astype(str).str.lower() == "false") & (rows["mode"] == "agg")]
    blocked = (unchunked["isl"] + unchunked["concurrency"].fillna(1) > unchunked["step_token_budget"]).sum()
    from_recipes = (rows["engine_settings"] == "source").sum()
    streamed, stream_values = _above(rows["stream_interval"], 1)
    receiving, recv_values = _above(rows["recv_interval"], 1)
    held, wait_values = _above(rows["batch_wait_iters"], 0)
    balanced, balance_values = _above(rows["adp_balance_iters"], 0)
    drafting, draft_values = _above(rows["nextn"], 0)
    compiling, compile_values = _above(rows["shape_compile_ms"], 0)
    facts = [
        f"{from_recipes} of {len(rows)} rows take their engine scheduler settings from the source's launch recipe (InferenceX "
        "TRT-LLM DeepSeek-R1, gpt-oss and Llama-3.1-70B: their max_num_tokens rule, chunked prefill off, an fp8 KV cache on agg runs but gpt-oss's on H200, which keeps the checkpoint's; InferenceX SGLang "
        "DeepSeek-R1/V3 and Qwen3.5 FP8 where every stored recipe version of the runs' era agrees: chunked prefill size, stream interval, "
        "scheduler receive interval); the others use the engines' documented defaults (the sample does not record the launch "
        "flags per row).",
        f"{streamed} rows stream every {stream_values} tokens (SGLang --stream-interval): SGLang 0.5.6 and 0.5.9 (read in their "
        "source) send the first token at once and the last with the finish, so neither TTFT nor TPOT moves.",
        f"{receiving} rows run SGLang with --scheduler-recv-interval {recv_values}: the scheduler takes in new requests only every "
        "that many decode steps while decodes run, so an arriving prompt waits for the next intake.",
        f"{undocumented} rows come from sources whose client protocol is not published; the benchmark-protocol replay cannot run them.",
        f"{newer} rows were measured on an engine version older than every data version and are priced with the nearest (newer) data.",
        f"{blocked} of {len(unchunked)} agg rows run with chunked prefill off and a prompt plus the running decodes larger than "
        "the step token budget, so the replay admits such a prompt only once the decodes free the budget.",
    ]
    if held:
        facts.insert(3, f"{held} rows run TRT-LLM with batch waiting (batch_wait_timeout_iters {wait_values}, from the "
                        "source's recipe): a prompt that would be prefilled beside running decodes is held, the step only decoding, "
                        "until that many steps have passed or the step's tokens reach the recipe's share of the token budget.")
    if balanced:
        facts.insert(3, f"{balanced} rows run TRT-LLM under attention DP with its balance on (timeout_iters {balance_values}, from the "
                        "source's recipe): a prompt that would be prefilled beside running decodes waits until that many steps have "
                        "counted since the last release; one rank is replayed, and a backlog left at a release stands for every rank "
                        "holding a prompt, which goes at the next step, or after the recipe's batching wait beside decodes (gpt-oss: "
                        "up to 10 steps; DeepSeek-R1: none).")
    if compiling:
        facts.insert(3, f"{compiling} rows run SGLang builds that compile a Triton kernel per prefill shape for gated-delta-net "
                        f"layers (the FLA l2norm token count a tl.constexpr before SGLang PR 31558): the closed-loop replay adds "
                        f"{compile_values} ms (PR 23448) to a pass that prefills a token count new to the run.")
    fractions = rows["kv_free_memory_fraction"].dropna()
    if len(fractions):
        capped = points["note"].fillna("").str.contains(KV_CAP_NOTE, regex=False) & (points["method"] == "closed_loop")
        facts.insert(3, f"{len(fractions)} rows run TRT-LLM with the KV-cache memory fraction of the source's recipe, or "
                        "TRT-LLM's default where it sets none "
                        f"(free_gpu_memory_fraction {' or '.join(f'{v:g}' for v in sorted(set(fractions)))}): TRT-LLM admits a request "
                        "only with KV room for its whole prompt and output (guaranteed-no-evict), so for the natively modelled "
                        "(dense) architectures the closed-loop replays cap the running requests at what the pool (that fraction of "
                        "the memory the native memory model leaves) holds at the protocol's mean lengths; the cap binds on "
                        f"{int(capped.sum())} closed_loop points, whose notes give it. The other architectures' memory model is the "
                        "reference's accounting, not checked against their checkpoints, and their pool (a small difference of large "
                        "numbers) sets no cap.")
    if drafting:
        accepted = ", ".join(f"{1 + a:g} tokens per step with {n} draft{'s' * (n > 1)}" for n, a in sorted(TRTLLM_DSR1_MTP_ACCEPTED.items()))
        facts.insert(3, f"{drafting} rows run TRT-LLM DeepSeek-R1 with MTP speculative decoding ({draft_values} draft tokens, from "
                        "the source's recipe: InferenceX's MTP keys alone ran their image): every method but legacy prices verify "
                        f"steps of drafts + 1 query tokens per request that commit TRT-LLM's published acceptance ({accepted}); "
                        "legacy prices them without drafts, as the baseline.")
    return facts


def _above(values: pd.Series, floor: int) -> tuple[int, str]:
    """(rows with a value above floor, those values joined by "or"); an empty cell counts as floor."""
    values = values.fillna(floor)
    above = sorted({int(v) for v in values[values > floor]})
    return int((values > floor).sum()), " or ".join(map(str, above)) or str(floor)


def mapping_decisions(points: pd.DataFrame) -> dict:
    """Counts of the model-alias, layout, version and pricer decisions."""
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


@dataclass(frozen=True)
class TableRow:
    """One measurement in the per-point table, with each shown method's outcome."""

    base: list[tuple[str, str]]  # (sort value, text) per base column
    cells: list[tuple[str, str, str]]  # (sort value, text, title) per method column


TABLE_BASE = (("id", "id"), ("system", "system"), ("backend", "backend"), ("mode", "mode"), ("model", "model"),
              ("C", "concurrency"), ("isl", "isl"), ("osl", "osl"), ("TTFT meas ms", "ttft_meas_ms"),
              ("TPOT meas ms", "tpot_meas_ms"))  # fmt: skip


def point_table(points: pd.DataFrame, shown: list[str]) -> dict:
    """Header and rows of the sortable per-point table (one row per measurement, in input order)."""
    header = [label for label, _ in TABLE_BASE]
    for method in shown:
        header += [f"{method} TTFT ms", f"{method} TTFT err", f"{method} TPOT ms", f"{method} TPOT err"]
    outcome = {(r.id, r.method): r for r in points[points["method"].isin(shown)].itertuples(index=False)}
    rows = []
    for base in points.drop_duplicates("id").to_dict("records"):
        cells = [_base_cell(base[column]) for _, column in TABLE_BASE[1:]]
        mid = str(base["id"])
        rows.append(TableRow([("", mid), *cells], [c for m in shown for c in _method_cells(outcome.get((mid, m)))]))
    return {"header": header, "rows": rows}


def _base_cell(value) -> tuple[str, str]:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return (_key(value), ms(float(value)))
    return ("", "" if pd.isna(value) else str(value))


def _key(value: float) -> str:
    """A compact numeric sort key."""
    return f"{float(value):.6g}"


def _method_cells(r) -> list[tuple[str, str, str]]:
    """TTFT pred, TTFT err, TPOT pred, TPOT err; an uncovered method shows dashes, its reason on the first."""
    if r is None or not r.covered:
        reason = "" if r is None else reason_group(r.reason)
        return [("nan", "-", reason)] + [("nan", "-", "")] * 3
    cells = []
    for metric in metrics.METRICS:
        pred, meas = getattr(r, f"{metric}_pred_ms"), getattr(r, f"{metric}_meas_ms")
        cells += [(_key(pred), ms(pred), r.note), (_key((pred - meas) / meas), signed_pct((pred - meas) / meas), "")]
    return cells
