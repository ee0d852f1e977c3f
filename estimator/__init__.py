"""LLM-serving performance estimator: native Numba op pricer, step composition and schedulers."""

__version__ = "0.1.0"
