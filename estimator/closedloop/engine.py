"""Engine price tables: one deployment's step components priced on node grids, once, in batches.

A pass is priced as one step (estimator.closedloop.pricing): pass-1 shared ops at the pass's
token count, context attention per prefill chunk, generation attention at the decode batch and
mean KV, and the decode step's other ops at the decode batch. Each component is priced by the
deployment's pricer at the nodes of a fixed lattice with batched ``context_many`` /
``generation_many`` calls (no Python call per pass), and the replay interpolates multilinearly
between nodes. This is the approximation of engine pricing:

* the token-major parts (pass-1 shared ops over pass tokens, the decode step's other ops over
  decode rows) are priced at every integer up to ``EXACT_UP_TO`` (16384 tokens, 2048 rows):
  GEMM prices jump at the perf tables' tile boundaries (+24% from 2048 to 2049 tokens on
  Qwen3-32B/H200), which no interpolation between sparser nodes reproduces; beyond that, and on
  the attention axes, nodes are geometric (``PER_OCTAVE`` per doubling, powers of two
  included). A query on a node is exact, one between nodes is the multilinear blend of its
  neighbours; attention is smooth in its axes (passes within 0.5% of direct pricing, tested);
* context attention is evaluated per chunk at the pass's chunk count and averaged (batched
  attention, each chunk at its own new tokens and KV start), not at one mean chunk;
* the pass-1 shared ops are priced with no cached context and the decode step's other ops at KV
  length 1: only the KV-reading ops (``CONTEXT_KV_OPS`` / ``GENERATION_KV_OPS``: attention, and
  MLA's fused attention block) read the prefix or the KV length.

A launch whose TRT-LLM MoE backend is TRTLLM (``PassModel.moe_backend``) has its Moe op column priced at
the tables' trtllm-gen curve instead of the reference's (estimator.closedloop.moe_kernel).

The reference engine (MoE, MLA and hybrid models) prices a shape 10-100x slower than the native
kernels, so its lattices are coarser (``LATTICES``; passes within 1% of direct pricing, tested),
and coarser still for its HYBRID database mode. Attention-only grids are priced by a pricer
narrowed to the attention ops.

Extents are rounded up to powers of two. Each component grid is held per model at the largest
extent requested so far (growing prices only the new nodes) and sliced for smaller ones (the
lattices are nested and every node is priced on its own, so a slice equals a fresh build bit for
bit); the assembled tables are cached per (model, extent). While the disk store is open
(estimator.closedloop.tablecache; the report's batch runner opens it) a grid starts from its
stored copy and each growth is stored. A node whose shape has no perf data is NaN; a pass that
lands on it prices as NaN and the replay reports the row unpriceable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.caching import memo, register
from estimator.closedloop import tablecache
from estimator.closedloop.moe_kernel import trtllm_gen_column, with_trtllm_gen
from estimator.closedloop.pricing import PassTables
from estimator.closedloop.qk_norm import qk_norm_ms
from estimator.deployment import Deployment
from estimator.errors import PerfDataMissingError
from estimator.pricing import PRICERS
from estimator.pricing.base import Pricer
from estimator.scheduler.facts import step_pricer
from estimator.steps.fold import op_fold, sequential_sum
from estimator.steps.mixed import CONTEXT_ATTENTION, GENERATION_ATTENTION

# The ops that read the KV cache: attention, and MLA's fused attention block (DeepSeek, Kimi). They
# are priced per chunk at its KV start and per decode batch at its KV length; every other op is
# token-major.
CONTEXT_KV_OPS = (CONTEXT_ATTENTION, "context_mla_block")
GENERATION_KV_OPS = (GENERATION_ATTENTION, "generation_mla_block")

OP_PRICERS = (*PRICERS, "sol")  # what estimator.scheduler.facts.step_pricer builds
PER_OCTAVE = {"tokens": 64, "chunks": 4, "chunk": 4, "attention_rows": 8, "kv": 8, "rows": 64}  # geometric nodes per doubling
EXACT_UP_TO = {"tokens": 16384, "chunks": 4, "chunk": 8, "attention_rows": 16, "kv": 16, "rows": 2048}  # every integer node up to here
# The reference engine prices a shape 10-100x slower than the native kernels (and the native tables
# are not smooth in tokens, so native axes stay exact): the reference's token and decode-row axes are
# exact only up to 512 / 256 (geometric, 1.1% apart, beyond) and its attention axes are coarser.
COARSE_EXACT_UP_TO = {**EXACT_UP_TO, "tokens": 512, "rows": 256}
COARSE_PER_OCTAVE = {**PER_OCTAVE, "chunk": 2, "attention_rows": 4, "kv": 4}
# In HYBRID mode an empirically transferred op costs ~1 ms per shape: coarser still (4.4% apart).
HYBRID_EXACT_UP_TO = {**COARSE_EXACT_UP_TO, "tokens": 128, "rows": 64}
HYBRID_PER_OCTAVE = {**COARSE_PER_OCTAVE, "tokens": 16, "rows": 16}
LATTICES = {
    "native": (EXACT_UP_TO, PER_OCTAVE),
    "reference": (COARSE_EXACT_UP_TO, COARSE_PER_OCTAVE),
    "sol": (COARSE_EXACT_UP_TO, COARSE_PER_OCTAVE),
    "hybrid": (HYBRID_EXACT_UP_TO, HYBRID_PER_OCTAVE),
}  # pricer -> (exact-up-to, nodes per octave) per axis


@dataclass(frozen=True)
class PassModel:
    """The deployment and pricer whose steps price the passes."""

    deployment: Deployment  # one rank's deployment (its nextn sets the decode query multiplier)
    pricer: str = "native"  # one of OP_PRICERS
    seq_scale: float = 1.0  # seq imbalance correction on context attention
    gen_scale: float = 1.0  # gen seq imbalance correction on generation attention
    qk_norm_allreduces: int = 0  # all-reduces per layer of a cross-head q/k norm the pricer's graph omits (EngineSettings'; >= 0)
    moe_backend: str | None = None  # TRT-LLM's MoE backend (EngineSettings'): TRTLLM prices the Moe op at trtllm-gen's curve (moe_kernel)

    @property
    def query_multiplier(self) -> int:
        return self.deployment.nextn + 1


@dataclass(frozen=True)
class TableExtent:
    """The largest shapes a replay can price; every field >= 1."""

    tokens: int  # pass tokens: prefill tokens + decode query tokens
    chunks: int  # prefill chunks in one pass
    chunk: int  # new tokens of one chunk
    start: int  # KV tokens before a chunk
    rows: int  # decode query rows (requests x query multiplier)
    kv: int  # decode KV length

    def rounded(self) -> TableExtent:
        """Each extent up to the next power of two (>= 2), so that similar rows share tables."""
        return TableExtent(*(1 << max(1, int(v - 1).bit_length()) for v in (self.tokens, self.chunks, self.chunk, self.start, self.rows, self.kv)))


def lattice(top: int, exact: int, per_octave: int) -> np.ndarray:
    """Nodes 1..exact, then exact*2**(j/per_octave) rounded, up to the first node >= top."""
    nodes = list(range(1, min(exact, top) + 1))
    j = 1
    while nodes[-1] < top:
        node = round(exact * 2.0 ** (j / per_octave))
        if node > nodes[-1]:
            nodes.append(node)
        j += 1
    return np.array(nodes, dtype=np.float64)


@memo(64)
def engine_tables(model: PassModel, extent: TableExtent) -> PassTables:
    """The price tables of a model over an extent's lattices (pass a rounded extent; exact lattices
    for the native pricer). Each component is held per model at the largest extent requested so
    far (grown by pricing only the new nodes) and sliced: the lattices are nested (a larger top only
    appends nodes) and every node is priced on its own, so a slice equals a table built at the
    smaller extent, bit for bit."""
    (tokens,), shared = _shared(model, extent.tokens)
    (chunks, chunk, starts), chunk_attention = _chunk_attention(model, extent.chunks, extent.chunk, extent.start)
    (attention_rows, kv), decode_attention = _decode_attention(model, extent.rows, extent.kv)
    (rows,), decode_other = _decode_other(model, extent.rows)
    return PassTables(
        token_axis=tokens,
        shared=shared,
        chunk_batch_axis=chunks,
        chunk_new_axis=chunk,
        chunk_start_axis=starts,
        chunk_attention=chunk_attention,
        attention_rows_axis=attention_rows,
        kv_axis=kv,
        decode_attention=decode_attention,
        decode_rows_axis=rows,
        decode_other=decode_other,
    )


def _model_axis(model: PassModel, name: str, top: int) -> np.ndarray:
    exact, per_octave = LATTICES[model.pricer]
    return lattice(top, exact[name], per_octave[name])


class _GrownGrid:
    """A per-model price grid over nested lattices: held at the elementwise maximum of the tops
    requested so far, answered by slicing (each axis up to its first node >= the requested top).
    Growing prices only the nodes outside the held block: the lattices are nested, so the held
    grid is the leading block of the grown one, and every node is priced on its own. A named grid
    starts from its stored copy and stores each growth while the disk store is open (tablecache)."""

    def __init__(self, axes, price, name: str | None = None):
        self.axes = axes  # (model, *tops) -> axes, each a lattice nested in any larger top's
        self.price = price  # (model, nodes float64[n, len(axes)]) -> float64[n], one price per node
        self.name = name  # the component's name in the disk store (None: never stored)
        self.held: dict[PassModel, tuple[tuple[int, ...], tuple[np.ndarray, ...], np.ndarray]] = {}
        register(self.held.clear)  # estimator.caching.clear_caches empties the held grids too

    def __call__(self, model: PassModel, *tops: int) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        held = self.held.get(model)
        if held is None and self.name is not None:
            held = tablecache.load(self.name, model)
        if held is None or any(t > h for t, h in zip(tops, held[0])):
            grown = tops if held is None else tuple(max(t, h) for t, h in zip(tops, held[0]))
            held = (grown, *self.build(model, grown, held))
            if self.name is not None:
                tablecache.store(self.name, model, held)
        if self.held.get(model) is not held:
            self.held.pop(model, None)
            self.held[model] = held
            while len(self.held) > GRIDS_HELD:
                del self.held[next(iter(self.held))]
        _, axes, values = held
        ends = [int(np.searchsorted(axis, top)) + 1 for axis, top in zip(axes, tops)]
        cut = tuple(axis[:end] for axis, end in zip(axes, ends))
        return cut, np.ascontiguousarray(values[tuple(slice(0, end) for end in ends)])

    def build(self, model: PassModel, tops: tuple[int, ...], held=None) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        """(axes, values) at `tops`, reusing a held (tops, axes, values) block when given."""
        axes = self.axes(model, *tops)
        values = np.empty(tuple(len(axis) for axis in axes))
        todo = np.ones(values.shape, dtype=bool)
        if held is not None:
            _, old_axes, old = held
            if not all(np.array_equal(axis[: len(o)], o) for axis, o in zip(axes, old_axes)):
                raise RuntimeError("price grid lattices are not nested")  # the slicing above relies on it
            block = tuple(slice(0, n) for n in old.shape)
            values[block], todo[block] = old, False
        nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
        values[todo] = self.price(model, nodes[todo.ravel()])
        return axes, values


GRIDS_HELD = 128  # models whose grids stay cached, per component


def _shared_axes(model: PassModel, tokens_top: int):
    return (_model_axis(model, "tokens", tokens_top),)


def _price_shared(model: PassModel, nodes: np.ndarray) -> np.ndarray:
    """Context ops except attention, one request of t tokens (nodes: t), and the q/k norm all-reduces."""
    tokens = nodes[:, 0]
    shapes = np.column_stack((np.ones_like(tokens), tokens, np.zeros_like(tokens)))
    return _component_pricers(model).context(shapes, exclude=CONTEXT_KV_OPS) + _omitted_ms(model, tokens)


def _chunk_attention_axes(model: PassModel, chunks_top: int, chunk_top: int, start_top: int):
    starts = np.concatenate(([0.0], _model_axis(model, "chunk", start_top)))
    return _model_axis(model, "chunks", chunks_top), _model_axis(model, "chunk", chunk_top), starts


def _price_chunk_attention(model: PassModel, nodes: np.ndarray) -> np.ndarray:
    """Context attention of (chunks, new tokens, KV start) nodes."""
    return _component_pricers(model).context(nodes, only=CONTEXT_KV_OPS, attention=True)


def _decode_attention_axes(model: PassModel, rows_top: int, kv_top: int):
    return _model_axis(model, "attention_rows", rows_top), _model_axis(model, "kv", kv_top)


def _price_decode_attention(model: PassModel, nodes: np.ndarray) -> np.ndarray:
    """Generation attention of (query rows, KV length) nodes."""
    return _component_pricers(model).generation(nodes, only=GENERATION_KV_OPS, attention=True)


def _decode_other_axes(model: PassModel, rows_top: int):
    return (_model_axis(model, "rows", rows_top),)


def _price_decode_other(model: PassModel, nodes: np.ndarray) -> np.ndarray:
    """Generation ops except attention at query-row nodes, and the q/k norm all-reduces."""
    rows = nodes[:, 0]
    return _component_pricers(model).generation(np.column_stack((rows, np.ones(len(nodes)))), exclude=GENERATION_KV_OPS) + _omitted_ms(model, rows)


def _omitted_ms(model: PassModel, tokens: np.ndarray) -> np.ndarray:
    """What the engine runs per pass of `tokens` tokens beyond the pricer's op graph (the cross-head q/k
    norm all-reduces, estimator.closedloop.qk_norm), ms; none for the SOL roofline, which prices no
    measured kernel."""
    return np.zeros(len(tokens)) if model.pricer == "sol" else qk_norm_ms(model.deployment, model.qk_norm_allreduces, tokens)


_shared = _GrownGrid(_shared_axes, _price_shared, "shared")
_chunk_attention = _GrownGrid(_chunk_attention_axes, _price_chunk_attention, "chunk_attention")
_decode_attention = _GrownGrid(_decode_attention_axes, _price_decode_attention, "decode_attention")
_decode_other = _GrownGrid(_decode_other_axes, _price_decode_other, "decode_other")


@dataclass(frozen=True)
class _ComponentPricers:
    """Prices one step component (a fold of the context or generation op list) at many shapes."""

    full: Pricer  # the deployment's pricer
    attention: Pricer  # the full pricer's view holding the KV-reading ops only (CONTEXT_KV_OPS, GENERATION_KV_OPS)
    model: PassModel
    moe: dict  # phase -> (column of its Moe op in the full pricer, the trtllm-gen pricer), where moe_kernel prices it

    def context(self, shapes: np.ndarray, only: tuple[str, ...] | None = None, exclude: tuple[str, ...] | None = None, attention: bool = False) -> np.ndarray:
        return self._phase("context", shapes, only, exclude, attention)

    def generation(
        self, shapes: np.ndarray, only: tuple[str, ...] | None = None, exclude: tuple[str, ...] | None = None, attention: bool = False
    ) -> np.ndarray:
        return self._phase("generation", shapes, only, exclude, attention)

    def _phase(self, phase: str, shapes: np.ndarray, only: tuple[str, ...] | None, exclude: tuple[str, ...] | None, attention: bool) -> np.ndarray:
        """The fold of a phase's ops at `shapes`: the attention view's, or the full pricer's with its Moe op at the
        launch's trtllm-gen kernels where moe_kernel prices them."""
        pricer = self.attention if attention else self.full
        context = phase == "context"
        many, scale = (pricer.context_many, self.model.seq_scale) if context else (pricer.generation_many, self.model.gen_scale)
        names, sources = (pricer.context_names, pricer.context_sources) if context else (pricer.generation_names, pricer.generation_sources)
        moe = None if attention else self.moe.get(phase)
        lat = _price_tolerant(lambda s: with_trtllm_gen(many(s, scale), s, moe, phase), shapes, len(names))
        return sequential_sum(op_fold(names, sources, only, exclude).apply(lat))


@memo(64)
def _component_pricers(model: PassModel) -> _ComponentPricers:
    """The full pricer, plus a view of it holding the KV-reading ops only, so that the large
    attention grids do not price every op at every node."""
    full = step_pricer(model.pricer, model.deployment)
    moe = {phase: trtllm_gen_column(full, model.deployment, model.moe_backend, phase) for phase in ("context", "generation")}
    return _ComponentPricers(
        full,
        full.restricted(frozenset(CONTEXT_KV_OPS), frozenset(GENERATION_KV_OPS)),
        model,
        {phase: column for phase, column in moe.items() if column is not None},
    )


def _price_tolerant(price, shapes: np.ndarray, n_ops: int) -> np.ndarray:
    """price(shapes) -> float64[n, n_ops], with NaN rows for shapes that have no perf data
    (a failing batch is bisected until the missing shapes are isolated)."""
    if shapes.shape[0] == 0:
        return np.zeros((0, n_ops))
    try:
        return np.asarray(price(shapes), dtype=np.float64)
    except PerfDataMissingError:
        if shapes.shape[0] == 1:
            return np.full((1, n_ops), np.nan)
    half = shapes.shape[0] // 2
    return np.vstack((_price_tolerant(price, shapes[:half], n_ops), _price_tolerant(price, shapes[half:], n_ops)))
