"""The promises a fault case asserts (issue 40, "What to build" 2-6), one function each, written once.

Each function takes what a case saw (`runner.Outcome`) and returns the problems it found (empty: the promise
holds). `expected_status` says which exit status a case's fault calls for; `check` applies every promise that
concerns the case's fault and returns all problems, each prefixed with the promise's name.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from catalogue import START

if TYPE_CHECKING:
    from runner import Outcome

OK, FAULT, BAD_ARGUMENT = 0, 1, 2
MAX_STDERR_LINES = 1


def signal_status(signum: int) -> int:
    """The exit status a command stopped by `signum` gives: 128 + the signal's number (130, 143, 129)."""
    return 128 + signum


def before_the_package(outcome: Outcome) -> bool:
    """The case's signal ended the process by its default action before the package's first line (in the
    interpreter's own start-up, where no code of ours runs yet): killed by that very signal at the start
    phase, nothing written on stdout or stderr. A shell shows the same status, 128 + n, as our handling does;
    from the package's first line on (`interrupts.hold_from_start`) the signal is handled, so this cannot
    hide a later death by it."""
    fault = outcome.case.fault
    return (
        fault.kind == "signal"
        and fault.instant is not None
        and fault.instant.phase == START
        and outcome.status == -fault.signum
        and not outcome.stdout.strip()
        and not outcome.stderr.strip()
    )


def expected_status(outcome: Outcome) -> set[int]:
    """The exit statuses the case's fault allows."""
    fault = outcome.case.fault
    if fault.kind in ("signal", "kill"):
        if not outcome.fired:
            return {OK}  # the run ended before the instant came: it must have succeeded
        if before_the_package(outcome):
            return {-fault.signum}
        return {signal_status(fault.signum)} if fault.kind == "signal" else {-signal.SIGKILL}
    if fault.kind == "enospc":  # 2: refused before anything was written (the lock could not be taken)
        return {FAULT, BAD_ARGUMENT} if outcome.fired else {OK}
    if fault.kind == "tamper":
        return {OK, FAULT, BAD_ARGUMENT}
    if fault.kind == "stream":  # a closed pipe is the reader gone (`| head`): it has what it wanted, so exit 0
        return {OK} if fault.variant == "stdout_closed" else {FAULT} if fault.variant == "stdout_full" else {OK, FAULT}
    if fault.kind == "bad_out":
        return {BAD_ARGUMENT}
    if fault.kind == "agent":
        return {signal_status(signal.SIGINT), FAULT} if fault.variant == "catches_signals" else {FAULT}
    raise ValueError(f"no expected status for fault kind {fault.kind!r}")


def exit_status(outcome: Outcome) -> list[str]:
    """The exit status is the one the fault calls for (130/143/129, 1, 2, 0)."""
    allowed = expected_status(outcome)
    if outcome.status in allowed:
        return []
    return [f"exit status {outcome.status}, expected {' or '.join(map(str, sorted(allowed)))}"]


def one_line(outcome: Outcome) -> list[str]:
    """At most one line on stderr (blank lines aside) and no traceback (checked unless stderr was the fault)."""
    if outcome.case.fault.variant == "stderr_full":
        return []
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    problems = []
    if "Traceback" in outcome.stderr or "Exception ignored" in outcome.stderr:
        problems.append("a traceback on stderr: " + first_of(outcome.stderr, "Traceback", "Exception ignored"))
    if len(lines) > MAX_STDERR_LINES:
        problems.append(f"{len(lines)} lines on stderr, the last: {lines[-1][:160]!r}")
    return problems


def no_crash(outcome: Outcome) -> list[str]:
    """No abort, no segfault, no core dump, no hang: the process ended by itself or by the fault's signal."""
    if outcome.timed_out:
        return ["still running at the case's time limit (a hang)"]
    if (
        outcome.status < 0
        and not (outcome.case.fault.kind == "kill" and outcome.fired)
        and not before_the_package(outcome)
    ):
        return [f"killed by {signal.Signals(-outcome.status).name}"]
    return []


def unchanged_on_refusal(outcome: Outcome) -> list[str]:
    """A refused command (exit 2), or a resume of a complete run, changes no byte of the folder, lock,
    run.json, settings.json and tb/ included: the digest of every entry and its metadata is the same."""
    refused = outcome.status == BAD_ARGUMENT
    complete_resumed = outcome.case.fault.kind == "tamper" and outcome.case.command.resumes
    if not (refused or complete_resumed) or outcome.before is None:
        return []
    return changes(outcome.before, outcome.after, "the folder")


def nothing_outside(outcome: Outcome) -> list[str]:
    """Nothing created, changed or removed outside the named folder (the case's other files, a link's
    target, the working directory)."""
    return changes(outcome.outside_before, outcome.outside_after, "outside the folder")


def nothing_half_written(outcome: Outcome) -> list[str]:
    """No temporary `.partial` file left behind by a fault the command survived."""
    if outcome.case.fault.kind == "kill" or outcome.after is None:
        return []
    partial = [name for name in outcome.after if name.endswith(".partial")]
    return [f"left half-written: {', '.join(partial[:3])}"] if partial else []


def resumes_to_completion(outcome: Outcome) -> list[str]:
    """After a stop (a signal, SIGKILL, a full disk) the folder resumes with `--out DIR --resume` alone to
    completion, or that resume says in one line why not (exit 2)."""
    resumed = outcome.resumed
    if resumed is None:
        return []
    problems = []
    if resumed.status not in (OK, BAD_ARGUMENT):
        problems.append(f"--resume: exit status {resumed.status}: {last_line(resumed.stderr)!r}")
    lines = [line for line in resumed.stderr.splitlines() if line.strip()]
    if "Traceback" in resumed.stderr:
        problems.append("--resume: a traceback: " + first_of(resumed.stderr, "Traceback"))
    elif resumed.status == BAD_ARGUMENT and len(lines) > MAX_STDERR_LINES:
        problems.append(f"--resume refused in {len(lines)} lines")
    return problems


def same_as_unstopped(outcome: Outcome) -> list[str]:
    """Where the docs claim it, the resumed run's files equal those of the run that never stopped."""
    if outcome.resumed is None or outcome.resumed.status != OK or outcome.unstopped is None:
        return []
    problems = []
    for name, digest in outcome.unstopped.items():
        got = outcome.resumed.contents.get(name)
        if got != digest:
            problems.append(f"{name} after the resume differs from the run that never stopped")
    return problems


def names_the_agent(outcome: Outcome) -> list[str]:
    """A misbehaving user agent is named in the one line (its file's name)."""
    if outcome.case.fault.kind != "agent" or outcome.status == OK:
        return []
    return [] if "bad_agent" in outcome.stderr else [f"the line does not name the agent: {last_line(outcome.stderr)!r}"]


PROMISES = (
    exit_status,
    one_line,
    no_crash,
    unchanged_on_refusal,
    nothing_outside,
    nothing_half_written,
    resumes_to_completion,
    same_as_unstopped,
    names_the_agent,
)


def check(outcome: Outcome) -> list[str]:
    """Every promise's problems for `outcome`, each prefixed with the promise's name."""
    return [f"{promise.__name__}: {problem}" for promise in PROMISES for problem in promise(outcome)]


def changes(before: dict[str, str], after: dict[str, str] | None, where: str) -> list[str]:
    """What differs between two digests of a tree (`runner.digest`), as at most three lines."""
    if after is None:
        return []
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(name for name in set(before) & set(after) if before[name] != after[name])
    found = []
    for label, names in (("created", added), ("removed", removed), ("changed", changed)):
        if names:
            found.append(f"{label} {where}: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}")
    return found


def first_of(text: str, *markers: str) -> str:
    """The last line of the traceback that starts at the first of `markers` (the exception), clipped."""
    for marker in markers:
        if marker in text:
            tail = [line for line in text[text.index(marker) :].splitlines() if line.strip()]
            return tail[-1][:200] if tail else marker
    return ""


def last_line(text: str) -> str:
    """The last non-blank line of `text`, clipped."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
