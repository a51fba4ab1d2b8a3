"""How much better than greedy can a placement be? Rollout values of every legal placement, greedy's own
choice compared with the rollouts' best (strategic_reserve_env.evaluation.placement_headroom says how).

    strategic-reserve headroom [--positions 300] [--rollouts 2000] [--seed 0] [--luck]
"""

from __future__ import annotations

from strategic_reserve_env.commands.arguments import command_parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Measure and print the headroom; a usage error (exit 2) for bad counts."""
    parser = command_parser(prog, __doc__)
    parser.add_argument("--positions", type=int, default=300, help="greedy self-play games to take a decision from")
    parser.add_argument("--rollouts", type=int, default=2000, help="rollouts per legal placement (even, >= 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the positions, dice and tie-breaks")
    parser.add_argument("--luck", action="store_true", help="luck-adjusted rollouts (reserve-race value)")
    args = parser.parse_args(argv)
    from strategic_reserve_env.evaluation.placement_headroom import measure

    try:
        print("\n".join(measure(args.positions, args.rollouts, args.seed, args.luck)))
    except ValueError as error:
        parser.error(str(error))
    return 0
