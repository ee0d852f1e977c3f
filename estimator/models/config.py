"""Model configs: resolve a model id or path to the HuggingFace config fields the op builders need.

Mirrors aiconfigurator-core 0.12.0 (``sdk/utils.py``: ``_load_model_config_from_model_path``,
``_attach_hf_quant_config``, ``_infer_quantization_fields``, ``_parse_hf_config_json``), reading only
the bundled JSON files of the installed ``aiconfigurator_core`` package; no reference code runs.

Accepted model strings:
* an HF id ("Qwen/Qwen3-32B-FP8") -> ``model_configs/Qwen--Qwen3-32B-FP8_config.json`` plus the optional
  ``Qwen--Qwen3-32B-FP8_hf_quant_config.json`` (no network look-up: an id without a bundled file is unknown);
* a directory holding ``config.json`` and optionally ``hf_quant_config.json`` (as the reference);
* a path to a config file: its companion quant file is the same path with the trailing
  ``config.json`` replaced by ``hf_quant_config.json`` (``config.json`` -> ``hf_quant_config.json``,
  ``X_config.json`` -> ``X_hf_quant_config.json``), read if present.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from estimator.caching import memo
from estimator.deployment import MAX_SIZE
from estimator.errors import InvalidInputError, UnknownModelError, UnsupportedModelError

# HF architecture -> reference model family, for the architectures the native dense builder handles.
# The reference maps all four to its LLAMA builder (common.ARCHITECTURE_TO_MODEL_FAMILY).
_NATIVE_ARCHITECTURES: Mapping[str, str] = MappingProxyType(
    {
        "LlamaForCausalLM": "LLAMA",
        "Qwen2ForCausalLM": "LLAMA",
        "Qwen3ForCausalLM": "LLAMA",
        "MiMoForCausalLM": "LLAMA",
    }
)
# Architectures whose attention applies per-head Q/K RMSNorm (reference: extra_params["use_qk_norm"]).
_QK_NORM_ARCHITECTURES = frozenset({"Qwen3ForCausalLM"})

# Size fields every config (its text config's, for a multimodal model) gives as positive integers
# when it gives them, and the ones that may also be null or 0 (absent from the model); none above MAX_SIZE.
_POSITIVE_FIELDS = ("num_hidden_layers", "num_attention_heads", "hidden_size", "vocab_size", "max_position_embeddings")
_OPTIONAL_FIELDS = ("num_key_value_heads", "head_dim", "attention_head_dim", "intermediate_size")
# The fields the reference reads with no default (sdk/utils.py _parse_hf_config_json; it names a missing
# num_hidden_layers itself, which a layer pattern may stand in for).
_REFERENCE_FIELDS = ("hidden_size", "num_attention_heads", "vocab_size", "max_position_embeddings")
_SHOWN_CHARS = 20  # a bad value longer than twice this is shown by its first and last characters

_CONFIG_SUFFIX = "config.json"
_QUANT_SUFFIX = "hf_quant_config.json"


@dataclass(frozen=True)
class QuantInfo:
    """The checkpoint's quantization description, normalized as the reference does before mode inference."""

    quant_algo: str | None  # lowercased/aliased algo, e.g. "fp8", "fp8_block", "nvfp4", "compressed-tensors"
    kv_cache_algo: str | None  # "fp8", "bfloat16" or another lowercased label; None = not declared
    quant_dynamic: bool | None  # activation scaling: True dynamic, False static, None undeclared
    quantization_config: Mapping[str, Any] = field(hash=False)  # config.json's (or synthesized) quantization_config
    hf_quant_config: Mapping[str, Any] | None = field(hash=False)  # ModelOpt hf_quant_config.json, if any


@dataclass(frozen=True)
class ModelConfig:
    """One dense decoder model's shape, as the reference parses it. Sizes are element counts."""

    model: str  # the id or path as given
    architecture: str  # HF architecture, e.g. "Qwen3ForCausalLM"
    family: str  # reference model family, e.g. "LLAMA"
    num_layers: int  # decoder layers (num_hidden_layers); MTP predict layers are not counted
    num_heads: int  # query heads
    num_kv_heads: int  # KV heads; 0 when config.json omits them (reference quirk, kept)
    head_size: int  # head_dim, else attention_head_dim, else hidden_size // num_heads
    hidden_size: int  # model width
    inter_size: int  # dense MLP intermediate size (0 if absent)
    vocab_size: int  # vocabulary rows
    max_context: int  # max_position_embeddings, tokens
    use_qk_norm: bool  # attention applies Q/K norm (Qwen3)
    quant: QuantInfo  # raw quantization info for quant-mode inference


@dataclass(frozen=True)
class ModelShape:
    """The sizes of any model's config that bound a deployment and a workload."""

    num_layers: int | None  # num_hidden_layers; None when the config does not give it (hybrid layer patterns)
    max_context: int | None  # max_position_embeddings, tokens; None when the config does not give it


@dataclass(frozen=True)
class ModelIdentity:
    """What makes two configs one model whatever their quantization (None: the config does not give it)."""

    architecture: str | None  # first HF architecture listed
    num_layers: int | None  # decoder layers (num_hidden_layers)
    hidden_size: int | None  # model width
    num_heads: int | None  # query heads
    num_experts: int | None  # routed experts (n_routed_experts, num_experts or num_local_experts); None: dense

    def describe(self) -> str:
        """One line naming the fields, e.g. "Qwen3ForCausalLM, 64 layers, width 5120, 64 heads"."""
        sizes = [f"{self.num_layers} layers", f"width {self.hidden_size}", f"{self.num_heads} heads"]
        return ", ".join([str(self.architecture), *sizes, *([f"{self.num_experts} experts"] if self.num_experts else [])])


_EXPERT_FIELDS = ("n_routed_experts", "num_experts", "num_local_experts")


@memo()
def model_identity(model: str) -> ModelIdentity:
    """The architecture and decoder sizes of any model's config (its text config's for a multimodal
    model); UnknownModelError when no config is found."""
    config_path, _ = _locate(model)
    raw = _load_json(config_path)
    text = _text_config(model, raw)
    experts = next((text[key] for key in _EXPERT_FIELDS if text.get(key)), None)
    return ModelIdentity(
        architecture=_first_architecture(model, raw),
        num_layers=text.get("num_hidden_layers"),
        hidden_size=text.get("hidden_size"),
        num_heads=text.get("num_attention_heads"),
        num_experts=experts,
    )


def _text_config(model: str, raw: dict) -> dict:
    """A config's text config (a multimodal model's `text_config` object), else the config itself (no
    `text_config`, or null); InvalidInputError when `text_config` is present but not a JSON object."""
    text = raw.get("text_config")
    if text is None:
        return raw
    if not isinstance(text, dict):
        raise InvalidInputError(f"model {model!r}: config field 'text_config' must be a JSON object, got {json.dumps(text)[:80]}")
    return text


def native_families() -> tuple[str, ...]:
    """The HF architectures the native dense builder supports, sorted."""
    return tuple(sorted(_NATIVE_ARCHITECTURES))


def is_natively_modelled(model: str) -> bool:
    """True when the model's config names an architecture the native dense builder handles
    (UnknownModelError when no config is found)."""
    return model_architecture(model) in _NATIVE_ARCHITECTURES


def require_native(model: str) -> None:
    """UnsupportedModelError (naming the native architectures) unless the model's first architecture
    has a native op builder; UnknownModelError when no config is found."""
    config_path, _ = _locate(model)
    _architecture(model, _load_json(config_path))


def model_architecture(model: str) -> str | None:
    """The first HF architecture a model's config lists, None when it lists none (UnknownModelError
    when no config is found)."""
    config_path, _ = _locate(model)
    return _first_architecture(model, _load_json(config_path))


def _first_architecture(model: str, raw: dict) -> str | None:
    """raw's first listed architecture (None for none); InvalidInputError unless it lists names."""
    architectures = raw.get("architectures") or [None]
    if not isinstance(architectures, list) or not isinstance(architectures[0], (str, type(None))):
        raise InvalidInputError(f"model {model!r}: config field 'architectures' must be a list of names, got {json.dumps(architectures)}")
    return architectures[0]


@dataclass(frozen=True)
class ModelTraits:
    """What a model's config says of its attention and inputs beyond the sizes."""

    multimodal: bool  # a text_config, vision_config or audio_config section (SGLang's has_multimodal_subconfig)
    mla: bool  # multi-head latent attention: kv_lora_rank in its text config (DeepSeek-V2/V3, Kimi-K2)
    sparse_indexer: bool  # a DSA top-k indexer: index_topk in its text config (DeepSeek-V3.2, GLM-5)


@memo()
def model_traits(model: str) -> ModelTraits:
    """The model's ModelTraits (UnknownModelError when no config is found)."""
    config_path, _ = _locate(model)
    raw = _load_json(config_path)
    text = _text_config(model, raw)
    multimodal = any(raw.get(key) is not None for key in ("text_config", "vision_config", "audio_config"))
    return ModelTraits(multimodal, text.get("kv_lora_rank") is not None, text.get("index_topk") is not None)


@memo()
def linear_attention_layers(model: str) -> int:
    """Decoder layers the model's config marks "linear_attention" in layer_types (its text config's
    for a multimodal model): gated-delta-net layers, e.g. Qwen3.5, Qwen3-Next; 0 for other models
    (UnknownModelError when no config is found)."""
    config_path, _ = _locate(model)
    layer_types = _text_config(model, _load_json(config_path)).get("layer_types") or []
    if not isinstance(layer_types, list):
        raise InvalidInputError(f"model {model!r}: config field 'layer_types' must be a list of layer kinds, got {json.dumps(layer_types)[:80]}")
    return sum(1 for kind in layer_types if kind == "linear_attention")


def require_pipeline_fits(model: str, pp: int, layers: int | None) -> None:
    """InvalidInputError when pp pipeline stages exceed the model's decoder layers (a stage holds at least one;
    layers None: the config does not say)."""
    if layers is not None and pp > layers:
        raise InvalidInputError(f"pp size {pp} exceeds the {layers} layers of {model!r}: a pipeline stage holds at least one")


@memo()
def model_shape(model: str) -> ModelShape:
    """The layer count and context length of any model's config (its text config's for a multimodal
    model), every size field checked (UnknownModelError when no config is found, InvalidInputError
    naming a size field that is not a positive integer)."""
    config_path, _ = _locate(model)
    text = _text_config(model, _load_json(config_path))
    _check_sizes(model, text)
    return ModelShape(text.get("num_hidden_layers"), text.get("max_position_embeddings"))


def require_reference_fields(model: str) -> None:
    """InvalidInputError naming the first field the reference pricer needs that the model's config (its
    text config's, for a multimodal model) lacks, which it would report as a bare KeyError; UnknownModelError
    when no config is found."""
    config_path, _ = _locate(model)
    text = _text_config(model, _load_json(config_path))
    for key in _REFERENCE_FIELDS:
        _required(model, text, key)


def resolve_model_config(model: str) -> ModelConfig:
    """Resolve a model id or config path to its ModelConfig.

    Raises UnknownModelError if no config file is found, UnsupportedModelError if the architecture
    has no native builder, InvalidInputError if config.json lacks a required field.
    """
    config_path, quant_path = _locate(model)
    raw = _load_json(config_path)
    architecture = _architecture(model, raw)
    _check_sizes(model, raw)
    return ModelConfig(
        model=model,
        architecture=architecture,
        family=_NATIVE_ARCHITECTURES[architecture],
        num_layers=_required(model, raw, "num_hidden_layers"),
        num_heads=_required(model, raw, "num_attention_heads"),
        num_kv_heads=raw.get("num_key_value_heads") or 0,
        head_size=_head_size(model, raw),
        hidden_size=_required(model, raw, "hidden_size"),
        inter_size=raw.get("intermediate_size") or 0,
        vocab_size=_required(model, raw, "vocab_size"),
        max_context=_required(model, raw, "max_position_embeddings"),
        use_qk_norm=architecture in _QK_NORM_ARCHITECTURES,
        quant=_checkpoint_quant(raw, quant_path),
    )


def checkpoint_quant(model: str) -> QuantInfo:
    """The quant description of a model's checkpoint, for any architecture (native or reference-priced).

    Raises UnknownModelError if no config file is found."""
    config_path, quant_path = _locate(model)
    return _checkpoint_quant(_load_json(config_path), quant_path)


def _checkpoint_quant(raw: dict, quant_path: Path) -> QuantInfo:
    return _quant_info(raw, _load_json(quant_path) if quant_path.is_file() else None)


def bundled_model_configs_dir() -> Path:
    """The installed aiconfigurator_core package's bundled model_configs directory (data only)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or spec.origin is None:
        raise UnknownModelError("aiconfigurator-core is not installed: no bundled model configs")
    return Path(spec.origin).parent / "model_configs"


def _locate(model: str) -> tuple[Path, Path]:
    """(config file, companion quant file) for a model string; the quant file may not exist."""
    if os.path.isdir(model):
        config_path = Path(model) / _CONFIG_SUFFIX
    elif os.path.isfile(model):
        config_path = Path(model)
    else:
        config_path = bundled_model_configs_dir() / f"{model.replace('/', '--')}_{_CONFIG_SUFFIX}"
    if not config_path.is_file():
        raise UnknownModelError(f"unknown model {model!r}: no config.json found (looked for {config_path})")
    name = config_path.name
    quant_name = name[: -len(_CONFIG_SUFFIX)] + _QUANT_SUFFIX if name.endswith(_CONFIG_SUFFIX) else _QUANT_SUFFIX
    return config_path, config_path.with_name(quant_name)


def _load_json(path: Path) -> dict:
    """Parse a JSON object; bare Infinity/NaN (found in some HF configs) read as None, as the reference."""
    try:
        data = json.loads(path.read_text(), parse_constant=lambda _: None)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: arrays or objects nested past Python's limit
        raise UnknownModelError(f"cannot read model config {str(path)!r}: {exc}") from None
    if not isinstance(data, dict):
        raise UnknownModelError(f"model config {str(path)!r} must hold a JSON object, not a {type(data).__name__}")
    return data


def _check_sizes(model: str, raw: dict) -> None:
    """InvalidInputError naming the first size field given as anything but an integer (a string,
    a float, a list, null or NaN), below 1 (below 0 for an optional field, which may also be null)
    or above MAX_SIZE."""
    for key in (*_POSITIVE_FIELDS, *_OPTIONAL_FIELDS):
        if key not in raw or (raw[key] is None and key in _OPTIONAL_FIELDS):
            continue
        value, least = raw[key], 1 if key in _POSITIVE_FIELDS else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InvalidInputError(f"model {model!r}: config field {key!r} must be an integer >= {least}, got {_shown(value)}")
        if value > MAX_SIZE:
            raise InvalidInputError(f"model {model!r}: config field {key!r} must be at most {MAX_SIZE}, got {_shown(value)}")


def _shown(value: object) -> str:
    """A config value as JSON ("null or NaN" for None), a long one (a 400-digit integer) cut to its ends."""
    text = "null or NaN" if value is None else json.dumps(value)
    return text if len(text) <= 2 * _SHOWN_CHARS + 3 else f"{text[:_SHOWN_CHARS]}...{text[-_SHOWN_CHARS:]}"


def _architecture(model: str, raw: dict) -> str:
    """The first listed architecture, which must have a native builder."""
    architecture = _first_architecture(model, raw)
    if architecture not in _NATIVE_ARCHITECTURES:
        known = ", ".join(native_families())
        raise UnsupportedModelError(
            f"model {model!r} has architecture {architecture!r}, which has no native op builder (native: {known}); use the reference pricer"
        )
    return architecture


def _required(model: str, raw: dict, key: str) -> Any:
    """raw[key], or InvalidInputError naming the missing field."""
    if key not in raw:
        raise InvalidInputError(f"model {model!r}: config.json lacks required field {key!r}")
    return raw[key]


def _head_size(model: str, raw: dict) -> int:
    """head_dim, else attention_head_dim, else hidden_size // num_heads (0 if num_heads is 0)."""
    heads = _required(model, raw, "num_attention_heads")
    fallback = _required(model, raw, "hidden_size") // heads if heads > 0 else 0
    return raw.get("head_dim") or raw.get("attention_head_dim") or fallback


# --------------------------------------------------------------------------------------------------
# Quantization description (reference: _attach_hf_quant_config + _infer_quantization_fields)
# --------------------------------------------------------------------------------------------------

_QUANT_ALGO_ALIASES = MappingProxyType(
    {
        "w4a16_mxfp4": "mxfp4",
        "mixed-precision": "mixed_precision",
        "mixedprecision": "mixed_precision",
    }
)
_KV_FP8_LABELS = frozenset({"fp8", "e4m3", "e5m2"})
_KV_BF16_LABELS = frozenset({"fp16", "float16", "bf16", "bfloat16"})


def _quant_info(raw: dict, hf_quant: dict | None) -> QuantInfo:
    """Normalize the checkpoint's quant description.

    Invariants (reference): the hf_quant file's quant_algo wins over config.json's quantization_config;
    fp8 with a weight_block_size becomes fp8_block; config.json top-level keys quant_algo /
    kv_cache_quant_algo / quant_dynamic, when present, override the inferred values (setdefault).
    """
    quant_cfg = _effective_quantization_config(raw, hf_quant)
    hf_section = _hf_section(hf_quant)
    quant_algo = _normalize_quant_algo(
        hf_section.get("quant_algo") or quant_cfg.get("quant_algo") or quant_cfg.get("quant_method") or quant_cfg.get("quantization_method")
    )
    if quant_algo == "fp8" and quant_cfg.get("weight_block_size"):
        quant_algo = "fp8_block"
    kv_cache_algo = _normalize_kv_cache_algo(
        hf_section.get("kv_cache_quant_algo")
        or quant_cfg.get("kv_cache_quant_algo")
        or quant_cfg.get("kv_cache_quant_method")
        or quant_cfg.get("kv_cache_dtype")
    ) or _kv_cache_scheme_algo(quant_cfg.get("kv_cache_scheme"))
    return QuantInfo(
        quant_algo=raw["quant_algo"] if "quant_algo" in raw else quant_algo,
        kv_cache_algo=raw["kv_cache_quant_algo"] if "kv_cache_quant_algo" in raw else kv_cache_algo,
        quant_dynamic=raw["quant_dynamic"] if "quant_dynamic" in raw else _quant_dynamic(quant_cfg),
        quantization_config=MappingProxyType(quant_cfg),
        hf_quant_config=MappingProxyType(hf_quant) if hf_quant else None,
    )


def _hf_section(hf_quant: dict | None) -> dict:
    """hf_quant_config["quantization"] if it is a dict, else {}."""
    section = (hf_quant or {}).get("quantization")
    return section if isinstance(section, dict) else {}


def _effective_quantization_config(raw: dict, hf_quant: dict | None) -> dict:
    """config.json's quantization_config; if absent, one synthesized from the hf_quant file
    ({quant_method, kv_cache_quant_method}, lowercased), as the reference's _attach_hf_quant_config."""
    if "quantization_config" in raw:
        quant_cfg = raw["quantization_config"]
        return quant_cfg if isinstance(quant_cfg, dict) else {}
    section = _hf_section(hf_quant)
    algo = section.get("quant_algo") or section.get("quantization_algo")
    kv_algo = section.get("kv_cache_quant_algo")
    synthesized = {}
    if algo:
        synthesized["quant_method"] = str(algo).lower()
    if kv_algo:
        synthesized["kv_cache_quant_method"] = str(kv_algo).lower()
    return synthesized


def _normalize_quant_algo(value: object) -> str | None:
    """Lowercase, strip and alias a quant algorithm label; None for empty."""
    algo = str(value).strip().lower() if value is not None else ""
    return _QUANT_ALGO_ALIASES.get(algo, algo) or None


def _normalize_kv_cache_algo(value: object) -> str | None:
    """Map KV-cache dtype labels to "fp8" / "bfloat16"; other labels pass through lowercased."""
    algo = str(value).strip().lower() if value is not None else ""
    if algo in _KV_FP8_LABELS:
        return "fp8"
    if algo in _KV_BF16_LABELS:
        return "bfloat16"
    return algo or None


def _kv_cache_scheme_algo(scheme: object) -> str | None:
    """KV algo from a compressed-tensors kv_cache_scheme dict: fp8 type or float <= 8 bits -> fp8,
    float >= 16 bits -> bfloat16."""
    if not isinstance(scheme, dict):
        return None
    scheme_type = str(scheme.get("type", "")).lower()
    num_bits = scheme.get("num_bits")
    if "fp8" in scheme_type:
        return "fp8"
    if scheme_type == "float" and isinstance(num_bits, int):
        if num_bits <= 8:
            return "fp8"
        if num_bits >= 16:
            return "bfloat16"
    return None


def _quant_dynamic(quant_cfg: dict) -> bool | None:
    """activation_scheme dynamic/static, else any config_groups[*].{input_activations,weights}.dynamic."""
    scheme = str(quant_cfg.get("activation_scheme", "")).lower()
    if scheme in ("dynamic", "static"):
        return scheme == "dynamic"
    groups = quant_cfg.get("config_groups")
    if not isinstance(groups, dict):
        return None
    flags = [
        bool(item["dynamic"])
        for group in groups.values()
        if isinstance(group, dict)
        for item in (group.get("input_activations"), group.get("weights"))
        if isinstance(item, dict) and "dynamic" in item
    ]
    return any(flags) if flags else None
