"""The reference score cards of docs/BENCHMARK.md: our own agents under the current protocol
(strategic_reserve_env.evaluation.reference says what it writes).

    strategic-reserve reference                      # from the repository's root
    strategic-reserve reference --agents random greedy --docs /tmp/docs
"""

from __future__ import annotations

import argparse
from pathlib import Path


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; `prog`: the name `--help` shows."""
    from strategic_reserve_env.evaluation.benchmark import DEFAULT_PROTOCOL, PROTOCOLS
    from strategic_reserve_env.evaluation.reference import REFERENCE_AGENTS

    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", default="docs", help="the docs folder (default: docs/ of the current directory)")
    parser.add_argument("--agents", nargs="+", default=list(REFERENCE_AGENTS), help="agents to benchmark")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--protocol", choices=sorted(PROTOCOLS), help=f"protocol number (default {DEFAULT_PROTOCOL.version[1:]})"
    )
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Regenerate the reference cards; exit 1 when the panel's ratings moved."""
    args = build_parser(prog).parse_args(argv)
    from strategic_reserve_env.evaluation.benchmark import DEFAULT_PROTOCOL, PROTOCOLS
    from strategic_reserve_env.evaluation.reference import regenerate

    protocol = PROTOCOLS[args.protocol] if args.protocol is not None else DEFAULT_PROTOCOL
    return regenerate(Path(args.docs).resolve(), list(args.agents), protocol, progress=not args.no_progress)
