"""Print the rules of Strategic Reserve (designed by Mark Steere) as this project implements them: the board,
a turn, the notation, the game-record and replay-trace formats and the ply numbering.

    strategic-reserve rules            # the whole text (Markdown)
    strategic-reserve rules --path     # where the installed copy is, to open in a viewer

The text ships inside the package (the repository's docs/RULES.md), so a wheel user has it too.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

RULES_FILE = "RULES.md"  # package data of strategic_reserve_env (a link to docs/RULES.md in the repository)


def rules_text() -> str:
    """The rules as the package ships them (Markdown)."""
    return resources.files("strategic_reserve_env").joinpath(RULES_FILE).read_text(encoding="utf-8")


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; ``prog``: the name ``--help`` shows."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", action="store_true", help="print the path of the installed rules file instead")
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print the rules (or, with ``--path``, where they are)."""
    args = build_parser(prog).parse_args(argv)
    if args.path:
        with resources.as_file(resources.files("strategic_reserve_env").joinpath(RULES_FILE)) as path:
            print(Path(path).resolve())
        return 0
    sys.stdout.write(rules_text())
    return 0
