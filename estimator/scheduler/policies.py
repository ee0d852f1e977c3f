"""Backend policies: the scheduling and memory constants of each serving backend.

Mirrors aiconfigurator-core 0.12.0 ``sdk/backends/{base,sglang,vllm,trtllm}_backend.py`` (the hooks
``_mix_step_gen_tokens``, ``_tpot_mix_steps``, ``_ttft_queuing_factor``,
``_prefill_dispatch_overhead_ms``, ``_throughput_cap`` and the memory-model class constants).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from estimator.deployment import Backend

MIB = 1 << 20

# Families sized like the MoE family in each backend's ACTIVATION_COEFFICIENTS table.
_MOE_LIKE_TRTLLM = ("MOE", "GEMMA4MIX", "STEP3P7", "DEEPSEEK", "DEEPSEEKV32", "DEEPSEEKV4", "KIMIK25")
_MOE_LIKE_SGLANG = (*_MOE_LIKE_TRTLLM, "KIMIK3")

# Hybrid MoE families whose attention width differs from the residual stream; TRT-LLM and vLLM size
# their MoE workspace by the residual width only for these (the rest keep the attention width).
_HYBRID_MOE_FAMILIES = frozenset({"GEMMA4MIX", "STEP3P7"})

_FAMILY_COEFFS_SGLANG = {
    "GPT": {1: 13, 2: 8, 4: 6.5, 8: 6.5},
    "LLAMA": {1: 14, 2: 8.5, 4: 6.5, 8: 6.5},
    **dict.fromkeys(_MOE_LIKE_SGLANG, {1: 28, 2: 17, 4: 13, 8: 13}),
    "default": {1: 13, 2: 8, 4: 6.5, 8: 6.5},
}
_FAMILY_COEFFS_TRTLLM = {
    "GPT": {1: 10, 2: 6, 4: 5, 8: 5},
    "LLAMA": {1: 11, 2: 6.5, 4: 5, 8: 5},
    **dict.fromkeys(_MOE_LIKE_TRTLLM, {1: 22, 2: 13, 4: 10, 8: 10}),
    "default": {1: 10, 2: 6, 4: 5, 8: 5},
}


@dataclass(frozen=True)
class KvBudget:
    """The KV-cache budget rule of a backend (InferenceSummary._check_and_set_kv_cache_oom)."""

    fraction: float  # memory fraction the framework gives weights+KV (of_total) or KV (of_free)
    reserved: float  # fraction of the budget kept by the block allocator (TRT-LLM 0.015)
    tolerance: float  # formula tolerance (0.02)
    of_free: bool  # True: fraction of the free pool after non-KV (TRT-LLM); False: of total memory

    def budget_gib(self, capacity_gib: float, non_kv_gib: float) -> float:
        """KV budget, GiB (memory.kv_cache_budget_bytes)."""
        scale = (1.0 - self.reserved) * (1.0 - self.tolerance)
        if self.of_free:
            return (capacity_gib - non_kv_gib) * self.fraction * scale
        return capacity_gib * self.fraction * scale - non_kv_gib


@dataclass(frozen=True)
class BackendPolicy:
    """How one backend schedules agg steps and sizes memory."""

    backend: Backend
    serial_prefill: bool  # one partial prefill per step (vLLM): decode count is always b - ceil(C/isl)
    drain_steps: int  # mixed steps lost to the pipeline drain in the TPOT average (S < D only)
    dispatch_ms_per_layer: float  # CPU dispatch overhead added to a request's prefill, ms per layer
    log_queue_factor: bool  # TTFT queue factor min(1 + log2(b)/8, 2) instead of min(2 + (S-3)/20, 4)
    littles_law_cap: bool  # cap throughput at b*(osl-1)*1000/request_latency
    activation_coeffs: Mapping[str, Mapping[int, float]]  # family -> {min(tp, 8): coefficient}
    min_activation_bytes: int  # activation floor, bytes
    activation_overhead: float  # extra activation fraction (SGLang 0.15)
    others_overhead: float  # extra runtime-overhead fraction (SGLang 0.2)
    agg_activation_tokens: int | None  # TRT-LLM sizes agg activations by max_num_tokens (8192); None: step tokens
    kv_reserved: float  # KvBudget.reserved
    kv_tolerance: float  # KvBudget.tolerance
    kv_of_free: bool  # KvBudget.of_free
    workspace_hidden_families: frozenset[str] | None  # MoE workspace width is the residual hidden size for these (None: all)

    def mix_decode_requests(self, b: np.ndarray, ctx_tokens: np.ndarray, isl: int, decode_iterations: float) -> np.ndarray:
        """Decode requests sharing a mixed step with the prefill (_mix_step_gen_tokens), >= 1, elementwise."""
        steps = np.ceil(isl * b / ctx_tokens)
        serial = b - np.ceil(ctx_tokens / isl)
        if self.serial_prefill:
            return np.maximum(1, serial).astype(np.int64)
        interleaved = np.floor_divide(b, steps / decode_iterations)
        return np.maximum(1, np.where(steps >= decode_iterations, interleaved, serial)).astype(np.int64)

    def tpot_mix_steps(self, mix_steps: np.ndarray) -> np.ndarray:
        """Mixed steps counted in the TPOT average when prefill ends before decode (_tpot_mix_steps), elementwise."""
        return np.maximum(1, mix_steps - self.drain_steps) if self.drain_steps else mix_steps

    def ttft_queue_factor(self, b: np.ndarray, steps_to_finish_ctx: np.ndarray) -> np.ndarray:
        """Multiplier from one request's prefill time to its TTFT (_ttft_queuing_factor), elementwise."""
        if not self.log_queue_factor:
            return np.minimum(2 + (steps_to_finish_ctx - 3) / 2 / 10, 4)
        return np.where(b <= 1, 1.0, np.minimum(1.0 + np.log2(np.maximum(b, 1)) / 8.0, 2.0))

    def dispatch_overhead_ms(self, num_layers: int) -> float:
        """Per-request prefill dispatch overhead, ms (_prefill_dispatch_overhead_ms)."""
        return num_layers * self.dispatch_ms_per_layer if self.dispatch_ms_per_layer else 0.0

    def throughput_cap(self, step_throughput: np.ndarray, ttft: np.ndarray, tpot: np.ndarray, b: np.ndarray, osl: np.ndarray) -> np.ndarray:
        """Output tokens/s after the backend's cap (_throughput_cap), elementwise."""
        if not self.littles_law_cap:
            return step_throughput
        decode_tokens = np.maximum(osl - 1, 0)
        request_latency_ms = ttft + tpot * decode_tokens
        with np.errstate(divide="ignore", invalid="ignore"):
            cap = b * decode_tokens * 1000.0 / request_latency_ms
        return np.where(request_latency_ms <= 0, step_throughput, np.where(cap < step_throughput, cap, step_throughput))  # min(step, cap)

    def moe_workspace_width(self, family: str, attention_width: int, hidden_size: int) -> int:
        """Per-token feature width of the MoE dispatch workspace (_moe_workspace_width)."""
        families = self.workspace_hidden_families
        return hidden_size if families is None or family in families else attention_width

    def activation_coeff(self, family: str, tp: int) -> float:
        table = self.activation_coeffs.get(family, self.activation_coeffs["default"])
        return table[min(tp, 8)]

    def kv_budget(self, fraction: float) -> KvBudget:
        return KvBudget(fraction, self.kv_reserved, self.kv_tolerance, self.kv_of_free)

    def default_kv_fraction(self, version: str, capacity_bytes: int, tp: int, pp: int, dp: int, *, static: bool) -> float:
        """The framework's default memory fraction (get_default_free_gpu_memory_fraction; SGLang's
        static path derives it from capacity)."""
        if self.backend is Backend.VLLM:
            return next((v for k, v in VLLM_MEMORY_UTILIZATION.items() if version.startswith(k)), VLLM_DEFAULT_UTILIZATION)
        if self.backend is Backend.SGLANG:
            return sglang_mem_fraction_static(capacity_bytes, tp, pp, dp) if static else SGLANG_FALLBACK_FRACTION
        return TRTLLM_FREE_FRACTION


VLLM_MEMORY_UTILIZATION = MappingProxyType({"0.14": 0.9, "0.19": 0.9, "0.22": 0.92, "0.24": 0.92})
VLLM_DEFAULT_UTILIZATION = 0.92
SGLANG_FALLBACK_FRACTION = 0.88
TRTLLM_FREE_FRACTION = 0.9
TRTLLM_MAX_NUM_TOKENS = 8192


def sglang_mem_fraction_static(capacity_bytes: int, tp: int, pp: int, dp: int) -> float:
    """SGLang's capacity-tiered mem_fraction_static (sglang_backend.derive_sglang_mem_fraction_static)."""
    capacity_mb = capacity_bytes / MIB
    if capacity_mb < 20 * 1024:
        chunked_prefill, graph_max_bs = 2048, 8
    elif capacity_mb < 35 * 1024:
        chunked_prefill, graph_max_bs = 2048, (24 if tp < 4 else 80)
    elif capacity_mb < 60 * 1024:
        chunked_prefill, graph_max_bs = 4096, (32 if tp < 4 else 160)
    elif capacity_mb < 160 * 1024:
        chunked_prefill, graph_max_bs = 8192, (256 if tp < 4 else 512)
    else:
        chunked_prefill, graph_max_bs = 16384, 512
    reserved_mb = 512 + 1.5 * chunked_prefill + tp * pp / 8 * 1024 + graph_max_bs * 2
    if dp > 1:
        reserved_mb += graph_max_bs * dp * 3
        if graph_max_bs > 300:
            reserved_mb += graph_max_bs * dp * 1.5
    if capacity_mb > 60 * 1024:
        reserved_mb = max(reserved_mb, 10 * 1024)
    return round((capacity_mb - reserved_mb) / capacity_mb, 3)


def _frozen(table: dict) -> Mapping[str, Mapping[int, float]]:
    return MappingProxyType({k: MappingProxyType(v) for k, v in table.items()})


POLICIES: Mapping[Backend, BackendPolicy] = MappingProxyType(
    {
        Backend.SGLANG: BackendPolicy(
            backend=Backend.SGLANG,
            serial_prefill=False,
            drain_steps=3,
            dispatch_ms_per_layer=0.0,
            log_queue_factor=False,
            littles_law_cap=False,
            activation_coeffs=_frozen(_FAMILY_COEFFS_SGLANG),
            min_activation_bytes=90 * MIB,
            activation_overhead=0.15,
            others_overhead=0.20,
            agg_activation_tokens=None,
            kv_reserved=0.0,
            kv_tolerance=0.02,
            kv_of_free=False,
            workspace_hidden_families=None,
        ),
        Backend.VLLM: BackendPolicy(
            backend=Backend.VLLM,
            serial_prefill=True,
            drain_steps=0,
            dispatch_ms_per_layer=0.8,
            log_queue_factor=True,
            littles_law_cap=True,
            activation_coeffs=_frozen(_FAMILY_COEFFS_TRTLLM),
            min_activation_bytes=70 * MIB,
            activation_overhead=0.0,
            others_overhead=0.0,
            agg_activation_tokens=None,
            kv_reserved=0.0,
            kv_tolerance=0.02,
            kv_of_free=False,
            workspace_hidden_families=_HYBRID_MOE_FAMILIES,
        ),
        Backend.TRTLLM: BackendPolicy(
            backend=Backend.TRTLLM,
            serial_prefill=False,
            drain_steps=3,
            dispatch_ms_per_layer=0.0,
            log_queue_factor=False,
            littles_law_cap=False,
            activation_coeffs=_frozen(_FAMILY_COEFFS_TRTLLM),
            min_activation_bytes=70 * MIB,
            activation_overhead=0.0,
            others_overhead=0.0,
            agg_activation_tokens=TRTLLM_MAX_NUM_TOKENS,
            kv_reserved=0.015,
            kv_tolerance=0.02,
            kv_of_free=True,
            workspace_hidden_families=_HYBRID_MOE_FAMILIES,
        ),
    }
)
