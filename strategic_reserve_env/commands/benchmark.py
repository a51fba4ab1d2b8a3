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

import argparse

from strategic_reserve_env.agents import KNOWN_AGENTS
from strategic_reserve_env.agents.custom import USER_SPEC_FORMS
from strategic_reserve_env.commands import evaluate
from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; `prog`: the name `--help` shows."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "spec", metavar="SPEC", help=f"the agent; built in: {KNOWN_AGENTS}; your own: {USER_SPEC_FORMS}"
    )
    parser.add_argument(
        "--benchmark-games",
        type=int,
        metavar="N",
        help=f"N games per opponent instead of protocol {DEFAULT_PROTOCOL.version}'s, for a quick look "
        "(the score card is then marked as not protocol-conformant)",
    )
    parser.add_argument("--out", help="directory to write the score card in (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    evaluate.add_protocol(parser)
    evaluate.add_act_timeout(parser)
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the benchmark command (`argv`: its arguments, default `sys.argv[1:]`)."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    protocol = PROTOCOLS[args.protocol] if args.protocol is not None else DEFAULT_PROTOCOL
    return evaluate.run_benchmark_command(
        parser, args.spec, protocol, args.benchmark_games, args.out, not args.no_progress, args.act_timeout
    )
