"""Speed-of-light (roofline) latencies in ms, dispatched by an integer kind (Numba has no closures).

Each kind reads a float64 parameter vector p and the query coordinates q in the table's axis order.
Every SOL is max(math, memory) time; see perf-tables.md section 3.1.
"""

from __future__ import annotations

import math

import numpy as np

from estimator.jit import njit

SOL_GEMM = 1  # q = (m, n, k); p = [flops, bytes_per_elem, mem_bw]
SOL_CONTEXT_ATTENTION = 2  # q = (heads, s, batch); p = [n_kv_lookup, head, window, kv_bytes, flops, mem_bw, prefix]
SOL_GENERATION_ATTENTION = 3  # q = (heads, batch, s); p = [n_kv_lookup, head, window, kv_bytes, flops, mem_bw]
SOL_COMPUTE_SCALE = 4  # q = (m, k); p = [mem_bw]
SOL_SCALE_MATRIX = 5  # q = (m, k); p = [mem_bw]
SOL_LINEAR = 6  # q = (x,); p = [ms_per_unit]: comm curves (allreduce, NCCL) whose SOL is proportional to size
SOL_MOE = 7  # q = (tokens,); p = [topk, moe_ep, moe_tp, hidden, inter, num_gemms, num_experts, bytes_per_elem, flops, mem_bw]

N_PARAMS = 10


@njit(cache=True)
def _gemm(p, q):
    m, n, k = q[0], q[1], q[2]
    math_ms = 2.0 * m * n * k / p[0] * 1000.0
    mem_ms = p[1] * (m * n + m * k + n * k) / p[2] * 1000.0
    return max(math_ms, mem_ms)


@njit(cache=True)
def _context_attention(p, q):
    n, s, b = q[0], q[1], q[2]
    n_kv = n if p[0] == 0.0 else p[0]
    h, w, kv_bytes, flops, bw, prefix = p[1], p[2], p[3], p[4], p[5], p[6]
    full = s + prefix
    if w > 0.0 and full > w:
        ops = 4.0 * b * s * w * n * h
    else:
        ops = 2.0 * b * (full * full - prefix * prefix) * n * h
    mem = 4.0 * b * n * s * h + kv_bytes * 2.0 * b * n_kv * full * h
    return max(ops / flops, mem / bw) * 1000.0


@njit(cache=True)
def _generation_attention(p, q):
    n, b, s = q[0], q[1], q[2]
    n_kv = n if p[0] == 0.0 else p[0]
    h, w, kv_bytes, flops, bw = p[1], p[2], p[3], p[4], p[5]
    kv = min(s - 1.0, w) if w > 0.0 else s - 1.0
    ops = 4.0 * b * n * h * kv
    mem = b * (4.0 * n * h + 2.0 * n_kv * kv * h * kv_bytes)
    return max(ops / flops, mem / bw) * 1000.0


@njit(cache=True)
def _moe(p, q):
    """Fused-MoE roofline: byte and op counts in int64 with floor divisions, exactly as the reference's u64 math."""
    tokens = np.int64(math.floor(q[0] + 0.5))  # coordinates are integral; round half away from zero
    topk, ep, tp = np.int64(p[0]), np.int64(p[1]), np.int64(p[2])
    h, inter, gemms, experts = np.int64(p[3]), np.int64(p[4]), np.int64(p[5]), np.int64(p[6])
    tt = tokens * topk
    ops = tt * h * inter * gemms * 2 // ep // tp
    mem = tt // ep * h * 2 + tt // ep * inter * gemms // tp + h * inter * gemms // tp * min(experts // ep, tt // ep)
    return max(float(ops) / p[8] * 1000.0, float(mem) * p[7] / p[9] * 1000.0)


@njit(cache=True)
def sol(kind, p, q):
    """SOL latency (ms) of op family `kind` at coordinates q."""
    if kind == SOL_GEMM:
        return _gemm(p, q)
    if kind == SOL_CONTEXT_ATTENTION:
        return _context_attention(p, q)
    if kind == SOL_GENERATION_ATTENTION:
        return _generation_attention(p, q)
    if kind == SOL_COMPUTE_SCALE:
        return 2.0 * q[0] * q[1] / p[0] * 1000.0
    if kind == SOL_SCALE_MATRIX:
        return 3.0 * q[0] * q[1] / p[0] * 1000.0
    if kind == SOL_LINEAR:
        return q[0] * p[0]
    if kind == SOL_MOE:
        return _moe(p, q)
    return float("nan")
