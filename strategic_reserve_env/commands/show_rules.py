"""Print the rules of Strategic Reserve (designed by Mark Steere) as this project implements them: the board,
a turn, the notation, the game-record and replay-trace formats and the ply numbering.

    strategic-reserve rules            # the game in brief (one screen), then the whole text (Markdown)
    strategic-reserve rules --path     # where the installed copy is, to open in a viewer

The text ships inside the package (the repository's docs/RULES.md), so a wheel user has it too. The brief
quotes its sentences word for word (the goal first), so it says nothing the rules do not.
"""

from __future__ import annotations

import sys
import textwrap
from importlib import resources
from pathlib import Path

from strategic_reserve_env.commands.arguments import command_parser

RULES_FILE = "RULES.md"  # package data of strategic_reserve_env (a link to docs/RULES.md in the repository)
SCREEN_LINES = 24  # a terminal's first screen: the brief fits in it
WIDTH = 78  # columns of the brief (a terminal's 80, less a margin)
ELISION = " ... "  # joins two passages of one quote that the rules separate

#: the game in brief: (topic, a quote of RULES.md, word for word but for its Markdown marks), the goal first
BRIEF: tuple[tuple[str, str], ...] = (
    (
        "Goal",
        "A player whose placement leaves its own reserve empty wins at once, even if the same turn's roll "
        "refilled the opponent's reserve.",
    ),
    (
        "Start",
        f"Each player also starts with a reserve of checkers kept off the board: 7 each.{ELISION}Red moves first.",
    ),
    ("A turn", "A turn is one ply: a roll, the captures it causes, and one placement."),
    ("1. Roll", "together they pick one of the 36 squares, each with probability 1/36."),
    (
        "2. Capture",
        "Enemy hit (the rolled square holds an opponent's checker): that checker's whole group is removed.",
    ),
    (
        "",
        "Friendly hit (the rolled square holds one of the mover's own checkers): call its group G. Every "
        "opponent group that has at least one checker orthogonally next to a checker of G is removed entirely"
        f"{ELISION}The mover may then place only on an empty square orthogonally next to a checker of G",
    ),
    ("", "Empty hit (the rolled square is empty): nothing is removed"),
    ("", "Every removed checker goes back to its owner's reserve."),
    ("3. Place", "The mover takes one checker from its own reserve and puts it on one of the allowed squares."),
    ("End", "two players never win together and there is no draw."),
)
TOPIC_WIDTH = 11  # columns of the topic before each quote


def rules_file():
    """The rules file the package ships (a resource of `strategic_reserve_env`)."""
    return resources.files("strategic_reserve_env").joinpath(RULES_FILE)


def brief() -> str:
    """The game in brief ([BRIEF][]): a heading, each quote wrapped under its topic, and a line before the whole
    text; at most [SCREEN_LINES][] lines."""
    lines = ["Strategic Reserve in brief, quoted from the rules (the whole text follows):"]
    for topic, quote in BRIEF:
        indent = topic.ljust(TOPIC_WIDTH)
        lines += textwrap.wrap(
            quote, WIDTH, initial_indent=indent, subsequent_indent=" " * TOPIC_WIDTH, break_on_hyphens=False
        )
    return "\n".join([*lines, "-" * WIDTH]) + "\n\n"


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print the game in brief and the rules (or, with `--path`, where they are)."""
    parser = command_parser(prog, __doc__)
    parser.add_argument("--path", action="store_true", help="print the path of the installed rules file instead")
    if parser.parse_args(argv).path:
        with resources.as_file(rules_file()) as path:
            print(Path(path).resolve())
    else:
        sys.stdout.write(brief() + rules_file().read_text(encoding="utf-8"))
    return 0
