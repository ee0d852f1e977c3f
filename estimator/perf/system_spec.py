"""GPU system specs (`systems/<system>.yaml`) and quant-mode profiles, as the reference reads them.

Units: bandwidths in bytes/s, FLOPS in operations/s, latencies in seconds, memory in bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

from estimator.caching import memo
from estimator.errors import EstimatorError, InvalidInputError, PerfDataMissingError
from estimator.perf.paths import system_yaml

# yaml `<dtype>_tc_flops` prefix -> our FLOPS key; prefixes not listed are used verbatim (fp8, int8, fp4, float32).
_FLOPS_KEY_ALIASES = {"bfloat16": "bf16"}
_FLOPS_SUFFIX = "_tc_flops"


@dataclass(frozen=True)
class SystemSpec:
    """Hardware facts of one GPU system. Immutable and hashable (usable as a cache key)."""

    name: str  # system name, e.g. "h200_sxm"
    mem_bw: float  # HBM bandwidth, bytes/s
    mem_bw_empirical_scaling_factor: float  # achieved fraction of mem_bw for memory-bound ops (0..1]
    mem_empirical_constant_latency: float  # fixed latency added to memory-bound ops, s
    mem_capacity: int  # GPU memory, bytes
    tc_flops: tuple[tuple[str, float], ...]  # (FLOPS key, tensor-core ops/s), sorted by key; see flops()
    sm_version: int | None  # CUDA SM version (90 Hopper, 100/103 Blackwell); None if the yaml has none (b60)
    num_gpus_per_node: int  # GPUs sharing the intra-node fabric
    num_gpus_per_rack: int | None  # GPUs per NVLink rack domain (gb200/gb300: 72); None = no rack tier
    intra_node_bw: float  # per-GPU one-direction bandwidth inside a node, bytes/s
    inter_node_bw: float  # per-GPU one-direction bandwidth across nodes (within the rack if any), bytes/s
    inter_rack_bw: float | None  # per-GPU one-direction bandwidth across racks, bytes/s; None = inter_node_bw
    p2p_latency: float  # point-to-point transfer latency, s
    nccl_version: str | None  # NCCL perf-table version dir under comm/nccl/
    oneccl_version: str | None  # oneCCL perf-table version dir under comm/oneccl/ (XPU systems)
    nccl_mem: tuple[tuple[int, int], ...]  # (num_gpus, NCCL buffer bytes), ascending num_gpus
    other_mem: int  # per-GPU bytes reserved for runtime overheads


@memo()
def load_system_spec(system: str) -> SystemSpec:
    """The spec of a shipped system; UnknownSystemError if unknown, EstimatorError if a field is missing."""
    doc = system_yaml(system)
    gpu, node, misc = (doc.get(section) or {} for section in ("gpu", "node", "misc"))

    def need(section: dict, section_name: str, key: str):
        if key not in section:
            raise EstimatorError(f"system {system!r}: spec yaml lacks {section_name}.{key}")
        return section[key]

    return SystemSpec(
        name=system,
        mem_bw=float(need(gpu, "gpu", "mem_bw")),
        mem_bw_empirical_scaling_factor=float(need(gpu, "gpu", "mem_bw_empirical_scaling_factor")),
        mem_empirical_constant_latency=float(need(gpu, "gpu", "mem_empirical_constant_latency")),
        mem_capacity=int(need(gpu, "gpu", "mem_capacity")),
        tc_flops=_tc_flops(gpu),
        sm_version=int(gpu["sm_version"]) if gpu.get("sm_version") is not None else None,
        num_gpus_per_node=int(need(node, "node", "num_gpus_per_node")),
        num_gpus_per_rack=_optional(node.get("num_gpus_per_rack"), int),
        intra_node_bw=float(need(node, "node", "intra_node_bw")),
        inter_node_bw=float(need(node, "node", "inter_node_bw")),
        inter_rack_bw=_optional(node.get("inter_rack_bw"), float),
        p2p_latency=float(need(node, "node", "p2p_latency")),
        nccl_version=_optional(misc.get("nccl_version"), str),
        oneccl_version=_optional(misc.get("oneccl_version"), str),
        nccl_mem=tuple(sorted((int(n), int(b)) for n, b in (misc.get("nccl_mem") or {}).items())),
        other_mem=int(need(misc, "misc", "other_mem")),
    )


def _optional(value, cast):
    """`cast(value)`, or None when the yaml leaves the field out."""
    return None if value is None else cast(value)


def _tc_flops(gpu: dict) -> tuple[tuple[str, float], ...]:
    """Every `<dtype>_tc_flops` entry of the gpu section as sorted (FLOPS key, value) pairs."""
    pairs = (
        (_FLOPS_KEY_ALIASES.get(k.removesuffix(_FLOPS_SUFFIX), k.removesuffix(_FLOPS_SUFFIX)), float(v)) for k, v in gpu.items() if k.endswith(_FLOPS_SUFFIX)
    )
    return tuple(sorted(pairs))


def flops(spec: SystemSpec, key: str) -> float:
    """Tensor-core ops/s for a FLOPS key ("bf16", "fp8", "int8", "fp4").

    Raises PerfDataMissingError naming the key and system when the yaml has no positive finite
    entry, e.g. fp4 (nvfp4) on h200: the platform cannot execute that dtype and the reference
    refuses to extrapolate from bf16. Callers must resolve FLOPS before any table lookup.
    """
    value = dict(spec.tc_flops).get(key)
    if value is None or not (value > 0 and math.isfinite(value)):
        yaml_key = {v: k for k, v in _FLOPS_KEY_ALIASES.items()}.get(key, key) + _FLOPS_SUFFIX
        raise PerfDataMissingError(
            f"system {spec.name!r} has no {key} tensor-core FLOPS ({yaml_key!r} is absent or not positive); "
            f"quant modes computing in {key} cannot be priced on it"
        )
    return value


def p2p_bw(spec: SystemSpec, num_gpus: int) -> float:
    """Per-GPU point-to-point bandwidth (bytes/s) for a group of `num_gpus`.

    intra-node if the group fits a node, inter-node if it fits a rack (or there is no rack
    tier), else inter-rack (falling back to inter-node when the yaml has no inter_rack_bw).
    """
    if num_gpus <= spec.num_gpus_per_node:
        return spec.intra_node_bw
    if spec.num_gpus_per_rack is None or num_gpus <= spec.num_gpus_per_rack:
        return spec.inter_node_bw
    return spec.inter_rack_bw if spec.inter_rack_bw is not None else spec.inter_node_bw


@dataclass(frozen=True)
class QuantProfile:
    """How one quant mode is priced: storage width and the tensor-core pipeline it runs on."""

    kind: str  # "gemm", "moe", "fmha", "kv" or "comm"
    name: str  # quant mode name as stored in the perf tables, e.g. "fp8_block"
    bytes_per_element: float  # stored bytes per element (nvfp4: 9/16 = 4-bit value + one fp8 scale per 16)
    flops_key: str | None  # FLOPS key for flops(); None for memory-only modes (kv cache, comm)


# (bytes per element, FLOPS key) shared by many modes.
_BF16 = (2, "bf16")
_FP8 = (1, "fp8")
_W8A16 = (1, "bf16")
_W4A16 = (0.5, "bf16")
_W4A8 = (0.5, "fp8")
_FP4 = (9 / 16, "fp4")
_FP4_WO = (9 / 16, "bf16")

_PROFILE_ROWS: dict[str, dict[str, tuple[float, str | None]]] = {
    "gemm": {
        "bfloat16": _BF16,
        "int8_wo": _W8A16,
        "int4_wo": _W4A16,
        "fp8": _FP8,
        "fp8_static": _FP8,
        "sq": (1, "int8"),
        "fp8_block": _FP8,
        "fp8_ootb": _FP8,
        "nvfp4": _FP4,
        "nvfp4_wo": _FP4_WO,
        "w4a16_nvfp4": _FP4_WO,
    },
    "moe": {
        "bfloat16": _BF16,
        "fp8": _FP8,
        "int4_wo": _W4A16,
        "fp8_block": _FP8,
        "w4afp8": _W4A8,
        "nvfp4": _FP4,
        "nvfp4_wo": _FP4_WO,
        "w4a16_mxfp4": _W4A16,
        "w4a8_mxfp4_mxfp8": _W4A8,
        "w4a8_mxfp4_mxfp8_trtllm": _W4A8,
        "w4a16_mxfp4_cutlass": _W4A16,
        "w4a16_nvfp4": _FP4_WO,
    },
    "fmha": {"bfloat16": _BF16, "float16": _BF16, "fp8": _FP8, "fp8_block": _FP8},
    "kv": {"bfloat16": (2, None), "int8": (1, None), "fp8": (1, None)},
    "comm": {"half": (2, None), "int8": (1, None), "fp8": (1, None)},
}

QUANT_PROFILES = MappingProxyType(
    {kind: MappingProxyType({name: QuantProfile(kind, name, b, key) for name, (b, key) in rows.items()}) for kind, rows in _PROFILE_ROWS.items()}
)


def quant_profile(kind: str, name: str) -> QuantProfile:
    """The profile of quant mode `name` for op `kind`; InvalidInputError naming both when unknown."""
    profiles = QUANT_PROFILES.get(kind)
    if profiles is None:
        raise InvalidInputError(f"unknown quant kind {kind!r} (known: {', '.join(QUANT_PROFILES)})")
    if name not in profiles:
        raise InvalidInputError(f"unknown {kind} quant mode {name!r} (known: {', '.join(profiles)})")
    return profiles[name]
