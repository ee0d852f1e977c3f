"""The agg sweep grid: batch sizes x prefill budgets, with the reference's guards and dedup.

Mirrors aiconfigurator 0.12.0 ``sweep._agg_ctx_tokens_list`` and the loop of
``sweep._sweep_one_parallel_agg`` (legacy-semantics.md 1.12). The grid is built on the tokens per
request the budget counts: isl in legacy mode, isl - prefix in uncached mode (uncached-budget.md 7),
so prefix-0 grids are the same in both.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass

AGG_BATCH_SCHEDULE = (
    tuple(range(1, 16)) + tuple(range(16, 32, 4)) + tuple(range(32, 64, 8)) + tuple(range(64, 256, 16))
    + tuple(range(256, 512, 32)) + (512, 768, 1024)
)  # fmt: skip
NORMAL_CTX_TOKENS = 8192  # budgets below this step by the small stride
CTX_MULTIPLE_OF_ISL = 2  # the grid reaches max(8192, 2 * isl) and always holds isl and 2 * isl
SMALL_STEPS = 16  # the small stride is at least 8192 / 16
LARGE_STEPS = 8  # the large stride is at least max_ctx / 8
DEFAULT_CTX_STRIDE = 512
DEFAULT_MAX_BATCH_SIZE = 512


@dataclass(frozen=True)
class AggGrid:
    """How the agg sweep enumerates operating points of one deployment."""

    budget_isl: int  # tokens per request the budget counts (isl legacy, isl - prefix uncached; >= 1)
    osl: int  # output tokens per request (>= 1)
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE  # largest batch tried
    ctx_stride: int = DEFAULT_CTX_STRIDE  # small prefill-budget stride, tokens
    chunked_prefill: bool = False  # False: budgets snap to multiples of budget_isl
    dedup: bool = True  # skip batches whose capped decode count was already seen (off under MTP progress)

    def batch_sizes(self) -> tuple[int, ...]:
        return tuple(b for b in AGG_BATCH_SCHEDULE if b <= self.max_batch_size)

    def ctx_tokens(self) -> list[int]:
        """The prefill budgets (_agg_ctx_tokens_list), ascending."""
        isl = self.budget_isl
        max_ctx = max(NORMAL_CTX_TOKENS, isl * CTX_MULTIPLE_OF_ISL)
        stride = max(self.ctx_stride, NORMAL_CTX_TOKENS // SMALL_STEPS)
        stride_large = max(1024, stride, max_ctx // LARGE_STEPS)
        if not self.chunked_prefill:
            stride = max(isl, stride)
            stride_large = math.ceil(stride_large / isl) * isl
        budgets, ctx = [], 0
        while True:
            ctx += stride if ctx < NORMAL_CTX_TOKENS else stride_large
            if ctx > max_ctx:
                break
            budgets.append(ctx)
        budgets += [isl * i for i in range(1, CTX_MULTIPLE_OF_ISL + 1) if isl * i not in budgets]
        return sorted(budgets)

    def candidates(self) -> list[tuple[int, int]]:
        """Every (batch, budget) that passes the balance guards, in sweep order: the walk's points
        before dedup and memory stops drop some."""
        return [(b, ctx) for b, budgets in dataclasses.replace(self, dedup=False).rows() for ctx in budgets]

    def rows(self) -> Iterator[tuple[int, Iterator[int]]]:
        """(batch, its budgets) in sweep order; stop consuming a batch's budgets at the first OOM."""
        budgets, seen = self.ctx_tokens(), []
        for b in self.batch_sizes():
            yield b, self._budgets(b, budgets, seen)

    def _budgets(self, b: int, budgets: list[int], seen: list[float]) -> Iterator[int]:
        """The budgets of one batch that pass the balance guards and the capped-decode dedup."""
        isl = self.budget_isl
        for ctx in budgets:
            spare = b - math.ceil(ctx / isl)
            if spare < 0 or (b > 1 and spare < 1):
                return
            if self.dedup:
                balance = isl * b / ctx / self.osl
                if balance > 1:
                    capped = b // balance
                    if capped > 1 and capped in seen:
                        continue
                    seen.append(capped)
            yield ctx
