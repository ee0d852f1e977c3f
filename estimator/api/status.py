"""The exit statuses of the commands, and of the API's results (SweepReport.status)."""

from __future__ import annotations

import enum
from collections.abc import Mapping


class ExitStatus(enum.IntEnum):
    """What a command's exit status means."""

    FOUND = 0  # priced; a sweep found a configuration meeting some target
    BAD_INPUT = 2  # a bad argument or missing data: one `error:` line on stderr
    NOTHING_MEETS_TARGETS = 3  # a sweep found no configuration meeting any target; the closest miss is printed
    OUT_OF_MEMORY = 4  # with --strict: the estimated point, or every point a sweep evaluated, does not fit in GPU memory
    INTERRUPTED = 130  # Ctrl-C (a sweep with --out writes the rows computed so far)


def describe(*statuses: ExitStatus, wording: Mapping[ExitStatus, str] | None = None) -> str:
    """The --help lines of the given statuses; `wording` replaces the shared line of a status for one command."""
    text = {
        ExitStatus.FOUND: "found (estimate: priced, even out of memory unless --strict)",
        ExitStatus.BAD_INPUT: "bad input: one error line naming the bad value",
        ExitStatus.NOTHING_MEETS_TARGETS: "no configuration meets any target: the closest miss is printed (or that nothing fits in GPU memory)",
        ExitStatus.OUT_OF_MEMORY: "with --strict: out of memory (estimate: the point; sweep: every point evaluated)",
        ExitStatus.INTERRUPTED: "interrupted (Ctrl-C)",
    } | dict(wording or {})
    return "\n  ".join(f"{int(s)}  {text[s]}" for s in statuses)
