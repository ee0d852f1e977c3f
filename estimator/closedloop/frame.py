"""DataFrame refinement, SLA filtering and picking, and repricing of result rows (closed-loop.md 3-4).

``refine_closed_loop_latency`` returns a copy with ``ttft_refined``, ``ttft_p50_refined``,
``ttft_p99_refined`` (ms), ``tpot_refined`` (ms/token), ``throughput_refined`` (system-wide
requests/s) and ``refine_reason`` ("" when priced). A row that cannot be priced (a missing or bad
column, a configuration that cannot make progress, a pass without perf data) gets NaN figures and
its reason; the input columns and frame are untouched. The three figures are one timeline: use
them as a set. With ``running_caps`` it also gives each priced agg row's admitted running requests
per rank (``max_num_seqs_refined``).

``reprice_closed_loop_row`` keeps each row kind's throughput convention: agg rows publish
tokens/s = seq/s x (osl - 1) (aiconfigurator's run_agg), disagg rows seq/s x osl (its disagg
summary), so a repriced row ranks against unrepriced rows of its kind on equal terms.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from estimator.closedloop.cases import MEMO, AggCase, ClosedLoop, prepare
from estimator.closedloop.rows import ReplayOptions, case_of, is_disagg
from estimator.errors import EstimatorError

REFINED_COLUMNS = ("ttft_refined", "ttft_p50_refined", "ttft_p99_refined", "tpot_refined", "throughput_refined", "refine_reason")
RUNNING_CAP_COLUMN = "max_num_seqs_refined"
DISAGG_KEYS = ("model", "(p)parallel", "(p)bs", "(p)workers", "(d)parallel", "(d)bs", "(d)workers")
AGG_KEYS = ("model", "parallel")
RANKING = ("throughput_refined", "tokens/s")


def refine_closed_loop_latency(df: pd.DataFrame, options: ReplayOptions | None = None, threads: int | None = None,
                               running_caps: bool = False) -> pd.DataFrame:  # fmt: skip
    """A copy of df with the refined columns (default options: engine pricing, steady protocol);
    with running_caps, also RUNNING_CAP_COLUMN: the running requests per rank each priced agg
    replay admitted, min(clients, max_num_seqs) after any KV-cache cap
    (EngineSettings.kv_free_memory_fraction), NaN for disagg and unpriced rows."""
    cases, reasons = _cases(df.to_dict("records"), options or ReplayOptions())
    outcomes = _replay(cases, reasons, threads or min(2, os.cpu_count() or 1))
    out = df.copy()
    for i, column in enumerate(REFINED_COLUMNS):
        out[column] = [outcome[i] for outcome in outcomes]
    if running_caps:
        out[RUNNING_CAP_COLUMN] = [_running_cap(case) if outcome[-1] == "" else math.nan for case, outcome in zip(cases, outcomes)]
    return out


def _running_cap(case) -> float:
    """An agg case's running requests per rank (NaN for a disagg case)."""
    if not isinstance(case, AggCase):
        return math.nan
    return float(min(case.clients, case.spec.settings.max_num_seqs or case.clients))


def _refine_records(records: list[Mapping], options: ReplayOptions, threads: int) -> list[tuple]:
    """(ttft, p50, p99, tpot, throughput, reason) per record."""
    return _replay(*_cases(records, options), threads)


def _cases(records: list[Mapping], options: ReplayOptions) -> tuple[list, list[str]]:
    """Per record, its replay case (None when it has none) and why not ("" when it has one)."""
    cases, reasons = [], []
    for record in records:
        try:
            cases.append(case_of(record, options))
            reasons.append("")
        except EstimatorError as exc:
            cases.append(None)
            reasons.append(str(exc))
    return cases, reasons


def _replay(cases: list, reasons: list[str], threads: int) -> list[tuple]:
    """(ttft, p50, p99, tpot, throughput, reason) per case (its reason where None); unique uncached
    cases replay on threads."""
    results: dict = {}
    todo = []
    for case in dict.fromkeys(c for c in cases if c is not None):
        hit = MEMO.get(case)
        if hit is not None:
            results[case] = hit
            continue
        try:
            todo.append(prepare(case))
        except EstimatorError as exc:
            results[case] = str(exc)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for prepared, result in zip(todo, pool.map(_run, todo)):
            results[prepared.case] = result
            if isinstance(result, ClosedLoop):
                MEMO.put(prepared.case, result)
    return [_outcome(results[c] if c is not None else reason) for c, reason in zip(cases, reasons)]


def _run(prepared):
    try:
        return prepared.run()
    except EstimatorError as exc:
        return str(exc)


def _outcome(result: ClosedLoop | str) -> tuple:
    if isinstance(result, str):
        return (math.nan,) * 5 + (result,)
    s = result.stats
    return s.ttft_mean, s.ttft_p50, s.ttft_p99, s.tpot_mean, result.throughput_rps, ""


def filter_closed_loop_sla(df: pd.DataFrame, ttft_ms: float | None = None, tpot_ms: float | None = None,
                           options: ReplayOptions | None = None) -> pd.DataFrame:  # fmt: skip
    """The refined copy without rows whose refined TTFT or TPOT exceeds its target (None: no
    check). Unpriced rows stay: NaN > x is false, and they already passed the legacy filter."""
    refined = refine_closed_loop_latency(df, options)
    keep = pd.Series(True, index=refined.index)
    if ttft_ms is not None:
        keep &= ~(refined["ttft_refined"] > ttft_ms)
    if tpot_ms is not None:
        keep &= ~(refined["tpot_refined"] > tpot_ms)
    return refined[keep]


def pick_under_closed_loop_sla(df: pd.DataFrame, ttft_ms: float | None = None, tpot_ms: float | None = None,
                               options: ReplayOptions | None = None) -> pd.DataFrame:  # fmt: skip
    """From the full per-operating-point table: the best compliant row of each deployment, ranked
    by refined throughput (priced rows first), then legacy tokens/s."""
    kept = filter_closed_loop_sla(df, ttft_ms, tpot_ms, options)
    if kept.empty:
        return kept
    order = [c for c in RANKING if c in kept.columns]
    ranked = kept.sort_values(order, ascending=False, na_position="last", kind="stable")
    keys = [k for k in (DISAGG_KEYS if "(p)workers" in kept.columns else AGG_KEYS) if k in kept.columns]
    if not keys:
        return ranked
    return ranked.groupby(keys, dropna=False, sort=False).head(1)


def reprice_closed_loop_row(row: Mapping, options: ReplayOptions | None = None) -> dict:
    """A dict copy of a result row with its latency and throughput columns from the replay
    (unchanged when the row cannot be priced)."""
    out = dict(row)
    ((ttft, _, _, tpot, rps, reason),) = _refine_records([out], options or ReplayOptions(), 1)
    if reason:
        return out
    osl = int(out["osl"])
    out.update({"ttft": ttft, "tpot": tpot, "request_latency": ttft + tpot * max(osl - 1, 0), "seq/s": rps})
    out["tokens/s"] = rps * (osl if is_disagg(out) else max(osl - 1, 0))
    if out.get("num_total_gpus"):
        out["seq/s/gpu"] = rps / out["num_total_gpus"]
        out["tokens/s/gpu"] = out["tokens/s"] / out["num_total_gpus"]
    if "tokens/s/user" in out:
        out["tokens/s/user"] = 1000.0 / tpot if tpot > 0 else 0.0
    if "request_rate" in out:
        out["request_rate"] = rps
    return out
