"""Numba interpolation engine over silicon perf tables (SILICON mode).

Implements the resolution chain of the reference engine (perf-tables.md section 3.2):
exact hit, nested bracket-and-blend with SOL-corrected ragged survivors, a joint-log2 kNN util
hold past the frontier, 1-axis curves with a k_tail boundary hold, and the scattered-site GEMM
resolver. Every function returns (status, value): status OK, OUT_OF_RANGE or MISS; a MISS is an
error the caller turns into PerfDataMissingError.

Tables live in the packed layout of estimator.kernels.packing (fdat, idat, hdr) and a table is
named by its base slot. Logical layouts (all float64 keys sorted ascending within their node):
  grid3 = (s_off, k0, o1, k1, o2, k2, v, leaf_xyz, leaf_log): slice g owns level-0 nodes
          s_off[g]:s_off[g+1]; level-0 node i owns level-1 nodes o1[i]:o1[i+1]; level-1 node j owns
          leaves o2[j]:o2[j+1]. leaf_xyz[t] are leaf t's coordinates and leaf_log[t] their
          log2(max(v, 1e-12)), precomputed for the past-the-frontier hold.
  grid2 = (s_off, k0, o1, k1, v, leaf_xy, leaf_log): same with two levels.
  curve = (c_off, x, y): curve c owns points c_off[c]:c_off[c+1] (comm message sizes, MoE tokens).
"""

from __future__ import annotations

import math

import numpy as np

from estimator.jit import njit
from estimator.kernels.packing import fv, iv
from estimator.kernels.sol import sol

OK = 0
OUT_OF_RANGE = 1
MISS = 2

RAW = 0
SQRT = 1

HOLD_NEIGHBOURS = 4
HOLD_SLACK = 8


@njit(cache=True)
def _is_int(c):
    return c >= 0.0 and c == math.floor(c)


@njit(cache=True)
def _find_exact(keys, lo, hi, c):
    """Index of key c in keys[lo:hi] when c is an integral coordinate present there, else -1."""
    if not _is_int(c):
        return -1
    i = lo + np.searchsorted(keys[lo:hi], c)
    if i < hi and keys[i] == c:
        return i
    return -1


@njit(cache=True)
def _bracket(keys, lo, hi, c):
    """Index of the upper bracketing key of c in keys[lo:hi] (c strictly inside the range)."""
    return lo + np.searchsorted(keys[lo:hi], c)


@njit(cache=True)
def _blend(lat_lo, lat_hi, w, transform):
    if transform == SQRT:
        a = math.sqrt(lat_lo) if lat_lo > 0.0 else 0.0
        b = math.sqrt(lat_hi) if lat_hi > 0.0 else 0.0
        v = a + (b - a) * w
        return v * v
    return lat_lo + (lat_hi - lat_lo) * w


@njit(cache=True)
def _survivor(lat, kind, p, q, depth, key):
    """Re-scale a single surviving bracket along axis `depth` by SOL(query)/SOL(snapped)."""
    snapped = q.copy()
    snapped[depth] = key
    sol_q = sol(kind, p, q)
    sol_s = sol(kind, p, snapped)
    if math.isfinite(sol_q) and math.isfinite(sol_s) and sol_q > 0.0 and sol_s > 0.0:
        return lat * (sol_q / sol_s)
    return lat


@njit(cache=True)
def _combine(st_lo, v_lo, k_lo, st_hi, v_hi, k_hi, c, depth, transform_axis, kind, p, q):
    """Merge the two bracket results of one level (both, one or no survivor)."""
    if st_lo == OK and st_hi == OK:
        w = (c - k_lo) / (k_hi - k_lo)
        t = SQRT if depth == transform_axis else RAW
        return OK, _blend(v_lo, v_hi, w, t)
    if st_lo == OK:
        return OK, _survivor(v_lo, kind, p, q, depth, k_lo)
    if st_hi == OK:
        return OK, _survivor(v_hi, kind, p, q, depth, k_hi)
    if st_lo == OUT_OF_RANGE or st_hi == OUT_OF_RANGE:
        return OUT_OF_RANGE, 0.0
    return MISS, 0.0


@njit(cache=True)
def _level_leaf(keys, vals, lo, hi, c):
    """Innermost level: keys[lo:hi] map straight to leaf values."""
    if hi <= lo:
        return MISS, 0.0, 0.0, 0.0, 0.0
    i = _find_exact(keys, lo, hi, c)
    if i >= 0:
        return OK, vals[i], 0.0, 0.0, -1.0
    if c < keys[lo] or c > keys[hi - 1]:
        return OUT_OF_RANGE, 0.0, 0.0, 0.0, 0.0
    j = _bracket(keys, lo, hi, c)
    # both children are leaves: always resolvable
    return 3, vals[j - 1], vals[j], keys[j - 1], keys[j]


@njit(cache=True)
def _grid_leaf_level(keys, vals, lo, hi, q, depth, transform_axis, kind, p):
    st, a, b, ka, kb = _level_leaf(keys, vals, lo, hi, q[depth])
    if st == 3:
        w = (q[depth] - ka) / (kb - ka)
        t = SQRT if depth == transform_axis else RAW
        return OK, _blend(a, b, w, t)
    return st, a


@njit(cache=True)
def _grid2_node(k1, o2, k2, v, lo, hi, q, base, transform_axis, kind, p):
    """Resolve a 2-level subtree (axes base, base+1) whose outer keys are k1[lo:hi]."""
    if hi <= lo:
        return MISS, 0.0
    c = q[base]
    i = _find_exact(k1, lo, hi, c)
    if i >= 0:
        return _grid_leaf_level(k2, v, o2[i], o2[i + 1], q, base + 1, transform_axis, kind, p)
    if c < k1[lo] or c > k1[hi - 1]:
        return OUT_OF_RANGE, 0.0
    j = _bracket(k1, lo, hi, c)
    st_lo, v_lo = _grid_leaf_level(k2, v, o2[j - 1], o2[j], q, base + 1, transform_axis, kind, p)
    st_hi, v_hi = _grid_leaf_level(k2, v, o2[j], o2[j + 1], q, base + 1, transform_axis, kind, p)
    return _combine(st_lo, v_lo, k1[j - 1], st_hi, v_hi, k1[j], c, base, transform_axis, kind, p, q)


@njit(cache=True)
def _grid3_interior(s_off, k0, o1, k1, o2, k2, v, g, q, transform_axis, kind, p):
    lo, hi = s_off[g], s_off[g + 1]
    if hi <= lo:
        return MISS, 0.0
    c = q[0]
    i = _find_exact(k0, lo, hi, c)
    if i >= 0:
        return _grid2_node(k1, o2, k2, v, o1[i], o1[i + 1], q, np.int64(1), transform_axis, kind, p)
    if c < k0[lo] or c > k0[hi - 1]:
        return OUT_OF_RANGE, 0.0
    j = _bracket(k0, lo, hi, c)
    st_lo, v_lo = _grid2_node(k1, o2, k2, v, o1[j - 1], o1[j], q, np.int64(1), transform_axis, kind, p)
    st_hi, v_hi = _grid2_node(k1, o2, k2, v, o1[j], o1[j + 1], q, np.int64(1), transform_axis, kind, p)
    return _combine(st_lo, v_lo, k0[j - 1], st_hi, v_hi, k0[j], c, np.int64(0), transform_axis, kind, p, q)


@njit(cache=True)
def _log2c(x):
    return math.log2(max(x, 1e-12))


@njit(cache=True)
def _pick_anchors(cand_d, cand_idx, coords, lat, kind, p):
    """The first HOLD_NEIGHBOURS valid candidates (ascending distance; candidate t is leaf
    cand_idx[t]) and the support radius R (the next valid distance; inf when there is none). A
    leaf's SOL is computed only when the candidate is reached. Returns (n, d[], util[], R, R_found)."""
    n_pick = 0
    pick_d = np.empty(HOLD_NEIGHBOURS)
    pick_u = np.empty(HOLD_NEIGHBOURS)
    for t in range(cand_d.shape[0]):
        la = lat[cand_idx[t]]
        if not (math.isfinite(la) and la > 0.0):
            continue
        sa = sol(kind, p, coords[cand_idx[t]])
        if not (math.isfinite(sa) and sa > 0.0):
            continue
        if n_pick == HOLD_NEIGHBOURS:
            return n_pick, pick_d, pick_u, cand_d[t], True
        pick_d[n_pick] = cand_d[t]
        pick_u[n_pick] = sa / la
        n_pick += 1
    return n_pick, pick_d, pick_u, np.inf, False


@njit(cache=True)
def _insert(buf_d, buf_i, nb, d, idx):
    """Insert (d, idx) into the best-M buffer kept in ascending (distance, leaf index) order;
    returns the new size. The buffer ends up holding the M smallest pairs whatever the visit order
    (for a scan in leaf order this is the reference's rule: ties keep visit order)."""
    m = buf_d.shape[0]
    if nb == m:
        if d > buf_d[m - 1] or (d == buf_d[m - 1] and idx > buf_i[m - 1]):
            return nb
        nb -= 1
    pos = nb
    while pos > 0 and (buf_d[pos - 1] > d or (buf_d[pos - 1] == d and buf_i[pos - 1] > idx)):
        buf_d[pos] = buf_d[pos - 1]
        buf_i[pos] = buf_i[pos - 1]
        pos -= 1
    buf_d[pos] = d
    buf_i[pos] = idx
    return nb + 1


@njit(cache=True)
def _buffered_anchors(buf_d, buf_i, nb, coords, lat, kind, p):
    return _pick_anchors(buf_d[:nb], buf_i[:nb], coords, lat, kind, p)


@njit(cache=True)
def _hold_finish(n_pick, pick_d, pick_u, support_r, kind, p, q):
    if n_pick == 0:
        return MISS, 0.0
    wsum = 0.0
    weights = np.empty(n_pick)
    for i in range(n_pick):
        d = pick_d[i]
        if math.isinf(support_r):
            w = 1.0 / (d * d + 1e-12)
        else:
            t = max(support_r - d, 0.0) / (support_r * d + 1e-12)
            w = t * t
        weights[i] = w
        wsum += w
    if wsum <= 0.0:
        for i in range(n_pick):
            weights[i] = 1.0
        wsum = float(n_pick)
    u_acc = 0.0
    for i in range(n_pick):
        u_acc += weights[i] * pick_u[i]
    sol_q = sol(kind, p, q)
    if not (sol_q > 0.0):
        return MISS, 0.0
    return OK, sol_q / (u_acc / wsum)


@njit(cache=True)
def grid_hold(coords, logs, lat, q, kind, p):
    """Joint-log2 kNN hold over the given leaves (reference: single pass with a best-M buffer,
    exhaustive re-selection when too many buffered leaves are invalid)."""
    n, d_axes = coords.shape
    if n == 0:
        return MISS, 0.0
    q_log = np.empty(d_axes)
    for a in range(d_axes):
        q_log[a] = _log2c(q[a])
    dist = np.empty(n)
    for r in range(n):
        dd = 0.0
        for a in range(d_axes):
            delta = logs[r, a] - q_log[a]
            dd += delta * delta
        dist[r] = math.sqrt(dd)
    buf_d = np.empty(HOLD_NEIGHBOURS + HOLD_SLACK)
    buf_i = np.empty(HOLD_NEIGHBOURS + HOLD_SLACK, dtype=np.int64)
    nb = np.int64(0)  # (not a literal: see gemm._eval_curve)
    for r in range(n):
        nb = _insert(buf_d, buf_i, nb, dist[r], r)
    picked = _buffered_anchors(buf_d, buf_i, nb, coords, lat, kind, p)
    if n > buf_d.shape[0] and not picked[4] and picked[0] <= HOLD_NEIGHBOURS:
        order = np.argsort(dist, kind="mergesort")
        picked = _pick_anchors(dist[order], order, coords, lat, kind, p)
    return _hold_finish(picked[0], picked[1], picked[2], picked[3], kind, p, q)


@njit(cache=True)
def _first_at_or_above(keys, lo, hi, x):
    """The first index in [lo, hi) whose key is >= x (hi when none); keys ascending."""
    while lo < hi and keys[lo] < x:
        lo += 1
    return lo


@njit(cache=True)
def _nearer_side(left, lo, right, hi, d_left, d_right):
    """Which pointer to visit next: 0 for left, 1 for right, -1 when both sides are done."""
    if left < lo and right >= hi:
        return -1
    if right >= hi or (left >= lo and d_left <= d_right):
        return 0
    return 1


@njit(cache=True)
def _grid3_hold(s_off, k0, o1, k1, o2, xyz, logs, v, g, q, kind, p):
    """grid_hold over slice g, walking each level's nodes outward from the query (nearest first on
    either side) and closing a side once its next node's partial distance exceeds the full buffer's
    worst. The buffer keeps the smallest (distance, leaf index) pairs in any visit order, so the
    result is the flat scan's (tested)."""
    lo, hi = s_off[g], s_off[g + 1]
    q0, q1, q2 = _log2c(q[0]), _log2c(q[1]), _log2c(q[2])
    m = HOLD_NEIGHBOURS + HOLD_SLACK
    buf_d = np.empty(m)
    buf_i = np.empty(m, dtype=np.int64)
    nb = np.int64(0)  # (not a literal: see gemm._eval_curve)
    right = _first_at_or_above(k0, lo, hi, q[0])
    left = right - 1
    while True:
        d_left = (logs[o2[o1[left]], 0] - q0) ** 2 if left >= lo and o2[o1[left]] < o2[o1[left + 1]] else 0.0
        d_right = (logs[o2[o1[right]], 0] - q0) ** 2 if right < hi and o2[o1[right]] < o2[o1[right + 1]] else 0.0
        side = _nearer_side(left, lo, right, hi, d_left, d_right)
        if side < 0:
            break
        i = left if side == 0 else right
        d0 = d_left if side == 0 else d_right
        empty = o2[o1[i]] >= o2[o1[i + 1]]
        if not empty and nb == m and math.sqrt(d0) > buf_d[m - 1]:
            if side == 0:
                left = lo - 1
            else:
                right = hi
            continue
        if side == 0:
            left -= 1
        else:
            right += 1
        if empty:
            continue
        a1, b1 = o1[i], o1[i + 1]
        r1 = _first_at_or_above(k1, a1, b1, q[1])
        l1 = r1 - 1
        while True:
            e_left = d0 + (logs[o2[l1], 1] - q1) ** 2 if l1 >= a1 and o2[l1] < o2[l1 + 1] else 0.0
            e_right = d0 + (logs[o2[r1], 1] - q1) ** 2 if r1 < b1 and o2[r1] < o2[r1 + 1] else 0.0
            side1 = _nearer_side(l1, a1, r1, b1, e_left, e_right)
            if side1 < 0:
                break
            j = l1 if side1 == 0 else r1
            d1 = e_left if side1 == 0 else e_right
            if side1 == 0:
                l1 -= 1
            else:
                r1 += 1
            if o2[j] >= o2[j + 1]:
                continue
            if nb == m and math.sqrt(d1) > buf_d[m - 1]:
                if side1 == 0:
                    l1 = a1 - 1
                else:
                    r1 = b1
                continue
            for t in range(o2[j], o2[j + 1]):
                delta = logs[t, 2] - q2
                nb = _insert(buf_d, buf_i, nb, math.sqrt(d1 + delta * delta), t)
    if nb == 0:
        return MISS, 0.0
    a, b = o2[o1[lo]], o2[o1[hi]]
    picked = _buffered_anchors(buf_d, buf_i, nb, xyz, v, kind, p)
    if b - a > m and not picked[4] and picked[0] <= HOLD_NEIGHBOURS:
        return grid_hold(xyz[a:b], logs[a:b], v[a:b], q, kind, p)
    return _hold_finish(picked[0], picked[1], picked[2], picked[3], kind, p, q)


@njit(cache=True)
def grid3_query(fdat, idat, hdr, base, g, q, transform_axis, kind, p):
    """Resolve query q (3 coords) in slice g of the grid3 at slot `base`: interior, else hold past the frontier."""
    s_off, o1, o2 = iv(idat, hdr, base), iv(idat, hdr, base + 2), iv(idat, hdr, base + 4)
    v = fv(fdat, hdr, base + 6)
    st, val = _grid3_interior(s_off, fv(fdat, hdr, base + 1), o1, fv(fdat, hdr, base + 3), o2, fv(fdat, hdr, base + 5), v, g, q, transform_axis, kind, p)
    if st == OUT_OF_RANGE:
        xyz = fv(fdat, hdr, base + 7).reshape((-1, 3))
        logs = fv(fdat, hdr, base + 8).reshape((-1, 3))
        return _grid3_hold(s_off, fv(fdat, hdr, base + 1), o1, fv(fdat, hdr, base + 3), o2, xyz, logs, v, g, q, kind, p)
    return st, val


@njit(cache=True)
def grid2_query(fdat, idat, hdr, base, g, q, kind, p):
    """Raw 2-axis grid resolve of q (2 coords) in slice g of the grid2 at slot `base`, with the kNN hold past the frontier."""
    s_off, o1 = iv(idat, hdr, base), iv(idat, hdr, base + 2)
    v = fv(fdat, hdr, base + 4)
    lo, hi = s_off[g], s_off[g + 1]
    if hi <= lo:
        return MISS, 0.0
    st, val = _grid2_node(fv(fdat, hdr, base + 1), o1, fv(fdat, hdr, base + 3), v, lo, hi, q, np.int64(0), np.int64(-1), kind, p)
    if st == OUT_OF_RANGE:
        a, b = o1[lo], o1[hi]
        xy = fv(fdat, hdr, base + 5).reshape((-1, 2))
        logs = fv(fdat, hdr, base + 6).reshape((-1, 2))
        return grid_hold(xy[a:b], logs[a:b], v[a:b], q, kind, p)
    return st, val


@njit(cache=True)
def curve_query(fdat, idat, hdr, base, c, x, kind, p):
    """1-axis curve c of the curve set at slot `base`: exact, linear inside, SOL-ratio hold of the
    end point (k_tail = 1) outside."""
    c_off, xs, ys = iv(idat, hdr, base), fv(fdat, hdr, base + 1), fv(fdat, hdr, base + 2)
    lo, hi = c_off[c], c_off[c + 1]
    if hi <= lo:
        return MISS, 0.0
    i = _find_exact(xs, lo, hi, x)
    if i >= 0:
        return OK, ys[i]
    if x < xs[lo] or x > xs[hi - 1]:
        a = hi - 1 if x > xs[hi - 1] else lo
        q = np.empty(1)
        qa = np.empty(1)
        q[0] = x
        qa[0] = xs[a]
        sol_a = sol(kind, p, qa)
        if not (ys[a] > 0.0 and sol_a > 0.0):
            return MISS, 0.0
        sol_q = sol(kind, p, q)
        if not (sol_q > 0.0):
            return MISS, 0.0
        return OK, sol_q / (sol_a / ys[a])
    j = _bracket(xs, lo, hi, x)
    w = (x - xs[j - 1]) / (xs[j] - xs[j - 1])
    return OK, ys[j - 1] + (ys[j] - ys[j - 1]) * w


@njit(cache=True)
def token_curve_query(fdat, idat, hdr, base, c, x, kind, p):
    """curve_query, except that a single-point curve queried below its point is a MISS: one measured
    token count cannot define the low-token launch floor."""
    c_off, xs = iv(idat, hdr, base), fv(fdat, hdr, base + 1)
    lo = c_off[c]
    if c_off[c + 1] - lo == 1 and x < xs[lo]:
        return MISS, 0.0
    return curve_query(fdat, idat, hdr, base, c, x, kind, p)
