"""The maintainer commands, listed apart in `strategic-reserve --help`: they regenerate the project's own results
(the reference score cards, the skill report, the placement headroom, the value agent's network)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import add_protocol, command_parser

HEADROOM = """How much better than greedy can a placement be? Rollout values of every legal placement, greedy's own
choice compared with the rollouts' best (strategic_reserve_env.evaluation.placement_headroom says how).

    strategic-reserve headroom [--positions 300] [--rollouts 2000] [--seed 0] [--luck]
"""


def headroom(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Measure and print the headroom; a usage error (exit 2) for bad counts."""
    parser = command_parser(prog, HEADROOM)
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


REFERENCE = """The reference score cards of docs/BENCHMARK.md: our own agents under the current protocol
(strategic_reserve_env.evaluation.reference_cards says what it writes).

    strategic-reserve reference                      # from the repository's root
    strategic-reserve reference --agents random greedy --docs /tmp/docs
"""


def reference(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Regenerate the reference cards; exit 1 when the panel's ratings moved, 2 outside a clone's docs folder,
    130 / 143 on Ctrl-C / SIGTERM (the cards printed before it stay written)."""
    from strategic_reserve_env.commands.evaluate import protocol_of, stop_reason
    from strategic_reserve_env.evaluation.reference_cards import REFERENCE_AGENTS, regenerate
    from strategic_reserve_env.interrupts import Signals, StopNow

    parser = command_parser(prog, REFERENCE)
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


SKILL = """How much of Strategic Reserve is skill: the report docs/SKILL.md, its plots and data (docs/skill/); what it
measures and how: strategic_reserve_env.evaluation.skill_report.

    strategic-reserve skill               # the defaults: 8.5 min of CPU (one core)
    strategic-reserve skill --best SPEC   # a new best agent joins the ladder
    strategic-reserve skill --games 200 --variants 5=100 --out /tmp/skill   # a quick look
"""


def skill(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Measure and write the report; one line on stderr and exit 2 for a bad setting or a busy folder."""
    from strategic_reserve_env.evaluation import skill_report as report
    from strategic_reserve_env.files.outputs import check_out, lock

    parser = command_parser(prog, SKILL)
    defaults = report.SkillSettings()
    parser.add_argument("--agents", nargs="+", default=list(report.DEFAULT_AGENTS), help="agent specs of the ladder")
    parser.add_argument("--best", default=defaults.best, help=f"the best agent's spec (default {defaults.best})")
    parser.add_argument(
        "--games", type=int, default=defaults.games, help=f"games per pairing at reserve {report.MAIN_RESERVE}, even"
    )
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[f"{r}={g}" for r, g in defaults.variants],
        metavar="RESERVE=GAMES",
        help="the variants and their games per pairing (default %(default)s; none: no variants)",
    )
    parser.add_argument(
        "--search-agents",
        nargs="*",
        default=list(defaults.search_agents),
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
        variants = tuple(report.parse_variant(text) for text in given.pop("variants"))
        settings = report.SkillSettings(**given, variants=variants, progress=progress)
        out = check_out(out)
        with lock(out):  # one writer per folder; the report is measured and written under the lock
            measured = report.measure(settings)
            report.write_report(measured, out)
    except ValueError as error:  # a bad setting, or OutputBusyError: another process holds the folder
        return fail(str(error))
    print("\n".join(report.summary(measured)))
    print(f"wrote {out / report.REPORT} and {out / report.FIGURES}/ in {measured.seconds:.0f} s")
    return 0


VALUE_NET = """The value network of the value agent: play games for its data, fit it (the train extra).

strategic-reserve value-net data --games 100000 --agents greedy greedy --out /tmp/values.npz
strategic-reserve value-net fit /tmp/values.npz --out models/value_net.safetensors
"""


def value_net(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Make data or fit a network; returns the exit status."""
    parser = command_parser(prog, VALUE_NET)
    commands = parser.add_subparsers(dest="command", required=True)
    making = commands.add_parser("data", help="play games and keep their positions with the outcome")
    making.add_argument("--games", type=int, default=20000)
    making.add_argument("--agents", nargs=2, default=["greedy", "greedy"], help="the two agent specs")
    making.add_argument("--batch", type=int, default=2000)
    making.add_argument("--epsilon", type=float, default=0.0, help="probability of a random placement")
    fitting = commands.add_parser("fit", help="fit a value network on data files")
    fitting.add_argument("data", nargs="+")
    fitting.add_argument("--hidden", default="256,256")
    fitting.add_argument("--epochs", type=int, default=6)
    fitting.add_argument("--lam", type=float, default=1.0, help="lambda of the TD targets (1: the outcomes)")
    fitting.add_argument("--bootstrap", help="value file of the TD targets (default: the race evaluation)")
    for each in (making, fitting):
        each.add_argument("--seed", type=int, default=0)
        each.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import numpy as np
    import torch

    from strategic_reserve_env.agents import load_agent
    from strategic_reserve_env.agents.value_network import Exploring, fit, load_value_net, play_positions
    from strategic_reserve_env.core.config import Config
    from strategic_reserve_env.files.model_files import npz_arrays, npz_headers

    torch.set_num_threads(1)
    parts = []
    if args.command == "data":
        agents = [Exploring(load_agent(spec), args.epsilon) for spec in args.agents]
        for first in range(0, args.games, args.batch):
            count = min(args.batch, args.games - first)
            parts.append(play_positions(agents, count, args.seed * 10**3 + first // args.batch, Config()))
            print(f"{first + count} games", flush=True)
    else:
        parts = [npz_arrays(name, npz_headers(name)) for name in args.data]
    joined = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    if args.command == "data":
        np.savez(args.out, **joined)
        print(f"wrote {args.out}")
        return 0
    bootstrap = load_value_net(args.bootstrap) if args.bootstrap else None
    hidden = [int(n) for n in args.hidden.split(",")]
    net, figures = fit(joined, hidden, args.epochs, args.seed, bootstrap=bootstrap, lam=args.lam)
    net.about |= {"data": [Path(name).name for name in args.data], "lam": args.lam, "bootstrap": args.bootstrap}
    net.save(args.out)
    print(json.dumps(figures), f"wrote {args.out}")
    return 0
