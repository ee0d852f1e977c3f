"""Scattered-site GEMM resolver (perf-tables.md section 3.2, item 5), SILICON mode.

Sites are (n, k) shapes each owning an m-curve. A known site answers from its own curve (exact,
linear, or a k_tail = 3 median util hold past the sweep); an unknown shape transfers util from up to
4 covering neighbour sites within 2 octaves in log2 (n, k), with the scale-up frontier waiver.
"""

from __future__ import annotations

import math

import numpy as np

from estimator.jit import njit
from estimator.kernels.interp import MISS, OK, _find_exact
from estimator.kernels.packing import fv, iv
from estimator.kernels.sol import SOL_GEMM, sol

NN_SITES = 4
MAX_SITE_DISTANCE = 2.0
K_TAIL = 3


@njit(cache=True)
def _median(values, n):
    v = np.sort(values[:n])
    if n % 2 == 1:
        return v[n // 2]
    return (v[n // 2 - 1] + v[n // 2]) / 2.0


@njit(cache=True)
def _eval_curve(cm, cl, lo, hi, m, n, k, p):
    """Site curve cm[lo:hi] at m, the site's own (n, k) in the SOL."""
    q = np.empty(3)
    q[1] = n
    q[2] = k
    i = _find_exact(cm, lo, hi, m)
    if i >= 0:
        return OK, cl[i]
    count = hi - lo
    if m < cm[lo] or m > cm[hi - 1] or count < 2:
        if m < cm[lo]:
            t0, t1 = lo, lo + min(K_TAIL, count)
        else:
            t0, t1 = hi - min(K_TAIL, count), hi
        utils = np.empty(K_TAIL)
        nu = np.int64(0)  # not a literal 0: numba would also compile _median for Literal[int](0)
        for t in range(t0, t1):
            q[0] = cm[t]
            s = sol(SOL_GEMM, p, q)
            if cl[t] > 0.0 and s > 0.0:
                utils[nu] = s / cl[t]
                nu += 1
        if nu == 0:
            return MISS, 0.0
        q[0] = m
        sol_q = sol(SOL_GEMM, p, q)
        if not (sol_q > 0.0):
            return MISS, 0.0
        return OK, sol_q / _median(utils, nu)
    j = lo + np.searchsorted(cm[lo:hi], m)
    w = (m - cm[j - 1]) / (cm[j] - cm[j - 1])
    return OK, cl[j - 1] + (cl[j] - cl[j - 1]) * w


@njit(cache=True)
def _frontier_waiver(site_n, site_k, site_ln, site_lk, cand, n_cand, n, k, ln, lk):
    """Admissible anchors for a scale-up frontier query, as a mask over cand[:n_cand] (None = miss)."""
    lo_n, hi_n, lo_k, hi_k = np.inf, -np.inf, np.inf, -np.inf
    for t in range(n_cand):
        i = cand[t]
        lo_n = min(lo_n, site_n[i])
        hi_n = max(hi_n, site_n[i])
        lo_k = min(lo_k, site_k[i])
        hi_k = max(hi_k, site_k[i])
    keep = np.zeros(n_cand, dtype=np.bool_)
    if n < lo_n or k < lo_k:
        return False, keep
    over_n = n > hi_n
    over_k = k > hi_k
    if over_n == over_k:
        return False, keep
    any_keep = False
    for t in range(n_cand):
        i = cand[t]
        resid = abs(site_lk[i] - lk) if over_n else abs(site_ln[i] - ln)
        if resid <= MAX_SITE_DISTANCE:
            keep[t] = True
            any_keep = True
    return any_keep, keep


@njit(cache=True)
def _distance(site_ln, site_lk, i, ln, lk):
    """log2 distance of site i from the query shape in (n, k)."""
    a = site_ln[i] - ln
    b = site_lk[i] - lk
    return math.sqrt(a * a + b * b)


@njit(cache=True)
def _covers(cm, curve_off, i, m):
    return cm[curve_off[i]] <= m <= cm[curve_off[i + 1] - 1]


@njit(cache=True)
def _idw(picks, n_picks, site_n, site_k, site_ln, site_lk, curve_off, cm, cl, m, n, k, p):
    """Inverse-distance-squared util transfer from the picked neighbour sites (in pick order)."""
    ln = math.log2(max(n, 1e-12))
    lk = math.log2(max(k, 1e-12))
    wsum = 0.0
    u_acc = 0.0
    qn = np.empty(3)
    qn[0] = m
    for t in range(n_picks):
        i = picks[t]
        st, lat_i = _eval_curve(cm, cl, curve_off[i], curve_off[i + 1], m, site_n[i], site_k[i], p)
        if st != OK:
            continue
        qn[1] = site_n[i]
        qn[2] = site_k[i]
        sol_i = sol(SOL_GEMM, p, qn)
        if not (math.isfinite(lat_i) and lat_i > 0.0 and math.isfinite(sol_i) and sol_i > 0.0):
            continue
        d = _distance(site_ln, site_lk, i, ln, lk)
        w = 1.0 / (d * d + 1e-12)
        u_acc += w * (sol_i / lat_i)
        wsum += w
    if wsum <= 0.0:
        return MISS, 0.0
    qn[1] = n
    qn[2] = k
    sol_q = sol(SOL_GEMM, p, qn)
    if not (sol_q > 0.0):
        return MISS, 0.0
    return OK, sol_q / (u_acc / wsum)


@njit(cache=True)
def _exact_site(packed_key, packed_site, s0, s1, n, k):
    """Site index of an exactly collected (n, k), else -1."""
    if n >= 0 and k >= 0 and n == math.floor(n) and k == math.floor(k):
        key = (np.int64(n) << 32) | np.int64(k)
        j = s0 + np.searchsorted(packed_key[s0:s1], key)
        if j < s1 and packed_key[j] == key:
            return packed_site[j]
    return -1


@njit(cache=True)
def gated_sites(fdat, idat, hdr, base, d, n, k):
    """Sites of dtype d within the distance gate of (n, k), ordered by (distance, site index).

    Computed once per op at compile time; gemm_query then picks the nearest covering ones."""
    site_off = iv(idat, hdr, base)
    site_ln, site_lk = fv(fdat, hdr, base + 3), fv(fdat, hdr, base + 4)
    s0, s1 = site_off[d], site_off[d + 1]
    ln = math.log2(max(n, 1e-12))
    lk = math.log2(max(k, 1e-12))
    dist = np.empty(s1 - s0)
    for i in range(s0, s1):
        dist[i - s0] = _distance(site_ln, site_lk, i, ln, lk)
    order = np.argsort(dist, kind="mergesort")  # stable: ties keep site index order
    gated = order[dist[order] <= MAX_SITE_DISTANCE]
    return gated + s0


@njit(cache=True)
def gemm_query(fdat, idat, hdr, base, d, m, n, k, p, near, n_near):
    """Latency (ms) of an (m, n, k) GEMM of dtype id d from the site table at slot `base` (status, value).

    near[:n_near] are the sites gated_sites() precomputed for this (n, k) (n_near < 0: not
    precomputed). They answer directly unless the frontier waiver is needed."""
    site_off, curve_off = iv(idat, hdr, base), iv(idat, hdr, base + 5)
    site_n, site_k = fv(fdat, hdr, base + 1), fv(fdat, hdr, base + 2)
    site_ln, site_lk = fv(fdat, hdr, base + 3), fv(fdat, hdr, base + 4)
    cm, cl = fv(fdat, hdr, base + 6), fv(fdat, hdr, base + 7)
    s0, s1 = site_off[d], site_off[d + 1]
    if s1 <= s0:
        return MISS, 0.0
    i = _exact_site(iv(idat, hdr, base + 8), iv(idat, hdr, base + 9), s0, s1, n, k)
    if i >= 0:
        return _eval_curve(cm, cl, curve_off[i], curve_off[i + 1], m, n, k, p)
    if n_near > 0:
        picks = np.empty(NN_SITES, dtype=np.int64)
        n_picks = 0
        for t in range(n_near):
            if _covers(cm, curve_off, near[t], m):
                picks[n_picks] = near[t]
                n_picks += 1
                if n_picks == NN_SITES:
                    break
        if n_picks == 0 and not _any_covers(cm, curve_off, s0, s1, m):
            for t in range(min(n_near, NN_SITES)):
                picks[t] = near[t]
            n_picks = min(n_near, NN_SITES)
        if n_picks > 0:
            return _idw(picks, n_picks, site_n, site_k, site_ln, site_lk, curve_off, cm, cl, m, n, k, p)
    return _scan_query(site_n, site_k, site_ln, site_lk, curve_off, cm, cl, s0, s1, m, n, k, p)


@njit(cache=True)
def _any_covers(cm, curve_off, s0, s1, m):
    for i in range(s0, s1):
        if _covers(cm, curve_off, i, m):
            return True
    return False


@njit(cache=True)
def _scan_query(site_n, site_k, site_ln, site_lk, curve_off, cm, cl, s0, s1, m, n, k, p):
    """The full unknown-site resolution: coverage filter, distance gate, frontier waiver, 4 nearest."""
    ln = math.log2(max(n, 1e-12))
    lk = math.log2(max(k, 1e-12))
    ns = s1 - s0
    cand = np.empty(ns, dtype=np.int64)
    dist = np.empty(ns)
    nc = np.int64(0)  # (not a literal: see _eval_curve)
    for i in range(s0, s1):
        if _covers(cm, curve_off, i, m):
            cand[nc] = i
            nc += 1
    if nc == 0:
        for i in range(s0, s1):
            cand[nc] = i
            nc += 1
    for t in range(nc):
        dist[t] = _distance(site_ln, site_lk, cand[t], ln, lk)
    gated = 0
    for t in range(nc):
        if dist[t] <= MAX_SITE_DISTANCE:
            cand[gated] = cand[t]
            dist[gated] = dist[t]
            gated += 1
    if gated == 0:
        ok, keep = _frontier_waiver(site_n, site_k, site_ln, site_lk, cand, nc, n, k, ln, lk)
        if not ok:
            return MISS, 0.0
        for t in range(nc):
            if keep[t]:
                cand[gated] = cand[t]
                dist[gated] = dist[t]
                gated += 1
    # nearest NN_SITES by (distance, site index)
    order = np.arange(gated)
    for a in range(gated):
        for b in range(a + 1, gated):
            ia, ib = order[a], order[b]
            if dist[ib] < dist[ia] or (dist[ib] == dist[ia] and cand[ib] < cand[ia]):
                order[a], order[b] = ib, ia
        if a + 1 >= NN_SITES:
            break
    picks = np.empty(NN_SITES, dtype=np.int64)
    n_picks = min(NN_SITES, gated)
    for t in range(n_picks):
        picks[t] = cand[order[t]]
    return _idw(picks, n_picks, site_n, site_k, site_ln, site_lk, curve_off, cm, cl, m, n, k, p)
