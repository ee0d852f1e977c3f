"""Seeded random single-op queries, priced natively and by the reference engine.

Queries deliberately include off-grid shapes, past-the-frontier shapes and misses. Every query
is one op at one phase shape; both sides see the identical OpSpec (lane order included).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from estimator.models import ops as O
from estimator.models.ops import ops_spec
from estimator.perf.stack import StackTables, load_stack
from estimator.perf.system_spec import QUANT_PROFILES
from estimator.pricing.native import NativePricer
from estimator.pricing.reference import price_ops_json, reference_database

FAMILIES = ("gemm", "context_attention", "generation_attention", "custom_allreduce", "elementwise", "embedding", "p2p", "nccl", "moe")
NCCL_OPERATIONS = ("all_gather", "alltoall", "reduce_scatter", "all_reduce")


@dataclass(frozen=True)
class OpQuery:
    op: O.Op
    is_context: bool
    batch: int  # requests (context) or sequences (generation)
    s: int  # new tokens (context) or KV position (generation)
    prefix: int = 0

    @property
    def label(self) -> str:
        body = next(iter(self.op.spec().values()))
        fields = ",".join(f"{k}={v}" for k, v in body.items() if k not in ("name", "lane_order", "scale_factor"))
        phase = "ctx" if self.is_context else "gen"
        return f"{self.op.kind}[{fields}] {phase} b={self.batch} s={self.s} p={self.prefix}"


def _loguniform_int(rng: np.random.Generator, lo: float, hi: float) -> int:
    return int(round(float(np.exp(rng.uniform(np.log(lo), np.log(hi))))))


@functools.cache
def reference_lane_order(system: str, backend: str, version: str, table_attr: str) -> tuple[str, ...]:
    """The reference's resolved attention lane walk for a stack (input to both pricers)."""
    from aiconfigurator_core.sdk.operations.attention import resolved_lane_order_for_op

    return tuple(resolved_lane_order_for_op(reference_database(system, backend, version), table_attr, None))


def _gemm_queries(rng, st: StackTables, n_queries: int) -> list[OpQuery]:
    sites_n = np.unique(st.gemm.arrays[1]).astype(int)
    dtypes = [d for d in ("bfloat16", "fp8", "fp8_block") if d in st.gemm.dtypes] + ["nvfp4"]  # nvfp4: also no-FP4 misses
    if "fp8" in st.gemm.dtypes and "fp8" in st.compute_scale.slices:
        dtypes.append("fp8_static")
    out = []
    for i in range(n_queries):
        on_grid = rng.random() < 0.4
        n = int(rng.choice(sites_n)) if on_grid else _loguniform_int(rng, 8, 300_000)
        k = int(rng.choice(sites_n)) if on_grid and rng.random() < 0.7 else _loguniform_int(rng, 8, 100_000)
        name = "context_logits_gemm" if rng.random() < 0.05 else f"q{i}_gemm"
        op = O.Gemm(
            name=name,
            scale_factor=float(rng.choice([1.0, 64.0])),
            n=n,
            k=k,
            quant_mode=str(rng.choice(dtypes)),
            low_precision_input=bool(rng.random() < 0.5),
            seq_split=int(rng.choice([1, 1, 1, 2])),
        )
        is_ctx = bool(rng.random() < 0.5)
        out.append(OpQuery(op, is_ctx, _loguniform_int(rng, 1, 512), _loguniform_int(rng, 1, 70_000) if is_ctx else 1))
    return out


def _heads(rng) -> tuple[int, int]:
    n = int(rng.choice([1, 2, 4, 5, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 128]))
    n_kv = int(rng.choice([d for d in (1, 2, 4, 8, n) if d <= n and n % d == 0]))
    return n, n_kv


def _attention_dtypes(rng) -> tuple[str, str]:
    kv = str(rng.choice(["bfloat16", "fp8"]))
    fmha = "fp8" if kv == "fp8" and rng.random() < 0.5 else "bfloat16"
    return kv, fmha


def _attention_fields(rng, lanes: tuple[str, ...]) -> tuple[dict, str]:
    """Fields shared by context and generation attention ops, and an fmha dtype for context."""
    n, n_kv = _heads(rng)
    kv, fmha = _attention_dtypes(rng)
    fields = dict(
        scale_factor=float(rng.choice([1.0, 64.0])),
        n=n,
        n_kv=n_kv,
        head_size=int(rng.choice([64, 128, 128, 128, 256])),
        window_size=int(rng.choice([0, 0, 0, 128, 1024])),
        kv_cache_dtype=kv,
        lane_order=lanes,
    )
    return fields, fmha


def _context_queries(rng, st: StackTables, n_queries: int) -> list[OpQuery]:
    lanes = reference_lane_order(st.system, st.backend, st.version, "_context_attention_data")
    out = []
    for _ in range(n_queries):
        fields, fmha = _attention_fields(rng, lanes)
        op = O.ContextAttention(
            name="context_attention", fmha_quant_mode=fmha, use_qk_norm=bool(rng.random() < 0.5), cp_size=int(rng.choice([1] * 8 + [2, 4])), **fields
        )
        s = _loguniform_int(rng, 1, 40_000)
        prefix = 0 if rng.random() < 0.5 else _loguniform_int(rng, 1, 30_000)
        out.append(OpQuery(op, True, _loguniform_int(rng, 1, 400), s, prefix))
    return out


def _generation_queries(rng, st: StackTables, n_queries: int) -> list[OpQuery]:
    lanes = reference_lane_order(st.system, st.backend, st.version, "_generation_attention_data")
    out = []
    for _ in range(n_queries):
        fields, _ = _attention_fields(rng, lanes)
        op = O.GenerationAttention(name="generation_attention", **fields)
        out.append(OpQuery(op, False, _loguniform_int(rng, 1, 4096), _loguniform_int(rng, 1, 200_000)))
    return out


def _allreduce_queries(rng, st: StackTables, n_queries: int) -> list[OpQuery]:
    out = []
    for _ in range(n_queries):
        op = O.CustomAllReduce(
            name="ar",
            scale_factor=float(rng.choice([1.0, 64.0])),
            hidden_size=_loguniform_int(rng, 256, 20_000),
            tp_size=int(rng.choice([1, 2, 4, 8, 16])),
            seq_split=int(rng.choice([1, 1, 2])),
        )
        is_ctx = bool(rng.random() < 0.5)
        out.append(OpQuery(op, is_ctx, _loguniform_int(rng, 1, 512), _loguniform_int(rng, 1, 40_000) if is_ctx else 1))
    return out


def _nccl_elements(rng) -> float:
    """Elements per token: a power of two (exact-hit sizes), an integer hidden size, or a fraction."""
    roll = rng.random()
    if roll < 0.3:
        return float(2 ** int(rng.integers(0, 15)))
    if roll < 0.8:
        return float(_loguniform_int(rng, 1, 20_000))
    return float(rng.uniform(0.05, 3000.0))


def _nccl_queries(rng, st: StackTables, n_queries: int) -> list[OpQuery]:
    """Collected and uncollected (dtype, operation, num_gpus), sizes below, inside and past the curves."""
    out = []
    for _ in range(n_queries):
        op = O.Nccl(
            name="nccl",
            scale_factor=float(rng.choice([1.0, 64.0])),
            hidden_size=_nccl_elements(rng),
            num_gpus=int(rng.choice([1, 2, 2, 4, 4, 8, 8, 16, 32, 3, 6])),
            dtype=str(rng.choice(["half", "half", "half", "int8", "int8", "fp8"])),
            operation=str(rng.choice([*NCCL_OPERATIONS, *NCCL_OPERATIONS, "broadcast"])),
            seq_split=int(rng.choice([1, 1, 2, 4])),
        )
        is_ctx = bool(rng.random() < 0.5)
        batch = 2 ** int(rng.integers(0, 10)) if rng.random() < 0.3 else _loguniform_int(rng, 1, 512)
        out.append(OpQuery(op, is_ctx, batch, _loguniform_int(rng, 1, 40_000) if is_ctx else 1))
    return out


def _moe_pools(st: StackTables) -> tuple[list, ...]:
    """Collected MoE curve keys to draw from: all, single-point curves, min-latency curves."""
    c_off = st.moe.arrays[0]
    keys = sorted(st.moe.curves)
    singletons = [k for k in keys if c_off[st.moe.curves[k] + 1] - c_off[st.moe.curves[k]] == 1]
    return keys, singletons, [k for k in keys if k[0] == "min_latency"]


def _moe_key(rng, pools: tuple[list, ...]) -> tuple:
    """A collected key; single-point and min-latency curves are over-sampled when the stack has them."""
    keys, singletons, min_latency = pools
    roll = rng.random()
    pool = singletons if roll < 0.1 and singletons else min_latency if roll < 0.35 and min_latency else keys
    return pool[int(rng.integers(len(pool)))]


def _moe_target_tokens(rng, points: np.ndarray, small: bool) -> int:
    """Expert-side tokens: small (min-latency range), a collected point, between two points, below the
    first or past the last."""
    if small:
        return _loguniform_int(rng, 1, 200)
    roll = rng.random()
    if roll < 0.4:
        return int(rng.choice(points))
    if roll < 0.7 and len(points) > 1:
        j = int(rng.integers(1, len(points)))
        return int(rng.integers(points[j - 1], points[j] + 1))
    if roll < 0.8:
        return int(rng.integers(0, points[0] + 1))
    return _loguniform_int(rng, points[-1], 4 * points[-1])


def _moe_perturbed(rng, st: StackTables, quant: str, dist: str, inter: int) -> tuple[str, str, int]:
    """(quant, distribution, inter), sometimes moved off the table: another priceable quant, an
    uncollected distribution (uniform fallback) or an uncollected shape."""
    roll = rng.random()
    if roll < 0.06:
        flops_keys = dict(st.spec.tc_flops)
        return str(rng.choice([q for q, p in QUANT_PROFILES["moe"].items() if p.flops_key in flops_keys])), dist, inter
    if roll < 0.1:
        return quant, str(rng.choice(["uniform", "power_law_0.8"])), inter
    if roll < 0.14:
        return quant, dist, inter + 64
    return quant, dist, inter


def _moe_queries(rng, st: StackTables, n_queries: int) -> list[OpQuery]:
    """Collected MoE keys (some perturbed into misses) at tokens on, between and past the curve points."""
    pools = _moe_pools(st)
    c_off, tokens = st.moe.arrays[0], st.moe.arrays[1]
    out = []
    for _ in range(n_queries):
        key = _moe_key(rng, pools)
        grid, quant, dist, topk, experts, hidden, inter, tp, ep = key
        quant, dist, inter = _moe_perturbed(rng, st, quant, dist, inter)
        c = st.moe.curves[key]
        points = tokens[c_off[c] : c_off[c + 1]].astype(np.int64)
        dp = int(rng.choice([1, 1, 1, 2, 4]))
        op = O.Moe(
            name="moe",
            scale_factor=float(rng.choice([1.0, 58.0])),
            hidden_size=hidden,
            inter_size=inter,
            topk=topk,
            num_experts=experts,
            moe_tp_size=tp,
            moe_ep_size=ep,
            attention_dp_size=dp,
            quant_mode=quant,
            workload_distribution=dist,
            is_gated=bool(rng.random() < 0.85),
            enable_eplb=bool(rng.random() < 0.3),
            is_context=bool(rng.random() < 0.5),
            moe_backend="deepep_moe" if rng.random() < 0.03 else None,
        )
        x = max(1, _moe_target_tokens(rng, points, grid == "min_latency" and rng.random() < 0.7) // dp)
        if rng.random() < 0.5:
            batch = int(rng.choice([1, 1, 2, 3]))
            out.append(OpQuery(op, True, batch, -(-x // batch)))
        else:
            out.append(OpQuery(op, False, x, 1))
    return out


def _memop_queries(rng, n_queries: int, make) -> list[OpQuery]:
    out = []
    for _ in range(n_queries):
        is_ctx = bool(rng.random() < 0.5)
        out.append(OpQuery(make(rng), is_ctx, _loguniform_int(rng, 1, 512), _loguniform_int(rng, 1, 40_000) if is_ctx else 1))
    return out


def _elementwise(rng) -> O.Op:
    return O.Elementwise(
        name="ew",
        scale_factor=float(rng.choice([1.0, 64.0])),
        bytes_per_token=float(_loguniform_int(rng, 8, 200_000)),
        scale_num_tokens=int(rng.choice([1, 1, 2, 4])),
        seq_split=int(rng.choice([1, 1, 2])),
    )


def _embedding(rng) -> O.Op:
    return O.Embedding(
        name="emb",
        scale_factor=1.0,
        vocab_size=_loguniform_int(rng, 1000, 200_000),
        hidden_size=_loguniform_int(rng, 256, 20_000),
        seq_split=int(rng.choice([1, 1, 2])),
    )


def _p2p(rng) -> O.Op:
    return O.P2P(name="p2p", scale_factor=float(rng.choice([0.0, 1.0, 3.0])), pp_size=int(rng.choice([1, 2, 4])), hidden_size=_loguniform_int(rng, 256, 20_000))


def make_queries(family: str, st: StackTables, n_queries: int, seed: int) -> list[OpQuery]:
    """n_queries seeded random queries of one op family on one stack."""
    rng = np.random.default_rng(seed)
    if family == "gemm":
        return _gemm_queries(rng, st, n_queries)
    if family == "context_attention":
        return _context_queries(rng, st, n_queries)
    if family == "generation_attention":
        return _generation_queries(rng, st, n_queries)
    if family == "custom_allreduce":
        return _allreduce_queries(rng, st, n_queries)
    if family == "nccl":
        return _nccl_queries(rng, st, n_queries)
    if family == "moe":
        return _moe_queries(rng, st, n_queries)
    makers = {"elementwise": _elementwise, "embedding": _embedding, "p2p": _p2p}
    return _memop_queries(rng, n_queries, makers[family])


def price_native(st: StackTables, q: OpQuery) -> dict | BaseException:
    """{"latency_ms", "source"} of one query through the native pricer, or the raised error."""
    try:
        pricer = NativePricer(st, [q.op], [q.op])
        row = pricer.context_ops(q.batch, q.s, q.prefix) if q.is_context else pricer.generation_ops(q.batch, q.s)
        return {"latency_ms": row[0].latency_ms, "source": row[0].source}
    except Exception as exc:  # noqa: BLE001 - the outcome class is what is compared
        return exc


def price_reference(st: StackTables, q: OpQuery) -> dict | BaseException:
    try:
        row = price_ops_json(st.system, st.backend, st.version, ops_spec([q.op]), is_context=q.is_context, batch_size=q.batch, s=q.s, prefix=q.prefix)
        return {"latency_ms": row[0].latency_ms, "source": row[0].source}
    except Exception as exc:  # noqa: BLE001
        return exc


def stack(system: str, backend: str, version: str | None = None) -> StackTables:
    return load_stack(system, backend, version)
