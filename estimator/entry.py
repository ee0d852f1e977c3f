"""A package that is also a public function: estimator.sweep is the sweep package, and calling it,
estimator.sweep(...), runs estimator.api.sweep (the name cannot be both an attribute function and
a subpackage of `estimator`, since importing the package rebinds the attribute)."""

from __future__ import annotations

import importlib
import sys
import types


def make_callable(package: str, function: str) -> None:
    """Make the imported `package` callable: calling it calls estimator.api.<function> (imported then)."""

    class CallablePackage(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return getattr(importlib.import_module("estimator.api"), function)(*args, **kwargs)

    CallablePackage.__call__.__doc__ = f"estimator.api.{function}: see help(estimator.api.{function})."
    sys.modules[package].__class__ = CallablePackage
