"""The engine price grids' disk store (estimator.closedloop.tablecache): a grid restarts where an
earlier process left it, equal bit for bit to pricing it again, and only inside an open store."""

from __future__ import annotations

import numpy as np
import pytest

from estimator import clear_caches
from estimator.closedloop import tablecache
from estimator.closedloop.engine import PassModel, TableExtent, _GrownGrid, engine_tables, lattice
from estimator.deployment import Deployment

QWEN = Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2)


def counting_grid(priced: list, name: str | None = "test_component") -> _GrownGrid:
    """A two-axis grid whose price of a node is a pure function of it, recording every node priced."""

    def price(model, nodes):
        priced.extend(map(tuple, nodes))
        return nodes[:, 0] * 1000.0 + nodes[:, 1] + 0.5

    return _GrownGrid(lambda model, a, b: (lattice(a, 4, 2), lattice(b, 8, 2)), price, name)


def same(a, b) -> bool:
    (axes_a, values_a), (axes_b, values_b) = a, b
    return all(np.array_equal(x, y) for x, y in zip(axes_a, axes_b, strict=True)) and np.array_equal(values_a, values_b, equal_nan=True)


def test_a_stored_grid_restarts_where_it_left_off(tmp_path):
    model = PassModel(QWEN)
    with tablecache.enabled(tmp_path):
        first, priced = [], []
        counting_grid(first)(model, 16, 32)
        again = counting_grid(priced)  # a later process: nothing held in memory
        assert same(again(model, 16, 32), counting_grid([], None)(model, 16, 32)) and priced == []
        assert same(again(model, 8, 8), counting_grid([], None)(model, 8, 8)) and priced == []  # a slice of the stored grid
        grown = again(model, 64, 48)
        assert priced and not set(priced) & set(first)  # only the nodes outside the stored block
        assert same(grown, counting_grid([], None)(model, 64, 48))
        later = []
        assert same(counting_grid(later)(model, 64, 48), grown) and later == []  # the growth was stored


def test_the_store_is_closed_outside_an_enabled_block(tmp_path):
    with tablecache.enabled(tmp_path) as root:
        pass
    priced = []
    counting_grid(priced)(PassModel(QWEN), 16, 32)
    assert list(root.iterdir()) == [] and priced  # the folder is opened, nothing stored outside the block
    assert tablecache.load("test_component", PassModel(QWEN)) is None


def test_an_unreadable_or_foreign_file_is_priced_again(tmp_path):
    model = PassModel(QWEN)
    with tablecache.enabled(tmp_path) as root:
        counting_grid([])(model, 16, 32)
        (stored,) = root.iterdir()
        stored.write_bytes(b"not a grid")
        priced = []
        assert same(counting_grid(priced)(model, 16, 32), counting_grid([], None)(model, 16, 32)) and priced
        other = PassModel(QWEN, seq_scale=2.0)
        tablecache.store("test_component", other, tablecache.load("test_component", model))
        other_file = max(root.iterdir(), key=lambda p: p.stat().st_mtime_ns)
        other_file.replace(stored)  # the other model's grid under this model's name
        assert tablecache.load("test_component", model) is None


def test_a_model_given_by_path_is_never_stored(tmp_path):
    config = tmp_path / "config.json"
    config.write_text("{}")
    with tablecache.enabled(tmp_path / "store") as root:
        tablecache.store("test_component", PassModel(Deployment(str(config), "h200_sxm", "sglang")), ((1,), (np.ones(1),), np.ones(1)))
    assert list(root.iterdir()) == []


def test_the_digest_follows_sources_and_pricing_environment(tmp_path, monkeypatch):
    (tmp_path / "module.py").write_text("x = 1")
    monkeypatch.setattr(tablecache, "PACKAGE", tmp_path)
    digest = tablecache.inputs_digest.__wrapped__  # uncached
    base = digest()
    (tmp_path / "module.py").write_text("x = 2")
    changed = digest()
    monkeypatch.setenv("AIC_STRICT_PROVENANCE", "1")
    assert len({base, changed, digest()}) == 3


@pytest.mark.usefixtures("fresh_caches")
def test_engine_tables_from_the_store_equal_a_fresh_build(tmp_path):
    model, extent = PassModel(QWEN), TableExtent(tokens=1024, chunks=8, chunk=1024, start=1024, rows=64, kv=2048)
    fresh = engine_tables(model, extent)
    clear_caches()
    with tablecache.enabled(tmp_path):
        stored = engine_tables(model, TableExtent(tokens=2048, chunks=8, chunk=2048, start=2048, rows=64, kv=2048))
        clear_caches()
        loaded = engine_tables(model, extent)  # sliced from the stored, larger grids
    assert [np.array_equal(a, b, equal_nan=True) for a, b in zip(fresh, loaded, strict=True)] == [True] * len(fresh)
    assert stored.shared.size > fresh.shared.size


def test_a_refused_store_write_only_costs_the_warm_start(tmp_path, monkeypatch):
    """A cache the file system refuses (a file where the folder should be) is skipped: no error reaches the report."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(tablecache, "_file", lambda component, model: (blocker / "grid.npz", "key"))
    tablecache.store("test_component", "model", ((1,), (np.arange(2.0),), np.zeros(2)))
    assert blocker.read_text() == "x"
