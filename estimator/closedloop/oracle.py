"""The literal replays: the agg pass calendar and the P/D tandem in plain Python objects and lists.

Readable first; the Numba kernels (estimator.closedloop.compiled) must agree with them bit for
bit. The algorithms are closed-loop.md sections 1 and 2 with the corrections of section 6:
requests are plain objects removed by identity, lengths come per request from the run plan,
a decode pass advances k tokens through a fractional accumulator, the encoder time sits on the
TTFT path, TTFT accumulates pass durations (stats.py) and osl == 1 decodes nothing. Additions:
the engine's max_num_seqs (admission stops at that many running requests, FIFO), decode
requests that take several budget tokens (speculative queries), a run plan's dispatch cap
(benchmark protocol), SGLang's intake interval (new requests are taken in only every
recv_interval weighted passes, settings.py), overlap scheduling (the loop iteration that launches a
pass starts once the previous pass's launch is done and the pass before it has returned: its intake
polls then (``seen``), its host launch runs while the previous pass is on the GPU, and the previous
pass's first tokens go out once it is done), and a pass price that must be finite (else NoProgressError). The
tandem's window closes at its last completion; the reference closed it at the launch of the last
decode iteration, one decode step early.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from estimator.closedloop.pricing import PassShape
from estimator.closedloop.protocol import NO_DISPATCH_CAP, RunPlan
from estimator.closedloop.spec import (
    LIMIT_MESSAGE,
    NONFINITE_MESSAGE,
    PREFILL_RECV_WEIGHT,
    STALLED_MESSAGE,
    AggSpec,
    NoProgressError,
    TandemSpec,
    agg_pass_bound,
    tandem_event_bound,
)
from estimator.closedloop.stats import Completions, ReplayResult, summarize


@dataclass(eq=False)  # identity semantics: two requests with equal fields are still two requests
class Request:
    """One in-flight request."""

    isl: int  # input tokens (text + visual)
    osl: int  # output tokens
    new: int  # tokens to compute: isl - prefix
    born: float  # dispatch time, ms
    visible: float  # earliest time the current stage may serve it, ms
    todo: int  # prefill tokens left
    made: int = 0  # tokens emitted
    progress: float = 0.0  # speculative-decoding accumulator (tokens committed, fractional)
    admitted_at: float | None = None  # start of the pass that scheduled its first chunk, ms
    service: float = 0.0  # agg: pass durations from admission to the first token, ms
    t_first: float | None = None  # first token, ms
    t_last: float | None = None  # latest token, ms
    decode_worker: int = -1  # tandem: its decode worker, bound at dispatch (TandemSpec.decode_bound_at_dispatch) or at its hand-off; -1: none yet


class _Run:
    """Dispatch, counting and completion bookkeeping shared by both replays."""

    def __init__(self, plan: RunPlan, prefix: int):
        self.plan, self.prefix = plan, prefix
        self.dispatched = self.done = 0
        self.t_steady: float | None = None
        self.t_end = 0.0
        self.ttfts: list[float] = []
        self.tpots: list[float] = []
        self.gaps: list[float] = []
        self.latencies: list[float] = []
        self.born: list[float] = []
        self.finished: list[float] = []
        self.worst = 0.0

    def new_request(self, born: float, visible: float) -> Request | None:
        """The next request of the plan, or None once the plan's dispatch cap is reached."""
        cap = self.plan.dispatch_cap
        if cap != NO_DISPATCH_CAP and self.dispatched >= cap:
            return None
        i = self.dispatched
        self.dispatched += 1
        isl = int(self.plan.isl[i % len(self.plan.isl)])
        osl = int(self.plan.osl[i % len(self.plan.osl)])
        return Request(isl, osl, isl - self.prefix, born, visible, isl - self.prefix)

    @property
    def counting(self) -> bool:
        return self.done >= self.plan.warm

    def first_token(self, r: Request, t: float, ttft: float, counting: bool) -> None:
        r.made += 1
        r.t_first = r.t_last = t
        if counting:
            self.ttfts.append(ttft)
        self.worst = max(self.worst, ttft)

    def delay_first_tokens(self, held: list, delay: float) -> None:
        """Overlap scheduling: one pass's first tokens (held: (request, counted TTFT index or None,
        TTFT)) reach the client delay ms later (> 0 only); TPOT then spans from the delivered first
        token. A request whose first token is its last is returned with its finish, not delayed."""
        if delay > 0.0:
            for r, index, ttft in held:
                r.t_first = r.t_first + delay
                if index is not None:
                    self.ttfts[index] = ttft + delay
                self.worst = max(self.worst, ttft + delay)

    def decode(self, r: Request, t: float, k: float, counting: bool) -> None:
        """One decode emission: k more tokens committed, floor-differences emitted, capped at osl."""
        before = r.progress
        r.progress = before + k
        r.made += min(math.floor(r.progress) - math.floor(before), r.osl - r.made)
        if counting:
            self.gaps.append(t - r.t_last)
        r.t_last = t

    def complete(self, r: Request, t: float) -> None:
        self.done += 1
        self.t_end = max(self.t_end, t)
        if self.done == self.plan.warm:
            self.t_steady = t
        if self.done > self.plan.warm:
            self.latencies.append(t - r.born)
            if r.osl > 1:
                self.tpots.append((r.t_last - r.t_first) / (r.osl - 1))
        self.born.append(r.born)
        self.finished.append(t)

    def result(self) -> ReplayResult:
        window = self.t_end - (self.t_steady if self.t_steady is not None else 0.0)
        stats = summarize(self.ttfts, self.worst, self.tpots, self.gaps, self.latencies, window)
        return ReplayResult(stats, Completions(np.array(self.born, dtype=np.float64), np.array(self.finished, dtype=np.float64)))


def _form_pass(active: list[Request], t: float, spec: AggSpec, max_seqs: int, hold: bool):
    """One pass: walk active in order, spending the token budget on prompt chunks (FIFO, whole
    prompts only without chunking) and decoders. hold: the chunks are walked and spend the budget
    but are not taken, and no request changes (TRT-LLM batch waiting: the pass only decodes).
    Returns (starts, takes, firsts, decs, new_starts, walked chunks, their requests' whole prompts)."""
    budget, chunked, mixed = spec.settings.step_token_budget, spec.settings.chunked_prefill, spec.settings.mixed_batches
    left = budget
    running = sum(1 for r in active if r.admitted_at is not None)
    starts, takes, firsts, decs, new_starts, walked, prompt_tokens = [], [], [], [], 0, 0, 0
    for r in active:
        if r.todo > 0:
            if left <= 0:
                continue
            if r.admitted_at is None and running >= max_seqs:
                break  # FIFO admission: no younger prompt jumps ahead
            if not chunked and r.todo > left:
                break  # head-of-line block: a prompt is admitted only whole
            take = min(r.todo, left)
            left -= take
            walked += 1
            prompt_tokens += r.isl
            if r.admitted_at is None:
                running += 1
            if hold:
                continue
            starts.append(spec.prefix + (r.new - r.todo))
            takes.append(take)
            if r.admitted_at is None:
                r.admitted_at = t
                new_starts += 1
            r.todo -= take
            if r.todo == 0:
                firsts.append(r)  # the prompt completes: its first token comes from this pass
        elif mixed and r.made < r.osl and left >= spec.decode_budget_tokens:
            left -= spec.decode_budget_tokens
            decs.append(r)
    if not mixed and not walked:  # without mixed batches only a pass that prefills nothing decodes
        for r in active:
            if r.todo == 0 and r.made < r.osl and left >= spec.decode_budget_tokens:
                left -= spec.decode_budget_tokens
                decs.append(r)
    return starts, takes, firsts, decs, new_starts, walked, prompt_tokens


@dataclass
class _AdpBalance:
    """TRT-LLM's attention-DP balance (PyExecutor._balance_adp_requests, enable_balance) as one rank
    sees it. Every rank's queue is gathered each pass; a backlog left at the last release stands
    for every rank holding a prefill."""

    timeout: int  # attention_dp_config.timeout_iters; 0: off
    batching_wait: int  # attention_dp_config.batching_wait_iters
    counted: int = 0  # passes counted toward the timeout since the last restart
    batched: int = 0  # passes waited for batching while every rank held a prefill
    draining: bool = False  # prefills were left pending at the last release

    def holds(self, walked: int, decoders: int) -> bool:
        """Whether a pass that would prefill `walked` chunks beside `decoders` decoders holds them."""
        if self.draining and walked:
            self.counted = 0
            if decoders:
                self.batched = self.batched + 1 if self.batched < self.batching_wait else 0
                return self.batched > 0
            return False
        self.counted += 1
        if self.counted >= self.timeout or not decoders:
            self.counted = 0
            return False
        return walked > 0


def seen(visible: float, t: float, launched: float | None) -> bool:
    """Whether the intake that forms the pass starting at t takes in a request visible from `visible`.
    Without overlap the scheduler polls when the pass is formed, at t (launched None). Under overlap
    it forms pass n+1 while pass n runs: the loop iteration that launches pass n+1 starts, and polls,
    once it has launched pass n and returned pass n-1's results (`launched`: pass n's start, or the end
    of pass n's host launch when that runs past it), and a request visible exactly then (the next
    request of a client whose completion that iteration returned) arrives after the poll (SGLang
    0.5.9 ``event_loop_overlap``: ``recv_requests``, then ``run_batch``, then ``pop_and_process`` of
    the previous batch; TRT-LLM ``_executor_loop_overlap``; vLLM V1 ``EngineCore.step_with_batch_queue``).
    That launch begins before pass n ends, so a host-bound pass n+1 lasts its host time less the
    lead (agg_calendar)."""
    return visible <= t if launched is None else visible < launched


def agg_calendar(plan: RunPlan, spec: AggSpec, pricer) -> ReplayResult:
    """The fused continuous-batching pass calendar of one rank (closed-loop.md section 1)."""
    run = _Run(plan, spec.prefix)
    budget = spec.settings.step_token_budget
    max_seqs = spec.settings.max_num_seqs or plan.clients
    recv_interval = since_recv = spec.settings.recv_interval  # weighted passes since the last intake of requests
    settings, waited = spec.settings, 0  # waited: passes held since the last release (batch waiting)
    balance = _AdpBalance(settings.adp_balance_iters, settings.adp_batching_wait_iters)
    compiled: set[int] = set()  # pass token counts compiled so far (settings.py, shape_compile_ms)
    prefix_compiled = False  # the prefix-extend path compiled (settings.py, prefix_compile_ms)
    held: list = []  # overlap: the previous pass's first tokens still decoding, as (request, counted TTFT index or None, TTFT)
    t = 0.0
    active: list[Request] = []
    waiting: deque[Request] = deque()
    launched: float | None = None  # overlap: when the loop iteration launching this pass starts and its intake polls (None: no overlap, or idle since)
    path = spec.path_ms  # a request reaches the engine this long after its dispatch (settings.py; AggSpec.path_ms)
    for c in range(plan.clients):  # the first wave reaches the engine in dispatch order (protocol.BURST_STEP_MS)
        waiting.append(run.new_request(0.0, path + c * plan.burst_step_ms))
    for _ in range(agg_pass_bound(plan, spec.prefix)):
        if run.done >= plan.stop:
            return run.result()
        if since_recv >= recv_interval:
            since_recv = 0
            while waiting and seen(waiting[0].visible, t, launched):
                active.append(waiting.popleft())
        # ---- form one pass: walk active in order, spending the token budget ----
        hold = False
        if settings.batch_waiting or (balance.timeout > 0 and active):  # TRT-LLM batch waiting / attention-DP balance: decide on the pass as it would be formed
            formed = _form_pass(active, t, spec, max_seqs, hold=True)
            _, _, _, decs, _, walked, prompt_tokens = formed
            if not settings.batch_waiting:
                hold = balance.holds(walked, len(decs))
            elif walked and decs:
                if waited >= settings.batch_wait_iters or prompt_tokens + len(decs) * spec.decode_budget_tokens >= settings.batch_wait_tokens_ratio * budget:
                    waited = 0
                else:
                    waited += 1
                    hold = True
        if not hold:  # a held pass is the walk above (nothing taken); else form the pass
            formed = _form_pass(active, t, spec, max_seqs, hold=False)
            if balance.timeout > 0:
                balance.draining = any(r.todo > 0 for r in active)
        starts, takes, firsts, decs, new_starts, _, _ = formed
        if not takes and not decs:
            if not waiting:
                raise NoProgressError(STALLED_MESSAGE)
            t = max(t, waiting[0].visible)  # idle jump to the next dispatch
            launched = None  # an idle scheduler polls until it receives
            since_recv = recv_interval  # an idle scheduler loops on to its next intake at once
            held = []
            continue
        dur = pricer.pass_ms(PassShape(tuple(starts), tuple(takes), len(decs), sum(r.isl + r.made for r in decs)))
        dur = dur + spec.encoder_ms * new_starts
        host = 0.0  # the pass's host launch time (eager prefill launches and inline compiles)
        lead = 0.0 if launched is None else t - launched  # overlap: this pass's launch began that long before the GPU is free for it
        if takes:
            dur = max(dur, spec.prefill_floor_ms - lead)
            host = spec.prefill_floor_ms
            tokens = sum(takes) + len(decs) * spec.decode_budget_tokens
            if spec.settings.shape_compile_ms > 0.0 and tokens not in compiled:
                compiled.add(tokens)
                dur = dur + spec.settings.shape_compile_ms
                host = host + spec.settings.shape_compile_ms
            if spec.settings.prefix_compile_ms > 0.0 and not prefix_compiled and max(starts) > 0:
                prefix_compiled = True
                dur = dur + spec.settings.prefix_compile_ms
                host = host + spec.settings.prefix_compile_ms
        if not (0.0 <= dur < math.inf):
            raise NoProgressError(NONFINITE_MESSAGE)
        if spec.settings.overlap_scheduler:  # the previous pass's tokens go out once this pass is launched
            run.delay_first_tokens(held, host - lead)
        launched = t + min(max(host - lead, 0.0), dur) if spec.settings.overlap_scheduler else None  # within the pass, to the clock's rounding (lead >= 0)
        t += dur
        since_recv += PREFILL_RECV_WEIGHT if takes else 1
        for r in active:
            if r.admitted_at is not None and r.made == 0:
                r.service += dur
        # ---- emissions: completed prompts first, then decoders, each in list order ----
        counting = run.counting
        held = []
        for r in firsts:
            ttft, index = (r.admitted_at - r.born) + r.service, len(run.ttfts) if counting else None
            run.first_token(r, t, ttft, counting)
            if r.made < r.osl:
                held.append((r, index, ttft))
        for r in decs:
            run.decode(r, t, spec.tokens_per_decode, counting)
        for r in firsts + decs:
            if r.made >= r.osl:
                run.complete(r, t)
        active = [r for r in active if r.made < r.osl]
        for r in firsts + decs:
            if r.made >= r.osl:
                replacement = run.new_request(t, t + spec.turnaround_ms + path)
                if replacement is not None:
                    waiting.append(replacement)
    if run.done >= plan.stop:
        return run.result()
    raise NoProgressError(LIMIT_MESSAGE)


def arrive(run: list[Request], r: Request) -> None:
    """A hand-off joins a decode worker's run list in arrival order: after every entry visible at or
    before r.visible (the list stays sorted by visible, ties in hand-off order)."""
    at = len(run)
    while at > 0 and run[at - 1].visible > r.visible:
        at -= 1
    run.insert(at, r)


def tandem(plan: RunPlan, spec: TandemSpec, prefill_pricer, decode_pricer) -> ReplayResult:
    """The P/D tandem (closed-loop.md section 2): static round-robin routers, whole-prompt prefill
    batches, continuous-batching decode iterations, events in time order, prefill before decode.
    A hand-off joins its decode worker's list when its KV arrives (`arrive`): with engine-priced
    prefill a later-launched short batch can land before an earlier long one. Its first token
    reaches the client when its decode worker admits it into an iteration (TRT-LLM's generation
    server emits it as it schedules the transferred request, SGLang's decode server streams it
    from the request it holds KV for: estimator/docs/evidence/disagg-first-token.md), so a full
    decode batch holds it back (spec.first_token_on_admission; else at its hand-off, as the
    reference's tandem); a request of one output token ends at its hand-off.
    Decode intake (spec.decode_intake_interval > 1, requests bound to their decode worker at
    dispatch): a request bound to a busy decode worker (one with admitted requests) waits for that
    worker's next intake before its prefill may start; a worker takes in at the start of a pass
    once `interval` passes have run since its last intake, at the pass after one that admitted
    hand-offs, and at once when it goes idle (sglang-pd-decode-intake.md).
    Prefill overlap (spec.prefill_overlap): a busy prefill worker's loop iteration starts once its last
    launch is done and the batch before returned, while the last batch runs (the agg calendar's overlap
    rule): its intake polls then (`seen`), its batch's host launch (prefill_floor_ms) starts then, so
    that batch ends at the later of its GPU time after the last batch and its launch's end, and the last
    batch's KV goes out once this launch is done, so those hand-offs not admitted yet arrive later by
    the launch's end past the last batch's end, when positive; a first token sent at the hand-off
    (first_token_on_admission off) and a one-token request's end keep the batch's end. When that intake
    found none the worker returns the last batch (its KV leaves at its end), idles and polls until it
    receives. A batch whose token count is new to its worker compiles inline as it launches
    (spec.prefill_compile_ms, as the agg calendar's shape_compile_ms): its launch and the batch last
    that much longer."""
    run = _Run(plan, spec.prefix)
    p, d = spec.prefill_workers, spec.decode_workers
    pq: list[list[Request]] = [[] for _ in range(p)]
    runs: list[list[Request]] = [[] for _ in range(d)]
    waiting: list[list[Request]] = [[] for _ in range(d)]  # bound to a busy decode worker, before its intake
    since = [0] * d  # passes each decode worker ran since its last intake
    interval = spec.decode_intake_interval
    p_free, d_free = [0.0] * p, [0.0] * d
    last_start = [0.0] * d  # each decode worker's latest iteration start, ms
    routed = {"prefill": 0, "decode": 0}
    last_batch: list[list[Request]] = [[] for _ in range(p)]  # each prefill worker's latest batch
    next_launch: list[float | None] = [None] * p  # overlap: when the loop iteration after its latest launch starts, ms
    compiled: list[set[int]] = [set() for _ in range(p)]  # each prefill worker's batch token counts compiled so far (prefill_compile_ms)

    def to_prefill(r: Request) -> None:
        pq[routed["prefill"] % p].append(r)
        routed["prefill"] += 1

    def next_decode() -> int:
        routed["decode"] += 1
        return (routed["decode"] - 1) % d

    def busy(j: int) -> bool:
        return any(r.admitted_at is not None for r in runs[j])

    def take_in(j: int, t: float) -> None:
        since[j] = 0
        for r in waiting[j]:
            r.visible = max(r.visible, t)
            to_prefill(r)
        waiting[j].clear()

    def dispatch(born: float, visible: float) -> None:
        r = run.new_request(born, visible)
        if r is None:
            return
        if spec.decode_bound_at_dispatch:
            r.decode_worker = next_decode()
            if interval > 1 and busy(r.decode_worker):
                waiting[r.decode_worker].append(r)
                return
        to_prefill(r)

    def complete(r: Request, t_end: float) -> None:
        run.complete(r, t_end)
        dispatch(t_end, t_end + spec.turnaround_ms)

    for c in range(plan.clients):  # the first wave reaches the prefill workers in dispatch order (protocol.BURST_STEP_MS)
        dispatch(0.0, c * plan.burst_step_ms)
    for _ in range(tandem_event_bound(plan)):
        if run.done >= plan.stop:
            return run.result()
        t_p = min((max(p_free[i], min(r.visible for r in pq[i])) for i in range(p) if pq[i]), default=math.inf)
        t_d = min((max(d_free[j], min(r.visible for r in runs[j])) for j in range(d) if runs[j]), default=math.inf)
        t = min(t_p, t_d)
        if t == math.inf:
            raise NoProgressError(STALLED_MESSAGE)
        for i in range(p):
            if not pq[i] or p_free[i] > t:
                continue
            back_to_back = spec.prefill_overlap and t == p_free[i] and next_launch[i] is not None  # formed while the last batch ran
            polls = [next_launch[i]] if back_to_back else []
            for launched in [*polls, None]:  # the intake as the next iteration starts, then the idle worker's, which polls until it receives
                batch = [r for r in pq[i] if seen(r.visible, t, launched)][: spec.prefill_batch]
                if batch:
                    break
            if not batch:
                continue
            lead = t - launched if launched is not None else 0.0  # this launch began that long before the worker's GPU is free
            compile_ms = 0.0
            tokens = sum(r.new for r in batch)
            if spec.prefill_compile_ms > 0.0 and tokens not in compiled[i]:
                compiled[i].add(tokens)
                compile_ms = spec.prefill_compile_ms
            delay = spec.prefill_floor_ms + compile_ms - lead  # this launch's host time past the last batch's end
            if launched is not None and delay > 0.0:  # launched back to back: the last batch's KV goes out once this launch is done
                for r in last_batch[i]:
                    if r.admitted_at is None and r.made < r.osl:  # still on its way to its decode worker
                        runs[r.decode_worker] = [x for x in runs[r.decode_worker] if x is not r]
                        r.visible = r.visible + delay
                        arrive(runs[r.decode_worker], r)
            last_batch[i] = batch
            dur = prefill_pricer.pass_ms(PassShape(tuple(spec.prefix for _ in batch), tuple(r.new for r in batch), 0, 0))
            dur = max(dur + spec.encoder_ms, spec.prefill_floor_ms - lead) + compile_ms  # at least its host launch, then its compile
            if not (0.0 <= dur < math.inf):
                raise NoProgressError(NONFINITE_MESSAGE)
            end = t + dur
            p_free[i] = end
            next_launch[i] = t + max(delay, 0.0)
            pq[i] = [r for r in pq[i] if not any(r is b for b in batch)]
            counting = run.counting  # decided at batch launch
            for r in batch:
                if not spec.first_token_on_admission or r.osl <= 1:  # out at the hand-off
                    run.first_token(r, end + spec.handoff_ms, ((t - r.born) + dur) + spec.handoff_ms, counting)
                if r.made >= r.osl:
                    complete(r, end + spec.handoff_ms)
                else:
                    r.visible = end + spec.handoff_ms
                    r.decode_worker = r.decode_worker if spec.decode_bound_at_dispatch else next_decode()
                    arrive(runs[r.decode_worker], r)
        for j in range(d):
            if not runs[j] or d_free[j] > t:
                continue
            busy_before = busy(j)  # members of its previous iteration, run back to back
            seen_by = last_start[j] if spec.admission_lag and busy_before else t  # a hand-off seen at one iteration's start joins the next
            batch = [r for r in runs[j] if r.visible <= seen_by][: spec.decode_max_seqs]
            if not batch:
                continue
            last_start[j] = t
            if interval > 1:  # the pass's intake, before it launches
                if since[j] >= interval:
                    take_in(j, t)
                since[j] += 1
            counting = run.counting
            joined = False
            for r in batch:  # the decode worker admits a hand-off: its first token goes out now, before the iteration runs
                joined = joined or r.admitted_at is None
                r.admitted_at = t if r.admitted_at is None else r.admitted_at
                if r.made == 0:
                    run.first_token(r, t, t - r.born, counting)
            dur = decode_pricer.pass_ms(PassShape((), (), len(batch), sum(r.isl + r.made for r in batch)))
            if not (0.0 <= dur < math.inf):
                raise NoProgressError(NONFINITE_MESSAGE)
            end = t + dur
            d_free[j] = end
            for r in batch:
                run.decode(r, end, spec.tokens_per_decode, counting)
            finished = [r for r in batch if r.made >= r.osl]
            runs[j] = [x for x in runs[j] if not any(x is r for r in finished)]
            if interval > 1:
                if joined:  # a pass that admits hand-offs (SGLang's prebuilt batch) weighs past the interval: the next pass takes in
                    since[j] = interval
                if waiting[j] and not busy(j):  # idle now: its loop spins through an intake at once
                    take_in(j, end)
            for r in finished:
                complete(r, end)
    if run.done >= plan.stop:
        return run.result()
    raise NoProgressError(LIMIT_MESSAGE)
