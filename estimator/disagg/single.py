"""Single-point disagg: fixed prefill and decode workers (aiconfigurator ``DisaggInferenceSession.run_disagg``
as the estimate CLI calls it, legacy-semantics.md 3.2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from estimator.deployment import (
    Deployment,
    require_fraction,
    require_positive,
    require_slot,
)
from estimator.disagg.combine import disagg_row
from estimator.disagg.workers import Calibration, Role, WorkerRow, round_row, worker_row
from estimator.errors import InvalidInputError
from estimator.pricing import AUTO
from estimator.scheduler import StaticPoint
from estimator.steps import DEFAULT_STRIDE, Semantics, StepCost


@dataclass(frozen=True)
class DisaggPoint:
    """A disagg deployment's workload and worker shape."""

    isl: int  # input length per request, tokens (>= 1)
    osl: int  # output length per request, tokens (>= 1)
    prefill_batch_size: int  # prompts per prefill batch (>= 1)
    prefill_workers: int  # prefill worker replicas (>= 1)
    decode_batch_size: int  # sequences per decode batch (>= 1)
    decode_workers: int  # decode worker replicas (>= 1)
    prefix: int = 0  # cached prefix tokens per request, part of isl (0 <= prefix < isl)
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= A <= nextn)
    stride: int = DEFAULT_STRIDE  # static decode sampling stride
    free_gpu_memory_fraction: float | None = None  # KV budget fraction of both workers; None: backend's
    prefill_free_gpu_memory_fraction: float | None = None  # the prefill worker's; None: free_gpu_memory_fraction
    decode_free_gpu_memory_fraction: float | None = None  # the decode worker's; None: free_gpu_memory_fraction
    max_seq_len: int | None = None  # KV slot per request of both workers, tokens; None: isl + 1 (prefill), isl + osl (decode)
    prefill_max_seq_len: int | None = None  # the prefill worker's; None: max_seq_len
    decode_max_seq_len: int | None = None  # the decode worker's; None: max_seq_len

    def __post_init__(self) -> None:
        for name in ("prefill_batch_size", "prefill_workers", "decode_batch_size", "decode_workers"):
            require_positive(name, getattr(self, name))
        for role in ("", "prefill_", "decode_"):
            require_fraction(f"{role}free_gpu_memory_fraction", getattr(self, f"{role}free_gpu_memory_fraction"))
        for name in ("max_seq_len", "decode_max_seq_len"):
            require_slot(name, getattr(self, name), self.isl + self.osl)
        require_slot("prefill_max_seq_len", self.prefill_max_seq_len, self.isl + 1, "isl + 1")

    def worker_point(self, role: Role) -> StaticPoint:
        """The static batch one worker of `role` runs, with the role's memory settings."""
        prefill = role is Role.PREFILL
        batch = self.prefill_batch_size if prefill else self.decode_batch_size
        fraction = self.prefill_free_gpu_memory_fraction if prefill else self.decode_free_gpu_memory_fraction
        slot = self.prefill_max_seq_len if prefill else self.decode_max_seq_len
        return StaticPoint(self.isl, self.osl, batch, self.prefix, self.nextn_accepted, self.stride,
                           self.free_gpu_memory_fraction if fraction is None else fraction, self.max_seq_len if slot is None else slot)  # fmt: skip


@dataclass(frozen=True)
class DisaggResult:
    """A disagg estimate: the combined row and the two worker rows behind it."""

    row: Mapping[str, object]  # DISAGG_COLUMNS -> value (3-decimal rounded in legacy mode)
    prefill: WorkerRow
    decode: WorkerRow

    @property
    def oom(self) -> bool:
        """Either worker OOMs or exceeds its KV budget (the reference marks both as OOM)."""
        return not (self.prefill.fits and self.decode.fits)

    @property
    def context(self) -> StepCost:
        """The prefill worker's context phase, before the latency correction."""
        return self.prefill.phase

    @property
    def generation(self) -> StepCost:
        """The decode worker's generation phase, before the latency correction."""
        return self.decode.phase


def run_disagg(
    prefill: Deployment,
    decode: Deployment,
    point: DisaggPoint,
    semantics: Semantics | str = Semantics.UNCACHED,
    pricer: str = AUTO,
    calibration: Calibration = Calibration(),
) -> DisaggResult:
    """Estimate one disagg deployment: price both workers, then combine them by rate."""
    if prefill.model != decode.model:
        raise InvalidInputError(f"prefill and decode serve different models ({prefill.model!r} vs {decode.model!r})")
    semantics = Semantics.parse(semantics)
    workers = [worker_row(d, point.worker_point(r), r, semantics, calibration, pricer) for d, r in ((prefill, Role.PREFILL), (decode, Role.DECODE))]
    row = disagg_row(
        workers[0].row,
        point.prefill_workers,
        workers[1].row,
        point.decode_workers,
        calibration,
        decode_tokens_per_iteration=workers[1].decode_tokens_per_iteration,
    )
    return DisaggResult(round_row(row) if semantics is Semantics.LEGACY else row, *workers)
