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


class Role(str, enum.Enum):
    """What a worker serves: both phases (agg), or one stage of a disaggregated deployment."""

    AGG = "agg"
    PREFILL = "prefill"  # context only: one batch of prompts, first token only
    DECODE = "decode"  # generation only
    STATIC = "static"  # one static batch, the estimate command's static and static_gen modes

    @property
    def large_ep_phases(self) -> tuple[str, ...]:
        """The phases whose cross-node MoE all-to-all the estimate CLI resolves for this worker
        (aiconfigurator 0.12.0 cli/api.py): none for agg (_run_agg_estimate keeps the fused graph),
        context for a prefill worker and generation for a decode worker (_run_disagg_estimate
        L1959-1978), both for a static batch (_run_static_estimate L1760-1771; its static_ctx mode
        resolves the context phase, as a prefill worker)."""
        return {Role.AGG: (), Role.PREFILL: ("context",), Role.DECODE: ("generation",), Role.STATIC: ("context", "generation")}[self]


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
    role: Role = Role.AGG  # what the worker serves; prices a cross-node MoE all-to-all per Role.large_ep_phases

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", Backend.parse(self.backend))
        try:
            object.__setattr__(self, "role", Role(self.role))
        except ValueError:
            raise InvalidInputError(f"unknown worker role {self.role!r} (known: {', '.join(r.value for r in Role)})") from None
        for field in ("tp", "pp", "attention_dp"):
            require_positive(field, getattr(self, field))
        for field in ("moe_tp", "moe_ep"):
            if getattr(self, field) is not None:
                require_positive(field, getattr(self, field))
        if not 0 <= self.nextn <= MAX_SIZE:
            raise InvalidInputError(f"nextn must be within [0, {MAX_SIZE}], got {self.nextn}")


# The largest size any input takes (tokens, requests, ranks): far past every model's context, and
# small enough that sizes multiplied together stay exact in the int64 and float64 arithmetic.
MAX_SIZE = 2**31 - 1
# The least latency any input takes, ms: the nanosecond a benchmark client's clock resolves (time.perf_counter_ns);
# a smaller one (a subnormal 1e-320 ms) made a ratio to it (a relative error, a target's miss factor) overflow to inf.
LATENCY_RESOLUTION_MS = 1e-6
# The most KV tokens one batch may hold (batch x sequence length): times the bytes one token
# needs (below 2**22 for every bundled model) the byte counts stay within int64.
MAX_BATCH_TOKENS = 2**40


def require_positive(name: str, value: int) -> int:
    """Return value if it is an integer in [1, MAX_SIZE], else raise InvalidInputError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int,)) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")
    if value > MAX_SIZE:
        raise InvalidInputError(f"{name} must be at most {MAX_SIZE}, got {value}")
    return value


def require_batch_tokens(batch_size: int, tokens: int) -> None:
    """InvalidInputError unless batch_size requests of `tokens` tokens each stay within MAX_BATCH_TOKENS."""
    if batch_size * tokens > MAX_BATCH_TOKENS:
        raise InvalidInputError(f"batch_size x (isl + osl) = {batch_size} x {tokens} exceeds the {MAX_BATCH_TOKENS} KV tokens the memory arithmetic holds")


def require_slot(name: str, max_seq_len: int | None, tokens: int, what: str = "isl + osl") -> None:
    """InvalidInputError unless the KV slot max_seq_len (None: the default) holds the `tokens` (`what`) a request needs."""
    if max_seq_len is not None and max_seq_len < tokens:
        raise InvalidInputError(f"{name} ({max_seq_len}) must be at least {what} ({tokens})")


def require_fraction(name: str, value: float | None) -> None:
    """InvalidInputError unless value is None or a number in (0, 1]."""
    if value is not None and not (isinstance(value, (int, float)) and 0.0 < value <= 1.0):
        raise InvalidInputError(f"{name} must be within (0, 1], got {value!r}")
