"""Agents of your own: from an importable module, a Python file, or an installed package's entry point.

Spec grammar (all forms go through `strategic_reserve_env.agents.load_agent`):

| spec | the agent |
| --- | --- |
| `name[:options]` | a built-in agent, or one an installed package registers (entry-point group below) |
| `package.module:attribute[:options]` | `attribute` of an importable module |
| `path/to/file.py:attribute[:options]` | `attribute` of a Python file |

An installed package registers an agent under `name` in the entry-point group `strategic_reserve_env.agents`.
A name has no dot and no slash, a module path has a dot, a file path ends in
`.py`: the three forms never overlap (a top-level module `mybot` is given
as the file `mybot.py:attribute`). `attribute` may be dotted
(`Class.method`). `options` are `key=value,key=value`; a value reads as
a bool (`true`/`false`), an int, a float, or else stays text.

What `attribute` may be, by the first rule that fits:

- an **agent**: an object with `act(observations, masks, rng)` acting on a
  batch, as every agent of `agents` does
  (`strategic_reserve_env.core.policies.Policy`);
- a **class**, or a **factory** (a function whose parameters all have
  defaults): called with the options as keyword arguments, it must return
  an agent or one of the functions below;
- a **single-game function** `f(observation, mask) -> square` (two
  required parameters): `observation` the `(6, 6, 9)` int8 planes of one
  game from the mover's side, `mask` its `(36,)` bool legal squares; it
  returns a square index 0..35. It is called once per game of a batch;
- a **batch function** `f(observations, masks, rng) -> squares` (three
  required parameters): the agent protocol without a class.

Agents and functions take no options. The agent returned has `name` set to
the canonical form of the spec (the file path made relative to the working
directory when it lies below it, options sorted), which the evaluation uses
as its key; the user's object is left untouched, as `agent.agent`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import operator
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import MESSAGE_LIMIT, brief, clip
from strategic_reserve_env.core.policies import InvalidActionsError, as_policy

ENTRY_POINT_GROUP = "strategic_reserve_env.agents"
USER_SPEC_FORMS = "package.module:attribute[:key=value,...] or path/to/file.py:attribute[:key=value,...]"
_NUMBER = re.compile(r"[+-]?\d+")


def canonical_path(path: str) -> str:
    """`path` normalised: relative to the working directory (POSIX separators) when it lies below it,
    else absolute; `./a/../b.py` and `b.py` give the same text."""
    absolute = Path(os.path.abspath(os.path.expanduser(path)))
    try:
        return absolute.relative_to(Path(os.path.abspath(os.getcwd()))).as_posix()
    except ValueError:
        return absolute.as_posix()


def is_user_spec(head: str) -> bool:
    """Whether the part of a spec before its first `:` names a module or a file (not a registered name)."""
    return "." in head or "/" in head or os.sep in head


def parse_options(spec: str, text: str) -> dict[str, object]:
    """`key=value,key=value` -> {key: value}, each value read as bool, int, float or text; a key given twice
    is an error. The one option parser of every agent spec (the built-ins then check each value's type)."""
    options: dict[str, object] = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"agent spec {brief(spec)}: option {brief(item)} is not key=value")
        if key in options:
            raise ValueError(f"agent spec {brief(spec)}: option {brief(key)} given twice")
        options[key] = _read_value(value)
    return options


def _read_value(text: str) -> object:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _NUMBER.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def _option_text(options: dict[str, object]) -> str:
    """Canonical `key=value,...` (sorted by key) of parsed options."""

    def show(value: object) -> str:
        return (
            str(value).lower() if isinstance(value, bool) else repr(value) if isinstance(value, float) else str(value)
        )

    return ",".join(f"{key}={show(options[key])}" for key in sorted(options))


def spec_name(kind: str, path, label: str | None, options: str) -> str:
    """The canonical spec of an agent read from a model file: `kind:PATH,options`, or `label:options` for a
    shipped model named `label` (`ppo:deterministic=false`, `value:depth=1`), so the name loads again.
    `options`: the canonical option text, each option after a comma (`,depth=1`), or empty."""
    if label is None:
        return f"{kind}:{path}{options}"
    return f"{label}:{options[1:]}" if options else label


class NamedAgent:
    """A user's agent (`agent`, untouched) under the canonical name of its spec."""

    def __init__(self, agent, name: str, uses_observation: bool = True) -> None:
        self.agent = agent
        self.name = name
        self.uses_observation = uses_observation

    def act(self, observations, masks, rng):
        return self.agent.act(observations, masks, rng)

    def __repr__(self) -> str:
        return f"NamedAgent({self.agent!r}, {self.name!r})"


class SingleGameAgent:
    """Plays a single-game function `f(observation, mask) -> square` on a batch, one call per game."""

    uses_observation = True

    def __init__(self, function: Callable) -> None:
        self.function = function

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B,) int64: `function(observations[i], masks[i])` for each game `i`."""
        squares = np.empty(len(masks), dtype=np.int64)
        for row, (observation, mask) in enumerate(zip(observations, masks, strict=True)):
            answer = self.function(observation, mask)
            if isinstance(answer, (bool, np.bool_)):
                raise InvalidActionsError(f"returned {answer!r}, a bool, not an integer square index 0..35", row)
            try:
                squares[row] = operator.index(answer)
            except TypeError:
                raise InvalidActionsError(f"returned {answer!r:.60}, not an integer square index 0..35", row) from None
            except OverflowError:  # past int64 (2**70): out of range, as any other number but 0..35
                raise InvalidActionsError(f"returned {brief(answer)}, not a square index 0..35", row) from None
        return squares

    def __repr__(self) -> str:
        return f"SingleGameAgent({self.function!r})"


def _required_positional(function: Callable) -> int | None:
    """Number of parameters of `function` that need a value (None if it has no readable signature)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds and p.default is inspect.Parameter.empty for p in parameters)


_MISSING, _REQUIRED = object(), object()


def _read(spec: str, what: str, value, attribute: str, default=_REQUIRED):
    """`value.attribute` (`default` if it has none and one is given); `ValueError`, the load error, if
    reading it raises (a property of the user's that fails): the user's code fails the load, not the program."""
    try:
        return getattr(value, attribute) if default is _REQUIRED else getattr(value, attribute, default)
    except (Exception, SystemExit) as error:
        raise ValueError(
            f"agent spec {brief(spec)}: reading {attribute} of {what} raised {type(error).__name__}: "
            f"{clip(str(error), MESSAGE_LIMIT)}"
        ) from error


def _uses_observation(spec: str, what: str, agent) -> bool:
    """The agent's `uses_observation` (True if it has none), read once, at load (`_read`)."""
    flag = _read(spec, what, agent, "uses_observation", True)
    try:
        return bool(flag)
    except (Exception, SystemExit) as error:
        raise ValueError(
            f"agent spec {brief(spec)}: the uses_observation of {what} is not a truth value ({type(error).__name__})"
        ) from error


def _check_act(spec: str, what: str, agent) -> None:
    """`agent.act` must take (observations, masks, rng)."""
    act = _read(spec, what, agent, "act")
    if not callable(act):
        raise ValueError(f"agent spec {brief(spec)}: the act of {what} is not callable")
    try:
        inspect.signature(act).bind(None, None, None)
    except TypeError:
        raise ValueError(
            f"agent spec {brief(spec)}: {what} has act{inspect.signature(act)}, which does not take "
            "(observations, masks, rng)"
        ) from None
    except ValueError:  # no readable signature (e.g. a builtin): trust it
        pass


SIGNATURES = (
    "an object with act(observations, masks, rng), a class or factory building one from the options, "
    "a single-game function f(observation, mask) -> square, or f(observations, masks, rng) -> squares"
)


def adapt(spec: str, what: str, value, options: dict[str, object], build: bool = True):
    """The agent `value` stands for (see the module docstring); `what` names it in errors."""
    if not inspect.isclass(value) and _read(spec, what, value, "act", _MISSING) is not _MISSING:
        if options:
            raise ValueError(f"agent spec {brief(spec)}: {what} is an agent object, which takes no options")
        _check_act(spec, what, value)
        return value
    if not callable(value):
        raise ValueError(
            f"agent spec {brief(spec)}: {what} is a {type(value).__name__}, not an agent; expected {SIGNATURES}"
        )
    required = 0 if inspect.isclass(value) else _required_positional(value)
    if required == 0 and build:
        try:
            inspect.signature(value).bind(**options)
        except TypeError as error:
            given = f"the options {clip(_option_text(options))}" if options else "no options"
            raise ValueError(
                f"agent spec {brief(spec)}: {what} cannot be built with {given}: {clip(str(error), MESSAGE_LIMIT)}"
            ) from None
        except ValueError:  # no readable signature
            pass
        try:
            built = value(**options)
        except (Exception, SystemExit) as error:
            raise ValueError(
                f"agent spec {brief(spec)}: building {what} raised {type(error).__name__}: "
                f"{clip(str(error), MESSAGE_LIMIT)}"
            ) from error
        return adapt(spec, f"the object {what}() returned", built, {}, build=False)
    if required in (2, 3):
        if options:
            raise ValueError(f"agent spec {brief(spec)}: {what} is a function of the game, which takes no options")
        return SingleGameAgent(value) if required == 2 else as_policy(value)
    try:
        signature = str(inspect.signature(value))
    except (TypeError, ValueError):
        signature = "(...)"
    raise ValueError(f"agent spec {brief(spec)}: {what}{signature} has a wrong signature; expected {SIGNATURES}")


def _import_module(spec: str, name: str):
    if not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(
            f"agent spec {brief(spec)}: {brief(name)} is not a module name (a file must end in .py); "
            f"your own agent: {USER_SPEC_FORMS}"
        )
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and (name == error.name or name.startswith(error.name + ".")):
            raise ValueError(
                f"agent spec {brief(spec)}: module {brief(error.name)} not found "
                "(is it installed, or its folder on PYTHONPATH?)"
            ) from None
        raise ValueError(
            f"agent spec {brief(spec)}: importing {clip(name)} failed: {clip(str(error), MESSAGE_LIMIT)}"
        ) from error
    except (Exception, SystemExit) as error:  # a module that exits at import is an agent that does not load
        raise ValueError(
            f"agent spec {brief(spec)}: importing {clip(name)} raised {type(error).__name__}: "
            f"{clip(str(error), MESSAGE_LIMIT)}"
        ) from error


def _load_file(spec: str, path: str):
    """The module of the Python file `path` (run once per file and process)."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"agent spec {brief(spec)}: file {clip(path)} not found")
    absolute = os.path.abspath(file)
    module_name = "_strategic_reserve_agent_" + hashlib.sha1(absolute.encode()).hexdigest()[:16]
    if module_name in sys.modules:
        return sys.modules[module_name]
    module_spec = importlib.util.spec_from_file_location(module_name, absolute)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up while it runs
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # a file that exits when run is an agent that does not load
        del sys.modules[module_name]
        raise ValueError(
            f"agent spec {brief(spec)}: running {clip(path, MESSAGE_LIMIT)} raised {type(error).__name__}: "
            f"{clip(str(error), MESSAGE_LIMIT)}"
        ) from error
    return module


def _attribute(spec: str, module, source: str, attribute: str):
    if not attribute:
        raise ValueError(f"agent spec {brief(spec)}: name the agent after the colon, e.g. {brief(source)}:MyAgent")
    value = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
            raise ValueError(
                f"agent spec {brief(spec)}: {clip(source, MESSAGE_LIMIT)} has no attribute {brief(attribute)}"
                + (f" (it has: {', '.join(public[:12])})" if public else "")
            )
        value = getattr(value, part)
    return value


def load_user_agent(spec: str):
    """The agent of a `package.module:attribute[:options]` or `path/to/file.py:attribute[:options]` spec."""
    head, _, rest = spec.partition(":")
    attribute, _, option_text = rest.partition(":")
    options = parse_options(spec, option_text)
    if head.endswith(".py"):
        module, source = _load_file(spec, head), canonical_path(head)
    elif "/" in head or os.sep in head:
        raise ValueError(
            f"agent spec {brief(spec)}: a file agent must be a .py file; your own agent: {USER_SPEC_FORMS}"
        )
    else:
        module, source = _import_module(spec, head), head
    value = _attribute(spec, module, source, attribute)
    what = clip(f"{source}:{attribute}", MESSAGE_LIMIT)
    agent = adapt(spec, what, value, options)
    name = f"{source}:{attribute}" + (f":{_option_text(options)}" if options else "")
    return NamedAgent(agent, name, _uses_observation(spec, what, agent))


def registered_agents() -> dict[str, list[importlib.metadata.EntryPoint]]:
    """Entry points of the group `strategic_reserve_env.agents` by name (several when packages clash)."""
    found: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        same = found.setdefault(entry.name, [])
        if all(entry.value != other.value for other in same):  # one distribution seen twice on sys.path
            same.append(entry)
    return {name: sorted(entries, key=lambda e: e.value) for name, entries in found.items()}


def _distribution(entry: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"


def load_registered_agent(spec: str, name: str, option_text: str, known: str):
    """The agent an installed package registers as `name` (`known` lists the built-ins for the error)."""
    entries = registered_agents().get(name)
    if not entries:
        registered = sorted(n for n in registered_agents() if not is_user_spec(n))
        also = f"; registered by installed packages: {', '.join(registered)}" if registered else ""
        raise ValueError(
            f"unknown agent {brief(name)}; known agents: {known}{also}; your own agent: {USER_SPEC_FORMS}"
            + _top_level_hint(name)
        )
    if len(entries) > 1:
        raise ValueError(
            f"agent {brief(name)} is registered by several packages: "
            + "; ".join(f"{e.value} ({_distribution(e)})" for e in entries)
        )
    entry = entries[0]
    options = parse_options(spec, option_text)
    try:
        value = entry.load()
    except (Exception, SystemExit) as error:
        raise ValueError(
            f"agent spec {brief(spec)}: loading entry point {entry.value} ({_distribution(entry)}) raised "
            f"{type(error).__name__}: {clip(str(error), MESSAGE_LIMIT)}"
        ) from error
    what = f"{entry.value} (entry point {brief(name)} of {_distribution(entry)})"
    agent = adapt(spec, what, value, options)
    return NamedAgent(
        agent, name + (f":{_option_text(options)}" if options else ""), _uses_observation(spec, what, agent)
    )


def _top_level_hint(name: str) -> str:
    """If `name` is a Python file in the working directory or an importable top-level module (a likely
    slip for `name.py:attribute`), how to name it; else nothing. Nothing is imported to find out."""
    if name.isidentifier() and Path(f"{name}.py").is_file():
        return f" (there is a file {name}.py here: name it as {name}.py:attribute)"
    try:
        found = importlib.util.find_spec(name) if name.isidentifier() else None
    except (ImportError, ValueError):
        found = None
    if found is None or not found.origin or not found.origin.endswith(".py"):
        return ""
    if found.submodule_search_locations is not None:
        return f" (there is a package {brief(name)}: name a module in it, {name}.module:attribute)"
    return f" (there is a module {brief(name)}: name it by its file, {canonical_path(found.origin)}:attribute)"


def describe_registered() -> list[tuple[str, str]]:
    """(name, where it comes from) of every agent registered by an installed package."""
    rows = []
    for name, entries in sorted(registered_agents().items()):
        where = "; ".join(f"{e.value} ({_distribution(e)})" for e in entries)
        if is_user_spec(name):
            where += "  [ignored: a registered name may have no dot or slash]"
        elif len(entries) > 1:
            where += "  [unusable: registered more than once]"
        rows.append((name, where))
    return rows
