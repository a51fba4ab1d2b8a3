"""The reference score cards of docs/BENCHMARK.md: our own agents under the current protocol
(strategic_reserve_env.evaluation.reference_cards says what it writes).

    strategic-reserve reference                      # from the repository's root
    strategic-reserve reference --agents random greedy --docs /tmp/docs
"""

from __future__ import annotations

import sys
from pathlib import Path

from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import add_protocol, command_parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Regenerate the reference cards; exit 1 when the panel's ratings moved, 2 outside a clone's docs folder
    (nothing written), 130 / 143 on Ctrl-C / SIGTERM (one line; the cards printed before it stay written)."""
    from strategic_reserve_env.commands.evaluate import protocol_of, stop_reason
    from strategic_reserve_env.evaluation.reference_cards import REFERENCE_AGENTS, regenerate
    from strategic_reserve_env.interrupts import Signals, StopNow

    parser = command_parser(prog, __doc__)
    parser.add_argument("--docs", default="docs", help="the docs folder (default: docs/ of the current directory)")
    parser.add_argument("--agents", nargs="+", default=list(REFERENCE_AGENTS), help="agents to benchmark")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_protocol(parser)
    args = parser.parse_args(argv)
    docs = Path(args.docs).resolve()
    try:
        with Signals():
            return regenerate(docs, list(args.agents), protocol_of(args), progress=not args.no_progress)
    except ValueError as error:
        return fail(str(error))
    except (KeyboardInterrupt, StopNow) as error:
        reason, status = stop_reason(error)
        sys.stdout.flush()
        return fail(f"{reason}; the cards printed before it are written in {docs / 'benchmark'}", status)
