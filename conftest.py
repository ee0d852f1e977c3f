"""Harness wiring: tiers, hypothesis profiles, per-worker Numba caches, warm-up before xdist workers.

* `--full` runs the exhaustive tier (tests marked `full`); without it they are deselected.
* Hypothesis profile: $ESTIMATOR_HYPOTHESIS_PROFILE (ci | dev | nightly); default ci when $CI is
  set, else dev.
* Numba's on-disk cache is unsafe under concurrent writers, so every xdist worker gets its own
  cache directory, seeded from a cache the controller warmed once before the workers started.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NUMBA_CACHE_ROOT = Path(os.environ.get("ESTIMATOR_NUMBA_CACHE_ROOT", ROOT / ".numba_cache"))
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # set in xdist workers only


def _numba_cache_dir() -> Path:
    return NUMBA_CACHE_ROOT / (_WORKER or "seed")


# Must happen before anything imports numba. A NUMBA_CACHE_DIR the user set is kept; the one the
# controller chose reaches the workers through the environment, so the marker tells them to take
# their own (estimator then keys each directory by its jitted sources).
_HARNESS_CHOSE = "ESTIMATOR_HARNESS_NUMBA_CACHE"
if "NUMBA_CACHE_DIR" not in os.environ or os.environ.get(_HARNESS_CHOSE):
    if _WORKER and (NUMBA_CACHE_ROOT / "seed").is_dir() and not _numba_cache_dir().exists():
        shutil.copytree(NUMBA_CACHE_ROOT / "seed", _numba_cache_dir())
    os.environ["NUMBA_CACHE_DIR"] = str(_numba_cache_dir())
    os.environ[_HARNESS_CHOSE] = "1"

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=25,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", deadline=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("ESTIMATOR_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", default=False, help="also run the exhaustive tier (marker: full)")


def pytest_configure(config: pytest.Config) -> None:
    if _WORKER is None and not config.option.collectonly:
        _warm_numba_cache()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--full"):
        return
    skip_full = pytest.mark.skip(reason="exhaustive tier: run with --full")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip_full)


def _warm_numba_cache() -> None:
    """Compile the op-pricing kernels once in the controller so workers only load cached machine code."""
    from estimator.numba_cache import warm_pricing_kernels

    warm_pricing_kernels()


@pytest.fixture
def fresh_caches():
    """Every in-process cache empty before and after the test (estimator.clear_caches): for tests
    that replace a cached function's collaborators."""
    from estimator import clear_caches

    clear_caches()
    yield
    clear_caches()
