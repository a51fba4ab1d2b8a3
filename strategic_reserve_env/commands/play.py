"""Play Strategic Reserve against an agent in the terminal (the rules: strategic-reserve rules).

strategic-reserve play --opponent greedy --seat red --seed 7
strategic-reserve play --opponent ppo --save game.json
"""

from __future__ import annotations

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import command_parser
from strategic_reserve_env.commands.terminal import terminal_game
from strategic_reserve_env.core.board import DEFAULT_RESERVE


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """A person against an agent; exit 2 with one line on stderr for a bad agent spec or setting."""
    parser = command_parser(prog, __doc__)
    parser.add_argument(
        "--opponent",
        default="greedy",
        help="agent spec (default greedy), e.g. random, expectimax:depth=2, ppo (the shipped model)",
    )
    parser.add_argument("--seat", choices=["red", "blue", "random"], default="red", help="your colour")
    parser.add_argument("--seed", type=int, help="seed of the dice and the agent, 0 .. 2**64 - 1")
    parser.add_argument("--reserve", type=int, default=DEFAULT_RESERVE, help="reserve size (default %(default)s)")
    parser.add_argument(
        "--save", help="write the game record here at the end, a regular file (otherwise you are asked)"
    )
    args = parser.parse_args(argv)
    try:
        agent = load_agent(args.opponent)
        return terminal_game(agent, seat=args.seat, seed=args.seed, reserve=args.reserve, save=args.save)
    except ValueError as error:  # a bad spec, --reserve 20
        return fail(str(error))
