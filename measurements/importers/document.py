"""A result file as read once (`Document`), and the checked reading of its values every format shares."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Document:
    """One result file: its text and, when it is JSON (one value, or one per line), its values."""

    path: Path
    text: str
    json: tuple[Any, ...] | None  # the JSON values in file order; None: not JSON

    def objects(self) -> tuple[Mapping[str, Any], ...] | None:
        """The JSON values when every one is an object (None otherwise)."""
        if not self.json or not all(isinstance(v, Mapping) for v in self.json):
            return None
        return self.json


def number(value: Any) -> float | None:
    """A finite or infinite number as a float; the string "inf" is infinity; None for anything else."""
    if value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def count(value: Any) -> int | None:
    """A whole number >= 0 as an int (an integral float too); None for anything else."""
    value = number(value)
    return int(value) if value is not None and math.isfinite(value) and value >= 0 and value == int(value) else None


def latency(value: Any) -> float | None:
    """A finite latency as a float; None for anything else."""
    value = number(value)
    return value if value is not None and math.isfinite(value) else None


def section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A nested mapping of a configuration ({} when absent or not a mapping)."""
    value = config.get(name)
    return value if isinstance(value, Mapping) else {}
