"""The reference score cards of docs/BENCHMARK.md: our own agents under the current protocol
(strategic_reserve_env.evaluation.reference_cards says what it writes).

    strategic-reserve reference                      # from the repository's root
    strategic-reserve reference --agents random greedy --docs /tmp/docs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; `prog`: the name `--help` shows."""
    from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS
    from strategic_reserve_env.evaluation.reference_cards import REFERENCE_AGENTS

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
    """Regenerate the reference cards; exit 1 when the panel's ratings moved, 2 outside a clone's docs folder
    (nothing written), 130 / 143 on Ctrl-C / SIGTERM (one line; the cards printed before it stay written)."""
    args = build_parser(prog).parse_args(argv)
    from strategic_reserve_env.commands.evaluate import BAD_INPUT, fail, stop_reason
    from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS
    from strategic_reserve_env.evaluation.reference_cards import regenerate
    from strategic_reserve_env.interrupts import Signals, StopNow

    protocol = PROTOCOLS[args.protocol] if args.protocol is not None else DEFAULT_PROTOCOL
    docs = Path(args.docs).resolve()
    try:
        with Signals():
            return regenerate(docs, list(args.agents), protocol, progress=not args.no_progress)
    except ValueError as error:
        return fail(str(error), BAD_INPUT)
    except (KeyboardInterrupt, StopNow) as error:
        reason, status = stop_reason(error)
        sys.stdout.flush()
        return fail(f"{reason}; the cards printed before it are written in {docs / 'benchmark'}", status)
