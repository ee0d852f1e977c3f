"""What is being estimated: a model on a GPU system under a serving backend with a parallel layout."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from estimator.errors import InvalidInputError, UnknownBackendError


class Backend(str, enum.Enum):
    """Serving backends with perf tables in aiconfigurator-core."""

    TRTLLM = "trtllm"
    VLLM = "vllm"
    SGLANG = "sglang"

    @classmethod
    def parse(cls, value: str | Backend) -> Backend:
        try:
            return cls(str(value.value if isinstance(value, Backend) else value).lower())
        except ValueError:
            known = ", ".join(b.value for b in cls)
            raise UnknownBackendError(f"unknown backend {value!r} (known: {known})") from None


@dataclass(frozen=True)
class QuantOverrides:
    """User overrides of the inferred quant modes; None keeps the inferred mode."""

    gemm: str | None = None  # e.g. "fp8_block", "bfloat16"
    moe: str | None = None
    kvcache: str | None = None
    fmha: str | None = None
    comm: str | None = None


@dataclass(frozen=True)
class Deployment:
    """One serving deployment. Sizes are per worker; every size is >= 1."""

    model: str  # HF id ("Qwen/Qwen3-32B") or a path to a config.json / model dir
    system: str  # e.g. "h200_sxm"
    backend: Backend
    version: str | None = None  # literal version or slot alias; None = current
    tp: int = 1  # tensor parallel size (attention)
    pp: int = 1  # pipeline parallel size
    attention_dp: int = 1  # attention data-parallel size
    moe_tp: int | None = None  # MoE tensor parallel size (MoE models only)
    moe_ep: int | None = None  # MoE expert parallel size (MoE models only)
    nextn: int = 0  # speculative (MTP) draft depth, >= 0
    quant: QuantOverrides = QuantOverrides()

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", Backend.parse(self.backend))
        for field in ("tp", "pp", "attention_dp"):
            require_positive(field, getattr(self, field))
        for field in ("moe_tp", "moe_ep"):
            if getattr(self, field) is not None:
                require_positive(field, getattr(self, field))
        if self.nextn < 0:
            raise InvalidInputError(f"nextn must be >= 0, got {self.nextn}")


def require_positive(name: str, value: int) -> int:
    """Return value if it is a positive integer, else raise InvalidInputError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int,)) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")
    return value
