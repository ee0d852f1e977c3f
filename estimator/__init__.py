"""LLM-serving performance estimator: native Numba op pricer, step composition and schedulers."""

from estimator.numba_cache import key_numba_cache

key_numba_cache()  # before any submodule imports numba

from estimator.caching import clear_caches  # noqa: E402 - after the cache keying

__version__ = "0.1.0"
__all__ = ["clear_caches"]
