"""Benchmark an agent against the fixed panel of the versioned protocol (docs/BENCHMARK.md).

    strategic-reserve benchmark my_agent.py:act --out results/mine/
    strategic-reserve benchmark expectimax:depth=1 --benchmark-games 200   # a quick, non-conformant look

The same as "python evaluate.py --benchmark SPEC" in a clone: SPEC plays every member of
the panel with everything else fixed by the protocol (games, paired dice from a
fixed seed, reserve, ply limit, batch), and a score card is printed; --out DIR
writes benchmark.json and benchmark.md. Exit status: 0 done, 2 bad arguments or
agents (nothing played), 1 an agent failed during play (what was finished is
printed and written first).
"""

from __future__ import annotations

from strategic_reserve_env.commands import evaluate
from strategic_reserve_env.commands.arguments import add_act_timeout, add_protocol, add_run_options, command_parser
from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the benchmark command (`argv`: its arguments, default `sys.argv[1:]`)."""
    parser = command_parser(prog, __doc__)
    parser.add_argument("spec", metavar="SPEC", help=f"the agent; {evaluate.AGENTS_HELP}")
    games_help = evaluate.GAMES_HELP.format(f"protocol {DEFAULT_PROTOCOL.version}'s")
    parser.add_argument("--benchmark-games", type=int, metavar="N", help=games_help)
    add_run_options(parser, "the score card")
    add_protocol(parser)
    add_act_timeout(parser)
    args = parser.parse_args(argv)
    return evaluate.benchmark_command(parser, args.spec, args)
