"""Numba replays: the agg pass calendar and the P/D tandem on flat arrays, bit-identical to oracle.py.

* Requests: client c owns row c of the request arrays (a closed loop keeps at most one request
  per client in flight; a replacement reuses the row once the finished request has left every
  list). Lists hold client ids; removal is by id with order-preserving compaction.
* Gaps: counted inter-token gaps are (value, count) runs of equal consecutive gaps; quantiles over
  the runs equal quantiles over the expanded list.
* Cohorts: while every decoding request emits in every pass (all fit the budget or decode_max;
  the agg calendar also needs k == 1), the decoders are a heap keyed by (decode pass of their
  last token, admission order); tokens, KV and last emission follow from the cohort's pass count
  (the tandem's for any k, from one shared progress sequence: decode_progress), so a pass costs
  O(prefill chunks + completions). Runs of decode-only passes (stretches) skip the per-pass
  bookkeeping and price each pass from what the cohort size fixes (pricing.decode_fixed). Both
  fall back to the per-request walk wherever that would differ.
* Every float operation happens in the oracle's order, so results are equal bit for bit (the
  property tests check it). Passes are priced by pricing.affine_ms / pricing.engine_ms directly.
* Reference counting: helpers that allocate nothing compile without it (pricing.LEAF), and no hot
  path makes an array view or rebinds an array (heaps and worker rows are indexed in place, the
  gap-run buffers grow only when short): each costs atomic count updates that outweigh a pass.
* Numba's on-disk cache is keyed by every jitted source (estimator.numba_cache).
"""

from __future__ import annotations

import math

import numpy as np

from estimator.closedloop.pricing import AFFINE, DECODE_PER_KV, KERNEL, LEAF, affine_ms, decode_fixed, decode_walk_ms, engine_ms
from estimator.closedloop.quantile import nearest_rank_index
from estimator.closedloop.spec import (
    A_ADP_BATCHING_WAIT,
    A_ADP_TIMEOUT,
    A_BOUND,
    A_BUDGET,
    A_CAP,
    A_CHUNKED,
    A_CLIENTS,
    A_DECODE_BUDGET,
    A_MAX_SEQS,
    A_MIXED,
    A_OVERLAP,
    A_PREFIX,
    A_RECV_INTERVAL,
    A_REQUESTS,
    A_STOP,
    A_WAIT_ITERS,
    A_WARM,
    AF_BURST_STEP,
    AF_COMPILE,
    AF_ENCODER,
    AF_K,
    AF_PATH,
    AF_PREFILL_FLOOR,
    AF_PREFIX_COMPILE,
    AF_TURNAROUND,
    AF_WAIT_RATIO,
    PREFILL_RECV_WEIGHT,
    T_ADMIT,
    T_BOUND,
    T_CAP,
    T_CLIENTS,
    T_DECODE_AT_DISPATCH,
    T_DECODE_MAX,
    T_DECODE_WORKERS,
    T_INTAKE_INTERVAL,
    T_LAG,
    T_PREFILL_BATCH,
    T_PREFILL_OVERLAP,
    T_PREFILL_WORKERS,
    T_PREFIX,
    T_REQUESTS,
    T_STOP,
    T_WARM,
    TF_BURST_STEP,
    TF_ENCODER,
    TF_HANDOFF,
    TF_K,
    TF_PREFILL_COMPILE,
    TF_PREFILL_FLOOR,
    TF_TURNAROUND,
)
from estimator.jit import njit

OK, STALLED, NONFINITE, LIMIT = 0, 1, 2, 3

# request int columns
ISL, OSL, NEW, TODO, MADE, ADMITTED, BASE_MADE, BASE_EPOCH = 0, 1, 2, 3, 4, 5, 6, 7
N_INT = 8
# request float columns
BORN, VISIBLE, ADMIT_T, SERVICE, T_FIRST, T_LAST, PROGRESS = 0, 1, 2, 3, 4, 5, 6
N_FLOAT = 7

N_STATS = 14  # LatencyStats fields, in order


# int64 counters and float64 scalars of a run (the oracle's _Run attributes)
DISPATCHED, DONE, N_TTFT, N_TPOT, N_LAT, N_RUNS, N_GAPS, N_DONE = 0, 1, 2, 3, 4, 5, 6, 7
N_COUNTERS = 8
# float scalars
T_STEADY, HAS_STEADY, T_END, WORST = 0, 1, 2, 3
N_SCALARS = 4


@njit(**LEAF)
def _new_request(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, born, visible):
    """Load the plan's next request into client row c; False once the dispatch cap is reached."""
    if cap >= 0 and cnt[DISPATCHED] >= cap:
        return False
    i = cnt[DISPATCHED]
    cnt[DISPATCHED] += 1
    isl = isl_arr[i % isl_arr.shape[0]]
    ri[c, ISL] = isl
    ri[c, OSL] = osl_arr[i % osl_arr.shape[0]]
    ri[c, NEW] = isl - prefix
    ri[c, TODO] = isl - prefix
    ri[c, MADE] = 0
    ri[c, ADMITTED] = 0
    rf[c, BORN] = born
    rf[c, VISIBLE] = visible
    rf[c, ADMIT_T] = 0.0
    rf[c, SERVICE] = 0.0
    rf[c, T_FIRST] = 0.0
    rf[c, T_LAST] = 0.0
    rf[c, PROGRESS] = 0.0
    return True


@njit(**LEAF)
def _first_token(ri, rf, c, t, ttft, counting, cnt, sc, ttfts):
    ri[c, MADE] += 1
    rf[c, T_FIRST] = t
    rf[c, T_LAST] = t
    if counting:
        ttfts[cnt[N_TTFT]] = ttft
        cnt[N_TTFT] += 1
    sc[WORST] = max(sc[WORST], ttft)


@njit(**LEAF)
def _short(run_v, cnt, more):
    """Whether the gap-run buffers lack room for `more` runs beyond the current ones: call _room
    only then (assigning the arrays it returns costs reference-count updates on every call)."""
    return cnt[N_RUNS] + more > run_v.shape[0]


@njit(**KERNEL)
def _room(run_v, run_c, cnt, more):
    """The gap-run buffers with room for `more` runs beyond the current ones (doubling)."""
    needed = cnt[N_RUNS] + more
    if needed <= run_v.shape[0]:
        return run_v, run_c
    size = max(2 * run_v.shape[0], needed)
    bigger_v = np.empty(size)
    bigger_c = np.zeros(size, dtype=np.int64)
    bigger_v[: run_v.shape[0]] = run_v
    bigger_c[: run_c.shape[0]] = run_c
    return bigger_v, bigger_c


@njit(**LEAF)
def _add_gaps(gap, n, cnt, run_v, run_c):
    """Count n equal consecutive gaps: merged into the last run when it holds the same value, else
    a new (gap, n) run (the caller made room)."""
    cnt[N_GAPS] += n
    runs = cnt[N_RUNS]
    if runs > 0 and run_v[runs - 1] == gap:
        run_c[runs - 1] += n
    else:
        run_v[runs] = gap
        run_c[runs] = n
        cnt[N_RUNS] = runs + 1


@njit(**LEAF)
def _add_gap_list(gaps, n, cnt, run_v, run_c):
    """Count gaps[:n] in order, consecutive equal gaps grouped into one _add_gaps call."""
    i = 0
    while i < n:
        j = i + 1
        while j < n and gaps[j] == gaps[i]:
            j += 1
        _add_gaps(gaps[i], j - i, cnt, run_v, run_c)
        i = j


@njit(**LEAF)
def _decode(ri, rf, c, t, k):
    """One decode emission (oracle._Run.decode): k more tokens committed, floor-differences
    emitted (capped at osl); returns the gap since the request's previous emission."""
    before = rf[c, PROGRESS]
    rf[c, PROGRESS] = before + k
    emitted = int(math.floor(rf[c, PROGRESS])) - int(math.floor(before))
    ri[c, MADE] += min(emitted, ri[c, OSL] - ri[c, MADE])
    gap = t - rf[c, T_LAST]
    rf[c, T_LAST] = t
    return gap


@njit(**LEAF)
def _decode_pass(ri, rf, members, n, t, k, gaps, fin, n_fin, counting, cnt, run_v, run_c):
    """One decode pass over members[:n] at time t: emit, collect finished requests into fin, and
    count the gaps when inside the window (the caller made room for n runs). Returns n_fin."""
    for i in range(n):
        gaps[i] = _decode(ri, rf, members[i], t, k)
        if ri[members[i], MADE] >= ri[members[i], OSL]:
            fin[n_fin] = members[i]
            n_fin += 1
    if counting:
        _add_gap_list(gaps, n, cnt, run_v, run_c)
    return n_fin


@njit(**LEAF)
def _complete(ri, rf, c, t, warm, cnt, sc, tpots, lats, done_born, done_t):
    cnt[DONE] += 1
    sc[T_END] = max(sc[T_END], t)
    if cnt[DONE] == warm:
        sc[T_STEADY] = t
        sc[HAS_STEADY] = 1.0
    if cnt[DONE] > warm:
        lats[cnt[N_LAT]] = t - rf[c, BORN]
        cnt[N_LAT] += 1
        if ri[c, OSL] > 1:
            tpots[cnt[N_TPOT]] = (rf[c, T_LAST] - rf[c, T_FIRST]) / (ri[c, OSL] - 1)
            cnt[N_TPOT] += 1
    done_born[cnt[N_DONE]] = rf[c, BORN]
    done_t[cnt[N_DONE]] = t
    cnt[N_DONE] += 1


@njit(**LEAF)
def _mean(values, n):
    if n == 0:
        return np.nan
    total = 0.0
    for i in range(n):
        total += values[i]
    return total / n


@njit(**KERNEL)
def _quantiles(values, n):
    """(p50, p99) of values[:n] (one sort); NaN for none."""
    if n == 0:
        return np.nan, np.nan
    ordered = np.sort(values[:n])
    return ordered[nearest_rank_index(0.5, n)], ordered[nearest_rank_index(0.99, n)]


@njit(**KERNEL)
def _run_quantiles(run_v, run_c, n_runs, total):
    """(p50, p99) of the list that expands each run value by its count (one sort)."""
    if total == 0:
        return np.nan, np.nan
    order = np.argsort(run_v[:n_runs])
    out = np.empty(2)
    for slot, q in enumerate((0.5, 0.99)):
        target = nearest_rank_index(q, total)
        seen = 0
        for o in order:
            seen += run_c[o]
            if seen > target:
                out[slot] = run_v[o]
                break
    return out[0], out[1]


@njit(**LEAF)
def _run_sum(run_v, run_c, n_runs):
    """stats.run_length_sum over the runs."""
    total = 0.0
    for i in range(n_runs):
        total += run_v[i] * run_c[i]
    return total


@njit(**KERNEL)
def _stats(cnt, sc, ttfts, tpots, lats, run_v, run_c):
    """The LatencyStats record (stats.summarize, field order)."""
    out = np.empty(N_STATS)
    n_t, n_p, n_l, n_g = cnt[N_TTFT], cnt[N_TPOT], cnt[N_LAT], cnt[N_GAPS]
    window = sc[T_END] - (sc[T_STEADY] if sc[HAS_STEADY] > 0.0 else 0.0)
    out[0] = _mean(ttfts, n_t)
    out[1], out[2] = _quantiles(ttfts, n_t)
    out[3] = sc[WORST]
    out[4] = _mean(tpots, n_p) if n_p > 0 else 0.0
    out[5], out[6] = _quantiles(tpots, n_p) if n_p > 0 else (0.0, 0.0)
    out[7] = _run_sum(run_v, run_c, cnt[N_RUNS]) / n_g if n_g > 0 else np.nan
    out[8], out[9] = _run_quantiles(run_v, run_c, cnt[N_RUNS], n_g)
    out[10] = _mean(lats, n_l)
    out[11] = n_l / (window / 1000) if window > 0 else 0.0
    out[12] = n_l
    out[13] = window
    return out


@njit(**KERNEL)
def _buffers(clients, requests):
    ri = np.zeros((clients, N_INT), dtype=np.int64)
    rf = np.zeros((clients, N_FLOAT))
    cnt = np.zeros(N_COUNTERS, dtype=np.int64)
    sc = np.zeros(N_SCALARS)
    return ri, rf, cnt, sc, np.empty(requests), np.empty(requests), np.empty(requests), np.empty(requests), np.empty(requests)


@njit(**LEAF)
def _form_pass(order, n_act, ri, rf, t, prefix, budget, chunked, max_seqs, decode_budget, mixed, running, starts, takes, firsts,
               decs, svc, hold):  # fmt: skip
    """Walk the active list spending the token budget (oracle.agg_calendar's pass formation).
    Fills starts/takes (chunks), firsts (prompts completing), decs (decoders) and svc (admitted
    requests still before their first token); without mixed batches a pass that prefills carries
    no decoder. hold: the chunks are walked and spend the budget but are not taken, and no request
    changes (TRT-LLM batch waiting or attention-DP balance: the pass only decodes). Returns (nc, nf, nd, ns, new_starts,
    kv_sum, running, walked, prompt_tokens): walked chunks, and the whole prompts of their requests."""
    left = budget
    nc = nf = nd = ns = new_starts = kv_sum = walked = prompt_tokens = 0
    for p in range(n_act):
        c = order[p]
        if ri[c, TODO] > 0:
            if left <= 0:
                if ri[c, ADMITTED] == 1:
                    svc[ns] = c
                    ns += 1
                continue
            if ri[c, ADMITTED] == 0 and running >= max_seqs:
                break
            if not chunked and ri[c, TODO] > left:
                break
            take = min(ri[c, TODO], left)
            left -= take
            walked += 1
            prompt_tokens += ri[c, ISL]
            if ri[c, ADMITTED] == 0:
                running += 1
            elif hold:
                svc[ns] = c
                ns += 1
            if hold:
                continue
            starts[nc] = prefix + (ri[c, NEW] - ri[c, TODO])
            takes[nc] = take
            nc += 1
            if ri[c, ADMITTED] == 0:
                ri[c, ADMITTED] = 1
                rf[c, ADMIT_T] = t
                new_starts += 1
            ri[c, TODO] -= take
            svc[ns] = c
            ns += 1
            if ri[c, TODO] == 0:
                firsts[nf] = c
                nf += 1
        elif mixed and ri[c, MADE] < ri[c, OSL] and left >= decode_budget:
            left, nd, kv_sum = _take_decoder(ri, c, decs, nd, left, decode_budget, kv_sum)
    if not mixed and walked == 0:
        for p in range(n_act):
            c = order[p]
            if ri[c, TODO] == 0 and ri[c, MADE] < ri[c, OSL] and left >= decode_budget:
                left, nd, kv_sum = _take_decoder(ri, c, decs, nd, left, decode_budget, kv_sum)
    return nc, nf, nd, ns, new_starts, kv_sum, running, walked, prompt_tokens


@njit(**LEAF)
def _extends_a_prefix(starts, nc):
    """Whether a prefilling pass extends some prompt from a cached prefix: a chunk starting past
    token 0 (settings.py, prefix_compile_ms)."""
    for i in range(nc):
        if starts[i] > 0:
            return True
    return False


@njit(**LEAF)
def _first_of_shape(compiled, takes, nc, decode_tokens):
    """Whether a prefilling pass's tokens (its chunks' plus its decode query tokens) are new to the
    run (settings.py, shape_compile_ms); marks them compiled."""
    tokens = decode_tokens
    for i in range(nc):
        tokens += takes[i]
    if compiled[tokens]:
        return False
    compiled[tokens] = True
    return True


@njit(**LEAF)
def _held(waited, wait_iters, wait_ratio, walked, prompt_tokens, decoders, decode_budget, budget):
    """TRT-LLM batch waiting (PyExecutor._waiting_requests) on a pass that would prefill `walked`
    chunks beside `decoders` decoders: (hold the prefill, held passes since the last release)."""
    if walked == 0 or decoders == 0:
        return False, waited
    if waited >= wait_iters or prompt_tokens + decoders * decode_budget >= wait_ratio * budget:
        return False, 0
    return True, waited + 1


@njit(**LEAF)
def _prefill_pending(ri, order, n_act):
    """Whether a request on the active list still has prompt tokens to prefill."""
    for p in range(n_act):
        if ri[order[p], TODO] > 0:
            return True
    return False


@njit(**LEAF)
def _adp_balance(count, batched, timeout, batching_wait, draining, walked, decoders):
    """TRT-LLM's attention-DP balance (PyExecutor._balance_adp_requests with enable_balance) seen
    from one rank, on a pass that would prefill `walked` chunks beside `decoders` decoders. Returns
    (hold the prefill, passes counted toward the timeout, passes waited for batching).

    The engine gathers every rank's queue each pass. When every rank holds a prefill (from one
    rank: prefills were left pending at the last release, `draining`), the count restarts and,
    beside decoders, the prefills wait up to `batching_wait` passes (without decoders they go and the
    batching count stays). Otherwise the pass counts and
    holds its prefills; at `timeout` counted passes, or without decoders, the count restarts and
    the prefills go."""
    if draining and walked > 0:
        if decoders == 0:
            return False, 0, batched
        if batched < batching_wait:
            return True, 0, batched + 1
        return False, 0, 0
    count += 1
    if count >= timeout or decoders == 0:
        return False, 0, batched
    return walked > 0, count, batched


@njit(**LEAF)
def _take_decoder(ri, c, decs, nd, left, decode_budget, kv_sum):
    """Request c decodes in this pass: its budget spent, appended to decs, its KV length added.
    Returns (left, nd, kv_sum)."""
    decs[nd] = c
    return left - decode_budget, nd + 1, kv_sum + ri[c, ISL] + ri[c, MADE]


# ---------------------------------------------------------------------------------------------
# The decode cohort: while every decoder emits in every pass (all fit the budget, k == 1), the
# decoders leave the active list and become a heap keyed by (decode pass of their last token,
# admission order). Their tokens, KV and last emission time follow from the cohort's pass count,
# so a pass costs O(prefill chunks + completions) instead of O(active requests).
# ---------------------------------------------------------------------------------------------


# Heaps are rows of 2-D arrays (hk, hj, hc)[h] (the agg calendar has one, the tandem one per decode
# worker), indexed in place: a row view would cost reference-count updates on every operation.


@njit(**LEAF)
def _before(hk, hj, h, a, b):
    return hk[h, a] < hk[h, b] or (hk[h, a] == hk[h, b] and hj[h, a] < hj[h, b])


@njit(**LEAF)
def _heap_push(hk, hj, hc, h, n, key, join, c):
    """Push (key, join, c) onto heap h of size n; returns n + 1."""
    i = n
    hk[h, i], hj[h, i], hc[h, i] = key, join, c
    while i > 0:
        parent = (i - 1) // 2
        if not _before(hk, hj, h, i, parent):
            break
        hk[h, i], hk[h, parent] = hk[h, parent], hk[h, i]
        hj[h, i], hj[h, parent] = hj[h, parent], hj[h, i]
        hc[h, i], hc[h, parent] = hc[h, parent], hc[h, i]
        i = parent
    return n + 1


@njit(**LEAF)
def _heap_pop(hk, hj, hc, h, n):
    """Remove the top of heap h of size n; returns n - 1."""
    n -= 1
    hk[h, 0], hj[h, 0], hc[h, 0] = hk[h, n], hj[h, n], hc[h, n]
    i = 0
    while True:
        smallest = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < n and _before(hk, hj, h, child, smallest):
                smallest = child
        if smallest == i:
            return n
        hk[h, i], hk[h, smallest] = hk[h, smallest], hk[h, i]
        hj[h, i], hj[h, smallest] = hj[h, smallest], hj[h, i]
        hc[h, i], hc[h, smallest] = hc[h, smallest], hc[h, i]
        i = smallest


@njit(**LEAF)
def _join_cohort(ri, c, epoch, joins, hk, hj, hc, n_coh):
    """Request c (tokens made so far in ri[c, MADE]) joins the agg cohort (heap 0) at decode pass `epoch`."""
    ri[c, BASE_MADE] = ri[c, MADE]
    ri[c, BASE_EPOCH] = epoch
    return _heap_push(hk, hj, hc, 0, n_coh, epoch + ri[c, OSL] - ri[c, MADE], joins, c)


@njit(**KERNEL)
def _leave_cohort(ri, rf, hk, hj, hc, n_coh, order, n_act, epoch, t_last):
    """Every cohort member back into the head of the agg active list in admission order, its
    tokens, progress (k == 1: tokens - 1) and last emission (t_last) materialized. Returns the new
    list length."""
    members = hc[0, :n_coh][np.argsort(hj[0, :n_coh])]
    order[n_coh : n_coh + n_act] = order[:n_act].copy()
    for i in range(n_coh):
        c = members[i]
        ri[c, MADE] = ri[c, BASE_MADE] + (epoch - ri[c, BASE_EPOCH])
        rf[c, PROGRESS] = ri[c, MADE] - 1.0
        rf[c, T_LAST] = t_last
        order[i] = c
    return n_act + n_coh


@njit(**KERNEL, nogil=True)
def agg_calendar(isl_arr, osl_arr, ints, floats, kind, params, data, hdr):
    """The agg calendar (oracle.agg_calendar), in two modes with the same float operations in the
    same order: per request (the oracle's walk), or with the decoders as a cohort whenever all of
    them emit in every pass (k == 1; without mixed batches only while no request is prefilling).
    ints and floats are AggSpec.pack's slots. Returns (status, stats, completed born, completed at)."""
    clients, warm, stop, cap, prefix = ints[A_CLIENTS], ints[A_WARM], ints[A_STOP], ints[A_CAP], ints[A_PREFIX]
    budget, chunked, max_seqs, mixed = ints[A_BUDGET], ints[A_CHUNKED] != 0, ints[A_MAX_SEQS], ints[A_MIXED] != 0
    recv_interval, wait_iters, adp_timeout, adp_batching_wait = ints[A_RECV_INTERVAL], ints[A_WAIT_ITERS], ints[A_ADP_TIMEOUT], ints[A_ADP_BATCHING_WAIT]
    decode_budget, bound, requests, overlap = ints[A_DECODE_BUDGET], ints[A_BOUND], ints[A_REQUESTS], ints[A_OVERLAP] != 0
    wait_ratio, k, turnaround, encoder_ms = floats[AF_WAIT_RATIO], floats[AF_K], floats[AF_TURNAROUND], floats[AF_ENCODER]
    prefill_floor_ms, compile_ms, path, burst = floats[AF_PREFILL_FLOOR], floats[AF_COMPILE], floats[AF_PATH], floats[AF_BURST_STEP]
    prefix_compile_ms = floats[AF_PREFIX_COMPILE]
    ri, rf, cnt, sc, ttfts, tpots, lats, done_born, done_t = _buffers(clients, requests)
    run_v = np.empty(1024)
    run_c = np.zeros(1024, dtype=np.int64)
    order = np.empty(clients, dtype=np.int64)  # active list (cohort mode: prefilling requests only)
    wq = np.empty(clients, dtype=np.int64)  # waiting FIFO ring
    starts = np.empty(clients, dtype=np.int64)
    takes = np.empty(clients, dtype=np.int64)
    firsts = np.empty(clients, dtype=np.int64)
    decs = np.empty(clients, dtype=np.int64)
    svc = np.empty(clients, dtype=np.int64)
    gaps = np.empty(clients)
    fin = np.empty(clients, dtype=np.int64)
    hk = np.empty((1, clients), dtype=np.int64)  # cohort heap (row 0): decode pass of the last token
    hj = np.empty((1, clients), dtype=np.int64)  # cohort heap: admission order (join counter)
    hc = np.empty((1, clients), dtype=np.int64)  # cohort heap: client
    n_act = head = n_wait = running = np.int64(0)  # np.int64: one compiled signature for the callees, not one per literal
    launched = -1.0  # overlap: when the loop iteration launching this pass starts and its intake polls (< 0: no overlap, or idle since; oracle.seen)
    can_cohort = k == 1.0
    cohort = can_cohort  # decoders are a cohort (else: per request)
    since_recv = recv_interval  # weighted passes since the last intake of requests
    batch_waiting = wait_iters > 0 or wait_ratio > 0.0
    waited = np.int64(0)  # passes held since the last release (batch waiting)
    adp_count = adp_batched = np.int64(0)  # attention-DP balance (adp_timeout > 0): passes counted, passes waited for batching
    draining = False  # prefills were left pending at the last release (attention-DP balance)
    n_coh = epoch = joins = kv_coh = np.int64(0)  # cohort size, decode passes so far, joins so far, summed KV
    compiled = np.zeros(budget + clients * decode_budget + 1 if compile_ms > 0.0 else 1, dtype=np.bool_)  # pass token counts compiled so far
    prefix_compiled = False  # the prefix-extend path compiled (settings.py, prefix_compile_ms)
    held_c = np.empty(clients, dtype=np.int64)  # overlap: the previous pass's first tokens still decoding (oracle's held)
    held_k = np.empty(clients, dtype=np.int64)  # their counted TTFT index (-1: not counted)
    held_v = np.empty(clients)  # their TTFTs
    n_held = np.int64(0)
    t = 0.0
    for c in range(clients):
        _new_request(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, 0.0, path + c * burst)
        wq[(head + n_wait) % clients] = c
        n_wait += 1
    status = LIMIT
    it = 0
    while it < bound:
        if cnt[DONE] >= stop:
            status = OK
            break
        it += 1
        if since_recv >= recv_interval:
            since_recv = 0
            while n_wait > 0 and _seen(rf[wq[head], VISIBLE], t, launched):
                order[n_act] = wq[head]
                n_act += 1
                head = (head + 1) % clients
                n_wait -= 1
        if cohort and (n_coh * decode_budget > budget or (not mixed and n_act > 0)):  # a decoder would starve or pause: walk per request
            n_act = _leave_cohort(ri, rf, hk, hj, hc, n_coh, order, n_act, epoch, t)
            cohort = False
            n_coh = np.int64(0)
        nc = nf = nd = ns = new_starts = kv_sum = 0
        if n_act > 0:
            hold = False
            if batch_waiting or adp_timeout > 0:  # decide on the pass as it would be formed (a hold walk)
                nc, nf, nd, ns, new_starts, kv_sum, _, walked, prompt_tokens = _form_pass(
                    order, n_act, ri, rf, t, prefix, budget - n_coh * decode_budget, chunked, max_seqs,
                    decode_budget, mixed, running, starts, takes, firsts, decs, svc, True,
                )  # fmt: skip
                if batch_waiting:
                    hold, waited = _held(waited, wait_iters, wait_ratio, walked, prompt_tokens, nd + n_coh, decode_budget, budget)
                else:
                    hold, adp_count, adp_batched = _adp_balance(adp_count, adp_batched, adp_timeout, adp_batching_wait, draining, walked, nd + n_coh)
            if not hold:  # a held pass is the walk above (nothing taken); else form the pass
                nc, nf, nd, ns, new_starts, kv_sum, running, _, _ = _form_pass(
                    order, n_act, ri, rf, t, prefix, budget - n_coh * decode_budget, chunked, max_seqs,
                    decode_budget, mixed, running, starts, takes, firsts, decs, svc, False,
                )  # fmt: skip
                if adp_timeout > 0:
                    draining = _prefill_pending(ri, order, n_act)
        elif adp_timeout > 0 and n_coh > 0:  # a decode-only pass counts too
            _, adp_count, adp_batched = _adp_balance(adp_count, adp_batched, adp_timeout, adp_batching_wait, False, 0, n_coh)
        if cohort:
            nd, kv_sum = n_coh, kv_coh
        if nc == 0 and nd == 0:
            if n_wait == 0:
                status = STALLED
                break
            t = max(t, rf[wq[head], VISIBLE])
            since_recv = recv_interval
            n_held = np.int64(0)
            launched = -1.0  # an idle scheduler polls until it receives
            continue
        gpu = affine_ms(params, nc, starts, takes, nd, kv_sum) if kind == AFFINE else engine_ms(params, data, hdr, nc, starts, takes, nd, kv_sum)
        gpu = gpu + encoder_ms * new_starts
        lead = t - launched if launched >= 0.0 else 0.0  # overlap: this pass's launch began that long before the GPU is free for it
        dur = gpu
        host = 0.0  # the pass's host launch time (eager prefill launches and inline compiles)
        if nc > 0:
            dur = max(gpu, prefill_floor_ms - lead)
            host = prefill_floor_ms
            if compile_ms > 0.0 and _first_of_shape(compiled, takes, nc, nd * decode_budget):
                dur = dur + compile_ms
                host = host + compile_ms
            if prefix_compile_ms > 0.0 and not prefix_compiled and _extends_a_prefix(starts, nc):
                prefix_compiled = True
                dur = dur + prefix_compile_ms
                host = host + prefix_compile_ms
        if not (0.0 <= dur < np.inf):
            status = NONFINITE
            break
        if overlap:
            _delay_first_tokens(rf, ttfts, sc, held_c, held_k, held_v, n_held, host - lead)
        t_prev = t
        launched = t + min(max(host - lead, 0.0), dur) if overlap else -1.0  # within the pass, to the clock's rounding (lead >= 0)
        t += dur
        since_recv += PREFILL_RECV_WEIGHT if nc > 0 else 1
        for i in range(ns):
            rf[svc[i], SERVICE] += dur
        counting = cnt[DONE] >= warm
        n_fin = 0
        n_held = np.int64(0)
        for i in range(nf):
            c = firsts[i]
            ttft, index = (rf[c, ADMIT_T] - rf[c, BORN]) + rf[c, SERVICE], cnt[N_TTFT] if counting else -1
            _first_token(ri, rf, c, t, ttft, counting, cnt, sc, ttfts)
            if ri[c, MADE] >= ri[c, OSL]:
                fin[n_fin] = c
                n_fin += 1
            else:
                held_c[n_held], held_k[n_held], held_v[n_held] = c, index, ttft
                n_held += 1
        if cohort:
            if n_coh > 0:
                epoch += 1
                kv_coh += n_coh
                if counting:
                    if _short(run_v, cnt, 1):
                        run_v, run_c = _room(run_v, run_c, cnt, np.int64(1))
                    _add_gaps(t - t_prev, n_coh, cnt, run_v, run_c)
            while n_coh > 0 and hk[0, 0] == epoch:
                c = hc[0, 0]
                n_coh = _heap_pop(hk, hj, hc, 0, n_coh)
                ri[c, MADE] = ri[c, OSL]
                rf[c, T_LAST] = t
                kv_coh -= ri[c, ISL] + ri[c, OSL]
                fin[n_fin] = c
                n_fin += 1
        else:
            if counting and _short(run_v, cnt, nd):
                run_v, run_c = _room(run_v, run_c, cnt, nd)
            n_fin = _decode_pass(ri, rf, decs, nd, t, k, gaps, fin, n_fin, counting, cnt, run_v, run_c)
        for i in range(n_fin):
            _complete(ri, rf, fin[i], t, warm, cnt, sc, tpots, lats, done_born, done_t)
        running -= n_fin
        if n_fin > 0 or (cohort and nf > 0):
            kept = 0
            for p in range(n_act):
                c = order[p]
                if ri[c, MADE] < ri[c, OSL] and not (cohort and ri[c, TODO] == 0):
                    order[kept] = c
                    kept += 1
            n_act = kept
        if cohort:
            for i in range(nf):
                c = firsts[i]
                if ri[c, MADE] < ri[c, OSL]:
                    n_coh = _join_cohort(ri, c, epoch, joins, hk, hj, hc, n_coh)
                    joins += 1
                    kv_coh += ri[c, ISL] + ri[c, MADE]
        elif can_cohort:
            cohort, n_act, n_coh, epoch, kv_coh = _enter_cohort(ri, rf, order, n_act, t, budget, decode_budget, not mixed, hk, hj, hc)
            joins = n_coh
        for i in range(n_fin):
            c = fin[i]
            if _new_request(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, t, t + turnaround + path):
                wq[(head + n_wait) % clients] = c
                n_wait += 1
        if cohort and n_act == 0 and 0 < n_coh * decode_budget <= budget and hk[0, 0] > epoch + 1 and cnt[DONE] < stop:
            due = rf[wq[head], VISIBLE] if n_wait > 0 else np.inf
            it_before = it
            passes = hk[0, 0] - epoch - 1
            if cnt[DONE] >= warm and _short(run_v, cnt, passes):
                run_v, run_c = _room(run_v, run_c, cnt, passes)
            t, launched, epoch, kv_coh, it, since_recv, status = _decode_stretch(
                t,
                launched,
                overlap,
                epoch,
                kv_coh,
                it,
                bound,
                passes,
                n_coh,
                due,
                since_recv,
                recv_interval,
                cnt[DONE] >= warm,
                encoder_ms,
                kind,
                params,
                data,
                hdr,
                starts,
                takes,
                cnt,
                run_v,
                run_c,
            )
            if adp_timeout > 0:  # each decode-only pass counted, the count restarting at the timeout
                adp_count = (adp_count + (it - it_before)) % adp_timeout
            if it > it_before:  # decode-only passes launched after the held pass: its tokens went out
                n_held = np.int64(0)
            if status == NONFINITE:
                break
    if status == LIMIT and cnt[DONE] >= stop:
        status = OK
    return status, _stats(cnt, sc, ttfts, tpots, lats, run_v, run_c), done_born[: cnt[N_DONE]].copy(), done_t[: cnt[N_DONE]].copy()


@njit(**LEAF)
def _seen(visible, t, launched):
    """oracle.seen, launched < 0 standing for None (times are >= 0)."""
    return visible <= t if launched < 0.0 else visible < launched


@njit(**LEAF)
def _delay_first_tokens(rf, ttfts, sc, held_c, held_k, held_v, n_held, delay):
    """Overlap scheduling: one pass's first tokens reach the client delay ms later (> 0 only;
    oracle._Run.delay_first_tokens)."""
    if delay > 0.0:
        for j in range(n_held):
            rf[held_c[j], T_FIRST] = rf[held_c[j], T_FIRST] + delay
            if held_k[j] >= 0:
                ttfts[held_k[j]] = held_v[j] + delay
            sc[WORST] = max(sc[WORST], held_v[j] + delay)


@njit(**LEAF)
def _decode_stretch(t, launched, overlap, epoch, kv, it, bound, passes, n_coh, due, since_recv, recv_interval, counting, encoder_ms,
                    kind, params, data, hdr, starts, takes, cnt, run_v, run_c):  # fmt: skip
    """Up to `passes` cohort passes that only decode and complete nothing, stopping before a pass
    whose intake of requests (every recv_interval weighted passes, see agg_calendar) would take in
    the first waiting one, visible from `due` (_seen at the pass's start t and `launched`, when the loop
    iteration launching it starts). The same float operations as the full pass loop, without its bookkeeping (engine
    prices from what the fixed cohort size fixes, decode_fixed; the caller made room for `passes`
    gap runs). Returns (t, launched, epoch, kv, it, since_recv, status)."""
    status = LIMIT
    flat = kind == AFFINE and params[DECODE_PER_KV] == 0.0  # the price ignores the KV: one evaluation serves every pass
    flat_dur = affine_ms(params, np.int64(0), starts, takes, n_coh, kv) if flat else 0.0
    own, other, i, wi = decode_fixed(params, data, hdr, n_coh) if kind != AFFINE else (np.int64(0), 0.0, np.int64(0), 0.0)
    cell = np.int64(-1)
    for _ in range(passes):
        if it >= bound:
            break
        if since_recv >= recv_interval:  # this pass's intake
            if _seen(due, t, launched):
                break
            since_recv = 0
        it += 1
        if flat:
            dur = flat_dur
        elif kind == AFFINE:
            dur = affine_ms(params, np.int64(0), starts, takes, n_coh, kv)
        else:
            dur, cell = decode_walk_ms(params, data, hdr, n_coh, kv, own, other, i, wi, cell)
        dur = dur + encoder_ms * 0
        if not (0.0 <= dur < np.inf):
            status = NONFINITE
            break
        t_prev = t
        launched = t if overlap else -1.0
        t += dur
        since_recv += 1
        epoch += 1
        kv += n_coh
        if counting:
            _add_gaps(t - t_prev, n_coh, cnt, run_v, run_c)
    return t, launched, epoch, kv, it, since_recv, status


@njit(**KERNEL)
def _enter_cohort(ri, rf, order, n_act, t, budget, decode_budget, whole, hk, hj, hc):
    """After a per-request pass: if the decoders (the head of the active list) all emitted at t and
    all fit the budget, move them into a fresh cohort (epoch 0); `whole` (batches without mixed
    prefill): only when no request is left prefilling, since a pass that prefills pauses the
    decoders. Returns (cohort, n_act, n_coh, epoch, kv)."""
    n_dec = 0
    while n_dec < n_act and ri[order[n_dec], TODO] == 0:
        if rf[order[n_dec], T_LAST] != t:
            return False, n_act, 0, 0, 0
        n_dec += 1
    if n_dec * decode_budget > budget or (whole and n_dec < n_act):
        return False, n_act, 0, 0, 0
    kv = _form_cohort(ri, order, n_dec, hk, hj, hc)
    order[: n_act - n_dec] = order[n_dec:n_act].copy()
    return True, n_act - n_dec, n_dec, 0, kv


@njit(**LEAF)
def _form_cohort(ri, order, n, hk, hj, hc):
    """A fresh cohort (decode pass 0) of order[:n], admission order = list order. Returns the
    members' summed KV length."""
    kv = 0
    for i in range(n):
        _join_cohort(ri, order[i], np.int64(0), i, hk, hj, hc, i)
        kv += ri[order[i], ISL] + ri[order[i], MADE]
    return kv


@njit(**LEAF)
def _enqueue(queues, lens, mins, w, c, visible):
    """Append client c to queue w, keeping the queue's earliest visible time."""
    queues[w, lens[w]] = c
    lens[w] += 1
    mins[w] = min(mins[w], visible)


@njit(**LEAF)
def _arrive(rq, rlen, rmin, w, c, rf):
    """Hand-off c joins decode worker w's run list in arrival order (oracle.arrive): after every
    entry visible at or before c's visible, so the list stays sorted by visible."""
    at = rlen[w]
    while at > 0 and rf[rq[w, at - 1], VISIBLE] > rf[c, VISIBLE]:
        rq[w, at] = rq[w, at - 1]
        at -= 1
    rq[w, at] = c
    rlen[w] += 1
    rmin[w] = min(rmin[w], rf[c, VISIBLE])


@njit(**LEAF)
def _dispatch(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, born, visible, pq, plen, pmin, routed, at_dispatch, interval, n_coh,
              bound_to, waiting, n_waiting):  # fmt: skip
    """Client c's next request (nothing once the dispatch cap is reached). routed: the round-robin
    counters [prefill, decode]. With at_dispatch its decode worker w is bound now (bound_to[c]),
    and under an intake interval it waits for w's intake (waiting[w]) while w is busy (n_coh[w] > 0);
    else it joins the prefill queues (static round robin)."""
    if not _new_request(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, born, visible):
        return
    if at_dispatch:
        w = _round_robin(routed, 1, n_coh.shape[0])
        bound_to[c] = w
        if interval > 1 and n_coh[w] > 0:
            waiting[w, n_waiting[w]] = c
            n_waiting[w] += 1
            return
    _enqueue(pq, plen, pmin, _round_robin(routed, 0, pq.shape[0]), c, visible)


@njit(**LEAF)
def _round_robin(routed, slot, n):
    """The next of n workers by round-robin counter routed[slot] (oracle.tandem to_prefill / next_decode), which advances."""
    routed[slot] += 1
    return (routed[slot] - 1) % n


@njit(**LEAF)
def _take_in(waiting, n_waiting, j, t, rf, pq, plen, pmin, routed):
    """Decode worker j's intake at t (oracle.tandem take_in): the requests waiting for it join the
    prefill queues in order (static round robin), visible from t at the earliest."""
    for x in range(n_waiting[j]):
        c = waiting[j, x]
        rf[c, VISIBLE] = max(rf[c, VISIBLE], t)
        _enqueue(pq, plen, pmin, _round_robin(routed, 0, pq.shape[0]), c, rf[c, VISIBLE])
    n_waiting[j] = 0


@njit(**LEAF)
def _delay_handoffs(last_b, last_n, i, delay, rf, bound_to, rq, rlen, rmin, n_coh):
    """Prefill overlap (oracle.tandem): the hand-offs of prefill worker i's latest batch (last_b[i,
    :last_n[i]]) still in their decode worker's run list (not admitted) arrive `delay` ms later; each
    leaves the list and joins it again in arrival order (_arrive)."""
    for x in range(last_n[i]):
        c = last_b[i, x]
        w = bound_to[c]
        at = 0
        while at < rlen[w] and rq[w, at] != c:
            at += 1
        if at == rlen[w]:  # already admitted (the oracle's admitted_at test; a launch at t precedes the admissions at t)
            continue
        for y in range(at, rlen[w] - 1):
            rq[w, y] = rq[w, y + 1]
        rlen[w] -= 1
        rf[c, VISIBLE] = rf[c, VISIBLE] + delay
        _arrive(rq, rlen, rmin, w, c, rf)
        rmin[w] = -np.inf if n_coh[w] > 0 else _earliest(rq, w, rlen, rf)


@njit(**LEAF)
def _take_visible(queues, w, n, rf, t, launched, limit, batch):
    """Move the first `limit` entries of queue w (queues[w, :n]) an intake forming a batch at t sees
    (_seen: visible by t, or before `launched` when it is >= 0) into batch (queue order) and compact
    the rest. Returns (batch size, new queue length, earliest visible of the rest)."""
    nb = 0
    kept = 0
    earliest = np.inf
    for i in range(n):
        c = queues[w, i]
        if nb < limit and _seen(rf[c, VISIBLE], t, launched):
            batch[nb] = c
            nb += 1
        else:
            queues[w, kept] = c
            kept += 1
            earliest = min(earliest, rf[c, VISIBLE])
    return nb, kept, earliest


@njit(**LEAF)
def _next_event(free, lens, more, mins):
    """min over workers w holding requests (lens[w] + more[w] > 0) of max(free[w], mins[w])."""
    t = np.inf
    for w in range(free.shape[0]):
        if lens[w] + more[w] > 0:
            t = min(t, max(free[w], mins[w]))
    return t


@njit(**LEAF)
def _earliest(rq, w, rlen, rf):
    """The earliest visible time in decode worker w's run list (sorted by visible, see _arrive); inf when empty."""
    return rf[rq[w, 0], VISIBLE] if rlen[w] > 0 else np.inf


# ---------------------------------------------------------------------------------------------
# Decode progress in a tandem cohort, for any k. Every hand-off starts decoding at progress 0.0 and
# adds k per decode (oracle._Run.decode), so after its first token and n decodes it has made
# 1 + floor(P_n) tokens (capped at osl), P_n the n-fold float sum of k: one sequence for every
# request. A member is then known by its join epoch and its osl (it completes after done_after[osl]
# decodes), and the cohort's summed KV grows per decode by members x base plus the members'
# exceptions (decodes whose increment is not base), marked ahead in a ring indexed by epoch.
# k == 1: base 1 and no exceptions.
# ---------------------------------------------------------------------------------------------


@njit(**KERNEL)
def decode_progress(k, osl_max):
    """(made, done_after, base, ex_n, ex_w) of decode progress k for requests of up to osl_max tokens:
    made[n] = 1 + floor(P_n), the uncapped tokens after the first token and n decodes (n <= osl_max);
    done_after[o] = the decodes that finish a request of o >= 2 tokens (the first n with made[n] >= o);
    base = the most common increment made[n + 1] - made[n] (ties: the smaller), and the decodes
    n >= 1 whose increment differs: ex_n ascending and ex_w = increment - base."""
    top = max(osl_max, 2)
    made = np.empty(top + 1, dtype=np.int64)
    made[0] = 1
    progress = 0.0
    for n in range(1, top + 1):
        progress = progress + k
        made[n] = 1 + int(math.floor(progress))
    done_after = np.zeros(top + 1, dtype=np.int64)
    n = 1
    for o in range(2, top + 1):
        while made[n] < o:
            n += 1
        done_after[o] = n
    last = done_after[top]  # no request decodes past its done_after: increments at n < last matter
    widest = 0
    for n in range(1, last):
        widest = max(widest, made[n + 1] - made[n])
    votes = np.zeros(widest + 1, dtype=np.int64)
    for n in range(1, last):
        votes[made[n + 1] - made[n]] += 1
    base = 1 if last <= 1 else np.int64(np.argmax(votes))
    n_ex = 0
    for n in range(1, last):
        n_ex += made[n + 1] - made[n] != base
    ex_n = np.empty(n_ex, dtype=np.int64)
    ex_w = np.empty(n_ex, dtype=np.int64)
    x = 0
    for n in range(1, last):
        if made[n + 1] - made[n] != base:
            ex_n[x], ex_w[x] = n, made[n + 1] - made[n] - base
            x += 1
    return made, done_after, base, ex_n, ex_w


@njit(**KERNEL)
def _mark(ring, j, epoch, lives, m, ex_n, ex_w):
    """The exceptions of m members joining worker j's cohort at `epoch` (each after its first
    decode), member i's decodes n = 1 .. lives[i] falling at epoch + n: each exception's weight
    times the members alive at it, added to its slot of ring row j."""
    if m == 0 or ex_n.shape[0] == 0:
        return
    order = np.sort(lives[:m])
    gone = 0  # members whose last decode precedes the exception
    for x in range(ex_n.shape[0]):
        while gone < m and order[gone] < ex_n[x]:
            gone += 1
        if gone == m:
            return
        ring[j, (epoch + ex_n[x]) % ring.shape[1]] += (m - gone) * ex_w[x]


@njit(**LEAF)
def _cohort_decode(epoch, kv, ring, j, members, base):
    """Worker j's cohort decodes once: its epoch advances and its summed KV grows by every member's increment."""
    epoch[j] += 1
    slot = epoch[j] % ring.shape[1]
    kv[j] += members * base + ring[j, slot]
    ring[j, slot] = 0


@njit(**LEAF)
def _stretch_runs(epoch, members, next_done):
    """Gap runs _workers_stretch may add: each cohort worker's decodes before its next completion."""
    runs = 0
    for w in range(epoch.shape[0]):
        runs += max(next_done[w] - epoch[w] - 1, 0) if members[w] > 0 else 0
    return runs


@njit(**LEAF)
def _workers_stretch(t_fixed, d_free, d_last, lag, epoch, kv, ring, base, members, next_done, next_handoff, decode_max, since, n_waiting,
                     interval, counting, it, bound, kind, params, data, hdr, fixed_n, fixed_i, fixed_f, starts, takes, cnt, run_v,
                     run_c):  # fmt: skip
    """Decode-only events of the cohort workers (members[j] > 0), in time order (ties by worker
    index, as the full loop serves them), while each launches before t_fixed (the next event of
    anything else), no member completes, no hand-off joins and no intake finds a request waiting
    (intake interval > 1: since, n_waiting): the full loop's float operations
    without its bookkeeping (the caller made room for _stretch_runs gap runs); under lag a hand-off
    joins once an iteration start (d_last) has seen it. Updates d_free, d_last, epoch, kv and ring
    (_cohort_decode) in place; returns (it, status). Engine prices come from
    what a worker's cohort size fixes (decode_fixed), kept per worker across calls: fixed_n[w] the
    size they are for (0: none), fixed_i[w] (own requests, attention-row cell, KV cell),
    fixed_f[w] (other ops' price, row weight)."""
    while it < bound:
        j = -1
        for w in range(d_free.shape[0]):
            if members[w] > 0 and (j < 0 or d_free[w] < d_free[j]):
                j = w
        if j < 0:
            break
        t = d_free[j]
        if t >= t_fixed or next_done[j] <= epoch[j] + 1 or (members[j] < decode_max and next_handoff[j] <= (d_last[j] if lag else t)):
            break
        if interval > 1:
            if since[j] >= interval:  # this pass's intake
                if n_waiting[j] > 0:
                    break
                since[j] = 0
            since[j] += 1
        it += 1
        d_last[j] = t
        if kind == AFFINE:
            dur = affine_ms(params, np.int64(0), starts, takes, members[j], kv[j])
        else:
            if fixed_n[j] != members[j]:
                fixed_n[j] = members[j]
                fixed_i[j, 0], fixed_f[j, 0], fixed_i[j, 1], fixed_f[j, 1] = decode_fixed(params, data, hdr, members[j])
                fixed_i[j, 2] = -1
            dur, fixed_i[j, 2] = decode_walk_ms(params, data, hdr, members[j], kv[j], fixed_i[j, 0], fixed_f[j, 0], fixed_i[j, 1],
                                                fixed_f[j, 1], fixed_i[j, 2])  # fmt: skip
        if not (0.0 <= dur < np.inf):
            return it, NONFINITE
        end = t + dur
        if counting:
            _add_gaps(end - t, members[j], cnt, run_v, run_c)
        d_free[j] = end
        _cohort_decode(epoch, kv, ring, j, members[j], base)
    return it, LIMIT


@njit(**KERNEL, nogil=True)
def tandem(isl_arr, osl_arr, ints, floats, p_kind, p_params, p_data, p_hdr, d_kind, d_params, d_data, d_hdr):
    """The P/D tandem (oracle.tandem). Each queue keeps its earliest visible time, so finding the
    next event costs O(P + D). A decode worker's run list is sorted by visible (oracle.arrive), so
    its eligible requests are a leading run, and its batch is a cohort that decodes in every
    iteration plus the first eligible hand-offs up to decode_max, which then join it (any k: see
    decode_progress). Under a decode intake interval a request bound to a busy decode worker waits
    in that worker's `waiting` list until an intake (_take_in); under prefill overlap a busy worker's
    next loop iteration starts once its last launch is done (next_launch): its intake takes the
    requests visible before then (_take_visible, _seen; none: what it finds idle, and the last batch's
    KV leaves at its end), and a batch it forms re-times the last batch's hand-offs to this launch's
    end (_delay_handoffs); a batch of a token count new to its worker adds prefill_compile_ms to its
    launch (`compiled`). ints and floats are
    TandemSpec.pack's slots. Returns (status, stats, completed born, completed at)."""
    clients, warm, stop, cap, prefix = ints[T_CLIENTS], ints[T_WARM], ints[T_STOP], ints[T_CAP], ints[T_PREFIX]
    n_prefill, n_decode, prefill_batch, decode_max = ints[T_PREFILL_WORKERS], ints[T_DECODE_WORKERS], ints[T_PREFILL_BATCH], ints[T_DECODE_MAX]
    bound, requests, admit, lag = ints[T_BOUND], ints[T_REQUESTS], ints[T_ADMIT] != 0, ints[T_LAG] != 0
    k, turnaround, handoff, encoder_ms = floats[TF_K], floats[TF_TURNAROUND], floats[TF_HANDOFF], floats[TF_ENCODER]
    prefill_floor_ms, prefill_compile_ms, burst = floats[TF_PREFILL_FLOOR], floats[TF_PREFILL_COMPILE], floats[TF_BURST_STEP]
    at_dispatch, interval, overlap = ints[T_DECODE_AT_DISPATCH] != 0, ints[T_INTAKE_INTERVAL], ints[T_PREFILL_OVERLAP] != 0
    ri, rf, cnt, sc, ttfts, tpots, lats, done_born, done_t = _buffers(clients, requests)
    run_v = np.empty(1024)
    run_c = np.zeros(1024, dtype=np.int64)
    pq = np.empty((n_prefill, clients), dtype=np.int64)  # prefill FIFO queues
    plen = np.zeros(n_prefill, dtype=np.int64)
    pmin = np.full(n_prefill, np.inf)
    rq = np.empty((n_decode, clients), dtype=np.int64)  # decode run lists (cohort mode: the pending hand-offs)
    rlen = np.zeros(n_decode, dtype=np.int64)
    rmin = np.full(n_decode, np.inf)  # earliest visible in rq (-inf while the worker has a cohort)
    p_free = np.zeros(n_prefill)
    d_free = np.zeros(n_decode)
    d_last = np.zeros(n_decode)  # each decode worker's latest iteration start (oracle.tandem last_start)
    hk = np.empty((n_decode, clients), dtype=np.int64)
    hj = np.empty((n_decode, clients), dtype=np.int64)
    hc = np.empty((n_decode, clients), dtype=np.int64)
    n_coh = np.zeros(n_decode, dtype=np.int64)
    no_cohort = np.zeros(n_prefill, dtype=np.int64)
    next_done = np.zeros(n_decode, dtype=np.int64)  # stretch: decode iteration of the cohort's next completion
    next_handoff = np.full(n_decode, np.inf)  # stretch: visible time of the oldest pending hand-off
    epoch = np.zeros(n_decode, dtype=np.int64)
    joins = np.zeros(n_decode, dtype=np.int64)
    kv_coh = np.zeros(n_decode, dtype=np.int64)
    made, done_after, base, ex_n, ex_w = decode_progress(k, osl_arr.max())
    ring = np.zeros((n_decode, made.shape[0]), dtype=np.int64)  # per worker: KV increments beyond base, by epoch
    lives = np.empty(clients, dtype=np.int64)  # one iteration's joiners: decodes after their first
    fixed_n = np.zeros(n_decode, dtype=np.int64)  # stretch: the decode prices' fixed parts per worker (_workers_stretch)
    fixed_i = np.zeros((n_decode, 3), dtype=np.int64)
    fixed_f = np.zeros((n_decode, 2))
    batch = np.empty(clients, dtype=np.int64)
    gaps = np.empty(clients)
    fin = np.empty(clients, dtype=np.int64)
    starts = np.empty(clients, dtype=np.int64)
    takes = np.empty(clients, dtype=np.int64)
    routed = np.zeros(2, dtype=np.int64)  # round-robin counters: prefill, decode
    bound_to = np.full(clients, -1)  # each client's decode worker (bound at dispatch or at its hand-off)
    last_b = np.empty((n_prefill, prefill_batch), dtype=np.int64)  # each prefill worker's latest batch
    last_n = np.zeros(n_prefill, dtype=np.int64)
    next_launch = np.full(n_prefill, -1.0)  # overlap: when the loop iteration after its latest launch starts, ms (< 0: none yet)
    stride = np.int64(prefill_batch) * isl_arr.max() + 1  # batch token counts per worker: 0 .. stride - 1
    compiled = {np.int64(-1)}  # (worker, batch token count) compiled so far, as worker * stride + tokens (prefill_compile_ms)
    waiting = np.empty((n_decode, clients), dtype=np.int64)  # per decode worker: requests bound to it before its intake
    n_waiting = np.zeros(n_decode, dtype=np.int64)
    since = np.zeros(n_decode, dtype=np.int64)  # passes each decode worker ran since its last intake
    for c in range(clients):
        _dispatch(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, 0.0, c * burst, pq, plen, pmin, routed, at_dispatch, interval, n_coh,
                  bound_to, waiting, n_waiting)  # fmt: skip
    status = LIMIT
    it = 0
    while it < bound:
        if cnt[DONE] >= stop:
            status = OK
            break
        it += 1
        t = min(_next_event(p_free, plen, no_cohort, pmin), _next_event(d_free, rlen, n_coh, rmin))
        if t == np.inf:
            status = STALLED
            break
        for i in range(n_prefill):
            if plen[i] == 0 or p_free[i] > t:
                continue
            nb = 0
            overlapped = False  # formed while the last batch ran, at the loop iteration's start (oracle.tandem)
            lead = 0.0  # this launch began that long before the worker's GPU is free
            if overlap and t == p_free[i] and next_launch[i] >= 0.0:
                nb, plen[i], pmin[i] = _take_visible(pq, i, plen[i], rf, t, next_launch[i], prefill_batch, batch)
                if nb > 0:
                    overlapped, lead = True, t - next_launch[i]
            if nb == 0:  # idle: the worker polls until it receives
                nb, plen[i], pmin[i] = _take_visible(pq, i, plen[i], rf, t, -1.0, prefill_batch, batch)
            if nb == 0:
                continue
            for b in range(nb):
                starts[b] = prefix
                takes[b] = ri[batch[b], NEW]
            compile_ms = 0.0
            if prefill_compile_ms > 0.0:
                key = i * stride + takes[:nb].sum()  # this worker and the batch's token count
                if key not in compiled:
                    compiled.add(key)
                    compile_ms = prefill_compile_ms
            delay = prefill_floor_ms + compile_ms - lead  # this launch's host time past the last batch's end
            if overlapped and delay > 0.0:  # the last batch's KV goes out once this launch is done
                _delay_handoffs(last_b, last_n, i, delay, rf, bound_to, rq, rlen, rmin, n_coh)
            last_n[i] = 0  # filled with the batch's hand-offs below (a client's index names its next request once it completes)
            dur = (
                affine_ms(p_params, nb, starts, takes, np.int64(0), np.int64(0))
                if p_kind == AFFINE
                else engine_ms(p_params, p_data, p_hdr, nb, starts, takes, np.int64(0), np.int64(0))
            )
            dur = max(dur + encoder_ms, prefill_floor_ms - lead) + compile_ms
            if not (0.0 <= dur < np.inf):
                status = NONFINITE
                break
            end = t + dur
            p_free[i] = end
            next_launch[i] = t + max(delay, 0.0)
            counting = cnt[DONE] >= warm
            for b in range(nb):
                c = batch[b]
                if not admit or ri[c, OSL] <= 1:  # out at the hand-off
                    _first_token(ri, rf, c, end + handoff, ((t - rf[c, BORN]) + dur) + handoff, counting, cnt, sc, ttfts)
                if ri[c, MADE] >= ri[c, OSL]:
                    _complete(ri, rf, c, end + handoff, warm, cnt, sc, tpots, lats, done_born, done_t)
                    t_next = end + handoff
                    _dispatch(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, t_next, t_next + turnaround, pq, plen, pmin, routed, at_dispatch,
                              interval, n_coh, bound_to, waiting, n_waiting)  # fmt: skip
                else:
                    rf[c, VISIBLE] = end + handoff
                    last_b[i, last_n[i]] = c
                    last_n[i] += 1
                    if not at_dispatch:
                        bound_to[c] = _round_robin(routed, 1, n_decode)
                    w = bound_to[c]
                    _arrive(rq, rlen, rmin, w, c, rf)
                    if n_coh[w] > 0:
                        rmin[w] = -np.inf
        if status == NONFINITE:
            break
        for j in range(n_decode):
            if rlen[j] + n_coh[j] == 0 or d_free[j] > t:
                continue
            seen_by = d_last[j] if lag and n_coh[j] > 0 else t  # a busy worker admits a hand-off one iteration after seeing it
            nj = 0  # the batch: the cohort, then the first eligible hand-offs up to decode_max
            while nj < rlen[j] and n_coh[j] + nj < decode_max and rf[rq[j, nj], VISIBLE] <= seen_by:
                nj += 1
            counting = cnt[DONE] >= warm
            for x in range(nj):  # the iteration's hand-offs: their first tokens go out as it starts (oracle.tandem)
                c = rq[j, x]
                if ri[c, MADE] == 0:
                    _first_token(ri, rf, c, t, t - rf[c, BORN], counting, cnt, sc, ttfts)
            # ---- the iteration's batch and its price ----
            nb = n_coh[j] + nj
            if nb == 0:
                continue
            d_last[j] = t
            if interval > 1:  # the pass's intake, before it launches
                if since[j] >= interval:
                    _take_in(waiting, n_waiting, j, t, rf, pq, plen, pmin, routed)
                    since[j] = 0
                since[j] += 1
            kv_sum = kv_coh[j]
            for x in range(nj):
                kv_sum += ri[rq[j, x], ISL] + ri[rq[j, x], MADE]
            dur = (
                affine_ms(d_params, np.int64(0), starts, takes, nb, kv_sum)
                if d_kind == AFFINE
                else engine_ms(d_params, d_data, d_hdr, np.int64(0), starts, takes, nb, kv_sum)
            )
            if not (0.0 <= dur < np.inf):
                status = NONFINITE
                break
            end = t + dur
            previous_end = d_free[j]
            d_free[j] = end
            n_fin = 0
            # members emit, then the joiners (the eligible hand-offs) their first decode tokens
            members = n_coh[j]
            if members > 0:
                _cohort_decode(epoch, kv_coh, ring, j, members, base)
                if counting:
                    if _short(run_v, cnt, 1):
                        run_v, run_c = _room(run_v, run_c, cnt, np.int64(1))
                    _add_gaps(end - previous_end, members, cnt, run_v, run_c)
            for x in range(nj):
                gaps[x] = _decode(ri, rf, rq[j, x], end, k)
            if counting:
                if _short(run_v, cnt, nj):
                    run_v, run_c = _room(run_v, run_c, cnt, nj)
                _add_gap_list(gaps, nj, cnt, run_v, run_c)
            while n_coh[j] > 0 and hk[j, 0] == epoch[j]:
                c = hc[j, 0]
                n_coh[j] = _heap_pop(hk, hj, hc, j, n_coh[j])
                kv_coh[j] -= ri[c, ISL] + made[done_after[ri[c, OSL]]]  # its uncapped tokens, as kv_coh counted them
                ri[c, MADE] = ri[c, OSL]
                rf[c, T_LAST] = end
                fin[n_fin] = c
                n_fin += 1
            m = 0
            for x in range(nj):
                c = rq[j, x]
                if ri[c, MADE] >= ri[c, OSL]:
                    fin[n_fin] = c
                    n_fin += 1
                else:  # joins after its first decode: completes at its done_after-th
                    life = done_after[ri[c, OSL]] - 1
                    n_coh[j] = _heap_push(hk, hj, hc, j, n_coh[j], epoch[j] + life, joins[j], c)
                    joins[j] += 1
                    kv_coh[j] += ri[c, ISL] + ri[c, MADE]
                    lives[m] = life
                    m += 1
            _mark(ring, j, epoch[j], lives, m, ex_n, ex_w)
            if nj > 0:  # the joiners leave the pending hand-offs (shift left in place, no copy)
                for x in range(rlen[j] - nj):
                    rq[j, x] = rq[j, x + nj]
            rlen[j] -= nj
            rmin[j] = -np.inf if n_coh[j] > 0 else _earliest(rq, j, rlen, rf)
            if interval > 1:
                if nj > 0:  # a pass that admits hand-offs (SGLang's prebuilt batch) weighs past the interval: the next pass takes in
                    since[j] = interval
                if n_waiting[j] > 0 and n_coh[j] == 0:  # idle now: its loop spins through an intake at once
                    _take_in(waiting, n_waiting, j, end, rf, pq, plen, pmin, routed)
                    since[j] = 0
            for x in range(n_fin):
                c = fin[x]
                _complete(ri, rf, c, end, warm, cnt, sc, tpots, lats, done_born, done_t)
                _dispatch(ri, rf, cnt, c, isl_arr, osl_arr, cap, prefix, end, end + turnaround, pq, plen, pmin, routed, at_dispatch, interval,
                          n_coh, bound_to, waiting, n_waiting)  # fmt: skip
        if status == NONFINITE:
            break
        # ---- cohort decode iterations that are the next events: in a tight loop ----
        if cnt[DONE] >= stop:
            continue
        t_fixed = _next_event(p_free, plen, no_cohort, pmin)
        for w in range(n_decode):
            next_done[w] = hk[w, 0] if n_coh[w] > 0 else 0
            next_handoff[w] = _earliest(rq, w, rlen, rf)
            if n_coh[w] == 0 and rlen[w] > 0:
                t_fixed = min(t_fixed, max(d_free[w], rmin[w]))
        if cnt[DONE] >= warm:
            runs = _stretch_runs(epoch, n_coh, next_done)
            if _short(run_v, cnt, runs):
                run_v, run_c = _room(run_v, run_c, cnt, runs)
        it, status = _workers_stretch(
            t_fixed,
            d_free,
            d_last,
            lag,
            epoch,
            kv_coh,
            ring,
            base,
            n_coh,
            next_done,
            next_handoff,
            decode_max,
            since,
            n_waiting,
            interval,
            cnt[DONE] >= warm,
            it,
            bound,
            d_kind,
            d_params,
            d_data,
            d_hdr,
            fixed_n,
            fixed_i,
            fixed_f,
            starts,
            takes,
            cnt,
            run_v,
            run_c,
        )
        if status == NONFINITE:
            break
    if status == LIMIT and cnt[DONE] >= stop:
        status = OK
    return status, _stats(cnt, sc, ttfts, tpots, lats, run_v, run_c), done_born[: cnt[N_DONE]].copy(), done_t[: cnt[N_DONE]].copy()
