"""Pass pricing: the duration (ms) of one scheduler pass from what it carries.

A pass carries prefill chunks (each: new tokens computed and the KV tokens already in place before
it) and decoding requests (their count and summed KV length). Three pricers exist:

* ``CallablePricer``: the reference interface, two Python callables
  ``price_prefill(n_prefilling, mean_ctx_end, mean_ctx_start)`` and
  ``price_decode(n_decoding, mean_ctx)`` (integer floor means) whose sum is the pass. Only the
  literal Python replay accepts it.
* ``AFFINE`` ``PassPricer``: the same interface restricted to
  ``prefill = base + slope*n*max(floor, end - start)/divisor`` and
  ``decode = max(floor, base + per_request*n + per_kv*ctx)``, evaluated in that order. It covers
  the reference's row-scalar wiring (``row`` pricing: prefill linear in new tokens, flat decode,
  a mixed pass = prefill + decode) and the spec's test callables, bit for bit.
* ``ENGINE_TABLES`` ``PassPricer``: the pass priced as ONE step from price tables of the deployment's
  op lists (estimator.closedloop.engine): a pass with prefill is a mixed step, shared ops at
  (prefill tokens + decode query tokens), context attention per chunk at the pass's chunk count,
  generation attention at (decode query rows, mean KV); a pass without prefill is the decode step
  at (decode query rows, mean KV).

``affine_ms`` and ``engine_ms`` are jitted once: the Numba kernels call them directly and the
Python replay through ``price_pass``, so the two cannot disagree on a price.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from estimator.jit import njit

AFFINE = 0
ENGINE_TABLES = 1

# Numba options of the pricing and replay kernels. error_model="numpy": a division compiles to the
# bare instruction, without a ZeroDivisionError branch (every divisor here is nonzero by
# construction). LEAF, for the functions that allocate nothing, also drops Numba's reference
# counting (_nrt=False): with it, each array argument of a helper that branches costs two atomic
# count updates per call, which took two thirds of the tandem's time (perf, rows 626 and 2080).
KERNEL = {"cache": True, "error_model": "numpy"}
LEAF = {**KERNEL, "_nrt": False}

# AFFINE parameter slots
PREFILL_BASE, PREFILL_SLOPE, PREFILL_FLOOR, PREFILL_DIVISOR = 0, 1, 2, 3
DECODE_FLOOR, DECODE_BASE, DECODE_PER_REQUEST, DECODE_PER_KV = 4, 5, 6, 7
# ENGINE_TABLES parameter slots
QUERY_MULTIPLIER = 0  # decode query tokens per decoding request (nextn + 1)
DP_RANKS = 1  # attention-DP ranks sharing a pass (>= 1): the pass lasts as long as the busiest rank's share
N_PARAMS = 8


class PassTables(NamedTuple):
    """Engine price tables (ms) on ascending node axes; interpolated multilinearly between nodes."""

    token_axis: np.ndarray  # float64: pass tokens (prefill + decode queries)
    shared: np.ndarray  # [tokens]: every context op but context_attention at (1, tokens, 0)
    chunk_batch_axis: np.ndarray  # float64: prefill chunks in the pass
    chunk_new_axis: np.ndarray  # float64: new tokens of a chunk
    chunk_start_axis: np.ndarray  # float64: KV tokens before a chunk (starts at 0)
    chunk_attention: np.ndarray  # [batch, new, start]: context_attention at (batch, new, start)
    attention_rows_axis: np.ndarray  # float64: decode query rows (requests x query multiplier)
    kv_axis: np.ndarray  # float64: mean decode KV length
    decode_attention: np.ndarray  # [rows, kv]: generation_attention at (rows, kv)
    decode_rows_axis: np.ndarray  # float64: decode query rows, every integer (GEMM prices jump between rows)
    decode_other: np.ndarray  # [rows]: every generation op but generation_attention at (rows, 1)

    def pack(self) -> tuple[np.ndarray, np.ndarray]:
        """(data, hdr): every table flattened (row-major) into one float64 array; slot i spans
        data[hdr[2i]:hdr[2i+1]] in field order (kernels pass 2 arrays instead of 11)."""
        hdr = np.zeros(2 * len(self), dtype=np.int64)
        end = 0
        for slot, table in enumerate(self):
            hdr[2 * slot], end = end, end + table.size
            hdr[2 * slot + 1] = end
        return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in self]), hdr


(TOKEN_AXIS, SHARED, CHUNK_BATCH_AXIS, CHUNK_NEW_AXIS, CHUNK_START_AXIS, CHUNK_ATTENTION,
 ATTENTION_ROWS_AXIS, KV_AXIS, DECODE_ATTENTION, DECODE_ROWS_AXIS, DECODE_OTHER) = range(11)  # fmt: skip


def _unit_axis() -> np.ndarray:
    return np.array([1.0, 2.0])


NO_TABLES = PassTables(
    _unit_axis(), np.zeros(2), _unit_axis(), _unit_axis(), _unit_axis(), np.zeros((2, 2, 2)),
    _unit_axis(), _unit_axis(), np.zeros((2, 2)), _unit_axis(), np.zeros(2),
).pack()  # fmt: skip


@dataclass(frozen=True)
class PassShape:
    """What one pass carries (the literal replay's view)."""

    chunk_starts: tuple[int, ...]  # per prefill chunk: KV tokens before it (cached prefix + earlier chunks)
    chunk_takes: tuple[int, ...]  # per prefill chunk: new tokens computed (>= 1)
    decode_requests: int  # decoding requests in the pass (>= 0)
    decode_kv_sum: int  # summed KV length (input + tokens made) of the decoding requests


@dataclass(frozen=True, eq=False)
class PassPricer:
    """A pass pricer the Numba kernels accept: a kind, its parameters and (ENGINE_TABLES) its packed tables."""

    kind: int  # AFFINE | ENGINE_TABLES
    params: np.ndarray  # float64[N_PARAMS]
    data: np.ndarray  # float64: packed PassTables (placeholder tables for AFFINE)
    hdr: np.ndarray  # int64: slot extents in data

    def pass_ms(self, shape: PassShape) -> float:
        starts = np.array(shape.chunk_starts, dtype=np.int64)
        takes = np.array(shape.chunk_takes, dtype=np.int64)
        return price_pass(self.kind, self.params, self.data, self.hdr, len(takes), starts, takes, shape.decode_requests, shape.decode_kv_sum)


@dataclass(frozen=True)
class CallablePricer:
    """The reference's timing interface: prefill part + decode part from two callables."""

    price_prefill: Callable[[int, int, int], float]  # (n prefilling, mean ctx end, mean ctx start) -> ms
    price_decode: Callable[[int, int], float]  # (n decoding, mean ctx) -> ms

    def pass_ms(self, shape: PassShape) -> float:
        n = len(shape.chunk_takes)
        prefill = 0.0
        if n:
            ends = sum(s + t for s, t in zip(shape.chunk_starts, shape.chunk_takes))
            prefill = self.price_prefill(n, ends // n, sum(shape.chunk_starts) // n)
        decode = 0.0
        if shape.decode_requests:
            decode = self.price_decode(shape.decode_requests, shape.decode_kv_sum // shape.decode_requests)
        return prefill + decode


def affine_pricer(
    prefill_base: float, prefill_slope: float, prefill_floor: float, prefill_divisor: float,
    decode_floor: float, decode_base: float, decode_per_request: float = 0.0, decode_per_kv: float = 0.0,
) -> PassPricer:  # fmt: skip
    """prefill(n, e, s) = base + slope*n*max(floor, e - s)/divisor; decode(n, c) = max(floor, base + a*n + b*c)."""
    params = np.zeros(N_PARAMS)
    params[:] = (prefill_base, prefill_slope, prefill_floor, prefill_divisor, decode_floor, decode_base, decode_per_request, decode_per_kv)
    return PassPricer(AFFINE, params, *NO_TABLES)


def row_pricer(prefill_step_ms: float, chunk_ref: int, genonly_step_ms: float) -> PassPricer:
    """The reference's row-scalar wiring: prefill_step_ms*n*max(1, e - s)/chunk_ref + genonly_step_ms."""
    return affine_pricer(0.0, prefill_step_ms, 1.0, float(chunk_ref), -math.inf, genonly_step_ms)


def flat_pricer(prefill_ms: float, decode_ms: float) -> PassPricer:
    """Flat prices: prefill_ms per prefill batch and decode_ms per decode iteration (the tandem's row wiring)."""
    return affine_pricer(prefill_ms, 0.0, 0.0, 1.0, -math.inf, decode_ms)


def engine_pricer(tables: PassTables, query_multiplier: int, dp_ranks: int = 1) -> PassPricer:
    """Passes priced from a deployment's tables; decoding requests send query_multiplier (nextn + 1) rows
    each. With dp_ranks > 1 a pass's requests are dealt round-robin over the attention-DP ranks and the
    pass is priced at rank 0's share (the busiest: chunks 0, r, 2r, ...; ceil(n/r) decoders at the mean KV)."""
    params = np.zeros(N_PARAMS)
    params[QUERY_MULTIPLIER] = query_multiplier
    params[DP_RANKS] = dp_ranks
    return PassPricer(ENGINE_TABLES, params, *tables.pack())


# ---------------------------------------------------------------------------------------------
# Jitted pricing (shared by the kernels and the literal replay)
# ---------------------------------------------------------------------------------------------


# The tables are read in place, as (offset, length) spans of the packed data: an array view (a table
# slot, a plane) costs two reference-count updates, more than the arithmetic of a decode pass.


@njit(**LEAF)
def _span(hdr, slot):
    """(offset, length) of table `slot` in the packed data."""
    return hdr[2 * slot], hdr[2 * slot + 1] - hdr[2 * slot]


@njit(**LEAF)
def _locate(data, lo, n, x):
    """(i, w) on the axis data[lo : lo + n]: x = axis[i] + w*(axis[i+1] - axis[i]), clamped to the
    axis; w == 0.0 at a node."""
    if x <= data[lo]:
        return 0, 0.0
    if x >= data[lo + n - 1]:
        return n - 1, 0.0
    a, b = 0, n - 1
    while b - a > 1:
        mid = (a + b) // 2
        if data[lo + mid] <= x:
            a = mid
        else:
            b = mid
    return a, (x - data[lo + a]) / (data[lo + a + 1] - data[lo + a])


@njit(**LEAF)
def _locate_from(data, lo, n, x, hint):
    """_locate(data, lo, n, x), walking forward from cell `hint` (a previous x's cell, when x has
    not fallen below its node; else, or for hint < 0, the binary search): the same (i, w), since
    the axis ascends strictly."""
    if hint < 0 or hint > n - 2 or x <= data[lo] or x >= data[lo + n - 1] or data[lo + hint] > x:
        return _locate(data, lo, n, x)
    a = hint
    while data[lo + a + 1] <= x:
        a += 1
    return a, (x - data[lo + a]) / (data[lo + a + 1] - data[lo + a])


@njit(**LEAF)
def _lerp(a, b, w):
    """a + w*(b - a), exactly a at w == 0 (a missing neighbour b never leaks in)."""
    if w == 0.0:
        return a
    return a + w * (b - a)


@njit(**LEAF)
def interp1(data, hdr, axis, values, x):
    """Table `values` over table `axis` (slots of the packed data), linear between nodes, clamped at the ends."""
    lo, n = _span(hdr, axis)
    i, w = _locate(data, lo, n, x)
    v = hdr[2 * values]
    return data[v + i] if w == 0.0 else _lerp(data[v + i], data[v + i + 1], w)


@njit(**LEAF)
def interp2(data, hdr, axis0, axis1, values, x0, x1):
    """Table `values`: row-major [len(axis0), len(axis1)], flattened."""
    lo0, n0 = _span(hdr, axis0)
    lo1, n1 = _span(hdr, axis1)
    i, wi = _locate(data, lo0, n0, x0)
    j, wj = _locate(data, lo1, n1, x1)
    return interp2_cell(data, hdr[2 * values], n1, i, wi, j, wj)


@njit(**LEAF)
def interp2_cell(data, v, n1, i, wi, j, wj):
    """interp2 in the located cell of the table at data[v:]: (i, wi) on axis0, (j, wj) on axis1 of n1 nodes."""
    low = data[v + i * n1 + j] if wj == 0.0 else _lerp(data[v + i * n1 + j], data[v + i * n1 + j + 1], wj)
    if wi == 0.0:
        return low
    r = v + (i + 1) * n1 + j
    high = data[r] if wj == 0.0 else _lerp(data[r], data[r + 1], wj)
    return _lerp(low, high, wi)


@njit(**LEAF)
def interp3(data, hdr, axis0, axis1, axis2, values, x0, x1, x2):
    """Table `values`: row-major [len(axis0), len(axis1), len(axis2)], flattened: interp2 in the
    planes of x0's cell, then linear between them."""
    lo0, n0 = _span(hdr, axis0)
    lo1, n1 = _span(hdr, axis1)
    lo2, n2 = _span(hdr, axis2)
    i, wi = _locate(data, lo0, n0, x0)
    j, wj = _locate(data, lo1, n1, x1)
    k, wk = _locate(data, lo2, n2, x2)
    plane = n1 * n2
    low = interp2_cell(data, hdr[2 * values] + i * plane, n2, j, wj, k, wk)
    if wi == 0.0:
        return low
    return _lerp(low, interp2_cell(data, hdr[2 * values] + (i + 1) * plane, n2, j, wj, k, wk), wi)


@njit(**LEAF)
def affine_ms(params, n_chunks, starts, takes, n_dec, kv_sum):
    """AFFINE: the prefill part at the chunks' floor-mean end and start, plus the decode part at the floor-mean KV."""
    prefill = 0.0
    if n_chunks > 0:
        end_sum = 0
        start_sum = 0
        for i in range(n_chunks):
            start_sum += starts[i]
            end_sum += starts[i] + takes[i]
        span = float(end_sum // n_chunks - start_sum // n_chunks)
        prefill = params[PREFILL_BASE] + params[PREFILL_SLOPE] * n_chunks * max(params[PREFILL_FLOOR], span) / params[PREFILL_DIVISOR]
    decode = 0.0
    if n_dec > 0:
        ctx = float(kv_sum // n_dec)
        decode = max(params[DECODE_FLOOR], params[DECODE_BASE] + params[DECODE_PER_REQUEST] * n_dec + params[DECODE_PER_KV] * ctx)
    return prefill + decode


@njit(**LEAF)
def engine_ms(params, data, hdr, n_chunks, starts, takes, n_dec, kv_sum):
    """ENGINE_TABLES: a pass priced at the busiest attention-DP rank's share (see engine_pricer):
    its chunks are 0, r, 2r, ... of the pass's."""
    ranks = int(params[DP_RANKS])
    stride, own_chunks, own_dec, own_kv = 1, n_chunks, n_dec, kv_sum
    if ranks > 1:
        stride, own_chunks, own_dec = ranks, (n_chunks + ranks - 1) // ranks, (n_dec + ranks - 1) // ranks
        own_kv = kv_sum * own_dec // n_dec if n_dec > 0 else 0
    return rank_ms(params, data, hdr, own_chunks, starts, takes, stride, own_dec, own_kv)


@njit(**LEAF)
def rank_ms(params, data, hdr, n_chunks, starts, takes, stride, n_dec, kv_sum):
    """One rank's pass, its chunks starts[i * stride], takes[i * stride] (i < n_chunks): a mixed (or
    prefill-only) step = shared ops + mean per-chunk context attention + decode attention, summed in
    that order; a decode-only step = other decode ops + decode attention."""
    rows = n_dec * params[QUERY_MULTIPLIER]
    attention = 0.0
    if n_dec > 0:
        attention = interp2(data, hdr, np.int64(ATTENTION_ROWS_AXIS), np.int64(KV_AXIS), np.int64(DECODE_ATTENTION), rows, kv_sum / n_dec)
    if n_chunks == 0:
        ms = interp1(data, hdr, np.int64(DECODE_ROWS_AXIS), np.int64(DECODE_OTHER), rows) + attention
    else:
        tokens = 0
        context = 0.0
        for i in range(n_chunks):
            take, start = takes[i * stride], starts[i * stride]
            tokens += take
            context += interp3(data, hdr, np.int64(CHUNK_BATCH_AXIS), np.int64(CHUNK_NEW_AXIS), np.int64(CHUNK_START_AXIS),
                               np.int64(CHUNK_ATTENTION), float(n_chunks), float(take), float(start))  # fmt: skip
        shared = interp1(data, hdr, np.int64(TOKEN_AXIS), np.int64(SHARED), tokens + rows)
        ms = shared + context / n_chunks + attention
    return ms


@njit(**LEAF)
def decode_fixed(params, data, hdr, n_dec):
    """What the request count fixes in engine_ms of a decode-only pass of n_dec >= 1 requests:
    (the busiest attention-DP rank's requests, the price of the decode ops other than attention,
    the attention-row cell and weight). decode_walk_ms completes the price at a KV sum."""
    ranks = int(params[DP_RANKS])
    own = (n_dec + ranks - 1) // ranks if ranks > 1 else n_dec
    rows = own * params[QUERY_MULTIPLIER]
    other = interp1(data, hdr, np.int64(DECODE_ROWS_AXIS), np.int64(DECODE_OTHER), rows)
    lo, n = _span(hdr, np.int64(ATTENTION_ROWS_AXIS))
    i, wi = _locate(data, lo, n, rows)
    return own, other, i, wi


@njit(**LEAF)
def decode_walk_ms(params, data, hdr, n_dec, kv_sum, own, other, i, wi, cell):
    """engine_ms(.., no chunks, n_dec, kv_sum) from decode_fixed's (own, other, i, wi) of n_dec, the
    mean-KV cell walked forward from `cell` (the previous pass's, < 0: none): a run of passes
    whose KV grows prices each in O(1). The same float operations as engine_ms, in its order.
    Returns (ms, the KV cell)."""
    own_kv = kv_sum * own // n_dec if int(params[DP_RANKS]) > 1 else kv_sum
    lo, n = _span(hdr, np.int64(KV_AXIS))
    j, wj = _locate_from(data, lo, n, own_kv / own, cell)
    return other + interp2_cell(data, hdr[2 * DECODE_ATTENTION], n, i, wi, j, wj), j


@njit(**LEAF)
def price_pass(kind, params, data, hdr, n_chunks, starts, takes, n_dec, kv_sum):
    """Duration (ms) of a pass with n_chunks prefill chunks (starts[i], takes[i]) and n_dec decoders."""
    if kind == AFFINE:
        return affine_ms(params, n_chunks, starts, takes, n_dec, kv_sum)
    return engine_ms(params, data, hdr, n_chunks, starts, takes, n_dec, kv_sum)
