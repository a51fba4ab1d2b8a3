"""Evaluate Strategic Reserve agents: a round robin with paired dice, or the versioned benchmark.

    python evaluate.py random greedy expectimax:depth=2 --games 2000 --seed 0 --out results/
    python evaluate.py --benchmark my_agent.py:act --out results/mine/
    python evaluate.py --list-agents

Agents are spec strings: built-ins (random, greedy, expectimax[:depth=1|2],
ppo:PATH.safetensors), names registered by installed packages (entry-point group
strategic_reserve_env.agents), or your own: package.module:attribute or
path/to/file.py:attribute, optionally followed by :key=value,... (see
agents/custom.py).

Round robin: every pair of games shares one dice stream and swaps the
seats. Prints a table per pairing (score with a 95 % interval, win rates as
Red and Blue, game length, truncations, games per second) and
Bradley-Terry ratings; --out DIR writes results.json (after each pairing),
results.md and ratings.png.

Luck-adjusted scores: beside the raw score, each pairing's score with the
luck of every roll taken out (the roller's win probability after the roll
minus its mean over the 36 rolls, from --luck-value, default race: the
reserve-race model), its 95 % interval and the variance ratio; the
ratings are fitted on the adjusted scores. Same expectation as the raw
score, a far narrower interval (docs/BENCHMARK.md, "The luck-adjusted
estimator").

--benchmark SPEC plays SPEC against the fixed panel of protocol v2, scored
luck-adjusted (random, greedy, expectimax:depth=2, the frozen PPO baseline;
--protocol 1 for v1, scored raw) and prints a score card; --out DIR writes
benchmark.json and benchmark.md (docs/BENCHMARK.md).

Every argument and agent is checked before the first game. Exit status: 0
done, 2 bad arguments or agents (nothing played), 1 an agent failed during
play (what was finished is printed and written first).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from dataclasses import replace

from strategic_reserve_env.agents import ENTRY_POINT_GROUP, KNOWN_AGENTS, list_agents
from strategic_reserve_env.agents.custom import USER_SPEC_FORMS
from strategic_reserve_env.agents.luck_values import LUCK_VALUE_SPECS, load_luck_value
from strategic_reserve_env.evaluation.benchmark import DEFAULT_PROTOCOL, PROTOCOLS, run_benchmark
from strategic_reserve_env.evaluation.tournament import (
    PAIRING_HEADER,
    PairingError,
    Settings,
    check_out,
    luck_line,
    pairing_rows,
    prepare_agents,
    rating_rows,
    red_lines,
    run,
    text_table,
    write_outputs,
)
from strategic_reserve_env.policies import InvalidActionsError

TOURNAMENT_ONLY = ("games", "seed", "batch", "reserve", "ply_limit", "luck_value")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="*", help=f"agent specs; built in: {KNOWN_AGENTS}; your own: {USER_SPEC_FORMS}")
    defaults = Settings(agents=[])
    parser.add_argument("--games", type=int, help=f"games per pairing, even (default {defaults.games})")
    parser.add_argument("--seed", type=int, help=f"seed of dice and agents, >= 0 (default {defaults.seed})")
    parser.add_argument("--batch", type=int, help=f"games played at once, even (default {defaults.batch})")
    parser.add_argument("--reserve", type=int, help=f"reserve size 1..12 (default {defaults.reserve})")
    parser.add_argument("--ply-limit", type=int, help=f"truncation (default {defaults.ply_limit})")
    parser.add_argument(
        "--luck-value", metavar="SPEC", help=f"value function of the luck-adjusted scores: {LUCK_VALUE_SPECS}"
    )
    parser.add_argument("--out", help="directory to write the results in (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--benchmark",
        metavar="SPEC",
        help=f"benchmark SPEC against the panel of protocol {DEFAULT_PROTOCOL.version} (docs/BENCHMARK.md)",
    )
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help=f"with --benchmark: the protocol's number (default {DEFAULT_PROTOCOL.version[1:]}; 1 scores raw results)",
    )
    parser.add_argument(
        "--benchmark-games",
        type=int,
        metavar="N",
        help="with --benchmark: N games per opponent instead of the protocol's, for a quick look "
        "(the score card is then marked as not protocol-conformant)",
    )
    parser.add_argument(
        "--list-agents",
        action="store_true",
        help=f"list the built-in agents and those installed packages register ({ENTRY_POINT_GROUP})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_agents:
        if args.agents or args.benchmark:
            parser.error("--list-agents takes no agents")
        return list_main()
    if args.benchmark is not None:
        return benchmark_main(parser, args)
    if args.benchmark_games is not None or args.protocol is not None:
        parser.error(
            f"--{'benchmark-games' if args.benchmark_games is not None else 'protocol'} needs --benchmark SPEC"
        )
    return tournament_main(parser, args)


def list_main() -> int:
    print(text_table(["agent", "what"], [list(row) for row in list_agents()]))
    print(f"\nyour own: {USER_SPEC_FORMS}")
    return 0


def as_option(message: str) -> str:
    """A Settings error message with the setting named as its command-line option (``--ply-limit ...``)."""
    name, _, rest = message.partition(" ")
    return f"--{name.replace('_', '-')} {rest}" if name in TOURNAMENT_ONLY else message


def fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def print_cause(error: BaseException) -> None:
    """Print the traceback of the exception at the root of ``error`` (raised in an agent's own code,
    or while importing it), unless there is none or the agent merely answered wrongly (the message
    says everything then)."""
    cause = error
    while cause.__cause__ is not None:
        cause = cause.__cause__
    if cause is not error and not isinstance(cause, InvalidActionsError):
        print("where it came from:", file=sys.stderr)
        traceback.print_exception(cause, file=sys.stderr)


def tournament_main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    given = {name: getattr(args, name) for name in TOURNAMENT_ONLY if getattr(args, name) is not None}
    try:
        settings = Settings(agents=list(args.agents), out=args.out, progress=not args.no_progress, **given)
    except ValueError as error:  # messages start with the setting's name
        parser.error(as_option(str(error)))
    start = time.perf_counter()
    try:
        out = check_out(args.out) if args.out else None
        load_luck_value(settings.luck_value)  # a bad --luck-value fails before the agents load
        agents = prepare_agents(settings.agents, settings.config(), settings.seed)
    except ValueError as error:
        print_cause(error)
        return fail(str(error), 2)
    settings = replace(settings, agents=[agent.name for agent in agents])  # canonical names from here on

    def save(pairings, ratings=None, error=None) -> None:
        if out is not None:
            write_outputs(out, settings, pairings, ratings, plot=ratings is not None, error=error)

    try:
        pairings, ratings = run(settings, agents, on_pairing=save, checked=True)
    except PairingError as error:
        if error.pairings:
            print(text_table(PAIRING_HEADER, pairing_rows(error.pairings)))
        save(error.pairings, error=str(error))
        print_cause(error)
        kept = f"; the {len(error.pairings)} pairing(s) finished before are kept" if error.pairings else ""
        written = f" in {out}/results.json" if out is not None and error.pairings else ""
        return fail(f"{error}{kept}{written}", 1)
    print(text_table(PAIRING_HEADER, pairing_rows(pairings)))
    print(luck_line(pairings))
    print("\n".join(red_lines(pairings)))
    print()
    print(text_table(["agent", "rating (Elo)", "95% CI"], rating_rows(ratings)))
    save(pairings, ratings)
    if out is not None:
        print(f"\nwrote {out}/results.json, results.md, ratings.png")
    print(f"wall time {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


def benchmark_main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    protocol = PROTOCOLS[args.protocol] if args.protocol is not None else DEFAULT_PROTOCOL
    clashing = [f"--{name.replace('_', '-')}" for name in TOURNAMENT_ONLY if getattr(args, name) is not None]
    if clashing or args.agents:
        parser.error(
            f"--benchmark plays one agent under protocol {protocol.version}, which fixes games, seed, "
            f"batch, reserve, ply limit and luck value: drop {', '.join(clashing + args.agents)} "
            "(--benchmark-games N for a quick, non-conformant run)"
        )
    if args.benchmark_games is not None:
        try:
            Settings(agents=[], games=args.benchmark_games)
        except ValueError as error:
            parser.error(f"--benchmark-{as_option(str(error))[2:]}")
    try:
        out = check_out(args.out) if args.out else None
        save = (lambda card: card.write(out)) if out is not None else None
        card = run_benchmark(
            args.benchmark, protocol, games=args.benchmark_games, progress=not args.no_progress, on_opponent=save
        )
    except ValueError as error:
        print_cause(error)
        return fail(str(error), 2)
    except PairingError as error:
        card = error.card
        print(card.text())
        if out is not None:
            card.write(out)
        print_cause(error)
        return fail(str(error) + (f"; the opponents finished before are in {out}/benchmark.json" if out else ""), 1)
    print(card.text())
    if out is not None:
        card.write(out)
        print(f"\nwrote {out}/benchmark.json, benchmark.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
