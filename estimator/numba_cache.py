"""Numba's on-disk cache, keyed by the jitted sources.

Numba invalidates a cached function only when its own file changes, not when a jitted function it
calls from another module does, so an edited kernel could keep running stale machine code. Before
the first jitted function is defined (estimator.jit), numba's cache directory is pointed at a
subdirectory named by a digest of every source file that defines or calls jitted code: any change
to any of them starts a fresh cache.

The warmers compile one kernel family each into the cache; the families share no jitted function,
so two processes may warm them at once (the report's workers do, on a cold cache).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from estimator.cachedirs import cache_root, private_dir
from estimator.caching import memo
from estimator.errors import UnsafeCacheDirError

PACKAGE = Path(__file__).resolve().parent
MARKERS = (b"from numba", b"import numba", b"from estimator.jit")  # modules that define or call jitted code


@memo(maxsize=1)
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
    return cache_root() / "numba"


def keyed_cache_dir(root: Path, digest: str) -> Path:
    """<root>/<digest>; a root that is already keyed by this digest (the directory a parent process
    chose, inherited by a spawned worker) is kept, so parent and workers share one cache."""
    return root if root.name == digest else root / digest


def numba_cache_dir() -> Path:
    """The keyed cache folder, created private (estimator.cachedirs.private_dir): UnsafeCacheDirError
    when others can write it or its root, OSError when it cannot be created."""
    root = default_root()
    return private_dir(keyed_cache_dir(root, jitted_sources_digest()), root)


def _kernel_folder() -> Path:
    """numba_cache_dir(); a fresh private temporary folder (removed at exit) instead of an unsafe one,
    so no kernel is loaded from it (the command line refuses it with its reason); the unkeyed-by-us
    path when it cannot be created (numba then falls back to its own locations)."""
    try:
        return numba_cache_dir()
    except UnsafeCacheDirError:
        folder = tempfile.mkdtemp(prefix="estimator-numba-")
        atexit.register(shutil.rmtree, folder, True)
        return Path(folder)
    except OSError:
        return keyed_cache_dir(default_root(), jitted_sources_digest())


# LLVM optimization level of the jitted kernels unless NUMBA_OPT is set (numba's default: 3). At 2
# the two kernel families compile in about 25 s instead of 33 s (op pricing) and 28 s (replay), the
# report runs as fast with a warm cache, and its points are byte-identical (measured on 2 cores).
DEFAULT_OPT_LEVEL = "2"


def key_numba_cache() -> None:
    """Point numba's cache (``numba.core.config.CACHE_DIR``) at the keyed cache directory (created
    private, see _kernel_folder) and its LLVM level at DEFAULT_OPT_LEVEL unless NUMBA_OPT is set. Called by estimator.jit before the
    first jitted function is defined; numba keeps values set in its config module while no NUMBA_*
    environment variable changes (numba.core.config._EnvReloader), and os.environ is left alone: a
    spawned worker keys the same directory from the same sources."""
    from numba.core import config

    config.CACHE_DIR = str(_kernel_folder())
    if "NUMBA_OPT" not in os.environ:
        config.OPT = config._process_opt_level(DEFAULT_OPT_LEVEL)


def warm_pricing_kernels() -> None:
    """Compile the native op-pricing kernels (estimator.kernels) into the on-disk cache: one dense
    deployment priced through every native entry point."""
    from estimator.deployment import Deployment
    from estimator.pricing import make_pricer

    pricer = make_pricer("native", Deployment("Qwen/Qwen3-32B", "h200_sxm", "sglang"))
    pricer.context_ops(1, 128)
    pricer.generation_ops(1, 128)
    pricer.context_many([[1, 128, 0]])
    pricer.generation_many([[1, 128]])


def warm_replay_kernels() -> None:
    """Compile the closed-loop replay kernels (the agg calendar and the P/D tandem) into the on-disk
    cache: a tiny run of each through the public replay API, so that the argument types are the
    production ones."""
    from estimator.closedloop import AggSpec, Benchmark, TandemSpec, replay_agg, replay_tandem, run_plan
    from estimator.closedloop.pricing import flat_pricer
    from estimator.settings import EngineSettings

    plan = run_plan(Benchmark(prompts_per_client=2), 2, 16, 4)
    replay_agg(plan, AggSpec(EngineSettings(64, True)), flat_pricer(1.0, 1.0))
    replay_tandem(plan, TandemSpec(1, 1), flat_pricer(1.0, 0.0), flat_pricer(0.0, 1.0))


KERNEL_WARMERS = (warm_pricing_kernels, warm_replay_kernels)  # disjoint kernel families: two processes may warm them at once
