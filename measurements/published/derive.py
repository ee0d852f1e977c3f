"""Regenerate sgl_cookbook.csv from a git mirror of sgl-project/sgl-cookbook (see measurements/README.md).

    python -m measurements.published.derive <sgl-cookbook git dir> [--commit REF] [--out CSV]

Reads every page under docs/autoregressive/ at REF (default HEAD). Each `bench_serving` result block
("Serving Benchmark Result") is one run: it is paired with the page's bench_serving command that
agrees with it (backend, max concurrency, number of requests), the launch command of its benchmark
section, and the section's "Hardware:" and version lines. A run is kept when it used the random
dataset on a GPU system of the bundled data, for a model the estimator can price (a bundled config,
or a MODEL_ALIASES alias); every other run is listed on stderr with the reason it was left out.
Nothing is fitted: every value is the page's, SGLang's documented default, or a cited mapping.
Writes atomically; the same mirror and REF give a byte-identical file.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from estimator.deployment import Backend
from estimator.io import atomic_path
from estimator.models import checkpoint_quant, checkpoint_quant_modes
from estimator.settings import ENGINE_DEFAULT_CITATIONS, KV_CACHE_DTYPES, SOURCE_ORIGIN, EngineSettings, system_defaults
from measurements import builds
from measurements.clients import CLIENTS, SGL_COOKBOOK, SGLANG_BENCH_DEFAULTS
from measurements.loaders import write_measurements
from measurements.mapping import bundled_architecture, is_native, resolve_model
from measurements.schema import Layout, Measurement, Protocol, Statistics

REPOSITORY = "sgl-project/sgl-cookbook"
PAGES = "docs/autoregressive/"
CSV_PATH = Path(__file__).with_name("sgl_cookbook.csv")
RESULT_HEADER = "Serving Benchmark Result"

# GPU name on a page's "Hardware:" line -> GPU system of the bundled data (first match wins; GB before B).
# H100 80GB HBM3 is the SXM part (the PCIe H100 carries HBM2e).
SYSTEMS = (("GB300", "gb300"), ("GB200", "gb200"), ("B300", "b300_sxm"), ("B200", "b200_sxm"), ("H200", "h200_sxm"), ("H100", "h100_sxm"))
OTHER_GPUS = ("A100", "H800", "H20", "MI300X", "MI325X", "MI350X", "MI355X")  # named on pages, outside the set (see README)

# Quant labels of a checkpoint whose bundled config does not state its format, cited (empty: the bundled config's own).
QUANT_LABELS: Mapping[str, tuple[str | None, str | None, str]] = MappingProxyType({
    "moonshotai/Kimi-K2.5": (None, "int4_wo", "ROCm/ATOM recipes/Kimi-K2.5.md: 'native INT4 quantization (compressed-tensors, group_size=32) "
                                              "for the routed MoE expert weights'; the bundled config carries no quantization_config"),
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16": ("bfloat16", "bfloat16", "the BF16 checkpoint (its name); priced on the sizes of "
                                                                              "the bundled FP8 config (MODEL_ALIASES)"),
})  # fmt: skip
PRECISION = MappingProxyType({"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp8_static": "fp8", "int4_wo": "int4", "nvfp4": "fp4"})

# launch_server / bench_serving spellings -> the flag they set: declared aliases (server_args.py: --tp-size, --dp-size,
# --ep / --expert-parallel-size, --model) and argparse prefixes (allow_abbrev) the pages use.
FLAG_ALIASES = MappingProxyType({
    "--tp": "--tp-size", "--tensor-parallel-size": "--tp-size", "--dp": "--dp-size", "--data-parallel-size": "--dp-size",
    "--ep": "--ep-size", "--expert-parallel-size": "--ep-size", "--pp": "--pp-size", "--pipeline-parallel-size": "--pp-size",
    "--model": "--model-path", "--speculative-algo": "--speculative-algorithm", "--num-prompt": "--num-prompts",
    "--random-input": "--random-input-len", "--random-output": "--random-output-len",
})  # fmt: skip
BENCH_ONLY_FLAGS = frozenset({"--backend", "--dataset-name", "--num-prompts", "--max-concurrency"})  # flags launch_server lacks
SETTINGS_FLAGS = frozenset({"--chunked-prefill-size", "--max-running-requests", "--enable-mixed-chunk", "--stream-interval",
                            "--scheduler-recv-interval", "--kv-cache-dtype", "--speculative-algorithm"})  # fmt: skip
LAYOUT_FLAGS = frozenset({"--tp-size", "--dp-size", "--ep-size", "--pp-size", "--enable-dp-attention"})
# SGLang's defaults under an EAGLE-family speculative launch (server_args.py ServerArgs._handle_speculative_decoding, alike in
# 0.5.6 L1661-L1700 and 0.5.9 L2330-L2388): NEXTN is EAGLE; --max-running-requests unset -> 48; the overlap schedule off
# unless SGLANG_ENABLE_SPEC_V2 is set; mixed chunks off.
SPECULATIVE_CHAIN = frozenset({"EAGLE", "EAGLE3", "NEXTN"})
SPECULATIVE_RUNNING_DEFAULT = 48
SPECULATIVE_DEFAULTS_CITATION = (
    "speculative launch: SGLang's max_running_requests 48 when unset and the overlap schedule off unless SGLANG_ENABLE_SPEC_V2 "
    "(sglang/srt/server_args.py ServerArgs._handle_speculative_decoding, 0.5.6 L1661-L1700, 0.5.9 L2330-L2388)"
)


@dataclass(frozen=True)
class Block:
    """A fenced code block of a page: 1-based line numbers of its fences and its lines between them."""

    start: int  # line of the opening fence
    end: int  # line of the closing fence
    lines: tuple[str, ...]  # the lines between the fences

    @property
    def span(self) -> str:
        return f"L{self.start}-L{self.end}"


@dataclass(frozen=True)
class Command:
    """One shell command of a code block: environment assignments, words and flags (aliases resolved)."""

    block: Block
    env: tuple[str, ...]  # VAR=value prefixes
    words: tuple[str, ...]  # words before the first flag
    flags: Mapping[str, str | None]  # flag -> value (None: a switch)

    def get(self, flag: str, default: str | None = None) -> str | None:
        value = self.flags.get(flag)
        return default if value is None else value

    @property
    def is_bench(self) -> bool:
        return "sglang.bench_serving" in self.words or bool(BENCH_ONLY_FLAGS & self.flags.keys())

    @property
    def is_launch(self) -> bool:
        serve = "sglang.launch_server" in self.words or ("sglang" in self.words and "serve" in self.words)
        return serve and not self.is_bench


@dataclass(frozen=True)
class LeftOut:
    """A result block not made a row, and why."""

    path: str
    line: int  # the result block's opening fence
    reason: str


@dataclass(frozen=True)
class Page:
    """One cookbook page at a commit: its lines, code blocks and commands."""

    path: str
    commit: str  # full commit id read
    lines: tuple[str, ...]
    blocks: tuple[Block, ...]

    def commands(self) -> Iterator[Command]:
        for block in self.blocks:
            command = parse_command(block)
            if command is not None:
                yield command


def git(gitdir: str | Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], check=True, capture_output=True, text=True).stdout


def code_blocks(lines: tuple[str, ...]) -> tuple[Block, ...]:
    """The fenced code blocks of a page, in order: a fence of n >= 3 backticks closes at a bare fence of at
    least n (CommonMark), so a ```` block may hold ``` lines; an unclosed fence runs to the end."""
    blocks, opened, width = [], None, 0
    for number, line in enumerate(lines, 1):
        fence = re.match(r"\s*(`{3,})(.*)$", line)
        if fence is None:
            continue
        if opened is None:
            opened, width = number, len(fence.group(1))
        elif len(fence.group(1)) >= width and not fence.group(2).strip():
            blocks.append(Block(opened, number, lines[opened : number - 1]))
            opened = None
    if opened is not None:
        blocks.append(Block(opened, len(lines) + 1, lines[opened:]))
    return tuple(blocks)


def parse_command(block: Block) -> Command | None:
    """The first sglang command of a code block (None: none, or unparsable shell)."""
    text = " ".join(line.rstrip().removesuffix("\\") for line in block.lines if not line.lstrip().startswith("#"))
    try:
        tokens = shlex.split(text)
    except ValueError:
        return None
    if not any("sglang" in t for t in tokens):
        return None
    env = tuple(t for t in _leading(tokens, lambda t: re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", t)))
    rest = tokens[len(env) :]
    words = tuple(_leading(rest, lambda t: not t.startswith("--")))
    flags: dict[str, str | None] = {}
    items = rest[len(words) :]
    for i, token in enumerate(items):
        if not token.startswith("--"):
            continue
        name, sep, value = token.partition("=")
        if not sep:
            value = items[i + 1] if i + 1 < len(items) and not items[i + 1].startswith("--") else None
        flags[FLAG_ALIASES.get(name, name)] = value
    return Command(block, env, words, MappingProxyType(flags))


def _leading(tokens: list[str], keep) -> Iterator[str]:
    for token in tokens:
        if not keep(token):
            return
        yield token


def metrics(block: Block) -> dict[str, str]:
    """`key: value` lines of a result block (the first value of a repeated key)."""
    found: dict[str, str] = {}
    for line in block.lines:
        key, sep, value = line.partition(":")
        if sep and value.strip():
            found.setdefault(key.strip(), value.strip())
    return found


def read_page(gitdir: str | Path, commit: str, path: str) -> Page:
    lines = tuple(git(gitdir, "show", f"{commit}:{path}").split("\n"))
    return Page(path, commit, lines, code_blocks(lines))


def block_commit(gitdir: str | Path, page: Page, block: Block) -> tuple[str, int]:
    """(commit, committer time) of the newest change to a block's lines: when its figures were published."""
    out = git(gitdir, "blame", "--porcelain", "-L", f"{block.start},{block.end}", page.commit, "--", page.path)
    newest, stamp, current = "", -1, ""
    for line in out.splitlines():
        head = line.split(" ", 1)
        if re.fullmatch(r"[0-9a-f]{40}", head[0]):
            current = head[0]
        elif head[0] == "committer-time" and int(head[1]) > stamp:
            newest, stamp = current, int(head[1])
    return newest, stamp


def _environment(page: Page, before: int) -> dict[str, tuple[int, str]]:
    """The benchmark section's environment lines (`- Hardware: ...`) nearest above line `before`, by key:
    hardware, version, tp, ep, image -> (line, text). The section starts at the nearest Hardware line."""
    keys = {"hardware": r"hardware", "version": r"sglang version", "tp": r"tensor parallelism", "ep": r"expert parallelism",
            "image": r"docker image"}  # fmt: skip
    found: dict[str, tuple[int, str]] = {}
    for number in range(before - 1, 0, -1):
        match = re.match(r"\s*(?:[-*]\s*)?\**([A-Za-z ]+?)\**\s*:\s*(.+)$", page.lines[number - 1])
        if match is None:
            continue
        key = next((k for k, pattern in keys.items() if re.fullmatch(pattern, match.group(1).strip(), re.I)), None)
        if key is not None and key not in found:
            found[key] = (number, match.group(2).strip().strip("`"))
        if key == "hardware":
            break
    return found


def system_of(hardware: str) -> str | None:
    """The bundled GPU system a Hardware line names (None: another GPU or none)."""
    return next((system for gpu, system in SYSTEMS if re.search(rf"\b{gpu}\b", hardware, re.I)), None)


@dataclass(frozen=True)
class Run:
    """One result block paired with its commands and environment."""

    page: Page
    result: Block
    figures: Mapping[str, str]  # the block's metrics
    bench: Command
    launch: Command | None  # None: the section states no launch command (its environment lines stand)
    launch_note: str  # where the launch command comes from
    env: Mapping[str, tuple[int, str]]  # environment lines by key
    system: str


def pair(page: Page, result: Block) -> Run | str:
    """A result block's run, or why it is left out (a reason string)."""
    figures = metrics(result)
    env = _environment(page, result.start)
    if "hardware" not in env:
        return "no Hardware line above the block"
    section = env["hardware"][0]
    heading = _gpu_heading(page, section, result.start)
    if heading is not None:  # a model's subsection naming its GPU ("#### model (1x H200, TP=1)") narrows the section's
        env["gpu"] = heading
    hardware = env.get("gpu", env["hardware"])[1]
    system = system_of(hardware)
    if system is None:
        gpu = next((g for g in OTHER_GPUS if re.search(rf"\b{g}\b", hardware, re.I)), hardware)
        return f"hardware {gpu!r} is not a GPU system of this set ({', '.join(s for _, s in SYSTEMS)})"
    commands = [c for c in page.commands() if section < c.block.start < result.start]
    bench = next((c for c in reversed(commands) if c.is_bench and _agrees(c, figures)), None)
    if bench is None:
        return "no bench_serving command in its section agrees with the block (backend, max concurrency, requests)"
    launch = next((c for c in reversed(commands) if c.is_launch), None)
    note = f"launch {launch.block.span}" if launch else ""
    if launch is None:
        launch = _page_launch(page, bench, env)
        note = f"launch {launch.block.span} (the page's command for this model and TP; its section states none)" if launch else (
            "no launch command: the section's Tensor/Expert Parallelism lines and SGLang defaults")  # fmt: skip
    return Run(page, result, MappingProxyType(figures), bench, launch, note, MappingProxyType(env), system)


def _gpu_heading(page: Page, after: int, before: int) -> tuple[int, str] | None:
    """The nearest Markdown heading between two lines that names a GPU, as (line, text), or None."""
    gpus = [g for g, _ in SYSTEMS] + list(OTHER_GPUS)
    for number in range(before - 1, after, -1):
        line = page.lines[number - 1]
        if line.startswith("#") and any(re.search(rf"\b{g}\b", line, re.I) for g in gpus):
            return number, line.lstrip("#").strip()
    return None


def _agrees(bench: Command, figures: Mapping[str, str]) -> bool:
    """Whether a bench_serving command ran a result block: its backend, max concurrency and prompts."""
    concurrency = bench.get("--max-concurrency", "not set")
    return (bench.get("--backend", SGLANG_BENCH_DEFAULTS["--backend"]) == figures.get("Backend")
            and concurrency == figures.get("Max request concurrency")
            and bench.get("--num-prompts", SGLANG_BENCH_DEFAULTS["--num-prompts"]) == figures.get("Successful requests"))  # fmt: skip


def _page_launch(page: Page, bench: Command, env: Mapping[str, tuple[int, str]]) -> Command | None:
    """The page's one launch command serving the bench's model at the section's TP (None: none or several)."""
    tp = env.get("tp", (0, ""))[1]
    found = [c for c in page.commands() if c.is_launch and c.get("--model-path") == bench.get("--model-path") and c.get("--tp-size") == tp]
    return found[0] if len(found) == 1 else None


def to_measurement(run: Run, published: tuple[str, int]) -> Measurement | str:
    """A run's row, or why it is left out."""
    bench, launch, figures = run.bench, run.launch, run.figures
    dataset = bench.get("--dataset-name", SGLANG_BENCH_DEFAULTS["--dataset-name"])
    if dataset != "random":
        return f"dataset {dataset}: lengths are not the random dataset's requested isl/osl"
    model = (launch.get("--model-path") if launch else None) or bench.get("--model-path")
    if model is None:
        return "no model named"
    layout = _layout(run, int(figures["Max request concurrency"]))
    if isinstance(layout, str):
        return layout
    settings = _settings(run, layout)
    if isinstance(settings, str):
        return settings
    isl, osl = int(_bench(bench, "--random-input-len")), int(_bench(bench, "--random-output-len"))
    ratio = float(_bench(bench, "--random-range-ratio"))
    gemm, moe, quant_note = QUANT_LABELS.get(model, (None, None, ""))
    stats = _statistics(figures)
    row = Measurement(
        id=f"sglcb-{Path(run.page.path).stem}-{run.system}-{isl}x{osl}-c{figures['Max request concurrency']}-L{run.result.start}",
        source=SGL_COOKBOOK,
        provenance=_provenance(run, published, isl, osl, ratio, quant_note),
        engine="sglang",
        engine_version=_release(run.env),
        image=run.env["image"][1] if "image" in run.env else None,
        system=run.system,
        model=model,
        precision=None,
        gemm_quant=gemm,
        moe_quant=moe,
        mode="agg",
        isl=isl,
        osl=osl,
        concurrency=int(figures["Max request concurrency"]),
        agg=layout,
        prefill=None,
        decode=None,
        ttft_ms=stats.ttft_mean_ms,
        tpot_ms=stats.tpot_mean_ms,
        ttft_statistic=CLIENTS[SGL_COOKBOOK].ttft_statistic,
        tpot_definition=CLIENTS[SGL_COOKBOOK].tpot_definition,
        statistics=stats,
        measured_date=None,
        protocol=Protocol(
            client=CLIENTS[SGL_COOKBOOK].client,
            num_prompts=int(_bench(bench, "--num-prompts")),
            request_rate=float(_bench(bench, "--request-rate")),
            random_range_ratio=replay_range_ratio(ratio, isl, osl),
            ignore_eos="--disable-ignore-eos" not in bench.flags,
            client_citation=CLIENTS[SGL_COOKBOOK].citation,
            num_warmups=int(_bench(bench, "--warmup-requests")),
            client_seed=_client_seed(bench, _release(run.env), ratio, osl),
        ),
        settings=settings,
    )
    model_used, _ = resolve_model(row)  # a model id without a bundled config is priced through its alias, as every row is
    if bundled_architecture(model_used) is None:
        return f"no bundled config for model {model} (nor an alias in measurements.mapping.MODEL_ALIASES)"
    row = dataclasses.replace(row, precision=_precision(model_used, gemm, moe))
    return builds.with_build_compiles(row, measured_by=_date(published[1]))  # a result was measured by its block's last change


def replay_range_ratio(ratio: float, isl: int, osl: int) -> float:
    """The range ratio r in (0, 1] the replay's lengths take for SGLang's ratio: SGLang draws each length
    uniform on [max(int(L*r), 1), L]; at its default r = 0 that is [1, L], which the replay's
    [max(1, int(r'*L)), L] gives for both lengths at r' = 1/max(isl, osl)."""
    return ratio if ratio > 0 else 1.0 / max(isl, osl)


# SGLang releases whose bench_serving draws output lengths from int(L*r), not max(int(L*r), 1): [0, L] at r = 0 (the 0.5.6 and
# 0.5.6.post1 wheels' sample_random_requests, L1232), draws the replay does not repeat (estimator.closedloop.lengths.client_draws)
ZERO_OUTPUT_RELEASES = frozenset({"0.5.6", "0.5.6.post1"})


def _client_seed(bench: Command, release: str | None, ratio: float, osl: int) -> int | None:
    """The bench's --seed (bench_serving's default 1), whose draws the replay repeats; None where a release draws outputs
    from 0 (ZERO_OUTPUT_RELEASES with int(osl*r) = 0): those runs take the replay's evenly spaced lengths."""
    if release in ZERO_OUTPUT_RELEASES and int(osl * ratio) < 1:
        return None
    return int(_bench(bench, "--seed"))


def _bench(bench: Command, flag: str) -> str:
    return bench.get(flag, SGLANG_BENCH_DEFAULTS[flag])


def _layout(run: Run, concurrency: int) -> Layout | str:
    """The agg layout the launch sets, SGLang defaults where it sets none: tp, dp 1, ep 1, pp 1; under
    --enable-dp-attention attention DP dp at tp/dp per rank; MoE TP tp/ep, EP ep (server_args.py)."""
    launch = run.launch
    values = {flag: (launch.get(flag) if launch else None) for flag in ("--tp-size", "--dp-size", "--ep-size", "--pp-size")}
    if launch is None:
        values["--tp-size"] = run.env.get("tp", (0, None))[1]
        values["--ep-size"] = run.env.get("ep", (0, None))[1]
    try:
        tp, dp, ep, pp = (int(values[f] or 1) for f in ("--tp-size", "--dp-size", "--ep-size", "--pp-size"))
    except ValueError:
        return f"unreadable parallel sizes {values}"
    attention_dp = dp if launch is not None and "--enable-dp-attention" in launch.flags else 1
    if dp > 1 and attention_dp == 1:
        return f"--dp-size {dp} without DP attention (router replicas) is not an agg layout of this schema"
    if tp % attention_dp or tp % ep:
        return f"tp {tp} is not a multiple of dp {attention_dp} and ep {ep}"
    return Layout(batch_size=math.ceil(concurrency / attention_dp), workers=1, tp=tp // attention_dp, pp=pp, attention_dp=attention_dp,
                  moe_tp=tp // ep, moe_ep=ep)  # fmt: skip


def _settings(run: Run, layout: Layout) -> EngineSettings | str:
    """SGLang's defaults on the system at the page's release (estimator.settings.system_defaults) with what the launch sets."""
    base, launch = system_defaults("sglang", run.system, _release(run.env)), run.launch
    if launch is None:
        return base
    changes: dict[str, object] = {}
    if (size := launch.get("--chunked-prefill-size")) is not None:
        if int(size) < 1:
            return f"--chunked-prefill-size {size}: chunked prefill off is not modelled for SGLang rows"
        changes["step_token_budget"] = int(size)
    if layout.attention_dp > 1:  # server_args.py: under DP attention the chunked prefill size is divided by dp
        changes["step_token_budget"] = changes.get("step_token_budget", base.step_token_budget) // layout.attention_dp
    for flag, name in (("--max-running-requests", "max_num_seqs"), ("--stream-interval", "stream_interval"),
                       ("--scheduler-recv-interval", "recv_interval")):  # fmt: skip
        if launch.get(flag) is not None:
            changes[name] = int(launch.get(flag))
    if "--enable-mixed-chunk" in launch.flags:
        changes["mixed_batches"] = True
    if (dtype := launch.get("--kv-cache-dtype")) is not None:
        if dtype.lower() not in KV_CACHE_DTYPES:
            return f"--kv-cache-dtype {dtype}: not a KV cache dtype the estimate prices ({', '.join(KV_CACHE_DTYPES)})"
        changes["kv_cache_dtype"] = dtype  # EngineSettings reads the launch spelling (estimator.settings.KV_CACHE_DTYPES)
    speculative = launch.get("--speculative-algorithm")
    if speculative is not None:
        drafts = _drafts(launch, run.figures)
        if isinstance(drafts, str):
            return drafts
        changes["nextn"], changes["nextn_accepted"] = drafts
        if speculative.upper() not in SPECULATIVE_CHAIN:
            return f"speculative algorithm {speculative} is not a draft-model chain (EAGLE, EAGLE3, NEXTN)"
        changes.setdefault("max_num_seqs", SPECULATIVE_RUNNING_DEFAULT)
        changes["overlap_scheduler"] = any(v.startswith("SGLANG_ENABLE_SPEC_V2=") and v.split("=", 1)[1].lower() in ("1", "true")
                                           for v in launch.env)  # fmt: skip
    if not changes:
        return base
    citation = f"{REPOSITORY} {run.page.path} @ {run.page.commit[:12]} {run.launch_note}"
    if speculative is not None:
        citation += f"; {SPECULATIVE_DEFAULTS_CITATION}"
    return base.replace(**changes, origin=SOURCE_ORIGIN, citation=f"{citation}; else {ENGINE_DEFAULT_CITATIONS[Backend.SGLANG]}")


def _drafts(launch: Command, figures: Mapping[str, str]) -> tuple[int, float] | str:
    """(draft depth, accepted drafts per step) of a speculative launch: chain drafting only (topk 1,
    steps + 1 draft tokens); accepted = the block's Accept length less the verified token."""
    steps, topk, tokens = (launch.get(f) for f in ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"))
    if steps is None or topk != "1" or tokens is None or int(tokens) != int(steps) + 1:
        return f"speculative decoding other than chain drafting (steps {steps}, topk {topk}, draft tokens {tokens})"
    if "Accept length" not in figures:
        return "speculative decoding without a published accept length"
    accepted = float(figures["Accept length"]) - 1.0
    if not 0.0 <= accepted <= int(steps):
        return f"accept length {figures['Accept length']} outside [1, {int(steps) + 1}]"
    return int(steps), round(accepted, 6)


def _statistics(figures: Mapping[str, str]) -> Statistics:
    value = lambda key: float(figures[key]) if key in figures else None  # noqa: E731
    return Statistics(
        statistic="mean", ttft_mean_ms=value("Mean TTFT (ms)"), ttft_median_ms=value("Median TTFT (ms)"), ttft_p99_ms=value("P99 TTFT (ms)"),
        tpot_mean_ms=value("Mean TPOT (ms)"), tpot_median_ms=value("Median TPOT (ms)"), tpot_p99_ms=value("P99 TPOT (ms)"),
    )  # fmt: skip


def _release(env: Mapping[str, tuple[int, str]]) -> str | None:
    """The SGLang release the section states (None: none, or a branch or commit)."""
    text = env.get("version", (0, ""))[1]
    match = re.fullmatch(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)", text.strip())
    return match.group(1) if match else None


def _precision(model_used: str, gemm: str | None, moe: str | None) -> str | None:
    """The checkpoint's precision label: its experts' (else GEMMs') quant mode, from the labels or the bundled config."""
    modes = checkpoint_quant_modes(checkpoint_quant(model_used))
    moe_model = not is_native(model_used)
    mode = (moe or modes.get("moe") or gemm or modes.get("gemm") or "bfloat16") if moe_model else (gemm or modes.get("gemm") or "bfloat16")
    return PRECISION.get(mode, mode)


def seed_draws(figures: Mapping[str, str], isl: int, osl: int, ratio: float, prompts: int, seed: int) -> str:
    """The block's token totals against the random dataset's seeded draws (inputs, then outputs, each uniform
    on [max(int(L*r), 1), L]; outputs on [int(L*r), L] in 0.5.6 and 0.5.6.post1), outputs run to their ends
    (ignore_eos): which match, and on which output bound."""
    rng = np.random.RandomState(seed)
    inputs = int(rng.randint(max(int(isl * ratio), 1), isl + 1, size=prompts).sum())
    state = rng.get_state()
    outputs = {}
    for label, low in (("[1, osl]", max(int(osl * ratio), 1)), ("[0, osl]", int(osl * ratio))):
        rng.set_state(state)
        outputs[label] = int(rng.randint(low, osl + 1, size=prompts).sum())
    page_in, page_out = figures.get("Total input tokens"), figures.get("Total generated tokens")
    said = "inputs match" if page_in == str(inputs) else f"inputs {page_in} against {inputs} drawn"
    bounds = [label for label, total in outputs.items() if page_out == str(total)]
    said_out = f"outputs match on {' or '.join(bounds)}" if bounds else f"outputs {page_out} against {outputs['[1, osl]']} drawn on [1, osl]"
    return f"token totals against the seed-{seed} draws: {said}, {said_out}"


def _provenance(run: Run, published: tuple[str, int], isl: int, osl: int, ratio: float, quant_note: str) -> str:
    env, bench = run.env, run.bench
    parts = [
        f"{REPOSITORY} {run.page.path} @ {run.page.commit[:12]}",
        f"result {run.result.span}",
        f"bench {bench.block.span}",
        run.launch_note,
        *(f"{key} L{line} {text!r}" for key, (line, text) in sorted(env.items())),
        f"block last changed {published[0][:12]} ({_date(published[1])})",
        f"requested isl={isl} osl={osl} random_range_ratio={ratio:g}",
        seed_draws(run.figures, isl, osl, ratio, int(_bench(bench, "--num-prompts")), int(_bench(bench, "--seed"))),
    ]
    if "Accept length" in run.figures:
        parts.append(f"accept length {run.figures['Accept length']} (avg_spec_accept_length: accepted drafts + 1 per request per step)")
    if run.launch is not None:
        other = sorted(f for f in run.launch.flags if f not in SETTINGS_FLAGS | LAYOUT_FLAGS | {"--model-path"} and not f.startswith("--speculative"))
        if other or run.launch.env:
            parts.append(f"launch also sets {' '.join([*run.launch.env, *other])} (not modelled)")
    if quant_note:
        parts.append(f"quant labels: {quant_note}")
    return "; ".join(p for p in parts if p)


def _date(stamp: int) -> str:
    return np.datetime_as_string(np.datetime64(stamp, "s"), unit="D")


@dataclass(frozen=True)
class Derivation:
    """The rows derived from a cookbook commit and the result blocks left out."""

    commit: str
    rows: tuple[Measurement, ...]
    left_out: tuple[LeftOut, ...]


def derive(gitdir: str | Path, commit: str = "HEAD") -> Derivation:
    """Every result block of the pages at `commit`, as rows or left out; a block repeating an earlier
    published one (the same figures, as a page carrying another page's runs over) is left out."""
    full = git(gitdir, "rev-parse", f"{commit}^{{commit}}").strip()
    paths = [p for p in git(gitdir, "ls-tree", "-r", "--name-only", full, "--", PAGES).splitlines() if p.endswith(".md")]
    found = []
    for path in sorted(paths):
        page = read_page(gitdir, full, path)
        for block in page.blocks:
            if block.lines and any(RESULT_HEADER in line for line in block.lines[:2]):
                found.append((block_commit(gitdir, page, block), page, block))
    rows, left_out, seen = [], [], {}
    for published, page, block in sorted(found, key=lambda f: (f[0][1], f[1].path, f[2].start)):
        figures = tuple(sorted(metrics(block).items()))
        original = seen.setdefault(figures, (page.path, block.start))
        if original != (page.path, block.start):
            left_out.append(LeftOut(page.path, block.start, f"the same figures as {original[0]} L{original[1]}, published earlier"))
            continue
        run = pair(page, block)
        row = to_measurement(run, published) if isinstance(run, Run) else run
        if isinstance(row, str):
            left_out.append(LeftOut(page.path, block.start, row))
        else:
            rows.append(row)
    order = lambda item: (item.path, item.line)  # noqa: E731
    rows.sort(key=lambda m: (m.concurrency, m.model, m.system, m.isl, m.osl, m.id))  # single-client runs of every model first (--limit)
    return Derivation(full, tuple(rows), tuple(sorted(left_out, key=order)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m measurements.published.derive", description=__doc__.splitlines()[0])
    parser.add_argument("gitdir", help="a git mirror of sgl-project/sgl-cookbook (bare or .git)")
    parser.add_argument("--commit", default="HEAD", help="the commit to read (default HEAD)")
    parser.add_argument("--out", type=Path, default=CSV_PATH, help=f"the CSV to write (default {CSV_PATH})")
    args = parser.parse_args(argv)
    try:
        result = derive(args.gitdir, args.commit)
    except subprocess.CalledProcessError as exc:
        print(f"error: cannot read {args.commit} of {args.gitdir}: {exc.stderr.strip().splitlines()[-1] if exc.stderr else exc}", file=sys.stderr)
        return 2
    with atomic_path(args.out) as tmp:
        write_measurements(result.rows, tmp)
    for item in result.left_out:
        print(f"left out\t{item.path}\tL{item.line}\t{item.reason}", file=sys.stderr)
    print(f"wrote {args.out}: {len(result.rows)} rows from {REPOSITORY} @ {result.commit[:12]}; {len(result.left_out)} result blocks left out",
          file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
