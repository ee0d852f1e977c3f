"""The Numba cache key: any change to a module that defines or calls jitted code starts a fresh cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import estimator.numba_cache as nc


def _package(tmp_path, kernel: str, helper: str):
    (tmp_path / "sub").mkdir(exist_ok=True)
    (tmp_path / "sub" / "kernel.py").write_text(f"from numba import njit\n{kernel}\n")
    (tmp_path / "helper.py").write_text(helper)
    return tmp_path


def _digest() -> str:
    """The digest of the sources as they are now (it is memoized once per process)."""
    nc.jitted_sources_digest.cache_clear()
    return nc.jitted_sources_digest()


def test_digest_follows_jitted_sources_only(tmp_path, monkeypatch, fresh_caches):
    monkeypatch.setattr(nc, "PACKAGE", _package(tmp_path, "x = 1", "y = 1"))
    base = _digest()
    (tmp_path / "helper.py").write_text("y = 2")  # no numba import: not part of the key
    assert _digest() == base
    (tmp_path / "sub" / "kernel.py").write_text("from numba import njit\nx = 2\n")
    assert _digest() != base


def test_cache_dir_is_keyed_under_the_root():
    from numba.core import config

    import estimator.jit  # noqa: F401 - keys the cache

    assert config.CACHE_DIR.endswith(nc.jitted_sources_digest()) and config.CACHE_DIR.startswith(os.environ["NUMBA_CACHE_DIR"])


def test_importing_the_estimator_neither_changes_the_environment_nor_reads_the_sources():
    """import estimator (its settings and deployment types too) leaves os.environ as it was and does
    not import numba; the cache is keyed when a jitted module is first imported."""
    code = (
        "import os, sys; before = dict(os.environ); import estimator, estimator.settings, estimator.deployment; "
        "assert dict(os.environ) == before, 'environment changed'; assert 'numba' not in sys.modules, 'numba imported'; "
        "import estimator.closedloop.pricing; from numba.core import config; "
        "assert dict(os.environ) == before and config.CACHE_DIR.endswith(estimator.numba_cache.jitted_sources_digest())"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_inherited_keyed_directory_is_not_keyed_again():
    """A spawned worker inherits the parent's keyed NUMBA_CACHE_DIR and must share it, not nest a copy."""
    digest = nc.jitted_sources_digest()
    root = Path("/cache/numba")
    assert nc.keyed_cache_dir(root, digest) == root / digest
    assert nc.keyed_cache_dir(root / digest, digest) == root / digest
    assert nc.keyed_cache_dir(root / "0123456789abcdef", digest) == root / "0123456789abcdef" / digest  # a stale key is a root


def _warm_in_fresh_process(warmer: str, cache: Path) -> set[str]:
    """Run one warmer in a new interpreter on an empty cache; the index files it wrote."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", f"from estimator.numba_cache import {warmer}; {warmer}()"], env=env, check=True)
    return {p.relative_to(cache).as_posix() for p in cache.rglob("*.nbi")}


@pytest.mark.full
def test_kernel_warmers_compile_disjoint_families(tmp_path):
    """The report's workers warm the families side by side into one cache, which is safe only while
    no jitted function belongs to both (Numba's cache files are per function)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(len(nc.KERNEL_WARMERS)) as pool:
        written = list(pool.map(lambda w: _warm_in_fresh_process(w.__name__, tmp_path / w.__name__), nc.KERNEL_WARMERS))
    assert all(written)
    assert not set.intersection(*written)


@pytest.mark.parametrize("given, level", [(None, int(nc.DEFAULT_OPT_LEVEL)), ("3", 3)])
def test_kernels_compile_at_the_default_opt_level_unless_numba_opt_is_set(given, level):
    """A jitted module's import sets numba's LLVM level to DEFAULT_OPT_LEVEL; a level the user set is kept."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_OPT"} | ({"NUMBA_OPT": given} if given else {})
    out = subprocess.run([sys.executable, "-c", "import estimator.jit, numba; print(int(numba.config.OPT))"], env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    assert int(out.split()[-1]) == level
