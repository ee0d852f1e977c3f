"""Perf-table loading for every shipped (system, backend, version) stack, and the on-disk cache."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import estimator.perf.stack as S
from estimator.errors import UnknownBackendError, UnknownSystemError, UnknownVersionError
from estimator.perf import tablefile
from estimator.perf.tablefile import NAME_TUPLES, TABLE_TYPES
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


STACK = ("h100_sxm", "vllm")


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """An empty private cache root, the stack memo cleared before and after."""
    root = tmp_path / "cache"
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(root))
    S.load_stack.cache_clear()
    yield root
    S.load_stack.cache_clear()


def _cache_file(cache_root) -> Path:
    (path,) = (cache_root / "tables").glob("*.tables")
    return path


def _reload_without_building(monkeypatch) -> S.StackTables:
    """load_stack again with the parquet build disabled: it must come from the cache file."""
    S.load_stack.cache_clear()
    with monkeypatch.context() as m:
        m.setattr(S, "_build", lambda *a: pytest.fail("the cache file was not loaded"))
        return S.load_stack(*STACK)


def _keys(tables: S.StackTables) -> dict:
    """Every table's dict (slice, curve or dtype ids by categorical key)."""
    return {name: [getattr(getattr(tables, name), f.name) for f in dataclasses.fields(getattr(tables, name)) if f.name != "arrays"] for name in TABLE_TYPES}


def _same_tables(a: S.StackTables, b: S.StackTables) -> bool:
    return (
        [x.tobytes() for x in a.kernel_tables] == [x.tobytes() for x in b.kernel_tables]
        and _keys(a) == _keys(b)
        and (a.context_lanes, a.generation_lanes, a.moe.distributions) == (b.context_lanes, b.generation_lanes, b.moe.distributions)
    )


def test_cache_file_round_trips_every_table_exactly(cache_root, monkeypatch):
    """Arrays byte for byte (writable, aligned, C-ordered as built), keys with their Python types."""
    cold = S.load_stack(*STACK)
    warm = _reload_without_building(monkeypatch)
    assert _same_tables(cold, warm)
    for name in TABLE_TYPES:
        built, loaded = getattr(cold, name), getattr(warm, name)
        assert [(a.dtype, a.shape, a.flags.c_contiguous) for a in built.arrays] == [(a.dtype, a.shape, a.flags.c_contiguous) for a in loaded.arrays]
        assert all(a.flags.writeable and a.flags.aligned for a in loaded.arrays)
        (field,) = [f.name for f in dataclasses.fields(built) if f.name != "arrays"]
        types = [[type(v) for v in (k if isinstance(k, tuple) else (k,))] for k in getattr(built, field)]
        assert types == [[type(v) for v in (k if isinstance(k, tuple) else (k,))] for k in getattr(loaded, field)]


def test_tables_differ_from_another_stack():
    """The equality _same_tables checks can fail."""
    assert not _same_tables(S.load_stack(*STACK), S.load_stack("h100_sxm", "sglang"))


def test_a_planted_pickle_runs_nothing(cache_root, tmp_path, monkeypatch):
    """A pickle that would run code, planted as the cache file and under the old format's name, is
    never unpickled: the tables are built and the planted file replaced by a plain one."""
    marker = tmp_path / "ran"
    payload = pickle.dumps(_RunsCode(marker))
    pickle.loads(payload)  # the payload is live: unpickling it writes the marker
    assert marker.exists()
    marker.unlink()
    cold = S.load_stack(*STACK)
    path = _cache_file(cache_root)
    path.write_bytes(payload)
    path.with_name(path.name.replace(".tables", ".pkl")).write_bytes(payload)
    S.load_stack.cache_clear()
    assert _same_tables(S.load_stack(*STACK), cold) and not marker.exists()
    assert path.read_bytes() != payload and _same_tables(_reload_without_building(monkeypatch), cold)


class _RunsCode:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


@pytest.mark.parametrize("damage", [
    lambda b: b"not a cache file",
    lambda b: b[: len(b) // 2],  # truncated blob
    lambda b: b[:200],  # truncated manifest
    lambda b: b"",
])  # fmt: skip
def test_a_damaged_cache_file_is_replaced(damage, cache_root, monkeypatch):
    cold = S.load_stack(*STACK)
    path = _cache_file(cache_root)
    path.write_bytes(damage(path.read_bytes()))
    S.load_stack.cache_clear()
    assert _same_tables(S.load_stack(*STACK), cold)
    assert _same_tables(_reload_without_building(monkeypatch), cold)  # replaced, not rebuilt on every run


@pytest.mark.parametrize("foreign", ["format", "stack"])
def test_a_file_of_another_format_or_stack_is_ignored(foreign, cache_root, monkeypatch):
    """A well-formed file written by another format version (or holding another stack) at the
    stack's path is not used, and is replaced."""
    cold = S.load_stack(*STACK)
    path = _cache_file(cache_root)
    other = S.load_stack("h100_sxm", "sglang")
    built = {name: getattr(other, name) for name in (*TABLE_TYPES, *NAME_TUPLES)}
    with monkeypatch.context() as m:
        m.setattr(tablefile, "FORMAT", tablefile.FORMAT + (foreign == "format"))
        tablefile.write(path, cold.label if foreign == "format" else other.label, built)
    assert tablefile.read(path, cold.label) is None
    S.load_stack.cache_clear()
    assert _same_tables(S.load_stack(*STACK), cold)
    assert tablefile.read(path, cold.label) is not None


def test_an_uncacheable_key_leaves_no_file(tmp_path):
    """A key the file cannot hold exactly (a mixed-type column) is refused before anything is written."""
    table = S.load_stack(*STACK)
    built = {name: getattr(table, name) for name in (*TABLE_TYPES, *NAME_TUPLES)}
    built["allreduce"] = dataclasses.replace(table.allreduce, curves={2: 0, "4": 1})
    with pytest.raises(tablefile.Uncacheable):
        tablefile.write(tmp_path / "x.tables", table.label, built)
    assert not (tmp_path / "x.tables").exists()


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
