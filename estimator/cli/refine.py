"""Refine result rows with the closed-loop replay: IN (CSV or Parquet) -> OUT with the refined columns.

OUT holds every input column plus ttft_refined, ttft_p50_refined, ttft_p99_refined (ms),
tpot_refined (ms/token), throughput_refined (requests/s), refine_reason ("" when priced) and
max_num_seqs_refined (running requests per rank the agg replay admitted, after any KV-cache cap;
empty for disagg and unpriced rows).
--pricing row replays with the reference's row-scalar wiring; engine (the default) prices every
pass through the step composition on the row's deployment. --protocol steady is the reference's
warm-up and window; benchmark is a finite run of --prompts-per-client x C prompts from a burst
start with lengths uniform on [--range-ratio x L, L]. --budget / --chunked / --max-num-seqs set
the agg scheduler (default: the row's ctx_tokens with chunking for row pricing, the backend's
engine defaults for engine pricing); with them and engine pricing, --kv-free-memory-fraction caps
a TensorRT-LLM agg row's running requests at its KV-cache pool (natively modelled architectures;
other agg rows report why in refine_reason; disagg rows replay without agg scheduler settings).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from estimator.closedloop import PRICINGS, Benchmark, EngineSettings, ReplayOptions, Steady, refine_closed_loop_latency
from estimator.closedloop.engine import OP_PRICERS
from estimator.closedloop.protocol import PROTOCOLS
from estimator.errors import InvalidInputError
from estimator.io import atomic_to_table

READERS = {".csv": pd.read_csv, ".parquet": pd.read_parquet}


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", type=Path, help="result rows, .csv or .parquet")
    p.add_argument("output", type=Path, help="refined rows, .csv or .parquet")
    p.add_argument("--pricing", choices=PRICINGS, default="engine", help="pass pricing (default: engine)")
    p.add_argument("--protocol", choices=PROTOCOLS, default="steady", help="run protocol (default: steady)")
    p.add_argument("--prompts-per-client", type=int, default=Benchmark.prompts_per_client, help="benchmark: N = this x C prompts")
    p.add_argument("--range-ratio", type=float, default=Benchmark.range_ratio, help="benchmark: lengths uniform on [r*L, L]")
    p.add_argument("--budget", type=int, default=None, help="agg tokens per step (max_num_batched_tokens / chunked_prefill_size / max_num_tokens)")
    p.add_argument("--chunked", action=argparse.BooleanOptionalAction, default=True, help="agg chunked prefill (with --budget)")
    p.add_argument("--max-num-seqs", type=int, default=None, help="agg running requests per rank (with --budget)")
    p.add_argument("--kv-free-memory-fraction", type=float, default=None,
                   help="TRT-LLM agg: kv_cache_config.free_gpu_memory_fraction; caps running requests at the KV pool (with --budget)")
    p.add_argument("--pricer", choices=OP_PRICERS, default="native", help="op pricer behind engine pricing")


def options_from_args(args: argparse.Namespace) -> ReplayOptions:
    protocol = Steady() if args.protocol == "steady" else Benchmark(args.prompts_per_client, args.range_ratio)
    if args.kv_free_memory_fraction is not None and (args.budget is None or args.pricing != "engine"):
        raise InvalidInputError("--kv-free-memory-fraction needs --budget (the launch's scheduler settings) and engine pricing")
    if args.budget is None:
        return ReplayOptions(args.pricing, protocol, None, args.pricer)
    settings = EngineSettings(args.budget, args.chunked, args.max_num_seqs, kv_free_memory_fraction=args.kv_free_memory_fraction)
    return ReplayOptions(args.pricing, protocol, settings, args.pricer)


def _format(path: Path) -> str:
    """The table format of a path's suffix (.csv or .parquet)."""
    suffix = path.suffix.lower()
    if suffix not in READERS:
        raise InvalidInputError(f"{path}: unsupported format (use .csv or .parquet)")
    return suffix


def run(args: argparse.Namespace) -> int:
    read = READERS[_format(args.input)]
    _format(args.output)
    options = options_from_args(args)
    if not args.input.is_file():
        raise InvalidInputError(f"{args.input}: no such file")
    refined = refine_closed_loop_latency(read(args.input), options, running_caps=True)
    atomic_to_table(refined, args.output)
    unpriced = int((refined["refine_reason"] != "").sum())
    print(f"refined {len(refined) - unpriced} of {len(refined)} rows ({options.pricing} pricing, {options.protocol.name} protocol)"
          + (f"; {unpriced} unpriceable, reasons in refine_reason" if unpriced else ""), file=sys.stderr)
    return 0
