"""How much of Strategic Reserve is skill: the report docs/SKILL.md, its plots and data (docs/skill/); what it
measures and how: strategic_reserve_env.evaluation.skill_report.

    strategic-reserve skill               # the defaults: 8.5 min of CPU (one core)
    strategic-reserve skill --best SPEC   # a new best agent joins the ladder
    strategic-reserve skill --games 200 --variants 5=100 --out /tmp/skill   # a quick look
"""

from __future__ import annotations

from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import command_parser
from strategic_reserve_env.evaluation import skill_report as skill
from strategic_reserve_env.files.outputs import check_out, lock


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Measure and write the report; one line on stderr and exit 2 for a bad setting or a busy folder."""
    parser = command_parser(prog, __doc__)
    defaults = skill.SkillSettings()
    parser.add_argument("--agents", nargs="+", default=list(skill.DEFAULT_AGENTS), help="agent specs of the ladder")
    parser.add_argument(
        "--best", default=skill.DEFAULT_BEST, help=f"the best agent's spec (default {skill.DEFAULT_BEST})"
    )
    parser.add_argument(
        "--games", type=int, default=defaults.games, help=f"games per pairing at reserve {skill.MAIN_RESERVE}, even"
    )
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[f"{r}={g}" for r, g in skill.DEFAULT_VARIANTS],
        metavar="RESERVE=GAMES",
        help="the variants and their games per pairing (default %(default)s; none: no variants)",
    )
    parser.add_argument(
        "--search-agents",
        nargs="*",
        default=list(skill.DEFAULT_SEARCH_AGENTS),
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
    given = vars(parser.parse_args(argv))
    out, progress = given.pop("out"), not given.pop("no_progress")
    try:
        variants = tuple(skill.parse_variant(text) for text in given.pop("variants"))
        settings = skill.SkillSettings(**given, variants=variants, progress=progress)
        out = check_out(out)
        with lock(out):  # one writer per folder; the report is measured and written under the lock
            report = skill.measure(settings)
            skill.write_report(report, out)
    except ValueError as error:  # a bad setting, or OutputBusyError: another process holds the folder
        return fail(str(error))
    print("\n".join(skill.summary(report)))
    print(f"wrote {out / skill.REPORT} and {out / skill.FIGURES}/ in {report.seconds:.0f} s")
    return 0
