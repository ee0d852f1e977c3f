"""The past-the-frontier hold: the tree walk with subtree pruning answers exactly as the flat scan
over the slice's leaves (the reference's single pass), at queries inside and far outside the grid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import estimator.kernels.interp as I
import estimator.kernels.ops as K
from estimator.deployment import Deployment
from estimator.kernels import packing as L
from estimator.kernels.packing import fv, iv
from estimator.pricing import make_pricer

DEPLOYMENTS = [Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2), Deployment("meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "vllm")]


def _generation_slice(deployment: Deployment):
    pricer = make_pricer("native", deployment)
    ops = pricer.generation
    i = ops.names.index("generation_attention")
    fdat, idat, hdr = pricer.tables.kernel_tables[:3]
    base, g = L.GENERATION, int(ops.ints[i][K.I_TABLE])
    arrays = (iv(idat, hdr, base), fv(fdat, hdr, base + 1), iv(idat, hdr, base + 2), fv(fdat, hdr, base + 3), iv(idat, hdr, base + 4),
              fv(fdat, hdr, base + 7).reshape((-1, 3)),
              fv(fdat, hdr, base + 8).reshape((-1, 3)), fv(fdat, hdr, base + 6))  # fmt: skip
    return arrays, g, ops.floats[i][K.F_SOL : K.F_SOL + K.N_PARAMS], ops.floats[i][K.F_A]


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: f"{d.model.split('/')[1]}-{d.system}-{d.backend}")
@settings(max_examples=60, deadline=None)
@given(heads=st.sampled_from([1.0, 7.0, 32.0, 200.0]), log_batch=st.floats(-1.0, 13.0), log_s=st.floats(0.0, 19.0))
def test_tree_hold_equals_the_flat_scan(deployment, heads, log_batch, log_s):
    (s_off, k0, o1, k1, o2, xyz, logs, v), g, params, own_heads = _generation_slice(deployment)
    q = np.array([heads if heads != 32.0 else own_heads, 2.0**log_batch, 2.0**log_s])
    a, b = o2[o1[s_off[g]]], o2[o1[s_off[g + 1]]]
    tree = I._grid3_hold(s_off, k0, o1, k1, o2, xyz, logs, v, g, q, K.SOL_GENERATION_ATTENTION, params)
    flat = I.grid_hold(xyz[a:b], logs[a:b], v[a:b], q, K.SOL_GENERATION_ATTENTION, params)
    assert tree == flat
