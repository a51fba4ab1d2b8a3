"""Every long command under every fault of the catalogue, each case asserting the promises of `promises.py`
(issue 40, "What to build" 7): generated from `catalogue.COMMANDS` x `catalogue.faults`, so a new command or
run file is tested with no new test code here.

CI runs a bounded deterministic subset (`ci_case`: per command, one case of each kind of fault, chosen by a
stable hash of its id, about 3 minutes of CPU in `pytest -n 2`); `FAULTS=all` runs every case (long: the
hostile probe, `probe.py`, draws random cases from the same catalogue). A case that fails on main today is in
`KNOWN_DEFECTS` with the defect in one line: it runs as a strict xfail, so a fix shows as an XPASS failure
and its line goes.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalogue  # noqa: E402
import promises  # noqa: E402
import runner  # noqa: E402

pytestmark = pytest.mark.slow

CLI = runner.Cli([sys.executable, "-m", "strategic_reserve_env"])
CI_COMMANDS = ("train", "train-az", "evaluate", "benchmark")  # the distillation: the same folder as train's
# kinds of fault left to FAULTS=all and the probe for a command, to hold CI's time (train's long run, its resume
# and the run that never stopped: tests/test_train.py resumes after a kill and a signal)
CI_LEFT_OUT = {"train": ("signal", "kill"), "train-az": ("signal", "kill")}

# case id -> the defect it shows on main (one line). Strict xfails: a fixed defect fails as XPASS.
KNOWN_DEFECTS: dict[str, str] = {}


def ci_case(case: catalogue.Case) -> bool:
    """Whether `case` is in CI's subset: per command of `CI_COMMANDS`, the case of each fault kind whose id
    hashes lowest (stable across runs and machines)."""
    if case.command.name not in CI_COMMANDS or case.fault.kind in CI_LEFT_OUT.get(case.command.name, ()):
        return False
    same_kind = [
        other for other in catalogue.all_cases() if (other.command, other.fault.kind) == (case.command, case.fault.kind)
    ]
    return case == min(same_kind, key=lambda other: stable_hash(other.id))


def stable_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def parameters() -> list:
    every = os.environ.get("FAULTS") == "all"
    chosen = []
    for case in catalogue.all_cases():
        if not (every or ci_case(case)):
            continue
        marks = []
        if case.id in KNOWN_DEFECTS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[case.id]))
        chosen.append(pytest.param(case, id=case.id, marks=marks))
    return chosen


@pytest.fixture(scope="session")
def baselines(tmp_path_factory) -> runner.Baselines:
    """The baseline runs, shared by the xdist workers (their base temp folder's parent is common)."""
    shared = (
        tmp_path_factory.getbasetemp().parent
        if os.environ.get("PYTEST_XDIST_WORKER")
        else tmp_path_factory.getbasetemp()
    )
    return runner.Baselines(CLI, shared / "fault-baselines")


@pytest.mark.parametrize("case", parameters())
def test_a_command_under_a_fault_keeps_its_promises(case: catalogue.Case, tmp_path: Path, baselines) -> None:
    outcome = runner.run_case(case, CLI, tmp_path, baselines)
    if outcome.note.startswith("not applicable"):
        pytest.skip(outcome.note)
    problems = promises.check(outcome)
    assert not problems, f"{case.id} (exit {outcome.status}, {outcome.note}):\n" + "\n".join(problems)


def test_the_catalogue_gives_every_command_every_kind_of_fault() -> None:
    """Each command gets signals at every phase, a full disk, every tampering of every run file, the stream
    faults and the bad folders; the resumable ones SIGKILL, the ones taking agents the user agents."""
    for command in catalogue.COMMANDS:
        labels = {fault.label for fault in catalogue.faults(command)}
        for phase in command.phases:
            assert f"SIGINT@{phase.name}+0s" in labels
        assert ("SIGKILL@start+0s" in labels) == command.resumes
        for run_file in command.run_files:
            assert f"{run_file.name}:symlink" in labels and f"{run_file.name}:fifo" in labels
        assert {"stream:stdout_full", "bad_out:out_too_long", "bad_out:out_is_file", "enospc@write1"} <= labels
        assert ("agent:raises" in labels) == bool(command.agent_argv)


def test_the_full_disk_fails_the_chosen_write_and_every_later_one(tmp_path: Path) -> None:
    """The injector on its own: the 2nd open for writing inside the folder fails with ENOSPC, the 1st does
    not, a file outside is not counted."""
    code = (
        "import errno, os, sys\n"
        "root = sys.argv[1]\n"
        "open(os.path.join(root, 'a'), 'w').close()\n"
        "open(os.path.join(root, '..', 'outside'), 'w').close()\n"
        "for name in ('b', 'c'):\n"
        "    try:\n"
        "        os.open(os.path.join(root, name), os.O_WRONLY | os.O_CREAT)\n"
        "    except OSError as error:\n"
        "        print(name, errno.errorcode[error.errno])\n"
    )
    root = tmp_path / "root"
    root.mkdir()
    inject = {"FAULT_ROOT": str(root), "FAULT_LOG": str(tmp_path / "log"), "FAULT_ENOSPC_AT": "2"}
    ran, _ = runner.Cli([sys.executable, "-c", code]).run([str(root)], tmp_path, inject=inject)
    assert (ran.status, ran.stdout) == (0, "b ENOSPC\nc ENOSPC\n"), ran.stderr
    assert (root / "a").exists() and (tmp_path / "outside").exists() and not (root / "b").exists()


def test_a_checkpoints_content_is_its_arrays_but_the_runs_identity(tmp_path: Path) -> None:
    """Two runs of the same settings write the same arrays under different run ids: the resumed run is compared
    with the run that never stopped on what they computed, and a changed array still shows."""
    weights = np.arange(6, dtype=np.float32)
    np.savez(tmp_path / "a.npz", w=weights, run_id=np.frombuffer(b"aaaa", dtype=np.uint8))
    np.savez(tmp_path / "b.npz", w=weights, run_id=np.frombuffer(b"bbbb", dtype=np.uint8))
    np.savez(tmp_path / "c.npz", w=weights + 1, run_id=np.frombuffer(b"aaaa", dtype=np.uint8))
    digest = {name: runner.content_digest(tmp_path / f"{name}.npz") for name in "abc"}
    assert digest["a"] == digest["b"] != digest["c"]


@pytest.mark.parametrize("stderr, allowed", [("", True), ("error: stopped: interrupted (SIGINT, Ctrl-C)\n", False)])
def test_a_signal_in_the_interpreters_start_up_may_end_it_by_the_signal(stderr: str, allowed: bool) -> None:
    """Killed by the very signal at the start phase with nothing written: the interpreter had not run a line of
    the package (a shell shows 130 all the same); once a line is written the package handles the signal, so a
    death by it then is a crash."""
    command = next(command for command in catalogue.COMMANDS if command.name == "evaluate")
    fault = catalogue.Fault("signal", signal.SIGINT, catalogue.Instant(catalogue.START, 0.0))
    outcome = runner.Outcome(
        catalogue.Case(command, fault), -signal.SIGINT, "", stderr, False, True, None, None, {}, {}
    )
    problems = promises.exit_status(outcome) + promises.no_crash(outcome)
    assert (problems == []) is allowed, problems
