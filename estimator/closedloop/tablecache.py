"""Engine price grids on disk (opt-in): a later process starts each grid where an earlier one left it.

A grid (estimator.closedloop.engine) holds one step component of one pass model priced at the
nodes of nested lattices, every node priced on its own, so a stored grid is a pure function of
what priced it. The store is keyed by all of that:

* the directory by ``inputs_digest()``: every file of the estimator package, aiconfigurator-core's
  version and the size and mtime of every file its wheel installed (its code, Rust engine, perf
  data and model configs), the Python, NumPy and Numba versions, and the environment variables
  the pricers read (``PRICING_ENV``);
* a grid's file by its component and the pass model's repr (deployment, pricer, scales), the repr
  stored inside and checked on reading.

Models given by a path (a local config.json) and perf data or model configs redirected by the
environment are never stored: their files are outside the digest. Only ``enabled()`` blocks
read or write (the report's batch runner opens one): a test that patches a pricer outside such a
block cannot leave its prices on disk. An unreadable or mismatched file is ignored (the grid is
priced again); writes are atomic (a temporary file renamed over the old one).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import platform
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from estimator.cachedirs import cache_root, private_dir
from estimator.io import atomic_path
from estimator.perf.stack import table_cache_dir

FORMAT = 1  # bump when the stored layout changes
PACKAGE = Path(__file__).resolve().parents[1]  # the estimator package
PRICING_ENV = ("AIC_", "AICONFIGURATOR_", "ENGINE_STEP_", "ESTIMATOR_ALLOW")  # prefixes of the variables the pricers read
EXTERNAL_DATA_ENV = ("AICONFIGURATOR_SYSTEMS_PATH", "AICONFIGURATOR_MODEL_CONFIGS_PATH")  # data outside the digest

_root: Path | None = None  # the open store, while an enabled() block runs


@contextlib.contextmanager
def enabled(root: Path | None = None) -> Iterator[Path | None]:
    """Read and write grids under root/<inputs digest> (default: the perf tables cache dir's engine/)
    inside the block, its folders private (estimator.cachedirs: UnsafeCacheDirError when another
    can write one); yields that directory, or None when it cannot be created (nothing is stored)."""
    global _root
    base = root or table_cache_dir() / "engine"
    try:
        opened = private_dir(base / inputs_digest(), root or cache_root())
    except OSError:
        opened = None  # a read-only cache only costs the warm start
    before, _root = _root, opened
    try:
        yield _root
    finally:
        _root = before


@functools.cache
def inputs_digest() -> str:
    """sha256 (24 hex digits) of everything a grid's prices are computed from besides its model."""
    digest = hashlib.sha256(f"format={FORMAT}|{sys.version}|{platform.machine()}|numpy {np.__version__}".encode())
    digest.update(f"|numba {importlib.metadata.version('numba')}".encode())
    for path in sorted(p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    reference = importlib.metadata.distribution("aiconfigurator-core")
    digest.update(f"|aiconfigurator-core {reference.version}".encode())
    for file in sorted(reference.files or (), key=str):
        located = Path(file.locate())
        stat = located.stat() if located.is_file() else None
        digest.update(f"|{file}|{stat and stat.st_size}|{stat and stat.st_mtime_ns}".encode())
    for name in sorted(os.environ):
        if name.startswith(PRICING_ENV):
            digest.update(f"|{name}={os.environ[name]}".encode())
    return digest.hexdigest()[:24]


def _file(component: str, model) -> tuple[Path, str] | None:
    """(the grid's file, the key stored in it); None when the store is closed or the model's
    inputs lie outside the digest."""
    if _root is None or any(os.environ.get(name) for name in EXTERNAL_DATA_ENV) or os.path.exists(model.deployment.model):
        return None
    key = f"{component}|{model!r}"
    return _root / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.npz", key


def load(component: str, model):
    """The stored (tops, axes, values) of a component's grid of a model, or None."""
    where = _file(component, model)
    if where is None or not where[0].is_file():
        return None
    path, key = where
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["key"]) != key:
                return None
            axes = tuple(stored[f"axis{i}"] for i in range(int(stored["n_axes"])))
            return tuple(int(t) for t in stored["tops"]), axes, stored["values"]
    except (OSError, ValueError, KeyError):
        return None


def store(component: str, model, held) -> None:
    """Write a component's grid of a model, (tops, axes, values), over any stored one."""
    where = _file(component, model)
    if where is None:
        return
    path, key = where
    tops, axes, values = held
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as out:
            np.savez(out, key=np.array(key), tops=np.array(tops, dtype=np.int64), n_axes=np.array(len(axes)), values=values,
                     **{f"axis{i}": axis for i, axis in enumerate(axes)})  # fmt: skip
    except OSError:  # atomic_path's UnwritableOutputError included
        return  # a read-only cache only costs the warm start
