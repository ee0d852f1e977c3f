"""The layer contract: which package may import which, checked on every module's parsed imports.

Layers, bottom up: the estimator core (every ``estimator`` package but ``report`` and ``cli``),
``measurements``, ``estimator.report``, ``estimator.cli``; ``parity`` sits on the core. A layer
imports only itself and the layers below it, and ``measurements`` reaches the core through its
public API only: ``estimator`` or one of its direct modules and packages (``estimator.settings``,
``estimator.closedloop``), and from a package only the names its ``__init__`` exports.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("estimator", "measurements", "parity")
LAYERS = {"core": 0, "measurements": 1, "report": 2, "cli": 3}
ALLOWED = {"core": {"core"}, "measurements": {"core", "measurements"}, "report": {"core", "measurements", "report"},
           "cli": {"core", "measurements", "report", "cli"}, "parity": {"core", "parity"}}  # fmt: skip


def layer(module: str) -> str | None:
    """The layer of a project module (None: not the project's)."""
    parts = module.split(".")
    if module == "estimator.__main__":  # the command-line entry point
        return "cli"
    if parts[0] == "estimator":
        return parts[1] if len(parts) > 1 and parts[1] in ("report", "cli") else "core"
    return parts[0] if parts[0] in ("measurements", "parity") else None


def imports(source: str) -> list[tuple[str, tuple[str, ...], int]]:
    """(module, names imported from it, line) of every import statement in source (relative
    imports are not used in this project and are reported as such)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(("." * node.level + (node.module or ""), tuple(a.name for a in node.names), node.lineno))
    return found


def is_public(module: str, names: tuple[str, ...]) -> bool:
    """Whether `from module import names` (or `import module`) stays within the estimator's public API."""
    parts = module.split(".")
    if len(parts) > 2:
        return False
    target = importlib.import_module(module)
    exported = getattr(target, "__all__", None)
    if exported is None or not hasattr(target, "__path__"):  # a plain module: its names without a leading underscore
        return all(not name.startswith("_") for name in names)
    return all(name in exported for name in names)


def violations(module: str, source: str) -> list[str]:
    """Every import of `module` (given its source) that breaks the contract, one line each."""
    own = layer(module)
    found = []
    for target, names, line in imports(source):
        if target.startswith("."):
            found.append(f"{module}:{line}: relative import {target}")
            continue
        theirs = layer(target)
        if theirs is None or own is None:
            continue
        if theirs not in ALLOWED[own]:
            found.append(f"{module}:{line}: {own} layer imports {target} ({theirs} layer)")
        elif own == "measurements" and theirs == "core" and not is_public(target, names):
            found.append(f"{module}:{line}: measurements reaches past the estimator's public API: {target} {list(names)}")
    return found


def project_modules() -> list[tuple[str, Path]]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return modules


def test_every_module_keeps_the_layer_contract():
    broken = [v for module, path in project_modules() for v in violations(module, path.read_text())]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    "module, planted, why",
    [
        ("measurements.mapping", "from estimator.closedloop.rows import agg_case\n", "public API"),
        ("measurements.mapping", "from estimator.closedloop import _Memo\n", "public API"),
        ("estimator.scheduler.agg", "import measurements.schema\n", "core layer imports"),
        ("estimator.closedloop.runs", "from estimator.report import methods\n", "core layer imports"),
        ("measurements.loaders", "from estimator.report.points import POINT_COLUMNS\n", "measurements layer imports"),
        ("estimator.report.points", "from estimator.cli import main\n", "report layer imports"),
        ("parity.surfaces", "from measurements import schema\n", "parity layer imports"),
        ("estimator.settings", "from . import errors\n", "relative import"),
    ],
)
def test_a_planted_violation_is_caught(module, planted, why):
    path = next(p for m, p in project_modules() if m == module)
    assert not violations(module, path.read_text())
    assert any(why in v for v in violations(module, path.read_text() + planted))
