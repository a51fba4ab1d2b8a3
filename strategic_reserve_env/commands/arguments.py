"""The commands' argparse plumbing: a command's parser, and a command line generated from a settings dataclass
(an option per field, its help the field's docstring) whose `given` options tell a default from a choice.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import shlex
import textwrap
import types
import typing
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path

from strategic_reserve_env.commands import named
from strategic_reserve_env.core.board import brief
from strategic_reserve_env.envs.arena import checked_seconds


def field_docs(cls) -> dict[str, str]:
    """The docstring under each field of the dataclass `cls` and of those it extends, as one paragraph."""
    docs = {}
    for klass in reversed([klass for klass in cls.__mro__ if is_dataclass(klass)]):
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, body[1:], strict=False):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr):
                if isinstance(getattr(after.value, "value", None), str):  # a string constant
                    docs[node.target.id] = " ".join(after.value.value.split())  # type: ignore[attr-defined]
    return docs


def _option_type(hint) -> tuple[type, bool]:
    """The type argparse converts one value to, and whether the option takes several (a tuple field)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(kind for kind in typing.get_args(hint) if kind is not type(None))
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], True
    return hint, False


def parser(cls, prog: str | None, description: str) -> argparse.ArgumentParser:
    """A parser with an option per field of `cls` (`n_envs` -> `--n-envs`, a bool `--x` / `--no-x`, a tuple
    several values), none with a default in the namespace (`given`)."""
    result = command_parser(prog, description)
    hints, docs = typing.get_type_hints(cls), field_docs(cls)
    for field in fields(cls):
        default = field.default if field.default is not MISSING else None
        shown = " ".join(map(str, default)) if isinstance(default, tuple) else default
        help_text = f"{docs.get(field.name, '')} (default: {shown})".replace("%", "%%")
        kind, several = _option_type(hints[field.name])
        metavar = {int: "N", float: "X"}.get(kind, "TEXT")
        options: dict = {"type": kind, "nargs": "+" if several else None, "metavar": metavar}
        options = {"action": argparse.BooleanOptionalAction} if kind is bool else options
        result.add_argument("--" + field.name.replace("_", "-"), default=argparse.SUPPRESS, help=help_text, **options)
    return result


def given(cls, argv: list[str] | None, prog: str | None, description: str) -> dict:
    """The options given in `argv` by field name (a tuple field as a tuple); a usage error (exit 2) otherwise."""
    values = vars(parser(cls, prog, description).parse_args(argv))
    return {name: tuple(value) if isinstance(value, list) else value for name, value in values.items()}


def run_options(cls, argv: list[str] | None, prog: str | None, doc: str, script: str) -> tuple[dict, Path, str]:
    """A training command's `given` options (`doc` its help, `script` renamed `prog`), its `--out` and the
    command line that resumes the run."""
    options = given(cls, argv, prog, named(doc, script, prog))
    out = Path(options.get("out", cls.out))
    return options, out, f"{prog or script} --out {shlex.quote(str(out))} --resume"


def run_settings(cls, options: dict, out: Path, command: str):
    """The run's settings: `options`', or with `--resume` the run's own in `out` (`resumed_settings`)."""
    from strategic_reserve_env.training.folder import resumed_settings  # the training layer, for its commands only

    return resumed_settings(out, options, cls, command) if options.get("resume") else cls(**options)


def command_parser(prog: str | None, doc: str | None) -> argparse.ArgumentParser:
    """A command's parser: `prog` (the name `--help` shows) and `doc`, its description as written."""
    return argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def seconds_argument(text: str, most: float = float("inf")) -> float:
    """A time budget (`--seconds`, `--act-timeout`) as argparse's `type`: `checked_seconds` of `text`."""
    try:
        return checked_seconds(float(text), "a time budget", most)
    except ValueError:
        within = f" and at most {most:g}" if most < float("inf") else ""
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0{within}, got {brief(text)}") from None


def add_protocol(parser: argparse.ArgumentParser) -> None:
    """`--protocol`: the number of a benchmark protocol (None: the default one)."""
    from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS

    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help=f"the benchmark protocol's number (default {DEFAULT_PROTOCOL.version[1:]}; 1 scores raw results)",
    )
