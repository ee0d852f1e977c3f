"""One stack's tables packed into three flat arrays, so kernels pass 3 arrays instead of ~45.

Every table array occupies a slot: hdr[2*slot]:hdr[2*slot+1] is its extent in fdat (float64
arrays) or idat (int64 arrays). Two-dimensional leaf coordinate arrays are stored flattened,
row-major. Slot numbers are fixed by the table order below.
"""

from __future__ import annotations

import numpy as np

from estimator.jit import njit

GEMM = 0  # 10 arrays: site_off, site_n, site_k, site_ln, site_lk, curve_off, cm, cl, packed_key, packed_site
CONTEXT = 10  # grid3, 9 arrays: s_off, k0, o1, k1, o2, k2, v, leaf_xyz, leaf_log
GENERATION = 19  # grid3
ALLREDUCE = 28  # curves, 3 arrays: c_off, x, y
COMPUTE_SCALE = 31  # grid2, 7 arrays: s_off, k0, o1, k1, v, leaf_xy, leaf_log
SCALE_MATRIX = 38  # grid2
NCCL = 45  # curves over message size, keyed (dtype, operation, num_gpus)
MOE = 48  # curves over tokens, keyed (grid, quant, distribution, topk, experts, hidden, inter, moe_tp, moe_ep)
N_SLOTS = 51


def pack(tables: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fdat, idat, hdr) from the table tuples in slot order (gemm, context, generation, allreduce,
    compute_scale, scale_matrix, nccl, moe)."""
    arrays = [a for table in tables for a in table]
    if len(arrays) != N_SLOTS:
        raise ValueError(f"expected {N_SLOTS} table arrays, got {len(arrays)}")
    floats, ints, hdr = [], [], np.zeros(2 * N_SLOTS, dtype=np.int64)
    f_end = i_end = 0
    for slot, a in enumerate(arrays):
        if a.dtype.kind in "iu":
            ints.append(a.astype(np.int64).ravel())
            hdr[2 * slot], i_end = i_end, i_end + a.size
            hdr[2 * slot + 1] = i_end
        else:
            floats.append(a.astype(np.float64).ravel())
            hdr[2 * slot], f_end = f_end, f_end + a.size
            hdr[2 * slot + 1] = f_end
    return np.concatenate(floats), np.concatenate(ints), hdr


@njit(cache=True, inline="always")
def fv(fdat, hdr, slot):
    """View of the float64 array in `slot`."""
    return fdat[hdr[2 * slot] : hdr[2 * slot + 1]]


@njit(cache=True, inline="always")
def iv(idat, hdr, slot):
    """View of the int64 array in `slot`."""
    return idat[hdr[2 * slot] : hdr[2 * slot + 1]]
