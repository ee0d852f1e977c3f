"""The reference pricer: aiconfigurator-core 0.12.0's compiled engine, behind the Pricer interface.

Used as the parity oracle and for model families without a native op builder (MoE, MLA, hybrid).
Imports of aiconfigurator_core happen lazily so the native path never pays for them.
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from estimator.caching import memo
from estimator.deployment import Backend, Deployment, QuantOverrides
from estimator.errors import EstimatorError, InvalidInputError, PerfDataMissingError, UnknownModelError
from estimator.models.config import model_architecture, require_reference_fields
from estimator.perf.system_spec import load_system_spec
from estimator.pricing.base import OpPrice

DATABASE_MODES = ("SILICON", "HYBRID")  # HYBRID: SILICON, and the reference's empirical transfer on a miss


def _quiet_reference_logs() -> None:
    for name in ("aiconfigurator_core", "aiconfigurator"):
        logging.getLogger(name).setLevel(logging.ERROR)


def reference_model_path(model: str) -> str:
    """The model as the reference is given it: an id it bundles, or a local folder (a config.json
    path is given as its folder), never a name it would download (aiconfigurator-core fetches the
    config of any other name from huggingface.co: a file path became a request for
    https://huggingface.co/<path>/raw/main/config.json); UnknownModelError otherwise, InvalidInputError for a
    local config that lists no architecture or lacks a field the reference reads (require_reference_fields)."""
    from aiconfigurator_core.sdk.utils import DefaultHFModels

    if model in DefaultHFModels:
        return model
    if os.path.isdir(model) or os.path.isfile(model):
        if model_architecture(model) is None:  # the reference reads its model family off architectures[0]
            raise InvalidInputError(f"model {model!r}: its config lists no 'architectures', which the reference pricer needs")
        require_reference_fields(model)
        if os.path.isdir(model):
            return model
        return str(Path(model).parent) if Path(model).name == "config.json" else _staged_config_folder(os.path.realpath(model))
    raise UnknownModelError(f"the reference pricer reads its bundled models and local folders, and {model!r} is neither: "
                            "give the folder holding its config.json")  # fmt: skip


@memo()
def _staged_config_folder(path: str) -> str:
    """A private folder (removed at exit) whose config.json is a copy of the config file at `path`: the
    reference reads a local model by its folder, and this file is not named config.json."""
    folder = tempfile.mkdtemp(prefix="estimator-model-")
    atexit.register(shutil.rmtree, folder, True)
    shutil.copyfile(path, os.path.join(folder, "config.json"))
    return folder


def _op_name(op_spec: dict) -> str:
    """The name of a serialized OpSpec ({"Kind": {"name": ...}})."""
    return next(iter(op_spec.values()))["name"]


def _translate(exc: Exception) -> EstimatorError:
    """A reference engine error as one of ours, message kept."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    data_missing = ("perf database error", "perf_interp", "missing system flops")
    if any(marker in msg for marker in data_missing) or "PerfData" in type(exc).__name__:
        return PerfDataMissingError(msg)
    return EstimatorError(msg)


class ReferencePricer:
    """Prices through aiconfigurator_core.sdk.engine.EngineHandle (see estimator.pricing.base.Pricer).

    A disaggregated worker whose MoE takes a resolved cross-node all-to-all (takes_large_ep) prices
    the phase its role runs on that graph and the other phase on the fused graph, as the CLI prices
    only the role's own phase."""

    kind = "reference"

    def __init__(self, deployment: Deployment, literal_version: str, mode: str = "SILICON"):
        _quiet_reference_logs()
        self.spec, self.handle = _engine(deployment, literal_version, mode, large_ep=True)
        fused = _engine(deployment, literal_version, mode, large_ep=False) if takes_large_ep(deployment, literal_version) else None
        self.large_ep_phases = deployment.role.large_ep_phases if fused is not None else ()  # phases on the resolved graph
        own = {phase: (self.spec, self.handle) for phase in PHASES}
        self._bind({p: own[p] if p in self.large_ep_phases else fused or own[p] for p in PHASES})

    def _bind(self, engines: dict[str, tuple[dict, object]]) -> None:
        """Price each phase with its (spec, handle) and probe."""
        self._engines = {phase: handle for phase, (_, handle) in engines.items()}
        self._spec_ops = {phase: spec[f"{phase}_ops"] for phase, (spec, _) in engines.items()}
        # spec ops to evaluate; an op may answer for several spec entries (e.g. per-window attention),
        # so the priced rows are counted from a probe
        self._context_ids = list(range(len(self._spec_ops["context"])))
        self._generation_ids = list(range(len(self._spec_ops["generation"])))
        self._probe()

    def restricted(self, context_names: frozenset[str], generation_names: frozenset[str]) -> ReferencePricer:
        """A view pricing only the named ops (same engines), e.g. attention alone for large grids (cached)."""
        views = self.__dict__.setdefault("_views", {})
        key = (frozenset(context_names), frozenset(generation_names))
        if key not in views:
            view = copy.copy(self)
            view._views = {}
            view._context_ids = [i for i in self._context_ids if _op_name(self._spec_ops["context"][i]) in key[0]]
            view._generation_ids = [i for i in self._generation_ids if _op_name(self._spec_ops["generation"][i]) in key[1]]
            view._probe()
            views[key] = view
        return views[key]

    def moe_op(self, phase: str) -> dict | None:
        """The fields of the phase's ("context" or "generation") Moe op as the reference serializes it, or None when the
        phase has none outside an Overlap group (whose ops the reference prices as one)."""
        return next((spec["Moe"] for spec in self._spec_ops[phase] if "Moe" in spec), None)

    def _probe(self) -> None:
        """Names, sources and row counts of the priced ops, from one evaluation per phase."""
        probe_c = self.context_ops(1, 1)
        probe_g = self.generation_ops(1, 2)
        self.n_context, self.n_generation = len(probe_c), len(probe_g)
        self.context_names = tuple(p.name for p in probe_c)
        self.context_sources = tuple(p.source for p in probe_c)
        self.generation_names = tuple(p.name for p in probe_g)
        self.generation_sources = tuple(p.source for p in probe_g)

    def context_many(self, shapes, scale: float = 1.0):
        """Per-op latencies (ms) at each (batch, s, prefix) row: float64[n, n_context]."""
        evaluate, ids, scale = self._engines["context"]._engine.evaluate_context_ops, self._context_ids, float(scale)
        rows = np.asarray(shapes, dtype=np.float64)[:, :3].astype(np.int64).tolist()
        try:
            out = [[op[1] for op in evaluate(ids, b, s, p, scale, None)] for b, s, p in rows]
        except Exception as exc:
            raise _translate(exc) from exc
        return np.array(out, dtype=np.float64).reshape(len(out), self.n_context)

    def generation_many(self, shapes, scale: float = 1.0):
        """Per-op latencies (ms) at each (batch, s) row: float64[n, n_generation]."""
        evaluate, ids, scale = self._engines["generation"]._engine.evaluate_generation_ops, self._generation_ids, float(scale)
        rows = np.asarray(shapes, dtype=np.float64)[:, :2].astype(np.int64).tolist()
        try:
            out = [[op[1] for op in evaluate(ids, b, s, scale, 0, None)] for b, s in rows]
        except Exception as exc:
            raise _translate(exc) from exc
        return np.array(out, dtype=np.float64).reshape(len(out), self.n_generation)

    def context_ops(self, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> list[OpPrice]:
        try:
            rows = self._engines["context"].evaluate_context_ops(
                self._context_ids, batch_size=batch_size, s=s, prefix=prefix, seq_imbalance_correction_scale=scale
            )
        except Exception as exc:
            raise _translate(exc) from exc
        return [OpPrice(name, float(lat), src) for name, lat, _energy, src in rows]

    def generation_ops(self, batch_size: int, s: int, scale: float = 1.0) -> list[OpPrice]:
        try:
            rows = self._engines["generation"].evaluate_generation_ops(
                self._generation_ids, batch_size=batch_size, s=s, gen_seq_imbalance_correction_scale=scale
            )
        except Exception as exc:
            raise _translate(exc) from exc
        return [OpPrice(name, float(lat), src) for name, lat, _energy, src in rows]


PHASES = ("context", "generation")


def _engine(deployment: Deployment, literal_version: str, mode: str, large_ep: bool) -> tuple[dict, object]:
    """The reference's EngineSpec of the deployment's model (large_ep: see reference_model) and its EngineHandle."""
    import aiconfigurator_core
    from aiconfigurator_core.sdk.engine import EngineHandle

    try:
        spec = reference_engine_spec(deployment, literal_version, mode, large_ep)
        return spec, EngineHandle(bytes(aiconfigurator_core.engine_spec_bincode_from_json(json.dumps(spec))))
    except EstimatorError:
        raise
    except Exception as exc:  # the reference raises bare ValueError/KeyError/AssertionError
        raise _translate(exc) from exc


def reference_engine_spec(deployment: Deployment, literal_version: str, mode: str = "SILICON", large_ep: bool = True) -> dict:
    """The reference's EngineSpec (op lists included) for a deployment, built as its compile_engine does."""
    from aiconfigurator_core.sdk import engine as E

    model = reference_model(deployment, literal_version, large_ep)
    return json.loads(
        E.build_engine_spec_json(
            model,
            model_path=reference_model_path(deployment.model),
            system=deployment.system,
            backend=deployment.backend.value,
            backend_version=literal_version,
            kv_block_size=None,
            systems_path=None,
            nextn=model.config.nextn,
            database=reference_database(deployment.system, deployment.backend.value, literal_version, mode),
        )
    )


def _base_config(deployment: Deployment):
    """The reference's ModelConfig of a deployment before any data-driven resolution: parallel sizes,
    quant overrides and MTP (cli/api.py _build_model_config, _apply_nextn)."""
    from aiconfigurator_core.sdk.config_builders import apply_nextn, build_model_config

    q = deployment.quant
    moe_tp, moe_ep = moe_parallelism(deployment)
    config = build_model_config(
        tp_size=deployment.tp,
        pp_size=deployment.pp,
        attention_dp_size=deployment.attention_dp,
        moe_tp_size=moe_tp,
        moe_ep_size=moe_ep,
        gemm_quant_mode=q.gemm,
        kvcache_quant_mode=q.kvcache,
        fmha_quant_mode=q.fmha,
        moe_quant_mode=q.moe,
        comm_quant_mode=q.comm,
        forward_model=None,
        attention_backend=None,
    )
    apply_nextn(config, deployment.nextn)
    return config


def takes_large_ep(deployment: Deployment, literal_version: str) -> bool:
    """Whether the deployment's MoE takes a resolved cross-node all-to-all (with_large_ep_moe)."""
    return reference_model(deployment, literal_version).config.moe_comm_backend is not None


@memo(256)
def reference_model(deployment: Deployment, literal_version: str, large_ep: bool = True):
    """The reference's model object for a deployment, as the estimate CLI builds it: the parallel and
    quant config, MTP, the cross-node MoE all-to-all of the worker's role (large_ep, with_large_ep_moe),
    the data-driven fmha downgrade and the nvfp4 remap (reference errors translated)."""
    _quiet_reference_logs()
    from aiconfigurator_core.sdk.models import get_model, resolve_context_fmha_by_data, resolve_nvfp4_for_system

    backend = deployment.backend.value
    try:
        config = _base_config(deployment)
        database = reference_database(deployment.system, backend, literal_version)
        model = reference_model_path(deployment.model)
        if large_ep:
            config = with_large_ep_moe(config, deployment, model, database)
        if config.moe_comm_backend is None:  # a resolved large-EP tuple owns its attention labels (as the CLI keeps them)
            resolve_context_fmha_by_data(config, model, database, backend, is_context_role=True)
        resolve_nvfp4_for_system(config, deployment.system, model, backend_name=backend)
        return get_model(model, config, backend)
    except EstimatorError:
        raise
    except Exception as exc:  # the reference raises bare ValueError/KeyError/AssertionError
        raise _translate(exc) from exc


def with_large_ep_moe(config, deployment: Deployment, model_path: str, database):
    """The model config with the MoE all-to-all the estimate CLI resolves for the worker's role, or
    config itself where the CLI keeps the fused MoE graph or refuses the layout.

    aiconfigurator 0.12.0's disagg estimate (cli/api.py L1959-1978) resolves the context phase for a
    prefill worker and the generation phase for a decode worker (Role.large_ep_phases; its agg
    estimate resolves none) through sdk.moe_comm_resolver.resolve_model_config_moe_comm: an
    expert-parallel layout wider than a node takes the DeepEP / wide-EP all-to-all its tables cover,
    and the WideEP op graph."""
    if own_all_to_all(deployment):
        return config
    try:
        resolved = _resolved(config, deployment, model_path, database)
    except _Refused:
        return config
    return config if resolved is None or one_node_data_across_infiniband(resolved, deployment, model_path, database) else resolved


def one_node_data_across_infiniband(resolved, deployment: Deployment, model_path: str, database) -> bool:
    """Whether the CLI prices the resolved all-to-all of an EP group spanning nodes that no NVLink
    domain joins (no rack tier: h100, h200, b200, b300) with one node's measurement: its tables lack
    the group's own (EP, nodes) coordinate and a2a_covers_parallel takes the physical full-node row
    (moe_comm_resolver, which the query engine marks estimated). An InfiniBand all-to-all priced by
    NVLink data is not taken; the worker keeps the fused graph."""
    from aiconfigurator_core.sdk.operations.moe_comm import nodes_for

    spec = load_system_spec(deployment.system)
    if spec.num_gpus_per_rack is not None:
        return False
    shape, ep = moe_shape(model_path), int(resolved.moe_ep_size)
    nodes = nodes_for(ep, spec.num_gpus_per_node)
    for phase, comm_backend in resolved.moe_comm_backend.items():
        coverage = database.moe_a2a_coverage(shape.hidden_size, shape.topk, shape.num_experts, resolved.moe_quant_mode, phase)
        if (ep, nodes) not in coverage.get(comm_backend, set()):
            return True
    return False


@memo()
def wide_ep_stand_in(deployment: Deployment, literal_version: str) -> Deployment:
    """The deployment whose ops price this one: itself, or, for a pure attention-DP worker (tp 1,
    attention DP = EP) whose cross-node layout the CLI refuses for want of expert-compute data at its
    width, the same worker at the next power-of-two width whose resolution is taken. Tokens per rank are the
    same, so each rank's token-expert pairs are unchanged (tokens x topk over the ranks) and its
    experts fewer (estimator/docs/engine-settings.md, "cross-node expert parallelism"). The worker's
    memory and KV facts stay its own (reference_model of the deployment)."""
    if not deployment.role.large_ep_phases or deployment.tp != 1 or not is_moe_model(deployment.model) or own_all_to_all(deployment):
        return deployment
    moe_tp, moe_ep = moe_parallelism(deployment)
    if moe_tp != 1 or moe_ep != deployment.attention_dp or _resolves(deployment, literal_version) is not False:
        return deployment
    for quant in _wide_ep_quants(deployment):
        width = moe_ep
        while width <= int(moe_shape(reference_model_path(deployment.model)).num_experts):  # the widest EP a layout can have
            candidate = dataclasses.replace(deployment, attention_dp=width, moe_ep=width, quant=quant)
            if candidate != deployment and takes_large_ep(candidate, literal_version):  # resolved, and not refused by one_node_data_across_infiniband
                return candidate
            width *= 2
    return deployment


WIDE_EP_MOE_QUANT = "fp8_block"  # the MoE quant every SGLang wide-EP table measures (wideep_*_moe_perf, wideep_deepep_ll/normal_perf)


def _wide_ep_quants(deployment: Deployment) -> tuple[QuantOverrides, ...]:
    """The worker's quant overrides, then, for an SGLang worker of another MoE quant, the same with the MoE at the quant
    the wide-EP tables measure: an upper bound on a narrower quant's expert compute and dispatch bytes (FP4 weights are
    half FP8's). Its recipes run DeepEP (srt-slurm recipes/gb200-fp4/1k1k/mid-curve.yaml @ f7d28c3f6083: moe-a2a-backend
    deepep, deepep-mode low_latency, SGLANG_MOE_NVFP4_DISPATCH 1), which the fused graph's all-gather does not price."""
    own = deployment.quant
    if deployment.backend is not Backend.SGLANG or own.moe == WIDE_EP_MOE_QUANT:
        return (own,)
    return own, dataclasses.replace(own, moe=WIDE_EP_MOE_QUANT)


def _resolves(deployment: Deployment, literal_version: str) -> bool | None:
    """True when the CLI resolves the worker's cross-node all-to-all, None when it keeps the fused
    graph, False when it refuses the layout (reference errors translated)."""
    try:
        database = reference_database(deployment.system, deployment.backend.value, literal_version)
        resolved = _resolved(_base_config(deployment), deployment, reference_model_path(deployment.model), database)
        return True if resolved is not None else None
    except _Refused:
        return False
    except EstimatorError:
        raise
    except Exception as exc:  # the reference raises bare ValueError/KeyError/AssertionError
        raise _translate(exc) from exc


class _Refused(Exception):
    """The estimate CLI refuses a cross-node expert-parallel layout (no coverage, MoE TP across nodes)."""


def within_one_node(deployment: Deployment) -> bool:
    """Whether the worker's expert-parallel group (tp x attention DP GPUs) fits in one node: no cross-node all-to-all."""
    return deployment.tp * deployment.attention_dp <= load_system_spec(deployment.system).num_gpus_per_node


@memo()
def large_ep_note(deployment: Deployment, literal_version: str) -> str:
    """How a disaggregated worker's cross-node MoE all-to-all is priced, for a row's note: the graph
    its role's phase takes and any departure from the estimate CLI ("" for an agg worker, a dense
    model or a worker within one node)."""
    role = deployment.role
    if not role.large_ep_phases or within_one_node(deployment) or not is_moe_model(deployment.model):
        return ""
    own = own_all_to_all(deployment)
    if own:
        cli = "; the CLI would price DeepEP" if _resolves(deployment, literal_version) else ""
        return f"{role.value} worker: {own} (the fused graph{cli})"
    stand_in = wide_ep_stand_in(deployment, literal_version)
    if not takes_large_ep(stand_in, literal_version):
        if _resolves(stand_in, literal_version):  # one_node_data_across_infiniband
            return f"{role.value} worker: the CLI's all-to-all data cover one node, not this InfiniBand-joined group (the fused graph)"
        return ""  # the CLI refuses the layout and no covered width stands in: the fused graph, as before
    width = f" at EP {stand_in.moe_ep} (the tables skip EP {deployment.moe_ep}; same tokens per rank)" if stand_in.moe_ep != deployment.moe_ep else ""
    quant = (f", its MoE priced at {stand_in.quant.moe} (the wide-EP tables measure no {deployment.quant.moe}: an upper bound)"
             if stand_in.quant != deployment.quant else "")  # fmt: skip
    return f"{role.value} worker: wide-EP all-to-all{width}{quant}"


def own_all_to_all(deployment: Deployment) -> str:
    """The framework's own all-to-all where it is not the DeepEP one the CLI resolves, for the note
    ("" where the CLI's resolution stands: SGLang, whose wide-EP recipes set --moe-a2a-backend
    deepep, and TensorRT-LLM outside a multi-node NVLink domain). Such a worker keeps the fused graph
    (with_large_ep_moe, wide_ep_stand_in).

    * vLLM takes --all2all-backend, default allgather_reducescatter (vllm/config/parallel.py
      ParallelConfig.all2all_backend); srt-slurm's GB200 Kimi-K2.5 recipes set
      flashinfer_nvlink_one_sided.
    * TensorRT-LLM within a multi-node NVLink domain (gb200/gb300: a 72-GPU rack) takes its NVLink
      all-to-all (CommunicationFactory.create_strategy: NVLinkOneSided, then NVLinkTwoSided, before
      NcclEP and DeepEP; earlier releases' select_alltoall_method_type: MNNVL first), which the fused
      graph's TrtllmAlltoall dispatch prices."""
    if deployment.backend is Backend.VLLM:
        return "vLLM's --all2all-backend, not DeepEP"
    rack = load_system_spec(deployment.system).num_gpus_per_rack
    if deployment.backend is Backend.TRTLLM and rack is not None and deployment.tp * deployment.attention_dp <= rack:
        return "TensorRT-LLM's NVLink all-to-all within the rack"
    return ""


def _resolved(config, deployment: Deployment, model_path: str, database):
    """A copy of config with the role's cross-node all-to-all resolved as the CLI resolves it, or None
    where the CLI keeps the fused graph (an agg worker, a dense model, EP 1, an intra-node layout);
    _Refused where it refuses the layout."""
    from aiconfigurator.sdk.moe_comm_resolver import resolve_model_config_moe_comm
    from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError

    if not deployment.role.large_ep_phases:
        return None
    q, resolved = deployment.quant, copy.deepcopy(config)
    try:
        backends = resolve_model_config_moe_comm(resolved, model_path=model_path, backend_name=deployment.backend.value,
                                                 database=database, required_phases=deployment.role.large_ep_phases,
                                                 fmha_quant_mode_explicit=q.fmha is not None,
                                                 kvcache_quant_mode_explicit=q.kvcache is not None)  # fmt: skip
    except (PerfDataNotAvailableError, ValueError) as exc:
        raise _Refused from exc
    return None if backends is None else resolved


@memo()
def moe_shape(model_path: str):
    """The MoE block shape of a reference MoE model (hidden size, topk, experts), as the resolver reads it."""
    from aiconfigurator.sdk.models import _get_model_info
    from aiconfigurator.sdk.models.blocks.moe import MoEBlockShape

    try:
        return MoEBlockShape.from_model_info(_get_model_info(model_path))
    except Exception as exc:  # the reference raises bare ValueError/KeyError on a config it cannot read
        raise _translate(exc) from exc


@memo()
def is_moe_model(model: str) -> bool:
    """True when the reference models the architecture with routed experts (check_is_moe)."""
    from aiconfigurator_core.sdk.models.helpers import check_is_moe

    path = reference_model_path(model)
    try:
        return bool(check_is_moe(path))
    except Exception as exc:  # the reference raises bare ValueError/KeyError on a config it cannot read
        raise _translate(exc) from exc


def moe_parallelism(deployment: Deployment) -> tuple[int, int]:
    """(moe_tp, moe_ep) as the estimate CLI resolves them: for MoE models one missing size is inferred
    from tp * attention_dp = moe_tp * moe_ep and a mismatch is an error; dense models keep 1 for unset."""
    from aiconfigurator_core.sdk.config import ModelConfig

    if not is_moe_model(deployment.model):
        return deployment.moe_tp or 1, deployment.moe_ep or 1
    cfg = ModelConfig(tp_size=deployment.tp, attention_dp_size=deployment.attention_dp, moe_tp_size=deployment.moe_tp,
                      moe_ep_size=deployment.moe_ep)  # fmt: skip
    try:
        return cfg.resolve_moe_parallelism()
    except ValueError as exc:
        raise InvalidInputError(f"{deployment.model}: {exc}") from None


@memo()
def reference_database(system: str, backend: str, literal_version: str, mode: str = "SILICON"):
    """The reference's perf database view for a stack in a query mode (SILICON | HYBRID)."""
    _quiet_reference_logs()
    if mode not in DATABASE_MODES:
        raise EstimatorError(f"unknown database mode {mode!r} (known: {', '.join(DATABASE_MODES)})")
    from aiconfigurator_core.sdk import engine as E
    from aiconfigurator_core.sdk import perf_database

    if mode == "SILICON":
        return E._maybe_load_database(system, backend, literal_version, None)
    try:
        return perf_database.get_database_view(system, backend, literal_version, database_mode=mode)
    except Exception as exc:
        raise _translate(exc) from exc


@memo()
def probe_engine(system: str, backend: str, literal_version: str):
    """A model-less reference engine bound to a stack's tables, for ad-hoc op lists."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    return EngineHandle.for_database(reference_database(system, backend, literal_version))


def price_ops_json(
    system: str, backend: str, literal_version: str, ops_spec: list[dict], *, is_context: bool, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0
) -> list[OpPrice]:
    """Price an ad-hoc OpSpec list through the reference engine (the per-op parity oracle)."""
    engine = probe_engine(system, backend, literal_version)
    try:
        rows = engine.evaluate_ops_json(
            json.dumps(ops_spec),
            is_context=is_context,
            batch_size=batch_size,
            s=s,
            prefix=prefix,
            imbalance_correction_scale=scale,
        )
    except Exception as exc:
        raise _translate(exc) from exc
    return [OpPrice(name, float(lat), src) for name, lat, _energy, src in rows]
