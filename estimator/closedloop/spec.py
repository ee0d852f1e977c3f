"""The facts a replay runs on besides its run plan and pass pricer, and how a replay can fail."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimator.closedloop.protocol import RunPlan
from estimator.errors import EstimatorError, InvalidInputError
from estimator.settings import EngineSettings

# Request-passes one replay may simulate (each request's prefill chunks plus output tokens, summed
# over the requests it holds): 2**32, about 20 minutes at the measured 0.2-0.3 us each (a steady
# replay at C = 100,000 with osl 1,000 is 1e9 of them and ran 231 s on the shared 2 cores), 16 times
# the largest measured run's.
MAX_REPLAY_WORK = 2**32
MAX_REPLAY_WORKERS = 2**16  # prefill or decode workers one tandem replay holds state for (a sweep's default cap is 32)
PREFILL_RECV_WEIGHT = 1000  # SGLang SchedulerRecvSkipper: weight of a pass that is not decode-only (EngineSettings.recv_interval)


class NoProgressError(EstimatorError):
    """The configuration cannot make progress (for example a prompt larger than the token budget
    with chunked prefill off); detected and reported, never looped on."""


# Packed kernel parameters: a run's integer facts in one int64 array and its times and ratios in one
# float64 array, read by slot (AggSpec.pack, TandemSpec.pack) instead of a long positional list.
(A_CLIENTS, A_WARM, A_STOP, A_CAP, A_PREFIX, A_BUDGET, A_CHUNKED, A_MAX_SEQS, A_MIXED, A_RECV_INTERVAL, A_WAIT_ITERS,
 A_ADP_TIMEOUT, A_ADP_BATCHING_WAIT, A_DECODE_BUDGET, A_BOUND, A_REQUESTS, A_OVERLAP, N_AGG_INTS) = range(18)  # fmt: skip
(AF_WAIT_RATIO, AF_K, AF_TURNAROUND, AF_ENCODER, AF_PREFILL_FLOOR, AF_COMPILE, AF_PATH, AF_PREFIX_COMPILE, AF_BURST_STEP, N_AGG_FLOATS) = range(10)
(T_CLIENTS, T_WARM, T_STOP, T_CAP, T_PREFIX, T_PREFILL_WORKERS, T_DECODE_WORKERS, T_PREFILL_BATCH, T_DECODE_MAX, T_BOUND,
 T_REQUESTS, T_ADMIT, T_LAG, T_DECODE_AT_DISPATCH, T_INTAKE_INTERVAL, T_PREFILL_OVERLAP, N_TANDEM_INTS) = range(17)  # fmt: skip
(TF_K, TF_TURNAROUND, TF_HANDOFF, TF_ENCODER, TF_PREFILL_FLOOR, TF_PREFILL_COMPILE, TF_BURST_STEP, N_TANDEM_FLOATS) = range(8)

STALLED_MESSAGE = "stalled: no schedulable work"
NONFINITE_MESSAGE = "a pass price is not finite (a step without perf data, or a non-finite step time)"
LIMIT_MESSAGE = "did not converge within the pass bound"


@dataclass(frozen=True)
class AggSpec:
    """One rank's continuous-batching engine and the requests' fixed facts."""

    settings: EngineSettings  # token budget, chunked prefill, max_num_seqs
    prefix: int = 0  # cached prefix tokens per request, part of every input (0 <= prefix < isl)
    decode_budget_tokens: int = 1  # budget tokens a decoding request takes per pass (nextn + 1, >= 1)
    tokens_per_decode: float = 1.0  # k: output tokens per decode pass per request (1 + accepted drafts, >= 1)
    turnaround_ms: float = 0.0  # client time between a completion and the next dispatch, ms (>= 0)
    encoder_ms: float = 0.0  # encoder GPU time per request, charged in its first chunk's pass, ms (>= 0)
    dispatch_ms: float = 0.0  # the reference's prefill dispatch overhead per request, holding its path to the engine (path_ms), ms (>= 0)
    prefill_floor_ms: float = 0.0  # host launch time of an eager pass that prefills: it lasts at least this long, ms (>= 0)

    def __post_init__(self) -> None:
        _require(self.prefix >= 0, f"prefix must be >= 0, got {self.prefix}")
        _require(self.decode_budget_tokens >= 1, f"decode_budget_tokens must be >= 1, got {self.decode_budget_tokens}")
        _require_progress(self.tokens_per_decode)
        _require_time("turnaround_ms", self.turnaround_ms)
        _require_time("encoder_ms", self.encoder_ms)
        _require_time("dispatch_ms", self.dispatch_ms)
        _require_time("prefill_floor_ms", self.prefill_floor_ms)

    def pack(self, plan: RunPlan) -> tuple[np.ndarray, np.ndarray]:
        """(ints, floats): the agg calendar's parameters by slot (A_*, AF_*)."""
        s = self.settings
        ints = np.zeros(N_AGG_INTS, dtype=np.int64)
        ints[[A_CLIENTS, A_WARM, A_STOP, A_CAP, A_PREFIX, A_BUDGET, A_CHUNKED, A_MAX_SEQS, A_MIXED, A_RECV_INTERVAL, A_WAIT_ITERS,
              A_ADP_TIMEOUT, A_ADP_BATCHING_WAIT, A_DECODE_BUDGET, A_BOUND, A_REQUESTS, A_OVERLAP]] = (
            plan.clients, plan.warm, plan.stop, plan.dispatch_cap, self.prefix, s.step_token_budget, s.chunked_prefill,
            s.max_num_seqs or plan.clients, s.mixed_batches, s.recv_interval, s.batch_wait_iters, s.adp_balance_iters,
            s.adp_batching_wait_iters, self.decode_budget_tokens, agg_pass_bound(plan, self.prefix), request_bound(plan),
            s.overlap_scheduler,
        )  # fmt: skip
        floats = np.zeros(N_AGG_FLOATS)
        floats[[AF_WAIT_RATIO, AF_K, AF_TURNAROUND, AF_ENCODER, AF_PREFILL_FLOOR, AF_COMPILE, AF_PATH, AF_PREFIX_COMPILE, AF_BURST_STEP]] = (
            s.batch_wait_tokens_ratio, self.tokens_per_decode, self.turnaround_ms, self.encoder_ms, self.prefill_floor_ms,
            s.shape_compile_ms, self.path_ms, s.prefix_compile_ms, plan.burst_step_ms,
        )  # fmt: skip
        return ints, floats

    @property
    def path_ms(self) -> float:
        """Time from a request's dispatch to the engine seeing it, ms: the larger of the reference's per-request prefill
        dispatch overhead (AIConfigurator's legacy TTFT charges it once per request: PR 1166 fits it to each request's
        whole TTFT beyond its kernels, the HTTP path and tokenization included, so it holds no pass up and holds the
        request path) and the settings' request path."""
        return max(self.dispatch_ms, self.settings.request_path_ms)

    def check(self, plan: RunPlan) -> None:
        """Raise InvalidInputError for a prefix not below every input or for batch waiting set
        beside the attention-DP balance, NoProgressError for a configuration that can never
        schedule some request."""
        _require_prefix(self.prefix, plan)
        budget = self.settings.step_token_budget
        largest = int(plan.isl.max()) - self.prefix
        _require_work(plan, -(-largest // budget) + int(plan.osl.max()))
        if not self.settings.chunked_prefill and largest > budget:
            raise NoProgressError(f"stalled: a prompt of {largest} uncached tokens exceeds the token budget {budget} and chunked prefill is off")
        if self.decode_budget_tokens > budget:
            raise NoProgressError(f"stalled: a decode step needs {self.decode_budget_tokens} budget tokens, the budget is {budget}")
        if self.settings.batch_waiting and self.settings.adp_balance_iters:
            raise InvalidInputError(
                "batch waiting and the attention-DP balance exclude each other (TRT-LLM applies the balance under attention DP, "
                f"batch waiting without): got batch_wait_iters {self.settings.batch_wait_iters}, batch_wait_tokens_ratio "
                f"{self.settings.batch_wait_tokens_ratio} and adp_balance_iters {self.settings.adp_balance_iters}"
            )


@dataclass(frozen=True)
class TandemSpec:
    """A P/D deployment: prefill and decode workers and the hand-off between them."""

    prefill_workers: int  # P (>= 1)
    decode_workers: int  # D (>= 1)
    prefill_batch: int = 1  # prompts per prefill batch, whole prompts only (>= 1)
    decode_max_seqs: int = 256  # requests per decode iteration per worker (>= 1)
    prefix: int = 0  # cached prefix tokens per request (0 <= prefix < isl)
    tokens_per_decode: float = 1.0  # k: output tokens per decode iteration per request (>= 1)
    turnaround_ms: float = 0.0  # client time between a completion and the next dispatch, ms (>= 0)
    handoff_ms: float = 0.0  # KV transfer: first token visible and decode eligible at prefill end + handoff, ms (>= 0)
    encoder_ms: float = 0.0  # encoder time per prefill batch, on the prefill worker, ms (>= 0)
    prefill_floor_ms: float = 0.0  # host launch time of a prefill worker's eager batch: it lasts at least this long, ms (>= 0)
    prefill_compile_ms: float = 0.0  # host compile a prefill batch of a token count new to its worker adds to its launch, ms (>= 0)
    first_token_on_admission: bool = (
        False  # True: the first token reaches the client when a decode worker admits the request (engines); False: at its hand-off (closed-loop.md)
    )
    admission_lag: bool = (
        False  # True: a decode worker running a batch admits a hand-off at the iteration after the one whose start first sees it; an idle one at once
    )
    decode_bound_at_dispatch: bool = False  # True: a request's decode worker is chosen (round robin) at its dispatch; False: at its hand-off
    decode_intake_interval: int = 1  # a busy decode worker takes requests in every this many passes, then they prefill (>= 1; > 1: bound at dispatch)
    prefill_overlap: bool = (
        False  # True: a batch launched while the previous one runs delays that one's hand-offs and takes the requests held as its launch began (oracle.tandem)
    )

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers", "prefill_batch", "decode_max_seqs"):
            _require(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("prefill_workers", "decode_workers"):
            _require(getattr(self, name) <= MAX_REPLAY_WORKERS, f"{name} must be at most {MAX_REPLAY_WORKERS} (2**16), got {getattr(self, name)}")
        _require(self.prefix >= 0, f"prefix must be >= 0, got {self.prefix}")
        _require_progress(self.tokens_per_decode)
        for name in ("turnaround_ms", "handoff_ms", "encoder_ms", "prefill_floor_ms", "prefill_compile_ms"):
            _require_time(name, getattr(self, name))
        interval = self.decode_intake_interval
        _require(not isinstance(interval, bool) and isinstance(interval, int) and interval >= 1,
                 f"decode_intake_interval must be an integer >= 1, got {interval!r}")  # fmt: skip
        _require(interval == 1 or self.decode_bound_at_dispatch,
                 f"decode_intake_interval {interval} needs decode_bound_at_dispatch: a request waits for the intake of the decode worker it is bound to")  # fmt: skip

    def pack(self, plan: RunPlan) -> tuple[np.ndarray, np.ndarray]:
        """(ints, floats): the tandem's parameters by slot (T_*, TF_*)."""
        ints = np.zeros(N_TANDEM_INTS, dtype=np.int64)
        ints[[T_CLIENTS, T_WARM, T_STOP, T_CAP, T_PREFIX, T_PREFILL_WORKERS, T_DECODE_WORKERS, T_PREFILL_BATCH, T_DECODE_MAX, T_BOUND,
              T_REQUESTS, T_ADMIT, T_LAG, T_DECODE_AT_DISPATCH, T_INTAKE_INTERVAL, T_PREFILL_OVERLAP]] = (
            plan.clients, plan.warm, plan.stop, plan.dispatch_cap, self.prefix, self.prefill_workers, self.decode_workers,
            self.prefill_batch, self.decode_max_seqs, tandem_event_bound(plan), request_bound(plan), self.first_token_on_admission,
            self.admission_lag, self.decode_bound_at_dispatch, self.decode_intake_interval, self.prefill_overlap,
        )  # fmt: skip
        floats = np.zeros(N_TANDEM_FLOATS)
        floats[[TF_K, TF_TURNAROUND, TF_HANDOFF, TF_ENCODER, TF_PREFILL_FLOOR, TF_PREFILL_COMPILE, TF_BURST_STEP]] = (
            self.tokens_per_decode, self.turnaround_ms, self.handoff_ms, self.encoder_ms, self.prefill_floor_ms, self.prefill_compile_ms,
            plan.burst_step_ms,
        )  # fmt: skip
        return ints, floats

    def check(self, plan: RunPlan) -> None:
        _require_prefix(self.prefix, plan)
        _require_work(plan, 1 + int(plan.osl.max()))


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise InvalidInputError(message)


def _require_work(plan: RunPlan, passes: int) -> None:
    """InvalidInputError when the plan's requests times the passes each takes part in (prefill
    chunks and output tokens, at most) exceed MAX_REPLAY_WORK."""
    requests = request_bound(plan)
    _require(requests * passes <= MAX_REPLAY_WORK,
             f"a closed-loop replay of {requests} requests x {passes} passes each ({requests * passes}) exceeds 2**32 request-passes; "
             "lower the concurrency, osl or prompts per client, or raise the token budget")  # fmt: skip


def _require_progress(k: float) -> None:
    _require(math.isfinite(k) and k >= 1.0, f"tokens_per_decode must be a finite number >= 1, got {k}")


def _require_time(name: str, value: float) -> None:
    _require(math.isfinite(value) and value >= 0.0, f"{name} must be a finite number >= 0, got {value}")


def _require_prefix(prefix: int, plan: RunPlan) -> None:
    shortest = int(plan.isl.min())
    _require(prefix < shortest, f"prefix ({prefix}) must be smaller than every input length (shortest {shortest})")


def request_bound(plan: RunPlan) -> int:
    """Requests a run can dispatch: the cap, or stop + 2C for a replacing (steady) run."""
    return plan.dispatch_cap if plan.dispatch_cap >= 0 else plan.stop + 2 * plan.clients


def agg_pass_bound(plan: RunPlan, prefix: int) -> int:
    """Passes a run cannot exceed: each pass computes >= 1 prompt or output token of some request,
    and each idle jump releases >= 1 waiting request."""
    work = int(plan.isl.max()) - prefix + int(plan.osl.max()) + 1
    return request_bound(plan) * work + 1


def tandem_event_bound(plan: RunPlan) -> int:
    """Events a run cannot exceed: each event launches >= 1 prefill batch or decode iteration."""
    return request_bound(plan) * (int(plan.osl.max()) + 1) + 1
