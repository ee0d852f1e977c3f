"""Load rules of the NCCL and MoE curve builders on synthetic parquet files (no reference needed)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from estimator.perf import families as F
from estimator.perf.sources import TableSource


def _source(tmp_path, name: str, columns: dict) -> TableSource:
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table(columns), path)
    return TableSource(path, "primary", "0", None)


def _points(curves, key) -> list[tuple[float, float]]:
    c_off, x, y = curves.arrays
    c = curves.curves[key]
    return list(zip(x[c_off[c] : c_off[c + 1]].tolist(), y[c_off[c] : c_off[c + 1]].tolist()))


def _collective(tmp_path, name: str, rows: list[tuple]) -> TableSource:
    dtype, op, gpus, size, lat = zip(*rows)
    return _source(tmp_path, name, {"nccl_dtype": list(dtype), "op_name": list(op), "num_gpus": list(gpus), "message_size": list(size), "latency": list(lat)})


def test_nccl_key_comes_whole_from_the_first_library_and_first_row_wins(tmp_path):
    nccl = _collective(tmp_path, "nccl", [("half", "all_gather", 2, 256, 1.0), ("half", "all_gather", 2, 256, 9.0), ("half", "all_gather", 2, 1024, 2.0)])
    oneccl = _collective(tmp_path, "oneccl", [("half", "all_gather", 2, 512, 5.0), ("half", "all_reduce", 4, 256, 3.0)])
    curves = F.build_nccl([nccl, oneccl])
    assert _points(curves, ("half", "all_gather", 2)) == [(256.0, 1.0), (1024.0, 2.0)]
    assert _points(curves, ("half", "all_reduce", 4)) == [(256.0, 3.0)]
    assert F.build_nccl([]).curves == {}


def _moe_rows(tmp_path, rows: list[tuple]) -> TableSource:
    kernel, dtype, dist, tokens, lat = zip(*rows)
    n = len(rows)
    shape = {"topk": [8] * n, "num_experts": [128] * n, "hidden_size": [4096] * n, "inter_size": [1536] * n, "moe_tp_size": [1] * n, "moe_ep_size": [8] * n}
    return _source(
        tmp_path,
        "moe",
        {"kernel_source": list(kernel), "moe_dtype": list(dtype), "distribution": list(dist), **shape, "num_tokens": list(tokens), "latency": list(lat)},
    )


SHAPE = (8, 128, 4096, 1536, 1, 8)


def test_moe_grids_rekeys_and_first_row_wins(tmp_path):
    src = _moe_rows(
        tmp_path,
        [
            ("moe_torch_flow", "nvfp4", "balanced", 16, 1.0),
            ("moe_torch_flow", "nvfp4", "balanced", 16, 7.0),
            ("moe_torch_flow_min_latency", "nvfp4", "balanced", 16, 0.5),
            ("sglang_flashinfer_cutlass_moe", "w4a16_mxfp4", "balanced", 16, 2.0),
            ("sglang_mxfp4_flashinfer_trtllm_moe", "w4a8_mxfp4_mxfp8", "balanced", 16, 3.0),
        ],
    )
    moe = F.build_moe([src])
    assert _points(moe, (F.MOE_DEFAULT, "nvfp4", "balanced", *SHAPE)) == [(16.0, 1.0)]
    assert _points(moe, (F.MOE_MIN_LATENCY, "nvfp4", "balanced", *SHAPE)) == [(16.0, 0.5)]
    assert moe.curve(F.MOE_DEFAULT, "w4a16_mxfp4_cutlass", "balanced", SHAPE) >= 0
    assert moe.curve(F.MOE_DEFAULT, "w4a8_mxfp4_mxfp8_trtllm", "balanced", SHAPE) >= 0
    assert moe.curve(F.MOE_DEFAULT, "w4a16_mxfp4", "balanced", SHAPE) == -1


def test_moe_uniform_fallback_only_for_distributions_the_quant_never_collected(tmp_path):
    src = _moe_rows(tmp_path, [("k", "fp8", "uniform", 1, 1.0), ("k", "fp8", "power_law_1.2", 1, 2.0)])
    moe = F.build_moe([src])
    uniform = moe.curve(F.MOE_DEFAULT, "fp8", "uniform", SHAPE)
    assert moe.curve(F.MOE_DEFAULT, "fp8", "balanced", SHAPE) == uniform >= 0
    assert moe.curve(F.MOE_DEFAULT, "fp8", "power_law_1.2", SHAPE) not in (-1, uniform)
    assert moe.curve(F.MOE_DEFAULT, "fp8", "power_law_1.2", (8, 128, 4096, 1600, 1, 8)) == -1
    assert moe.curve(F.MOE_DEFAULT, "bfloat16", "uniform", SHAPE) == -1
    assert np.array_equal(F.build_moe([]).arrays[0], [0])
