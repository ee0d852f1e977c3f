"""What the command modules share: flags from a Command's params, the layout as printed, and the
cache folders' check."""

from __future__ import annotations

import argparse

from estimator.api.deployments import layout_label
from estimator.api.flags import Command, add_to_parser
from estimator.numba_cache import numba_cache_dir
from estimator.perf.stack import table_cache_dir

OUTPUT = "output"  # the --help group of a command's output flags


def register_command(p: argparse.ArgumentParser, command: Command) -> argparse._ArgumentGroup:
    """The command's params as flags (in their help groups); returns the output group for the
    command-line-only flags (--json, --out, ...)."""
    add_to_parser(p, command.params)
    return p.add_argument_group(OUTPUT)


def check_cache_dirs() -> None:
    """UnsafeCacheDirError (exit 2) when others can write a cache folder, before any cached table or
    kernel is read; a folder that cannot be created only costs the warm start."""
    for folder in (numba_cache_dir, table_cache_dir):
        try:
            folder()
        except OSError:
            continue


def printable(frame, columns: dict[str, str], count: int) -> str:
    """The first `count` rows of a frame as a fixed-width table: `columns` maps a column to its
    printed header; layouts (parallel, (p)parallel, (d)parallel) are printed without None sizes."""
    shown = frame.head(count).copy()
    for column, prefix in (("parallel", ""), ("(p)parallel", "(p)"), ("(d)parallel", "(d)")):
        if column in shown.columns:
            shown[column] = [layout_label(r, prefix) for r in shown.to_dict("records")]
    return shown[list(columns)].rename(columns=columns).to_string(index=False, float_format=lambda v: f"{v:.3f}")
