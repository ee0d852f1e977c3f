"""LLM-serving performance estimator: native Numba op pricer, step composition and schedulers."""

from estimator.caching import clear_caches

__version__ = "0.1.0"
__all__ = ["clear_caches"]
