"""The re-pin command: append-only by default, named refreshes, attributed change report,
byte-identical no-op re-runs, and its refusals."""

from __future__ import annotations

import pytest

import parity.goldens as G
import parity.pin as P
from parity.matrix import ci_matrix
from parity.surfaces import SURFACES

SHAPES = ci_matrix()[:2]


@pytest.fixture
def goldens_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(G, "GOLDENS_DIR", tmp_path)
    return tmp_path


def _pin(refresh=(), refresh_all=False):
    writes, moved, added = P.plan_pin(SHAPES, list(refresh), refresh_all)
    prov = {"command": "test", "date": "2026-11-29", "git_head": "x", "packages": {}}
    for path, records in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(G.golden_file_text(prov, records))
    return writes, moved, added


def _files(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*.json"))}


def test_first_pin_appends_every_record_and_a_rerun_is_byte_identical(goldens_dir):
    _, moved, added = _pin()
    assert len(added) == len(SHAPES) * len(SURFACES) and not moved
    before = _files(goldens_dir)
    writes, moved, added = _pin()
    assert not writes and not moved and not added
    assert _files(goldens_dir) == before


def _scaled_context_attention(monkeypatch, factor):
    """A deliberate modelling change: context attention of the agg surface scaled by `factor`."""
    real = SURFACES["agg.uncached"]

    def changed(shape):
        record = real(shape)
        return dict(record, context_attention_ms=record["context_attention_ms"] * factor, ttft=record["ttft"] * factor)

    monkeypatch.setitem(SURFACES, "agg.uncached", changed)


def test_changes_are_not_pinned_unless_named(goldens_dir, monkeypatch):
    _pin()
    before = _files(goldens_dir)
    _scaled_context_attention(monkeypatch, 4 / 3)
    writes, moved, _ = _pin()
    assert not writes and not moved and _files(goldens_dir) == before


def test_refresh_all_moves_records_attributed_to_their_component(goldens_dir, monkeypatch):
    _pin()
    _scaled_context_attention(monkeypatch, 4 / 3)
    _, moved, _ = _pin(refresh_all=True)
    assert {m.key.split("|")[0] for m in moved} == {"agg.uncached"}
    assert all(m.components == ("context attention",) for m in moved)
    report = P.change_report(moved, [], {"command": "c", "git_head": "h", "date": "d"})
    assert "+33.33" in report and "context attention" in report and moved[0].key in report


def test_refresh_by_key_prefix_moves_only_that_record(goldens_dir, monkeypatch):
    _pin()
    _scaled_context_attention(monkeypatch, 1.01)
    key = G.record_key("agg.uncached", SHAPES[0])
    _, moved, _ = _pin(refresh=[key])
    assert [m.key for m in moved] == [key]


def test_derived_only_move_is_attributed_to_the_closed_form():
    assert P.attribute("k", {"ttft": 1.0, "shared_ms": 2.0}, {"ttft": 1.1, "shared_ms": 2.0}) == ("derived only (queue factor / closed-form formula)",)
    assert P.attribute("k", {"ttft": 1.0}, {"<error>": "KeyError"}) == ("outcome (error vs value)",)


def test_pin_refuses_inside_an_xdist_pool(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    with pytest.raises(SystemExit) as exc:
        P._check_preconditions(allow_dirty=True)
    assert exc.value.code == 2


def test_pin_refuses_a_dirty_tree_unless_told(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(P, "_git", lambda *args: " M estimator/x.py")
    with pytest.raises(SystemExit):
        P._check_preconditions(allow_dirty=False)
    P._check_preconditions(allow_dirty=True)
