"""Closed-loop figures of result rows: reading a row, the two pass pricings, the memoized replay.

Agg rows replay one attention-DP rank at C = ``bs`` (its per-rank batch); disagg rows replay the
whole P/D system at C = ``concurrency``. A row is disagg when its ``(p)workers`` value is present
(a NaN or None value in a mixed agg/disagg frame counts as absent). Optional columns that are
absent, None or NaN take their documented defaults.

Row wiring (``pricing="row"``, closed-loop.md sections 1 and 2, with the section 6 corrections):

* agg: ``prefill_step_ms*n*max(1, e - s)/chunk_ref + genonly_step_ms`` with
  ``chunk_ref = max(1, min(ctx_tokens, isl_eff - prefix))``; budget ``ctx_tokens``, chunking on,
  no sequence cap unless settings are given. ``isl_eff = isl + visual_tokens``; the encoder costs
  ``encoder_latency / bs`` per request (the row's encoder phase covers one batch of bs prompts);
  each decode pass advances ``decode_tokens_per_iteration`` tokens; throughput is scaled by
  ``concurrency / bs`` (= pp x attention_dp).
* disagg: flat ``(p)prefill_step_ms + encoder_latency`` per prefill batch of up to
  ``(p)global_bs`` prompts, flat ``tpot`` per decode iteration (already per token: k = 1) of up to
  ``(d)global_bs`` requests per worker (``(p)bs`` / ``(d)bs`` without attention DP).

Engine wiring (``pricing="engine"``): passes priced through estimator.closedloop.engine on the
row's deployment (agg: the given deployment or the row's model, system, backend, version,
parallel and quant columns; disagg: the ``(p)`` and ``(d)`` columns), with the engine's default
scheduler settings (estimator.settings) unless settings are given; decode requests
take nextn + 1 budget tokens and advance ``decode_tokens_per_iteration`` tokens per pass; agg
requests also pay the engine's prefill dispatch overhead as the reference's legacy TTFT does
(vLLM 0.8 ms per layer, once per request, on its path to the engine); tandem workers price each
pass at the busiest attention-DP rank's share.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from estimator.closedloop.cases import ENGINE, PRICINGS, AggCase, Case, ClosedLoop, RowSteps, TandemCase, replay_case
from estimator.closedloop.protocol import Benchmark, Protocol, Steady, parse_protocol
from estimator.closedloop.runs import AggRun, DisaggRun, Replayed, agg_engine_case, tandem_engine_case
from estimator.closedloop.spec import AggSpec, TandemSpec
from estimator.deployment import MAX_SIZE, Deployment, QuantOverrides
from estimator.errors import InvalidInputError
from estimator.settings import KV_MEMORY_SETTINGS, EngineSettings, reference_settings

_ABSENT = object()


@dataclass(frozen=True)
class ReplayOptions:
    """How rows are replayed; part of every memo key."""

    pricing: str = ENGINE  # "row": the reference's row-scalar wiring | "engine": passes priced by the step composition
    protocol: Steady | Benchmark = Steady()  # run protocol (a name is accepted and parsed)
    settings: EngineSettings | None = None  # agg scheduler settings; None: ctx_tokens + chunking (row), backend defaults (engine)
    pricer: str = "native"  # op pricer behind engine pricing: native | reference | sol

    def __post_init__(self) -> None:
        if self.pricing not in PRICINGS:
            raise InvalidInputError(f"unknown pricing {self.pricing!r} (known: {', '.join(PRICINGS)})")
        object.__setattr__(self, "protocol", parse_protocol(self.protocol))


# ---------------------------------------------------------------------------------------------
# Reading rows
# ---------------------------------------------------------------------------------------------


def _value(row: Mapping, key: str, default=_ABSENT):
    """row[key]; a missing, None or NaN value is absent: the default, or InvalidInputError without one."""
    try:
        value = row[key]
    except (KeyError, IndexError):
        value = None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        if default is _ABSENT:
            raise InvalidInputError(f"column {key!r} is missing or empty")
        return default
    return value


def _number(row: Mapping, key: str, default=_ABSENT) -> float | None:
    """A finite number; None only when the column is absent and the default is None."""
    value = _value(row, key, default)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{key} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise InvalidInputError(f"{key} must be finite, got {value!r}")
    return number


def _integer(row: Mapping, key: str, default=_ABSENT, minimum: int = 1) -> int | None:
    """A whole number in [minimum, MAX_SIZE]; None only when the column is absent and the default is None."""
    number = _number(row, key, default)
    if number is None:
        return None
    if number != int(number) or not minimum <= number <= MAX_SIZE:
        raise InvalidInputError(f"{key} must be an integer in [{minimum}, {MAX_SIZE}], got {_value(row, key, default)!r}")
    return int(number)


def _time(row: Mapping, key: str, default=_ABSENT) -> float:
    ms = _number(row, key, default)
    if ms < 0:
        raise InvalidInputError(f"{key} must be >= 0 ms, got {ms}")
    return ms


def is_disagg(row: Mapping) -> bool:
    """A row is disagg when its (p)workers value is present."""
    return _value(row, "(p)workers", None) is not None


def deployment_from_row(row: Mapping, side: str = "") -> Deployment:
    """The deployment of a row's columns; side is "" (agg), "(p)" or "(d)"."""

    def col(name: str, default=_ABSENT):
        sided = _value(row, side + name, None) if side else None
        return sided if sided is not None else _value(row, name, default)

    quant = {kind: col(kind, None) for kind in ("gemm", "moe", "kvcache", "fmha", "comm")}
    optional = {name: _integer(row, side + name, None) for name in ("moe_tp", "moe_ep")}
    return Deployment(
        model=str(col("model")), system=str(col("system")), backend=str(col("backend")), version=col("version", None),
        tp=_integer(row, side + "tp", 1), pp=_integer(row, side + "pp", 1), attention_dp=_integer(row, side + "dp", 1),
        nextn=_integer(row, "nextn", 0, minimum=0), quant=QuantOverrides(**quant), **optional,
    )  # fmt: skip


def agg_case(row: Mapping, options: ReplayOptions, deployment: Deployment | None = None) -> AggCase:
    """The replay inputs of an agg result row (raises InvalidInputError naming the bad column)."""
    bs = _integer(row, "bs")
    isl, osl = _integer(row, "isl"), _integer(row, "osl")
    visual = _integer(row, "visual_tokens", 0, minimum=0)
    prefix = _integer(row, "prefix", 0, minimum=0)
    if prefix >= isl + visual:
        raise InvalidInputError(f"prefix ({prefix}) must be smaller than the effective isl ({isl + visual})")
    tokens_per_decode, encoder_ms = _number(row, "decode_tokens_per_iteration", 1.0), _time(row, "encoder_latency", 0.0) / bs
    if options.pricing == ENGINE:
        deployment = deployment or deployment_from_row(row)
        run = AggRun(deployment, isl, osl, bs, prefix, _accepted_drafts(deployment.nextn, tokens_per_decode), visual, encoder_ms,
                     _integer(row, "concurrency", bs))  # fmt: skip
        return agg_engine_case(run, options.settings, options.protocol, options.pricer)
    ctx_tokens = _integer(row, "ctx_tokens")
    steps = RowSteps(_time(row, "prefill_step_ms"), max(1, min(ctx_tokens, isl + visual - prefix)), _time(row, "genonly_step_ms"))
    for name in KV_MEMORY_SETTINGS:
        if options.settings is not None and getattr(options.settings, name) is not None:
            raise InvalidInputError(f"{name} needs engine pricing (the KV pool is the deployment's)")
    spec = AggSpec(options.settings or reference_settings(ctx_tokens), prefix=prefix, tokens_per_decode=tokens_per_decode, encoder_ms=encoder_ms)
    return AggCase(bs, _number(row, "concurrency", bs) / bs, isl, visual, osl, options.protocol, spec, steps)


def _accepted_drafts(nextn: int, tokens_per_decode: float) -> float:
    """The accepted drafts per decode step a row's decode_tokens_per_iteration stands for (1 + accepted with MTP)."""
    return tokens_per_decode - 1.0 if nextn > 0 else 0.0


def tandem_case(row: Mapping, options: ReplayOptions, prefill: Deployment | None = None, decode: Deployment | None = None) -> TandemCase:
    """The replay inputs of a disagg result row."""
    workers = (_integer(row, "(p)workers"), _integer(row, "(d)workers"))
    batches = (_integer(row, "(p)global_bs", None) or _integer(row, "(p)bs"), _integer(row, "(d)global_bs", None) or _integer(row, "(d)bs"))
    prefix, encoder_ms = _integer(row, "prefix", 0, minimum=0), _time(row, "encoder_latency", 0.0)
    visual = _integer(row, "visual_tokens", 0, minimum=0)
    clients, isl, osl = _integer(row, "concurrency"), _integer(row, "isl"), _integer(row, "osl")
    if options.pricing == ENGINE:
        prefill, decode = prefill or deployment_from_row(row, "(p)"), decode or deployment_from_row(row, "(d)")
        accepted = _accepted_drafts(decode.nextn, _number(row, "decode_tokens_per_iteration", 1.0))
        run = DisaggRun(prefill, decode, isl, osl, clients, *workers, *batches, prefix, accepted, visual, encoder_ms)
        return tandem_engine_case(run, options.protocol, options.pricer)
    spec = TandemSpec(*workers, *batches, prefix=prefix, encoder_ms=encoder_ms)
    return TandemCase(clients, isl, visual, osl, options.protocol, spec, _time(row, "(p)prefill_step_ms"), _time(row, "tpot"))


def case_of(row: Mapping, options: ReplayOptions) -> Case:
    return tandem_case(row, options) if is_disagg(row) else agg_case(row, options)


# ---------------------------------------------------------------------------------------------
# Figures for one row
# ---------------------------------------------------------------------------------------------


def figures(result: ClosedLoop, osl: int) -> dict:
    """The refined figures in result-row terms (ms, requests/s); the inter-token latencies of a run
    whose requests emit one token each have no sample and are None, never NaN."""
    s = result.stats
    return {
        "ttft": s.ttft_mean, "ttft_p50": s.ttft_p50, "ttft_p99": s.ttft_p99, "ttft_max": s.ttft_max,
        "tpot": s.tpot_mean, "tpot_p50": s.tpot_p50, "tpot_p99": s.tpot_p99,
        "itl": _sampled(s.itl_mean), "itl_p50": _sampled(s.itl_p50), "itl_p99": _sampled(s.itl_p99),
        "request_latency": s.ttft_mean + s.tpot_mean * max(osl - 1, 0), "seq/s": result.throughput_rps,
    }  # fmt: skip


def _sampled(statistic: float) -> float | None:
    """A statistic, None when it had no sample (NaN)."""
    return None if math.isnan(statistic) else statistic


def record(result: ClosedLoop | Replayed, osl: int, pricing: str, protocol: str, settings: EngineSettings | None) -> dict:
    """A replay's figures (figures) followed by its pricing, protocol and, for an agg replay, every
    EngineSettings field it replayed, in declaration order."""
    out = figures(result, osl) | {"pricing": pricing, "protocol": protocol}
    return out | dataclasses.asdict(settings) if settings is not None else out


def closed_loop_for_agg_row(row: Mapping, deployment: Deployment, *, pricing: str = ENGINE, protocol: str | Protocol = "steady",
                            settings: EngineSettings | None = None, pricer: str = "native") -> dict:  # fmt: skip
    """Closed-loop figures of one agg result row (run_agg's row) on its deployment: TTFT mean/p50/p99/max,
    TPOT and ITL statistics (ms), request_latency (ms), seq/s (system-wide), plus the pricing,
    protocol and scheduler settings used. Raises InvalidInputError / NoProgressError / PerfDataMissingError."""
    case = agg_case(row, ReplayOptions(pricing, protocol, settings, pricer), deployment)
    return record(replay_case(case), case.osl, case.pricing, case.protocol.name, case.spec.settings)


def closed_loop_for_disagg_row(row: Mapping, prefill: Deployment, decode: Deployment, *, pricing: str = ENGINE,
                               protocol: str | Protocol = "steady", pricer: str = "native") -> dict:  # fmt: skip
    """Closed-loop figures of one disagg result row on its prefill and decode deployments (as closed_loop_for_agg_row)."""
    case = tandem_case(row, ReplayOptions(pricing, protocol, None, pricer), prefill, decode)
    return record(replay_case(case), case.osl, case.pricing, case.protocol.name, None)


def solo_prefill_ms(row: Mapping, options: ReplayOptions | None = None) -> float:
    """The row's prompt prefilled alone: the replay's exact C = 1 TTFT, the true lower bound of its
    closed-loop TTFT for SLA gates (row pricing: prefill_step_ms * (isl_eff - prefix) / chunk_ref;
    the reference's ceil(eff / chunk) gate overstates it up to 2x)."""
    alone = dict(row) | ({"concurrency": 1} if is_disagg(row) else {"bs": 1, "concurrency": 1})
    options = dataclasses.replace(options or ReplayOptions(), protocol=Steady(warm_gens=0, win_gens=1))
    return replay_case(case_of(alone, options)).stats.ttft_max
