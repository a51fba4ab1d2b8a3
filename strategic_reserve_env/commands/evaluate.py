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

import argparse
import contextlib
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from strategic_reserve_env.agents import ENTRY_POINT_GROUP, KNOWN_AGENTS, list_agents, load_agent
from strategic_reserve_env.agents.custom import USER_SPEC_FORMS
from strategic_reserve_env.agents.luck_values import LUCK_VALUE_SPECS, load_luck_value
from strategic_reserve_env.commands import flush_stdout, named, stdout_lost
from strategic_reserve_env.commands.arguments import act_seconds_argument
from strategic_reserve_env.core.board import MESSAGE_LIMIT, clip
from strategic_reserve_env.core.policies import InvalidActionsError
from strategic_reserve_env.envs.arena import TimeLimited, raised_at
from strategic_reserve_env.evaluation.benchmark_protocol import DEFAULT_PROTOCOL, PROTOCOLS, Protocol, run_benchmark
from strategic_reserve_env.evaluation.tournament import (
    PAIRING_HEADER,
    PairingError,
    Settings,
    anchor_line,
    check_agent,
    load_agents,
    luck_line,
    pairing_rows,
    rating_rows,
    red_lines,
    run,
    text_table,
    write_outputs,
)
from strategic_reserve_env.files.outputs import OutputBusyError, OutputLost, check_out, lock, read_run
from strategic_reserve_env.interrupts import Signals, StopNow, exit_status, stop_line
from strategic_reserve_env.training.folder import check_command

COMMAND = "evaluate/benchmark"  # for the refusal of another command's run folder (these results make no run)
TOURNAMENT_ONLY = ("games", "seed", "batch", "reserve", "ply_limit", "luck_value")
TOURNAMENT_FILES = ("results.json", "results.md", "ratings.png")
BENCHMARK_FILES = ("benchmark.json", "benchmark.md")
AGENT_FAILED, BAD_INPUT = 1, 2  # exit statuses (a signal: 128 + its number, `interrupts.exit_status`)


def stop_reason(error: BaseException) -> tuple[str, int]:
    """What stopped a run (for its files and stderr) and its exit status: anything that ends a run early is
    named, with its cause, never left as a run still going."""
    if isinstance(error, (KeyboardInterrupt, StopNow)):  # KeyboardInterrupt: Ctrl-C where no handler is ours
        signum = error.signum if isinstance(error, StopNow) else signal.SIGINT
        return stop_line(signum), exit_status(signum)
    if isinstance(error, PairingError):
        return str(error), AGENT_FAILED
    if isinstance(error, OutputLost):
        return f"stopped: {error}", AGENT_FAILED
    return f"stopped: {type(error).__name__}: {clip(str(error), MESSAGE_LIMIT)}", AGENT_FAILED


def say(*lines: str) -> None:
    """Print `lines` on the standard output and flush them, so that a failing output (a full device, a
    closed stream) is known now: `OutputLost`. After a failure the standard output is pointed at
    `/dev/null`, so that the interpreter's own last flush does not fail again with a traceback; a reader
    that went away (a broken pipe: `| head`) is no failure of the run, which goes on."""
    try:
        print(*lines, sep="\n")
        flush_stdout()
    except BrokenPipeError as error:  # the reader is gone (piped into head): nothing lost that it wanted
        stdout_lost(error)
    except OSError as error:
        raise OutputLost(stdout_lost(error)) from None


def written(write, out) -> None:
    """Call `write()` (the run's files in `out`); an OSError (a full disk, a folder gone) becomes
    `OutputLost` naming the folder."""
    try:
        write()
    except OutputLost:
        raise
    except OSError as error:
        raise OutputLost(f"cannot write the results in {out} ({error.strerror or error})") from None


def keep(save, reason: str) -> str:
    """Write the run's files with `reason` as what stopped it; '' if they were written, else why not."""
    try:
        save(reason)
    except OutputLost as error:
        return f"; the results could not be written: {error}"
    return ""


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; `prog`: the name `--help` shows (default the script's)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=named(__doc__, "evaluate.py", prog), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("agents", nargs="*", help=f"agent specs; built in: {KNOWN_AGENTS}; your own: {USER_SPEC_FORMS}")
    defaults = Settings(agents=[])
    parser.add_argument("--games", type=int, help=f"games per pairing, even (default {defaults.games})")
    parser.add_argument("--seed", type=int, help=f"seed of dice and agents, >= 0 (default {defaults.seed})")
    parser.add_argument("--batch", type=int, help=f"games played at once, even (default {defaults.batch})")
    parser.add_argument("--reserve", type=int, help=f"reserve size 1..12 (default {defaults.reserve})")
    parser.add_argument("--ply-limit", type=int, help=f"truncation (default {defaults.ply_limit})")
    parser.add_argument(
        "--luck-value", metavar="SPEC", help=f"value function of the luck-adjusted scores: {LUCK_VALUE_SPECS}"
    )
    parser.add_argument("--out", help="directory to write the results in (created if missing)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_act_timeout(parser)
    parser.add_argument(
        "--benchmark",
        metavar="SPEC",
        help=f"benchmark SPEC against the panel of protocol {DEFAULT_PROTOCOL.version} (docs/BENCHMARK.md)",
    )
    add_protocol(parser)
    parser.add_argument(
        "--benchmark-games",
        type=int,
        metavar="N",
        help="with --benchmark: N games per opponent instead of the protocol's, for a quick look "
        "(the score card is then marked as not protocol-conformant)",
    )
    parser.add_argument(
        "--list-agents",
        action="store_true",
        help=f"list the built-in agents and those installed packages register ({ENTRY_POINT_GROUP})",
    )
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.list_agents:
        if args.agents or args.benchmark:
            parser.error("--list-agents takes no agents")
        return list_main()
    if args.benchmark is not None:
        return benchmark_main(parser, args)
    if args.benchmark_games is not None or args.protocol is not None:
        parser.error(
            f"--{'benchmark-games' if args.benchmark_games is not None else 'protocol'} needs --benchmark SPEC"
        )
    return tournament_main(parser, args)


def list_main() -> int:
    print(text_table(["agent", "what"], [list(row) for row in list_agents()]))
    print(f"\nyour own: {USER_SPEC_FORMS}")
    return 0


def as_option(message: str) -> str:
    """A Settings error message with the setting named as its command-line option (`--ply-limit ...`)."""
    name, _, rest = message.partition(" ")
    return f"--{name.replace('_', '-')} {rest}" if name in TOURNAMENT_ONLY else message


def fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def raised_in(error: BaseException) -> str:
    """Where the exception at the root of `error` was raised (in an agent's own code, or while importing it),
    as ` (at FILE, line N)` for its one line, unless there is none, the agent merely answered wrongly (the
    message says everything then) or the message names it already."""
    cause = error
    while cause.__cause__ is not None:
        cause = cause.__cause__
    place = raised_at(cause)
    if cause is error or isinstance(cause, InvalidActionsError) or not place or place in str(error):
        return ""
    return f" ({place[1:]})"


def add_protocol(parser: argparse.ArgumentParser) -> None:
    """The --protocol option (evaluate's --benchmark and the benchmark command)."""
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        help=f"the benchmark protocol's number (default {DEFAULT_PROTOCOL.version[1:]}; 1 scores raw results)",
    )


def add_act_timeout(parser: argparse.ArgumentParser) -> None:
    """The --act-timeout option (evaluate and the benchmark command)."""
    parser.add_argument(
        "--act-timeout",
        type=act_seconds_argument,
        metavar="SECONDS",
        help="time budget of each act() call: SECONDS per game of the call (Python code only: a hang inside "
        "compiled code is not stopped); an agent past it fails (exit 1)",
    )


def limited(agent, args: argparse.Namespace):
    """`agent` with the --act-timeout budget, if one is given."""
    return agent if args.act_timeout is None else TimeLimited(agent, args.act_timeout)


def results_folder(path: str | None, files: tuple[str, ...]) -> Path | None:
    """`--out PATH` checked (`check_out`) for `files`, None without one; `ValueError` for a folder that holds
    another command's run (a `run.json`: train's, train-az's), which these results never join."""
    if path is None:
        return None
    out = check_out(path, files)
    check_command(out, read_run(out), COMMAND)
    return out


def tournament_main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    given = {name: getattr(args, name) for name in TOURNAMENT_ONLY if getattr(args, name) is not None}
    try:
        settings = Settings(agents=list(args.agents), out=args.out, progress=not args.no_progress, **given)
    except ValueError as error:  # messages start with the setting's name
        parser.error(as_option(str(error)))
    start = time.perf_counter()
    try:
        out = results_folder(args.out, TOURNAMENT_FILES)
        load_luck_value(settings.luck_value)  # a bad --luck-value fails before the agents load
        agents = [limited(agent, args) for agent in load_agents(settings.agents)]
        for agent in agents:
            check_agent(agent, settings.config(), settings.seed)
    except ValueError as error:
        return fail(str(error) + raised_in(error), BAD_INPUT)
    settings = replace(settings, agents=[agent.name for agent in agents])  # canonical names from here on
    try:
        with lock(out) if out is not None else contextlib.nullcontext(), Signals():
            status = play_tournament(settings, agents, out)
    except OutputBusyError as error:
        return fail(str(error), BAD_INPUT)
    if status == 0:
        elapsed = time.perf_counter() - start
        print(f"wall time {elapsed:.1f} s" if elapsed >= 1 else f"wall time {1000 * elapsed:.0f} ms", file=sys.stderr)
    return status


def play_tournament(settings: Settings, agents: list, out) -> int:
    """The round robin of `tournament_main` (agents loaded and checked), with `out` locked (or None).
    However it ends, its files say how: complete, or what stopped it (an agent's failure, a signal, a full
    disk, standard output lost, anything else raised), and the exit status and one line on stderr agree."""
    finished: list = []

    def save(pairings, ratings=None, error=None) -> None:
        finished[:] = pairings
        if out is not None:
            written(lambda: write_outputs(out, settings, pairings, ratings, plot=ratings is not None, error=error), out)

    try:
        pairings, ratings = run(settings, agents, on_pairing=save, checked=True)
        say(text_table(PAIRING_HEADER, pairing_rows(pairings)), luck_line(pairings), *red_lines(pairings), "")
        say(text_table(["agent", "rating (Elo)", "95% CI"], rating_rows(ratings)), anchor_line(ratings))
        save(pairings, ratings)
        if out is not None:
            say(f"\nwrote {out}/results.json, results.md, ratings.png")
    except BaseException as error:
        reason, status = stop_reason(error)
        kept = error.pairings if isinstance(error, PairingError) else list(finished)
        if kept:
            with contextlib.suppress(OutputLost):
                say(text_table(PAIRING_HEADER, pairing_rows(kept)))
        lost = keep(lambda why: save(kept, error=why), reason)
        where = f" in {out}/results.json" if out is not None and kept and not lost else ""
        finished_before = f"; the {len(kept)} pairing(s) finished before are kept{where}" if kept else ""
        return fail(f"{reason}{finished_before}{lost}", status)
    return 0


def benchmark_main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """evaluate's `--benchmark SPEC`: refuses the round robin's settings, then `run_benchmark_command`."""
    protocol = PROTOCOLS[args.protocol] if args.protocol is not None else DEFAULT_PROTOCOL
    clashing = [f"--{name.replace('_', '-')}" for name in TOURNAMENT_ONLY if getattr(args, name) is not None]
    if clashing or args.agents:
        parser.error(
            f"--benchmark plays one agent under protocol {protocol.version}, which fixes games, seed, "
            f"batch, reserve, ply limit and luck value: drop {', '.join(clashing + args.agents)} "
            "(--benchmark-games N for a quick, non-conformant run)"
        )
    return run_benchmark_command(
        parser, args.benchmark, protocol, args.benchmark_games, args.out, not args.no_progress, args.act_timeout
    )


def run_benchmark_command(
    parser: argparse.ArgumentParser,
    spec: str,
    protocol: Protocol,
    games: int | None,
    out_path: str | None,
    progress: bool,
    act_timeout: float | None,
) -> int:
    """The benchmark of one agent (evaluate's `--benchmark` and the benchmark command): `games` per
    opponent instead of the protocol's (None: the protocol's), the card written to `out_path` (or None),
    each act() call limited to `act_timeout` seconds per game (or None); returns the exit status."""
    if games is not None:
        try:
            Settings(agents=[], games=games)
        except ValueError as error:
            parser.error(f"--benchmark-{as_option(str(error))[2:]}")
    try:
        out = results_folder(out_path, BENCHMARK_FILES)
        agent = load_agent(spec)
        agent = agent if act_timeout is None else TimeLimited(agent, act_timeout)
    except ValueError as error:
        return fail(str(error) + raised_in(error), BAD_INPUT)
    try:
        with lock(out) if out is not None else contextlib.nullcontext(), Signals():
            return play_benchmark(agent, protocol, games, progress, out)
    except OutputBusyError as error:
        return fail(str(error), BAD_INPUT)


def play_benchmark(agent, protocol: Protocol, games: int | None, progress: bool, out) -> int:
    """The benchmark of `run_benchmark_command` (the agent loaded), with `out` locked (or None). However
    it ends, benchmark.json says how (see `play_tournament`)."""
    latest: list = []  # the card as last written

    def save(card) -> None:
        latest[:] = [card]
        if out is not None:
            written(lambda: card.write(out), out)

    try:
        card = run_benchmark(
            agent,
            protocol,
            games=games,
            progress=progress,
            on_opponent=save,
            on_start=save,
        )
    except ValueError as error:
        return fail(str(error) + raised_in(error), BAD_INPUT)
    except BaseException as error:
        return stopped_benchmark(error, error.card if isinstance(error, PairingError) else None, latest, out, save)
    try:
        say(card.text())
        save(card)
        if out is not None:
            say(f"\nwrote {out}/benchmark.json, benchmark.md")
    except BaseException as error:
        return stopped_benchmark(error, card, latest, out, save)
    return 0


def stopped_benchmark(error: BaseException, card, latest: list, out, save) -> int:
    """The end of a benchmark that `error` stopped: the card so far (`card`, else the last one written)
    printed and written with the reason, one line on stderr, the exit status."""
    reason, status = stop_reason(error)
    card = card if card is not None else latest[0] if latest else None
    if card is None:
        return fail(f"{reason} before the first game", status)
    card.error = reason
    with contextlib.suppress(OutputLost):
        say(card.text())
    lost = keep(lambda why: save(card), reason)
    kept = f"; the opponents finished before are in {out}/benchmark.json" if out is not None and not lost else ""
    return fail(reason + kept + lost, status)


if __name__ == "__main__":
    sys.exit(main())
