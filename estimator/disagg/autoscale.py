"""Autoscale picking: prefill and decode engines chosen independently, one worker each.

Mirrors aiconfigurator 0.12.0 ``picking.pick_autoscale`` (``sweep_disagg(autoscale=True)``): no
worker-count rate matching. Each pool keeps its best engine per parallel layout among the
candidates meeting its own target (prefill on TTFT x the TTFT factor, strictly below; decode on
TPOT, strictly below), or, when none does, the closest ones; every prefill x decode pair at one
worker each is a row, and the top-N by tokens/s/gpu are returned. Orderings follow the reference,
ties included (stable multi-key sorts, pandas quicksort for the final ranking).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from estimator.disagg.combine import disagg_row
from estimator.disagg.ranking import quicksort_desc
from estimator.disagg.workers import Calibration, WorkerRow, round_row
from estimator.steps import Semantics

log = logging.getLogger(__name__)

SortKey = Callable[[dict], tuple]


def autoscale_pairs(prefill: Sequence[WorkerRow], decode: Sequence[WorkerRow], ttft_target: float, tpot_target: float,
                    semantics: Semantics, calibration: Calibration, top_n: int) -> list[dict]:  # fmt: skip
    """Every pair of the chosen prefill and decode engines as a disagg row at one worker each
    (prefill outer; legacy: 3-decimal rounded, as the reference's frame is)."""
    if not prefill or not decode:
        return []
    factor = calibration.ttft_factor
    prefills = _engines(prefill, lambda r: r["ttft"] * factor < ttft_target, lambda r: (r["ttft"] * factor, -r["seq/s/gpu"]), top_n,
                        f"no prefill candidate meets TTFT < {ttft_target:g} ms after the x{factor:g} correction")  # fmt: skip
    decodes = _engines(decode, lambda r: r["tpot"] < tpot_target, lambda r: (r["tpot"], -r["seq/s/gpu"]), top_n,
                       f"no decode candidate meets TPOT < {tpot_target:g} ms")  # fmt: skip
    rows = [disagg_row(p.row, 1, d.row, 1, calibration, decode_tokens_per_iteration=d.decode_tokens_per_iteration) for p in prefills for d in decodes]
    return [round_row(r) for r in rows] if semantics is Semantics.LEGACY else rows


def top_by_tokens_per_gpu(rows: Sequence[dict], top_n: int) -> list[dict]:
    """The top-N rows by tokens/s/gpu (pandas quicksort order, ties included)."""
    return [rows[i] for i in quicksort_desc([r["tokens/s/gpu"] for r in rows])][:top_n]


def _engines(workers: Sequence[WorkerRow], meets: Callable[[dict], bool], closest: SortKey, top_n: int, warning: str) -> list[WorkerRow]:
    """The best engine per parallel layout (first after sorting), top_n of them: among the workers
    whose rows meet the target by (seq/s/gpu desc, global_bs asc), else among all by `closest`."""
    passing = [w for w in workers if meets(w.row)]
    if passing:
        ordered = sorted(passing, key=lambda w: (-w.row["seq/s/gpu"], w.row["global_bs"]))
    else:
        log.warning("autoscale: %s; returning the closest engines", warning)
        ordered = sorted(workers, key=lambda w: closest(w.row))
    best = {}
    for w in ordered:
        best.setdefault(w.row["parallel"], w)
    return list(best.values())[:top_n]
