"""Per-family table builders: GEMM sites, attention slices, scale grids, comm and MoE token curves.

Each builder reads its sources (primary first), applies the reference's load rules (row filters,
first-row-wins on the full key, load-time SOL floors) and lays the rows out for the Numba kernels.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from estimator.kernels.sol import N_PARAMS, SOL_GEMM, SOL_GENERATION_ATTENTION
from estimator.perf.tables import (
    Curves,
    Grid2,
    Grid3,
    build_curves,
    build_grid2,
    build_grid3,
    first_wins,
    floor_at_sol,
    read_rows,
    slice_ids_of,
)


@dataclass(frozen=True)
class SolContext:
    """The system facts the load-time SOL floors need."""

    mem_bw: float  # bytes/s
    sm_version: int
    gemm_profile: dict  # gemm quant name -> (bytes per element, tc flops or None when the system lacks the key)
    kv_bytes: dict  # kv-cache dtype name -> bytes per element
    bf16_flops: float
    fp8_flops: float | None


@dataclass(frozen=True)
class GemmSites:
    """Scattered (n, k) sites with m-curves, per GEMM dtype.

    Sites of dtype d are site_off[d]:site_off[d+1], in the reference's enumeration order (which
    decides distance ties). Site i's curve is curve_off[i]:curve_off[i+1] of (cm, cl), m ascending.
    packed_key (n << 32 | k, ascending) and packed_site give the exact-site lookup per dtype,
    sharing site_off offsets."""

    arrays: tuple  # (site_off, site_n, site_k, site_ln, site_lk, curve_off, cm, cl, packed_key, packed_site)
    dtypes: dict  # dtype name -> dtype id


def _first_seen(values: np.ndarray) -> np.ndarray:
    """For each row, the row index of the first occurrence of its value."""
    _, first, inv = np.unique(values, return_index=True, return_inverse=True)
    return first[inv]


def _site_order(m: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Distinct (n, k) pairs in the reference's nested first-seen walk order (m, then n, then k)."""
    rows = np.arange(len(m))
    mi, ni = m.astype(np.int64), n.astype(np.int64)
    fm = _first_seen(mi)
    fmn = _first_seen((mi << 32) | ni)
    walk = np.lexsort((rows, fmn, fm))
    packed = (n[walk].astype(np.int64) << 32) | k[walk].astype(np.int64)
    _, first = np.unique(packed, return_index=True)
    return packed[np.sort(first)]


def build_gemm(sources: list, ctx: SolContext) -> GemmSites:
    rows = read_rows(sources, ["gemm_dtype", "m", "n", "k", "latency"])
    keep = ~np.isin(rows["gemm_dtype"], ["awq", "gptq"])
    rows = {c: v[keep] for c, v in rows.items()}
    dtype_names = list(dict.fromkeys(rows["gemm_dtype"].tolist()))
    site_off, sn, sk, curve_off, cm, cl, pk, ps = [0], [], [], [0], [], [], [], []
    for name in dtype_names:
        sel = np.flatnonzero(rows["gemm_dtype"] == name)
        m, n, k, lat = (rows[c][sel] for c in ("m", "n", "k", "latency"))
        first = first_wins([m, n, k])
        m, n, k, lat = m[first], n[first], k[first], lat[first].copy()
        bytes_per, flops = ctx.gemm_profile.get(name, (None, None))
        if flops is not None:
            params = np.zeros((1, N_PARAMS))
            params[0, :3] = (flops, bytes_per, ctx.mem_bw)
            floor_at_sol(SOL_GEMM, params, np.zeros(len(lat), dtype=np.int64), np.stack([m, n, k], axis=1), lat)
        order = _site_order(m, n, k)
        packed_rows = (n.astype(np.int64) << 32) | k.astype(np.int64)
        site_of_row = np.searchsorted(np.sort(order), packed_rows)
        rank = np.argsort(order, kind="stable")  # sorted position -> enumeration index
        site_idx = rank[site_of_row]
        by_site = np.lexsort((m, site_idx))
        counts = np.bincount(site_idx, minlength=len(order))
        base = len(sn)
        sn.extend((order >> 32).astype(np.float64))
        sk.extend((order & 0xFFFFFFFF).astype(np.float64))
        curve_off.extend((curve_off[-1] + np.cumsum(counts)).tolist())
        cm.extend(m[by_site])
        cl.extend(lat[by_site])
        sorted_keys = np.sort(order)
        pk.extend(sorted_keys)
        ps.extend(base + rank)
        site_off.append(len(sn))
    site_n = np.asarray(sn, dtype=np.float64)
    site_k = np.asarray(sk, dtype=np.float64)
    arrays = (
        np.asarray(site_off, dtype=np.int64),
        site_n,
        site_k,
        np.log2(np.maximum(site_n, 1.0)),
        np.log2(np.maximum(site_k, 1.0)),
        np.asarray(curve_off, dtype=np.int64),
        np.asarray(cm, dtype=np.float64),
        np.asarray(cl, dtype=np.float64),
        np.asarray(pk, dtype=np.int64),
        np.asarray(ps, dtype=np.int64),
    )
    return GemmSites(arrays=arrays, dtypes={name: i for i, name in enumerate(dtype_names)})


def _n_kv_lookup(heads: np.ndarray, kv_heads: np.ndarray) -> np.ndarray:
    """MHA sentinel: 0 where the kv-head count equals the head count."""
    return np.where(kv_heads == heads, 0.0, kv_heads)


_ATTENTION_COLUMNS = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "latency"]
_ATTENTION_OPTIONAL = {"kernel_source": "", "window_size": 0.0, "step": 0.0, "attn_dtype": "bfloat16"}


def _lane(kernel_source: np.ndarray) -> np.ndarray:
    return np.where(kernel_source == "", "default", kernel_source).astype(object)


def build_context_attention(sources: list) -> Grid3:
    """Slices keyed (lane, fmha, kv, n_kv_lookup, head, window); axes (heads, isl, batch). No floor."""
    r = read_rows(sources, _ATTENTION_COLUMNS, _ATTENTION_OPTIONAL)
    lane = _lane(r["kernel_source"])
    lookup = _n_kv_lookup(r["num_heads"], r["num_key_value_heads"])
    keys = [lane, r["attn_dtype"], r["kv_cache_dtype"], lookup, r["head_dim"], r["window_size"]]
    first = first_wins([*keys, r["num_heads"], r["isl"], r["batch_size"]])
    keys = [c[first] for c in keys]
    slices, sid = slice_ids_of(keys)
    arrays = build_grid3(sid, r["num_heads"][first], r["isl"][first], r["batch_size"][first], r["latency"][first], len(slices))
    return Grid3(arrays=arrays, slices=_int_keys(slices, (3, 4, 5)))


def build_generation_attention(sources: list, ctx: SolContext) -> Grid3:
    """Slices keyed (lane, kv, n_kv_lookup, head, window); axes (heads, batch, isl + step); floored at SOL."""
    r = read_rows(sources, _ATTENTION_COLUMNS, _ATTENTION_OPTIONAL)
    lane = _lane(r["kernel_source"])
    lookup = _n_kv_lookup(r["num_heads"], r["num_key_value_heads"])
    seq = r["isl"] + r["step"]
    keys = [lane, r["kv_cache_dtype"], lookup, r["head_dim"], r["window_size"]]
    first = first_wins([*keys, r["num_heads"], r["batch_size"], seq])
    keys = [c[first] for c in keys]
    slices, sid = slice_ids_of(keys)
    heads, batch, seq, lat = r["num_heads"][first], r["batch_size"][first], seq[first], r["latency"][first].copy()
    params = np.zeros((len(slices), N_PARAMS))
    for key, i in slices.items():
        _, kv, lk, head, window = key
        params[i, :6] = generation_sol_params(ctx, kv, lk, head, window)
    floor_at_sol(SOL_GENERATION_ATTENTION, params, sid, np.stack([heads, batch, seq], axis=1), lat)
    arrays = build_grid3(sid, heads, batch, seq, lat, len(slices))
    return Grid3(arrays=arrays, slices=_int_keys(slices, (2, 3, 4)))


def generation_sol_params(ctx: SolContext, kv: str, n_kv_lookup: float, head: float, window: float) -> tuple:
    """SOL parameter vector of a generation-attention slice: fp8 MMA only for fp8 KV on sm >= 89."""
    flops = ctx.fp8_flops if (kv == "fp8" and ctx.sm_version >= 89 and ctx.fp8_flops) else ctx.bf16_flops
    return (n_kv_lookup, head, window, ctx.kv_bytes[kv], flops, ctx.mem_bw)


def _int_keys(slices: dict, int_positions: tuple[int, ...]) -> dict:
    """Normalise the numeric parts of slice keys to int so lookups by op fields match."""
    out = {}
    for key, i in slices.items():
        out[tuple(int(v) if p in int_positions else v for p, v in enumerate(key))] = i
    return out


def build_scale_grid(sources: list) -> Grid2:
    """compute_scale / scale_matrix: slices keyed (quant_dtype,), axes (m, k); no floor."""
    r = read_rows(sources, ["quant_dtype", "m", "k", "latency"])
    first = first_wins([r["quant_dtype"], r["m"], r["k"]])
    slices, sid = slice_ids_of([r["quant_dtype"][first]])
    arrays = build_grid2(sid, r["m"][first], r["k"][first], r["latency"][first], len(slices))
    return Grid2(arrays=arrays, slices={k[0]: v for k, v in slices.items()})


def build_custom_allreduce(sources: list) -> Curves:
    """Curves keyed (num_gpus,) over message_size; eager rows dropped, every dtype keyed as half."""
    r = read_rows(sources, ["num_gpus", "message_size", "latency"], {"kernel_source": "", "backend": "", "implementation": ""})
    eager = np.array(
        [str(a).endswith("_eager") or str(b).endswith("_eager") for a, b in zip(r["kernel_source"], r["backend"])],
        dtype=bool,
    )
    keep = np.flatnonzero(~eager)
    gpus, size, lat = r["num_gpus"][keep], r["message_size"][keep], r["latency"][keep]
    first = first_wins([gpus, size])
    curves, cid = slice_ids_of([gpus[first]])
    arrays = build_curves(cid, size[first], lat[first], len(curves))
    return Curves(arrays=arrays, curves={int(k[0]): v for k, v in curves.items()})


_COLLECTIVE_COLUMNS = ["nccl_dtype", "op_name", "num_gpus", "message_size", "latency"]


def build_nccl(libraries: list) -> Curves:
    """Curves keyed (dtype, op, num_gpus) over message_size (elements).

    `libraries` are the system-wide collective tables in priority order (NCCL, then the oneCCL
    stand-in): each key's curve comes whole from the first library holding it, and within that
    file the first row wins on exact duplicates."""
    parts = [read_rows([lib], _COLLECTIVE_COLUMNS) for lib in libraries] or [read_rows([], _COLLECTIVE_COLUMNS)]
    r = {c: np.concatenate([p[c] for p in parts]) for c in _COLLECTIVE_COLUMNS}
    library = np.concatenate([np.full(len(p["latency"]), i) for i, p in enumerate(parts)])
    curves, cid = slice_ids_of([r["nccl_dtype"], r["op_name"], r["num_gpus"]])
    owner = np.full(len(curves), len(parts))
    np.minimum.at(owner, cid, library)
    own = np.flatnonzero(library == owner[cid])
    first = own[first_wins([cid[own], r["message_size"][own]])]
    arrays = build_curves(cid[first], r["message_size"][first], r["latency"][first], len(curves))
    return Curves(arrays=arrays, curves={(k[0], k[1], int(k[2])): v for k, v in curves.items()})


MOE_DEFAULT = "default"  # MoE curve grid of the regular kernels
MOE_MIN_LATENCY = "min_latency"  # MoE curve grid of trtllm's small-token nvfp4 kernel
_MIN_LATENCY_KERNEL = "moe_torch_flow_min_latency"
_MOE_REKEY = {  # (moe_dtype, kernel_source) -> quant: one dtype logged for two kernels, split by kernel
    ("w4a16_mxfp4", "sglang_flashinfer_cutlass_moe"): "w4a16_mxfp4_cutlass",
    ("w4a8_mxfp4_mxfp8", "sglang_mxfp4_flashinfer_trtllm_moe"): "w4a8_mxfp4_mxfp8_trtllm",
}
_MOE_SHAPE = ["topk", "num_experts", "hidden_size", "inter_size", "moe_tp_size", "moe_ep_size"]  # curve key columns after distribution
MOE_FALLBACK_DISTRIBUTION = "uniform"  # tried when a quant never collected the requested distribution


@dataclass(frozen=True)
class MoeCurves:
    """MoE token curves: one per (grid, quant, distribution, topk, experts, hidden, inter, moe_tp, moe_ep)."""

    arrays: tuple  # (c_off, x, y): x in tokens, y in ms
    curves: dict  # full key -> curve id

    @functools.cached_property
    def distributions(self) -> dict:
        """(grid, quant) -> frozenset of the distributions collected for that quant."""
        collected: dict = {}
        for grid, quant, dist, *_ in self.curves:
            collected.setdefault((grid, quant), set()).add(dist)
        return {k: frozenset(v) for k, v in collected.items()}

    def curve(self, grid: str, quant: str, distribution: str, shape: tuple) -> int:
        """Curve id of a shape (topk, experts, hidden, inter, moe_tp, moe_ep); a distribution the quant
        never collected falls back to "uniform"; -1 when nothing matches."""
        collected = self.distributions.get((grid, quant), frozenset())
        dist = distribution if distribution in collected else MOE_FALLBACK_DISTRIBUTION
        return self.curves.get((grid, quant, dist, *shape), -1)


def build_moe(sources: list) -> MoeCurves:
    """Token curves of moe_perf: min-latency kernel rows form their own grid, re-keyed dtypes split by
    kernel, first row wins on (grid, key, tokens) across sources in priority order."""
    r = read_rows(sources, ["moe_dtype", "distribution", *_MOE_SHAPE, "num_tokens", "latency"], {"kernel_source": ""})
    kernel, quant = r["kernel_source"], r["moe_dtype"].astype(object)
    for (dtype, source), rekeyed in _MOE_REKEY.items():
        quant[(quant == dtype) & (kernel == source)] = rekeyed
    grid = np.where(kernel == _MIN_LATENCY_KERNEL, MOE_MIN_LATENCY, MOE_DEFAULT).astype(object)
    curves, cid = slice_ids_of([grid, quant, r["distribution"], *(r[c] for c in _MOE_SHAPE)])
    first = first_wins([cid, r["num_tokens"]])
    arrays = build_curves(cid[first], r["num_tokens"][first], r["latency"][first], len(curves))
    return MoeCurves(arrays=arrays, curves=_int_keys(curves, tuple(range(3, 9))))
