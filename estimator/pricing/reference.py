"""The reference pricer: aiconfigurator-core 0.12.0's compiled engine, behind the Pricer interface.

Used as the parity oracle and for model families without a native op builder (MoE, MLA, hybrid).
Imports of aiconfigurator_core happen lazily so the native path never pays for them.
"""
from __future__ import annotations

import functools
import json
import logging

from estimator.deployment import Deployment
from estimator.errors import EstimatorError, PerfDataMissingError
from estimator.pricing.base import OpPrice


def _quiet_reference_logs() -> None:
    for name in ("aiconfigurator_core", "aiconfigurator"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _translate(exc: Exception) -> EstimatorError:
    """A reference engine error as one of ours, message kept."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    data_missing = ("perf database error", "perf_interp", "missing system flops")
    if any(marker in msg for marker in data_missing) or "PerfData" in type(exc).__name__:
        return PerfDataMissingError(msg)
    return EstimatorError(msg)


class ReferencePricer:
    """Prices through aiconfigurator_core.sdk.engine.EngineHandle (see estimator.pricing.base.Pricer)."""

    kind = "reference"

    def __init__(self, deployment: Deployment, literal_version: str):
        _quiet_reference_logs()
        import aiconfigurator_core
        from aiconfigurator_core.sdk.engine import EngineHandle

        try:
            self.spec = reference_engine_spec(deployment, literal_version)
            spec_bytes = bytes(aiconfigurator_core.engine_spec_bincode_from_json(json.dumps(self.spec)))
            self.handle = EngineHandle(spec_bytes)
        except EstimatorError:
            raise
        except Exception as exc:  # the reference raises bare ValueError/KeyError/AssertionError
            raise _translate(exc) from exc
        self.n_context = len(self.spec["context_ops"])
        self.n_generation = len(self.spec["generation_ops"])
        probe_c = self.context_ops(1, 1)
        probe_g = self.generation_ops(1, 2)
        self.context_names = tuple(p.name for p in probe_c)
        self.context_sources = tuple(p.source for p in probe_c)
        self.generation_names = tuple(p.name for p in probe_g)
        self.generation_sources = tuple(p.source for p in probe_g)

    def context_many(self, shapes, scale: float = 1.0):
        import numpy as np

        rows = [self.context_ops(int(b), int(s), int(p), scale) for b, s, p in np.asarray(shapes)]
        return np.array([[op.latency_ms for op in row] for row in rows], dtype=np.float64).reshape(len(rows), self.n_context)

    def generation_many(self, shapes, scale: float = 1.0):
        import numpy as np

        rows = [self.generation_ops(int(b), int(s), scale) for b, s, *_ in np.asarray(shapes)]
        return np.array([[op.latency_ms for op in row] for row in rows], dtype=np.float64).reshape(len(rows), self.n_generation)

    def context_ops(self, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> list[OpPrice]:
        try:
            rows = self.handle.evaluate_context_ops(
                list(range(self.n_context)), batch_size=batch_size, s=s, prefix=prefix, seq_imbalance_correction_scale=scale
            )
        except Exception as exc:
            raise _translate(exc) from exc
        return [OpPrice(name, float(lat), src) for name, lat, _energy, src in rows]

    def generation_ops(self, batch_size: int, s: int, scale: float = 1.0) -> list[OpPrice]:
        try:
            rows = self.handle.evaluate_generation_ops(
                list(range(self.n_generation)), batch_size=batch_size, s=s, gen_seq_imbalance_correction_scale=scale
            )
        except Exception as exc:
            raise _translate(exc) from exc
        return [OpPrice(name, float(lat), src) for name, lat, _energy, src in rows]


def reference_engine_spec(deployment: Deployment, literal_version: str) -> dict:
    """The reference's EngineSpec (op lists included) for a deployment, built as its compile_engine does."""
    _quiet_reference_logs()
    from aiconfigurator_core.sdk import engine as E
    from aiconfigurator_core.sdk.config_builders import apply_nextn, build_model_config
    from aiconfigurator_core.sdk.models import get_model, resolve_context_fmha_by_data, resolve_nvfp4_for_system

    q = deployment.quant
    config = build_model_config(
        tp_size=deployment.tp,
        pp_size=deployment.pp,
        attention_dp_size=deployment.attention_dp,
        moe_tp_size=deployment.moe_tp or 1,
        moe_ep_size=deployment.moe_ep or 1,
        gemm_quant_mode=q.gemm,
        kvcache_quant_mode=q.kvcache,
        fmha_quant_mode=q.fmha,
        moe_quant_mode=q.moe,
        comm_quant_mode=q.comm,
        forward_model=None,
        attention_backend=None,
    )
    apply_nextn(config, deployment.nextn)
    backend = deployment.backend.value
    database = reference_database(deployment.system, backend, literal_version)
    # the estimate CLI path: data-driven fmha downgrade and the nvfp4 remap, then the model
    resolve_context_fmha_by_data(config, deployment.model, database, backend, is_context_role=True)
    resolve_nvfp4_for_system(config, deployment.system, deployment.model, backend_name=backend)
    model = get_model(deployment.model, config, backend)
    return json.loads(
        E.build_engine_spec_json(
            model,
            model_path=deployment.model,
            system=deployment.system,
            backend=backend,
            backend_version=literal_version,
            kv_block_size=None,
            systems_path=None,
            nextn=config.nextn,
            database=database,
        )
    )


@functools.cache
def reference_database(system: str, backend: str, literal_version: str):
    """The reference's perf database view (SILICON) for a stack."""
    _quiet_reference_logs()
    from aiconfigurator_core.sdk import engine as E

    return E._maybe_load_database(system, backend, literal_version, None)


@functools.cache
def probe_engine(system: str, backend: str, literal_version: str):
    """A model-less reference engine bound to a stack's tables, for ad-hoc op lists."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    return EngineHandle.for_database(reference_database(system, backend, literal_version))


def price_ops_json(system: str, backend: str, literal_version: str, ops_spec: list[dict], *, is_context: bool,
                   batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> list[OpPrice]:
    """Price an ad-hoc OpSpec list through the reference engine (the per-op parity oracle)."""
    engine = probe_engine(system, backend, literal_version)
    try:
        rows = engine.evaluate_ops_json(
            json.dumps(ops_spec), is_context=is_context, batch_size=batch_size, s=s, prefix=prefix,
            imbalance_correction_scale=scale,
        )
    except Exception as exc:
        raise _translate(exc) from exc
    return [OpPrice(name, float(lat), src) for name, lat, _energy, src in rows]
