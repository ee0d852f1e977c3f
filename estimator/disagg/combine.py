"""One disagg row from a prefill worker row and a decode worker row (rate matching by formula).

Mirrors aiconfigurator 0.12.0 ``picking._build_disagg_summary_dict`` / ``sweep._rate_match_dict``
(legacy-semantics.md 3.2). The prefill TTFT gets the 1.8 queueing pre-correction; the system rate is
the slower pool's, each degraded (0.9 prefill, 0.92 decode). The row also records
``(p)prefill_step_ms``: the prefill worker's corrected batch latency before the 1.8 factor, minus
encoder time (the closed-loop replay's prefill step), and ``decode_tokens_per_iteration``: the
output tokens one decode iteration commits (1 + accepted MTP drafts; the replay's decode progress).
"""

from __future__ import annotations

from collections.abc import Mapping

from estimator.disagg.workers import Calibration

# aiconfigurator's common.ColumnsDisagg, in order, with the two step columns this project adds after (p)seq/s/worker.
DISAGG_COLUMNS = (
    "model", "isl", "osl", "prefix", "concurrency", "request_rate", "(p)bs", "(p)global_bs", "(p)workers",
    "(d)bs", "(d)global_bs", "(d)workers", "ttft", "tpot", "request_latency", "encoder_latency", "seq/s",
    "seq/s/gpu", "tokens/s", "tokens/s/gpu", "tokens/s/user", "(p)seq/s/worker", "(d)seq/s/worker",
    "(p)prefill_step_ms", "decode_tokens_per_iteration", "num_total_gpus",
    "(p)tp", "(p)pp", "(p)dp", "(p)moe_tp", "(p)moe_ep", "(p)cp", "(p)parallel", "(p)gemm", "(p)kvcache",
    "(p)fmha", "(p)moe", "(p)comm", "(p)memory", "(p)backend", "(p)version", "(p)system",
    "(d)tp", "(d)pp", "(d)dp", "(d)moe_tp", "(d)moe_ep", "(d)parallel", "(d)gemm", "(d)kvcache", "(d)fmha",
    "(d)moe", "(d)comm", "(d)memory", "(d)backend", "(d)version", "(d)system",
    "(e)workers", "(e)tp", "(e)pp", "(e)bs", "(e)parallel", "(e)memory", "power_w",
)  # fmt: skip
ADDED_COLUMNS = ("(p)prefill_step_ms", "decode_tokens_per_iteration")  # this project's; the reference's row has neither
_PREFILL_COPIED = ("tp", "pp", "dp", "moe_tp", "moe_ep", "cp", "parallel", "gemm", "kvcache", "fmha", "moe", "comm",
                   "memory", "backend", "version", "system")  # fmt: skip
_DECODE_COPIED = tuple(c for c in _PREFILL_COPIED if c != "cp")  # ColumnsDisagg has no (d)cp


def system_rate(prefill_rate: float, prefill_workers: int, decode_rate: float, decode_workers: int, calibration: Calibration) -> float:
    """Requests/s of the deployment: the slower of the two degraded pools."""
    return min(
        prefill_rate * prefill_workers * calibration.prefill_degradation,
        decode_rate * decode_workers * calibration.decode_degradation,
    )


def disagg_row(
    prefill: Mapping[str, object],
    prefill_workers: int,
    decode: Mapping[str, object],
    decode_workers: int,
    calibration: Calibration = Calibration(),
    *,
    decode_tokens_per_iteration: float,
) -> dict:
    """The unrounded disagg row of `prefill_workers` prefill and `decode_workers` decode workers
    (decode_tokens_per_iteration: the decode worker's progress, >= 1; its tpot already divides by it)."""
    osl = prefill["osl"]
    ttft = prefill["ttft"] * calibration.ttft_factor
    tpot = decode["tpot"]
    seq_s = system_rate(prefill["seq/s"], prefill_workers, decode["seq/s"], decode_workers, calibration)
    gpus = prefill["num_total_gpus"] * prefill_workers + decode["num_total_gpus"] * decode_workers
    decode_time = tpot * max(osl - 1, 0)
    total_time = ttft + decode_time
    power = (prefill["power_w"] * ttft + decode["power_w"] * decode_time) / total_time if total_time > 0 else 0.0
    return {
        "model": prefill["model"], "isl": prefill["isl"], "osl": osl, "prefix": prefill["prefix"],
        "concurrency": decode["concurrency"] * decode_workers, "request_rate": seq_s,
        "(p)bs": prefill["bs"], "(p)global_bs": prefill["global_bs"], "(p)workers": prefill_workers,
        "(d)bs": decode["bs"], "(d)global_bs": decode["global_bs"], "(d)workers": decode_workers,
        "ttft": ttft, "tpot": tpot, "request_latency": ttft + tpot * max(osl - 1, 0),
        "encoder_latency": float(prefill["encoder_latency"]), "seq/s": seq_s,
        "seq/s/gpu": seq_s / gpus if gpus > 0 else 0.0, "tokens/s": seq_s * osl,
        "tokens/s/gpu": seq_s * osl / gpus if gpus > 0 else 0.0, "tokens/s/user": decode["tokens/s/user"],
        "(p)seq/s/worker": prefill["seq/s"], "(d)seq/s/worker": decode["seq/s"],
        "(p)prefill_step_ms": prefill["ttft"] - prefill["encoder_latency"],
        "decode_tokens_per_iteration": float(decode_tokens_per_iteration), "num_total_gpus": gpus,
        **{f"(p){c}": prefill[c] for c in _PREFILL_COPIED},
        **{f"(d){c}": decode[c] for c in _DECODE_COPIED},
        "(e)workers": 0, "(e)tp": 0, "(e)pp": 0, "(e)bs": 0, "(e)parallel": "",
        "(e)memory": float(prefill["encoder_memory"]), "power_w": power,
    }  # fmt: skip
