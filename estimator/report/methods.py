"""Prediction methods, keyed by name. A method maps a mapped measurement to a Prediction or raises Uncovered.

* legacy / uncached: the closed-form estimate in that semantics: agg rows through AggEstimator
  with the baseline's budget ctx_tokens = isl; disagg rows through estimator.disagg.run_disagg.
  legacy prices the row as the baseline mapped it (`MappedRow.baseline`: the recorded layout and
  the labelled quant modes); every other method prices the run's layout (row id or node bound,
  measurements.layout) and, where the labels do not price the kernels the checkpoint that ran
  computes with (other arithmetic, activation scaling or, where the engine's tables time them
  alike, scale granularity), the checkpoint's own quant modes when they have SILICON data
  (measurements.checkpoints); where the priced modes lack SILICON data for an op, the other scale
  granularity for it when that is all the labels and the checkpoint differ in; and for an MoE TP
  layout the tables lack,
  its MoE EP equivalent over the same GPUs (priced_inputs gives the order).
* closed_loop_steady / closed_loop: the closed-loop replay (estimator.closedloop) with
  engine-priced passes, under the steady protocol / the row's recorded benchmark protocol (its client's
  own seeded length draws where the seed is recorded, Protocol.client_seed) and the
  row's engine scheduler settings and the first-use compiles its engine build pays (a Triton
  kernel per new prefill shape, EngineSettings.shape_compile_ms; FlashInfer's CUTLASS FMHA at the
  first prefix extend, EngineSettings.prefix_compile_ms; measurements.builds). It replays the typed run of the
  priced inputs (replay_input, estimator.closedloop.replay_run) on the rows the uncached closed
  form covers, so both share coverage and reasons.
* closed_loop-no-<key>: closed_loop with one replayed mechanism switched off (estimator.report.ablation;
  report --ablation runs them).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.caching import memo
from estimator.closedloop import AggRun, Benchmark, DisaggRun, Replayed, Steady, agg_run, disagg_run, replay_run
from estimator.closedloop.host import sglang_graphs_every_prefill
from estimator.closedloop.runs import kv_pool_setting
from estimator.closedloop.stats import LatencyStats
from estimator.disagg import DISAGG_ROLES, DisaggPoint, run_disagg
from estimator.errors import PerfDataMissingError
from estimator.models.config import is_natively_modelled
from estimator.pricing import large_ep_note
from estimator.report import GRAPHED_PREFILL_NOTE, KV_CAP_NOTE, METHOD_NAMES
from estimator.report.ablation import MECHANISMS, PREFIX, Mechanism
from estimator.scheduler import AggEstimator, AggPoint, AggResult
from estimator.settings import EngineSettings
from estimator.steps import Semantics
from measurements.mapping import AggInputs, DisaggInputs, MappedRow
from measurements.schema import Measurement
from measurements.topologies.runs import KV_TRANSFER_NOTE

SILICON_MISS = "perf data missing, also in the reference's HYBRID mode (no empirical fallback for an op)"
HYBRID_NOTE = "SILICON data missing for an op: priced by the reference engine in HYBRID mode (empirical transfer), as the baseline"
CHECKPOINT_NOTE = "priced at the kernels that ran, not the labelled quant modes"  # then ": " and MappedRow.quant_note
GRANULARITY_NOTE = "SILICON data missing for an op at the labelled quant modes: priced at the checkpoint's scale granularity"  # then ": " and Fallback.note
KV_CACHE_NOTE = "SILICON data missing for an op at {}: priced at the reference's KV cache (the checkpoint's rule)"  # Fallback.note
# the pricing of a row (a report partition): the priced inputs' pricer -> pricer and database mode,
# then KERNELS_THAT_RAN when the inputs are the checkpoint's (MappedRow.checkpoint_inputs), or
# CHECKPOINT_GRANULARITY or REFERENCE_KV_CACHE when they are a fallback (MappedRow.granularity_fallbacks)
PRICINGS = MappingProxyType({"native": "native, SILICON", "reference": "reference engine, SILICON", "hybrid": "reference engine, HYBRID"})
KERNELS_THAT_RAN = ", kernels that ran"
CHECKPOINT_GRANULARITY = ", checkpoint's scale granularity"
REFERENCE_KV_CACHE = ", reference KV cache"
MOE_TP_AS_EP = ", MoE TP as EP"  # appended when the experts' layout is priced by its EP equivalent
# the engines document first-use work for shapes a batch-1 request does not reach, but publish no duration
COLD_START_NOTE = (
    "first wave measured cold: first-use kernel compiles and loads for new prefill shapes (TRT-LLM DeepGEMM on Hopper, SGLang "
    "Triton fused_moe configs, FlashInfer kernels loaded on first use) are documented without a published duration, so none is replayed"
)
# the same, on a row whose build's first-use compiles the replay charges (EngineSettings.shape_compile_ms, prefix_compile_ms)
CHARGED_COLD_START_NOTE = (
    "first wave measured cold: the replay charges this build's first-use compiles ({charged}); the other first-use kernel "
    "compiles and loads are documented without a published duration, so none is replayed"
)
LAYOUT_NOTE = ("SILICON data lack the experts' MoE TP layout: priced as MoE EP over the same GPUs "
               "(the same expert weight bytes and FLOPs per GPU under balanced routing)")  # fmt: skip


@dataclass(frozen=True)
class Prediction:
    """A method's prediction for one row."""

    ttft_ms: float  # predicted time to first token, ms (finite, >= 0)
    tpot_ms: float  # predicted time per output token, ms (finite, >= 0)
    pricing: str  # how the row was priced (see pricing)
    note: str = ""  # a caveat that does not void the prediction
    prefill_step_ms: float = math.nan  # the step price behind TTFT: one prefill chunk (agg) or batch (disagg), ms
    decode_step_ms: float = math.nan  # the step price behind TPOT: one decode-only step (agg) or iteration (disagg), ms


class Uncovered(Exception):
    """The method cannot predict the row; the message is the reason."""


Method = Callable[[MappedRow], Prediction]


def first_line(exc: Exception) -> str:
    """The first line of an exception's message (its class name when empty)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _inputs(row: MappedRow) -> AggInputs | DisaggInputs:
    """The row's inputs, with the pricer that can price them (see priced_choice)."""
    return _choice(row).inputs


def _choice(row: MappedRow) -> PricedChoice:
    if row.inputs is None:
        raise Uncovered(row.reason)
    fallbacks = tuple(f.inputs for f in row.granularity_fallbacks)
    return priced_choice(row.inputs, row.checkpoint_inputs, fallbacks, row.allow_ep_equivalents)


@dataclass(frozen=True)
class PricedChoice:
    """The inputs a method prices and the candidate they come from."""

    inputs: AggInputs | DisaggInputs  # what is priced (its pricer "hybrid" for the HYBRID retry)
    candidate: AggInputs | DisaggInputs  # the checkpoint's inputs, the labels or a fallback (granularity, reference KV cache)
    via_ep: bool  # inputs are the candidate's MoE-EP equivalent


def priced_inputs(
    inputs: AggInputs | DisaggInputs,
    checkpoint: AggInputs | DisaggInputs | None = None,
    fallbacks: tuple[AggInputs | DisaggInputs, ...] = (),
    allow_ep_equivalents: bool = True,
) -> AggInputs | DisaggInputs:
    """What the closed-form and closed-loop methods price (priced_choice)."""
    return priced_choice(inputs, checkpoint, fallbacks, allow_ep_equivalents).inputs


@memo(4096)
def priced_choice(
    inputs: AggInputs | DisaggInputs,
    checkpoint: AggInputs | DisaggInputs | None = None,
    fallbacks: tuple[AggInputs | DisaggInputs, ...] = (),
    allow_ep_equivalents: bool = True,
) -> PricedChoice:
    """The first of: the inputs at the checkpoint's own quant modes (when given: the arithmetic
    that ran), else their MoE-EP equivalent, whichever prices with SILICON data for every op (the
    checkpoint's inputs failing in any way leave the choice to the labels); the labelled inputs
    unless SILICON data miss an op; then, in order, the inputs' MoE-EP equivalent and each fallback
    (the same arithmetic at the checkpoint's scale granularity; last, the reference's KV cache rule for
    an SGLang or vLLM launch) and its equivalent, the first that
    prices; else the inputs in the reference engine's HYBRID mode (the baseline's retry). Without
    allow_ep_equivalents no MoE-EP equivalent is tried (the baseline's chain)."""

    def first_priced(*bases: AggInputs | DisaggInputs) -> PricedChoice | None:
        for base in bases:
            equivalent = expert_parallel_equivalent(base) if allow_ep_equivalents else None
            for priced in (base, equivalent):
                if priced is not None and not isinstance(_closed_form_outcome(priced, Semantics.LEGACY, None), Exception):
                    return PricedChoice(priced, base, priced is equivalent)
        return None

    if checkpoint is not None and (chosen := first_priced(checkpoint)) is not None:
        return chosen
    if inputs.pricer == "hybrid" or not isinstance(_closed_form_outcome(inputs, Semantics.LEGACY, None), PerfDataMissingError):
        return PricedChoice(inputs, inputs, False)
    chosen = first_priced(inputs, *fallbacks)  # the labels miss (memoized outcome): their equivalent, then each fallback
    return chosen if chosen is not None else PricedChoice(dataclasses.replace(inputs, pricer="hybrid"), inputs, False)


def expert_parallel_equivalent(inputs: AggInputs | DisaggInputs) -> AggInputs | DisaggInputs | None:
    """The inputs with every deployment whose experts are tensor-parallel (moe_tp t > 1, moe_ep e)
    at moe_tp 1, moe_ep t x e: the same GPUs, each holding a t x e-th of the expert weights and doing
    that share of the expert FLOPs under balanced routing. None when no deployment has MoE TP."""
    swapped = tuple(
        dataclasses.replace(d, moe_tp=1, moe_ep=d.moe_tp * (d.moe_ep or 1)) if (d.moe_tp or 1) > 1 else d for d in inputs.deployments
    )  # fmt: skip
    return None if swapped == inputs.deployments else inputs.with_deployments(swapped)


def pricing(row: MappedRow) -> tuple[str, str]:
    """(how the row is priced, the caveat for its note) of a row with inputs: the pricer and its
    database mode (PRICINGS), with KERNELS_THAT_RAN at the checkpoint's modes or
    CHECKPOINT_GRANULARITY at a granularity fallback or REFERENCE_KV_CACHE at the KV one, then
    MOE_TP_AS_EP at an MoE-EP equivalent;
    the caveats say which ("" when the labels price with SILICON data)."""
    choice = _choice(row)
    fallback = next((f for f in row.granularity_fallbacks if f.inputs == choice.candidate), None)
    label, caveats = PRICINGS[choice.inputs.pricer], []
    if choice.candidate == row.checkpoint_inputs:
        label, caveats = label + KERNELS_THAT_RAN, [f"{CHECKPOINT_NOTE}: {row.quant_note}"]
    elif fallback is not None and fallback.kv_cache:
        label, caveats = label + REFERENCE_KV_CACHE, [KV_CACHE_NOTE.format(fallback.note)]
    elif fallback is not None:
        label, caveats = label + CHECKPOINT_GRANULARITY, [f"{GRANULARITY_NOTE}: {fallback.note}"]
    elif choice.inputs.pricer == "hybrid":
        caveats = [HYBRID_NOTE]
    if choice.via_ep:
        label, caveats = label + MOE_TP_AS_EP, [*caveats, LAYOUT_NOTE]
    return label, "; ".join([*caveats, *_large_ep_notes(choice.inputs)])


def _large_ep_notes(inputs: AggInputs | DisaggInputs) -> list[str]:
    """How each disaggregated worker's cross-node MoE all-to-all is priced (pricing.reference.large_ep_note)."""
    if not isinstance(inputs, DisaggInputs) or inputs.pricer == "native":
        return []
    notes = (large_ep_note(dataclasses.replace(d, role=role)) for d, role in zip(inputs.deployments, DISAGG_ROLES, strict=True))
    return [n for n in notes if n]


def closed_form(row: MappedRow, semantics: Semantics, ctx_tokens: int | None = None):
    """The closed-form estimate of a row: an AggResult (ctx_tokens defaults to the row's isl, as the
    baseline) or a DisaggResult. A perf-data miss is Uncovered with SILICON_MISS."""
    outcome = _closed_form_outcome(_inputs(row), semantics, ctx_tokens)
    if isinstance(outcome, PerfDataMissingError):
        raise Uncovered(f"{SILICON_MISS}: {first_line(outcome)}")
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


@memo(4096)
def _closed_form_outcome(inputs: AggInputs | DisaggInputs, semantics: Semantics, ctx_tokens: int | None):
    """The estimate, or the exception it raised (memoized either way: the closed-loop methods reuse it)."""
    try:
        return _closed_form(inputs, semantics, ctx_tokens)
    except Exception as exc:  # re-raised by closed_form
        return exc


def _closed_form(inputs: AggInputs | DisaggInputs, semantics: Semantics, ctx_tokens: int | None):
    if isinstance(inputs, DisaggInputs):
        return run_disagg(inputs.prefill, inputs.decode, disagg_point(inputs), semantics, inputs.pricer)
    return AggEstimator(inputs.deployment, semantics, inputs.pricer).estimate(agg_point(inputs, ctx_tokens or inputs.isl))


def agg_point(inputs: AggInputs, ctx_tokens: int | None = None) -> AggPoint:
    """The closed-form operating point of agg inputs (ctx_tokens: the budget knob; None: the semantics' default)."""
    return AggPoint(isl=inputs.isl, osl=inputs.osl, batch_size=inputs.batch_size, ctx_tokens=ctx_tokens, nextn_accepted=inputs.nextn_accepted)


def disagg_point(inputs: DisaggInputs) -> DisaggPoint:
    """The closed-form operating point of disagg inputs."""
    return DisaggPoint(
        isl=inputs.isl, osl=inputs.osl, prefill_batch_size=inputs.prefill_batch_size, prefill_workers=inputs.prefill_workers,
        decode_batch_size=inputs.decode_batch_size, decode_workers=inputs.decode_workers, nextn_accepted=inputs.nextn_accepted,
    )  # fmt: skip


def memory_note(result) -> str:
    """The memory verdict as a caveat: the row ran on hardware, so a rejection is the model's error."""
    if not isinstance(result, AggResult):
        return "memory model says a worker does not fit; the reference CLI would reject the row" if result.oom else ""
    if result.memory.oom:
        return f"memory model says OOM ({result.memory.use.total:.1f} GiB/GPU); the reference CLI would reject the row"
    if result.memory.kv_oom:
        return "memory model says the KV cache does not fit; the reference CLI would reject the row"
    return ""


def step_prices(result) -> tuple[float, float]:
    """(prefill step, decode step) in ms of a closed-form result; NaN where the schedule has none."""
    row = result.row
    if isinstance(result, AggResult):
        decode = float(row["genonly_step_ms"])
        return float(row["prefill_step_ms"]), decode if decode > 0 else math.nan
    return float(row["(p)prefill_step_ms"]), float(row["tpot"])


def _closed_form_method(semantics: Semantics) -> Method:
    def method(row: MappedRow) -> Prediction:
        if semantics is Semantics.LEGACY:
            row = row.baseline
        result = closed_form(row, semantics)
        priced, caveat = pricing(row)
        note = "; ".join(n for n in (caveat, memory_note(result)) if n)
        return Prediction(float(result.row["ttft"]), float(result.row["tpot"]), priced, note, *step_prices(result))

    method.__doc__ = f"The closed-form estimate, {semantics.value} semantics."
    return method


def replay_protocol(m: Measurement, protocol: str) -> Steady | Benchmark:
    """The replay's protocol: steady, or the row's benchmark client (Uncovered when undocumented)."""
    if protocol == "steady":
        return Steady()
    p = m.protocol
    if p.num_prompts is None or not m.concurrency:
        raise Uncovered(f"benchmark protocol not documented by the source ({m.source})")
    if p.random_range_ratio is None:
        raise Uncovered(f"the benchmark's random range ratio is not recorded ({m.source}; an import takes it with --random-range-ratio)")
    if p.num_prompts % m.concurrency:
        raise Uncovered(f"num_prompts {p.num_prompts} is not a multiple of the concurrency {m.concurrency}")
    return Benchmark(prompts_per_client=p.num_prompts // m.concurrency, range_ratio=p.random_range_ratio, seed=p.client_seed)


def kv_fraction(row: MappedRow) -> float | None:
    """The launch's KV-cache memory fraction the replay caps running requests by: the row's, for the
    natively modelled architectures (closedloop.runs.kv_capped); None for the others."""
    return row.measurement.settings.kv_free_memory_fraction if is_natively_modelled(row.model_used) else None


def replay_input(row: MappedRow) -> AggRun | DisaggRun:
    """The typed replay run of a row's priced inputs (a disagg run at the measured concurrency)."""
    inputs = _inputs(row)
    if isinstance(inputs, AggInputs):
        return agg_run(inputs.deployment, agg_point(inputs))
    return disagg_run(inputs.prefill, inputs.decode, disagg_point(inputs), row.measurement.concurrency, inputs.decode_recv_interval,
                      inputs.prefill_overlap, inputs.prefill_moe_backend, row.measurement.settings.shape_compile_ms)  # fmt: skip


def replay(row: MappedRow, protocol: str, off: Mechanism | None = None) -> Replayed:
    """The engine-priced replay of a row under a protocol (the rows the uncached estimate covers),
    with a mechanism switched off if given (estimator.report.ablation)."""
    closed_form(row, Semantics.UNCACHED)  # a row the closed form cannot price is not replayed (same coverage and reason)
    row = off.row(row) if off is not None else row
    run = replay_input(row)
    run_protocol = replay_protocol(row.measurement, protocol)
    settings = row.measurement.settings.replace(kv_free_memory_fraction=kv_fraction(row)) if isinstance(run, AggRun) else None
    try:
        return replay_run(run, settings, run_protocol, _inputs(row).pricer, off.case if off is not None else None)
    except PerfDataMissingError as exc:
        raise Uncovered(f"{SILICON_MISS}: {first_line(exc)}") from None


def kv_cap_note(replayed: EngineSettings | None, m: Measurement) -> str:
    """The KV-cache cap on running requests when the replay (its settings; None: a disagg replay)
    lowered the run's cap to it ("" otherwise)."""
    cap = replayed.max_num_seqs if replayed is not None else None
    if cap is None or cap == m.settings.max_num_seqs:
        return ""
    admission = "blocks allocated as tokens arrive" if m.settings.gpu_memory_utilization is not None else "guaranteed-no-evict admission"
    return f"{KV_CAP_NOTE} {cap} per rank by the KV-cache pool ({kv_pool_setting(m.settings)}, {admission})"


def replayed_statistic(stats: LatencyStats, m: Measurement, stated: bool = True) -> tuple[float, float]:
    """(TTFT, TPOT) of a replay in the statistic the row's figures are (mean unless it states median
    or p99; the mean whatever it states when not `stated`)."""
    statistic = m.statistics.statistic if m.statistics is not None and stated else None
    if statistic == "median":
        return float(stats.ttft_p50), float(stats.tpot_p50)
    if statistic == "p99":
        return float(stats.ttft_p99), float(stats.tpot_p99)
    return float(stats.ttft_mean), float(stats.tpot_mean)


def cold_start_note(m: Measurement) -> str:
    """COLD_START_NOTE (CHARGED_COLD_START_NOTE naming the compiles the replay charges the row's build) when the
    client sent fewer warm-up requests than the concurrency its measured pass opens with ("" otherwise, or when
    the warm-up is not recorded)."""
    warmups = m.protocol.num_warmups
    if warmups is None or not m.concurrency or warmups >= m.concurrency:
        return ""
    charged = [f"{label} {ms:g} ms" for label, ms in (("per new prefill shape", m.settings.shape_compile_ms),
                                                      ("at the first prefix extend", m.settings.prefix_compile_ms)) if ms > 0]  # fmt: skip
    note = CHARGED_COLD_START_NOTE.format(charged=", ".join(charged)) if charged else COLD_START_NOTE
    return f"{note} ({warmups} warm-up request{'s' * (warmups != 1)} before a first wave of {m.concurrency})"


def _closed_loop_method(protocol: str, off: Mechanism | None = None) -> Method:
    def method(row: MappedRow) -> Prediction:
        replayed = replay(row, protocol, off)
        ttft, tpot = replayed_statistic(replayed.stats, row.measurement, off is None or off.stated_statistic)
        if not (math.isfinite(ttft) and math.isfinite(tpot)):
            raise Uncovered("closed-loop replay returned no finite figures")
        priced, caveat = pricing(row)
        transfer = KV_TRANSFER_NOTE if replayed.settings is None else ""
        graphed = GRAPHED_PREFILL_NOTE if replayed.settings is not None and sglang_graphs_every_prefill(_inputs(row).deployment, replayed.settings) else ""
        cold = cold_start_note(row.measurement) if protocol == "benchmark" else ""
        notes = (caveat, kv_cap_note(replayed.settings, row.measurement), transfer, graphed, cold)
        return Prediction(ttft, tpot, priced, "; ".join(n for n in notes if n))

    method.__doc__ = f"The closed-loop replay, engine-priced passes, {protocol} protocol" + (f", without {off.label}." if off else ".")
    return method


METHODS: Mapping[str, Method] = MappingProxyType(
    dict(
        zip(
            METHOD_NAMES,
            (
                _closed_form_method(Semantics.LEGACY),
                _closed_form_method(Semantics.UNCACHED),
                _closed_loop_method("steady"),
                _closed_loop_method("benchmark"),
            ),
            strict=True,
        ),
        **{PREFIX + key: _closed_loop_method("benchmark", off) for key, off in MECHANISMS.items()},
    )
)
