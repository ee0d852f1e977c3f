"""A recommended configuration as one flat record: the columns of best_configs.csv and of --json.

Units are in the names (ms, tokens/s); throughput per GPU is budget-wide (idle GPUs of the budget
count, as AIConfigurator ranks). Agg rows fill the worker columns, disagg rows the prefill_* and
decode_* ones; the others are empty. No field is ever None in a label: a layout prints its sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from estimator.recommend.picking import CLUSTER, REPLICAS, USED

LAYOUT_SIZES = ("tp", "pp", "dp", "moe_tp", "moe_ep")
WORKER_COLUMNS = (*LAYOUT_SIZES, "batch_size", "ctx_tokens")
ROLE_COLUMNS = ("workers", *LAYOUT_SIZES, "batch_size")
SUMMARY_COLUMNS = (
    "mode", "rank", "backend", "version", "decided_by", "tokens/s/gpu", "tokens/s/user", "ttft_ms", "tpot_ms",
    "request_latency_ms", "concurrency", "concurrency_per_replica", "request_rate", "total_gpus", "replicas",
    "gpus_per_replica", "layout", *WORKER_COLUMNS, *(f"prefill_{c}" for c in ROLE_COLUMNS),
    *(f"decode_{c}" for c in ROLE_COLUMNS), "launch_dir",
)  # fmt: skip


def _int(value) -> int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(value)


def _sizes(row: Mapping, prefix: str = "") -> dict[str, int | None]:
    return {name: _int(row.get(f"{prefix}{name}")) for name in LAYOUT_SIZES}


def sizes_label(sizes: Mapping[str, int | None]) -> str:
    """tp and pp always, attention dp when > 1, MoE tp and ep when either is > 1."""
    label = f"tp{sizes['tp']} pp{sizes['pp']}"
    if (sizes.get("dp") or 1) > 1:
        label += f" dp{sizes['dp']}"
    if (sizes.get("moe_tp") or 1) > 1 or (sizes.get("moe_ep") or 1) > 1:
        label += f" etp{sizes.get('moe_tp') or 1} ep{sizes.get('moe_ep') or 1}"
    return label


def is_disagg(row: Mapping) -> bool:
    return _int(row.get("(p)workers")) is not None


def layout_label(row: Mapping) -> str:
    """An agg row's worker layout, or a disagg replica as 'P 2x(tp1 pp1) + D 1x(tp2 pp1)'."""
    if not is_disagg(row):
        return sizes_label(_sizes(row))
    return (f"P {_int(row['(p)workers'])}x({sizes_label(_sizes(row, '(p)'))}) + "
            f"D {_int(row['(d)workers'])}x({sizes_label(_sizes(row, '(d)'))})")  # fmt: skip


def summary_record(row: Mapping, mode: str, rank: int, decided_by: str, launch_dir: str = "") -> dict:
    """One top configuration in SUMMARY_COLUMNS (rank from 1)."""
    replicas = _int(row[REPLICAS])
    per_replica = _int(row["concurrency"])
    record = dict.fromkeys(SUMMARY_COLUMNS, "")
    record.update({
        "mode": mode, "rank": rank, "backend": row["backend"], "version": row.get("version", ""), "decided_by": decided_by,
        "tokens/s/gpu": float(row[CLUSTER]), "tokens/s/user": float(row["tokens/s/user"]), "ttft_ms": float(row["ttft"]),
        "tpot_ms": float(row["tpot"]), "request_latency_ms": float(row["request_latency"]), "concurrency": per_replica * replicas,
        "concurrency_per_replica": per_replica, "request_rate": float(row["request_rate"]) * replicas, "total_gpus": _int(row[USED]),
        "replicas": replicas, "gpus_per_replica": _int(row["num_total_gpus"]), "layout": layout_label(row), "launch_dir": launch_dir,
    })  # fmt: skip
    if is_disagg(row):
        for role, prefix in (("prefill", "(p)"), ("decode", "(d)")):
            record.update({f"{role}_{k}": v for k, v in _sizes(row, prefix).items()})
            record[f"{role}_workers"] = _int(row[f"{prefix}workers"])
            record[f"{role}_batch_size"] = _int(row[f"{prefix}bs"])
    else:
        record.update(_sizes(row))
        record["batch_size"] = _int(row["bs"])
        record["ctx_tokens"] = _int(row["ctx_tokens"])
    return record
