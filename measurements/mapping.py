"""Measured rows -> estimator inputs, with every mapping decision recorded on the row.

Decisions (the accuracy baseline's, see accuracy-baseline.md):
* a model id without a bundled config is mapped to a bundled config of the same architecture
  (`MODEL_ALIASES`), keeping the row's quant modes;
* the engine version is mapped to the nearest queryable data version: the newest slot not newer
  than the engine, else the oldest slot (every sample row is older than every slot, so every row
  lands on the current slot, as in the baseline);
* an empty or zero attention-DP size means no attention DP (1); MoE sizes are passed for MoE models only;
* an agg row whose parallel columns contradict the run's GPU count (named by its id, `..._tp8_ep8_...`,
  or bounded by the system's node) is priced as the run's layout (`measurements.layout`); the row
  as recorded is kept in `MappedRow.recorded` for the legacy method, which reproduces the baseline
  on the baseline's inputs;
* an agg row of a run its source only deploys multi-node and disaggregated (InferenceX's DeepSeek-R1
  on GB200/GB300, `recipes.multinode_disagg_reason`) records the run's GPU count as tp and no
  workers: the other methods leave it unestimated with that reason, legacy prices it as recorded;
* an InferenceX agg run whose script launched the MoE or attention otherwise than its columns record
  (expert parallel over the TP group, tensor parallel where the config said EP, or the EP and attention
  DP a script chose itself; `recipes.launched_moe_layout`) is priced at the launch's layout; legacy
  prices the columns;
* an InferenceX run whose client capped concurrency at a constant while the server ran the config's
  concurrency (the gpt-oss H100 vLLM docker script of 2025-11-21 to 2025-12-08,
  `recipes.client_cap_reason`) records the cap: the other methods leave it unestimated naming the
  config's candidates, legacy prices it as recorded;
* the pricer is native for the natively modelled (dense) architectures, else the reference engine.
A row that cannot be estimated keeps its reason instead of inputs.

Not a baseline decision: the row's quant labels stay its inputs, and when they do not price the
kernels the checkpoint that ran computes with (other arithmetic, activation scaling or, on an
engine whose tables time them alike, scale granularity; measurements.checkpoints) the row also carries
inputs at the checkpoint's modes (`MappedRow.checkpoint_inputs`), which every method but legacy
prices when they price with SILICON data. When they differ only in scale granularity, the row
carries inputs at the checkpoint's granularity op by op (`MappedRow.granularity_fallbacks`), which
those methods price where the labels' SILICON data lack an op, before the reference's HYBRID mode.
The KV cache is the dtype the launch served (`served_kv_cache`: the launch's setting, else SGLang's and
vLLM's auto); where it lacks SILICON data an SGLang or vLLM row falls back to the reference's rule, last.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from estimator.caching import memo
from estimator.deployment import Backend, Deployment, QuantOverrides
from estimator.errors import EstimatorError, UnknownModelError
from estimator.models import model_architecture, model_shape, native_families
from estimator.perf import load_system_spec, names_release, slot_sort_key, version_slots
from estimator.settings import served_kv_cache_dtype
from measurements import recipes
from measurements.checkpoints import CheckpointModes, checkpoint_modes, declared_kv_cache, granularity_fallbacks
from measurements.clients import INFERENCEX
from measurements.layout import run_layout
from measurements.schema import Layout, Measurement
from measurements.tokenizers import served_prompt
from measurements.topologies.resolver import Topology, Unresolved, resolve
from measurements.topologies.runs import published_run


@dataclass(frozen=True)
class ModelAlias:
    """A measured model id without a bundled config, priced as a bundled config of the same architecture."""

    measured: str  # model id as measured
    bundled: str  # bundled config priced instead
    architecture: str  # the HF architecture both share (checked against the bundled config)
    gemm_quant: str | None = None  # applies only to rows with this GEMM quant mode; None: any row


MODEL_ALIASES = (
    ModelAlias("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B", "LlamaForCausalLM"),
    ModelAlias("nvidia/Llama-3.1-8B-Instruct-FP8", "meta-llama/Meta-Llama-3.1-8B", "LlamaForCausalLM"),
    ModelAlias("meta-llama/Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B", "LlamaForCausalLM"),
    ModelAlias("nvidia/Qwen3-32B-NVFP4", "Qwen/Qwen3-32B", "Qwen3ForCausalLM"),
    ModelAlias("nvidia/DeepSeek-R1-NVFP4", "nvidia/DeepSeek-V3.1-NVFP4", "DeepseekV3ForCausalLM"),
    ModelAlias("zhipuai/GLM-5", "nvidia/GLM-5-NVFP4", "GlmMoeDsaForCausalLM", gemm_quant="nvfp4"),
    ModelAlias("zhipuai/GLM-5", "zai-org/GLM-5-FP8", "GlmMoeDsaForCausalLM"),
    # the SGLang cookbook's checkpoints (measurements/published): the same weights and format as the bundled config,
    # but for Nemotron-3-Super, whose BF16 run is priced on the FP8 config's sizes at its bfloat16 labels
    ModelAlias("deepseek-ai/DeepSeek-R1-0528", "deepseek-ai/DeepSeek-R1", "DeepseekV3ForCausalLM"),
    ModelAlias("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B", "Qwen3MoeForCausalLM"),
    ModelAlias("google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B", "Gemma4ForConditionalGeneration"),
    ModelAlias("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "NemotronHForCausalLM", gemm_quant="bfloat16"),
)  # first match wins

DISAGG_INCOMPLETE = "disagg row lacks prefill/decode batch size and worker count"


@dataclass(frozen=True)
class AggInputs:
    """An agg row's estimator inputs: one deployment at one operating point."""

    deployment: Deployment  # model (bundled id), system, backend, data version, layout, quant
    pricer: str  # "native" | "reference"
    isl: int  # input tokens per request (the row's nominal isl)
    osl: int  # output tokens per request (the row's nominal osl)
    batch_size: int  # concurrent requests per attention-DP rank (>= 1)
    nextn_accepted: float = 0.0  # accepted MTP draft tokens per decode step (0 <= this <= deployment.nextn)

    @property
    def deployments(self) -> tuple[Deployment, ...]:
        return (self.deployment,)

    def with_deployments(self, deployments: tuple[Deployment, ...]) -> AggInputs:
        """These inputs with their deployments replaced (in `deployments` order)."""
        (deployment,) = deployments
        return dataclasses.replace(self, deployment=deployment)


@dataclass(frozen=True)
class DisaggInputs:
    """A disagg row's estimator inputs: prefill and decode workers and their batches."""

    prefill: Deployment  # one prefill worker
    decode: Deployment  # one decode worker
    pricer: str  # "native" | "reference"
    isl: int  # input tokens per request
    osl: int  # output tokens per request
    prefill_batch_size: int  # prompts per prefill batch (>= 1)
    prefill_workers: int  # prefill workers (>= 1)
    decode_batch_size: int  # sequences per decode batch (>= 1)
    decode_workers: int  # decode workers (>= 1)
    nextn_accepted: float = 0.0  # accepted MTP draft tokens per decode step (0 <= this <= decode.nextn)
    decode_recv_interval: int = 1  # the decode workers' scheduler receive interval (the row's EngineSettings.recv_interval, >= 1)
    prefill_overlap: bool = True  # the prefill workers run the overlap scheduler (the row's EngineSettings.overlap_scheduler)
    prefill_moe_backend: str | None = None  # the prefill workers' TRT-LLM MoE backend (the row's EngineSettings.moe_backend)

    @property
    def deployments(self) -> tuple[Deployment, ...]:
        return (self.prefill, self.decode)

    def with_deployments(self, deployments: tuple[Deployment, ...]) -> DisaggInputs:
        """These inputs with their deployments replaced (in `deployments` order)."""
        prefill, decode = deployments
        return dataclasses.replace(self, prefill=prefill, decode=decode)


@dataclass(frozen=True)
class Fallback:
    """Inputs priced in place of the row's own where their SILICON data lack an op: the checkpoint's scale
    granularity op by op, or (kv_cache) the reference's KV cache rule in place of the launch's dtype."""

    inputs: AggInputs | DisaggInputs  # the row's inputs but for quant modes
    note: str  # which modes, and why they compute the same arithmetic
    kv_cache: bool = False  # the inputs at the reference's KV cache rule, where the launch's KV cache dtype lacks SILICON data


@dataclass(frozen=True)
class MappedRow:
    """A measurement, its estimator inputs (None when it cannot be estimated) and the mapping decisions."""

    measurement: Measurement
    inputs: AggInputs | DisaggInputs | None  # None iff reason is set
    reason: str | None  # why the row cannot be estimated
    model_used: str  # the bundled config priced (== measurement.model unless aliased)
    model_note: str  # "" or how the model was aliased
    data_version: str | None  # the perf-data version priced
    version_note: str  # how the engine version was mapped
    layout_note: str = ""  # "" or how the run's layout (row id or node bound) replaced the recorded columns
    recorded: MappedRow | None = None  # the row as its columns map, iff layout_note, a multi-node disagg run labelled agg or a client cap
    checkpoint_inputs: AggInputs | DisaggInputs | None = None  # inputs at the checkpoint's own quant modes, iff quant_note
    quant_note: str = ""  # "" or which quant modes the checkpoint that ran carries (measurements.checkpoints)
    granularity_fallbacks: tuple[Fallback, ...] = ()  # in order after the labels: the checkpoint's scale granularity op by op, then the reference KV rule
    allow_ep_equivalents: bool = True  # a SILICON miss at an MoE TP layout may price its EP equivalent (not the baseline's)
    recipe: Topology | None = None  # the published disaggregated topology the run was mapped from (measurements.topologies)

    @property
    def baseline(self) -> MappedRow:
        """The row as the accuracy baseline mapped it: recorded layout, labelled quant modes (no KV cache
        dtype or MTP drafts from the launch), no fallback but HYBRID mode."""
        base = self.recorded or self
        return dataclasses.replace(
            base, inputs=_without_launch_settings(base.inputs), checkpoint_inputs=None, quant_note="", granularity_fallbacks=(),
            allow_ep_equivalents=False,
        )  # fmt: skip

    @property
    def some_inputs(self) -> AggInputs | DisaggInputs | None:
        """The inputs some method prices: the row's own, else the recorded row's (legacy's, as the
        baseline); None when no method prices the row."""
        return self.inputs or (self.recorded.inputs if self.recorded is not None else None)


def _without_launch_settings(inputs: AggInputs | DisaggInputs | None) -> AggInputs | DisaggInputs | None:
    """The inputs with the KV cache dtype left to the checkpoint and no MTP drafts (the baseline's: its rows carry neither)."""
    if inputs is None:
        return None
    bare = _with_reference_kv(inputs)
    return dataclasses.replace(bare.with_deployments(tuple(dataclasses.replace(d, nextn=0) for d in bare.deployments)), nextn_accepted=0.0)


def _with_reference_kv(inputs: AggInputs | DisaggInputs) -> AggInputs | DisaggInputs:
    """The inputs with the KV cache dtype left to the reference's checkpoint rule (kvcache None)."""
    return inputs.with_deployments(tuple(dataclasses.replace(d, quant=dataclasses.replace(d.quant, kvcache=None)) for d in inputs.deployments))


def map_measurement(m: Measurement) -> MappedRow:
    """Map one measurement; every failure becomes the row's reason."""
    model_used, model_note = resolve_model(m)
    try:
        data_version, version_note = nearest_data_version(m.system, m.engine, m.engine_version)
    except EstimatorError as exc:
        return MappedRow(m, None, str(exc), model_used, model_note, None, "")
    recorded = _mapped(m, model_used, model_note, data_version, version_note)
    disaggregated = recipes.multinode_disagg_reason(m.source, m.model, m.system, m.mode)
    topology = resolve(m) if m.source == INFERENCEX and (m.mode == "disagg" or disaggregated is not None) else None
    if topology is not None:
        published = _published(m, topology, model_used, model_note, data_version, version_note, recorded)
        if published is not None:
            return published
    if disaggregated is not None:  # a multi-node disagg run labelled agg, unresolved: only the baseline's pricing of the columns remains
        return dataclasses.replace(recorded, inputs=None, reason=f"{disaggregated}; {topology.reason}", recorded=recorded)
    capped = recipes.client_cap_reason(m.source, m.engine, m.model, m.system, m.measured_date, m.concurrency, m.agg.tp if m.agg else None,
                                       m.isl, m.osl)  # fmt: skip
    if capped is not None:  # the recorded concurrency is not the server's: only the baseline's pricing of the columns remains
        return dataclasses.replace(recorded, inputs=None, reason=capped, recorded=recorded)
    run, notes = m, []
    served = served_prompt(m)
    if served is not None:  # the prompts the server computed (measurements.tokenizers)
        run, note = served
        notes.append(note)
    labelled = labelled_layout(m)
    if labelled is not None:
        run = dataclasses.replace(run, agg=labelled[0])
        notes.append(labelled[1])
    launched = launched_moe_layout(run)
    if launched is not None:
        run, note = launched
        notes.append(note)
    if run is m:
        return _with_checkpoint_quant(recorded, m)
    corrected = _mapped(run, model_used, model_note, data_version, version_note)
    return _with_checkpoint_quant(dataclasses.replace(corrected, measurement=m, layout_note="; ".join(notes), recorded=recorded), run)


def _published(m: Measurement, topology: Topology | Unresolved, model_used: str, model_note: str, data_version: str,
               version_note: str, recorded: MappedRow) -> MappedRow | None:  # fmt: skip
    """The row of an InferenceX multi-node disaggregated run mapped from its published topology
    (measurements.topologies), its recorded mapping kept for the baseline; a row with recorded
    worker counts whose topology is unresolved keeps its columns (None), one without them is
    left unestimated naming why."""
    if isinstance(topology, Unresolved):
        if recorded.reason == DISAGG_INCOMPLETE:
            return dataclasses.replace(recorded, reason=f"{DISAGG_INCOMPLETE}; {topology.reason}", recorded=recorded)
        return None
    published = published_run(m, topology)
    if isinstance(published, str):
        return dataclasses.replace(recorded, inputs=None, reason=published, recorded=recorded, recipe=topology)
    run, note = published
    row = _mapped(run, model_used, model_note, data_version, version_note)
    return _with_checkpoint_quant(dataclasses.replace(row, layout_note=note, recorded=recorded, recipe=topology), run)


def _with_checkpoint_quant(row: MappedRow, run: Measurement) -> MappedRow:
    """The row with inputs at the checkpoint's own quant modes when the labels do not price the
    kernels that ran, and with inputs at the checkpoint's scale granularity op by op when only that
    differs (measurements.checkpoints)."""
    if row.inputs is None:
        return row
    moe = not is_native(row.model_used)
    modes = checkpoint_modes(run, row.model_used, moe)
    fallbacks = tuple(Fallback(_quant_inputs(row, run, f), f.note) for f in granularity_fallbacks(run, row.model_used, moe, modes))
    row = dataclasses.replace(row, granularity_fallbacks=fallbacks + _reference_kv_fallback(row.inputs))
    return row if modes is None else dataclasses.replace(row, checkpoint_inputs=_quant_inputs(row, run, modes), quant_note=modes.note)


def _reference_kv_fallback(inputs: AggInputs | DisaggInputs) -> tuple[Fallback, ...]:
    """The inputs at the reference's KV cache rule, last in line, for an SGLang or vLLM launch (whose served KV cache
    dtype is always set, served_kv_cache): priced only when that dtype lacks SILICON data for an op."""
    if inputs.deployments[0].backend not in (Backend.SGLANG, Backend.VLLM):
        return ()
    served = "/".join(sorted({d.quant.kvcache for d in inputs.deployments}))
    return (Fallback(_with_reference_kv(inputs), f"the launch's {served} KV cache", kv_cache=True),)


def _quant_inputs(row: MappedRow, run: Measurement, modes: CheckpointModes) -> AggInputs | DisaggInputs:
    """The row's inputs with the run's GEMM and MoE quant modes replaced."""
    return _inputs(dataclasses.replace(run, gemm_quant=modes.gemm, moe_quant=modes.moe), row.model_used, row.data_version)


def _mapped(m: Measurement, model_used: str, model_note: str, data_version: str, version_note: str) -> MappedRow:
    reason = unestimable_reason(m, model_used)
    inputs = None if reason else _inputs(m, model_used, data_version)
    return MappedRow(m, inputs, reason, model_used, model_note, data_version, version_note)


def launched_moe_layout(m: Measurement) -> tuple[Measurement, str] | None:
    """(run, note) with the MoE and attention layout its launch ran where the agg columns misstate it
    (recipes.launched_moe_layout), or None."""
    layout = m.agg
    if layout is None:
        return None
    launched = recipes.launched_moe_layout(m.source, m.engine, m.model, m.precision, m.system, m.mode, m.measured_date, layout, m.isl,
                                           m.osl, m.concurrency)  # fmt: skip
    if launched is None:
        return None
    run, citation = launched
    note = (f"tp {layout.tp}, attention DP {layout.attention_dp or 1}, MoE TP {layout.moe_tp} EP {layout.moe_ep} -> tp {run.tp}, "
            f"attention DP {run.attention_dp}, MoE TP {run.moe_tp} EP {run.moe_ep} (the layout the launch ran: {citation})")  # fmt: skip
    return dataclasses.replace(m, agg=run), note


def labelled_layout(m: Measurement) -> tuple[Layout, str] | None:
    """(layout, note) when an agg row's columns contradict the run's GPU count (layout.run_layout).
    Evidence: every such row whose measurement repeats a row with a consistent id and columns gets
    that row's layout (tested)."""
    return run_layout(m.id, m.system, m.agg, m.concurrency) if m.mode == "agg" else None


def resolve_model(m: Measurement) -> tuple[str, str]:
    """(bundled model id, note) for a measured model id; an alias target's architecture is checked."""
    for alias in MODEL_ALIASES:
        if alias.measured == m.model and alias.gemm_quant in (None, m.gemm_quant):
            actual = bundled_architecture(alias.bundled)
            if actual != alias.architecture:
                raise ValueError(f"alias {m.model} -> {alias.bundled}: bundled architecture is {actual}, not {alias.architecture}")
            return alias.bundled, f"priced as {alias.bundled} (no bundled config; same architecture {alias.architecture}; row quant modes kept)"
    return m.model, ""


@memo()
def bundled_architecture(model: str) -> str | None:
    """The first architecture of a bundled config (None when the model has no bundled config)."""
    try:
        return model_architecture(model)
    except UnknownModelError:
        return None


def nearest_data_version(system: str, engine: str, engine_version: str | None) -> tuple[str, str]:
    """(data version, note): the newest queryable slot not newer than the engine version, else the oldest slot."""
    slots = version_slots(system, engine).versions()
    if not names_release(engine_version):
        return slots[0], f"engine version {engine_version or 'not recorded'}: oldest data version {slots[0]} (slots {', '.join(slots)})"
    not_newer = [v for v in slots if slot_sort_key(v) <= slot_sort_key(engine_version)]
    if not_newer:
        chosen = not_newer[-1]
        exact = "exact" if chosen == engine_version else "nearest older"
        return chosen, f"measured {engine_version}: {exact} data version {chosen}"
    return slots[0], f"measured {engine_version} is older than every data version ({', '.join(slots)}): nearest {slots[0]}"


def is_native(model: str) -> bool:
    """True when the model's architecture has a native (dense) op builder."""
    return bundled_architecture(model) in native_families()


def unestimable_reason(m: Measurement, model_used: str) -> str | None:
    """Why a mapped row cannot be estimated, or None."""
    if bundled_architecture(model_used) is None:
        return f"no bundled config for model {model_used}"
    context = model_shape(model_used).max_context
    if context is not None and m.isl + m.osl > context:
        return f"isl + osl {m.isl + m.osl} exceeds the model's context of {context} tokens (max_position_embeddings)"
    moe = not is_native(model_used)
    layouts = [m.agg] if m.mode == "agg" else [m.prefill, m.decode]
    if m.mode == "disagg" and any(x.batch_size is None or x.workers is None for x in layouts):
        return DISAGG_INCOMPLETE
    for layout in layouts:
        reason = _layout_reason(layout, moe)
        if reason:
            return reason
    return None


def _layout_reason(layout: Layout, moe: bool) -> str | None:
    """Why a worker layout cannot be priced, or None."""
    sizes = [layout.batch_size, layout.workers, layout.tp, layout.pp, _dp(layout)]
    if moe:
        sizes += [layout.moe_tp, layout.moe_ep]
    if any(s is None or s < 1 for s in sizes):
        return "zero or missing parallel sizes"
    if moe and layout.tp * _dp(layout) != layout.moe_tp * layout.moe_ep:
        return "tp*dp != moe_tp*moe_ep in the row"
    return None


def _dp(layout: Layout) -> int:
    """The attention-DP size; an empty or zero cell means 1 (no attention DP)."""
    return layout.attention_dp or 1


def _deployment(m: Measurement, layout: Layout, model_used: str, data_version: str) -> Deployment:
    native = is_native(model_used)
    return Deployment(
        model=model_used,
        system=m.system,
        backend=m.engine,
        version=data_version,
        tp=layout.tp,
        pp=layout.pp,
        attention_dp=_dp(layout),
        moe_tp=None if native else layout.moe_tp,
        moe_ep=None if native else layout.moe_ep,
        quant=QuantOverrides(gemm=m.gemm_quant, moe=m.moe_quant, kvcache=served_kv_cache(m, model_used)),
        nextn=m.settings.nextn,
    )


def served_kv_cache(m: Measurement, model_used: str) -> str | None:
    """The KV cache dtype the run's launch served (estimator.settings.served_kv_cache_dtype), reading the KV
    quantization the priced config declares only when it is the checkpoint that ran (checkpoints.declared_kv_cache)."""
    return served_kv_cache_dtype(m.engine, m.settings.kv_cache_dtype, declared_kv_cache(m, model_used), bundled_architecture(model_used),
                                 load_system_spec(m.system).sm_version, m.engine_version)  # fmt: skip


def _inputs(m: Measurement, model_used: str, data_version: str) -> AggInputs | DisaggInputs:
    pricer = "native" if is_native(model_used) else "reference"
    if m.mode == "agg":
        return AggInputs(_deployment(m, m.agg, model_used, data_version), pricer, m.isl, m.osl, m.agg.batch_size, m.settings.nextn_accepted)
    p, d = m.prefill, m.decode
    return DisaggInputs(
        _deployment(m, p, model_used, data_version), _deployment(m, d, model_used, data_version), pricer,
        m.isl, m.osl, p.batch_size, p.workers, d.batch_size, d.workers, m.settings.nextn_accepted, m.settings.recv_interval,
        m.settings.overlap_scheduler, m.settings.moe_backend,
    )  # fmt: skip


def map_all(measurements: list[Measurement]) -> list[MappedRow]:
    """Map every measurement, in order."""
    return [map_measurement(m) for m in measurements]
