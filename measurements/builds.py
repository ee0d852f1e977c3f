"""Engine builds: what a run's recorded version, image and date say its build does (SGLang's per-shape Triton compiles)."""

from __future__ import annotations

import re

from estimator.errors import UnknownModelError
from estimator.models import linear_attention_layers
from measurements.schema import Measurement

SHAPE_COMPILE_MS = 90.0  # one Triton compile of the FLA l2norm kernel, ms (SGLang PR 23448: "~90 ms each")
SHAPE_COMPILE_FIXED = "2026-07-17"  # SGLang PR 31558 merged: T no longer specialized

# SGLang releases whose FLA l2norm.py was read, each declaring the token count T a tl.constexpr (PyPI wheels 0.5.9, 0.5.10,
# 0.5.10.post1: sglang/srt/layers/attention/fla/l2norm.py, l2norm_fwd_kernel)
SHAPE_SPECIALIZING_RELEASES = frozenset({"0.5.9", "0.5.10", "0.5.10.post1"})
_NIGHTLY_DATE = re.compile(r"nightly-dev-(?:[a-z0-9]+-)*?(\d{4})(\d{2})(\d{2})")  # nightly-dev-20260216-..., nightly-dev-cu13-20260317-...
_RELEASE_TAG = re.compile(r"sglang:v?(\d+\.\d+\.\d+(?:\.post\d+)?)")  # lmsysorg/sglang:v0.5.9-cu130


def shape_compile_ms(m: Measurement) -> float:
    """The Triton compile a pass that prefills a token count new to the run pays on the run's engine
    build (EngineSettings.shape_compile_ms), ms: SHAPE_COMPILE_MS for an agg run (the agg replay
    charges it; the P/D tandem does not) of SGLang serving a model with gated-delta-net layers on a
    build that specializes the FLA l2norm kernel on T (sglang_specializes_l2norm); 0 otherwise,
    also for a model without a bundled config (no layer is known to be linear attention)."""
    if m.mode != "agg" or m.engine != "sglang" or not sglang_specializes_l2norm(m) or not _gated_delta_net(m.model):
        return 0.0
    return SHAPE_COMPILE_MS


def _gated_delta_net(model: str) -> bool:
    try:
        return linear_attention_layers(model) > 0
    except UnknownModelError:
        return False


def sglang_specializes_l2norm(m: Measurement) -> bool:
    """Whether the SGLang build of a run compiles the FLA l2norm kernel per token count: a release
    whose source was read (SHAPE_SPECIALIZING_RELEASES, as the version or the image tag), a
    nightly image dated before the fix (SHAPE_COMPILE_FIXED), or any build of a run measured
    before the fix (an assumption for releases not read: the fix is the first change to T that
    the PRs report); False when none of these is recorded (later releases are not assumed)."""
    tag = _RELEASE_TAG.search(m.image or "")
    releases = {(m.engine_version or "").removeprefix("v"), tag.group(1) if tag else ""}
    if releases & SHAPE_SPECIALIZING_RELEASES:
        return True
    for text in (m.engine_version, m.image):
        nightly = _NIGHTLY_DATE.search(text or "")
        if nightly:
            return "-".join(nightly.groups()) < SHAPE_COMPILE_FIXED
    return m.measured_date is not None and m.measured_date[:10] < SHAPE_COMPILE_FIXED
