"""A result file as read once (`Document`), and the checked reading of its values every format shares."""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator.errors import InvalidInputError


@dataclass(frozen=True)
class Document:
    """One result file: its text and, when it is JSON (one value, or one per line), its values."""

    path: Path
    text: str
    # The JSON values in file order, their integers within float range, a line of JSON lines that holds no
    # object as the InvalidInputError naming it; None: not JSON.
    json: tuple[Any, ...] | None

    def objects(self) -> tuple[Mapping[str, Any], ...] | None:
        """The JSON values when every one is an object (None otherwise)."""
        if not self.json or not all(isinstance(v, Mapping) for v in self.json):
            return None
        return self.json

    def entries(self) -> tuple[Mapping[str, Any] | InvalidInputError, ...] | None:
        """The JSON values, each an object or a refused line's error, when some value is an object (None otherwise):
        a reader of one object per line reads the objects and lists the refused lines."""
        return self.json if self.json and any(isinstance(v, Mapping) for v in self.json) else None


def calendar_date(year: str, month: str, day: str) -> str | None:
    """The ISO date YYYY-MM-DD of a client's date stamp, or None when it names no calendar day (2026-13-99)."""
    try:
        return datetime.date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        return None


def number(value: Any) -> float | None:
    """A finite or infinite number as a float; the string "inf" is infinity; None for anything else."""
    if value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def latency(value: Any) -> float | None:
    """A finite latency as a float; None for anything else."""
    value = number(value)
    return value if value is not None and math.isfinite(value) else None


def is_measure(value: Any, whole: bool = False) -> bool:
    """True for a finite number >= 0 (a whole one when `whole`): a measured count, total or latency."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return False
    return not whole or value == int(value)


def measure(value: Any, name: str, where: str, whole: bool = False) -> float | None:
    """A measured value as a float, None when absent (None); InvalidInputError naming `name` and the
    value when it is not a finite number >= 0 (a whole one when `whole`)."""
    if value is None:
        return None
    if not is_measure(value, whole):
        raise not_measure(name, value, where, whole)
    return float(value)


def not_measure(name: str, value: Any, where: str, whole: bool = False) -> InvalidInputError:
    """The error of a value that should be a finite number >= 0 (a whole one when `whole`)."""
    return InvalidInputError(f"{where}: {name} must be a {'whole' if whole else 'finite'} number >= 0, got {value!r}")


def section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A nested mapping of a configuration ({} when absent or not a mapping)."""
    value = config.get(name)
    return value if isinstance(value, Mapping) else {}
