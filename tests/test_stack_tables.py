"""Perf-table loading for every shipped (system, backend, version) stack, and the on-disk cache."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import estimator.perf.stack as S
from estimator.errors import UnknownBackendError, UnknownSystemError, UnknownVersionError
from estimator.perf.tables import first_wins, slice_ids_of
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


# ---- categorical keys: the hashed codes against the plain Python definition ----------------------


@st.composite
def key_columns(draw):
    """One to three key columns of one length: strings (object arrays) and floats."""
    n = draw(st.integers(1, 60))
    kinds = draw(st.lists(st.sampled_from(["str", "float"]), min_size=1, max_size=3))
    columns = []
    for kind in kinds:
        if kind == "str":
            columns.append(np.array(draw(st.lists(st.sampled_from(["fp8", "fp8_block", "float16", "nvfp4"]), min_size=n, max_size=n)), dtype=object))
        else:
            columns.append(np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 64.0, 128.0, 0.5]), min_size=n, max_size=n)), dtype=np.float64))
    return columns


@given(key_columns())
def test_slice_ids_are_the_sorted_distinct_key_tuples(columns):
    rows = list(zip(*[c.tolist() for c in columns]))
    expected = {k: i for i, k in enumerate(sorted(set(rows)))}
    index, ids = slice_ids_of(columns)
    assert list(index.items()) == list(expected.items())
    assert [type(v) for k in index for v in k] == [type(v) for k in expected for v in k]
    assert ids.tolist() == [expected[r] for r in rows]


@given(key_columns())
def test_first_wins_keeps_the_first_row_of_every_key(columns):
    rows = list(zip(*[c.tolist() for c in columns]))
    seen: dict = {}
    for i, r in enumerate(rows):
        seen.setdefault(r, i)
    assert first_wins(columns).tolist() == sorted(seen.values())


@given(key_columns())
def test_keys_beyond_the_radix_limit_are_combined_as_rows(columns):
    """The [n, columns] fallback (more distinct tuples than an int64 radix holds) gives the same ids
    and first rows as the radix path."""
    import estimator.perf.tables as T

    radix = slice_ids_of(columns), first_wins(columns)
    limit, T.RADIX_LIMIT = T.RADIX_LIMIT, 0
    try:
        rows = slice_ids_of(columns), first_wins(columns)
    finally:
        T.RADIX_LIMIT = limit
    assert list(rows[0][0].items()) == list(radix[0][0].items())
    assert rows[0][1].tolist() == radix[0][1].tolist() and rows[1].tolist() == radix[1].tolist()
