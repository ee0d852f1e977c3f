"""InferenceX's SGLang launch recipes: the scheduler flags each single-node script launches a run with, cited per script version."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.deployment import Backend
from estimator.settings import SOURCE_ORIGIN, EngineSettings, engine_defaults
from measurements.recipes.models import DSR1_MODELS, QWEN35_MODELS


@dataclass(frozen=True)
class SglangFlags:
    """The scheduler flags of one SGLang launch that the replay follows."""

    chunked_prefill_size: int  # --chunked-prefill-size (the step token budget)
    stream_interval: int  # --stream-interval (recorded; the first token goes out at once, so TTFT and TPOT do not move)
    recv_interval: int  # --scheduler-recv-interval (1 when not given)


FlagsRule = Callable[[int, int], SglangFlags | None]  # (tp, concurrency) -> the recipe's flags; None: no branch for that tp


def _dsr1_fp8_blackwell(tp: int, c: int) -> SglangFlags | None:
    """dsr1_fp8_b200.sh: a branch per TP (4 or 8); TP 8 receives every 30 passes from CONC 16 on."""
    if tp == 4:
        return SglangFlags(8192, 30, 10)
    return SglangFlags(32768, 30, 30 if c >= 16 else 10) if tp == 8 else None


def _dsr1_fp4_blackwell(tp: int, c: int) -> SglangFlags:
    """dsr1_fp4_b200.sh (without attention DP): one branch; receives every 30 passes from CONC 16 on."""
    return SglangFlags(16384, 10, 30 if c >= 16 else 10)


def _qwen35_fp8_b200(tp: int, c: int) -> SglangFlags:
    """qwen3.5_fp8_b200.sh of March 2026 (v0.5.9 images): one branch; receives every 30 passes from CONC 16 on."""
    return SglangFlags(32768, 30, 30 if c >= 16 else 10)


def _fixed(flags: SglangFlags) -> FlagsRule:
    """A recipe whose flags depend on neither TP nor concurrency."""
    return lambda tp, c: flags


_DSR1_FP8_B200 = ("dsr1_fp8_b200.sh: TP 8: --chunked-prefill-size 32768 --scheduler-recv-interval 30 (CONC >= 16) else 10; "
                  "TP 4: 8192 and 10; --stream-interval 30")  # fmt: skip
_DSR1_FP4 = "--chunked-prefill-size 16384 --scheduler-recv-interval 30 (CONC >= 16) else 10 --stream-interval 10"
SGLANG_RECIPES: Mapping[tuple[str, str, str], tuple[FlagsRule, str]] = MappingProxyType(
    {
        ("dsr1", "fp8", "b200_sxm"): (
            _dsr1_fp8_blackwell,
            f"benchmarks/{_DSR1_FP8_B200} (every stored version: @ 1fc5d73, df64f87, 6c5e4c5; single_node/ @ 3b8a2f9, 16ffb65; "
            "fixed_seq_len/ @ 8eec0d4, 432945d)",
        ),
        ("dsr1", "fp8", "b300_sxm"): (
            _dsr1_fp8_blackwell,
            f"benchmarks/single_node/dsr1_fp8_b300.sh @ 5632483 and fixed_seq_len/ @ 8eec0d4 (the B200 recipe as is): {_DSR1_FP8_B200}",
        ),
        ("dsr1", "fp4", "b200_sxm"): (
            _dsr1_fp4_blackwell,
            f"benchmarks/dsr1_fp4_b200.sh @ 1fc5d73, df64f87; single_node/ @ 3b8a2f9, 285b662; fixed_seq_len/ @ 8eec0d4 (without attention DP): {_DSR1_FP4}",
        ),
        ("dsr1", "fp4", "b300_sxm"): (
            _dsr1_fp4_blackwell,
            f"benchmarks/single_node/dsr1_fp4_b300.sh @ b14590a, 5632483; fixed_seq_len/ @ 8eec0d4: {_DSR1_FP4}",
        ),
        ("dsr1", "fp8", "h200_sxm"): (
            _fixed(SglangFlags(32768, 10, 1)),
            "benchmarks/dsr1_fp8_h200.sh @ 1fc5d73, d1c47c8; single_node/ @ 161e7f6, 285b662; fixed_seq_len/ @ 8eec0d4: "
            "--chunked-prefill-size 32768 --stream-interval 10",
        ),
        ("qwen3.5", "fp8", "b200_sxm"): (
            _qwen35_fp8_b200,
            "benchmarks/single_node/qwen3.5_fp8_b200.sh @ 01fa35c, 3e2ebc0 and its _mtp sibling @ 83fafdd, 2ecc5ce (the versions of "
            "the sample's images, lmsysorg/sglang v0.5.9-cu129/cu130, measured March 2026): --chunked-prefill-size 32768 "
            "--scheduler-recv-interval 30 (CONC >= 16) else 10 --stream-interval 30; the later versions (PR 1027 on, April 2026: "
            "16384 or 8192, CONC > 4, stream 50) postdate these runs, and the earliest (@ 10c3d8d, NEXTN) sets none of the flags",
        ),
        ("qwen3.5", "fp8", "b300_sxm"): (
            _fixed(SglangFlags(16384, 50, 10)),
            "benchmarks/single_node/qwen3.5_fp8_b300.sh @ 5632483; fixed_seq_len/ @ f89cdfe, 1534ee2: --chunked-prefill-size 16384 "
            "--stream-interval 50 --scheduler-recv-interval 10",
        ),
        ("qwen3.5", "fp8", "h200_sxm"): (
            _fixed(SglangFlags(16384, 50, 1)),
            "benchmarks/single_node/qwen3.5_fp8_h200.sh @ 2116fc4, 5739244; fixed_seq_len/ @ 8eec0d4: --chunked-prefill-size 16384 --stream-interval 50",
        ),
    }
)  # (model family, precision, system) -> (flags rule of (TP, CONC), recipe citation); only recipes whose stored versions agree.
# Their --max-running-requests (128 / 256 / 512 by TP and lengths) is not applied: the sample holds these recipes' runs at
# concurrencies above it (256 and 512 against 128), so the versions that ran predate the cap.
# Recipes resolved only for the runs of one image line (the versions of that era agree; later ones differ).
SGLANG_RECIPE_IMAGES: Mapping[tuple[str, str, str], str] = MappingProxyType({("qwen3.5", "fp8", "b200_sxm"): "lmsysorg/sglang:v0.5.9"})


def sglang_recipe(model: str, precision: str | None, system: str, tp: int | None, concurrency: int,
                  image: str | None = None) -> EngineSettings | None:  # fmt: skip
    """The scheduler flags an InferenceX SGLang recipe launches a run of `tp` GPUs with (None: no
    recipe resolved, no recipe branch for that tp, or a run outside the image line a recipe is
    resolved for)."""
    family = "dsr1" if model in DSR1_MODELS else "qwen3.5" if model in QWEN35_MODELS else None
    image_line = SGLANG_RECIPE_IMAGES.get((family, precision, system))
    if image_line is not None and not (image or "").startswith(image_line):
        return None
    entry = SGLANG_RECIPES.get((family, precision, system))
    flags = entry[0](tp, concurrency) if entry is not None and tp is not None else None
    if flags is None:
        return None
    return engine_defaults(Backend.SGLANG, system, 0).replace(  # the recipe sets the memory-dependent default (the budget)
        step_token_budget=flags.chunked_prefill_size, chunked_prefill=True, max_num_seqs=None, origin=SOURCE_ORIGIN,
        citation=f"SemiAnalysisAI/InferenceX {entry[1]}", stream_interval=flags.stream_interval, mixed_batches=False,
        recv_interval=flags.recv_interval,
    )  # fmt: skip
