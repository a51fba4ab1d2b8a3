"""Play against an agent in the terminal: ``python -m strategic_reserve_env play --opponent greedy``.

Each turn shows the board (ANSI text), the roll and the legal squares; the
person types a square such as ``c4`` (``?`` lists the legal squares again,
``q`` quits). At the end the game record can be saved and replayed with
``python -m strategic_reserve_env replay FILE``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import records
from .board import COLOURS, names_of, parse_square, square_name
from .config import Config
from .dice import DiceStream
from .game import Game
from .policies import choose
from .render import ansi, roll_summary

PROMPT = "Your placement (e.g. c4; ? lists legal squares; q quits): "


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


def play(opponent: str, seat: str = "red", seed: int | None = None, reserve: int = 7, save: str | None = None,
         read: Callable[[str], str] = input, say: Callable[[str], None] = print) -> int:
    """Run one game between a person (``read``/``say``) and the agent ``opponent``; returns an exit code."""
    from agents import load_agent  # the agents ship beside this package

    agent = load_agent(opponent)
    seed = int(np.random.SeedSequence().entropy % 2**32) if seed is None else seed
    rng = np.random.default_rng(seed)
    if seat == "random":
        seat = COLOURS[int(rng.integers(2))]
    human = COLOURS.index(seat)
    game, dice = Game(Config(reserve=reserve)), DiceStream(seed)
    say(f"Strategic Reserve (by Mark Steere). You are {seat.capitalize()}, {agent.name} is "
        f"{COLOURS[1 - human].capitalize()}. Red moves first. Seed {seed}.")
    quit_early = False
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
                say(f"{roll_summary(game)} {agent.name} places on {square_name(square)}.")
            game.place(square)
    except EOFError:
        say("\nInput ended; the game stops here.")
        quit_early = True
    if not quit_early:
        say(ansi(game))
        say("You won!" if game.winner == human else f"{agent.name} won." if game.winner >= 0 else "Truncated.")
    _offer_save(game, save, read, say)
    return 0


def _offer_save(game: Game, save: str | None, read: Callable[[str], str], say: Callable[[str], None]) -> None:
    """Write the record to ``save``, or ask for a file name (empty: skip)."""
    if save is None:
        try:
            save = read("Save the game record to (empty to skip): ").strip() or None
        except EOFError:
            save = None
    if save is None:
        return
    path = Path(save)
    records.write_record(records.record_of(game), path)
    say(f"Saved {path}; replay it with: python -m strategic_reserve_env replay {path}")


__all__ = ["play"]
