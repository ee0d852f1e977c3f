"""The SOL pricer: every op at its speed-of-light (roofline) latency, as the reference's SOL database mode.

It prices the native op lists from their compiled rows (estimator.pricing.native), so the step
composition and schedulers run unchanged over it; `estimate --detail time` uses it for the SOL and
SOL % columns. Per op and call (ms, x scale_factor):
  GEMM: max(2mnk/flops, bytes*(mn+mk+nk)/mem_bw); context attention: its roofline plus 1.1 x the
  fused rope / KV-write / qk-norm bytes at mem_bw; generation attention: its roofline at s; element-wise,
  embedding and P2P: bytes / bandwidth (no constant latency; P2P is 0 and tagged "silicon" without
  pipelining); all-reduce and NCCL: their linear SOL curves; MoE: its integer roofline at the attention-dp
  scaled tokens (no EPLB correction). Imbalance corrections do not apply to a roofline.
"""

from __future__ import annotations

import copy

import numpy as np

from estimator.caching import memo
from estimator.deployment import Deployment
from estimator.jit import njit
from estimator.kernels import ops as K
from estimator.kernels.sol import SOL_CONTEXT_ATTENTION, SOL_GEMM, SOL_GENERATION_ATTENTION, SOL_MOE, sol
from estimator.models import ops as O
from estimator.perf.stack import StackTables
from estimator.perf.system_spec import quant_profile
from estimator.pricing import native_model
from estimator.pricing.base import OpPrice
from estimator.pricing.native import CompiledOps, OpCompiler

SOL_SOURCE = "sol"


@njit(cache=True)
def _sol_op(kind, it, f, batch, s, prefix, is_context):
    x = batch * s if (is_context and not (it[K.I_FLAGS] & K.FLAG_LOGITS)) else batch
    p = f[K.F_SOL : K.F_SOL + K.N_PARAMS].copy()
    q = np.empty(3)
    if kind == K.OP_GEMM:
        q[0] = float(K._tokens(x, it[K.I_SCALE_NUM_TOKENS], it[K.I_SEQ_SPLIT]))
        q[1] = f[K.F_A]
        q[2] = f[K.F_B]
        return sol(SOL_GEMM, p, q)
    if kind == K.OP_ELEMENTWISE:
        return f[K.F_A] * K._tokens(x, it[K.I_SCALE_NUM_TOKENS], it[K.I_SEQ_SPLIT]) / f[K.F_D] * 1000.0
    if kind == K.OP_EMBEDDING:
        return f[K.F_A] * K._tokens(x, 1, it[K.I_SEQ_SPLIT]) / f[K.F_D] * 1000.0
    if kind == K.OP_CONTEXT_ATTENTION:
        p[6] = prefix
        q[0] = f[K.F_A]
        q[1] = s
        q[2] = batch
        return sol(SOL_CONTEXT_ATTENTION, p, q) + f[K.F_B]
    if kind == K.OP_GENERATION_ATTENTION:
        q[0] = f[K.F_A]
        q[1] = batch
        q[2] = s
        return sol(SOL_GENERATION_ATTENTION, p, q)
    if kind == K.OP_MOE:
        q[0] = x * f[K.F_A]
        return sol(SOL_MOE, p, q)
    if kind == K.OP_CUSTOM_ALLREDUCE or kind == K.OP_NCCL:
        if f[K.F_C] <= 1.0:
            return 0.0
        return np.ceil(x / max(it[K.I_SEQ_SPLIT], 1)) * f[K.F_A] * p[0] * f[K.F_B]
    if kind == K.OP_P2P:
        return f[K.F_A] * K._tokens(x, 1, it[K.I_SEQ_SPLIT]) / f[K.F_D] * 1000.0 if f[K.F_B] > 1.0 else 0.0
    return 0.0


@njit(cache=True)
def sol_ops_many(kinds, ints, floats, shapes, is_context):
    """SOL latency (ms, x scale_factor) of every op at every shape row (batch, s, prefix)."""
    out = np.zeros((shapes.shape[0], kinds.shape[0]))
    for r in range(shapes.shape[0]):
        for i in range(kinds.shape[0]):
            v = _sol_op(kinds[i], ints[i], floats[i], shapes[r, 0], shapes[r, 1], shapes[r, 2], is_context)
            out[r, i] = max(v, 0.0) * floats[i, K.F_SCALE]
    return out


def _source(op: O.Op) -> str:
    return "silicon" if isinstance(op, O.P2P) and op.pp_size <= 1 else SOL_SOURCE


def _extras_bytes(op: O.ContextAttention) -> float:
    """Bytes moved by context attention's fused rope, KV write and qk-norm (estimator.pricing.native)."""
    n, n_kv, h = op.n, op.n_kv, op.head_size
    fmha_bytes = quant_profile("fmha", op.fmha_quant_mode).bytes_per_element
    nbytes = 2.0 * (2 * n * h + 2 * n_kv * h) + 2.0 * (n_kv * h * fmha_bytes)
    if op.use_qk_norm:
        nbytes += 2.0 * (2.0 * (2 * n * h) + 2.0 * (2 * n_kv * h))
    return nbytes


def _sol_rows(compiler: OpCompiler, ops, mem_bw: float) -> tuple[CompiledOps, np.ndarray]:
    """Compiled rows of an op list with the SOL constants: memory-bound ops at the raw HBM bandwidth
    (no empirical scaling), context attention's extras at SOL."""
    compiled = compiler.compile(ops)
    floats = compiled.floats.copy()
    for i, op in enumerate(ops):
        if isinstance(op, (O.Elementwise, O.Embedding)):
            floats[i, K.F_D] = mem_bw
        elif isinstance(op, O.ContextAttention):
            floats[i, K.F_B] = 1.1 * _extras_bytes(op) / mem_bw * 1000.0
    return compiled, floats


class SolPricer:
    """Prices a deployment's native op lists at speed of light (see estimator.pricing.base.Pricer).

    The imbalance scale is ignored: a roofline has no imbalance."""

    kind = "sol"

    def __init__(self, tables: StackTables, context_ops, generation_ops):
        compiler, mem_bw = OpCompiler(tables), tables.spec.mem_bw
        self.context, context_floats = _sol_rows(compiler, context_ops, mem_bw)
        self.generation, generation_floats = _sol_rows(compiler, generation_ops, mem_bw)
        self._floats = {True: context_floats, False: generation_floats}
        self.context_names, self.generation_names = self.context.names, self.generation.names
        self.context_sources = tuple(_source(op) for op in context_ops)
        self.generation_sources = tuple(_source(op) for op in generation_ops)

    def restricted(self, context_names: frozenset[str], generation_names: frozenset[str]) -> SolPricer:
        """A view pricing only the named ops, in op order."""
        view = copy.copy(self)
        keep_c = [i for i, n in enumerate(self.context_names) if n in context_names]
        keep_g = [i for i, n in enumerate(self.generation_names) if n in generation_names]
        view.context, view.generation = self.context.subset(frozenset(context_names)), self.generation.subset(frozenset(generation_names))
        view._floats = {True: self._floats[True][keep_c], False: self._floats[False][keep_g]}
        view.context_names, view.generation_names = view.context.names, view.generation.names
        view.context_sources = tuple(self.context_sources[i] for i in keep_c)
        view.generation_sources = tuple(self.generation_sources[i] for i in keep_g)
        return view

    def context_many(self, shapes: np.ndarray, scale: float = 1.0) -> np.ndarray:
        return self._many(self.context, np.asarray(shapes, dtype=np.float64), True)

    def generation_many(self, shapes: np.ndarray, scale: float = 1.0) -> np.ndarray:
        shapes = np.asarray(shapes, dtype=np.float64)
        full = np.zeros((shapes.shape[0], 3))
        full[:, :2] = shapes[:, :2]
        return self._many(self.generation, full, False)

    def context_ops(self, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> list[OpPrice]:
        return self._prices(self.context_names, self.context_sources, self.context_many([[batch_size, s, prefix]]))

    def generation_ops(self, batch_size: int, s: int, scale: float = 1.0) -> list[OpPrice]:
        return self._prices(self.generation_names, self.generation_sources, self.generation_many([[batch_size, s]]))

    def _many(self, c: CompiledOps, shapes: np.ndarray, is_context: bool) -> np.ndarray:
        return sol_ops_many(c.kinds, c.ints, self._floats[is_context], shapes, is_context)

    @staticmethod
    def _prices(names, sources, lat: np.ndarray) -> list[OpPrice]:
        return [OpPrice(n, float(v), s) for n, v, s in zip(names, lat[0], sources)]


@memo()
def sol_pricer(deployment: Deployment) -> SolPricer:
    """The SOL pricer of a natively modelled deployment (cached per deployment)."""
    model = native_model(deployment)
    return SolPricer(model.tables, model.ops.context, model.ops.generation)
