"""How much of Strategic Reserve is skill: the report docs/SKILL.md, its plots and data (docs/skill/); what it
measures and how: strategic_reserve_env.evaluation.skill_report.

    strategic-reserve skill               # the defaults: 8.5 min of CPU (one core)
    strategic-reserve skill --best SPEC   # a new best agent joins the ladder
    strategic-reserve skill --games 200 --variants 5=100 --out /tmp/skill   # a quick look
"""

from __future__ import annotations

import argparse
import sys

from strategic_reserve_env.evaluation.skill_report import (
    DEFAULT_AGENTS,
    DEFAULT_BEST,
    DEFAULT_SEARCH_AGENTS,
    DEFAULT_VARIANTS,
    FIGURES,
    MAIN_RESERVE,
    REPORT,
    SkillSettings,
    measure,
    parse_variant,
    summary,
    write_report,
)
from strategic_reserve_env.files.outputs import check_out, lock


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; `prog`: the name `--help` shows."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    defaults = SkillSettings()
    parser.add_argument("--agents", nargs="+", default=list(DEFAULT_AGENTS), help="agent specs of the ladder")
    parser.add_argument("--best", default=DEFAULT_BEST, help=f"the best agent's spec (default {DEFAULT_BEST})")
    parser.add_argument(
        "--games", type=int, default=defaults.games, help=f"games per pairing at reserve {MAIN_RESERVE}, even"
    )
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[f"{r}={g}" for r, g in DEFAULT_VARIANTS],
        metavar="RESERVE=GAMES",
        help="the variants and their games per pairing (default %(default)s; none: no variants)",
    )
    parser.add_argument(
        "--search-agents",
        nargs="*",
        default=list(DEFAULT_SEARCH_AGENTS),
        help="agents that play every reserve by one rule (no model trained at one reserve size)",
    )
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of dice and agents")
    parser.add_argument("--batch", type=int, default=defaults.batch, help="games per engine batch, even")
    parser.add_argument(
        "--headroom-positions", type=int, default=0, help="run the headroom measurement (0: quote a full run)"
    )
    parser.add_argument("--headroom-rollouts", type=int, default=defaults.headroom_rollouts)
    parser.add_argument("--headroom-seed", type=int, default=defaults.headroom_seed)
    parser.add_argument(
        "--out", default="docs", help="folder of SKILL.md and skill/ (default: docs/ of the current directory)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Measure and write the report; one line on stderr and exit 2 for a bad setting or a busy folder."""
    args = build_parser(prog).parse_args(argv)
    try:
        settings = SkillSettings(
            agents=tuple(args.agents),
            best=args.best,
            games=args.games,
            variants=tuple(parse_variant(text) for text in args.variants),
            search_agents=tuple(args.search_agents),
            seed=args.seed,
            batch=args.batch,
            headroom_positions=args.headroom_positions,
            headroom_rollouts=args.headroom_rollouts,
            headroom_seed=args.headroom_seed,
            progress=not args.no_progress,
        )
        out = check_out(args.out)
        with lock(out):  # one writer per folder; the report is measured and written under the lock
            report = measure(settings)
            write_report(report, out)
    except ValueError as error:  # a bad setting, or OutputBusyError: another process holds the folder
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("\n".join(summary(report)))
    print(f"wrote {out / REPORT} and {out / FIGURES}/ in {report.seconds:.0f} s")
    return 0
