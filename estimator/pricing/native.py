"""The native pricer: op lists compiled to arrays and priced by one Numba call per phase."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from estimator.errors import PerfDataMissingError
from estimator.kernels import ops as K
from estimator.kernels import packing as L
from estimator.kernels.gemm import gated_sites
from estimator.models import ops as O
from estimator.perf.families import MOE_DEFAULT, MOE_MIN_LATENCY
from estimator.perf.stack import StackTables
from estimator.perf.system_spec import SystemSpec, flops, p2p_bw, quant_profile
from estimator.pricing.base import OpPrice

MEMO_ROWS = 200_000  # priced shapes kept per phase before the memo is reset
MEMO_MAX_BATCH = 64  # calls with more shape rows than this bypass the memo (price tables, not steps)


def distinct_rows(shapes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(the distinct rows of a float64[n, w] array in lexicographic order, the index of each input
    row among them); (shapes, None) when every row is distinct."""
    if shapes.shape[0] < 2:
        return shapes, None
    order = np.lexsort(shapes.T[::-1])
    ordered = shapes[order]
    first = np.empty(len(order), dtype=bool)  # a row unlike its predecessor in sorted order
    first[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=first[1:])
    if first.all():
        return shapes, None
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


_SOURCE_TAG = {
    K.OP_GEMM: "silicon",
    K.OP_ELEMENTWISE: "empirical",
    K.OP_EMBEDDING: "empirical",
    K.OP_CONTEXT_ATTENTION: "mixed",
    K.OP_GENERATION_ATTENTION: "silicon",
    K.OP_CUSTOM_ALLREDUCE: "silicon",
    K.OP_P2P: "silicon",
    K.OP_NCCL: "silicon",
    K.OP_MOE: "silicon",
}
_NCCL_SOL_PASSES = {"all_gather": 1.0, "alltoall": 1.0, "reduce_scatter": 1.0, "all_reduce": 2.0}  # ring passes per collective
# TensorRT-LLM's moe_config.backend TRTLLM: the trtllm-gen fused MoE (TRTLLMGenFusedMoE), which AIConfigurator's collector
# times as its min-latency kernel (collector/trtllm/collect_moe.py: moe_backend "trtllm", kernel_source
# "moe_torch_flow_min_latency", "trtllm gen"; nvfp4 on SM100, DeepSeek routing). A Moe op of this backend prices that curve
# at every token count (the reference prices it up to LOW_LATENCY_TOKENS and CUTLASS's curve above).
TRTLLM_GEN = "TRTLLM"
TRTLLM_CUTLASS = "CUTLASS"  # TensorRT-LLM's moe_config.backend CUTLASS: a Moe op of this backend prices CUTLASS's curve at every token count
_RETIRED_MOE_BACKEND = ("sglang", "deepep_moe")  # (backend, moe_backend) whose MoE compute the reference retired


def _source_tag(op: O.Op, kind: int) -> str:
    """The provenance tag the reference reports for an op (static per op in SILICON mode)."""
    if isinstance(op, O.Gemm) and op.quant_mode == "fp8_static":
        return "estimated"
    if isinstance(op, O.CustomAllReduce) and op.tp_size == 1:
        return "empirical"
    if isinstance(op, O.P2P) and op.pp_size > 1:
        return "empirical"
    if isinstance(op, O.Nccl) and op.num_gpus <= 1:
        return "empirical"
    return _SOURCE_TAG[kind]


@dataclass(frozen=True)
class CompiledOps:
    """An op list as Numba-ready arrays, plus what Python needs to report and explain."""

    names: tuple[str, ...]  # op names in op order
    kinds: np.ndarray  # int64[n]
    ints: np.ndarray  # int64[n, N_INT]
    floats: np.ndarray  # float64[n, N_FLOAT]
    missing: tuple[str, ...]  # per op: "" or the description of the missing data key
    sources: tuple[str, ...]  # per op source tag

    def subset(self, names: frozenset[str]) -> CompiledOps:
        """The ops named in `names`, in op order."""
        keep = [i for i, n in enumerate(self.names) if n in names]
        pick = lambda values: tuple(values[i] for i in keep)  # noqa: E731
        return CompiledOps(pick(self.names), self.kinds[keep], self.ints[keep], self.floats[keep], pick(self.missing), pick(self.sources))


class OpCompiler:
    """Turns Op specs into kernel rows against one stack's tables."""

    def __init__(self, tables: StackTables):
        self.t = tables
        self.spec = tables.spec

    def compile(self, op_list: tuple[O.Op, ...] | list[O.Op]) -> CompiledOps:
        n = len(op_list)
        kinds = np.zeros(n, dtype=np.int64)
        ints = np.zeros((n, K.N_INT), dtype=np.int64)
        floats = np.zeros((n, K.N_FLOAT))
        missing = []
        for i, op in enumerate(op_list):
            kind, miss = self._row(op, ints[i], floats[i])
            kinds[i] = kind
            missing.append(miss)
        return CompiledOps(
            names=tuple(op.name for op in op_list),
            kinds=kinds,
            ints=ints,
            floats=floats,
            missing=tuple(missing),
            sources=tuple(_source_tag(op, k) for op, k in zip(op_list, kinds)),
        )

    def _row(self, op: O.Op, it: np.ndarray, f: np.ndarray) -> tuple[int, str]:
        f[K.F_SCALE] = op.scale_factor
        it[K.I_SCALE_NUM_TOKENS] = 1
        it[K.I_SEQ_SPLIT] = getattr(op, "seq_split", 1)
        it[K.I_CP] = 1
        if isinstance(op, O.Gemm):
            return K.OP_GEMM, self._gemm(op, it, f)
        if isinstance(op, O.Elementwise):
            it[K.I_SCALE_NUM_TOKENS] = op.scale_num_tokens
            self._mem_op(f, op.bytes_per_token)
            return K.OP_ELEMENTWISE, ""
        if isinstance(op, O.Embedding):
            self._mem_op(f, op.hidden_size * quant_profile("gemm", op.quant_mode).bytes_per_element)
            return K.OP_EMBEDDING, ""
        if isinstance(op, O.ContextAttention):
            return K.OP_CONTEXT_ATTENTION, self._context_attention(op, it, f)
        if isinstance(op, O.GenerationAttention):
            return K.OP_GENERATION_ATTENTION, self._generation_attention(op, it, f)
        if isinstance(op, O.CustomAllReduce):
            return K.OP_CUSTOM_ALLREDUCE, self._allreduce(op, it, f)
        if isinstance(op, O.P2P):
            f[K.F_A] = op.hidden_size * 2.0
            f[K.F_B] = op.pp_size
            f[K.F_C] = self.spec.p2p_latency
            f[K.F_D] = self.spec.inter_node_bw
            return K.OP_P2P, ""
        if isinstance(op, O.Nccl):
            return K.OP_NCCL, self._nccl(op, it, f)
        if isinstance(op, O.Moe):
            return K.OP_MOE, self._moe(op, it, f)
        raise PerfDataMissingError(f"op {op.name!r} of kind {op.kind} has no native kernel")

    def _mem_op(self, f: np.ndarray, bytes_per_token: float) -> None:
        f[K.F_A] = bytes_per_token
        f[K.F_C] = self.spec.mem_empirical_constant_latency
        f[K.F_D] = self.spec.mem_bw * self.spec.mem_bw_empirical_scaling_factor

    def _gemm(self, op: O.Gemm, it: np.ndarray, f: np.ndarray) -> str:
        lookup = "fp8" if op.quant_mode == "fp8_static" else op.quant_mode
        flags = 0
        if "logits_gemm" in op.name:
            flags |= K.FLAG_LOGITS
        if op.low_precision_input:
            flags |= K.FLAG_LOW_PRECISION_INPUT
        if op.below_grid_sol:
            flags |= K.FLAG_BELOW_GRID_SOL
        if op.quant_mode == "fp8_static":
            flags |= K.FLAG_FP8_STATIC
            it[K.I_SCALE_ID] = self.t.compute_scale.slices.get(lookup, -1)
        it[K.I_FLAGS] = flags
        it[K.I_SCALE_NUM_TOKENS] = op.scale_num_tokens
        f[K.F_A] = op.n
        f[K.F_B] = op.k
        profile = quant_profile("gemm", lookup)
        try:
            tc_flops = flops(self.spec, profile.flops_key)
        except PerfDataMissingError as exc:
            it[K.I_TABLE] = -1
            return str(exc)
        f[K.F_SOL : K.F_SOL + 3] = (tc_flops, profile.bytes_per_element, self.spec.mem_bw)
        dtype = self.t.gemm.dtypes.get(lookup, -1)
        it[K.I_TABLE] = dtype
        if dtype < 0:
            return f"GEMM perf data missing for quant {lookup!r} ({self.t.label})"
        self._gemm_neighbours(dtype, op, it)
        if op.quant_mode == "fp8_static" and it[K.I_SCALE_ID] < 0:
            return f"compute_scale/scale_matrix data missing for quant 'fp8' ({self.t.label})"
        return f"GEMM quant={lookup} n={op.n} k={op.k} ({self.t.label})"

    def _gemm_neighbours(self, dtype: int, op: O.Gemm, it: np.ndarray) -> None:
        """Precompute the gated neighbour sites of an off-site (n, k), so queries skip the site scan."""
        it[K.I_NEAR_COUNT] = -1
        near = gated_sites(*self.t.kernel_tables, L.GEMM, dtype, float(op.n), float(op.k))
        if len(near) <= K.MAX_NEAR:
            it[K.I_NEAR_COUNT] = len(near)
            it[K.I_NEAR : K.I_NEAR + len(near)] = near

    def _context_attention(self, op: O.ContextAttention, it: np.ndarray, f: np.ndarray) -> str:
        lookup = 0 if op.n == op.n_kv else op.n_kv
        key = (op.fmha_quant_mode, op.kv_cache_dtype, lookup, op.head_size, op.window_size)
        it[K.I_TABLE] = self.t.context_slice(key, op.lane_order)
        it[K.I_CP] = op.cp_size
        f[K.F_A] = op.n
        f[K.F_B] = 1.1 * self._context_extras(op)
        f[K.F_SOL : K.F_SOL + 7] = (
            lookup,
            op.head_size,
            op.window_size,
            quant_profile("kv", op.kv_cache_dtype).bytes_per_element,
            flops(self.spec, quant_profile("fmha", op.fmha_quant_mode).flops_key),
            self.spec.mem_bw,
            0.0,
        )
        return _attention_key("context attention", key, op.lane_order, self.t.label)

    def _context_extras(self, op: O.ContextAttention) -> float:
        """Fused rope, KV write and qk-norm memory ops (ms per call; no token dependence)."""
        s = self.spec

        def mem(nbytes: float) -> float:
            return (nbytes / (s.mem_bw * s.mem_bw_empirical_scaling_factor) + s.mem_empirical_constant_latency) * 1000.0

        n, n_kv, h = op.n, op.n_kv, op.head_size
        fmha_bytes = quant_profile("fmha", op.fmha_quant_mode).bytes_per_element
        extras = 2.0 * mem(2 * n * h + 2 * n_kv * h) + 2.0 * mem(n_kv * h * fmha_bytes)
        if op.use_qk_norm:
            extras += 2.0 * (2.0 * mem(2 * n * h) + 2.0 * mem(2 * n_kv * h))
        return extras

    def _generation_attention(self, op: O.GenerationAttention, it: np.ndarray, f: np.ndarray) -> str:
        lookup = 0 if op.n == op.n_kv else op.n_kv
        key = (op.kv_cache_dtype, lookup, op.head_size, op.window_size)
        it[K.I_TABLE] = self.t.generation_slice(key, op.lane_order)
        f[K.F_A] = op.n
        f[K.F_SOL : K.F_SOL + 6] = self.t.generation_sol_params(op.kv_cache_dtype, lookup, op.head_size, op.window_size)
        return _attention_key("generation attention", key, op.lane_order, self.t.label)

    def _allreduce(self, op: O.CustomAllReduce, it: np.ndarray, f: np.ndarray) -> str:
        s = self.spec
        tp = op.tp_size
        per_node = s.num_gpus_per_node
        tp_eff = min(tp, per_node)
        f[K.F_A] = op.hidden_size
        f[K.F_C] = tp
        f[K.F_B] = _fanout_scale(s, tp, per_node) if tp > per_node else 1.0
        f[K.F_SOL] = 4.0 * (tp_eff - 1) / tp_eff / p2p_bw(s, tp_eff) * 1000.0 if tp_eff > 1 else 1.0
        it[K.I_TABLE] = self.t.allreduce.curves.get(tp_eff, -1)
        return f"custom allreduce num_gpus={tp_eff} ({self.t.label})"

    def _nccl(self, op: O.Nccl, it: np.ndarray, f: np.ndarray) -> str:
        """Curve of min(num_gpus, largest collected fan-out); beyond it, the fan-out overflow factor."""
        n = op.num_gpus
        cap = self.t.nccl_max_gpus(op.dtype, op.operation)
        eff = n if cap is None else min(n, cap)
        f[K.F_A] = op.hidden_size
        f[K.F_B] = _fanout_scale(self.spec, n, eff) if n > eff else 1.0
        f[K.F_C] = n
        passes = _NCCL_SOL_PASSES.get(op.operation, 0.0)
        nbytes = quant_profile("comm", op.dtype).bytes_per_element
        f[K.F_SOL] = passes * nbytes * (eff - 1) / eff / p2p_bw(self.spec, eff) * 1000.0 if eff > 1 else 1.0
        it[K.I_TABLE] = self.t.nccl.curves.get((op.dtype, op.operation, eff), -1)
        return f"NCCL {op.operation} dtype={op.dtype} num_gpus={eff} ({self.t.label})"

    def _moe(self, op: O.Moe, it: np.ndarray, f: np.ndarray) -> str:
        """Default and min-latency token curves of the op's (quant, distribution, shape), EPLB flag, SOL vector."""
        profile = quant_profile("moe", op.quant_mode)
        it[K.I_TABLE] = it[K.I_LOW_LATENCY] = -1
        try:
            tc_flops = flops(self.spec, profile.flops_key)
        except PerfDataMissingError as exc:
            return str(exc)
        shape = (op.topk, op.num_experts, op.hidden_size, op.inter_size, op.moe_tp_size, op.moe_ep_size)
        f[K.F_A] = max(op.attention_dp_size, 1)
        f[K.F_SOL : K.F_SOL + 10] = (
            op.topk,
            max(op.moe_ep_size, 1),
            max(op.moe_tp_size, 1),
            op.hidden_size,
            op.inter_size,
            3 if op.is_gated else 2,
            op.num_experts,
            profile.bytes_per_element,
            tc_flops,
            self.spec.mem_bw,
        )
        if self.t.backend == "sglang" and op.enable_eplb and op.is_context:
            it[K.I_FLAGS] = K.FLAG_EPLB
        if (self.t.backend, op.moe_backend) == _RETIRED_MOE_BACKEND:
            return f"MoE compute of moe_backend={op.moe_backend!r} is retired on {self.t.backend} ({self.t.label})"
        it[K.I_TABLE] = self.t.moe.curve(MOE_DEFAULT, op.quant_mode, op.workload_distribution, shape)
        if op.quant_mode == "nvfp4" and op.is_gated:
            it[K.I_LOW_LATENCY] = self.t.moe.curve(MOE_MIN_LATENCY, op.quant_mode, op.workload_distribution, shape)
        if op.moe_backend == TRTLLM_CUTLASS:  # CUTLASS's curve at every token count
            it[K.I_LOW_LATENCY] = -1
        if op.moe_backend == TRTLLM_GEN:  # the trtllm-gen kernels at every token count, a miss where the tables lack them
            it[K.I_TABLE], it[K.I_LOW_LATENCY] = it[K.I_LOW_LATENCY], -1
            return f"MoE trtllm-gen quant={op.quant_mode} distribution={op.workload_distribution} (topk, experts, hidden, inter, moe_tp, moe_ep)={shape} ({self.t.label})"
        return f"MoE quant={op.quant_mode} distribution={op.workload_distribution} (topk, experts, hidden, inter, moe_tp, moe_ep)={shape} ({self.t.label})"


def _fanout_scale(spec: SystemSpec, n: int, base: int) -> float:
    """Latency factor of a collective over n ranks priced from the curve of base < n ranks: ring
    traffic (n-1)/n over (base-1)/base, times the bandwidth drop from base to n ranks."""
    return (n - 1) / n * base / max(base - 1, 1) * p2p_bw(spec, base) / p2p_bw(spec, n)


def _attention_key(what: str, key: tuple, lanes: tuple[str, ...], label: str) -> str:
    return f"{what} slice {key} in lanes {list(lanes)} ({label})"


class NativePricer:
    """Prices a deployment's op lists with the Numba kernels (see estimator.pricing.base.Pricer)."""

    kind = "native"

    def __init__(self, tables: StackTables, context_ops, generation_ops):
        compiler = OpCompiler(tables)
        self.tables = tables
        self.context = compiler.compile(context_ops)
        self.generation = compiler.compile(generation_ops)
        self._memo: dict[bool, dict[tuple, np.ndarray]] = {True: {}, False: {}}  # is_context -> shape -> latencies
        self._views: dict[tuple[frozenset[str], frozenset[str]], NativePricer] = {}

    def restricted(self, context_names: frozenset[str], generation_names: frozenset[str]) -> NativePricer:
        """A view pricing only the named ops, in op order (same tables, its own memo; cached)."""
        key = (frozenset(context_names), frozenset(generation_names))
        if key not in self._views:
            view = copy.copy(self)
            view.context, view.generation = self.context.subset(key[0]), self.generation.subset(key[1])
            view._memo, view._views = {True: {}, False: {}}, {}
            self._views[key] = view
        return self._views[key]

    @property
    def context_names(self) -> tuple[str, ...]:
        return self.context.names

    @property
    def generation_names(self) -> tuple[str, ...]:
        return self.generation.names

    @property
    def context_sources(self) -> tuple[str, ...]:
        return self.context.sources

    @property
    def generation_sources(self) -> tuple[str, ...]:
        return self.generation.sources

    def context_many(self, shapes: np.ndarray, scale: float = 1.0) -> np.ndarray:
        return self._run_many(self.context, np.asarray(shapes, dtype=np.float64), True, scale)

    def generation_many(self, shapes: np.ndarray, scale: float = 1.0) -> np.ndarray:
        shapes = np.asarray(shapes, dtype=np.float64)
        full = np.zeros((shapes.shape[0], 3))
        full[:, :2] = shapes[:, :2]
        return self._run_many(self.generation, full, False, scale)

    def _run_many(self, c: CompiledOps, shapes: np.ndarray, is_context: bool, scale: float) -> np.ndarray:
        """Latencies of every op at every shape row. Small calls (the schedulers' steps) go through
        the memo; bulk calls (price tables) are priced in one kernel call."""
        if shapes.shape[0] > MEMO_MAX_BATCH:
            return self._price(c, shapes, is_context, scale)
        memo = self._memo[is_context]
        keys = [(b, s, p, scale) for b, s, p in shapes.tolist()]
        todo = [i for i, key in enumerate(keys) if key not in memo]
        if todo:
            lat = self._price(c, shapes[todo] if len(todo) < len(keys) else shapes, is_context, scale)
            if len(memo) + len(todo) > MEMO_ROWS:
                memo.clear()
            lat.setflags(write=False)
            for row, i in enumerate(todo):
                memo[keys[i]] = lat[row]
        return np.array([memo[key] for key in keys]).reshape(len(keys), len(c.names))

    def _price(self, c: CompiledOps, shapes: np.ndarray, is_context: bool, scale: float) -> np.ndarray:
        """One kernel call over the distinct shape rows (rows price independently, so repeats are
        copies); the first miss, in the caller's row order, raises PerfDataMissingError."""
        distinct, inverse = distinct_rows(shapes)
        lat, status = K.price_ops_many(c.kinds, c.ints, c.floats, *self.tables.kernel_tables, distinct, is_context, float(scale))
        if inverse is not None:
            lat, status = lat[inverse], status[inverse]
        if status.any():
            r, i = (int(v) for v in np.argwhere(status != K.ST_OK)[0])
            batch, s, prefix = shapes[r]
            raise PerfDataMissingError(f"no perf data for {c.names[i]}: {c.missing[i]} at batch={batch:g}, s={s:g}, prefix={prefix:g}")
        return lat

    def context_latencies(self, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> np.ndarray:
        """Per-op context latencies (ms) of one shape, raising PerfDataMissingError on a miss."""
        return self._run_many(self.context, np.array([[batch_size, s, prefix]], dtype=np.float64), True, scale)[0]

    def generation_latencies(self, batch_size: int, s: int, scale: float = 1.0) -> np.ndarray:
        return self._run_many(self.generation, np.array([[batch_size, s, 0]], dtype=np.float64), False, scale)[0]

    def context_ops(self, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> list[OpPrice]:
        return _prices(self.context, self.context_latencies(batch_size, s, prefix, scale))

    def generation_ops(self, batch_size: int, s: int, scale: float = 1.0) -> list[OpPrice]:
        return _prices(self.generation, self.generation_latencies(batch_size, s, scale))


def _prices(c: CompiledOps, lat: np.ndarray) -> list[OpPrice]:
    return [OpPrice(name, float(v), src) for name, v, src in zip(c.names, lat, c.sources)]
