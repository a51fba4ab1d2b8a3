"""A person against an agent in the terminal: what `strategic-reserve play` runs (`terminal_game`).

Each turn shows the board, the roll and the legal squares; the person types a square (`help`, `?` and `q` as
`INTRODUCTION` says), and a square that is not allowed is answered with why. The record is never lost: Ctrl-C
stops the game as `q` does, and a record that cannot be written is printed as one line of JSON instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import BIT, COLOURS, DEFAULT_RESERVE, brief, names_of, parse_square, square_name
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.dice import GameDice
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.policies import Policy, choose, policy_name
from strategic_reserve_env.core.rules import HIT_FRIENDLY
from strategic_reserve_env.files import records
from strategic_reserve_env.files.outputs import check_replaceable
from strategic_reserve_env.pictures.render import ansi, legal_line
from strategic_reserve_env.pictures.scene import roll_summary

PROMPT = "Your placement (e.g. c4; help explains; ? lists legal squares; q quits): "
RULES = "strategic-reserve rules"  # the command that prints the rules in full (docs/RULES.md in a clone)
INTRODUCTION = f"""\
Goal: empty your reserve. Each turn you place one checker from your reserve
on the board; the first player whose reserve is empty wins.
Each turn begins with a roll of two dice that names one square (purple: its
file, green: its rank, both counted from the mover's own side). What stands
there decides:
  empty hit: the square is empty. Nothing is captured; place on any empty
    square.
  enemy hit: an opponent's checker. Its whole group (checkers joined left,
    right, up or down) is captured; place on any empty square.
  friendly hit: one of your own. Every opponent group touching that group of
    yours is captured; you must place on an empty square next to your group.
Captured checkers go back to their owner's reserve: that is how a reserve
grows again.
Board: R a red checker, B a blue one, . an empty square, + a square you may
place on, [ ] the rolled square; each reserve stands beside its owner's back
rank.
Type a square such as c4; help shows this again, ? the legal squares, q quits.
The rules in full: type {RULES} in a shell
(docs/RULES.md in a clone of the repository)."""
SAVE_PROMPT = "Save the game record to (empty to skip): "
QUIT_WORDS, HELP_WORDS, YES_WORDS = ("q", "quit", "exit"), ("help", "h"), ("y", "yes")
GAME_WORDS = (*QUIT_WORDS, *HELP_WORDS, *YES_WORDS, "?")  # answers to the game's prompts, never file names
QUIT_PROMPT = "Quit this game? Type y to quit, anything else to go on: "
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT, as a shell reports it)
SAVE_FAILED = 1  # exit status when the record could not be written where asked (it is printed instead)
INPUT_ENDED = 1  # exit status when the input ended before the game did (the record printed, or saved to `save`)


def _square(text: str) -> int | None:
    """The square `text` names, None if it names none."""
    try:
        return parse_square(text)
    except ValueError:
        return None


def _ask_square(game: Game, read: Callable[[str], str], say: Callable[[str], None]) -> int | None:
    """Read squares until a legal one is typed; None when the person quits."""
    legal, names = game.legal_squares(), names_of(game.legal)
    while True:
        text = read(PROMPT).strip().lower()
        if text in QUIT_WORDS:
            if read(QUIT_PROMPT).strip().lower() in YES_WORDS:
                return None
            say("The game goes on.")
        elif text in HELP_WORDS:
            say(INTRODUCTION)
            say(legal_line(names, "Legal squares now: "))
        elif text in ("?", ""):
            say(legal_line(names, "Legal squares: "))
        elif (square := _square(text)) in legal:
            return square
        else:
            not_a_square = f"'{text}' is not a square: type a file a-f and a rank 1-6, e.g. c4."
            say(not_a_square if square is None else why_not_legal(game, square))
            say(legal_line(names))


def why_not_legal(game: Game, square: int) -> str:
    """Why `square` is not an allowed placement of the mover of `game` (rolled) now (docs/RULES.md, "A
    turn"): it holds a checker, or, after a friendly hit, it is not next to the group that was hit."""
    name, rolled = square_name(square), square_name(game.rolled)
    friendly = (
        f"you rolled {rolled}, one of your own checkers (a friendly hit), so you place on an empty square "
        "next to its group"
    )
    if (game.me | game.opp) & BIT[square]:
        whose = "one of your checkers" if game.me & BIT[square] else "an opponent's checker"
        rule = friendly if game.hit == HIT_FRIENDLY else "you place on an empty square"
        return f"{name} is not a legal placement now: it holds {whose}; {rule}."
    return f"{name} is not a legal placement now: {friendly}."


def dice_line(game: Game) -> str:
    """How the latest roll's dice named its square, from the roller's side (docs/RULES.md, "A turn")."""
    purple, green = game.dice
    square = square_name(game.rolled)
    order = "files f to a, ranks 6 to 1" if COLOURS[game.roller] == "blue" else "files a to f, ranks 1 to 6"
    who = COLOURS[game.roller].capitalize()
    return (
        f"Dice: purple {purple} is file {square[0]}, green {green} is rank {square[1]} "
        f"({who} counts from its own side: {order})."
    )


def terminal_game(
    agent: Policy,
    seat: str = "red",
    seed: int | None = None,
    reserve: int = DEFAULT_RESERVE,
    save: str | None = None,
    read: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
) -> int:
    """One game between a person (`read`/`say`, in the colour `seat`: "red", "blue" or "random") and `agent`.

    `seed` (0 .. 2**64 - 1; None: a fresh one, shown) seeds the dice and the agent. At the end the record is
    saved to `save` (a regular file, checked before the game) or to a file name asked for. Returns the exit
    status: 0, `INTERRUPTED` after Ctrl-C, `SAVE_FAILED` when the record was printed instead of saved, or
    `INPUT_ENDED` when the input ended first (the record then saved to `save`, else printed).
    """
    if seat not in (*COLOURS, "random"):
        raise ValueError(f"seat must be 'red', 'blue' or 'random', got {brief(seat)}")
    if seed is not None:
        records.check_seed(seed)
    if save is not None:  # before the game: a device, a FIFO or a folder is never replaced by the record
        try:
            check_replaceable(save)
        except OSError as error:
            raise ValueError(f"cannot save the game record to {save}: {error.strerror}") from None
    name = policy_name(agent)
    seed = int(np.random.SeedSequence().entropy % 2**32) if seed is None else seed
    rng = np.random.default_rng(seed)
    if seat == "random":
        seat = COLOURS[int(rng.integers(2))]
    human = COLOURS.index(seat)
    game, dice = Game(Config(reserve=reserve)), GameDice(seed)
    status = 0
    try:  # from the first line on: a Ctrl-C or a signal still keeps the record
        say(
            f"Strategic Reserve (by Mark Steere). You are {seat.capitalize()}, {name} is "
            f"{COLOURS[1 - human].capitalize()}. Red moves first. Seed {seed}."
        )
        say(INTRODUCTION)
        while not game.done:
            game.roll(dice.next())
            if game.to_move == human:
                say(ansi(game) + dice_line(game))
                square = _ask_square(game, read, say)
                if square is None:  # the person quits
                    break
                game.place(square)
                if not game.done:  # the board after one's own placement (the end shows it anyway)
                    say(f"You place on {square_name(square)}:\n{ansi(game)}")
            else:
                square = choose(agent, game, rng)
                say(f"{roll_summary(game)} {name} places on {square_name(square)}.")
                game.place(square)
    except EOFError:
        say("\nInput ended; the game stops here.")
        status = INPUT_ENDED
    except KeyboardInterrupt as error:  # Ctrl-C, or SIGTERM / SIGHUP with a status of its own (`interrupts.Ended`)
        say("\nInterrupted; the game stops here.")
        status = getattr(error, "status", INTERRUPTED)
    if game.done:
        say(ansi(game))
        say("You won!" if game.winner == human else f"{name} won." if game.winner >= 0 else "Truncated.")
    players = (name, "person") if seat == "blue" else ("person", name)
    record = records.record_of(game, players=players, seed=seed)
    if status == INPUT_ENDED and save is None:  # no one is there to answer the save question
        _print_record(record, "No input to ask where to save it", say)
        return status
    saved = _offer_save(record, save, read, say)  # also after Ctrl-C: the record is kept
    return status or saved


def _offer_save(
    record: records.Record, save: str | None, read: Callable[[str], str], say: Callable[[str], None]
) -> int:
    """Write `record` to `save`, or to a file name asked for (empty: skip); returns the exit status. When the
    file cannot be written, or the question is interrupted, the record is printed instead."""
    try:
        while save is None:
            text = read(SAVE_PROMPT).strip()
            if not text:
                return 0
            if text.lower() not in GAME_WORDS and _square(text.lower()) is None:
                save = text
            else:  # an answer to the game's own prompt, typed out of habit: not meant as a file name
                say(f"'{text}' is an answer to the game's question, not a file name: type one such as game.json.")
    except EOFError:
        return 0
    except KeyboardInterrupt:
        _print_record(record, "\nInterrupted", say)
        return INTERRUPTED
    path = Path(save)
    try:
        records.write_record(record, path)
    except OSError as error:
        _print_record(record, f"Could not write {path} ({error.strerror or error})", say)
        return SAVE_FAILED
    say(f"Saved {path}; replay it with: strategic-reserve replay {path}")
    return 0


def _print_record(record: records.Record, reason: str, say: Callable[[str], None]) -> None:
    """Print `record` as one line of JSON, after a line saying why and how to replay it."""
    say(
        f"{reason}; here is the game record (save the next line as a .json file and replay it with "
        "strategic-reserve replay FILE):"
    )
    say(json.dumps(record.to_json()))
