"""Run a replay: the agg calendar or the P/D tandem, by the Numba kernels or the literal Python oracle."""

from __future__ import annotations

from estimator.closedloop import compiled, oracle
from estimator.closedloop.pricing import PassPricer
from estimator.closedloop.protocol import RunPlan
from estimator.closedloop.spec import (
    LIMIT_MESSAGE,
    NONFINITE_MESSAGE,
    STALLED_MESSAGE,
    AggSpec,
    NoProgressError,
    TandemSpec,
)
from estimator.closedloop.stats import Completions, ReplayResult, stats_from_array
from estimator.errors import InvalidInputError

IMPLEMENTATIONS = ("numba", "python")
_FAILURES = {compiled.STALLED: STALLED_MESSAGE, compiled.NONFINITE: NONFINITE_MESSAGE, compiled.LIMIT: LIMIT_MESSAGE}


def replay_agg(plan: RunPlan, spec: AggSpec, pricer, impl: str = "numba") -> ReplayResult:
    """The agg pass calendar of one rank. `pricer` is a PassPricer (either implementation) or,
    for impl="python" only, any object with pass_ms(PassShape). Raises InvalidInputError for bad
    inputs and NoProgressError for a configuration that cannot make progress."""
    spec.check(plan)
    if _implementation(impl, pricer) == "python":
        return oracle.agg_calendar(plan, spec, pricer)
    out = compiled.agg_calendar(plan.isl, plan.osl, *spec.pack(plan), pricer.kind, pricer.params, pricer.data, pricer.hdr)
    return _result(*out)


def replay_tandem(plan: RunPlan, spec: TandemSpec, prefill_pricer, decode_pricer, impl: str = "numba") -> ReplayResult:
    """The P/D tandem (pricers as in replay_agg: prefill passes carry whole prompts, decode passes
    carry the iteration's requests)."""
    spec.check(plan)
    if _implementation(impl, prefill_pricer, decode_pricer) == "python":
        return oracle.tandem(plan, spec, prefill_pricer, decode_pricer)
    out = compiled.tandem(
        plan.isl, plan.osl, *spec.pack(plan), prefill_pricer.kind, prefill_pricer.params, prefill_pricer.data, prefill_pricer.hdr,
        decode_pricer.kind, decode_pricer.params, decode_pricer.data, decode_pricer.hdr,
    )  # fmt: skip
    return _result(*out)


def _implementation(impl: str, *pricers) -> str:
    if impl not in IMPLEMENTATIONS:
        raise InvalidInputError(f"unknown implementation {impl!r} (known: {', '.join(IMPLEMENTATIONS)})")
    if impl == "numba" and not all(isinstance(p, PassPricer) for p in pricers):
        raise InvalidInputError("the Numba replay needs PassPricer pricers (Python callables run with impl='python')")
    return impl


def _result(status, stats, born, done) -> ReplayResult:
    if status != compiled.OK:
        raise NoProgressError(_FAILURES[status])
    return ReplayResult(stats_from_array(stats), Completions(born, done))
