"""LLM-serving performance estimator: native Numba op pricer, step composition and schedulers.

The Python API (estimator.api) mirrors the command line: estimator.estimate(...), estimator.sweep(...),
estimator.refine(frame, ...), estimator.recommend(...); keyword arguments are the commands' flags with
underscores. Importing the package loads none of it: each name loads on first use.
"""

import importlib

from estimator.caching import clear_caches
from estimator.errors import EstimatorError

__version__ = "0.1.0"
_API = ("estimate", "refine", "EstimateResult", "SweepReport", "RefineResult", "RecommendResult", "ExitStatus")
_PACKAGES = ("sweep", "recommend")  # subpackages that are also API functions (estimator.entry)
__all__ = ["EstimatorError", "clear_caches", *_API, *_PACKAGES]


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module("estimator.api"), name)
    if name in _PACKAGES:
        return importlib.import_module(f"estimator.{name}")
    raise AttributeError(f"module 'estimator' has no attribute {name!r}")
