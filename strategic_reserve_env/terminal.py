"""A person against an agent in the terminal: what ``python -m strategic_reserve_env play`` runs.

The caller passes the agent in (the command line loads it from a spec such as ``greedy``; this package
never imports the ``agents`` package). Each turn shows the board (ANSI text), the roll and the legal squares; the
person types a square such as ``c4`` (``?`` lists the legal squares again,
``q`` quits). At the end the game record can be saved and replayed with
``python -m strategic_reserve_env replay FILE``.

The record is never lost: Ctrl-C stops the game as ``q`` does (the exit status
is then 130), and when the record cannot be written (an unwritable path, or a
second Ctrl-C at the save question) it is printed as one line of JSON instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import records
from .board import COLOURS, DEFAULT_RESERVE, brief, names_of, parse_square, square_name
from .config import Config
from .dice import GameDice
from .game import Game
from .policies import Policy, choose, policy_name
from .render import ansi
from .scene import roll_summary

PROMPT = "Your placement (e.g. c4; ? lists legal squares; q quits): "
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT, as a shell reports it)
SAVE_FAILED = 1  # exit status when the record could not be written where asked (it is printed instead)


def _ask_square(game: Game, read: Callable[[str], str], say: Callable[[str], None]) -> int | None:
    """Read squares until a legal one is typed; None when the person quits."""
    legal = game.legal_squares()
    names = names_of(game.legal)
    while True:
        text = read(PROMPT).strip().lower()
        if text in ("q", "quit", "exit"):
            return None
        if text in ("?", "help", ""):
            say(f"Legal squares: {names}")
            continue
        try:
            square = parse_square(text)
        except ValueError:
            say(f"'{text}' is not a square: type a file a-f and a rank 1-6, e.g. c4. Legal: {names}")
            continue
        if square not in legal:
            say(f"{text} is not a legal placement now. Legal: {names}")
            continue
        return square


def terminal_game(
    agent: Policy,
    seat: str = "red",
    seed: int | None = None,
    reserve: int = DEFAULT_RESERVE,
    save: str | None = None,
    read: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
) -> int:
    """Run one game between a person (``read``/``say``) and ``agent`` (a
    :class:`~strategic_reserve_env.policies.Policy`); returns an exit code (0, :data:`INTERRUPTED` after Ctrl-C,
    :data:`SAVE_FAILED` when the record was printed instead of saved). ``seat``: the person's colour,
    "red", "blue" or "random"; ``seed`` (None: a fresh one, shown) seeds the dice and the agent."""
    if seat not in (*COLOURS, "random"):
        raise ValueError(f"seat must be 'red', 'blue' or 'random', got {brief(seat)}")
    name = policy_name(agent)
    seed = int(np.random.SeedSequence().entropy % 2**32) if seed is None else seed
    rng = np.random.default_rng(seed)
    if seat == "random":
        seat = COLOURS[int(rng.integers(2))]
    human = COLOURS.index(seat)
    game, dice = Game(Config(reserve=reserve)), GameDice(seed)
    say(
        f"Strategic Reserve (by Mark Steere). You are {seat.capitalize()}, {name} is "
        f"{COLOURS[1 - human].capitalize()}. Red moves first. Seed {seed}."
    )
    quit_early, status = False, 0
    try:
        while not game.done:
            game.roll(dice.next())
            if game.to_move == human:
                say(ansi(game))
                square = _ask_square(game, read, say)
                if square is None:
                    quit_early = True
                    break
            else:
                square = choose(agent, game, rng)
                say(f"{roll_summary(game)} {name} places on {square_name(square)}.")
            game.place(square)
    except EOFError:
        say("\nInput ended; the game stops here.")
        quit_early = True
    except KeyboardInterrupt:
        say("\nInterrupted; the game stops here.")
        quit_early, status = True, INTERRUPTED
    if not quit_early:
        say(ansi(game))
        say("You won!" if game.winner == human else f"{name} won." if game.winner >= 0 else "Truncated.")
    saved = _offer_save(records.record_of(game), save, read, say)  # also after Ctrl-C: the record is kept
    return status or saved


def _offer_save(
    record: records.Record, save: str | None, read: Callable[[str], str], say: Callable[[str], None]
) -> int:
    """Write ``record`` to ``save``, or to a file name asked for (empty: skip); returns the exit status.
    When the file cannot be written, or the question is interrupted, the record is printed instead."""
    if save is None:
        try:
            save = read("Save the game record to (empty to skip): ").strip() or None
        except EOFError:
            save = None
        except KeyboardInterrupt:
            _print_record(record, "\nInterrupted", say)
            return INTERRUPTED
    if save is None:
        return 0
    path = Path(save)
    try:
        records.write_record(record, path)
    except OSError as error:
        _print_record(record, f"Could not write {path} ({error.strerror or error})", say)
        return SAVE_FAILED
    say(f"Saved {path}; replay it with: python -m strategic_reserve_env replay {path}")
    return 0


def _print_record(record: records.Record, reason: str, say: Callable[[str], None]) -> None:
    """Print ``record`` as one line of JSON, after a line saying why and how to replay it."""
    say(
        f"{reason}; here is the game record (save the next line as a .json file and replay it with "
        "python -m strategic_reserve_env replay FILE):"
    )
    say(json.dumps(record.to_json()))


__all__ = ["INTERRUPTED", "PROMPT", "SAVE_FAILED", "terminal_game"]
