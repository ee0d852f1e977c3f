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
A bad row (a missing or NaN tp, a size out of range, a concurrency below 1, isl + osl beyond the
model's max_position_embeddings without --allow-long-context, a malformed model config, a replay
beyond what one holds) is reported in its refine_reason and the others are refined. OUT is checked
before any row is refined and must not be IN unless --overwrite-input; it is written atomically.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from estimator.cli.common import add_long_context_arg, check_fits_model
from estimator.closedloop import ENGINE, PRICINGS, Benchmark, ReplayOptions, Steady, refine_closed_loop_latency
from estimator.closedloop.engine import OP_PRICERS
from estimator.closedloop.frame import REFINED_COLUMNS, RUNNING_CAP_COLUMN
from estimator.closedloop.protocol import PROTOCOLS
from estimator.deployment import require_positive
from estimator.errors import EstimatorError, InvalidInputError, is_interrupt
from estimator.io import atomic_to_table, require_writable
from estimator.models.config import model_shape
from estimator.settings import EngineSettings

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
    p.add_argument(
        "--kv-free-memory-fraction",
        type=float,
        default=None,
        help="TRT-LLM agg: kv_cache_config.free_gpu_memory_fraction; caps running requests at the KV pool (with --budget)",
    )
    p.add_argument("--pricer", choices=OP_PRICERS, default="native", help="op pricer behind engine pricing")
    p.add_argument("--overwrite-input", action="store_true", help="allow OUT to be IN (the input is replaced)")
    add_long_context_arg(p)


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


def read_rows(path: Path) -> pd.DataFrame:
    """The rows of IN; an empty, binary or truncated file is one line naming it."""
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    try:
        rows = READERS[_format(path)](path)
    except (OSError, ValueError) as exc:  # pandas' EmptyDataError and ParserError, pyarrow's ArrowInvalid, UnicodeDecodeError
        raise InvalidInputError(f"cannot read {path}: {(str(exc).splitlines() or [type(exc).__name__])[0]}") from None
    if rows.empty:
        raise InvalidInputError(f"{path}: no rows")
    return rows


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _require_size(record: dict, key: str) -> None:
    """InvalidInputError unless record[key] is a whole number in [1, MAX_SIZE] (missing and NaN included)."""
    value = record.get(key)
    if not _present(value):
        raise InvalidInputError(f"{key} is missing")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{key} must be a number, got {value!r}") from None
    if not number.is_integer():
        raise InvalidInputError(f"{key} must be an integer, got {value!r}")
    require_positive(key, int(number))


def row_reason(record: dict, engine: bool, allow_long_context: bool = False) -> str:
    """Why a row cannot be refined, found before any replay ("" when nothing is wrong): a missing,
    NaN or out-of-range isl, osl or pp, a concurrency below 1 or out of range (absent: bs), isl + osl
    beyond the model's max_position_embeddings unless allow_long_context or a pp beyond its layers,
    and for engine pricing, which builds the row's deployment, a missing or NaN tp per side (never a
    silent tp 1) or a malformed model config (row pricing never reads the model: one whose config
    does not resolve is not checked)."""
    sides = ("(p)", "(d)") if _present(record.get("(p)workers")) else ("",)
    optional = [key for key in ("concurrency", *(side + "pp" for side in sides)) if _present(record.get(key))]
    try:
        for key in ("isl", "osl", *optional):
            _require_size(record, key)
        if engine:
            for side in sides:
                _require_size(record, side + "tp")
        model = str(record.get("model"))
        if engine or _resolves(model):
            for side in sides:
                check_fits_model(model, _size(record, side + "pp"), _size(record, "isl") + _size(record, "osl"), allow_long_context)
    except EstimatorError as exc:
        return str(exc)
    return ""


def _size(record: dict, key: str) -> int:
    """A size _require_size accepted; 1 when the row leaves it empty."""
    return int(float(record[key])) if _present(record.get(key)) else 1


def _resolves(model: str) -> bool:
    try:
        model_shape(model)
    except EstimatorError:
        return False
    return True


def refine_rows(rows: pd.DataFrame, options: ReplayOptions, allow_long_context: bool = False) -> pd.DataFrame:
    """The refined rows, one bad row never costing the others: rows with a row_reason are not
    replayed, and if replaying the rest together fails, each is replayed alone and a failing one
    reports its error in refine_reason."""
    engine = options.pricing == ENGINE
    reasons = pd.Series([row_reason(r, engine, allow_long_context) for r in rows.to_dict("records")], index=rows.index, dtype=object)
    good = rows[reasons == ""]
    try:
        refined = refine_closed_loop_latency(good, options, running_caps=True)
    except Exception as exc:  # a row the replay cannot take: find it by replaying each alone
        if is_interrupt(exc):
            raise
        refined = pd.concat([_refine_alone(good.loc[[i]], options) for i in good.index]) if len(good) else good
    out = rows.copy()
    for column in (*REFINED_COLUMNS, RUNNING_CAP_COLUMN):
        out[column] = refined.get(column, math.nan)
    out["refine_reason"] = out["refine_reason"].where(reasons == "", reasons)
    return out


def _refine_alone(row: pd.DataFrame, options: ReplayOptions) -> pd.DataFrame:
    try:
        return refine_closed_loop_latency(row, options, running_caps=True)
    except Exception as exc:
        if is_interrupt(exc):
            raise
        return row.assign(refine_reason=f"{type(exc).__name__}: {exc}")


def run(args: argparse.Namespace) -> int:
    _format(args.input)
    _format(args.output)
    options = options_from_args(args)
    if args.output.resolve() == args.input.resolve() and not args.overwrite_input:
        raise InvalidInputError(f"OUT {str(args.output)!r} is IN: pass --overwrite-input to replace the input")
    require_writable(args.output, "OUT")
    refined = refine_rows(read_rows(args.input), options, args.allow_long_context)
    atomic_to_table(refined, args.output)
    unpriced = int((refined["refine_reason"] != "").sum())
    print(
        f"refined {len(refined) - unpriced} of {len(refined)} rows ({options.pricing} pricing, {options.protocol.name} protocol)"
        + (f"; {unpriced} unpriceable, reasons in refine_reason" if unpriced else ""),
        file=sys.stderr,
    )
    return 0
