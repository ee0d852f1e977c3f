"""Command line: `python -m estimator <command> ...`. Bad input prints one line and exits 2.

Every command's --help ends with an example and its exit statuses; estimate, sweep, refine and
price-ops take their flags from the same definitions as the Python API (estimator.api)."""

from __future__ import annotations

import argparse
import re
import sys

from estimator.api.flags import example_epilog
from estimator.api.status import ExitStatus, describe
from estimator.cli import estimate as estimate_cmd
from estimator.cli import import_runs as import_cmd
from estimator.cli import models as models_cmd
from estimator.cli import price_ops as price_ops_cmd
from estimator.cli import recommend as recommend_cmd
from estimator.cli import refine as refine_cmd
from estimator.cli import report as report_cmd
from estimator.cli import sweep as sweep_cmd
from estimator.cli import systems as systems_cmd
from estimator.cli.common import check_cache_dirs
from estimator.errors import EstimatorError, is_interrupt

COMMANDS = {
    "price-ops": price_ops_cmd,
    "models": models_cmd,
    "systems": systems_cmd,
    "estimate": estimate_cmd,
    "refine": refine_cmd,
    "report": report_cmd,
    "sweep": sweep_cmd,
    "import": import_cmd,
    "recommend": recommend_cmd,
}
DEFAULT_EXIT_STATUS = describe(ExitStatus.FOUND, ExitStatus.BAD_INPUT)
NEGATIVE_NUMBER = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)  # a word starting so is a value (-5, -1e400, -inf): no flag starts so


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the bad value and a hint to --help, exit 2
    (argparse's default prints the whole usage first). A word that starts like a negative number (-5,
    -.5, -1e400, -inf, -nan) is a flag's value, so the flag refuses it by name ("must be within (0, 1],
    got -inf"); argparse's own pattern took -inf and -1e400 for flags ("expected one argument")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER  # argparse's (private) test of a word for a negative number

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m estimator", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name, module in COMMANDS.items():
        epilog = example_epilog(module.EXAMPLE, getattr(module, "EXIT_STATUS", DEFAULT_EXIT_STATUS))
        module.register(sub.add_parser(name, help=module.__doc__.splitlines()[0], description=module.__doc__, epilog=epilog,
                                       formatter_class=argparse.RawDescriptionHelpFormatter))  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_cache_dirs()
        return int(COMMANDS[args.command].run(args) or 0)
    except EstimatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        print("interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
