"""Run protocols: which requests a replay dispatches and which of them its statistics count.

* ``steady``: the reference's protocol (closed-loop.md section 1). Every client runs fixed-length
  requests back to back forever; the first ``warm_gens*C`` completions are warm-up and the
  statistics cover the next ``win_gens*C`` (TTFTs and inter-token gaps emitted once warm-up is
  over, TPOTs and throughput of the requests completing after it).
* ``benchmark``: what a serving benchmark client measures (``--num-prompts N --max-concurrency C
  --request-rate inf``): N prompts, at most C in flight, the first C dispatched at t = 0 (reaching the
  engine one after another, BURST_STEP_MS) and each completion replaced at once until all N are
  dispatched; lengths the client's own seeded draws, or a
  deterministic lattice where its seed is not recorded; statistics over every request, start-up burst
  and drain included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.closedloop.lengths import benchmark_lengths, check_client_seed
from estimator.errors import InvalidInputError

NO_DISPATCH_CAP = -1  # steady runs replace every completion
# A benchmark's first C requests reach the engine one after another, in dispatch order: the client starts them in turn on
# one event loop (InferenceX utils/bench_serving/benchmark_serving.py: a task per request behind the concurrency
# semaphore, each opening its own aiohttp session), and the server takes each through its HTTP handler and tokenizer
# before handing it to the engine loop (SGLang TokenizerManager, vLLM's API server, trtllm-serve). An idle engine loop
# schedules what it holds when it wakes (SGLang event_loop_overlap polls recv_requests every iteration, sleep_on_idle off;
# vLLM EngineCore blocks on its input queue; TRT-LLM PyExecutor waits for a request), so its first pass holds request 0
# alone. The spacing is not published; this one keeps the order and takes no time of its own (4 us over 2**22 requests):
# the rest of the burst reaches the engine before its first pass ends, a lower bound on how far the burst spreads.
BURST_STEP_MS = 1e-9
# Requests one replay holds state for (RunPlan.requests): 2**22, about 4.2 million, 25 times the
# largest measured run's (a steady replay at C = 16,384 holds 10 C); past it the per-request arrays
# alone would take gigabytes.
MAX_REPLAY_REQUESTS = 2**22


@dataclass(frozen=True)
class Steady:
    """The reference's warm-up and window generations."""

    warm_gens: int = 4  # completions per client before the window opens (>= 0)
    win_gens: int = 4  # completions per client inside the window (>= 1)

    name = "steady"

    def __post_init__(self) -> None:
        if self.warm_gens < 0 or self.win_gens < 1:
            raise InvalidInputError(f"steady protocol needs warm_gens >= 0 and win_gens >= 1, got {self.warm_gens}, {self.win_gens}")


@dataclass(frozen=True)
class Benchmark:
    """A finite benchmark run (defaults: the InferenceX client's 10 x C prompts and lengths in [0.8 L, L], dealt on the lattice)."""

    prompts_per_client: int = 10  # N = prompts_per_client * C prompts in the run (>= 1)
    range_ratio: float = 0.8  # input and output lengths uniform on [r*L, L]; 1.0: fixed lengths (0 < r <= 1)
    seed: int | None = None  # the client's NumPy seed: its own length draws (lengths.client_draws); None: the lattice (0 <= seed < 2**32)
    staggered: bool = True  # the first C requests reach the engine one after another (BURST_STEP_MS); False: all at t = 0

    name = "benchmark"

    def __post_init__(self) -> None:
        if not 1 <= self.prompts_per_client <= MAX_REPLAY_REQUESTS:
            raise InvalidInputError(f"prompts_per_client must be within [1, {MAX_REPLAY_REQUESTS}] (2**22), got {self.prompts_per_client}")
        if not 0.0 < self.range_ratio <= 1.0:
            raise InvalidInputError(f"range_ratio must be within (0, 1], got {self.range_ratio}")
        if self.seed is not None:
            check_client_seed(self.seed)


Protocol = Steady | Benchmark
PROTOCOLS = ("steady", "benchmark")


def parse_protocol(value: str | Protocol) -> Protocol:
    """A protocol object from its name (default parameters) or the object itself."""
    if isinstance(value, (Steady, Benchmark)):
        return value
    if value == "steady":
        return Steady()
    if value == "benchmark":
        return Benchmark()
    raise InvalidInputError(f"unknown protocol {value!r} (known: {', '.join(PROTOCOLS)})")


@dataclass(frozen=True, eq=False)
class RunPlan:
    """What a replay dispatches and counts, in the kernels' terms."""

    clients: int  # C: requests in flight at any time (>= 1)
    warm: int  # completions before counting starts (statistics count once done >= warm)
    stop: int  # the run ends at the pass where completions reach stop
    dispatch_cap: int  # requests dispatched in total, or NO_DISPATCH_CAP
    isl: np.ndarray  # int64: input tokens of request i at isl[i % len(isl)] (>= 1)
    osl: np.ndarray  # int64: output tokens of request i at osl[i % len(osl)] (>= 1)
    burst_step_ms: float = 0.0  # request c < C of the first wave reaches the engine c x this after request 0, ms (>= 0)


def held_requests(protocol: Protocol, clients: int) -> int:
    """Requests a replay at concurrency `clients` holds state for: a benchmark's N, a steady run's
    warm-up and window plus 2C in flight (spec.request_bound of its plan)."""
    if isinstance(protocol, Benchmark):
        return protocol.prompts_per_client * clients
    return (protocol.warm_gens + protocol.win_gens + 2) * clients


def run_plan(protocol: Protocol, clients: int, isl: int, osl: int, visual_tokens: int = 0) -> RunPlan:
    """The dispatch and counting plan of a protocol at concurrency `clients` and lengths L = (isl, osl);
    isl is the text prompt, and visual_tokens (>= 0) are added to every request's input."""
    if clients < 1:
        raise InvalidInputError(f"concurrency must be >= 1, got {clients}")
    if isl < 1 or osl < 1:
        raise InvalidInputError(f"isl and osl must be >= 1, got {isl} and {osl}")
    if visual_tokens < 0:
        raise InvalidInputError(f"visual_tokens must be >= 0, got {visual_tokens}")
    requests = held_requests(protocol, clients)
    if requests > MAX_REPLAY_REQUESTS:
        raise InvalidInputError(f"a closed-loop replay at concurrency {clients} holds {requests} requests, more than {MAX_REPLAY_REQUESTS} "
                                "(2**22); lower the concurrency or the prompts per client")  # fmt: skip
    if isinstance(protocol, Steady):
        warm = protocol.warm_gens * clients
        fixed = np.array([isl + visual_tokens], dtype=np.int64), np.array([osl], dtype=np.int64)
        return RunPlan(clients, warm, warm + protocol.win_gens * clients, NO_DISPATCH_CAP, *fixed)
    count = protocol.prompts_per_client * clients
    isls, osls = benchmark_lengths(isl, osl, protocol.range_ratio, count, protocol.seed)
    return RunPlan(clients, 0, count, count, isls + visual_tokens, osls, BURST_STEP_MS if protocol.staggered else 0.0)
