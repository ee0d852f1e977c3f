"""Numba's on-disk cache, keyed by the jitted sources.

Numba invalidates a cached function only when its own file changes, not when a jitted function it
calls from another module does, so an edited kernel could keep running stale machine code. Before
numba is imported, NUMBA_CACHE_DIR is pointed at a subdirectory named by a digest of every source
file that defines or calls jitted code: any change to any of them starts a fresh cache.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
MARKERS = (b"from numba", b"import numba")  # modules that define or call jitted code


def jitted_sources_digest() -> str:
    """sha256 (16 hex digits) over the paths and contents of the package's files that use numba."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_bytes()
        if path.name != "numba_cache.py" and any(m in text for m in MARKERS):
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()[:16]


def default_root() -> Path:
    """$NUMBA_CACHE_DIR, else $ESTIMATOR_CACHE_DIR/numba, else ~/.cache/llm-serving-estimator/numba."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    root = os.environ.get("ESTIMATOR_CACHE_DIR") or Path.home() / ".cache" / "llm-serving-estimator"
    return Path(root) / "numba"


def keyed_cache_dir(root: Path, digest: str) -> Path:
    """<root>/<digest>; a root that is already keyed by this digest (the directory a parent process
    chose, inherited by a spawned worker) is kept, so parent and workers share one cache."""
    return root if root.name == digest else root / digest


def key_numba_cache() -> None:
    """Point NUMBA_CACHE_DIR at the keyed cache directory (no-op when numba is already imported: its config is read)."""
    if "numba" in sys.modules:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(keyed_cache_dir(default_root(), jitted_sources_digest()))
