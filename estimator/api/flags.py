"""One definition per command argument, read by both the Python API and the command line.

A Param is a keyword of the API (``tp_size``) and a flag of the command line (``--tp-size``): its
kind, default, choices, help and help group live here only. ``Command.bind`` turns keyword
values (the API's, or the CLI's parsed flags) into a frozen arguments object with every default
filled in; ``add_to_parser`` registers the same params on an argparse parser, converting each flag
through the same function, so a bad value gets the same message on both paths.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import functools
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from estimator.errors import InvalidInputError


class BadValue(ValueError):
    """A value a param cannot take; the message says why in argparse's words, without naming the flag."""


@dataclass(frozen=True)
class Param:
    """One argument of a command: keyword `name` of the API, flag --name-with-dashes of the CLI."""

    name: str  # the API keyword, e.g. "tp_size"
    kind: type  # int, float, str or bool: what a value is converted to
    default: object = None  # the value when not given (None: unset, the help says what it means)
    help: str = ""  # one line; the default is appended unless it is None or False
    group: str = "options"  # the --help section the flag is listed under
    choices: tuple[str, ...] | None = None  # the allowed values (after conversion)
    many: bool = False  # a list of one or more values (CLI: nargs "+"; API: one value or a sequence)
    required: bool = False  # must be given (no default)
    aliases: tuple[str, ...] = ()  # further CLI spellings, e.g. ("--bs",)
    const: object = None  # not None: the flag may be given bare and then takes this value (CLI nargs "?")
    negatable: bool = False  # a bool that also has a --no- form (CLI only)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def convert(self, value: object) -> object:
        """The value converted to the param's kind; InvalidInputError naming the flag otherwise."""
        if value is None and self.default is None and not self.required:
            return None
        try:
            if self.many:
                values = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value]
                if not values:
                    raise BadValue("expected at least one value")
                converted = tuple(self.one(v) for v in values)
                repeated = next((v for i, v in enumerate(converted) if v in converted[:i]), None)
                if repeated is not None and self.kind in (int, float):  # a repeated size or target would repeat its rows
                    raise BadValue(f"{repeated!r} is given twice")
                return converted
            return self.one(value)
        except BadValue as exc:
            raise InvalidInputError(f"argument {self.flag}: {exc}") from None

    def one(self, value: object) -> object:
        """A single value converted and checked against the choices (BadValue otherwise)."""
        converted = _CONVERTERS[self.kind](value.value if isinstance(value, enum.Enum) else value)
        if self.choices is not None and converted not in self.choices:
            raise BadValue(f"invalid choice: {converted!r} (choose from {', '.join(map(repr, self.choices))})")
        return converted

    def text(self, value: str) -> object:
        """A command-line word converted (argparse's `type`): a bad word is argparse's one-line error."""
        try:
            return self.one(value)
        except BadValue as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def help_text(self) -> str:
        shown = " ".join(map(str, self.default)) if isinstance(self.default, tuple) else self.default
        return self.help + ("" if self.default is None or self.default is False else f" (default: {shown})")


def _number(kind: type, abstract: type):
    """The converter to `kind` (int or float) of a number of the `abstract` kind or of a word."""

    def convert(value: object):
        if isinstance(value, abstract) and not isinstance(value, bool):
            try:
                return kind(value)
            except OverflowError:  # an int past float range (10**400)
                pass
        if isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                pass
        raise BadValue(f"invalid {kind.__name__} value: {value!r}")

    return convert


def _to_str(value: object) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise BadValue(f"invalid str value: {value!r}")


def _to_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise BadValue(f"invalid bool value: {value!r}")


_CONVERTERS = {int: _number(int, numbers.Integral), float: _number(float, numbers.Real), str: _to_str, bool: _to_bool}
METAVARS = {int: "N", float: "X"}  # --help's placeholder per kind (text flags show their name)


@dataclass(frozen=True)
class Command:
    """A command's params, in --help order, and one example invocation."""

    name: str  # the CLI command and the API function
    params: tuple[Param, ...]
    example: str  # a complete command line, shown in --help and the README

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        if len(names) != len(set(names)):
            raise ValueError(f"{self.name}: a param is defined twice")

    def param(self, name: str) -> Param:
        """The param called `name` (KeyError: none), for another command that takes the same flag."""
        return {p.name: p for p in self.params}[name]

    @functools.cached_property
    def arguments_type(self) -> type:
        """The frozen dataclass of one call's arguments: one field per param, in order."""
        title = "".join(part.title() for part in self.name.split("-"))
        return dataclasses.make_dataclass(f"{title}Arguments", [(p.name, object) for p in self.params], frozen=True)

    def bind(self, values: Mapping[str, object]) -> object:
        """The arguments of a call from keyword values: unknown keywords, missing required ones and
        values of the wrong kind or outside the choices are an InvalidInputError; defaults fill the rest."""
        known = {p.name for p in self.params}
        unknown = [name for name in values if name not in known]
        if unknown:
            raise InvalidInputError(f"unrecognized arguments: {', '.join(unknown)} ({self.name} takes {', '.join(p.name for p in self.params)})")
        missing = [p.flag for p in self.params if p.required and values.get(p.name) is None]
        if missing:
            raise InvalidInputError(f"the following arguments are required: {', '.join(missing)}")
        return self.arguments_type(**{p.name: p.convert(values[p.name]) if p.name in values else p.default for p in self.params})

    def given(self, namespace: argparse.Namespace) -> dict[str, object]:
        """The params a parsed command line gave (absent flags are left to bind's defaults)."""
        return {p.name: getattr(namespace, p.name) for p in self.params if hasattr(namespace, p.name)}


def add_to_parser(parser: argparse.ArgumentParser, params: Sequence[Param]) -> None:
    """Register params as flags, each in its help group; an absent flag stays absent from the
    namespace (argparse.SUPPRESS) so that Command.bind alone supplies defaults."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for p in params:
        group = groups.get(p.group) or groups.setdefault(p.group, parser.add_argument_group(p.group))
        options = {"dest": p.name, "default": argparse.SUPPRESS, "help": p.help_text()}
        if p.kind is bool:
            options["action"] = argparse.BooleanOptionalAction if p.negatable else "store_true"
        else:
            options |= {"type": p.text, "metavar": "{" + ",".join(p.choices) + "}" if p.choices else METAVARS.get(p.kind) or p.name.upper()}
            if p.many:
                options["nargs"] = "+"
            elif p.const is not None:
                options |= {"nargs": "?", "const": p.const}
        group.add_argument(p.flag, *p.aliases, required=p.required, **options)


def example_epilog(example: str, exit_status: str = "") -> str:
    """The text under a command's --help: one example and, when it has any, its exit statuses."""
    return f"example:\n  {example}" + (f"\n\nexit status:\n  {exit_status}" if exit_status else "")
