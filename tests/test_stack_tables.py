"""Perf-table loading for every shipped (system, backend, version) stack, and the on-disk cache."""
from __future__ import annotations

import pytest

import estimator.perf.stack as S
from estimator.errors import UnknownBackendError, UnknownSystemError, UnknownVersionError
from estimator.perf.versions import list_stacks

SAMPLE = (("b60", "vllm"), ("gb200", "trtllm"), ("a100_sxm", "sglang"), ("b300_sxm", "sglang"))


def _assert_built(st: S.StackTables) -> None:
    assert st.gemm.dtypes and st.context_attention.slices and st.generation_attention.slices
    fdat, idat, hdr = st.kernel_tables
    assert fdat.size and idat.size and hdr.size


@pytest.mark.parametrize("system, backend", SAMPLE, ids=lambda v: str(v))
def test_representative_stacks_build(system, backend):
    _assert_built(S.load_stack(system, backend))


@pytest.mark.full
@pytest.mark.parametrize("stack", list_stacks(), ids=lambda s: "-".join(s))
def test_every_shipped_stack_builds(stack):
    _assert_built(S.load_stack(*stack))


def test_warm_load_skips_parquet(tmp_path, monkeypatch):
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(tmp_path))
    S.load_stack.cache_clear()
    cold = S.load_stack("h100_sxm", "sglang")
    S.load_stack.cache_clear()

    def no_parquet(*args, **kwargs):
        raise AssertionError("warm load rebuilt the tables from parquet")

    monkeypatch.setattr(S, "_build", no_parquet)
    warm = S.load_stack("h100_sxm", "sglang")
    assert [a.tobytes() for a in warm.kernel_tables] == [a.tobytes() for a in cold.kernel_tables]
    S.load_stack.cache_clear()


def test_corrupt_cache_file_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(tmp_path))
    S.load_stack.cache_clear()
    S.load_stack("h100_sxm", "vllm")
    for path in (tmp_path / "tables").glob("*.pkl"):
        path.write_bytes(b"not a pickle")
    S.load_stack.cache_clear()
    _assert_built(S.load_stack("h100_sxm", "vllm"))
    S.load_stack.cache_clear()


@pytest.mark.parametrize(
    "args, error, named",
    [
        (("h900_sxm", "sglang", None), UnknownSystemError, "h900_sxm"),
        (("h200_sxm", "tensorrt", None), UnknownBackendError, "tensorrt"),
        (("h200_sxm", "sglang", "0.0.1"), UnknownVersionError, "0.0.1"),
    ],
)
def test_bad_stack_names_the_bad_value(args, error, named):
    with pytest.raises(error, match=named):
        S.load_stack(*args)
