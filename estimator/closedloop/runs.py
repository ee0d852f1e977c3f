"""The typed entry point of the engine-priced replay: a deployment at an operating point, the engine
settings and the client protocol in, a typed result out.

``replay_run(AggRun(...) | DisaggRun(...), settings, protocol)`` is what the report, ``refine``
(its rows converted once at the edge, estimator.closedloop.rows), ``estimate --closed-loop`` and
the refined-SLA sweeps call. Agg runs replay one attention-DP rank at C = ``batch_size`` with the
engine's scheduler settings (``None``: the backend's documented defaults); disagg runs replay the
whole P/D system at C = ``concurrency``: the tandem reads two launch facts from the run (the SGLang
decode workers' receive interval, the prefill workers' overlap scheduler) and no other scheduler
setting, its prefill batches take the framework's eager floor (host.py) and a request's first token
goes out when a decode worker admits it (TandemSpec.first_token_on_admission), a busy TRT-LLM or
SGLang worker one iteration after seeing it (ADMISSION_LAG).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.closedloop.cases import AggCase, Case, TandemCase, replay_case
from estimator.closedloop.engine import PassModel
from estimator.closedloop.host import every_pass_graphed, prefill_floor_ms, sglang_graphs_every_prefill
from estimator.closedloop.moe_kernel import priced_apart
from estimator.closedloop.protocol import Benchmark, Protocol, Steady, parse_protocol
from estimator.closedloop.spec import AggSpec, TandemSpec
from estimator.closedloop.stats import LatencyStats
from estimator.deployment import Backend, Deployment
from estimator.disagg.single import DisaggPoint
from estimator.disagg.workers import DISAGG_ROLES
from estimator.errors import InvalidInputError
from estimator.models.config import is_natively_modelled
from estimator.perf.versions import resolve_version
from estimator.scheduler.agg import AggPoint, decode_tokens_per_iteration
from estimator.scheduler.facts import deployment_facts
from estimator.scheduler.memory import kv_pool_bytes, vllm_kv_pool_bytes
from estimator.scheduler.policies import POLICIES
from estimator.settings import EngineSettings, foreign_setting, kv_running_cap, qk_norm_allreduces, system_defaults


@dataclass(frozen=True)
class AggRun:
    """One agg deployment serving clients at one operating point."""

    deployment: Deployment  # model, system, backend, layout (nextn: its draft depth)
    isl: int  # text input tokens per request, L of the protocol (>= 1)
    osl: int  # output tokens per request, L of the protocol (>= 1)
    batch_size: int  # clients per attention-DP rank, the replayed C (>= 1)
    prefix: int = 0  # cached prefix tokens per request (0 <= prefix < isl + visual_tokens)
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= this <= deployment.nextn)
    visual_tokens: int = 0  # visual context tokens added to every prompt (>= 0)
    encoder_ms: float = 0.0  # encoder time per request, charged in its first chunk's pass, ms (>= 0)
    concurrency: int | None = None  # clients over every rank; None: batch_size x pp x attention_dp

    def __post_init__(self) -> None:
        _require_sizes(self, ("isl", "osl", "batch_size"), ("prefix", "visual_tokens"))
        if self.prefix >= self.isl + self.visual_tokens:
            raise InvalidInputError(f"prefix ({self.prefix}) must be smaller than the effective isl ({self.isl + self.visual_tokens})")

    @property
    def ranks(self) -> float:
        """Ranks running the same replay: concurrency / batch_size (pp x attention_dp by default)."""
        if self.concurrency is None:
            return float(self.deployment.pp * self.deployment.attention_dp)
        return self.concurrency / self.batch_size

    @property
    def tokens_per_decode(self) -> float:
        """Output tokens a decode pass commits per request (1 + accepted drafts)."""
        return decode_tokens_per_iteration(self.deployment.nextn, self.nextn_accepted)


@dataclass(frozen=True)
class DisaggRun:
    """A P/D deployment: prefill and decode workers serving clients at one operating point."""

    prefill: Deployment  # one prefill worker
    decode: Deployment  # one decode worker (nextn: its draft depth)
    isl: int  # text input tokens per request (>= 1)
    osl: int  # output tokens per request (>= 1)
    concurrency: int  # clients over the whole system, the replayed C (>= 1)
    prefill_workers: int  # P (>= 1)
    decode_workers: int  # D (>= 1)
    prefill_batch: int  # prompts per prefill batch of one worker, every attention-DP rank (>= 1)
    decode_batch: int  # requests per decode iteration of one worker, every attention-DP rank (>= 1)
    prefix: int = 0  # cached prefix tokens per request (0 <= prefix < isl)
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= this <= decode.nextn)
    visual_tokens: int = 0  # visual context tokens added to every prompt (>= 0)
    encoder_ms: float = 0.0  # encoder time per prefill batch, on the prefill worker, ms (>= 0)
    decode_recv_interval: int = 1  # SGLang decode workers' --scheduler-recv-interval: a busy one takes requests in every this many passes (>= 1)
    prefill_overlap: bool = True  # the prefill workers run the overlap scheduler (the engines' default; a launch may turn it off)
    prefill_moe_backend: str | None = None  # the prefill workers' TRT-LLM MoE backend (EngineSettings.moe_backend); None: the reference's rule
    prefill_compile_ms: float = 0.0  # inline compile a prefill batch of a token count new to its worker pays (EngineSettings.shape_compile_ms), ms

    def __post_init__(self) -> None:
        _require_sizes(self, ("isl", "osl", "concurrency", "prefill_workers", "decode_workers", "prefill_batch", "decode_batch",
                              "decode_recv_interval"), ("prefix", "visual_tokens"))  # fmt: skip
        if self.decode_recv_interval > 1 and self.decode.backend is not Backend.SGLANG:
            raise InvalidInputError(f"decode_recv_interval is SGLang's --scheduler-recv-interval; backend {self.decode.backend.value!r} has none, "
                                    f"got {self.decode_recv_interval}")  # fmt: skip
        for role in DISAGG_ROLES:  # each worker (field named by its role) prices its role's MoE all-to-all
            object.__setattr__(self, role.value, dataclasses.replace(getattr(self, role.value), role=role))

    @property
    def tokens_per_decode(self) -> float:
        return decode_tokens_per_iteration(self.decode.nextn, self.nextn_accepted)


Run = AggRun | DisaggRun


def agg_run(deployment: Deployment, point: AggPoint) -> AggRun:
    """The run of a closed-form agg operating point (its batch per attention-DP rank)."""
    return AggRun(deployment, point.isl, point.osl, point.batch_size, point.prefix, point.nextn_accepted)


def disagg_run(prefill: Deployment, decode: Deployment, point: DisaggPoint, concurrency: int | None = None,
               decode_recv_interval: int = 1, prefill_overlap: bool = True, prefill_moe_backend: str | None = None,
               prefill_compile_ms: float = 0.0) -> DisaggRun:  # fmt: skip
    """The run of a closed-form disagg operating point at a system concurrency (None: every decode
    worker's batch full, the closed form's concurrency); batches span every attention-DP rank."""
    full = point.decode_batch_size * decode.attention_dp * decode.pp * point.decode_workers
    return DisaggRun(prefill, decode, point.isl, point.osl, concurrency or full, point.prefill_workers, point.decode_workers,
                     point.prefill_batch_size * prefill.attention_dp, point.decode_batch_size * decode.attention_dp, point.prefix,
                     point.nextn_accepted, decode_recv_interval=decode_recv_interval, prefill_overlap=prefill_overlap,
                     prefill_moe_backend=prefill_moe_backend, prefill_compile_ms=prefill_compile_ms)  # fmt: skip


@dataclass(frozen=True)
class Replayed:
    """A run's replay."""

    stats: LatencyStats  # the replay's statistics (agg: one rank), ms
    throughput_rps: float  # system-wide completions per second
    settings: EngineSettings | None  # agg: the settings replayed (after any KV-cache cap); disagg: None
    protocol: str  # "steady" | "benchmark"


def _require_sizes(run: object, positive: tuple[str, ...], non_negative: tuple[str, ...]) -> None:
    for name in positive + non_negative:
        value, minimum = getattr(run, name), 1 if name in positive else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidInputError(f"{name} must be an integer >= {minimum}, got {value!r}")


def replay_run(run: Run, settings: EngineSettings | None = None, protocol: Steady | Benchmark | str = "steady",
               pricer: str = "native", adjust: Callable[[Case], Case] | None = None) -> Replayed:  # fmt: skip
    """The engine-priced closed-loop replay of a run (memoized on every input); `adjust` maps the
    replay case to the one replayed (the report's ablation switches a mechanism off). Raises
    InvalidInputError, NoProgressError, PerfDataMissingError."""
    protocol = parse_protocol(protocol)
    if isinstance(run, DisaggRun):
        if settings is not None:
            raise InvalidInputError("a disagg run's replay reads its launch facts from the run (DisaggRun), not engine settings; pass settings=None")
        case = tandem_engine_case(run, protocol, pricer)
    else:
        case = agg_engine_case(run, settings, protocol, pricer)
    case = adjust(case) if adjust is not None else case
    result = replay_case(case)
    return Replayed(result.stats, result.throughput_rps, case.spec.settings if isinstance(case, AggCase) else None, protocol.name)


def agg_engine_case(run: AggRun, settings: EngineSettings | None, protocol: Protocol, pricer: str) -> AggCase:
    """The engine-priced replay case of an agg run: the settings (None: the backend's defaults at the
    deployment's version) with TRT-LLM's batch waiting dropped under attention DP and its attention-DP
    balance without it (PyExecutor._schedule), vLLM's async scheduling off under pipeline parallelism
    (VLLM_ASYNC_SCHEDULING_FROM), capped by the KV-cache pool where the settings document one (kv_capped); no eager
    prefill floor where SGLang graphs every pass that prefills (host.sglang_graphs_every_prefill)."""
    deployment = run.deployment
    settings = settings or system_defaults(deployment.backend, deployment.system, deployment.version)
    if deployment.backend is Backend.VLLM and deployment.pp > 1:  # async scheduling is off under pipeline parallelism
        settings = settings.replace(overlap_scheduler=False)
    if deployment.attention_dp > 1:
        settings = settings.replace(batch_wait_iters=0, batch_wait_tokens_ratio=0.0)
    else:
        settings = settings.replace(adp_balance_iters=0, adp_batching_wait_iters=0)
    dispatch_ms = dispatch_overhead_ms(deployment, settings)  # the launch's capture size, before any KV-pool cap on max_num_seqs
    settings = kv_capped(settings, deployment, run.batch_size, run.isl, run.visual_tokens, run.osl, protocol)
    spec = AggSpec(
        settings, prefix=run.prefix, decode_budget_tokens=deployment.nextn + 1, tokens_per_decode=run.tokens_per_decode,
        encoder_ms=run.encoder_ms, dispatch_ms=dispatch_ms,
        prefill_floor_ms=0.0 if sglang_graphs_every_prefill(deployment, settings) else prefill_floor_ms(deployment, settings.eager_layer_ms),
    )  # fmt: skip
    model = PassModel(deployment, pricer, qk_norm_allreduces=settings.qk_norm_allreduces, moe_backend=priced_apart(settings.moe_backend))
    return AggCase(run.batch_size, run.ranks, run.isl, run.visual_tokens, run.osl, protocol, spec, model)


# Decode servers that admit a transferred request one iteration after the iteration start that sees it
# (estimator/docs/evidence/disagg-first-token.md Q3): TensorRT-LLM's generation executor schedules a
# request once _check_disagg_gen_transfer_status, at the start of the next iteration, finds its transfer
# complete, and emits its first token then (_handle_first_token_response); SGLang's decode loop through
# 0.5.9 runs the transferred requests as a prebuilt batch and, under overlap, streams their first tokens
# after the next iteration is launched (0.5.10 streams them at once: PR 19568; every SGLang disagg run
# the sample holds is 0.5.8.x, and the tandem reads no engine version yet). vLLM: not read.
ADMISSION_LAG = frozenset({Backend.TRTLLM, Backend.SGLANG})
# P/D routers that send a request to its prefill and its decode worker at once, so the decode worker is chosen at
# dispatch and its intake (pre-allocating the KV, handing the prefill its destination) gates the prefill
# (estimator/docs/evidence/sglang-pd-decode-intake.md): Dynamo 0.8's PrefillRouter bootstrap path spawns the prefill
# in the background and sends the decode request with its bootstrap_info at once; sgl-router's PD mode dispatches
# both in one tokio::join! (sglang issue 22853). The intake interval is the decode workers' --scheduler-recv-interval
# (SchedulerRecvSkipper: decode passes weigh 1, a prebuilt batch 1000).
DECODE_BOUND_AT_DISPATCH = frozenset({Backend.SGLANG})
# Prefill servers whose overlap loop sends a batch's KV only after the next batch is launched: SGLang's
# event_loop_overlap_disagg_prefill runs process_batch_result_disagg_prefill (send_kv_chunk) for the last batch
# after run_batch of the next one, at once when idle (disagg-first-token.md Q3b, sglang-pd-decode-intake.md
# candidate 2; 0.5.8.post1 disaggregation/prefill.py). TRT-LLM's context servers: not read (the recipes set
# disable_overlap_scheduler on them).
PREFILL_OVERLAP = frozenset({Backend.SGLANG})


def tandem_engine_case(run: DisaggRun, protocol: Protocol, pricer: str) -> TandemCase:
    """The engine-priced replay case of a disagg run."""
    spec = TandemSpec(prefill_workers=run.prefill_workers, decode_workers=run.decode_workers, prefill_batch=run.prefill_batch,
                      decode_max_seqs=run.decode_batch, prefix=run.prefix, tokens_per_decode=run.tokens_per_decode,
                      encoder_ms=run.encoder_ms, prefill_floor_ms=prefill_floor_ms(run.prefill, None), prefill_compile_ms=run.prefill_compile_ms,
                      first_token_on_admission=True, admission_lag=run.decode.backend in ADMISSION_LAG,
                      decode_bound_at_dispatch=run.decode.backend in DECODE_BOUND_AT_DISPATCH,
                      decode_intake_interval=run.decode_recv_interval,
                      prefill_overlap=run.prefill_overlap and run.prefill.backend in PREFILL_OVERLAP)  # fmt: skip
    return TandemCase(run.concurrency, run.isl, run.visual_tokens, run.osl, protocol, spec,
                      _worker_model(run.prefill, pricer, run.prefill_moe_backend), _worker_model(run.decode, pricer))  # fmt: skip


def _worker_model(deployment: Deployment, pricer: str, moe_backend: str | None = None) -> PassModel:
    """A disaggregated worker's pass model: its engine's q/k norm all-reduces at the worker's data version,
    a slot alias resolved (a disagg run records no engine version per worker), and its MoE backend."""
    return PassModel(
        deployment,
        pricer,
        qk_norm_allreduces=qk_norm_allreduces(deployment.backend, resolve_version(deployment.system, deployment.backend, deployment.version)),
        moe_backend=priced_apart(moe_backend),
    )


def dispatch_overhead_ms(deployment: Deployment, settings: EngineSettings) -> float:
    """The prefill dispatch overhead the reference's legacy TTFT charges once per request (vLLM: 0.8 ms per
    decoder layer, AIConfigurator PR 1166, fitted to each request's TTFT beyond its kernels; SGLang,
    TRT-LLM: none), ms: the replay charges it as the request's path to the engine, the request path held
    inside it (AggSpec.path_ms: the larger of the two), holding no pass up.
    0 where every pass of the launch replays a CUDA graph (host.every_pass_graphed): no pass is eager."""
    if every_pass_graphed(deployment.backend, settings):
        return 0.0
    return POLICIES[deployment.backend].dispatch_overhead_ms(deployment_facts(deployment).num_layers)


# Output tokens a running request holds KV for, as a share of its output length, by the engine's admission:
# TensorRT-LLM's GUARANTEED_NO_EVICT capacity scheduler admits a request only with room for its whole prompt and
# output; vLLM V1 allocates blocks as tokens arrive (KVCacheManager.allocate_slots) and, when a step cannot get its
# blocks, preempts the newest running request (Scheduler.schedule, RECOMPUTE), so its running requests hold their
# prompts and, at outputs spread evenly through their lengths, half their outputs.
KV_HELD_OUTPUT_SHARE: Mapping[Backend, float] = MappingProxyType({Backend.TRTLLM: 1.0, Backend.VLLM: 0.5})


def kv_capped(settings: EngineSettings, deployment: Deployment, clients: int, isl: int, visual: int, osl: int,
              protocol: Protocol) -> EngineSettings:  # fmt: skip
    """settings with max_num_seqs lowered to the running requests the launch's KV-cache pool (kv_pool)
    holds (kv_running_cap: each holds its prompt and KV_HELD_OUTPUT_SHARE of its output at the protocol's
    mean lengths, text input and output lengths L scaling with the benchmark's range, visual tokens
    not) when that is fewer than the rank's clients and than its cap; settings unchanged otherwise
    or where the settings document no pool."""
    pool = kv_pool(settings, deployment)
    if pool is None:
        return settings
    share = (1.0 + protocol.range_ratio) / 2 if isinstance(protocol, Benchmark) else 1.0  # mean of U[r L, L] over L
    held = share * isl + visual + KV_HELD_OUTPUT_SHARE[deployment.backend] * share * osl
    cap = kv_running_cap(pool, deployment_facts(deployment).kv_bytes_per_sequence, held)
    if cap is None or cap >= min(clients, settings.max_num_seqs or clients):
        return settings
    return settings.replace(max_num_seqs=cap)


def kv_pool_setting(settings: EngineSettings) -> str:
    """The KV-cache memory setting that sizes a launch's pool, as a note names it ("" where none is set)."""
    if settings.gpu_memory_utilization is not None:
        return f"gpu_memory_utilization {settings.gpu_memory_utilization:g} less the weights"
    if settings.kv_free_memory_fraction is not None:
        return f"free_gpu_memory_fraction {settings.kv_free_memory_fraction:g}"
    return ""


def kv_pool(settings: EngineSettings, deployment: Deployment) -> float | None:
    """The KV-cache pool per GPU a launch's settings document, bytes, or None where they document none:
    vLLM's at settings.gpu_memory_utilization (vllm_kv_pool_bytes, an upper bound), TensorRT-LLM's at
    settings.kv_free_memory_fraction (kv_pool_bytes). InvalidInputError for a setting another engine alone
    reads (foreign_setting), or TensorRT-LLM's on an architecture that is not natively modelled: its pool is the small
    difference of the GPU's memory and the memory model's weights, activations and overheads, which
    only the native model derives from the bundled config (the reference's accounting, e.g.
    DeepSeek-R1 FP8 at 166.4 GiB per GPU on TP 4, is not checked against the checkpoints)."""
    backend = deployment.backend
    foreign = foreign_setting(settings, backend)
    if foreign is not None:
        raise InvalidInputError(foreign)
    if backend is Backend.VLLM and settings.gpu_memory_utilization is not None:
        return vllm_kv_pool_bytes(deployment_facts(deployment), settings.gpu_memory_utilization)
    if settings.kv_free_memory_fraction is None:
        return None
    if not is_natively_modelled(deployment.model):
        raise InvalidInputError(f"kv_free_memory_fraction needs the native memory model; {deployment.model!r} is not natively modelled")
    return kv_pool_bytes(deployment_facts(deployment), POLICIES[backend], settings.step_token_budget, settings.kv_free_memory_fraction)
