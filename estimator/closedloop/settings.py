"""Engine scheduler settings the agg replay follows, with each backend's documented defaults.

* vLLM (V1 engine, ``vllm serve``): ``max_num_batched_tokens`` 8192 and ``max_num_seqs`` 1024 on
  GPUs with at least 70 GiB that are not A100s, else 2048 and 256
  (``EngineArgs.get_batch_defaults``, usage context OPENAI_API_SERVER); chunked prefill is on by
  default for generative models.
* SGLang: ``--chunked-prefill-size`` by GPU memory (``ServerArgs``): 2048 below 35 GiB, 4096 below
  60 GiB, 8192 below 160 GiB (H100, H200), 16384 above (B200, B300); chunking is on whenever the
  size is positive. ``--max-running-requests`` defaults to a KV-capacity-derived value, so the
  replay sets no cap. ``--enable-mixed-chunk`` is off by default: a step either prefills (new
  prompts first) or decodes, so running decodes pause while prompts are prefilled.
* TensorRT-LLM (``trtllm-serve`` / LLM API): ``max_num_tokens`` 8192, ``max_batch_size`` 2048,
  ``enable_chunked_prefill`` False (aiconfigurator models the same 8192 token budget).

Streaming does not move the client's TTFT or TPOT: SGLang with ``--stream-interval s > 1`` sends a
request's output at its tokens 1, 1 + s, 1 + 2s, ... and at the finish (``len(output_ids) % s == 1``
in 0.5.6 and 0.5.9's ``scheduler_output_processor_mixin``), so the first token goes out at once and
the last with the finish.

SGLang's ``--scheduler-recv-interval n`` (``SchedulerRecvSkipper``) makes the scheduler take in
new requests only when a weighted count of the passes since it last did reaches n: a decode-only
pass weighs 1, any pass that prefills weighs 1000 (so the next loop receives), and an idle
scheduler loops without passes until it receives. A request that arrives while decodes run waits
up to n decode passes before it can be prefilled. Every other engine receives before every pass
(interval 1).

TensorRT-LLM's batch waiting (``batch_wait_timeout_iters`` / ``batch_wait_max_tokens_ratio``,
``PyExecutor._waiting_requests``; off unless either is set) holds the context requests of a pass
that also carries generation requests, so that the pass only decodes, until the held passes since
the last release reach ``batch_wait_timeout_iters`` or the pass's tokens (each context request's
whole prompt plus each decoder's query tokens) reach ``batch_wait_max_tokens_ratio`` x
``max_num_tokens``; a pass without decoders is never held. With the ratio at 0 the token test
always passes, so a timeout alone holds nothing.

TensorRT-LLM's attention-DP balance (``attention_dp_config`` with ``enable_balance``,
``PyExecutor._balance_adp_requests``; only under attention DP, where batch waiting is off) gathers
every rank's queue each pass. While some rank holds no prefill, every pass counts and prefills
wait until the count reaches ``timeout_iters``; when every rank holds one, the count restarts and,
beside decoders, the prefills wait up to ``batching_wait_iters`` passes; a pass without decoders
is never held. The replay follows one rank: a backlog left at a release stands for every rank
holding a prefill (``adp_balance_iters``, ``adp_batching_wait_iters``).

SGLang runs every prefill (extend) pass eagerly for the sample's runs: piecewise CUDA graphs, its
only prefill graphs, are opt-in through v0.5.9 (``enable_piecewise_cuda_graph`` False; default on
from main of 2026-03-02, PR 16331), and v0.5.10 turns them off for GlmMoeDsaForCausalLM (blocked
architecture), Qwen3.5 (multimodal), DeepSeek on Blackwell (its ``flashinfer_trtllm`` MoE
backend), speculative decoding and attention DP; decode passes replay CUDA graphs. An eager
forward is host-bound while its GPU work takes less than its kernel launches: SGLang PR 12160 logs
a DeepSeek-V3 prefill of 1 new token at 82.64 ms eager against 23.10 ms in a captured graph, and
an eager forward stays at that floor as its tokens grow until its GPU work exceeds it (sfllm PR
46, Qwen3-4B: 16.6 ms eager at 129 tokens and 16.4 ms at 513, against 5.7 and 13.7 ms in
graphs). The replay prices a pass that prefills at least at its architecture's eager forward time
(``eager_prefill_floor_ms``, per decoder layer of the measured model), for the architectures
with a measurement, in the agg replay only (the P/D tandem's prefill workers, like its dispatch
overhead, carry none); v0.5.10's graphed DeepSeek FP8 prefills of up to 2048 tokens on Hopper are
not followed. PR 12160 names no GPU; the floor is the host's and is applied on every system.
TensorRT-LLM also runs context passes eagerly (CUDA graphs only for generation-only batches
unless ``torch_compile_config.enable_piecewise_cuda_graph``) but has no published eager forward
time, so it has no floor.

SGLang builds before its PR 31558 (merged 2026-07-17; the code read in the 0.5.9, 0.5.10 and
0.5.10.post1 wheels) declare the token count ``T`` of the FLA ``l2norm_fwd_kernel`` a Triton
``tl.constexpr``. The gated-delta-net (linear attention) layers call it on q and k in every extend
(prefill) forward, with ``T`` = the extend's tokens x local heads, so the first pass with a token
count the process has not run before compiles a new kernel variant inline, on the scheduler's
critical path; decode passes replay CUDA graphs and do not. PR 23448 measures the compile at ~90
ms (``SHAPE_COMPILE_MS``); PR 30403 logs bursts of up to ~110 ms under serving load. The replay
charges it to a pass that prefills when its tokens (prefill tokens plus decode query tokens of a
mixed pass) are new to the run (``EngineSettings.shape_compile_ms``, agg replay only); the
benchmark client's warm-up requests (copies of the run's first prompt) are not replayed, so the
few token counts they compiled are counted again. Which runs carry it is decided from what the
run's measurement records (measurements.protocols.shape_compile_ms).

TensorRT-LLM's default capacity policy (``GUARANTEED_NO_EVICT``) admits a request only when the
KV-cache pool has room for its whole prompt and output, so the pool caps the running requests:
with ``kv_free_memory_fraction`` (``kv_cache_config.free_gpu_memory_fraction``) set, the
engine-priced replay caps ``max_num_seqs`` at what that share of the memory the memory model leaves
holds at the protocol's mean lengths (``kv_running_cap``, rows.kv_capped). It is set only from a
documented launch (a recipe that sets no fraction launches at TRT-LLM's default 0.9); the engine
defaults carry none, since an undocumented launch leaves the KV dtype and pool unknown. Only the
natively modelled architectures, whose weights the native model derives from the bundled config,
take it; the others raise InvalidInputError. vLLM and SGLang admit on the prompt alone and preempt
or retract later, after the first token; that dynamic is not replayed and they get no cap.

The reference wiring (``row`` pricing of closed-loop.md section 1) instead replays with the row's
``ctx_tokens`` as the budget, chunking on and no sequence cap.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Callable

from estimator.deployment import Backend
from estimator.errors import InvalidInputError

GIB = 1 << 30
PREFILL_RECV_WEIGHT = 1000  # SGLang SchedulerRecvSkipper: weight of a pass that is not decode-only


@dataclass(frozen=True)
class EngineSettings:
    """One rank's scheduler settings."""

    budget: int  # tokens per step: prefill tokens plus decode query tokens (>= 1)
    chunked: bool  # chunked prefill: a prompt may be split across steps
    max_num_seqs: int | None = None  # running requests per rank (>= 1); None: no cap
    mixed: bool = True  # a pass may carry prefill chunks and decoders together (SGLang: only with --enable-mixed-chunk)
    recv_interval: int = 1  # weighted passes between intakes of new requests (SGLang --scheduler-recv-interval; >= 1)
    batch_wait_iters: int = 0  # TRT-LLM batch_wait_timeout_iters: passes a prefill may be held while decodes run (>= 0)
    batch_wait_tokens_ratio: float = 0.0  # TRT-LLM batch_wait_max_tokens_ratio: a pass with this share of the budget is not held (>= 0)
    adp_balance_iters: int = 0  # TRT-LLM attention_dp_config.timeout_iters under enable_balance: counted passes before held prefills go (>= 0; 0: off; not with batch waiting)
    adp_batching_wait_iters: int = 0  # TRT-LLM attention_dp_config.batching_wait_iters: passes prefills on every rank wait beside decodes (>= 0)
    shape_compile_ms: float = 0.0  # host JIT compile time of a pass that prefills a token count new to the run (SGLang FLA l2norm before PR 31558), ms (>= 0)
    kv_free_memory_fraction: float | None = None  # TRT-LLM kv_cache_config.free_gpu_memory_fraction of a documented launch: running requests capped by the KV pool (0 < this <= 1); None: no KV cap

    def __post_init__(self) -> None:
        object.__setattr__(self, "budget", _positive("token budget", self.budget))
        object.__setattr__(self, "chunked", bool(self.chunked))
        if self.max_num_seqs is not None:
            object.__setattr__(self, "max_num_seqs", _positive("max_num_seqs", self.max_num_seqs))
        object.__setattr__(self, "mixed", bool(self.mixed))
        object.__setattr__(self, "recv_interval", _positive("recv_interval", self.recv_interval))
        object.__setattr__(self, "batch_wait_iters", _integer("batch_wait_iters", self.batch_wait_iters, 0))
        object.__setattr__(self, "adp_balance_iters", _integer("adp_balance_iters", self.adp_balance_iters, 0))
        object.__setattr__(self, "adp_batching_wait_iters", _integer("adp_batching_wait_iters", self.adp_batching_wait_iters, 0))
        fraction = self.kv_free_memory_fraction
        if fraction is not None and (isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 < fraction <= 1.0):
            raise InvalidInputError(f"kv_free_memory_fraction must be within (0, 1], got {fraction!r}")
        for name in ("batch_wait_tokens_ratio", "shape_compile_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < float("inf"):
                raise InvalidInputError(f"{name} must be a finite number >= 0, got {value!r}")

    @property
    def batch_waiting(self) -> bool:
        """TRT-LLM's enable_batch_waiting: either batch-wait setting is set."""
        return self.batch_wait_iters > 0 or self.batch_wait_tokens_ratio > 0


def _positive(name: str, value) -> int:
    """value as a Python int (numpy integers accepted); InvalidInputError unless it is an integer >= 1."""
    return _integer(name, value, 1)


def _integer(name: str, value, minimum: int) -> int:
    """value as a Python int (numpy integers accepted); InvalidInputError unless it is an integer >= minimum."""
    try:
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None or number < minimum:
        wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise InvalidInputError(f"{name} must be {wanted}, got {value!r}")
    return number


def engine_defaults(backend: Backend | str, system: str, gpu_memory_bytes: int) -> EngineSettings:
    """The serving engine's default scheduler settings on a GPU with gpu_memory_bytes of memory."""
    backend = Backend.parse(backend)
    large = gpu_memory_bytes >= 70 * GIB and "a100" not in system.lower()
    if backend is Backend.VLLM:
        return EngineSettings(8192 if large else 2048, True, 1024 if large else 256)
    if backend is Backend.SGLANG:
        return EngineSettings(sglang_chunked_prefill_size(gpu_memory_bytes), True, None, mixed=False)
    return EngineSettings(8192, False, 2048)


def sglang_chunked_prefill_size(gpu_memory_bytes: int) -> int:
    """SGLang's default --chunked-prefill-size for a GPU of that memory."""
    for limit_gib, size in ((35, 2048), (60, 4096), (160, 8192)):
        if gpu_memory_bytes < limit_gib * GIB:
            return size
    return 16384


# (backend, HF architecture) -> (eager forward time of a 1-token prefill, ms; decoder layers of the measured model)
EAGER_FORWARD_MS = {(Backend.SGLANG, "DeepseekV3ForCausalLM"): (82.64, 61)}  # SGLang PR 12160 (DeepSeek-V3)


def eager_prefill_floor_ms(backend: Backend | str, architecture: str | None, num_layers: int) -> float:
    """The host-bound floor of an eager pass that prefills on this engine, ms: the measured eager
    forward time of the architecture, per decoder layer of the measured model; 0 where none is
    published."""
    measured = EAGER_FORWARD_MS.get((Backend.parse(backend), architecture))
    return measured[0] * num_layers / measured[1] if measured else 0.0


SHAPE_COMPILE_MS = 90.0  # one Triton compile of the FLA l2norm kernel, ms (SGLang PR 23448: "~90 ms each")
SHAPE_COMPILE_FIXED = "2026-07-17"  # SGLang PR 31558 merged: T no longer specialized


def kv_running_cap(pool_bytes: float, kv_bytes_per_sequence: Callable[[int], float], mean_isl: float, mean_osl: float) -> int | None:
    """The running requests TensorRT-LLM's default capacity policy (``GUARANTEED_NO_EVICT``: a request
    is admitted only with room for its whole prompt and output) holds in a KV-cache pool of pool_bytes
    per GPU at mean lengths of mean_isl and mean_osl tokens (>= 1); None when the memory model leaves
    no pool (it is then no evidence of a limit)."""
    if not pool_bytes > 0:
        return None
    return max(1, int(pool_bytes // kv_bytes_per_sequence(math.ceil(mean_isl + mean_osl))))


def reference_settings(ctx_tokens: int) -> EngineSettings:
    """The reference wiring: the row's ctx_tokens as the budget, chunking on, no sequence cap."""
    return EngineSettings(int(ctx_tokens), True, None)
