"""InferenceX's SGLang launch recipes: the scheduler flags each single-node script launches a run with, cited per script version."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.deployment import Backend
from estimator.settings import SOURCE_ORIGIN, EngineSettings, engine_defaults
from measurements.recipes.models import DSR1_MODELS, GLM5_MODELS, QWEN35_MODELS, QWEN35_MTP3_ACCEPTED, QWEN35_MTP3_ACCEPTED_CITATION, dsr1_mtp_accepted


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


def _recv_from_16(chunked_prefill_size: int, stream_interval: int) -> FlagsRule:
    """A one-branch recipe receiving every 30 passes from CONC 16 on, else every 10, whatever the TP."""
    return lambda tp, c: SglangFlags(chunked_prefill_size, stream_interval, 30 if c >= 16 else 10)


def _fixed(flags: SglangFlags) -> FlagsRule:
    """A recipe whose flags depend on neither TP nor concurrency."""
    return lambda tp, c: flags


_DSR1_FP8_B200 = ("dsr1_fp8_b200.sh: TP 8: --chunked-prefill-size 32768 --scheduler-recv-interval 30 (CONC >= 16) else 10; "
                  "TP 4: 8192 and 10; --stream-interval 30")  # fmt: skip
_QWEN35_FLAGS = "--chunked-prefill-size 32768 --scheduler-recv-interval 30 (CONC >= 16) else 10 --stream-interval 30"
_QWEN35_SCRIPTS = (  # (precision, system, the versions the sample's runs ran) of the Qwen3.5 scripts with _QWEN35_FLAGS
    ("bf16", "b200_sxm", "9dc87a68c (2026-02-19) L32-39, L54-58, c21776093"),
    ("fp4", "b200_sxm", "48d35c480 (2026-04-08) L32-43, L68-72 (16384 and stream 50 from 9189c1884, 2026-05-01)"),
    ("bf16", "b300_sxm", "77c8b9657, 32274d6c1 (2026-04-17) L32-39, L59-63"),
    ("fp4", "b300_sxm", "8acbd08b7 (2026-04-17) L35-45, L74-78"),
)
_DSR1_FP4 = "--chunked-prefill-size 16384 --scheduler-recv-interval 30 (CONC >= 16) else 10 --stream-interval 10"
_FAMILIES = ((DSR1_MODELS, "dsr1"), (QWEN35_MODELS, "qwen3.5"), (GLM5_MODELS, "glm5"))
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
            _recv_from_16(32768, 30),
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
        **{
            ("qwen3.5", precision, system): (_recv_from_16(32768, 30), f"benchmarks/single_node/qwen3.5_{precision}_{system[:4]}.sh @ {where}: {_QWEN35_FLAGS}")
            for precision, system, where in _QWEN35_SCRIPTS
        },  # fmt: skip
        ("glm5", "fp8", "b200_sxm"): (
            _fixed(SglangFlags(32768, 30, 1)),
            "benchmarks/single_node/glm5_fp8_b200.sh @ 13930ca61 (2026-03-20) L47-51, 626932a11: --chunked-prefill-size 32768 "
            "--max-prefill-tokens 32768 --stream-interval 30",
        ),
        ("glm5", "fp4", "b200_sxm"): (
            _fixed(SglangFlags(131072, 30, 1)),
            "benchmarks/single_node/glm5_nvfp4_b200.sh @ d43805fc3 (2026-03-28) L50-51 (glm5_fp4_b200.sh @ 800f57aaf, renamed): "
            "--chunked-prefill-size 131072 --stream-interval 30",
        ),
    }
)  # (model family, precision, system) -> (flags rule of (TP, CONC), recipe citation); only recipes whose stored versions agree.
# Their --max-running-requests (128 / 256 / 512 by TP and lengths) is not applied: the rows of the sample above 128 that it was
# held against were the -mtp keys' runs (SGLANG_SPECULATIVE_RUNS, which apply theirs), and no plain run's concurrency exceeds
# its recipe's cap, so it would bind on none of them.


@dataclass(frozen=True)
class RecipeRuns:
    """The runs a recipe is resolved for where its script changed later: an image line, or a measured-date window."""

    image: str = ""  # a run's image must start with this ("": any image)
    first: str | None = None  # ISO date of the script version the runs ran (inclusive; None: any date)
    until: str | None = None  # ISO date the next version changed the flags (exclusive; None: no later change)

    def covers(self, image: str | None, measured: str | None) -> bool:
        """Whether a run on `image` measured on `measured` (ISO date) ran this recipe."""
        if not (image or "").startswith(self.image):
            return False
        if self.first is None:
            return True
        return measured is not None and self.first <= measured[:10] and (self.until is None or measured[:10] < self.until)


# Recipes resolved only for the runs of one image line or date window (the versions of that era agree; later ones differ).
SGLANG_RECIPE_RUNS: Mapping[tuple[str, str, str], RecipeRuns] = MappingProxyType({
    ("qwen3.5", "fp8", "b200_sxm"): RecipeRuns(image="lmsysorg/sglang:v0.5.9"),
    ("qwen3.5", "bf16", "b200_sxm"): RecipeRuns(first="2026-02-19"),
    ("qwen3.5", "fp4", "b200_sxm"): RecipeRuns(first="2026-04-08", until="2026-05-01"),
    ("qwen3.5", "bf16", "b300_sxm"): RecipeRuns(first="2026-04-17", until="2026-05-12"),
    ("qwen3.5", "fp4", "b300_sxm"): RecipeRuns(first="2026-04-17", until="2026-05-12"),
    ("glm5", "fp8", "b200_sxm"): RecipeRuns(first="2026-03-20", until="2026-04-14"),
    ("glm5", "fp4", "b200_sxm"): RecipeRuns(first="2026-03-28", until="2026-04-09"),
})  # fmt: skip


def sglang_recipe(model: str, precision: str | None, system: str, tp: int | None, concurrency: int,
                  image: str | None = None, measured: str | None = None) -> EngineSettings | None:  # fmt: skip
    """The scheduler flags an InferenceX SGLang recipe launches a run of `tp` GPUs with (None: no
    recipe resolved, no recipe branch for that tp, or a run outside the image line or dates a recipe is
    resolved for: SGLANG_RECIPE_RUNS)."""
    family = next((name for models, name in _FAMILIES if model in models), None)
    runs = SGLANG_RECIPE_RUNS.get((family, precision, system))
    if runs is not None and not runs.covers(image, measured):
        return None
    entry = SGLANG_RECIPES.get((family, precision, system))
    flags = entry[0](tp, concurrency) if entry is not None and tp is not None else None
    if flags is None:
        return None
    return _launched(system, flags, f"SemiAnalysisAI/InferenceX {entry[1]}")


def _launched(system: str, flags: SglangFlags, citation: str, **changes: object) -> EngineSettings:
    """SGLang's defaults with a script's scheduler flags (the memory-dependent budget among them) and `changes`, cited."""
    launched = {"step_token_budget": flags.chunked_prefill_size, "chunked_prefill": True, "max_num_seqs": None, "origin": SOURCE_ORIGIN,
                "citation": citation, "stream_interval": flags.stream_interval, "mixed_batches": False, "recv_interval": flags.recv_interval}  # fmt: skip
    return engine_defaults(Backend.SGLANG, system, 0).replace(**(launched | changes))


@dataclass(frozen=True)
class SpeculativeRuns:
    """The runs of an InferenceX `-mtp` config key that the sample records as plain agg rows (it drops the spec-decoding
    column): the runs of one day, image and TP whose concurrency lies beyond the plain key's search space that day."""

    family: str
    precision: str
    system: str
    day: str  # ISO date measured
    image: str  # the run's image, exactly
    tp: int
    plain_up_to: Mapping[tuple[int, int], int]  # (isl, osl) -> the plain key's highest concurrency at this TP (0: none)
    flags: FlagsRule  # the -mtp script's scheduler flags
    nextn: int  # --speculative-num-steps, chain drafting (topk 1, steps + 1 draft tokens)
    accepted: tuple[float, str] | str  # (accepted drafts per step, its published source), or why none is published
    max_running: int | None  # --max-running-requests (None: CONC)
    citation: str

    def covers(self, family: str | None, precision: str | None, system: str, tp: int | None, isl: int, osl: int, concurrency: int,
               image: str | None, measured: str | None) -> bool:  # fmt: skip
        """Whether a run is one of these."""
        if (family, precision, system, tp, image) != (self.family, self.precision, self.system, self.tp, self.image):
            return False
        return (measured or "")[:10] == self.day and concurrency > self.plain_up_to.get((isl, osl), 0)


_SPEC_CITATION = "; EAGLE without an exported SGLANG_ENABLE_SPEC_V2: SGLang turns the overlap schedule off (server_args.py 0.5.9 L2330-L2388)"
SGLANG_SPECULATIVE_RUNS: tuple[SpeculativeRuns, ...] = (
    SpeculativeRuns(
        "qwen3.5",
        "fp8",
        "b200_sxm",
        "2026-03-20",
        "lmsysorg/sglang:v0.5.9-cu130",
        4,
        MappingProxyType({}),
        _recv_from_16(32768, 30),
        3,
        (QWEN35_MTP3_ACCEPTED, QWEN35_MTP3_ACCEPTED_CITATION),
        None,
        "SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml @ 35d4bb367 (PR 898, 2026-03-20): only qwen3.5-fp8-b200-sglang-mtp "
        "runs image lmsysorg/sglang:v0.5.9-cu130 with { tp: 4, ep: 1, conc 4-256, spec-decoding: mtp } (the plain key: "
        "v0.5.9-cu129-amd64, { tp: 4, ep: 4 }, { tp: 8 }); benchmarks/single_node/qwen3.5_fp8_b200_mtp.sh @ 35d4bb367: "
        "SPECULATIVE_NUM_STEPS=3, SPECULATIVE_DRAFT_TOKENS=4, SPECULATIVE_EAGLE_TOPK=1, --chunked-prefill-size 32768, "
        "--scheduler-recv-interval 30 (CONC >= 16) else 10, --stream-interval 30, --max-running-requests $CONC" + _SPEC_CITATION,
    ),
    SpeculativeRuns(
        "dsr1",
        "fp8",
        "b200_sxm",
        "2026-03-25",
        "lmsysorg/sglang:v0.5.9-cu130",
        8,
        MappingProxyType({(1024, 1024): 64, (1024, 8192): 64, (8192, 1024): 4}),
        _recv_from_16(16384, 30),
        2,
        dsr1_mtp_accepted("sglang", 2),
        512,
        "SemiAnalysisAI/InferenceX .github/configs/nvidia-master.yaml @ 12ba0ae07: dsr1-fp8-b200-sglang runs TP 8 up to conc 64 "
        "(1k/1k, 1k/8k) and 4 (8k/1k), dsr1-fp8-b200-sglang-mtp { tp: 8, ep: 1, conc 4-512, spec-decoding: mtp } on the same image; "
        "benchmarks/single_node/dsr1_fp8_b200_mtp.sh @ 12ba0ae07: SPECULATIVE_NUM_STEPS=2, SPECULATIVE_DRAFT_TOKENS=3, "
        "SPECULATIVE_EAGLE_TOPK=1, --chunked-prefill-size 16384, --scheduler-recv-interval 30 (CONC >= 16) else 10, "
        "--stream-interval 30, --max-running-requests 512; SGLANG_ENABLE_SPEC_V2=1 set but not exported" + _SPEC_CITATION,
    ),
)


def sglang_speculative_run(model: str, precision: str | None, system: str, tp: int | None, isl: int, osl: int, concurrency: int,
                           image: str | None, measured: str | None) -> EngineSettings | None:  # fmt: skip
    """The settings of an InferenceX `-mtp` run the sample records as a plain agg row (SGLANG_SPECULATIVE_RUNS): its
    script's flags, its drafts and their published acceptance, the overlap schedule off; None for any other run."""
    family = next((name for models, name in _FAMILIES if model in models), None)
    runs = next((r for r in SGLANG_SPECULATIVE_RUNS if r.covers(family, precision, system, tp, isl, osl, concurrency, image, measured)), None)
    if runs is None:
        return None
    if isinstance(runs.accepted, str):  # no published acceptance at that depth
        return None
    accepted, source = runs.accepted
    return _launched(system, runs.flags(runs.tp, concurrency), f"{runs.citation}; accepted drafts per step: {source}",
                     max_num_seqs=runs.max_running or concurrency, nextn=runs.nextn, nextn_accepted=accepted, overlap_scheduler=False)  # fmt: skip
