"""Evaluate Strategic Reserve agents: a round robin with paired dice, or the versioned benchmark.

    python evaluate.py random greedy expectimax:depth=2 --games 2000 --seed 0 --out results/
    python evaluate.py --benchmark my_agent.py:act --out results/mine/
    python evaluate.py --list-agents

Agents are spec strings: built-ins (random, greedy, expectimax[:depth=1|2],
ppo:PATH.safetensors), names registered by installed packages (entry-point group
strategic_reserve_env.agents), or your own: package.module:attribute or
path/to/file.py:attribute, optionally followed by :key=value,... (see
agents/custom.py).

Round robin: every pair of games shares one dice stream and swaps the
seats. Prints a table per pairing (score with a 95 % interval, win rates as
Red and Blue, game length, truncations, games per second) and
Bradley-Terry ratings; --out DIR writes results.json (after each pairing),
results.md and ratings.png.

Luck-adjusted scores: beside the raw score, each pairing's score with the
luck of every roll taken out (the roller's win probability after the roll
minus its mean over the 36 rolls, from --luck-value, default race: the
reserve-race model), its 95 % interval and the variance ratio; the
ratings are fitted on the adjusted scores. Same expectation as the raw
score, a far narrower interval (docs/BENCHMARK.md, "The luck-adjusted
estimator").

--benchmark SPEC plays SPEC against the fixed panel of protocol v2, scored
luck-adjusted (random, greedy, expectimax:depth=2, the frozen PPO baseline;
--protocol 1 for v1, scored raw) and prints a score card; --out DIR writes
benchmark.json and benchmark.md (docs/BENCHMARK.md).

Every argument, agent and output path is checked before the first game (sizes
included: at most 1,000,000 games per pairing and 65,536 in a batch), --out DIR
is made absolute before any agent is loaded (an agent that changes directory
does not move it), and it is locked while the run writes it (a second run on
the same folder is refused; the lock goes with its process, however it ends).

--act-timeout SECONDS (at most 86,400) gives each act() call SECONDS per game
of the call: a SIGALRM timer stops a call still running at its budget, and a
call that returns past it fails all the same (an agent that catches the
timer's exception gains nothing). The agent runs in this process, so the
budget binds agents that cooperate or blunder, not hostile code: a hang inside
compiled code that never returns to the interpreter is not stopped, and an
agent that resets the timer, calls os._exit or forks defeats any in-process
budget. Run an agent you do not trust in a process of its own.

Exit status: 0 done; 2 bad arguments, agents or output folder (nothing
played); 1 an agent failed during play (whatever it raised, sys.exit() and
its time budget included), or the run could not go on (its results could not
be written, e.g. a full disk, or printed, e.g. standard output on a full
device); 130 interrupted (Ctrl-C, SIGINT); 143 terminated (SIGTERM). On 1, 130
and 143 what was finished is printed and written first where it can be, one
line on stderr says why, and results.json (benchmark.json) says what stopped
the run ("complete": false, "error"). Files written while the run goes on say
"complete": false with an "error" saying so, which stays true if the run is
killed before it can write again.
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
from strategic_reserve_env.commands.arguments import add_act_timeout, add_protocol, add_run_options, command_parser
from strategic_reserve_env.core.board import MESSAGE_LIMIT, clip
from strategic_reserve_env.core.policies import InvalidActionsError
from strategic_reserve_env.envs.arena import TimeLimited, raised_at
from strategic_reserve_env.evaluation import tournament
from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS, Protocol, run_benchmark
from strategic_reserve_env.evaluation.tournament import PAIRING_HEADER, PairingError, Settings, pairing_rows, text_table
from strategic_reserve_env.files.outputs import OutputLost, check_out, lock, read_run
from strategic_reserve_env.interrupts import Signals, StopNow, exit_status, stop_line
from strategic_reserve_env.training.folder import check_command

COMMAND = "evaluate/benchmark"  # for the refusal of another command's run folder (these results make no run)
TOURNAMENT_ONLY = ("games", "seed", "batch", "reserve", "ply_limit", "luck_value")
AGENT_FAILED = 1  # exit status (bad input: `BAD_INPUT`; a signal: 128 + its number, `interrupts.exit_status`)
AGENTS_HELP = f"built in: {KNOWN_AGENTS}; your own: {USER_SPEC_FORMS}"
GAMES_HELP = (
    "N games per opponent instead of {}, for a quick look (the score card is then marked as not protocol-conformant)"
)


def stop_reason(error: BaseException) -> tuple[str, int]:
    """What stopped a run early (for its files and stderr), with its cause, and the exit status."""
    if isinstance(error, (KeyboardInterrupt, StopNow)):  # KeyboardInterrupt: Ctrl-C where no handler is ours
        signum = error.signum if isinstance(error, StopNow) else signal.SIGINT
        return stop_line(signum), exit_status(signum)
    if isinstance(error, PairingError):
        return str(error), AGENT_FAILED
    if isinstance(error, OutputLost):
        return f"stopped: {error}", AGENT_FAILED
    return f"stopped: {type(error).__name__}: {clip(str(error), MESSAGE_LIMIT)}", AGENT_FAILED


def say(*lines: str) -> None:
    """Print `lines` and flush them, so that a failing standard output is known now (`OutputLost`, then
    pointed at `/dev/null`); a reader that went away (a broken pipe: `| head`) is no failure of the run."""
    try:
        print(*lines, sep="\n")
        flush_stdout()
    except BrokenPipeError as error:
        stdout_lost(error)
    except OSError as error:
        raise OutputLost(stdout_lost(error)) from None


def written(write, out) -> None:
    """Call `write()` (the run's files in `out`); an OSError (a full disk, a folder gone) becomes `OutputLost`."""
    try:
        write()
    except OutputLost:
        raise
    except OSError as error:
        raise OutputLost(f"cannot write the results in {out} ({error.strerror or error})") from None


def stopped(error: BaseException, shown: str | None, save, kept: str, where: str) -> int:
    """The end of a run that `error` stopped: what was finished (`shown`) printed, the files written by
    `save(reason)` with what stopped it, one line on stderr (`kept`, then `where` they are), the exit status."""
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
    for name, what in (
        ("games", "games per pairing, even"),
        ("seed", "seed of dice and agents, >= 0"),
        ("batch", "games played at once, even"),
        ("reserve", "reserve size 1..12"),
        ("ply_limit", "truncation"),
    ):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, help=f"{what} (default {getattr(defaults, name)})")
    parser.add_argument(
        "--luck-value", metavar="SPEC", help=f"value function of the luck-adjusted scores: {LUCK_VALUE_SPECS}"
    )
    add_run_options(parser, "the results")
    add_act_timeout(parser)
    parser.add_argument(
        "--benchmark",
        metavar="SPEC",
        help=f"benchmark SPEC against the panel of protocol {DEFAULT_PROTOCOL.version} (docs/BENCHMARK.md)",
    )
    add_protocol(parser)
    parser.add_argument(
        "--benchmark-games", type=int, metavar="N", help="with --benchmark: " + GAMES_HELP.format("the protocol's")
    )
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
        parser.error(as_option(str(error)))
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

    return locked_run(args.out, ("results.json", "results.md", "ratings.png"), load, play)


def protocol_of(args) -> Protocol:
    """The protocol `--protocol` names (the default one without it)."""
    return PROTOCOLS[args.protocol] if args.protocol is not None else DEFAULT_PROTOCOL


def as_option(message: str) -> str:
    """A Settings error message with the setting named as its command-line option (`--ply-limit ...`)."""
    name, _, rest = message.partition(" ")
    return f"--{name.replace('_', '-')} {rest}" if name in TOURNAMENT_ONLY else message


def raised_in(error: BaseException) -> str:
    """Where the exception at the root of `error` was raised (an agent's code, its import), as ` (at FILE, line
    N)`; '' if there is none, the agent merely answered wrongly, or the message names it already."""
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
    """`--out PATH` checked for `files` (None without one; another command's run folder is refused), `load()`
    the agents, then `play(agents, out)` with `out` locked and signals stopping the run: a bad argument, agent
    or folder (`ValueError`, `OutputBusyError` among them) is one line and exit `BAD_INPUT`."""
    try:
        out = None if path is None else check_out(path, files)
        if out is not None:
            check_command(out, read_run(out), COMMAND)
        agents = load()
        with lock(out) if out is not None else contextlib.nullcontext(), Signals():
            return play(agents, out)
    except ValueError as error:
        return fail(str(error) + raised_in(error), BAD_INPUT)


def play_tournament(settings: Settings, agents: list, out) -> int:
    """The round robin (agents loaded and checked, `out` locked or None). However it ends, its files say how:
    complete, or what stopped it; the exit status and one line on stderr agree."""
    finished: list = []

    def save(pairings, ratings=None, error=None) -> None:
        finished[:] = pairings
        if out is not None:
            written(
                lambda: tournament.write_outputs(
                    out, settings, pairings, ratings, plot=ratings is not None, error=error
                ),
                out,
            )

    try:
        pairings, ratings = tournament.run(settings, agents, on_pairing=save, checked=True)
        say(
            text_table(PAIRING_HEADER, pairing_rows(pairings)),
            tournament.luck_line(pairings),
            *tournament.red_lines(pairings),
            "",
        )
        say(
            text_table(["agent", "rating (Elo)", "95% CI"], tournament.rating_rows(ratings)),
            tournament.anchor_line(ratings),
        )
        save(pairings, ratings)
        if out is not None:
            say(f"\nwrote {out}/results.json, results.md, ratings.png")
    except BaseException as error:
        kept = error.pairings if isinstance(error, PairingError) else list(finished)
        shown = text_table(PAIRING_HEADER, pairing_rows(kept)) if kept else None
        said = f"; the {len(kept)} pairing(s) finished before are kept" if kept else ""
        where = f" in {out}/results.json" if out is not None and kept else ""
        return stopped(error, shown, lambda why: save(kept, error=why), said, where)
    return 0


def benchmark_command(parser, spec: str, args) -> int:
    """The benchmark of the agent `spec` (evaluate's `--benchmark` and the benchmark command), with the options
    `args` (`--benchmark-games`, `--protocol`, `--out`, `--no-progress`, `--act-timeout`); the exit status."""
    games = args.benchmark_games
    if games is not None:
        try:
            Settings(agents=[], games=games)
        except ValueError as error:
            parser.error(f"--benchmark-{as_option(str(error))[2:]}")

    def play(agent, out) -> int:
        return play_benchmark(agent, protocol_of(args), games, not args.no_progress, out)

    return locked_run(
        args.out, ("benchmark.json", "benchmark.md"), lambda: limited(load_agent(spec), args.act_timeout), play
    )


def play_benchmark(agent, protocol: Protocol, games: int | None, progress: bool, out) -> int:
    """The benchmark (the agent loaded, `out` locked or None). However it ends, benchmark.json says how: the
    card so far is printed and written with what stopped it, and one line on stderr gives the exit status."""
    latest: list = [None]  # the card as last written

    def save(card) -> None:
        latest[0] = card
        if out is not None:
            written(lambda: card.write(out), out)

    card = None
    try:
        card = run_benchmark(agent, protocol, games=games, progress=progress, on_opponent=save, on_start=save)
        say(card.text())
        save(card)
        if out is not None:
            say(f"\nwrote {out}/benchmark.json, benchmark.md")
        return 0
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
