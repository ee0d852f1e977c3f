"""Model configs, quant-mode inference and native op-list builders."""

from estimator.models.config import (
    ModelConfig,
    ModelIdentity,
    ModelTraits,
    QuantInfo,
    checkpoint_quant,
    is_natively_modelled,
    linear_attention_layers,
    model_architecture,
    model_identity,
    model_shape,
    model_traits,
    native_families,
    resolve_model_config,
)
from estimator.models.dense import PhaseOps, build_dense_ops, weight_bytes
from estimator.models.quant import BF16, QuantModes, check_overrides, checkpoint_quant_modes, infer_quant

__all__ = [
    "BF16",
    "ModelConfig",
    "ModelIdentity",
    "ModelTraits",
    "PhaseOps",
    "QuantInfo",
    "QuantModes",
    "build_dense_ops",
    "checkpoint_quant",
    "checkpoint_quant_modes",
    "check_overrides",
    "infer_quant",
    "is_natively_modelled",
    "linear_attention_layers",
    "model_architecture",
    "model_identity",
    "model_shape",
    "model_traits",
    "native_families",
    "resolve_model_config",
    "weight_bytes",
]
