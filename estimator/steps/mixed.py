"""The mixed (prefill + decode) step in both semantics, three passes over any Pricer.

Legacy mirrors the reference engine's ``Engine::mixed_step_breakdown`` (aiconfigurator-core 0.12.0;
legacy-semantics.md 2.2). Uncached follows uncached-budget.md section 4: the prefill budget counts
new tokens only and the scheduled requests form weighted groups. Many steps are priced together:
one context_many and one generation_many call for the whole list.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from estimator.errors import InvalidInputError
from estimator.pricing.base import Pricer
from estimator.steps.fold import OpCost, StepCost, op_fold, sequential_sum
from estimator.steps.phases import StepModel, decode_kv_position

CONTEXT_ATTENTION = "context_attention"  # the only op pass 2 prices (pass 1 skips it)
GENERATION_ATTENTION = "generation_attention"  # the only op pass 3 prices
SCALED_CONTEXT_ATTENTION = "context_attention (scaled)"  # pass-2 entry of the breakdown
DEFAULT_SOURCE = "silicon"  # source of an attention entry whose pass priced nothing


class Semantics(str, enum.Enum):
    """How a prefill budget counts cached prefix tokens."""

    LEGACY = "legacy"  # aiconfigurator 0.12.0: the budget counts full-ISL tokens
    UNCACHED = "uncached"  # the budget counts uncached tokens only (the default)

    @classmethod
    def parse(cls, value: str | Semantics) -> Semantics:
        try:
            return cls(value.value if isinstance(value, Semantics) else str(value).lower())
        except ValueError:
            raise InvalidInputError(f"unknown semantics {value!r} (known: legacy, uncached)") from None


@dataclass(frozen=True)
class MixedShape:
    """What one mixed step carries."""

    ctx_tokens: int  # prefill tokens scheduled in the step (>= 0)
    decode_requests: int  # decoding requests in the step (>= 0), nextn+1 query tokens each
    isl: int  # effective input length of the requests, tokens (>= 1)
    osl: int  # output length, tokens: sets the decode KV position
    prefix: int = 0  # cached prefix tokens per request (part of isl, >= 0)


@dataclass(frozen=True)
class Packing:
    """The context shapes of passes 1 and 2, one per request group, with the groups' weights."""

    pass1: tuple[tuple[int, int, int], ...]  # (batch, new tokens, prefix) per group
    pass2: tuple[tuple[int, int, int], ...]  # (batch, new tokens, prefix) per group; () without prefill
    weights: tuple[float, ...]  # convex weight per group (sum 1)
    chunks: int  # pass-2 divisor: steps one request's prefill spans


@dataclass(frozen=True)
class MixedStepCost(StepCost):
    """A priced mixed step; ops = pass-1 ops, then "context_attention (scaled)", "generation_attention"."""

    shared_ms: float = 0.0  # pass 1: every op but context attention, ms
    context_attention_ms: float = 0.0  # pass 2, already divided by the chunk count, ms
    decode_attention_ms: float = 0.0  # pass 3, ms


def ceil_div(a: int, b: int) -> int:
    """Exact integer ceil(a / b) for b > 0."""
    return -(-a // b)


def legacy_packing(shape: MixedShape, query_tokens: int) -> Packing:
    """Reference packing: pass 1 credits the prefix only for whole requests (P * floor(C/isl)),
    pass 2 packs ceil(C/isl) full-ISL requests and divides by ceil(isl/C)."""
    c, isl, p = shape.ctx_tokens, max(shape.isl, 1), shape.prefix
    combined = c + query_tokens
    p1 = p * (c // isl)
    if p1 >= combined:
        raise InvalidInputError(f"prefix ({p}) must be smaller than isl ({isl})")
    pass1 = ((1, combined - p1, p1),)
    if c == 0:
        return Packing(pass1, (), (1.0,), 1)
    if p >= isl:
        raise InvalidInputError(f"prefix ({p}) must be smaller than isl ({isl})")
    return Packing(pass1, ((ceil_div(c, isl), isl - p, p),), (1.0,), ceil_div(isl, c))


def request_groups(ctx: int, isl: int, prefix: int) -> tuple[tuple[tuple[int, float], ...], int]:
    """Uncached request groups ((requests, weight), ...) filling ctx new tokens, and the chunk divisor."""
    isl_new = isl - prefix
    if ctx == 0:
        return ((0, 1.0),), 1
    if prefix == 0:
        return ((ceil_div(ctx, isl), 1.0),), ceil_div(isl, ctx)
    if ctx < isl_new:
        return ((1, 1.0),), ceil_div(isl_new, ctx)
    k, r = divmod(ctx, isl_new)
    if r == 0:
        return ((k, 1.0),), 1
    fill = r / isl_new
    return ((k, 1.0 - fill), (k + 1, fill)), 1


def uncached_packing(shape: MixedShape, query_tokens: int) -> Packing:
    """Uncached packing: ctx + q new tokens in pass 1 over each group's n*P cached tokens; pass 2
    prices each group's context attention at (n, isl-P, P)."""
    c, isl, p = shape.ctx_tokens, max(shape.isl, 1), shape.prefix
    if c > 0 and p >= isl:
        raise InvalidInputError(f"prefix ({p}) must be smaller than isl ({isl})")
    groups, chunks = request_groups(c, isl, p)
    pass1 = tuple((1, c + query_tokens, n * p) for n, _ in groups)
    pass2 = tuple((n, isl - p, p) for n, _ in groups) if c > 0 else ()
    return Packing(pass1, pass2, tuple(w for _, w in groups), chunks)


PACKINGS = {Semantics.LEGACY: legacy_packing, Semantics.UNCACHED: uncached_packing}


def mixed_step(model: StepModel, shape: MixedShape, semantics: Semantics = Semantics.UNCACHED) -> MixedStepCost:
    """One mixed step (see mixed_steps)."""
    return mixed_steps(model, (shape,), semantics)[0]


def mixed_steps(model: StepModel, shapes: Sequence[MixedShape], semantics: Semantics = Semantics.UNCACHED) -> list[MixedStepCost]:
    """Price mixed steps with one context_many and one generation_many call for the whole list."""
    priced = _PricedShapes(model, shapes, semantics)
    composer = _Composer(priced)
    return [_empty_step(model) if packing is None else composer.compose(i) for i, packing in enumerate(priced.packings)]


def mixed_step_totals(model: StepModel, shapes: Sequence[MixedShape], semantics: Semantics = Semantics.UNCACHED) -> np.ndarray:
    """The latency_ms of each of mixed_steps(model, shapes, semantics), bit-identical, without the
    per-op records (the sweeps' hot path): steps with one request group are composed as arrays."""
    priced = _PricedShapes(model, shapes, semantics)
    composer = _Composer(priced)
    totals = np.zeros(len(shapes))
    single = []
    for i, packing in enumerate(priced.packings):
        if packing is not None and len(packing.pass1) == 1:
            single.append(i)
        elif packing is not None:
            totals[i] = composer.compose(i).latency_ms
    if single:
        totals[single] = composer.single_group_totals(np.array(single))
    return totals


class _PricedShapes:
    """Shapes with their packings (None: the shape prices nothing) and the price matrices of all of
    them, one call per pass, each pass pricing only its own ops (pass_pricers). p1_at / p2_at index each
    shape's first pass-1 and pass-2 rows, gen_at its decode row (-1: no decoders)."""

    def __init__(self, model: StepModel, shapes: Sequence[MixedShape], semantics: Semantics):
        pack = PACKINGS[Semantics.parse(semantics)]
        self.shapes = shapes
        self.packings = [pack(s, s.decode_requests * model.query_multiplier) if _prices_anything(s) else None for s in shapes]
        p1_rows, p2_rows, gen_rows = [], [], []
        self.p1_at, self.p2_at = np.zeros(len(shapes), dtype=np.int64), np.zeros(len(shapes), dtype=np.int64)
        self.gen_at = np.full(len(shapes), -1, dtype=np.int64)
        for i, (s, p) in enumerate(zip(shapes, self.packings)):
            if p is None:
                continue
            self.p1_at[i], self.p2_at[i] = len(p1_rows), len(p2_rows)
            p1_rows += p.pass1
            p2_rows += p.pass2
            if s.decode_requests > 0:
                self.gen_at[i] = len(gen_rows)
                gen_rows.append((s.decode_requests * model.query_multiplier, decode_kv_position(s.isl, s.osl)))
        self.pass1, self.pass2, self.pass3 = pass_pricers(model.pricer)
        self.p1_lat = self.pass1.context_many(_rows(p1_rows, 3), model.seq_scale) if p1_rows else None
        self.p2_lat = self.pass2.context_many(_rows(p2_rows, 3), model.seq_scale) if p2_rows else None
        self.gen_lat = self.pass3.generation_many(_rows(gen_rows, 2), model.gen_scale) if gen_rows else None


def pass_pricers(pricer: Pricer) -> tuple[Pricer, Pricer, Pricer]:
    """Views of the pricer holding each pass's ops: pass 1 every context op but context attention,
    pass 2 context attention, pass 3 generation attention (the folds still select by name)."""
    context = frozenset(pricer.context_names)
    return (
        pricer.restricted(context - {CONTEXT_ATTENTION}, frozenset()),
        pricer.restricted(context & {CONTEXT_ATTENTION}, frozenset()),
        pricer.restricted(frozenset(), frozenset(pricer.generation_names) & {GENERATION_ATTENTION}),
    )


def _rows(rows: list, width: int) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(-1, width)


def _prices_anything(shape: MixedShape) -> bool:
    return shape.ctx_tokens > 0 or shape.decode_requests > 0


def _empty_step(model: StepModel) -> MixedStepCost:
    """A step with neither prefill nor decode: every entry zero."""
    fold = model.context_fold(exclude=CONTEXT_ATTENTION)
    shared = tuple(OpCost(n, 0.0, s) for n, s in zip(fold.names, fold.sources))
    ops = shared + (OpCost(SCALED_CONTEXT_ATTENTION, 0.0, DEFAULT_SOURCE), OpCost(GENERATION_ATTENTION, 0.0, DEFAULT_SOURCE))
    return MixedStepCost(0.0, ops)


class _Composer:
    """Composes the priced shapes' steps from their rows of the price matrices."""

    def __init__(self, priced: _PricedShapes):
        self.priced = priced
        self.shared = op_fold(priced.pass1.context_names, priced.pass1.context_sources, exclude=CONTEXT_ATTENTION)
        self.context = op_fold(priced.pass2.context_names, priced.pass2.context_sources, only=CONTEXT_ATTENTION)
        self.decode = op_fold(priced.pass3.generation_names, priced.pass3.generation_sources, only=GENERATION_ATTENTION)

    def compose(self, i: int) -> MixedStepCost:
        """Shape i's step with its per-op breakdown."""
        priced = self.priced
        shape, packing, a, b = priced.shapes[i], priced.packings[i], int(priced.p1_at[i]), int(priced.p2_at[i])
        weights = np.array(packing.weights)
        shared = self.shared.apply(_pass1_values(priced.p1_lat[a : a + len(packing.pass1)], weights)[None, :])
        shared_ms = float(sequential_sum(shared)[0])
        context_ms, context_src = 0.0, DEFAULT_SOURCE
        if packing.pass2:
            folded = self.context.apply((weights @ priced.p2_lat[b : b + len(packing.pass2)])[None, :]) / packing.chunks
            context_ms = float(sequential_sum(folded)[0])
            context_src = self.context.sources[0] if self.context.names else DEFAULT_SOURCE
        decode_ms, decode_src = 0.0, DEFAULT_SOURCE
        if shape.decode_requests > 0:
            g = int(priced.gen_at[i])
            decode_ms = float(sequential_sum(self.decode.apply(priced.gen_lat[g : g + 1]))[0])
            decode_src = self.decode.sources[0] if self.decode.names else DEFAULT_SOURCE
        ops = self.shared.costs(shared[0]) + (
            OpCost(SCALED_CONTEXT_ATTENTION, context_ms, context_src),
            OpCost(GENERATION_ATTENTION, decode_ms, decode_src),
        )
        total = sum((shared_ms, context_ms, decode_ms))
        return MixedStepCost(total, ops, shared_ms, context_ms, decode_ms)

    def single_group_totals(self, idx: np.ndarray) -> np.ndarray:
        """compose(i).latency_ms for shapes i in idx whose packing has one request group (weight
        1.0, so pass 1 and pass 2 are plain rows), summed in compose's order."""
        priced = self.priced
        totals = sequential_sum(self.shared.apply(priced.p1_lat[priced.p1_at[idx]]))
        has_pass2 = np.array([bool(priced.packings[i].pass2) for i in idx])
        if has_pass2.any():
            chunks = np.array([priced.packings[i].chunks for i in idx[has_pass2]], dtype=np.float64)
            totals[has_pass2] += sequential_sum(self.context.apply(priced.p2_lat[priced.p2_at[idx[has_pass2]]]) / chunks[:, None])
        g = priced.gen_at[idx]
        decoding = g >= 0
        if decoding.any():
            totals[decoding] += sequential_sum(self.decode.apply(priced.gen_lat[g[decoding]]))
        return totals


def _pass1_values(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pass-1 per-op values: an op equal across the groups (token-major: GEMM, comm, norms) keeps
    its exact value; a prefix-dependent op is the weighted sum over the groups."""
    if rows.shape[0] == 1:
        return rows[0]
    return np.where((rows == rows[0]).all(axis=0), rows[0], weights @ rows)


__all__ = [
    "CONTEXT_ATTENTION",
    "GENERATION_ATTENTION",
    "SCALED_CONTEXT_ATTENTION",
    "MixedShape",
    "MixedStepCost",
    "Packing",
    "Semantics",
    "ceil_div",
    "legacy_packing",
    "mixed_step",
    "mixed_steps",
    "mixed_step_totals",
    "request_groups",
    "uncached_packing",
]
