"""The public Python API: one function per pricing command, taking the command's flags as keyword
arguments (underscores for dashes) with the command's defaults, returning a typed frozen result
with `.row` and `.to_frame()`; bad arguments raise EstimatorError with the command's one-line
message. The command line parses its flags into the same calls (estimator.api.flags), so the two
cannot drift.

| function | command | result |
|---|---|---|
| estimate(**flags) | estimate | EstimateResult |
| sweep(**flags) | sweep | SweepReport |
| refine(frame, **flags) | refine IN OUT | RefineResult |
| recommend(**flags) | recommend | not here yet: built on the `recommend` branch (below) |

`import estimator` stays light: estimator.estimate / estimator.refine load this package on first
use, and estimator.sweep is the sweep package, which calling runs sweep() (estimator.entry).

The place for `recommend` (its own modules, estimator/recommend/ and estimator/cli/recommend.py):
define RECOMMEND = Command("recommend", params, example) with the shared params of
estimator.api.deployments and estimating/sweeping, a frozen result with `.row` and `.to_frame()`,
and recommend(**flags) = recommend_with(RECOMMEND.bind(flags)); export RECOMMEND and recommend
here and add RECOMMEND to COMMANDS; since estimator.recommend is a package, end its __init__ with
estimator.entry.make_callable(__name__, "recommend") and add "recommend" to estimator._PACKAGES.
The CLI module registers with estimator.cli.common.register_command(p, RECOMMEND) and calls
recommend_with(RECOMMEND.bind(RECOMMEND.given(ns))); statuses come from ExitStatus.
"""

from estimator.api.estimating import ESTIMATE, EstimateResult, estimate, estimate_with
from estimator.api.refining import REFINE, RefineResult, refine, refine_with
from estimator.api.status import ExitStatus
from estimator.api.sweeping import SWEEP, Ranking, SweepReport, Target, sweep, sweep_with
from estimator.errors import EstimatorError

COMMANDS = {command.name: command for command in (ESTIMATE, SWEEP, REFINE)}  # the commands on the shared flag layer

__all__ = [
    "COMMANDS",
    "ESTIMATE",
    "REFINE",
    "SWEEP",
    "EstimateResult",
    "EstimatorError",
    "ExitStatus",
    "Ranking",
    "RefineResult",
    "SweepReport",
    "Target",
    "estimate",
    "estimate_with",
    "refine",
    "refine_with",
    "sweep",
    "sweep_with",
]
