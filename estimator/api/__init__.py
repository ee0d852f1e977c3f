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
| recommend(**flags) | recommend | RecommendResult |

`import estimator` stays light: estimator.estimate / estimator.refine load this package on first
use, and estimator.sweep and estimator.recommend are packages, which calling runs sweep() and
recommend() (estimator.entry).

A command's module here defines its Command (params shared with the other commands where the flag
is the same: estimator.api.deployments, Command.param), its result, `name(**flags)` =
`name_with(COMMAND.bind(flags))`; the CLI module registers it with
estimator.cli.common.register_command and calls name_with(COMMAND.bind(COMMAND.given(ns))).
"""

from estimator.api.estimating import ESTIMATE, EstimateResult, estimate, estimate_with
from estimator.api.recommending import RECOMMEND, RecommendResult, recommend, recommend_with
from estimator.api.refining import REFINE, RefineResult, refine, refine_with
from estimator.api.status import ExitStatus
from estimator.api.sweeping import SWEEP, Ranking, SweepReport, Target, sweep, sweep_with
from estimator.errors import EstimatorError

COMMANDS = {command.name: command for command in (ESTIMATE, SWEEP, REFINE, RECOMMEND)}  # the commands on the shared flag layer

__all__ = [
    "COMMANDS",
    "ESTIMATE",
    "RECOMMEND",
    "REFINE",
    "SWEEP",
    "EstimateResult",
    "EstimatorError",
    "ExitStatus",
    "Ranking",
    "RecommendResult",
    "RefineResult",
    "SweepReport",
    "Target",
    "estimate",
    "estimate_with",
    "recommend",
    "recommend_with",
    "refine",
    "refine_with",
    "sweep",
    "sweep_with",
]
