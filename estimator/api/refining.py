"""estimator.refine: result rows refined by the closed-loop replay, the `refine` command's params and
its result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from estimator.api.deployments import LONG_CONTEXT_PARAM, check_fits_model
from estimator.api.flags import Command, Param
from estimator.closedloop import ENGINE, PRICINGS, Benchmark, ReplayOptions, Steady, refine_closed_loop_latency
from estimator.closedloop.engine import OP_PRICERS
from estimator.closedloop.frame import REFINED_COLUMNS, RUNNING_CAP_COLUMN
from estimator.closedloop.protocol import PROTOCOLS
from estimator.deployment import require_positive
from estimator.errors import EstimatorError, InvalidInputError, is_interrupt
from estimator.models.config import model_shape
from estimator.settings import KV_MEMORY_SETTINGS, EngineSettings

REPLAY, SCHEDULER = "replay", "agg scheduler (engine pricing)"

REFINE = Command(
    "refine",
    (
        Param("pricing", str, ENGINE, "pass pricing: row (the reference's row-scalar wiring) or engine (the step composition)", REPLAY, choices=PRICINGS),
        Param("protocol", str, "steady", "run protocol: steady (warm-up and window) or benchmark (a finite run)", REPLAY, choices=PROTOCOLS),
        Param("prompts_per_client", int, Benchmark.prompts_per_client, "benchmark: N = this x C prompts", REPLAY),
        Param("range_ratio", float, Benchmark.range_ratio, "benchmark: lengths uniform on [r*L, L]", REPLAY),
        Param(
            "client_seed",
            int,
            help="benchmark: the client's NumPy seed, whose length draws the replay repeats (vLLM benchmark_serving: "
            "0, SGLang bench_serving: 1; default: evenly spaced lengths)",
            group=REPLAY,
        ),
        Param("pricer", str, "native", "op pricer behind engine pricing", REPLAY, choices=OP_PRICERS),
        Param("budget", int, help="agg tokens per step (max_num_batched_tokens / chunked_prefill_size / max_num_tokens)", group=SCHEDULER),
        Param("chunked", bool, True, "agg chunked prefill (with --budget)", SCHEDULER, negatable=True),
        Param("max_num_seqs", int, help="agg running requests per rank (with --budget)", group=SCHEDULER),
        Param(
            "kv_free_memory_fraction",
            float,
            help="TRT-LLM agg: free_gpu_memory_fraction; caps running requests at the KV pool (with --budget)",
            group=SCHEDULER,
        ),
        Param(
            "gpu_memory_utilization",
            float,
            help="vLLM agg: --gpu-memory-utilization, the share of GPU memory in (0, 1], e.g. 0.9; caps running requests at the KV pool "
            "(with --budget; without, vLLM's 0.9)",
            group=SCHEDULER,
        ),
        LONG_CONTEXT_PARAM,
    ),
    example="python -m estimator refine sweep.csv refined.csv --protocol benchmark",
)


@dataclass(frozen=True)
class RefineResult:
    """Result rows refined by the closed-loop replay."""

    frame: pd.DataFrame = field(repr=False, compare=False)  # the input rows plus REFINED_COLUMNS and max_num_seqs_refined
    summary: str  # the line the command prints on stderr
    unpriced: int  # rows the replay could not price (their refine_reason says why)
    arguments: object = field(compare=False)  # the call's arguments, defaults filled in (REFINE.arguments_type)

    @property
    def row(self) -> dict:
        """The first refined row."""
        return self.frame.iloc[0].to_dict()

    def to_frame(self) -> pd.DataFrame:
        """The refined rows (a copy): every input column, then ttft_refined, ttft_p50_refined,
        ttft_p99_refined (ms), tpot_refined (ms/token), throughput_refined (requests/s),
        refine_reason ("" when priced) and max_num_seqs_refined."""
        return self.frame.copy()


def refine(frame: pd.DataFrame, **arguments) -> RefineResult:
    """Refine result rows (a sweep table, estimate rows) with the closed-loop replay, as
    `python -m estimator refine IN OUT`: keyword arguments are its flags with underscores (pricing,
    protocol, budget, ...) and take the same defaults. A row that cannot be refined reports why in
    refine_reason and the others are refined; bad arguments raise EstimatorError."""
    return refine_with(frame, REFINE.bind(arguments))


def refine_with(frame: pd.DataFrame, args) -> RefineResult:
    """refine of bound arguments (the command line calls this with its parsed flags)."""
    options = replay_options(args)
    if not isinstance(frame, pd.DataFrame) or frame.empty:
        raise InvalidInputError("refine needs a DataFrame of at least one result row")
    refined = refine_rows(frame, options, args.allow_long_context)
    unpriced = int((refined["refine_reason"] != "").sum())
    summary = (f"refined {len(refined) - unpriced} of {len(refined)} rows ({options.pricing} pricing, {options.protocol.name} protocol)"
               + (f"; {unpriced} unpriceable, reasons in refine_reason" if unpriced else ""))  # fmt: skip
    return RefineResult(refined, summary, unpriced, args)


def replay_options(args) -> ReplayOptions:
    """The replay options of the arguments (scheduler settings only with a budget)."""
    protocol = (
        Steady() if args.protocol == "steady" else Benchmark(prompts_per_client=args.prompts_per_client, range_ratio=args.range_ratio, seed=args.client_seed)
    )
    for name in KV_MEMORY_SETTINGS:
        if getattr(args, name) is not None and (args.budget is None or args.pricing != ENGINE):
            raise InvalidInputError(f"--{name.replace('_', '-')} needs --budget (the launch's scheduler settings) and engine pricing")
    if args.budget is None:
        return ReplayOptions(args.pricing, protocol, None, args.pricer)
    settings = EngineSettings(args.budget, args.chunked, args.max_num_seqs, kv_free_memory_fraction=args.kv_free_memory_fraction,
                              gpu_memory_utilization=args.gpu_memory_utilization)  # fmt: skip
    return ReplayOptions(args.pricing, protocol, settings, args.pricer)


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
