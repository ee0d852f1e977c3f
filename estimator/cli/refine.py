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
a TensorRT-LLM agg row's running requests at its KV-cache pool (natively modelled architectures)
and --gpu-memory-utilization a vLLM agg row's (vLLM's engine defaults cap at 0.9); other agg rows
report why in refine_reason; disagg rows replay without agg scheduler settings.
A bad row (a missing or NaN tp, a size out of range, a concurrency below 1, isl + osl beyond the
model's max_position_embeddings without --allow-long-context, a malformed model config, a replay
beyond what one holds) is reported in its refine_reason and the others are refined. OUT is checked
before any row is refined and must not be IN unless --overwrite-input; it is written atomically.
The Python API: estimator.refine(frame, **flags).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from estimator.api import REFINE, ExitStatus, refine_with
from estimator.api.refining import replay_options
from estimator.api.status import describe
from estimator.cli.common import register_command
from estimator.errors import InvalidInputError
from estimator.io import atomic_to_table, read_csv_table, require_writable

EXAMPLE = REFINE.example
EXIT_STATUS = describe(ExitStatus.FOUND, ExitStatus.BAD_INPUT)
# The columns a row's deployment reads as text, on either side of a disagg row: a version 0.10 is not the float 0.1.
TEXT_COLUMNS = {side + name: str for side in ("", "(p)", "(d)") for name in ("model", "system", "backend", "version", "gemm", "kvcache", "fmha", "moe", "comm")}


def _read_csv(path: Path) -> pd.DataFrame:
    """The CSV's rows (estimator.io.read_csv_table: a repeated column or a row past the header is a ValueError),
    the deployment's text columns as text."""
    return read_csv_table(path.read_bytes(), dtype=TEXT_COLUMNS)


READERS = {".csv": _read_csv, ".parquet": pd.read_parquet}


def register(p: argparse.ArgumentParser) -> None:
    files = p.add_argument_group("files")
    files.add_argument("input", type=Path, help="result rows, .csv or .parquet")
    files.add_argument("output", type=Path, help="refined rows, .csv or .parquet")
    files.add_argument("--overwrite-input", action="store_true", help="allow OUT to be IN (the input is replaced)")
    register_command(p, REFINE)


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


def run(ns: argparse.Namespace) -> int:
    _format(ns.input)
    _format(ns.output)
    args = REFINE.bind(REFINE.given(ns))
    replay_options(args)
    if ns.output.resolve() == ns.input.resolve() and not ns.overwrite_input:
        raise InvalidInputError(f"OUT {str(ns.output)!r} is IN: pass --overwrite-input to replace the input")
    require_writable(ns.output, "OUT")
    result = refine_with(read_rows(ns.input), args)
    atomic_to_table(result.frame, ns.output)
    print(result.summary, file=sys.stderr)
    return ExitStatus.FOUND
