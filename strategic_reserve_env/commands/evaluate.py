"""Evaluate Strategic Reserve agents: a round robin with paired dice, or the versioned benchmark.

    python evaluate.py random greedy expectimax:depth=2 --games 2000 --seed 0 --out results/
    python evaluate.py --benchmark my_agent.py:act --out results/mine/
    python evaluate.py --list-agents

Agents are spec strings: built-ins, names installed packages register (entry points
strategic_reserve_env.agents), or your own: package.module:attribute or path/to/file.py:attribute, then
optionally :key=value,... (agents/custom.py).

A round robin plays every pair of games on one dice stream with the seats swapped, and prints per pairing the
score with a 95 % interval, its luck-adjusted score (the luck of each roll taken out: a far narrower interval,
docs/BENCHMARK.md), win rates by seat, game length and speed, then Bradley-Terry ratings; --out DIR writes
results.json (after each pairing), results.md and ratings.png. --benchmark SPEC plays SPEC against the
protocol's fixed panel and prints a score card (--out DIR: benchmark.json, benchmark.md).

Everything is checked before the first game; --out DIR is locked while the run writes it. --act-timeout binds
agents that cooperate, not hostile code: run an agent you do not trust in a process of its own.

Exit status: 0 done; 2 bad arguments, agents or output folder (nothing played); 1 an agent failed, or the
results could not be written or printed; 130 / 143 on SIGINT / SIGTERM. Then what was finished is printed
and written first, and the files say "complete": false and what stopped the run ("error").
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from dataclasses import replace

from strategic_reserve_env.agents import ENTRY_POINT_GROUP, KNOWN_AGENTS, list_agents, load_agent
from strategic_reserve_env.agents.custom import USER_SPEC_FORMS
from strategic_reserve_env.agents.luck_values import LUCK_VALUE_SPECS, load_luck_value
from strategic_reserve_env.commands import BAD_INPUT, fail, flush_stdout, named, stdout_lost
from strategic_reserve_env.commands.arguments import add_protocol, command_parser, seconds_argument
from strategic_reserve_env.core.board import MESSAGE_LIMIT, clip
from strategic_reserve_env.core.policies import InvalidActionsError
from strategic_reserve_env.envs.arena import MAX_ACT_SECONDS, TimeLimited, raised_at
from strategic_reserve_env.evaluation import tournament
from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS, Protocol, run_benchmark
from strategic_reserve_env.evaluation.tournament import PAIRING_HEADER, PairingError, Settings, pairing_rows, text_table
from strategic_reserve_env.files.outputs import OutputLost, check_out, lock, read_run
from strategic_reserve_env.interrupts import Signals, StopNow, exit_status, stop_line
from strategic_reserve_env.training.folder import check_command

COMMAND = "evaluate/benchmark"  # for the refusal of another command's run folder (these results make no run)
TOURNAMENT_OPTIONS = {
    "games": "games per pairing, even",
    "seed": "seed of dice and agents, >= 0",
    "batch": "games played at once, even",
    "reserve": "reserve size 1..12",
    "ply_limit": "truncation",
}
TOURNAMENT_ONLY = (*TOURNAMENT_OPTIONS, "luck_value")
RESULTS = ("results.json", "results.md", "ratings.png")
CARD = ("benchmark.json", "benchmark.md")
AGENT_FAILED = 1  # exit status (bad input: `BAD_INPUT`; a signal: 128 + its number, `interrupts.exit_status`)
AGENTS_HELP = f"built in: {KNOWN_AGENTS}; your own: {USER_SPEC_FORMS}"
BENCHMARK_DOC = """Benchmark an agent against the fixed panel of the versioned protocol (docs/BENCHMARK.md).

    strategic-reserve benchmark my_agent.py:act --out results/mine/
    strategic-reserve benchmark expectimax:depth=1 --benchmark-games 200   # a quick, non-conformant look

evaluate's --benchmark SPEC: games, dice, reserve, ply limit and batch fixed by the protocol, a score card
printed; --out DIR writes benchmark.json and benchmark.md. Exit status as evaluate's.
"""


def add_play_options(parser, what: str) -> None:
    """The options evaluate and benchmark share (`--out`: the folder to write `what` in)."""
    parser.add_argument("--out", help=f"directory to write {what} in (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--act-timeout",
        type=lambda text: seconds_argument(text, MAX_ACT_SECONDS),
        metavar="SECONDS",
        help="time budget of each act() call: SECONDS per game of the call (Python code only: a hang inside "
        "compiled code is not stopped); an agent past it fails (exit 1)",
    )
    add_protocol(parser)
    parser.add_argument(
        "--benchmark-games",
        type=int,
        metavar="N",
        help="with a benchmark: N games per opponent instead of the protocol's, for a quick look (the score card "
        "is then marked as not protocol-conformant)",
    )


def stop_reason(error: BaseException) -> tuple[str, int]:
    """What stopped a run early (for its files and stderr), and the exit status."""
    if isinstance(error, (KeyboardInterrupt, StopNow)):  # KeyboardInterrupt: Ctrl-C where no handler is ours
        signum = error.signum if isinstance(error, StopNow) else signal.SIGINT
        return stop_line(signum), exit_status(signum)
    if isinstance(error, PairingError):
        return str(error), AGENT_FAILED
    if isinstance(error, OutputLost):
        return f"stopped: {error}", AGENT_FAILED
    return f"stopped: {type(error).__name__}: {clip(str(error), MESSAGE_LIMIT)}", AGENT_FAILED


def say(*lines: str) -> None:
    """Print `lines` and flush them: a failing standard output is `OutputLost` now; a broken pipe no failure."""
    try:
        print(*lines, sep="\n")
        flush_stdout()
    except BrokenPipeError as error:
        stdout_lost(error)
    except OSError as error:
        raise OutputLost(stdout_lost(error)) from None


def written(write, out) -> None:
    """Call `write()` (the run's files in `out`); an `OSError` becomes `OutputLost`."""
    try:
        write()
    except OutputLost:
        raise
    except OSError as error:
        raise OutputLost(f"cannot write the results in {out} ({error.strerror or error})") from None


def stopped(error: BaseException, shown: str | None, save, kept: str, where: str) -> int:
    """The end of a run `error` stopped: `shown` printed, `save(reason)`, one line (`kept`, `where`), the status."""
    reason, status = stop_reason(error)
    if shown:
        with contextlib.suppress(OutputLost):
            say(shown)
    try:
        save(reason)
    except OutputLost as lost:
        return fail(f"{reason}{kept}; the results could not be written: {lost}", status)
    return fail(reason + kept + where, status)


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run a round robin, the benchmark of one agent, or list the agents; the exit status (see above)."""
    parser = command_parser(prog, named(__doc__, "python evaluate.py", prog))
    parser.add_argument("agents", nargs="*", help=f"agent specs; {AGENTS_HELP}")
    defaults = Settings(agents=[])
    for name, what in TOURNAMENT_OPTIONS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, help=f"{what} (default {getattr(defaults, name)})")
    parser.add_argument(
        "--luck-value", metavar="SPEC", help=f"value function of the luck-adjusted scores: {LUCK_VALUE_SPECS}"
    )
    parser.add_argument(
        "--benchmark",
        metavar="SPEC",
        help=f"benchmark SPEC against the panel of protocol {DEFAULT_PROTOCOL.version} (docs/BENCHMARK.md)",
    )
    add_play_options(parser, "the results")
    parser.add_argument(
        "--list-agents",
        action="store_true",
        help=f"list the built-in agents and those installed packages register ({ENTRY_POINT_GROUP})",
    )
    args = parser.parse_args(argv)
    if args.list_agents:
        if args.agents or args.benchmark:
            parser.error("--list-agents takes no agents")
        print(text_table(["agent", "what"], [list(row) for row in list_agents()]))
        print(f"\nyour own: {USER_SPEC_FORMS}")
        return 0
    given = {name: getattr(args, name) for name in TOURNAMENT_ONLY if getattr(args, name) is not None}
    if args.benchmark is not None and (given or args.agents):
        clashing = [f"--{name.replace('_', '-')}" for name in given] + args.agents
        parser.error(
            f"--benchmark plays one agent under protocol {protocol_of(args).version}, which fixes games, seed, "
            f"batch, reserve, ply limit and luck value: drop {', '.join(clashing)} "
            "(--benchmark-games N for a quick, non-conformant run)"
        )
    if args.benchmark is not None:
        return benchmark_command(parser, args.benchmark, args)
    if args.benchmark_games is not None or args.protocol is not None:
        parser.error(
            f"--{'benchmark-games' if args.benchmark_games is not None else 'protocol'} needs --benchmark SPEC"
        )
    try:
        settings = Settings(agents=list(args.agents), out=args.out, progress=not args.no_progress, **given)
    except ValueError as error:  # messages start with the setting's name
        name, _, rest = str(error).partition(" ")
        parser.error(f"--{name.replace('_', '-')} {rest}" if name in TOURNAMENT_ONLY else str(error))
    start = time.perf_counter()

    def load() -> list:
        load_luck_value(settings.luck_value)  # a bad --luck-value fails before the agents load
        agents = [limited(agent, args.act_timeout) for agent in tournament.load_agents(settings.agents)]
        for agent in agents:
            tournament.check_agent(agent, settings.config(), settings.seed)
        return agents

    def play(agents: list, out) -> int:
        status = play_tournament(replace(settings, agents=[agent.name for agent in agents]), agents, out)
        elapsed = time.perf_counter() - start
        if status == 0:
            print(
                f"wall time {elapsed:.1f} s" if elapsed >= 1 else f"wall time {1000 * elapsed:.0f} ms", file=sys.stderr
            )
        return status

    return locked_run(args.out, RESULTS, load, play)


def benchmark_main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The benchmark command: evaluate's `--benchmark SPEC`."""
    parser = command_parser(prog, BENCHMARK_DOC)
    parser.add_argument("spec", metavar="SPEC", help=f"the agent; {AGENTS_HELP}")
    add_play_options(parser, "the score card")
    args = parser.parse_args(argv)
    return benchmark_command(parser, args.spec, args)


def protocol_of(args) -> Protocol:
    """The protocol `--protocol` names (the default one without it)."""
    return PROTOCOLS.get(args.protocol, DEFAULT_PROTOCOL)


def raised_in(error: BaseException) -> str:
    """Where the root of `error` was raised (an agent's code) as ` (at FILE, line N)`, or '' (none, or named)."""
    cause = error
    while cause.__cause__ is not None:
        cause = cause.__cause__
    place = raised_at(cause)
    if cause is error or isinstance(cause, InvalidActionsError) or not place or place in str(error):
        return ""
    return f" ({place[1:]})"


def limited(agent, act_timeout: float | None):
    """`agent` with the `--act-timeout` budget, if one is given."""
    return agent if act_timeout is None else TimeLimited(agent, act_timeout)


def locked_run(path: str | None, files: tuple[str, ...], load, play) -> int:
    """`--out PATH` checked for `files` (None without one), `load()` the agents, then `play(agents, out)` with
    `out` locked and signals stopping the run; a `ValueError` (bad agent or folder) is one line, `BAD_INPUT`."""
    try:
        out = None if path is None else check_out(path, files)
        if out is not None:
            check_command(out, read_run(out), COMMAND)
        agents = load()
        with lock(out) if out is not None else contextlib.nullcontext(), Signals():
            return play(agents, out)
    except ValueError as error:
        return fail(str(error) + raised_in(error), BAD_INPUT)


def done(text: str, save, out, files: tuple[str, ...]) -> int:
    """A run that finished: `text` printed, `save()` its files, where they are; exit 0."""
    say(text)
    save()
    if out is not None:
        say(f"\nwrote {out}/{', '.join(files)}")
    return 0


def play_tournament(settings: Settings, agents: list, out) -> int:
    """The round robin (agents checked, `out` locked or None); its files say how it ended, as its status does."""
    finished: list = []

    def save(pairings, ratings=None, error=None) -> None:
        finished[:] = pairings
        if out is not None:
            plot = ratings is not None
            written(lambda: tournament.write_outputs(out, settings, pairings, ratings, plot=plot, error=error), out)

    try:
        pairings, ratings = tournament.run(settings, agents, on_pairing=save, checked=True)
        table, rated = pairing_rows(pairings), tournament.rating_rows(ratings)
        lines = [tournament.luck_line(pairings), *tournament.red_lines(pairings), ""]
        lines += [text_table(["agent", "rating (Elo)", "95% CI"], rated), tournament.anchor_line(ratings)]
        return done(
            "\n".join([text_table(PAIRING_HEADER, table), *lines]), lambda: save(pairings, ratings), out, RESULTS
        )
    except BaseException as error:
        kept = error.pairings if isinstance(error, PairingError) else list(finished)
        shown = text_table(PAIRING_HEADER, pairing_rows(kept)) if kept else None
        said = f"; the {len(kept)} pairing(s) finished before are kept" if kept else ""
        where = f" in {out}/results.json" if out is not None and kept else ""
        return stopped(error, shown, lambda why: save(kept, error=why), said, where)


def benchmark_command(parser, spec: str, args) -> int:
    """The benchmark of the agent `spec` with the options `args` (`add_play_options`); the exit status."""
    games = args.benchmark_games
    if games is not None:
        try:
            Settings(agents=[], games=games)
        except ValueError as error:  # "games must be ..."
            parser.error(f"--benchmark-{error}")

    def play(agent, out) -> int:
        return play_benchmark(agent, protocol_of(args), games, not args.no_progress, out)

    return locked_run(args.out, CARD, lambda: limited(load_agent(spec), args.act_timeout), play)


def play_benchmark(agent, protocol: Protocol, games: int | None, progress: bool, out) -> int:
    """The benchmark (`out` locked or None); however it ends, the card so far is printed and written."""
    latest: list = [None]  # the card as last written

    def save(card) -> None:
        latest[0] = card
        if out is not None:
            written(lambda: card.write(out), out)

    card = None
    try:
        card = run_benchmark(agent, protocol, games=games, progress=progress, on_opponent=save, on_start=save)
        return done(card.text(), lambda: save(card), out, CARD)
    except BaseException as error:
        if isinstance(error, ValueError) and card is None:
            raise  # the agent or the panel refused before the first game (`locked_run` says so)
        reason, status = stop_reason(error)
        card = error.card if isinstance(error, PairingError) else card
        card = card if card is not None else latest[0]
        if card is None:
            return fail(f"{reason} before the first game", status)
        card.error = reason
        where = f"; the opponents finished before are in {out}/benchmark.json" if out is not None else ""
        return stopped(error, card.text(), lambda why: save(card), "", where)
