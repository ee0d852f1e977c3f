"""Numba evaluation of a compiled op list at one phase shape: one call prices every op.

An op list is compiled (estimator.pricing.native) into parallel arrays:
  kinds[i]   op kind (OP_* below)
  ints[i]    int64[N_INT]: table ids and integer fields
  floats[i]  float64[N_FLOAT]: scale factor, shape constants, SOL parameters
The evaluator returns per-op latencies (ms, already x scale_factor) and statuses. Tables come
packed as (fdat, idat, hdr), see estimator.kernels.packing.

Constants passed to jitted callees (SOL kinds, table slots, depths) are wrapped in np.int64: Numba
compiles a separate copy of the callee, and of everything it calls, for each literal int argument.
"""

from __future__ import annotations

import math

import numpy as np

from estimator.jit import njit
from estimator.kernels import packing as L
from estimator.kernels.gemm import gemm_query
from estimator.kernels.interp import MISS, OK, curve_query, grid2_query, grid3_query, token_curve_query
from estimator.kernels.sol import (
    N_PARAMS,
    SOL_COMPUTE_SCALE,
    SOL_CONTEXT_ATTENTION,
    SOL_GEMM,
    SOL_GENERATION_ATTENTION,
    SOL_LINEAR,
    SOL_MOE,
    SOL_SCALE_MATRIX,
    sol,
)

OP_GEMM = 1
OP_ELEMENTWISE = 2
OP_EMBEDDING = 3
OP_CONTEXT_ATTENTION = 4
OP_GENERATION_ATTENTION = 5
OP_CUSTOM_ALLREDUCE = 6
OP_P2P = 7
OP_NCCL = 8
OP_MOE = 9

# ints columns
I_TABLE = 0  # GEMM dtype id | attention slice id | allreduce / NCCL / MoE curve id (-1: no data)
I_SCALE_NUM_TOKENS = 1
I_SEQ_SPLIT = 2
I_FLAGS = 3  # bit 0: logits GEMM (x = batch), bit 1: low-precision input, bit 2: below-grid SOL, bit 3: fp8_static, bit 4: EPLB
I_CP = 4  # context parallel size
I_SCALE_ID = 5  # fp8_static: compute_scale / scale_matrix slice id
I_LOW_LATENCY = 6  # MoE: min-latency curve id tried first at <= LOW_LATENCY_TOKENS tokens (-1: none)
I_NEAR_COUNT = 7  # GEMM off-site shape: how many gated neighbour sites follow (-1: not precomputed)
I_NEAR = 8  # GEMM: the gated neighbour sites, nearest first (estimator.kernels.gemm.gated_sites)
MAX_NEAR = 128  # more gated sites than this: resolve by the full scan instead
N_INT = I_NEAR + MAX_NEAR

# floats columns
F_SCALE = 0  # scale_factor
F_A = 1  # GEMM n | elementwise / embedding / P2P bytes per token | attention heads | AR hidden | NCCL elements per token | MoE attention-dp size
F_B = 2  # GEMM k | attention extras (ms, already x 1.1) | AR / NCCL fan-out overflow factor | P2P pp size
F_C = 3  # mem-op constant latency (s) | AR tp / NCCL num_gpus (1: no-op)
F_D = 4  # mem-op effective bandwidth (bytes/s)
F_SOL = 8  # SOL parameter vector starts here (N_PARAMS wide)
N_FLOAT = F_SOL + N_PARAMS

FLAG_LOGITS = 1
FLAG_LOW_PRECISION_INPUT = 2
FLAG_BELOW_GRID_SOL = 4
FLAG_FP8_STATIC = 8
FLAG_EPLB = 16  # MoE: sglang expert-parallel load balancing on a context op prices floor(0.8 x tokens)

LOW_LATENCY_TOKENS = 128  # trtllm min-latency MoE kernel: token counts it covers
EPLB_TOKEN_FACTOR = 0.8

ST_OK = 0
ST_MISS = 2


@njit(cache=True)
def _tokens(x, scale_num_tokens, seq_split):
    """ceil((x div scale_num_tokens) / seq_split), the per-rank token count."""
    t = math.floor(x / max(scale_num_tokens, 1))
    return math.ceil(t / max(seq_split, 1))


@njit(cache=True)
def _scale_table(fdat, idat, hdr, base, g, m, k, kind, p):
    """compute_scale / scale_matrix (kind SOL_COMPUTE_SCALE / SOL_SCALE_MATRIX): clamp into the
    collected envelope, raw 2-axis resolve, then hold flat (compute_scale) or SOL-rescale
    (scale_matrix) beyond the grid."""
    s_off, k0, o1, k1 = L.iv(idat, hdr, base), L.fv(fdat, hdr, base + 1), L.iv(idat, hdr, base + 2), L.fv(fdat, hdr, base + 3)
    lo, hi = s_off[g], s_off[g + 1]
    if hi <= lo:
        return MISS, 0.0
    m_c = min(max(m, k0[lo]), k0[hi - 1])
    k_min = np.inf
    k_max = -np.inf
    for i in range(lo, hi):
        k_min = min(k_min, k1[o1[i]])
        k_max = max(k_max, k1[o1[i + 1] - 1])
    k_c = min(max(k, k_min), k_max)
    q = np.empty(2)
    q[0] = m_c
    q[1] = k_c
    st, lat = grid2_query(fdat, idat, hdr, base, g, q, kind, p)
    if st != OK or kind != SOL_SCALE_MATRIX or (m_c == m and k_c == k):
        return st, lat
    sb = sol(kind, p, q)
    q[0] = m
    q[1] = k
    sq = sol(kind, p, q)
    if sb > 0.0 and sq > 0.0:
        return OK, lat * (sq / sb)
    return OK, lat


@njit(cache=True)
def _gemm(ints, f, x, fdat, idat, hdr):
    flags = ints[I_FLAGS]
    m = float(_tokens(x, ints[I_SCALE_NUM_TOKENS], ints[I_SEQ_SPLIT]))
    p = f[F_SOL : F_SOL + N_PARAMS]
    n, k = f[F_A], f[F_B]
    q = np.empty(3)
    q[0] = m
    q[1] = n
    q[2] = k
    if ints[I_TABLE] < 0:
        st, lat = MISS, 0.0
    else:
        st, lat = gemm_query(fdat, idat, hdr, L.GEMM, ints[I_TABLE], m, n, k, p, ints[I_NEAR:], ints[I_NEAR_COUNT])
    if st != OK:
        if flags & FLAG_BELOW_GRID_SOL:
            st, lat = OK, sol(SOL_GEMM, p, q)
        else:
            return ST_MISS, 0.0
    if flags & FLAG_FP8_STATIC:
        g = ints[I_SCALE_ID]
        mem = np.empty(N_PARAMS)
        mem[0] = p[2]
        st_c, cs = _scale_table(fdat, idat, hdr, np.int64(L.COMPUTE_SCALE), g, m, k, np.int64(SOL_COMPUTE_SCALE), mem)
        if st_c != OK:
            return ST_MISS, 0.0
        lat -= cs
        if flags & FLAG_LOW_PRECISION_INPUT:
            st_s, sm = _scale_table(fdat, idat, hdr, np.int64(L.SCALE_MATRIX), g, m, k, np.int64(SOL_SCALE_MATRIX), mem)
            if st_s != OK:
                return ST_MISS, 0.0
            lat -= sm
        lat = max(lat, sol(SOL_GEMM, p, q))
    return ST_OK, max(lat, 0.0) * f[F_SCALE]


@njit(cache=True)
def _mem_op(f, tokens):
    """Empirical memory-bound op: (bytes / (bw * scaling) + constant) * 1000 ms, x scale_factor."""
    return (f[F_A] * tokens / f[F_D] + f[F_C]) * 1000.0 * f[F_SCALE]


@njit(cache=True)
def _context_table(fdat, idat, hdr, g, f, batch, s, prefix):
    """Table latency of s new tokens over prefix cached ones: queried at the full length, then
    scaled by the prefix correction (full^2 - prefix^2) / full^2."""
    full = s + prefix
    q = np.empty(3)
    q[0] = f[F_A]
    q[1] = full
    q[2] = batch
    st, lat = grid3_query(fdat, idat, hdr, np.int64(L.CONTEXT), g, q, np.int64(1), np.int64(SOL_CONTEXT_ATTENTION), f[F_SOL : F_SOL + N_PARAMS])
    if st != OK:
        return ST_MISS, 0.0
    if prefix > 0.0:
        lat *= (full * full - prefix * prefix) / (full * full)
    return ST_OK, lat


@njit(cache=True)
def _context_attention(ints, f, fdat, idat, hdr, batch, s, prefix, imbalance):
    """Context attention per call: table part (two zigzag chunks of rank 0 when cp > 1) plus the
    fused extras once, x imbalance, clamped at 0, x scale_factor."""
    g = ints[I_TABLE]
    if g < 0:
        return ST_MISS, 0.0
    cp = ints[I_CP]
    if cp <= 1:
        st, lat = _context_table(fdat, idat, hdr, g, f, batch, s, prefix)
    else:
        c = float(math.ceil(s / (2 * cp)))
        st1, a = _context_table(fdat, idat, hdr, g, f, batch, c, prefix)
        st, b = _context_table(fdat, idat, hdr, g, f, batch, c, prefix + s - c)
        if st1 != ST_OK:
            st = st1
        lat = a + b
    if st != ST_OK:
        return ST_MISS, 0.0
    lat += f[F_B]
    if imbalance != 1.0:
        lat *= imbalance
    return ST_OK, max(lat, 0.0) * f[F_SCALE]


@njit(cache=True)
def _generation_attention(ints, f, fdat, idat, hdr, batch, s, imbalance):
    g = ints[I_TABLE]
    if g < 0:
        return ST_MISS, 0.0
    s_min = max(1, int(s * 0.9))
    s_max = max(s_min, int(s * 1.1))
    q = np.empty(3)
    q[0] = f[F_A]
    q[1] = batch
    total = 0.0
    for i in range(5):
        q[2] = s_min + ((s_max - s_min) * i) // 4
        st, lat = grid3_query(fdat, idat, hdr, np.int64(L.GENERATION), g, q, np.int64(-1), np.int64(SOL_GENERATION_ATTENTION), f[F_SOL : F_SOL + N_PARAMS])
        if st != OK:
            return ST_MISS, 0.0
        total += lat
    lat = total / 5.0
    if imbalance != 1.0:
        lat *= imbalance
    return ST_OK, max(lat, 0.0) * f[F_SCALE]


@njit(cache=True)
def _comm(ints, f, fdat, idat, hdr, x, base):
    """Collective over ceil(x / seq_split) x elements-per-token elements, from the message-size curve
    set at slot `base` (custom allreduce or NCCL), x fan-out overflow factor; 0 on a single rank."""
    if f[F_C] <= 1.0:
        return ST_OK, 0.0
    c = ints[I_TABLE]
    if c < 0:
        return ST_MISS, 0.0
    size = math.ceil(x / max(ints[I_SEQ_SPLIT], 1)) * f[F_A]
    st, lat = curve_query(fdat, idat, hdr, base, c, size, np.int64(SOL_LINEAR), f[F_SOL : F_SOL + N_PARAMS])
    if st != OK:
        return ST_MISS, 0.0
    return ST_OK, max(lat * f[F_B], 0.0) * f[F_SCALE]


@njit(cache=True)
def _moe_tokens(ints, f, x):
    """Tokens the experts see: x from every attention-dp rank, then floor(0.8 x) under EPLB."""
    tokens = x * f[F_A]
    if ints[I_FLAGS] & FLAG_EPLB:
        tokens = math.floor(tokens * EPLB_TOKEN_FACTOR)
    return tokens


@njit(cache=True)
def _moe(ints, f, fdat, idat, hdr, x):
    """Fused MoE from its token curve (the min-latency curve first at small token counts), x scale_factor."""
    tokens = _moe_tokens(ints, f, x)
    c = ints[I_TABLE]
    if tokens <= LOW_LATENCY_TOKENS and ints[I_LOW_LATENCY] >= 0:
        c = ints[I_LOW_LATENCY]
    if c < 0:
        return ST_MISS, 0.0
    st, lat = token_curve_query(fdat, idat, hdr, np.int64(L.MOE), c, tokens, np.int64(SOL_MOE), f[F_SOL : F_SOL + N_PARAMS])
    if st != OK:
        return ST_MISS, 0.0
    return ST_OK, max(lat, 0.0) * f[F_SCALE]


@njit(cache=True)
def _p2p(ints, f, x):
    """Pipeline hand-off: (bytes / inter-node bw + latency) * 1000 ms x scale; 0 without pipelining."""
    if f[F_B] <= 1.0:
        return 0.0
    return (f[F_A] * _tokens(x, 1, ints[I_SEQ_SPLIT]) / f[F_D] + f[F_C]) * 1000.0 * f[F_SCALE]


@njit(cache=True)
def _price_one(kind, it, f, fdat, idat, hdr, batch, s, prefix, is_context, imbalance):
    """(status, latency ms) of one op at one phase shape."""
    if is_context and not (it[I_FLAGS] & FLAG_LOGITS):
        x = batch * s
    else:
        x = batch
    if kind == OP_GEMM:
        return _gemm(it, f, x, fdat, idat, hdr)
    if kind == OP_ELEMENTWISE:
        return ST_OK, _mem_op(f, _tokens(x, it[I_SCALE_NUM_TOKENS], it[I_SEQ_SPLIT]))
    if kind == OP_EMBEDDING:
        return ST_OK, _mem_op(f, _tokens(x, 1, it[I_SEQ_SPLIT]))
    if kind == OP_CONTEXT_ATTENTION:
        return _context_attention(it, f, fdat, idat, hdr, batch, s, prefix, imbalance)
    if kind == OP_GENERATION_ATTENTION:
        return _generation_attention(it, f, fdat, idat, hdr, batch, s, imbalance)
    if kind == OP_CUSTOM_ALLREDUCE:
        return _comm(it, f, fdat, idat, hdr, x, np.int64(L.ALLREDUCE))
    if kind == OP_NCCL:
        return _comm(it, f, fdat, idat, hdr, x, np.int64(L.NCCL))
    if kind == OP_MOE:
        return _moe(it, f, fdat, idat, hdr, x)
    if kind == OP_P2P:
        return ST_OK, _p2p(it, f, x)
    return ST_MISS, 0.0


@njit(cache=True)
def price_each(kinds, ints, floats, fdat, idat, hdr, shapes, is_context):
    """Op i at its own shape i (rows of shapes: batch, s, prefix, is_context as 0/1) in one call.

    Returns (latency_ms[n_ops], status[n_ops])."""
    n_ops = kinds.shape[0]
    lat = np.zeros(n_ops)
    status = np.zeros(n_ops, dtype=np.int64)
    for i in range(n_ops):
        status[i], lat[i] = _price_one(kinds[i], ints[i], floats[i], fdat, idat, hdr, shapes[i, 0], shapes[i, 1], shapes[i, 2], is_context[i], 1.0)
    return lat, status


@njit(cache=True)
def price_ops_many(kinds, ints, floats, fdat, idat, hdr, shapes, is_context, imbalance):
    """Price every op at many shapes (rows of shapes: batch, s, prefix) in one call.

    Returns (latency_ms[n_shapes, n_ops], status[n_shapes, n_ops])."""
    n, n_ops = shapes.shape[0], kinds.shape[0]
    lat = np.zeros((n, n_ops))
    status = np.zeros((n, n_ops), dtype=np.int64)
    for r in range(n):
        for i in range(n_ops):
            status[r, i], lat[r, i] = _price_one(kinds[i], ints[i], floats[i], fdat, idat, hdr, shapes[r, 0], shapes[r, 1], shapes[r, 2], is_context, imbalance)
    return lat, status
