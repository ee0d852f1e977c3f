"""Model configs, quant-mode inference and native op-list builders."""
from estimator.models.config import ModelConfig, QuantInfo, native_families, resolve_model_config
from estimator.models.dense import PhaseOps, build_dense_ops, weight_bytes
from estimator.models.quant import QuantModes, infer_quant

__all__ = [
    "ModelConfig",
    "PhaseOps",
    "QuantInfo",
    "QuantModes",
    "build_dense_ops",
    "infer_quant",
    "native_families",
    "resolve_model_config",
    "weight_bytes",
]
