"""The one schema of a measured serving run, whatever its source, and its flat CSV columns.

A `Measurement` is one benchmark run of one deployment at one concurrency: what ran (engine,
image, system, model, layout), what the client did (its `Protocol`) and what it measured (TTFT,
TPOT and how they are defined). Missing facts stay None; nothing is filled in to look complete.
The project's own measurement files use the flat columns of `CSV_COLUMNS` (documented in
`COLUMN_DOCS`); `flatten` / `unflatten` convert between the two.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from estimator.caching import memo
from estimator.closedloop import SEED_LIMIT
from estimator.deployment import LATENCY_RESOLUTION_MS, MAX_SIZE, Backend
from estimator.settings import FIELDS as SETTINGS_FIELDS
from estimator.settings import EngineSettings


@dataclass(frozen=True)
class Layout:
    """The parallel layout of one kind of worker, as recorded (None: not recorded; a 0 MoE or attention-DP size is kept as recorded)."""

    batch_size: int | None  # max concurrent requests per attention-DP rank of one worker (>= 1)
    workers: int | None  # workers of this kind (agg: 1; >= 1)
    tp: int | None  # tensor parallel size (>= 1)
    pp: int | None  # pipeline parallel size (>= 1)
    attention_dp: int | None  # attention data-parallel size (>= 0; 0: none)
    moe_tp: int | None  # MoE tensor parallel size (>= 0, kept as recorded)
    moe_ep: int | None  # MoE expert parallel size (>= 0, kept as recorded)


@dataclass(frozen=True)
class Protocol:
    """How the benchmark client drove the engine (None: undocumented)."""

    client: str  # benchmark client and dataset, e.g. "vLLM benchmark_serving.py, random dataset"
    num_prompts: int | None  # requests per run (>= 1)
    request_rate: float | None  # requests/s offered; inf: every request dispatched at t = 0
    random_range_ratio: float | None  # r in (0, 1]: input/output lengths uniform on [r*L, L]; 1.0: fixed
    ignore_eos: bool | None  # outputs always run to osl tokens
    client_citation: str  # public document the client fields come from, or why there is none
    num_warmups: int | None  # warm-up requests sent before the measured ones (>= 0; not measured)
    client_seed: int | None  # the client's NumPy seed for its random lengths (0 <= seed < 2**32); None: not recorded


@dataclass(frozen=True)
class Statistics:
    """The per-request latency statistics a client kept, ms (None: not kept); ttft_ms and tpot_ms are the `statistic` ones."""

    statistic: str | None  # "mean" | "median" | "p99": which of these the row's ttft_ms and tpot_ms are; None: not stated
    ttft_mean_ms: float | None  # mean TTFT over the successful requests
    ttft_median_ms: float | None  # median TTFT
    ttft_p99_ms: float | None  # 99th-percentile TTFT
    tpot_mean_ms: float | None  # mean TPOT (as tpot_definition defines it per request)
    tpot_median_ms: float | None  # median TPOT
    tpot_p99_ms: float | None  # 99th-percentile TPOT


STATISTICS = ("mean", "median", "p99")  # the statistics a row may keep, in column order


@dataclass(frozen=True)
class Measurement:
    """One measured serving run. Lengths in tokens, latencies in ms; isl, osl >= 1; ttft_ms, tpot_ms > 0."""

    id: str  # unique within the loaded set
    source: str  # source key, e.g. "inferencex", "aic-gap-analysis", "project"
    provenance: str  # the source's own provenance text, verbatim
    engine: str  # "trtllm" | "vllm" | "sglang"
    engine_version: str | None  # version as recorded (may be a serving framework's, see image)
    image: str | None  # container image as recorded
    system: str  # GPU system id, e.g. "h200_sxm"
    model: str  # model id as measured, e.g. "deepseek-ai/DeepSeek-R1"
    precision: str | None  # checkpoint precision label, e.g. "fp8"
    gemm_quant: str | None  # GEMM quant mode as recorded; None: inferred from the checkpoint
    moe_quant: str | None  # MoE quant mode as recorded; None: inferred from the checkpoint
    mode: str  # "agg" | "disagg"
    isl: int  # nominal input length per request (the maximum when the protocol varies lengths)
    osl: int  # nominal output length per request (the maximum when the protocol varies lengths)
    concurrency: int | None  # client max concurrency C over the whole deployment (requests in flight at most)
    agg: Layout | None  # agg deployment (None for disagg rows)
    prefill: Layout | None  # disagg prefill workers (None for agg rows)
    decode: Layout | None  # disagg decode workers (None for agg rows)
    ttft_ms: float  # measured time to first token, ms
    tpot_ms: float  # measured time per output token, ms
    ttft_statistic: str  # which statistic ttft_ms is, e.g. "mean over requests"
    tpot_definition: str  # how tpot_ms is defined, e.g. "(e2e - ttft)/(osl - 1), mean over requests"
    statistics: Statistics | None  # every statistic the client kept (None: only ttft_ms and tpot_ms)
    measured_date: str | None  # ISO date the run was measured
    protocol: Protocol  # the benchmark client's protocol
    settings: EngineSettings  # the engine's launch settings: the source's recipe, else the engine's documented defaults


_NESTED = {"agg": Layout, "prefill": Layout, "decode": Layout, "protocol": Protocol, "settings": EngineSettings, "statistics": Statistics}
_PREFIX = {"agg": "agg_", "prefill": "prefill_", "decode": "decode_", "protocol": "", "settings": "", "statistics": ""}
SETTINGS_COLUMNS: Mapping[str, str] = MappingProxyType(
    {name: {"origin": "engine_settings", "citation": "engine_citation"}.get(name, name) for name in SETTINGS_FIELDS}
)  # EngineSettings field -> its CSV column (origin and citation keep the first format's names)


@memo()
def column_types() -> dict[str, type]:
    """Every flat CSV column, in order, with its value type (str, int, float or bool)."""
    types: dict[str, type] = {}
    for name, hint in typing.get_type_hints(Measurement).items():
        inner = _NESTED.get(name)
        if inner is None:
            types[name] = _base_type(hint)
        else:
            types.update({_column(name, n): _base_type(h) for n, h in typing.get_type_hints(inner).items()})
    return types


def _column(nested: str, name: str) -> str:
    """The CSV column of field `name` of the nested value `nested`."""
    return SETTINGS_COLUMNS[name] if nested == "settings" else _PREFIX[nested] + name


def _base_type(hint: Any) -> type:
    """T of `T` or `T | None`."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


CSV_COLUMNS = tuple(column_types())
ADDED_COLUMNS = frozenset(
    {
        "recv_interval",
        "batch_wait_iters",
        "batch_wait_tokens_ratio",
        "adp_balance_iters",
        "adp_batching_wait_iters",
        "kv_cache_dtype",
        "nextn",
        "nextn_accepted",
        "shape_compile_ms",
        "prefix_compile_ms",
        "kv_free_memory_fraction",
        "gpu_memory_utilization",
        "qk_norm_allreduces",
        "moe_backend",
        "cudagraph_max_tokens",
        "piecewise_cuda_graph",
        "num_warmups",
        "client_seed",
        *(f.name for f in dataclasses.fields(Statistics)),
    }
)  # columns added after the first format: a file without them reads them as empty

_LAYOUT_DOCS = {
    "batch_size": "max concurrent requests per attention-DP rank of one worker",
    "workers": "number of workers of this kind (agg: 1)",
    "tp": "tensor parallel size",
    "pp": "pipeline parallel size",
    "attention_dp": "attention data-parallel size",
    "moe_tp": "MoE tensor parallel size",
    "moe_ep": "MoE expert parallel size",
}
_WORKER_KINDS = {"agg": "agg deployment", "prefill": "disagg prefill workers", "decode": "disagg decode workers"}

COLUMN_DOCS: Mapping[str, str] = MappingProxyType(
    {
        "id": "row id, unique within a file",
        "source": "source key (e.g. inferencex, aic-gap-analysis, project)",
        "provenance": "the source's own provenance text, verbatim",
        "engine": "trtllm | vllm | sglang",
        "engine_version": "engine version as recorded; empty if not recorded",
        "image": "container image as recorded; empty if not recorded",
        "system": "GPU system id, e.g. h200_sxm",
        "model": "model id as measured (HF id)",
        "precision": "checkpoint precision label, e.g. fp8; empty if not recorded",
        "gemm_quant": "GEMM quant mode; empty: inferred from the checkpoint",
        "moe_quant": "MoE quant mode; empty: inferred from the checkpoint",
        "mode": "agg | disagg",
        "isl": "nominal input tokens per request (the maximum when lengths vary), >= 1",
        "osl": "nominal output tokens per request (the maximum when lengths vary), >= 1",
        "concurrency": "client max concurrency over the whole deployment",
        **{f"{k}_{f}": f"{_WORKER_KINDS[k]}: {doc}; empty if not recorded or not applicable" for k in _WORKER_KINDS for f, doc in _LAYOUT_DOCS.items()},
        "ttft_ms": "measured time to first token, ms, > 0",
        "tpot_ms": "measured time per output token, ms, > 0",
        "ttft_statistic": "which statistic ttft_ms is, e.g. 'mean over requests'",
        "tpot_definition": "how tpot_ms is defined, e.g. '(e2e - ttft)/(osl - 1), mean over requests'",
        "statistic": "mean | median | p99: which statistic ttft_ms and tpot_ms are; empty if not stated",
        **{
            f"{metric}_{stat}_ms": f"{stat} {metric.upper()} over the successful requests, ms; empty if not kept"
            for metric in ("ttft", "tpot")
            for stat in STATISTICS
        },
        "measured_date": "ISO date of the run; empty if not recorded",
        "client": "benchmark client and dataset",
        "num_prompts": "requests per run; empty if undocumented",
        "request_rate": "offered requests/s; inf: all dispatched at t = 0; empty if undocumented",
        "random_range_ratio": "r: input/output lengths uniform on [r*L, L]; 1.0 fixed; empty if undocumented",
        "ignore_eos": "true: outputs always run to osl tokens; empty if undocumented",
        "client_citation": "public document the client fields come from, or why there is none",
        "num_warmups": "warm-up requests the client sent before the measured ones; empty if not recorded",
        "client_seed": "the client's NumPy seed for its random lengths (the replay repeats its draws); empty if not recorded",
        **{SETTINGS_COLUMNS[name]: f.metadata["doc"] for name, f in SETTINGS_FIELDS.items()},
    }
)


def flatten(m: Measurement) -> dict[str, Any]:
    """The flat CSV record of a measurement (nested layouts and protocol spread into prefixed columns)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(Measurement):
        value = getattr(m, f.name)
        inner = _NESTED.get(f.name)
        if inner is None:
            out[f.name] = value
            continue
        for g in dataclasses.fields(inner):
            out[_column(f.name, g.name)] = None if value is None else getattr(value, g.name)
    return out


DefaultSettings = Callable[[str, str, str | None], EngineSettings]  # (engine, system, engine version) -> its documented defaults there


def unflatten(record: Mapping[str, Any], defaults: DefaultSettings) -> Measurement:
    """The measurement of a flat record (values already typed; a layout with no recorded field is
    None). Settings take each recorded value; an empty one takes the engine's default (`defaults`),
    and settings with no value recorded are the defaults themselves, origin and citation included."""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(Measurement):
        inner = _NESTED.get(f.name)
        if inner is None:
            kwargs[f.name] = record[f.name]
            continue
        values = {g.name: record[_column(f.name, g.name)] for g in dataclasses.fields(inner)}
        if inner is EngineSettings:
            defaulted = defaults(record["engine"], record["system"], record["engine_version"])
            kwargs[f.name] = defaulted.replace(**{k: v for k, v in values.items() if v is not None})
        else:
            kwargs[f.name] = inner(**values) if inner is Protocol or any(v is not None for v in values.values()) else None
    return Measurement(**kwargs)


def is_missing(value: Any) -> bool:
    """True for None, NaN and the empty string: a value the source did not record."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


# ---- what a recorded cell may hold (measurements.loaders refuses a row holding anything else) ----

_KINDS = tuple(_WORKER_KINDS)
SIZES = frozenset({"isl", "osl", "concurrency", "num_prompts", *(f"{k}_{f}" for k in _KINDS for f in ("batch_size", "workers", "tp", "pp"))})
SIZES_OR_ZERO = frozenset({"num_warmups", *(f"{k}_{f}" for k in _KINDS for f in ("attention_dp", "moe_tp", "moe_ep"))})
LATENCIES = frozenset({"ttft_ms", "tpot_ms", *(f.name for f in dataclasses.fields(Statistics) if f.name.endswith("_ms"))})
POSITIVE = frozenset({"request_rate"})
MAY_BE_INFINITE = frozenset({"request_rate"})  # inf: every request dispatched at t = 0
FRACTIONS = frozenset({"random_range_ratio"})  # in (0, 1]
SEEDS = frozenset({"client_seed"})  # NumPy's legacy seeds: [0, SEED_LIMIT)
MODE_LAYOUTS: Mapping[str, tuple[str, ...]] = MappingProxyType({"agg": ("agg",), "disagg": ("prefill", "decode")})  # mode -> the layouts a row records
CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType({"mode": tuple(MODE_LAYOUTS), "engine": tuple(b.value for b in Backend), "statistic": STATISTICS})


@memo()
def required_columns() -> frozenset[str]:
    """The columns every row records: the measurement's and its protocol's fields that are not
    Optional (an empty settings cell takes the engine's default, so none of those is required)."""
    required = set()
    for name, hint in typing.get_type_hints(Measurement).items():
        inner = _NESTED.get(name)
        if inner is None and type(None) not in typing.get_args(hint):
            required.add(name)
        elif inner is Protocol:
            required.update(_column(name, n) for n, h in typing.get_type_hints(inner).items() if type(None) not in typing.get_args(h))
    return frozenset(required)


def cell_reason(column: str, value: Any) -> str | None:
    """Why a typed cell value (None: empty) is not one the column may hold, naming the column and
    value; None when it may. Empty is refused only in required_columns; NaN in every column."""
    if value is None:
        return f"{column} is empty" if column in required_columns() else None
    if isinstance(value, float) and not (math.isfinite(value) or (value == math.inf and column in MAY_BE_INFINITE)):
        return f"{column} must be a finite number, got {value!r}"
    if column in CHOICES and value not in CHOICES[column]:
        return f"{column} must be one of {', '.join(CHOICES[column])}, got {value!r}"
    for columns, holds, wanted in _BOUNDS:
        if column in columns and not holds(value):
            return f"{column} must be {wanted}, got {value!r}"
    return None


_BOUNDS = (
    (SIZES, lambda v: 1 <= v <= MAX_SIZE, f"within [1, {MAX_SIZE}]"),
    (SIZES_OR_ZERO, lambda v: 0 <= v <= MAX_SIZE, f"within [0, {MAX_SIZE}]"),
    (POSITIVE, lambda v: v > 0, "> 0"),
    (LATENCIES, lambda v: v >= LATENCY_RESOLUTION_MS, f">= {LATENCY_RESOLUTION_MS:g} ms (a clock's nanosecond)"),
    (FRACTIONS, lambda v: 0 < v <= 1, "in (0, 1]"),
    (SEEDS, lambda v: 0 <= v < SEED_LIMIT, "within [0, 2**32)"),
)  # (columns, predicate on a recorded value, what it must be)


def layout_reason(mode: str | None, layouts: Mapping[str, Layout | None]) -> str | None:
    """Why the worker layouts recorded (keyed agg, prefill, decode; None: no cell recorded) do not fit
    the mode (MODE_LAYOUTS); None when they fit or the mode is not known."""
    missing = [kind for kind in MODE_LAYOUTS.get(mode or "", ()) if layouts[kind] is None]
    if not missing:
        return None
    return f"mode {mode} needs its {' and '.join(missing)} layout{'s' * (len(missing) > 1)}, but the {', '.join(f'{k}_*' for k in missing)} cells are all empty"


def bare(record: Mapping[str, Any]) -> Measurement:
    """A measurement of a record's top-level fields only (a missing one None; no layouts, protocol,
    statistics or settings): what a row the loader refuses shows of itself."""
    fields = {f.name: record.get(f.name) for f in dataclasses.fields(Measurement) if f.name not in _NESTED}
    return Measurement(**fields, **dict.fromkeys(_NESTED))


def is_bare(m: Measurement) -> bool:
    """True for a measurement made by `bare` (a loaded or sampled one always holds its settings)."""
    return m.settings is None
