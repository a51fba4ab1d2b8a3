"""Round-robin tournament of Strategic Reserve agents, with paired dice.

    python evaluate.py random greedy expectimax:depth=2 --games 2000 --seed 0 --out results/

Every pair of games shares one dice stream and swaps the seats (see
agents/tournament.py for the method and the statistics). Prints a table per
pairing (score with a 95 % interval, win rates as Red and Blue, game length,
truncations, games per second) and Bradley-Terry ratings; ``--out DIR``
also writes results.json, results.md and ratings.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents import KNOWN_AGENTS, load_agent
from agents.tournament import (  # noqa: F401 - re-exported for scripts that import evaluate
    PAIRING_HEADER,
    Pairing,
    Settings,
    bradley_terry,
    dice_seeds,
    pairing_rows,
    play_pairing,
    rating_rows,
    run,
    text_table,
    write_outputs,
)
from strategic_reserve_env.config import Config


def parse_settings(argv: list[str] | None = None) -> Settings:
    """Settings from the command line, checked."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="+", help=f"agent specs; known agents: {KNOWN_AGENTS}")
    defaults = Settings(agents=[])
    parser.add_argument("--games", type=int, default=defaults.games, help="games per pairing, even (default 2000)")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of dice and agents (default 0)")
    parser.add_argument("--batch", type=int, default=defaults.batch, help="games played at once (default 1000)")
    parser.add_argument("--reserve", type=int, default=defaults.reserve, help="reserve size (default 7)")
    parser.add_argument("--ply-limit", type=int, default=defaults.ply_limit, help="truncation (default 1000)")
    parser.add_argument("--out", help="write results.json, results.md and ratings.png here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if len(set(args.agents)) < 2 or len(set(args.agents)) != len(args.agents):
        parser.error("give at least two different agent specs")
    if args.games < 2 or args.games % 2:
        parser.error(f"--games must be an even number >= 2, got {args.games}")
    if args.batch < 2 or args.batch % 2:
        parser.error(f"--batch must be an even number >= 2, got {args.batch}")
    return Settings(agents=args.agents, games=args.games, seed=args.seed, batch=args.batch, reserve=args.reserve,
                    ply_limit=args.ply_limit, out=args.out, progress=not args.no_progress)


def main(argv: list[str] | None = None) -> int:
    settings = parse_settings(argv)
    try:
        Config(reserve=settings.reserve, ply_limit=settings.ply_limit)
        for spec in settings.agents:
            load_agent(spec)  # fail fast on a bad spec or a missing model
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    pairings, ratings = run(settings)
    print(text_table(PAIRING_HEADER, pairing_rows(pairings)))
    print()
    print(text_table(["agent", "rating (Elo)", "95% CI"], rating_rows(ratings)))
    if settings.out:
        write_outputs(Path(settings.out), settings, pairings, ratings)
        print(f"\nwrote {settings.out}/results.json, results.md, ratings.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
