"""Game records (input) and replay traces (output), as specified in docs/RULES.md.

A record:

```python
{"variant": {"reserve": 7},
 "start": {"board": "<36 chars>", "reserves": {"red": 7, "blue": 7}, "to_move": "red"},
 "plies": [["a5", "c4"], ["e5", "a1"]],
 "players": {"red": "me", "blue": "greedy"}, "seed": 3, "result": "blue"}
```

`variant` and `start` are optional, and so is each field of `start`; so are `description`,
`players`, `seed` (the dice seed the game was played with) and `result` (`"red"`, `"blue"` or
`"unfinished"`: replaying must end that way, or `replay` rejects the record naming the field).
The reserves at the start are `start.reserves` when given (whatever
`variant.reserve` says), otherwise `variant.reserve` each (default 7).
A record is a game, not an episode: replaying it applies no ply limit.
Replaying yields one trace dict per ply (`replay`); `trace_line`
formats it as docs/RULES.md prints it. Errors are `RecordError`, whose
message names the ply (or the field of the header) and the fault.
"""

from __future__ import annotations

import contextlib
import json
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from strategic_reserve_env.core.board import (
    COLOURS,
    board_string,
    brief,
    clip,
    dice_for,
    parse_square,
    square_name,
    squares_of,
)
from strategic_reserve_env.core.config import MAX_PLY_LIMIT, Config, StartPosition, start_position
from strategic_reserve_env.core.dice import MAX_SEED
from strategic_reserve_env.core.engine import IllegalActionError
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.rules import HIT_NAMES

from . import safe_json

_RECORD_KEYS = {"variant", "start", "plies", "description", "players", "seed", "result"}
RESULTS = ("red", "blue", "unfinished")  # a record's ``result``: the winner's colour, or no winner after the last ply

_ERROR_TEXT = 90  # characters of a JSON parser's message repeated in a RecordError


def is_seed(value: object, lowest: int = 0) -> bool:
    """Whether `value` is an integer seed a record holds: `lowest` .. `MAX_SEED` - 1 (bools are not seeds)."""
    return isinstance(value, int) and not isinstance(value, bool) and lowest <= value < MAX_SEED


def check_seed(seed: object, what: str = "the seed") -> int:
    """`seed` (an int or a numpy integer) as an int if it is one a record holds (`is_seed`: 0 .. `MAX_SEED` - 1);
    `ValueError` naming `what` otherwise: the dice reduce a seed to 64 bits, so 2**64 would play seed 0's game."""
    number: object = seed
    if not isinstance(seed, bool):
        with contextlib.suppress(TypeError):  # a float, a string: not a seed
            number = operator.index(seed)  # type: ignore[arg-type]
    if not isinstance(number, int) or not is_seed(number):
        raise ValueError(f"{what} must be an integer in 0 .. 2**64 - 1 (what a game record holds), got {brief(seed)}")
    return number


class RecordError(ValueError):
    """A record that is malformed or breaks the rules; `ply` is 1-based, None for the header."""

    def __init__(self, message: str, ply: int | None = None) -> None:
        self.ply = ply
        super().__init__(f"ply {ply}: {message}" if ply is not None else message)


@dataclass(frozen=True)
class Record:
    """A game: its settings and its plies as written (square names, checked on replay).

    A record is a game, not an episode, so it has no ply limit: `config`
    is stored with `ply_limit = MAX_PLY_LIMIT` whatever the given config's
    limit (2**31 - 1 plies, more than any record file can hold), and
    `replay` never truncates.
    """

    config: Config  # reserve and start of the game; ply_limit is always MAX_PLY_LIMIT
    plies: tuple  # ((rolled, placed), ...) as found in the record; each pair is checked when replayed
    description: str | None = None
    players: tuple[str, str] | None = None  # (red, blue): who played each colour (agent specs or names)
    seed: int | None = None  # the dice seed the game was played with
    result: str | None = None  # one of RESULTS; replay() checks the plies end that way

    def __post_init__(self) -> None:
        if self.config.ply_limit != MAX_PLY_LIMIT:
            object.__setattr__(self, "config", replace(self.config, ply_limit=MAX_PLY_LIMIT))

    def to_json(self) -> dict:
        """The record as a JSON-ready dict in docs/RULES.md format; `parse_record` gives it back.

        `start` is written, in full, only when the config has one.
        """
        data: dict = {"variant": {"reserve": self.config.reserve}}
        start = self.config.start
        if start is not None:
            data["start"] = {
                "board": start.board,
                "reserves": dict(zip(COLOURS, start.reserves, strict=True)),
                "to_move": start.to_move,
            }
        data["plies"] = [list(ply) for ply in self.plies]
        if self.description is not None:
            data["description"] = self.description
        if self.players is not None:
            data["players"] = dict(zip(COLOURS, self.players, strict=True))
        if self.seed is not None:
            data["seed"] = self.seed
        if self.result is not None:
            data["result"] = self.result
        return data


def parse_record(data: object) -> Record:
    """Check the header of a record (a decoded JSON value) and return it as a `Record`.

    Each header field is checked on its own; a fault is a `RecordError` naming the field.
    """
    if not isinstance(data, dict):
        raise RecordError(f"a record must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - _RECORD_KEYS)
    if unknown:
        raise RecordError(f"unknown record field(s): {', '.join(clip(str(key)) for key in unknown)}")
    variant = data.get("variant", {})
    if not isinstance(variant, dict) or set(variant) - {"reserve"}:
        raise RecordError(f"variant must be an object with only 'reserve', got {brief(variant)}")
    try:
        reserve = Config(reserve=variant.get("reserve", Config.reserve)).reserve
    except ValueError as error:
        raise RecordError(f"record header: variant.{error}") from None
    try:
        config = Config(reserve=reserve, start=_parse_start(data.get("start"), reserve))
    except ValueError as error:
        raise RecordError(f"record header: {error}") from None
    plies = data.get("plies")
    if not isinstance(plies, list):
        raise RecordError(f"plies must be a list of [rolled, placed] pairs, got {type(plies).__name__}")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise RecordError(f"description must be a string, got {type(description).__name__}")
    players = data.get("players")
    if players is not None:
        if (
            not isinstance(players, dict)
            or set(players) != set(COLOURS)
            or not all(isinstance(name, str) for name in players.values())
        ):
            raise RecordError(f"players must be {{'red': name, 'blue': name}} with string names, got {brief(players)}")
        players = (players["red"], players["blue"])
    seed = data.get("seed")
    if seed is not None and not is_seed(seed, -MAX_SEED + 1):
        raise RecordError(f"seed must be an integer (magnitude below 2**64), got {brief(seed)}")
    result = data.get("result")
    if result is not None and result not in RESULTS:
        raise RecordError(f"result must be 'red', 'blue' or 'unfinished', got {brief(result)}")
    return Record(config=config, plies=tuple(plies), description=description, players=players, seed=seed, result=result)


def _parse_start(start: object, reserve: int) -> StartPosition | None:
    """The `start` object of a record as a StartPosition (None when absent).

    Absent fields take the standard setup's board, Red to move and `reserve`
    checkers each (the variant's reserve): `start_position`.
    """
    if start is None:
        return None
    if not isinstance(start, dict):
        raise ValueError(f"start must be an object, got {type(start).__name__}")
    fields = dict(start)
    if "reserves" in fields:
        reserves = fields["reserves"]
        if not isinstance(reserves, dict) or set(reserves) != set(COLOURS):
            raise ValueError(f"start.reserves must be {{'red': n, 'blue': n}}, got {brief(reserves)}")
        fields["reserves"] = (reserves["red"], reserves["blue"])
    return start_position(fields, reserve)


MAX_RECORD_BYTES = 4 * 2**20  # 4 MiB: a 1,600-ply record written by write_record takes about 42 kB


def load_record(source: str | Path | BinaryIO, name: str | None = None) -> Record:
    """Read and check a record: a file path, or a binary file object such as `sys.stdin.buffer`.

    At most `MAX_RECORD_BYTES` are read; a path must name a regular file (a FIFO or a device such as
    `/dev/zero` is refused before anything is read). The bytes must be UTF-8 JSON
    (a leading byte-order mark is allowed). Every fault is a
    `RecordError` whose message starts with `name` (default: the
    path, or the file object's `name`), then says what is wrong; values
    echoed from the input are cut to a few dozen characters.
    """
    if name is None:
        name = str(getattr(source, "name", source))
    try:
        if isinstance(source, (str, Path)):  # a regular file only: a FIFO or a device is refused, not read
            data = safe_json.read_regular(source, MAX_RECORD_BYTES, name, RecordError, follow_links=True)
        else:
            data = source.read(MAX_RECORD_BYTES + 1)
    except OSError as error:
        raise RecordError(f"cannot read {name}: {error.strerror or error}") from None
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"{name} is larger than {MAX_RECORD_BYTES:,} bytes, the limit of a record")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise RecordError(f"{name} is not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=lambda pairs: safe_json.unique_keys(pairs, RecordError))
        return parse_record(value)
    except RecordError as error:  # header messages cut what they echo of the record (board.brief, board.clip)
        raise RecordError(f"{name}: {error}") from None
    except json.JSONDecodeError as error:
        raise RecordError(
            f"{name} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise RecordError(f"{name} is not a record: its JSON arrays or objects are nested too deeply") from None
    except ValueError as error:  # e.g. an integer past Python's 4300-digit limit
        raise RecordError(f"{name} is not valid JSON: {clip(str(error), _ERROR_TEXT)}") from None


def _parse_ply(ply: object, number: int) -> tuple[int, int]:
    """(rolled, placed) square indices of one ply, or RecordError naming it."""
    if not isinstance(ply, (list, tuple)) or len(ply) != 2:
        raise RecordError(f"expected a [rolled, placed] pair of squares, got {brief(ply)}", number)
    try:
        return parse_square(ply[0]), parse_square(ply[1])
    except ValueError as error:
        raise RecordError(str(error), number) from None


def trace_entry(
    ply: int,
    mover: int,
    rolled: int,
    hit: int,
    captured: int,
    legal: int,
    placed: int,
    red: int,
    blue: int,
    reserves: tuple[int, int],
    winner: int,
) -> dict:
    """One trace object in docs/RULES.md field order, from plain ints (bitboards for captured, legal, red, blue)."""
    return {
        "ply": ply,
        "mover": COLOURS[mover],
        "roll": square_name(rolled),
        "dice": list(dice_for(rolled, mover)),
        "hit": HIT_NAMES[hit],
        "captured": [square_name(s) for s in squares_of(captured)],
        "legal": [square_name(s) for s in squares_of(legal)],
        "place": square_name(placed),
        "board": board_string(red, blue),
        "reserves": dict(zip(COLOURS, reserves, strict=True)),
        "winner": COLOURS[winner] if winner >= 0 else None,
    }


def trace_line(entry: dict) -> str:
    """A trace object as the JSON line docs/RULES.md prints."""
    return json.dumps(entry)


def replay(record: Record, on_roll: Callable[[Game], None] | None = None) -> Iterator[dict]:
    """Play a record through `Game`, yielding each ply's trace; RecordError at the first bad ply.

    No ply limit applies (see `Record`): the game ends only when a player wins.
    `on_roll(game)`, if given, sees the game after each roll, before its placement. When the record
    states a `result`, the replay must end that way: otherwise a RecordError naming `result` follows
    the last ply's trace.
    """
    game = Game(record.config)
    for number, ply in enumerate(record.plies, start=1):
        rolled, placed = _parse_ply(ply, number)
        if game.done:
            raise RecordError(f"the game already ended at ply {game.ply} ({_result(game)})", number)
        mover = game.to_move
        game.roll(rolled)
        if on_roll is not None:
            on_roll(game)
        hit, captured, legal = game.hit, game.captured, game.legal
        try:
            game.place(placed)
        except IllegalActionError as error:
            raise RecordError(str(error), number) from None
        yield trace_entry(
            number, mover, rolled, hit, captured, legal, placed, game.red, game.blue, game.reserves, game.winner
        )
    if record.result is not None and record.result != result_of(game):
        raise RecordError(f"result: the record says {record.result!r}, but its plies end {result_of(game)!r}")


def result_of(game: Game) -> str:
    """A record's `result` for `game` as it stands: the winner's colour, or `"unfinished"`."""
    return COLOURS[game.winner] if game.winner >= 0 else "unfinished"


def _result(game: Game) -> str:
    """How a finished game ended, in words."""
    return f"{COLOURS[game.winner]} won" if game.winner >= 0 else "truncated at the ply limit"


def record_of(
    game: Game,
    description: str | None = None,
    players: tuple[str, str] | None = None,
    seed: int | None = None,
) -> Record:
    """The record of the plies `game` has played since its last reset (or `Game.load`), with its
    `result` (`result_of`) and, when given, who played (`players`: Red's, Blue's) and the dice `seed`.

    It replays to the same trace, also when `game` was truncated by its ply
    limit (the record has no ply limit, so a replay of it just ends there).
    A loaded game's record starts from the loaded position
    (`Game.history_start`, whose `ValueError` it passes on).
    """
    names = tuple((square_name(rolled), square_name(placed)) for rolled, placed in game.history)
    start = game.history_start()
    config = game.config if start is None else replace(game.config, start=start)
    return Record(
        config=config, plies=names, description=description, players=players, seed=seed, result=result_of(game)
    )


def write_record(record: Record, path: str | Path) -> None:
    """Write a record as JSON (atomically: `strategic_reserve_env.files.outputs.write_json`)."""
    from .outputs import write_json

    write_json(path, record.to_json())
