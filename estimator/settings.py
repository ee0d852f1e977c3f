"""One serving engine's scheduler and launch settings: the single type every layer passes.

``EngineSettings`` is what the closed-loop replay follows, what a measured run's launch recipe
documents and what ``refine`` and the CLI build from flags. Each field states its unit, its
default and where the value is documented (``metadata["doc"]``, also the measurement CSV's column
documentation); ``engine_defaults`` applies each backend's documented defaults in one place.
Engine behaviour behind the fields: ``estimator/docs/engine-settings.md``.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from estimator.deployment import MAX_SIZE, Backend
from estimator.errors import InvalidInputError
from estimator.perf import load_system_spec, names_release, slot_sort_key

GIB = 1 << 30
POINT = "point"  # metadata key: the field is a column of the accuracy report's points table
DEFAULT_ORIGIN = "engine default"  # origin of settings no source documents
SOURCE_ORIGIN = "source"  # origin of settings a source's launch recipe documents


# TensorRT-LLM's moe_config.backend values (tensorrt_llm/llmapi/llm_args.py MoeConfig.backend Literal: CUTLASS, CUTEDSL,
# WIDEEP, TRTLLM, DEEPGEMM, VANILLA, TRITON; AUTO and MEGAMOE_DEEPGEMM in later releases and the srt-slurm recipes)
TRTLLM_MOE_BACKENDS = ("CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "VANILLA", "TRITON", "AUTO", "MEGAMOE_DEEPGEMM")


def _doc(text: str, *, point: bool = False) -> dict[str, Any]:
    return {"doc": text, POINT: point}


@dataclass(frozen=True)
class EngineSettings:
    """One rank's scheduler settings and the launch facts the estimate reads (validated on construction)."""

    step_token_budget: int = field(metadata=_doc(
        "engine tokens per step: prefill tokens plus decode query tokens (vLLM max_num_batched_tokens, SGLang "
        "--chunked-prefill-size, TRT-LLM max_num_tokens), >= 1", point=True))  # fmt: skip
    chunked_prefill: bool = field(metadata=_doc("true: a prompt may be split across steps", point=True))
    max_num_seqs: int | None = field(default=None, metadata=_doc(
        "running requests per rank, >= 1; empty: no cap (derived by the engine from KV capacity)"))  # fmt: skip
    mixed_batches: bool = field(default=True, metadata=_doc(
        "true: a step may carry prefill chunks and decodes together (SGLang: --enable-mixed-chunk, off by default); empty: true"))  # fmt: skip
    stream_interval: int = field(default=1, metadata=_doc(
        "output tokens per streamed chunk after the first token, which goes out at once (SGLang --stream-interval; "
        "TTFT and TPOT do not move); empty: 1", point=True))  # fmt: skip
    recv_interval: int = field(default=1, metadata=_doc(
        "the scheduler takes in new requests only after this many weighted passes since it last did: a decode-only pass "
        "weighs 1, one that prefills PREFILL_RECV_WEIGHT (SGLang --scheduler-recv-interval, SchedulerRecvSkipper); a disagg "
        "row's is its decode workers': a busy one takes requests in every this many passes, and their prefill starts "
        "after that intake (the P/D tandem), >= 1; empty: 1", point=True))  # fmt: skip
    batch_wait_iters: int = field(default=0, metadata=_doc(
        "a prefill that would run beside decoding requests is held, the step only decoding, for up to this many steps "
        "in a row (TRT-LLM batch_wait_timeout_iters, PyExecutor._waiting_requests), >= 0; empty: 0", point=True))  # fmt: skip
    batch_wait_tokens_ratio: float = field(default=0.0, metadata=_doc(
        "a step whose tokens (whole prompts plus decode tokens) reach this share of the token budget is not held "
        "(TRT-LLM batch_wait_max_tokens_ratio), >= 0; empty: 0"))  # fmt: skip
    adp_balance_iters: int = field(default=0, metadata=_doc(
        "under attention DP, a prefill that would run beside decoding requests is held until this many steps have "
        "counted since the last release, a step counting unless every rank holds a prefill (TRT-LLM "
        "attention_dp_config.timeout_iters with enable_balance, PyExecutor._balance_adp_requests), >= 0; empty: 0", point=True))  # fmt: skip
    adp_batching_wait_iters: int = field(default=0, metadata=_doc(
        "under attention DP, when every rank holds a prefill, the prefills wait beside decoding requests for up to this "
        "many steps (TRT-LLM attention_dp_config.batching_wait_iters), >= 0; empty: 0"))  # fmt: skip
    kv_cache_dtype: str | None = field(default=None, metadata=_doc(
        "KV cache dtype the engine was launched with: bfloat16 | fp8 | int8 (TRT-LLM kv_cache_config.dtype, SGLang and vLLM "
        "--kv-cache-dtype; fp8_e4m3 and fp8_e5m2 read as fp8); empty or auto: the engine's auto (served_kv_cache_dtype)"))  # fmt: skip
    nextn: int = field(default=0, metadata=_doc(
        "MTP draft tokens per decode step (TRT-LLM speculative_config num_nextn_predict_layers), >= 0; empty: 0, no "
        "speculation", point=True))  # fmt: skip
    nextn_accepted: float = field(default=0.0, metadata=_doc(
        "accepted draft tokens per decode step, 0 <= this <= nextn, from a cited public figure; empty: 0"))  # fmt: skip
    shape_compile_ms: float = field(default=0.0, metadata=_doc(
        "host JIT compile time of a pass that prefills a token count new to the run (disagg: a prefill batch new to its "
        "worker), ms, >= 0 (SGLang's FLA l2norm kernel before PR 31558, ~90 ms per PR 23448); empty: 0", point=True))  # fmt: skip
    prefix_compile_ms: float = field(default=0.0, metadata=_doc(
        "host JIT compile time the run's first pass that extends a prompt from a cached prefix (a chunk after a prompt's "
        "first, or past a cached prefix) pays once, ms, >= 0 (SGLang's trtllm_mla backend on SM100 plans FlashInfer's "
        "CUTLASS FMHA for the prefix, built with nvcc at first use on images without flashinfer-jit-cache; ~20 s, "
        "sglang issue 7339; agg replay only); empty: 0", point=True))  # fmt: skip
    overlap_scheduler: bool = field(default=True, metadata=_doc(
        "true: the scheduler launches pass n+1 while pass n runs and returns pass n's tokens once that launch is done, so a "
        "host-bound launch overlaps the GPU time of the pass before it (TRT-LLM PyTorch PyExecutor._executor_loop_overlap, on by default since PR 4174; SGLang "
        "event_loop_overlap, on by default; vLLM V1 async scheduling, on by default from 0.14 unless pipeline-parallel); a "
        "disagg row's is its prefill workers': SGLang's launches its next batch while a batch runs, from the requests it holds "
        "once its last launch is done, and sends a batch's KV once that next launch is done (the P/D tandem)",
        point=True))  # fmt: skip
    eager_layer_ms: float | None = field(default=None, metadata=_doc(
        "host launch time per layer an eager pass that prefills runs, ms, >= 0: the pass lasts at least its layers (decoder "
        "layers + the draft-layer forwards of speculative decoding, estimator.closedloop.host.draft_layer_runs) x this; "
        "empty: the framework's published cost for the model's architecture (estimator.closedloop.host: single-request "
        "TTFTs and forward times per framework and architecture, e.g. SGLang DeepSeek-R1 140.76 ms over 61 layers)",
        point=True))  # fmt: skip
    request_path_ms: float = field(default=0.0, metadata=_doc(
        "fixed time on a request's path outside the engine's passes, ms, >= 0: the HTTP server handing the request to the "
        "executor, and the first token's response reaching the client; it adds to every TTFT and delays each client's "
        "next request by as much (TRT-LLM trtllm-serve: ai-dynamo/aisimulate issue 288, 1.3.0rc14, server to executor "
        "2.69 ms + first token to server response 2.04 ms + client minus server 5.24 ms; vLLM: its client's TTFT minus "
        "the server's vllm:time_to_first_token_seconds on the completions endpoint, vllm-project/vllm PR 54628, 8.4 and "
        "12.0 ms, their mean, held inside the reference's dispatch overhead where that is charged: a request's path is the "
        "larger of the two; agg replay only); "
        "0: none published", point=True))  # fmt: skip
    kv_free_memory_fraction: float | None = field(default=None, metadata=_doc(
        "KV-cache share of the memory left after weights and activations (TRT-LLM "
        "kv_cache_config.free_gpu_memory_fraction) of a documented launch, 0 < this <= 1; empty: undocumented. The "
        "closed-loop replay caps running requests by it on natively modelled TRT-LLM agg rows only", point=True))  # fmt: skip
    gpu_memory_utilization: float | None = field(default=None, metadata=_doc(
        "share of each GPU's memory for weights, activations and the KV cache (vLLM --gpu-memory-utilization, 0.9 by "
        "default), 0 < this <= 1; empty: undocumented. The closed-loop replay caps a vLLM agg rank's running requests by "
        "the KV pool it leaves (estimator.closedloop.runs.kv_capped)", point=True))  # fmt: skip
    qk_norm_allreduces: int = field(default=0, metadata=_doc(
        "all-reduces per decoder layer of a q/k RMSNorm that spans every attention head (MiniMax-M2) under attention TP > "
        "1, each of the tokens' sums of squares: vLLM 2 through 0.13, 1 from 0.14.0 (PR 31493); SGLang 2 through 0.5.7, 1 "
        "from 0.5.8 (PR 14416); 0: not replayed (TensorRT-LLM: its code not read). The closed-loop replay adds them to "
        "every pass (estimator.closedloop.qk_norm), >= 0; empty: the engine's count at the run's release"))  # fmt: skip
    moe_backend: str | None = field(default=None, metadata=_doc(
        "TensorRT-LLM's MoE backend (moe_config.backend: " + ", ".join(TRTLLM_MOE_BACKENDS) + "); TRTLLM, the trtllm-gen kernels, "
        "prices the tables' trtllm-gen MoE curve at every token count (nvfp4; B300/GB300 by their SM100-family sibling's "
        "trtllm-gen / CUTLASS ratio); a disagg row's is "
        "its prefill workers'; empty or another backend: the reference's rule (trtllm-gen up to 128 tokens, CUTLASS above)",
        point=True))  # fmt: skip
    cudagraph_max_tokens: int | None = field(default=None, metadata=_doc(
        "largest pass, in tokens, vLLM replays as a CUDA graph (--max-cudagraph-capture-size; a prefill or mixed pass "
        "within it replays a piecewise graph, one above it runs eagerly: CUDAGraphMode FULL_AND_PIECEWISE, "
        "CudagraphDispatcher.dispatch); when the step token budget fits in it every pass is graphed and the replay "
        "charges no eager prefill dispatch, >= 1; empty: vLLM's default min(2 x max_num_seqs, 512)", point=True))  # fmt: skip
    piecewise_cuda_graph: bool | None = field(default=None, metadata=_doc(
        "SGLang piecewise CUDA graphs for passes that prefill: true on, false off (--disable-piecewise-cuda-graph, or a "
        "launch flag that turns them off: --enable-symm-mem, a MoE all-to-all backend, EPLB, torch compile); empty: the "
        "release's default, on from 0.5.10 (SGLang PR 16331). On, an agg launch of a model and layout SGLang graphs "
        "replays each prefill pass within --piecewise-cuda-graph-max-tokens (the chunked prefill size; 2,048 for MLA "
        "models) as a graph, and where that holds every pass the replay charges no eager prefill floor", point=True))  # fmt: skip
    origin: str = field(default=DEFAULT_ORIGIN, compare=False, metadata=_doc(
        "source (documented by the source's launch recipe) | engine default (the source documents nothing)", point=True))  # fmt: skip
    citation: str = field(default="", compare=False, metadata=_doc("public document the engine settings come from"))

    def __post_init__(self) -> None:
        _set(self, "step_token_budget", _integer("step_token_budget", self.step_token_budget, 1))
        for name in ("max_num_seqs", "cudagraph_max_tokens"):
            if getattr(self, name) is not None:
                _set(self, name, _integer(name, getattr(self, name), 1))
        for name, minimum in (("stream_interval", 1), ("recv_interval", 1), ("batch_wait_iters", 0), ("adp_balance_iters", 0),
                              ("adp_batching_wait_iters", 0), ("nextn", 0), ("qk_norm_allreduces", 0)):  # fmt: skip
            _set(self, name, _integer(name, getattr(self, name), minimum))
        for name in ("chunked_prefill", "mixed_batches", "overlap_scheduler"):
            _set(self, name, bool(getattr(self, name)))
        if self.piecewise_cuda_graph is not None:
            _set(self, "piecewise_cuda_graph", _boolean("piecewise_cuda_graph", self.piecewise_cuda_graph))
        for name in ("batch_wait_tokens_ratio", "shape_compile_ms", "prefix_compile_ms", "nextn_accepted", "request_path_ms"):
            _set(self, name, _finite_non_negative(name, getattr(self, name)))
        if self.eager_layer_ms is not None:
            _set(self, "eager_layer_ms", _finite_non_negative("eager_layer_ms", self.eager_layer_ms))
        _set(self, "kv_cache_dtype", _kv_cache_dtype(self.kv_cache_dtype))
        if self.moe_backend is not None and self.moe_backend not in TRTLLM_MOE_BACKENDS:
            raise InvalidInputError(f"moe_backend must be one of {', '.join(TRTLLM_MOE_BACKENDS)} (or empty), got {self.moe_backend!r}")
        if self.nextn_accepted > self.nextn:
            raise InvalidInputError(f"nextn_accepted must be <= nextn ({self.nextn}), got {self.nextn_accepted!r}")
        for name in KV_MEMORY_SETTINGS:
            fraction = getattr(self, name)
            if fraction is not None and (not _is_number(fraction) or not 0.0 < fraction <= 1.0):
                raise InvalidInputError(f"{name} must be within (0, 1], got {fraction!r}")
        if self.origin not in (DEFAULT_ORIGIN, SOURCE_ORIGIN):
            raise InvalidInputError(f"origin must be {SOURCE_ORIGIN!r} or {DEFAULT_ORIGIN!r}, got {self.origin!r}")

    @property
    def batch_waiting(self) -> bool:
        """TRT-LLM's enable_batch_waiting: either batch-wait setting is set."""
        return self.batch_wait_iters > 0 or self.batch_wait_tokens_ratio > 0

    def replace(self, **changes: Any) -> EngineSettings:
        """A copy with `changes` (validated)."""
        return dataclasses.replace(self, **changes)

    def cited(self, citation: str, **changes: Any) -> EngineSettings:
        """A copy with `changes` and `citation` (where they come from) appended to the citation."""
        return self.replace(**changes, citation="; ".join(c for c in (self.citation, citation) if c))


FIELDS: Mapping[str, dataclasses.Field] = MappingProxyType({f.name: f for f in dataclasses.fields(EngineSettings)})
# The KV-cache memory settings and the engine each belongs to (the replay's KV pool: closedloop.runs.kv_pool)
KV_MEMORY_SETTINGS: Mapping[str, Backend] = MappingProxyType({"kv_free_memory_fraction": Backend.TRTLLM, "gpu_memory_utilization": Backend.VLLM})


# Settings one engine alone reads: name -> (that engine, what the setting is); a launch of another engine setting one is refused
ENGINE_OWN_SETTINGS: Mapping[str, tuple[Backend, str]] = MappingProxyType(
    {
        **{name: (owner, "KV-cache setting") for name, owner in KV_MEMORY_SETTINGS.items()},
        "moe_backend": (Backend.TRTLLM, "MoE backend"),
        "cudagraph_max_tokens": (Backend.VLLM, "CUDA-graph capture size"),
        "piecewise_cuda_graph": (Backend.SGLANG, "piecewise CUDA-graph switch"),
    }
)


def foreign_setting(settings: EngineSettings, backend: Backend) -> str | None:
    """The message naming a setting of these settings that another engine than `backend` alone reads, or None."""
    for name, (owner, what) in ENGINE_OWN_SETTINGS.items():
        if getattr(settings, name) is not None and backend is not owner:
            return f"{name} is {owner.value}'s {what}; backend {backend.value!r} has none"
    return None


POINT_FIELDS = tuple(name for name, f in FIELDS.items() if f.metadata[POINT])  # the points table's settings columns, in order


def _set(settings: EngineSettings, name: str, value: Any) -> None:
    object.__setattr__(settings, name, value)


# A launch's KV cache dtype spelling -> the KV quant mode priced (None: the engine's auto). TRT-LLM kv_cache_config.dtype,
# SGLang --kv-cache-dtype (auto, fp8_e4m3, fp8_e5m2, bfloat16) and vLLM --kv-cache-dtype (auto, fp8, fp8_e4m3, fp8_e5m2,
# bfloat16); bf16 and int8 (TRT-LLM) too.
KV_CACHE_DTYPES: Mapping[str, str | None] = MappingProxyType({
    "auto": None, "bfloat16": "bfloat16", "bf16": "bfloat16", "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "int8": "int8",
})  # fmt: skip


def _kv_cache_dtype(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value.lower() not in KV_CACHE_DTYPES:
        raise InvalidInputError(f"kv_cache_dtype must be one of {', '.join(KV_CACHE_DTYPES)} (or empty), got {value!r}")
    return KV_CACHE_DTYPES[value.lower()]


# SGLang's DeepSeek sparse-attention (NSA) architectures: `--kv-cache-dtype auto` serves fp8_e4m3 on SM >= 100 and
# bfloat16 below (ServerArgs._set_default_nsa_kv_cache_dtype: 0.5.9 L1142-1143; 0.5.10.post1 L1430-1434; GLM-5 joined the
# list in 0.5.9, configs/model_config.py L64).
SGLANG_NSA_ARCHITECTURES = frozenset({"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"})


# vLLM resolves `auto` to a ModelOpt checkpoint's declared KV quantization from this release on (resolve_kv_cache_dtype_string,
# engine/arg_utils.py 0.15.1 L1403); before, auto is the model dtype whatever the checkpoint declares.
VLLM_CHECKPOINT_KV_FROM = "0.15.1"


def served_kv_cache_dtype(backend: Backend | str, launched: str | None, checkpoint_kv: str | None, architecture: str | None = None,
                          sm_version: int = 0, engine_version: str | None = None) -> str | None:  # fmt: skip
    """The KV cache dtype a launch runs (a KV quant mode; None: the reference's checkpoint rule).

    `launched` is the launch's own setting (EngineSettings.kv_cache_dtype), which wins. Without one,
    SGLang and vLLM run `--kv-cache-dtype auto`: the KV quantization the checkpoint's quantization
    config declares (`checkpoint_kv`: ModelOpt's kv_cache_quant_algo or kv_cache_scheme; SGLang
    ModelRunner.configure_kv_cache_dtype, 0.5.9 L1670-1688; vLLM from VLLM_CHECKPOINT_KV_FROM, an
    unrecorded `engine_version` read as a later one), SGLang's NSA architectures fp8 on SM >= 100, else the model's
    dtype, bfloat16 for every bundled checkpoint (vLLM CacheConfig.cache_dtype "auto": "will use
    model data type"). TensorRT-LLM's launches keep the reference's rule (an fp8 or fp4
    checkpoint's KV cache is fp8), which InferenceX's scripts set explicitly."""
    if launched is not None:
        return launched
    backend = Backend.parse(backend)
    if backend is Backend.SGLANG and architecture in SGLANG_NSA_ARCHITECTURES and sm_version >= 100:
        return checkpoint_kv or "fp8"
    if backend is Backend.VLLM and released_before(engine_version, VLLM_CHECKPOINT_KV_FROM):
        return "bfloat16"
    if backend in (Backend.SGLANG, Backend.VLLM):
        return checkpoint_kv or "bfloat16"
    return None


def released_before(version: str | None, release: str) -> bool:
    """True when `version` names a release (a.b...) older than `release`; False for None or a build without one (a nightly)."""
    return names_release(version) and slot_sort_key(version) < slot_sort_key(release)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _boolean(name: str, value: Any) -> bool:
    """value as a Python bool (numpy booleans accepted); InvalidInputError for anything else (a string or a number is not one)."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise InvalidInputError(f"{name} must be true or false, got {value!r}")
    return bool(value)


def _finite_non_negative(name: str, value: Any) -> float:
    if not _is_number(value) or not 0.0 <= value < math.inf:
        raise InvalidInputError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


def _integer(name: str, value: Any, minimum: int) -> int:
    """value as a Python int (numpy integers accepted); InvalidInputError unless it is an integer in
    [minimum, MAX_SIZE] (the kernels hold every setting in int64 arithmetic)."""
    try:
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None or number < minimum:
        wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise InvalidInputError(f"{name} must be {wanted}, got {value!r}")
    if number > MAX_SIZE:
        raise InvalidInputError(f"{name} must be at most {MAX_SIZE}, got {number}")
    return number


ENGINE_DEFAULT_CITATIONS: Mapping[Backend, str] = MappingProxyType(
    {
        Backend.VLLM: (
            "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (OpenAI API server; V1 chunks prefill by default); "
            "vllm/config/scheduler.py SchedulerConfig.async_scheduling (on by default from 0.14.0, False through 0.13); "
            "vllm/config/cache.py CacheConfig.gpu_memory_utilization 0.9"
        ),  # fmt: skip
        Backend.SGLANG: (
            "sglang/srt/server_args.py ServerArgs: chunked_prefill_size by GPU memory; max_running_requests from the KV "
            "pool; enable_mixed_chunk False (a step prefills or decodes)"
        ),  # fmt: skip
        Backend.TRTLLM: "tensorrt_llm/llmapi/llm_args.py: max_num_tokens 8192, max_batch_size 2048, enable_chunked_prefill False",
    }
)


# SGLang's FLA l2norm Triton kernel declares the token count T a tl.constexpr (builds before PR 31558, merged 2026-07-17), so a
# pass that prefills a token count new to the process compiles it inline: SGLang PR 23448, "~90 ms each" (shape_compile_ms)
SGLANG_SHAPE_COMPILE_MS = 90.0

# fixed request-path time outside the passes, ms, by serving front end
TRTLLM_REQUEST_PATH_MS = 2.6915 + 2.0356 + 5.2418  # ai-dynamo/aisimulate issue 288: trtllm-serve 1.3.0rc14 TTFT split (means)
# vllm-project/vllm PR 54628 (vLLM 0.28.1rc1, RTX 4070 laptop under WSL2, Qwen2.5-0.5B, random 512/128, concurrency 8): the
# client's mean TTFT minus the server's vllm:time_to_first_token_seconds (arrival at the API server to the first token) on
# the completions endpoint InferenceX's client calls ("openai" backend): +8.4 ms and +12.0 ms in its two rounds
VLLM_REQUEST_PATH_MS = (8.4 + 12.0) / 2


# vLLM V1 schedules asynchronously (overlap: step n's outputs return after step n+1 is scheduled and submitted,
# EngineCore.step_with_batch_queue) by default from this release: SchedulerConfig.async_scheduling None -> on unless an
# option is incompatible (pipeline parallelism among them; vllm/config/vllm.py 0.14.0 L588-632); False through 0.13.x
# (scheduler.py 0.13.0 L133). estimator/docs/evidence/first-token-path.md section 1c.
VLLM_ASYNC_SCHEDULING_FROM = "0.14.0"

# The engine releases from which MiniMax-M2's q and k sums of squares are all-reduced together, one all-reduce per layer
# (forward_qk); each had its own before (estimator.closedloop.qk_norm). vLLM PR 31493: 0.13.0 wheel two, 0.14.0 one;
# SGLang PR 14416: 0.5.7 wheel two, 0.5.8.post1 one.
QK_NORM_FUSED_FROM: Mapping[Backend, str] = MappingProxyType({Backend.VLLM: "0.14.0", Backend.SGLANG: "0.5.8"})

# SGLang turns piecewise CUDA graphs on by default from this release (PR 16331, merged 2026-03-02, first in v0.5.10rc0;
# ServerArgs.disable_piecewise_cuda_graph False, _handle_piecewise_cuda_graph; 0.5.9: enable_piecewise_cuda_graph False)
SGLANG_PIECEWISE_FROM = "0.5.10"

# vLLM's default share of GPU memory for weights, activations and KV cache (CacheConfig.gpu_memory_utilization)
VLLM_GPU_MEMORY_UTILIZATION = 0.9


def engine_defaults(backend: Backend | str, system: str, gpu_memory_bytes: int, version: str | None = None) -> EngineSettings:
    """The serving engine's documented default settings on a GPU with gpu_memory_bytes of memory, for the
    engine `version` (None: not recorded, read as a current release):

    * vLLM V1 (``vllm serve``): budget 8192 and 1024 running requests on GPUs of at least 70 GiB
      that are not A100s, else 2048 and 256; chunked prefill on; async scheduling (overlap) from
      VLLM_ASYNC_SCHEDULING_FROM, none before; 0.9 of GPU memory for weights, activations and KV;
      MiniMax-M2's q/k norm all-reduces per layer by release (qk_norm_allreduces; SGLang likewise);
      the API server's request path (VLLM_REQUEST_PATH_MS), held inside the reference's dispatch
      overhead where that is charged (AggSpec.path_ms);
    * SGLang: ``--chunked-prefill-size`` by GPU memory (sglang_chunked_prefill_size), chunked, no
      running cap (KV-derived), no mixed chunks; overlap schedule on; eager prefill passes at the
      published per-architecture cost, except where the piecewise CUDA graphs a release from 0.5.10
      turns on hold every one (piecewise_cuda_graph empty: the release's default; host.sglang_graphs_every_prefill);
    * TensorRT-LLM: ``max_num_tokens`` 8192, ``max_batch_size`` 2048, chunked prefill off; overlap
      scheduler on; eager context passes at the published per-architecture cost; trtllm-serve's
      fixed request path (TRTLLM_REQUEST_PATH_MS).
    """
    backend = Backend.parse(backend)
    large = gpu_memory_bytes >= 70 * GIB and "a100" not in system.lower()
    citation = ENGINE_DEFAULT_CITATIONS[backend]
    if backend is Backend.VLLM:
        overlap = not released_before(version, VLLM_ASYNC_SCHEDULING_FROM)
        return EngineSettings(8192 if large else 2048, True, 1024 if large else 256, overlap_scheduler=overlap, eager_layer_ms=0.0,
                              request_path_ms=VLLM_REQUEST_PATH_MS, gpu_memory_utilization=VLLM_GPU_MEMORY_UTILIZATION,
                              qk_norm_allreduces=qk_norm_allreduces(backend, version), citation=citation)  # fmt: skip
    if backend is Backend.SGLANG:
        return EngineSettings(sglang_chunked_prefill_size(gpu_memory_bytes), True, None, mixed_batches=False,
                              qk_norm_allreduces=qk_norm_allreduces(backend, version), citation=citation)  # fmt: skip
    return EngineSettings(8192, False, 2048, request_path_ms=TRTLLM_REQUEST_PATH_MS, citation=citation)


def qk_norm_allreduces(backend: Backend, version: str | None) -> int:
    """All-reduces per layer of the engine's cross-head q/k RMSNorm (EngineSettings.qk_norm_allreduces) at `version`
    (None or a nightly: a current build): 1 from QK_NORM_FUSED_FROM, 2 before; 0 for an engine not in it."""
    if backend not in QK_NORM_FUSED_FROM:
        return 0
    return 2 if released_before(version, QK_NORM_FUSED_FROM[backend]) else 1


def system_defaults(backend: Backend | str, system: str, version: str | None = None) -> EngineSettings:
    """engine_defaults on the named system's GPU (its memory from the system spec) for the engine version."""
    return engine_defaults(backend, system, load_system_spec(system).mem_capacity, version)


def sglang_chunked_prefill_size(gpu_memory_bytes: int) -> int:
    """SGLang's default --chunked-prefill-size for a GPU of that memory (ServerArgs): 2048 below 35 GiB,
    4096 below 60 GiB, 8192 below 160 GiB (H100, H200), 16384 above (B200, B300)."""
    for limit_gib, size in ((35, 2048), (60, 4096), (160, 8192)):
        if gpu_memory_bytes < limit_gib * GIB:
            return size
    return 16384


def reference_settings(ctx_tokens: int) -> EngineSettings:
    """The reference wiring (closed-loop.md section 1): the row's ctx_tokens as the budget, chunking on, no sequence cap,
    passes returned as they end (no overlap scheduling)."""
    return EngineSettings(int(ctx_tokens), True, None, overlap_scheduler=False)


def kv_running_cap(pool_bytes: float, kv_bytes_per_sequence: Callable[[int], float], held_tokens: float) -> int | None:
    """The running requests a KV-cache pool of pool_bytes per GPU holds when each holds held_tokens
    tokens (>= 1; rounded up), at least 1; None when the memory model leaves no pool (it is then no
    evidence of a limit)."""
    if not pool_bytes > 0:
        return None
    return max(1, int(pool_bytes // kv_bytes_per_sequence(math.ceil(held_tokens))))
