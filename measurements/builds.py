"""Engine builds: what a run's recorded version, image and date say its build does (SGLang's per-shape Triton compiles,
its first prefix-extend FlashInfer compile, its default piecewise CUDA graphs)."""

from __future__ import annotations

import dataclasses
import re

from estimator.errors import UnknownModelError
from estimator.models import linear_attention_layers
from estimator.settings import SGLANG_PIECEWISE_FROM, SGLANG_SHAPE_COMPILE_MS
from measurements.clients import INFERENCEX
from measurements.schema import Measurement

SHAPE_COMPILE_FIXED = "2026-07-17"  # SGLang PR 31558 merged: T no longer specialized

# SGLang releases whose FLA l2norm.py was read, each declaring the token count T a tl.constexpr (PyPI wheels 0.5.9, 0.5.10,
# 0.5.10.post1: sglang/srt/layers/attention/fla/l2norm.py, l2norm_fwd_kernel)
SHAPE_SPECIALIZING_RELEASES = frozenset({"0.5.9", "0.5.10", "0.5.10.post1"})
_NIGHTLY_DATE = re.compile(r"nightly-dev-(?:[a-z0-9]+-)*?(\d{4})(\d{2})(\d{2})")  # nightly-dev-20260216-..., nightly-dev-cu13-20260317-...
_RELEASE_TAG = re.compile(r"sglang:v?(\d+\.\d+\.\d+(?:\.post\d+)?)")  # lmsysorg/sglang:v0.5.9-cu130


def shape_compile_ms(m: Measurement, measured_by: str | None = None) -> float:
    """The Triton compile a pass that prefills a token count new to the run pays on the run's engine
    build (EngineSettings.shape_compile_ms), ms: SGLANG_SHAPE_COMPILE_MS for a run (agg: a pass that
    prefills; disagg: a prefill worker's batch) of SGLang serving a model with gated-delta-net layers
    on a build that specializes the FLA l2norm kernel on T (sglang_specializes_l2norm); 0 otherwise,
    also for a model without a bundled config (no layer is known to be linear attention)."""
    if m.engine != "sglang" or not sglang_specializes_l2norm(m, measured_by) or not _gated_delta_net(m.model):
        return 0.0
    return SGLANG_SHAPE_COMPILE_MS


def _gated_delta_net(model: str) -> bool:
    try:
        return linear_attention_layers(model) > 0
    except UnknownModelError:
        return False


def sglang_specializes_l2norm(m: Measurement, measured_by: str | None = None) -> bool:
    """Whether the SGLang build of a run compiles the FLA l2norm kernel per token count: a release
    whose source was read (SHAPE_SPECIALIZING_RELEASES, as the version or the image tag), a
    nightly image dated before the fix (SHAPE_COMPILE_FIXED), or any build of a run measured
    before the fix (an assumption for releases not read: the fix is the first change to T that
    the PRs report), its date recorded or, when none is, bounded by `measured_by` (ISO date: a
    published result was measured by its publication); False when none of these is recorded
    (later releases are not assumed)."""
    if set(_recorded_releases(m)) & SHAPE_SPECIALIZING_RELEASES:
        return True
    built = _build_date(m, measured_by)
    return built is not None and built < SHAPE_COMPILE_FIXED


def _build_date(m: Measurement, measured_by: str | None) -> str | None:
    """The ISO date a run's build stands for when it records no release: its nightly image's date, else the run's
    measured date, else `measured_by` (a published result's bound); None when none is recorded."""
    for text in (m.engine_version, m.image):
        nightly = _NIGHTLY_DATE.search(text or "")
        if nightly:
            return "-".join(nightly.groups())
    measured = m.measured_date or measured_by
    return measured[:10] if measured is not None else None


# SGLang issue 7339 (0.4.7): "an approximately 20-second stall when returning the first cached token", cicc building
# FlashInfer's cascade.cu at first use; the compile of fmha_cutlass_sm100a itself is not published (a larger CUTLASS module)
PREFIX_COMPILE_MS = 20_000.0
# SGLang releases whose images lack flashinfer-jit-cache: docker/Dockerfile ARG INSTALL_FLASHINFER_JIT_CACHE=0 until PR 14959
# ("enable flashinfer-jit-cache in image build", merged 2025-12-12; PR 12851 of 2025-11-07 had put it back in the dev image
# only, "since the dev docker does not have a slim requirement"); 0.5.6 and its .post1/.post2, the last releases before it,
# on PyPI 2025-12-03, 12-08 and 12-11. v0.5.3rc1-cu129-b200's build arguments are not published (assumed alike)
JIT_CACHE_RELEASE = (0, 5, 7)
# The InferenceX SGLang DeepSeek-R1 B200 launches of the single-prompt warm-up era: benchmarks/dsr1_fp4_b200_docker.sh and
# dsr1_fp8_b200_docker.sh pass --attention-backend trtllm_mla --disable-radix-cache (at e06929c70 2025-11-02, 189ae51cc
# 2025-11-18, d27433dff 2025-12-31) on lmsysorg/sglang v0.5.3rc1-cu129-b200, v0.5.5-cu129-amd64 (PR 204) and
# v0.5.6-cu129-amd64 (.github/configs/nvidia-master.yaml dsr1-fp4/fp8-b200-sglang through 6e35460d2, 2026-01-22)
TRTLLM_MLA_RUNS = frozenset({("deepseek-ai/DeepSeek-R1", "b200_sxm"), ("deepseek-ai/DeepSeek-V3", "b200_sxm")})


def prefix_compile_ms(m: Measurement) -> float:
    """The FlashInfer compile an agg run's first pass that extends a prompt from a prefix pays
    (EngineSettings.prefix_compile_ms), ms: PREFIX_COMPILE_MS for an InferenceX SGLang run of
    TRTLLM_MLA_RUNS whose build lacks flashinfer-jit-cache and whose warm-up did not extend a
    prefix (one prompt alone, no longer than the chunk); 0 otherwise. SGLang 0.5.5's trtllm_mla
    backend inherits FlashInfer MLA's chunked-prefix metadata: a prefix extend plans a
    BatchPrefillWithRaggedKVCacheWrapper with the CUTLASS backend on SM100, whose module
    (fmha_cutlass_sm100a) nvcc builds at first use (flashinfer 0.5.0 jit/core.py build_and_load);
    the server's own warm-up (8 tokens) and decode CUDA graphs never reach it."""
    if m.mode != "agg" or m.engine != "sglang" or m.source != INFERENCEX or (m.model, m.system) not in TRTLLM_MLA_RUNS:
        return 0.0
    if m.protocol.num_warmups != 1 or m.isl > m.settings.step_token_budget:
        return 0.0
    release = _release(m)
    if release is None and (m.engine_version or m.image):  # a build recorded but not a release read above: not assumed
        return 0.0
    return PREFIX_COMPILE_MS if release is None or release < JIT_CACHE_RELEASE else 0.0


def _recorded_releases(m: Measurement) -> tuple[str, str]:
    """(the run's engine version without a leading v, its image's release tag), each "" when not recorded."""
    tag = _RELEASE_TAG.search(m.image or "")
    return (m.engine_version or "").removeprefix("v"), tag.group(1) if tag else ""


def _release(m: Measurement) -> tuple[int, ...] | None:
    """The SGLang release a run records (its version, else its image tag) as (major, minor, patch), or None. A run that
    records neither ran an image of InferenceX's single-prompt warm-up era, every one of them before JIT_CACHE_RELEASE
    (TRTLLM_MLA_RUNS)."""
    for text in _recorded_releases(m):
        numbers = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
        if numbers:
            return tuple(int(n) for n in numbers.groups())
    return None


PIECEWISE_DEFAULT_MERGED = "2026-03-02"  # SGLang PR 16331 merged: piecewise CUDA graphs on by default (first in v0.5.10rc0)
PIECEWISE_DEFAULT_RELEASE = tuple(int(n) for n in SGLANG_PIECEWISE_FROM.split("."))  # (0, 5, 10)


def sglang_piecewise_default(m: Measurement, measured_by: str | None = None) -> bool:
    """Whether the SGLang build of a run has piecewise CUDA graphs on by default (estimator.settings.SGLANG_PIECEWISE_FROM):
    a release from 0.5.10 (its version, else its image tag), a nightly image dated from PIECEWISE_DEFAULT_MERGED, or,
    recording neither, a run measured from then (its date, else bounded by `measured_by`); False otherwise."""
    release = _release(m)
    if release is not None:
        return release >= PIECEWISE_DEFAULT_RELEASE
    built = _build_date(m, measured_by)
    return built is not None and built >= PIECEWISE_DEFAULT_MERGED


def with_build_compiles(m: Measurement, measured_by: str | None = None) -> Measurement:
    """The measurement with what its engine build does in the replay: the first-use compiles it pays (shape_compile_ms,
    prefix_compile_ms) and, for an SGLang build without piecewise CUDA graphs by default, the graphs off where the launch
    leaves them to the default (a run's recorded engine version is not the perf-data version its deployment prices at);
    `measured_by` bounds the date of a run that records none (sglang_specializes_l2norm, sglang_piecewise_default)."""
    changes = {"shape_compile_ms": shape_compile_ms(m, measured_by), "prefix_compile_ms": prefix_compile_ms(m)}
    if m.engine == "sglang" and m.settings.piecewise_cuda_graph is None and not sglang_piecewise_default(m, measured_by):
        changes["piecewise_cuda_graph"] = False
    return dataclasses.replace(m, settings=m.settings.replace(**changes))
