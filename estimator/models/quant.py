"""Quant-mode inference: which GEMM / MoE / KV-cache / FMHA / comm modes a deployment runs with.

Mirrors aiconfigurator-core 0.12.0, as run by the CLI estimate path (``aiconfigurator/cli/api.py``):
1. ``sdk/models/helpers.py:_infer_quant_modes_from_raw_config`` (+ ``_infer_mixed_precision_quant_modes``,
   ``sdk/utils.py:parse_compressed_tensors_quant``): checkpoint -> partial modes;
2. ``helpers.py:resolve_context_fmha_by_data``: the data-driven context-FMHA check (optional here);
3. ``helpers.py:resolve_nvfp4_for_system``: nvfp4 -> nvfp4_wo without native FP4 tensor cores;
4. ``helpers.py:_apply_model_quant_defaults``: user overrides win, then checkpoint modes, then defaults
   (bfloat16, comm half); then the vLLM guard (an fp8 FMHA left unset by steps 1-2 becomes bfloat16).
Rules for DeepSeek/DSA/NemotronH architectures are omitted: they never apply to dense architectures.
Mode names are the reference enum member names, which are also the OpSpec quant strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.deployment import Backend, QuantOverrides
from estimator.errors import InvalidInputError, PerfDataMissingError, UnsupportedModelError
from estimator.models.config import ModelConfig, QuantInfo

BF16 = "bfloat16"
FP8 = "fp8"

# Weight storage bytes per element of each GEMM mode (reference common.GEMMQuantMode memory).
GEMM_WEIGHT_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "bfloat16": 2.0,
        "int8_wo": 1.0,
        "int4_wo": 0.5,
        "fp8": 1.0,
        "fp8_static": 1.0,
        "sq": 1.0,
        "fp8_block": 1.0,
        "fp8_ootb": 1.0,
        "nvfp4": 0.5625,
        "nvfp4_wo": 0.5625,
        "w4a16_nvfp4": 0.5625,
    }
)
MOE_MODES = frozenset(
    {
        "bfloat16", "fp8", "int4_wo", "fp8_block", "w4afp8", "nvfp4", "nvfp4_wo", "w4a16_mxfp4",
        "w4a8_mxfp4_mxfp8", "w4a8_mxfp4_mxfp8_trtllm", "w4a16_mxfp4_cutlass", "w4a16_nvfp4",
    }
)  # fmt: skip
KVCACHE_MODES = frozenset({"bfloat16", "int8", "fp8"})
# "float16" is a reference enum member too, but its op specs fail to convert in the reference engine.
FMHA_MODES = frozenset({"bfloat16", "fp8", "fp8_block"})
COMM_MODES = frozenset({"half", "int8", "fp8"})
_KNOWN_MODES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "gemm": frozenset(GEMM_WEIGHT_BYTES),
        "moe": MOE_MODES,
        "kvcache": KVCACHE_MODES,
        "fmha": FMHA_MODES,
        "comm": COMM_MODES,
    }
)
# Mode of each kind when neither the user nor the checkpoint sets it.
_DEFAULTS: Mapping[str, str] = MappingProxyType({"gemm": BF16, "moe": BF16, "kvcache": BF16, "fmha": BF16, "comm": "half"})
# Checkpoint algorithms whose inference implies fp8 FMHA (and hence an fp8 KV cache).
_FP8_FMHA_ALGOS = frozenset({"fp8", "fp8_block", "nvfp4"})
# Native FP4 mode -> its weight-only variant, used on GPUs without FP4 tensor cores.
_FP4_MODES: Mapping[str, str] = MappingProxyType({"nvfp4": "nvfp4_wo"})


@dataclass(frozen=True)
class QuantModes:
    """Resolved quant modes of one deployment (reference enum member names)."""

    gemm: str  # dense GEMM weights/compute, e.g. "fp8_block"
    moe: str  # MoE experts (recorded for completeness; dense models have none)
    kvcache: str  # KV-cache storage dtype, "bfloat16" or "fp8"
    fmha: str  # context attention math dtype
    comm: str  # collective payload dtype, "half" by default


def infer_quant(
    cfg: ModelConfig,
    backend: Backend | str,
    overrides: QuantOverrides = QuantOverrides(),
    context_fmha_kv_pairs: frozenset[tuple[str, str]] | None = None,
    *,
    native_fp4: bool = True,
) -> QuantModes:
    """Resolve the quant modes exactly as the reference estimate path does.

    context_fmha_kv_pairs: the (attn_dtype, kv_cache_dtype) name pairs present in the resolved
    context_attention table (all lanes, all shapes: the reference keys on the dtype pair only, not
    on head size or heads). None skips the data check, which is what a bare reference ``get_model``
    does; an empty set means "no information" and also changes nothing.
    native_fp4: False on GPUs without FP4 tensor cores (sm_version < 100), where nvfp4 runs as nvfp4_wo.
    Raises InvalidInputError for an unknown override name, UnsupportedModelError for an unsupported
    checkpoint quantization, PerfDataMissingError if fmha=fp8 is requested but has no data.
    """
    backend = Backend.parse(backend)
    explicit = _explicit_modes(overrides)
    checkpoint = checkpoint_quant_modes(cfg.quant)
    if context_fmha_kv_pairs is not None:
        fmha = _fmha_by_data(explicit, checkpoint, context_fmha_kv_pairs)
        explicit = {**explicit, "fmha": fmha} if fmha is not None else explicit
    modes = {kind: explicit.get(kind) or checkpoint.get(kind) or default for kind, default in _DEFAULTS.items()}
    if "fmha" not in explicit and backend is Backend.VLLM and modes["fmha"] == FP8:
        modes["fmha"] = BF16  # vLLM guard: applies only to an FMHA mode inferred from the checkpoint
    if not native_fp4:
        modes["gemm"] = _FP4_MODES.get(modes["gemm"], modes["gemm"])
        modes["moe"] = _FP4_MODES.get(modes["moe"], modes["moe"])
    return QuantModes(**modes)


def check_overrides(overrides: QuantOverrides) -> None:
    """InvalidInputError naming the first user-set mode that is not a known mode of its kind."""
    _explicit_modes(overrides)


def _explicit_modes(overrides: QuantOverrides) -> dict[str, str]:
    """The user-set modes (empty strings count as unset), validated against the known names."""
    explicit = {}
    for kind, known in _KNOWN_MODES.items():
        value = getattr(overrides, kind)
        if not value:
            continue
        if value not in known:
            raise InvalidInputError(f"unknown {kind} quant mode {value!r} (known: {', '.join(sorted(known))})")
        explicit[kind] = value
    return explicit


def _fmha_by_data(explicit: Mapping[str, str], checkpoint: Mapping[str, str], pairs: frozenset[tuple[str, str]]) -> str | None:
    """The FMHA mode after the data check (reference resolve_context_fmha_by_data); None = still unset.

    The check uses the KV mode the run will use (explicit, else checkpoint-inferred; if neither,
    the FMHA modes of every KV slice). If that slice set has no fp8 FMHA: an explicit fp8 raises,
    an inferred fp8 becomes bfloat16 when a bfloat16 slice exists; anything else is unchanged.
    """
    kv = explicit.get("kvcache") or checkpoint.get("kvcache")
    supported = {fmha for fmha, kv_dtype in pairs if kv is None or kv_dtype == kv}
    requested = explicit.get("fmha")
    if not supported or FP8 in supported:
        return requested
    if requested == FP8:
        raise PerfDataMissingError(
            f"fmha quant mode fp8 has no context_attention perf data with kv cache {kv or 'any'} "
            "for this system/backend/version; use fmha bfloat16 or leave it unset"
        )
    if requested is None and checkpoint.get("fmha") == FP8 and BF16 in supported:
        return BF16
    return requested


# --------------------------------------------------------------------------------------------------
# Checkpoint inference (reference _infer_quant_modes_from_raw_config)
# --------------------------------------------------------------------------------------------------


def checkpoint_quant_modes(quant: QuantInfo) -> dict[str, str]:
    """The modes a checkpoint implies, keyed gemm/moe/kvcache/fmha; absent keys fall to defaults.

    An fp8/fp8_block/nvfp4 checkpoint, or any quantized checkpoint with an fp8 KV cache, implies
    fp8 FMHA and forces the KV cache to fp8.
    """
    modes = _weight_modes(quant)
    kv_algo = quant.kv_cache_algo
    if kv_algo in (FP8, BF16):
        modes["kvcache"] = kv_algo
    elif kv_algo is not None:
        raise UnsupportedModelError(f"unsupported kv cache quantization {kv_algo!r}")
    if quant.quant_algo is not None and (quant.quant_algo in _FP8_FMHA_ALGOS or kv_algo == FP8):
        modes["fmha"] = FP8
        modes["kvcache"] = FP8
    return modes


def _weight_modes(quant: QuantInfo) -> dict[str, str]:
    """gemm/moe modes implied by the checkpoint's quant algorithm."""
    algo = quant.quant_algo
    if algo is None:
        return {}
    if algo == "fp8":
        return {"gemm": "fp8" if quant.quant_dynamic is True else "fp8_static", "moe": "fp8"}
    if algo in ("fp8_block", "nvfp4"):
        return {"gemm": algo, "moe": algo}
    if algo == "mxfp4":
        return {"gemm": BF16, "moe": "w4a16_mxfp4"}
    if algo == "mixed_precision":
        return _mixed_precision_modes(quant)
    if algo == "compressed-tensors":
        return _compressed_tensors_modes(quant.quantization_config)
    raise UnsupportedModelError(f"unsupported quantization algorithm {algo!r}")


def _compressed_tensors_modes(quant_cfg: Mapping) -> dict[str, str]:
    """compressed-tensors: the first config group's weight algo, for each of attention/GEMM and
    routed experts unless the ignore list excludes that category."""
    base = _compressed_tensors_base_algo(quant_cfg)
    if base is None:
        return {}
    patterns = [str(p).lower() for p in quant_cfg.get("ignore") or []]
    modes = {}
    if not any(_is_attention_pattern(p) for p in patterns):
        modes["gemm"] = _require_mode("gemm", base)
    if not any("expert" in p and "shared_expert" not in p for p in patterns):
        modes["moe"] = _require_mode("moe", base)
    return modes


def _require_mode(kind: str, mode: str) -> str:
    """mode if it is a known mode of kind; the reference cannot build it otherwise."""
    if mode not in _KNOWN_MODES[kind]:
        raise UnsupportedModelError(f"checkpoint quantization {mode!r} has no {kind} quant mode")
    return mode


def _is_attention_pattern(pattern: str) -> bool:
    """Whether a compressed-tensors ignore pattern names self-attention projections."""
    return any(kw in pattern for kw in ("self_attn", "q_proj", "k_proj", "v_proj", "o_proj"))


def _compressed_tensors_base_algo(quant_cfg: Mapping) -> str | None:
    """int4_wo / int8_wo / fp8 / fp8_block / w4a16_mxfp4 from the first config group with a known weight spec."""
    for group in (quant_cfg.get("config_groups") or {}).values():
        weights = (group or {}).get("weights") or {}
        num_bits = weights.get("num_bits")
        w_type = str(weights.get("type", "")).lower()
        if not isinstance(num_bits, int):
            continue
        if "int" in w_type and num_bits in (4, 8):
            return f"int{num_bits}_wo"
        if "float" in w_type and num_bits == 8:
            block = str(weights.get("strategy", "")).lower() == "block" or weights.get("block_structure")
            return "fp8_block" if block else "fp8"
        if "float" in w_type and num_bits == 4:
            return "w4a16_mxfp4"
    return None


_MIXED_LAYER_ALIASES = MappingProxyType({"e4m3": "fp8", "e5m2": "fp8", "fp4": "nvfp4"})
# (layer algo, gemm mode), first match wins, after the base-method rules.
_MIXED_GEMM_ORDER = (("mxfp8", "fp8_block"), ("fp8", None), ("w4a16_nvfp4", "w4a16_nvfp4"), ("nvfp4", "nvfp4"))
_MIXED_MOE_ORDER = (("w4a16_nvfp4", "w4a16_nvfp4"), ("nvfp4", "nvfp4"), ("mxfp8", "fp8_block"), ("fp8", "fp8"))


def _mixed_precision_modes(quant: QuantInfo) -> dict[str, str]:
    """ModelOpt MIXED_PRECISION: gemm/moe from the per-layer algorithms, with the base
    quantization_config method (fp8, block-scaled or not) taking precedence for GEMMs."""
    gemm_algos, moe_algos = _mixed_layer_algos(quant)
    per_tensor_fp8 = "fp8" if quant.quant_dynamic is True else "fp8_static"
    base_method = str(quant.quantization_config.get("quant_method", "")).lower()
    modes = {}
    if base_method == "fp8":
        modes["gemm"] = "fp8_block" if quant.quantization_config.get("weight_block_size") else per_tensor_fp8
    else:
        gemm = next(((mode or per_tensor_fp8) for algo, mode in _MIXED_GEMM_ORDER if algo in gemm_algos), None)
        if gemm is not None:
            modes["gemm"] = gemm
    moe = next((mode for algo, mode in _MIXED_MOE_ORDER if algo in moe_algos), None)
    if moe is not None:
        modes["moe"] = moe
    return modes


def _mixed_layer_algos(quant: QuantInfo) -> tuple[set[str], set[str]]:
    """(GEMM-layer algos, routed-expert algos) from quantized_layers and config_groups targets."""
    entries: list[tuple[object, object]] = []
    hf_section = (quant.hf_quant_config or {}).get("quantization")
    if isinstance(hf_section, dict):
        entries += _quantized_layer_entries(hf_section.get("quantized_layers"))
    entries += _quantized_layer_entries(quant.quantization_config.get("quantized_layers"))
    groups = quant.quantization_config.get("config_groups")
    if isinstance(groups, dict):
        for group in groups.values():
            algo = _group_algo(group) if isinstance(group, dict) else None
            if algo is not None:
                entries += [(target, algo) for target in group.get("targets") or []]
    gemm_algos: set[str] = set()
    moe_algos: set[str] = set()
    for target, value in entries:
        algo = _mixed_layer_algo(value)
        if algo is not None:
            (moe_algos if _is_routed_expert(target) else gemm_algos).add(algo)
    return gemm_algos, moe_algos


def _quantized_layer_entries(layers: object) -> list[tuple[object, object]]:
    """(target, algo label) pairs of a quantized_layers mapping."""
    if not isinstance(layers, dict):
        return []
    return [(target, _algo_label(meta) if isinstance(meta, dict) else meta) for target, meta in layers.items()]


def _algo_label(meta: Mapping) -> object:
    """The algorithm label of a layer/weights metadata dict."""
    return meta.get("quant_algo") or meta.get("quantization_algo") or meta.get("quant_method")


def _mixed_layer_algo(value: object) -> str | None:
    """Normalize a per-layer algorithm label (e4m3/e5m2 -> fp8, fp4 -> nvfp4)."""
    algo = str(value).strip().lower() if value is not None else ""
    return _MIXED_LAYER_ALIASES.get(algo, algo) or None


def _group_algo(group: Mapping) -> str | None:
    """A config group's weight algorithm: its label, else from num_bits/type (8-bit float with
    group_size 32 is mxfp8)."""
    weights = group.get("weights")
    if not isinstance(weights, dict):
        return None
    labelled = _mixed_layer_algo(_algo_label(weights))
    if labelled:
        return labelled
    num_bits = weights.get("num_bits")
    if not isinstance(num_bits, int) or "float" not in str(weights.get("type", "")).lower():
        return None
    if num_bits == 8:
        return "mxfp8" if weights.get("group_size") == 32 else "fp8"
    return "nvfp4" if num_bits == 4 else None


def _is_routed_expert(target: object) -> bool:
    """Whether a layer target names routed (not shared) MoE experts."""
    name = str(target).lower()
    if "shared_expert" in name:
        return False
    return ".experts." in name or name.endswith(".experts") or "routing_expert" in name
