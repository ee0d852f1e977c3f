"""numba's ``njit``, with the on-disk cache keyed by the jitted sources (estimator.numba_cache).

Every module that defines jitted code imports ``njit`` from here, so numba's cache directory and
LLVM level are set once, before the first jitted function is defined, and only in a process that
prices or replays: ``import estimator`` alone touches neither ``os.environ`` nor the sources.
"""

from numba import njit

from estimator.numba_cache import key_numba_cache

key_numba_cache()

__all__ = ["njit"]
