"""Runs one fault case (`catalogue.Case`) against a command line and records what happened (`Outcome`).

The command line is a prefix (`[python, "-m", "strategic_reserve_env"]`: the checkout's venv in the tests, a
wheel's venv in the probe). Each case gets a folder of its own, `work`: `work/run` is the `--out` it names,
`work/cwd` the empty working directory the command runs in, `work/outside` what a link points to; everything
but `work/run` is "outside the folder". `Baselines` holds, per command and once per session, a complete run
(tampered copies of it are resumed), another run (its files are "from another run"), the number of writes a
run makes (to place a full disk at the last ones) and the files of a run that never stopped.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from catalogue import START, Case, Command, RunFile

INJECT = Path(__file__).resolve().parent / "inject"  # the sitecustomize of the full disk
CASE_TIMEOUT = 240.0  # seconds a command of a case may run before it counts as a hang
PHASE_TIMEOUT = 150.0  # seconds to wait for a phase's line
AGENT_READY = "agent_ready"  # the file a user agent that catches signals creates in work/ when it is running
WRITES_LOG = "writes.log"  # the injector's log of the opens for writing
TOO_LONG = 300  # characters of one path component: over every file system's 255
HUGE = 2**70


@dataclass
class Ran:
    """One process of a case: exit status (negative: the signal that killed it), output, the digests."""

    status: int
    stdout: str
    stderr: str
    timed_out: bool
    contents: dict[str, str]  # content digests of the command's `same_after_resume` files after it


@dataclass
class Outcome:
    """What a case saw. `fired`: the fault happened (a signal sent before the process ended, the full disk
    reached); `before`/`after`: digests of the folder around the faulted command (None: not taken);
    `resumed`: the `--out DIR --resume` that followed; `unstopped`: the baseline's files to compare with."""

    case: Case
    status: int
    stdout: str
    stderr: str
    timed_out: bool
    fired: bool
    before: dict[str, str] | None
    after: dict[str, str] | None
    outside_before: dict[str, str]
    outside_after: dict[str, str] | None
    resumed: Ran | None = None
    unstopped: dict[str, str] | None = None
    note: str = ""


def from_a_shell() -> None:
    """`preexec_fn`: the signals a case sends at their default disposition and unblocked, as a shell starts a
    command (a child inherits an ignored or blocked signal)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def entry_digest(path: Path) -> str:
    """One entry's type, mode, size, modification time and contents (a link: its target; a FIFO or device:
    nothing is read)."""
    info = os.lstat(path)
    head = f"{stat.S_IFMT(info.st_mode):o}:{stat.S_IMODE(info.st_mode):o}:{info.st_size}:{info.st_mtime_ns}"
    if stat.S_ISLNK(info.st_mode):
        return f"{head}:->{os.readlink(path)}"
    if stat.S_ISREG(info.st_mode):
        with open(path, "rb") as handle:
            return f"{head}:{hashlib.sha256(handle.read()).hexdigest()}"
    return head


def digest(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every entry under `root` (links not followed), relative name -> `entry_digest`; `skip` left out."""
    found: dict[str, str] = {}
    if not os.path.lexists(root):
        return found
    if root.is_symlink() or not root.is_dir():
        return {".": entry_digest(root)}
    for folder, folders, files in os.walk(root, followlinks=False):
        for name in [*folders, *files]:
            path = Path(folder) / name
            if path in skip:
                continue
            found[str(path.relative_to(root))] = entry_digest(path)
        folders[:] = [name for name in folders if Path(folder) / name not in skip]
    return found


RUN_IDENTITY = ("run_id",)  # a checkpoint's tie to its run: another run's id by design, not a result


def content_digest(path: Path) -> str:
    """What a model or checkpoint file holds, metadata aside: its arrays (safetensors, npz) but the run's
    identity, else its bytes."""
    if not path.is_file():
        return "absent"
    hasher = hashlib.sha256()
    if path.suffix in (".safetensors", ".npz"):
        import numpy as np

        if path.suffix == ".safetensors":
            from safetensors.numpy import load_file

            arrays = load_file(str(path))
        else:
            with np.load(path, allow_pickle=False) as loaded:
                arrays = {name: loaded[name] for name in loaded.files if name not in RUN_IDENTITY}
        for name in sorted(arrays):
            hasher.update(name.encode() + np.ascontiguousarray(arrays[name]).tobytes())
    else:
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def contents(command: Command, out: Path) -> dict[str, str]:
    """Content digests of the command's `same_after_resume` files in `out`."""
    return {name: content_digest(out / name) for name in command.same_after_resume}


class Cli:
    """The command line under test (`prefix`) and the environment its processes get."""

    def __init__(self, prefix: list[str]) -> None:
        self.prefix = prefix

    def env(self, inject: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", JAX_PLATFORMS="cpu")  # lines as they come
        for name in ("FAULT_ROOT", "FAULT_LOG", "FAULT_ENOSPC_AT"):
            env.pop(name, None)
        if inject:
            env.update(inject)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(INJECT), env.get("PYTHONPATH", "")]))
        return env

    def run(
        self,
        argv: list[str],
        cwd: Path,
        stdout: object = subprocess.PIPE,
        stderr: object = subprocess.PIPE,
        inject: dict[str, str] | None = None,
        trigger: tuple[re.Pattern[str] | None, float, int] | None = None,
        ready: Path | None = None,
    ) -> tuple[Ran, bool]:
        """Run `prefix + argv`. `trigger` (pattern, delay, signal): once a line of stdout or stderr matches the
        pattern (None: at once), wait `delay` seconds and send the signal; `ready`: instead of a line, wait
        for this file to exist. Returns what ran and whether the signal was sent while the process ran."""
        process = subprocess.Popen(
            [*self.prefix, *argv],
            cwd=cwd,
            env=self.env(inject),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=from_a_shell,
        )
        seen = threading.Event()
        pattern = trigger[0] if trigger else None
        texts: dict[str, list[str]] = {"stdout": [], "stderr": []}

        def read(stream, name: str) -> None:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace")
                texts[name].append(line)
                if pattern is not None and pattern.search(line):
                    seen.set()
            stream.close()

        readers = [
            threading.Thread(target=read, args=(stream, name), daemon=True)
            for stream, name in ((process.stdout, "stdout"), (process.stderr, "stderr"))
            if stream is not None
        ]
        for reader in readers:
            reader.start()
        fired = False
        began = time.monotonic()
        if trigger is not None:
            _, delay, signum = trigger
            deadline = began + PHASE_TIMEOUT
            while process.poll() is None and time.monotonic() < deadline:
                if (ready is not None and ready.exists()) or (ready is None and (pattern is None or seen.is_set())):
                    break
                time.sleep(0.02)
            if process.poll() is None and time.monotonic() < deadline:
                time.sleep(delay)
                if process.poll() is None:
                    process.send_signal(signum)
                    fired = True
        timed_out = False
        try:
            process.wait(timeout=max(1.0, CASE_TIMEOUT - (time.monotonic() - began)))
        except subprocess.TimeoutExpired:
            timed_out = True
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(timeout=10)
        ran = Ran(process.returncode, "".join(texts["stdout"]), "".join(texts["stderr"]), timed_out, {})
        return ran, fired


class Baselines:
    """Per command, made once: a complete run, another run, the writes a run makes, an unstopped long run."""

    def __init__(self, cli: Cli, root: Path) -> None:
        self.cli = cli
        self.root = root

    def run_folder(self, command: Command, which: str) -> Path:
        """The folder of a finished run: `complete` (argv, its writes counted), `other` (other_argv) or
        `unstopped` (long_argv). Made once under `root`, shared by processes (pytest-xdist workers) through
        a lock file: the first to ask makes it, the others wait and reuse it."""
        work = self.root / f"{command.name}-{which}"
        out, log, done = work / "run", work / WRITES_LOG, work / "done"
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f"{command.name}-{which}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                shutil.rmtree(work, ignore_errors=True)
                (work / "cwd").mkdir(parents=True)
                argv = {"complete": command.argv, "other": command.other_argv, "unstopped": command.long_argv}
                inject = {"FAULT_ROOT": str(out), "FAULT_LOG": str(log), "FAULT_ENOSPC_AT": "0"}
                ran, _ = self.cli.run([*argv[which], "--out", str(out)], work / "cwd", inject=inject)
                if ran.status != 0:
                    raise RuntimeError(f"baseline {command.name} {which} failed ({ran.status}): {ran.stderr[-600:]}")
                done.touch()
        return out

    def write_count(self, command: Command) -> int:
        """How many opens for writing inside its folder a complete run of `command` makes."""
        log = self.run_folder(command, "complete").parent / WRITES_LOG
        return len(log.read_text().splitlines()) if log.exists() else 0


def matching(folder: Path, run_file: RunFile) -> Path | None:
    """The first entry of `folder` the run file's name (a glob) matches, or None."""
    found = sorted(folder.glob(run_file.name))
    return found[0] if found else None


def tamper(out: Path, other: Path, outside: Path, run_file: RunFile, how: str) -> bool:
    """Apply one tampering to `run_file` in `out`. Returns False when the folder has no such file."""
    path = matching(out, run_file)
    if path is None:
        return False
    folder = path.is_dir() and not path.is_symlink()
    if how == "missing":
        shutil.rmtree(path) if folder else path.unlink()
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "wrong_type":
        if folder:
            shutil.rmtree(path)
            path.write_text("a file where a folder belongs\n")
        elif run_file.kind in ("json", "jsonl"):
            path.write_text('["not", "an", "object"]\n')
        else:
            path.unlink()
            path.mkdir()
    elif how == "out_of_range":
        assert run_file.out_of_range is not None
        key, value = run_file.out_of_range
        data = json.loads(path.read_text())
        data[key] = value
        path.write_text(json.dumps(data))
    elif how == "other_run":
        source = other / path.relative_to(out)
        if not os.path.lexists(source):
            return False
        shutil.rmtree(path) if folder else path.unlink()
        shutil.copytree(source, path, symlinks=True) if source.is_dir() else shutil.copy2(source, path)
    elif how == "symlink":
        target = outside / path.name
        shutil.move(str(path), target)
        path.symlink_to(target)
    elif how == "fifo":
        shutil.rmtree(path) if folder else path.unlink()
        os.mkfifo(path)
    else:
        raise ValueError(f"unknown tampering {how!r}")
    return True


AGENTS = {
    "raises": "raise ValueError('the agent broke')",
    "exits": "sys.exit(0)",
    "sleeps": "time.sleep(30)",
    "keyboard_interrupt": "raise KeyboardInterrupt",
    "returns_huge": f"return [{HUGE}] * len(masks)",
    "catches_signals": (
        "signal.signal(signal.SIGINT, lambda *_: None)\n"
        "        open(READY, 'w').close()\n"
        "        try:\n"
        "            time.sleep(0.05)\n"
        "        except BaseException:\n"
        "            pass"
    ),
}


def scratch(work: Path) -> tuple[Path, ...]:
    """What a case's folder holds that is not the command's doing: the run folder itself, the injector's
    log, the agent's ready file."""
    return (work / "run", work / WRITES_LOG, work / AGENT_READY)


def agent_file(work: Path, variant: str) -> Path:
    """A user agent that misbehaves as `variant` says from its second call on (the first is legal)."""
    path = work / "agents" / "bad_agent.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        "import signal, sys, time\n\nimport numpy as np\n\n"
        f"READY = {str(work / AGENT_READY)!r}\ncalls = 0\n\n\n"
        "def act(observations, masks, rng):\n    global calls\n    calls += 1\n    if calls > 1:\n"
        f"        {AGENTS[variant]}\n"
        "    return np.argmax(masks, axis=-1)\n"
    )
    return path


def agent_argv(command: Command, spec: str, variant: str) -> list[str]:
    """The command's agent argv with `spec` as the user's agent (after the subcommand)."""
    argv = [command.agent_argv[0], spec, *command.agent_argv[1:]]
    return [*argv, "--act-timeout", "0.5"] if variant == "sleeps" else argv


def run_case(case: Case, cli: Cli, work: Path, baselines: Baselines) -> Outcome:
    """Run `case` in the empty folder `work` and return what it saw."""
    command, fault = case.command, case.fault
    for name in ("cwd", "outside"):
        (work / name).mkdir(parents=True, exist_ok=True)
    out = work / "run"
    argv = [*command.argv]
    trigger = None
    inject = None
    ready = None
    stdout: object = subprocess.PIPE
    stderr: object = subprocess.PIPE
    note = ""
    if fault.kind in ("signal", "kill"):
        assert fault.instant is not None
        argv = [*command.long_argv]
        pattern = None
        if fault.instant.phase != START:
            line = next(phase.line for phase in command.phases if phase.name == fault.instant.phase)
            pattern = re.compile(line)
        trigger = (pattern, fault.instant.delay, fault.signum)
    elif fault.kind == "enospc":
        writes = baselines.write_count(command)
        at = fault.write if fault.write > 0 else writes + 1 + fault.write
        note = f"write {at} of {writes}"
        inject = {"FAULT_ROOT": str(out), "FAULT_LOG": str(work / WRITES_LOG), "FAULT_ENOSPC_AT": str(max(at, 1))}
    elif fault.kind == "tamper":
        run_file = next(run_file for run_file in command.run_files if run_file.name == fault.run_file)
        if command.resumes:
            shutil.copytree(baselines.run_folder(command, "complete"), out, symlinks=True)
            argv = [command.argv[0], "--resume"]
        else:
            shutil.copytree(baselines.run_folder(command, "complete"), out, symlinks=True)
        other = baselines.run_folder(command, "other")
        if not tamper(out, other, work / "outside", run_file, fault.tampering):
            note = "not applicable: the folder has no such file"
    elif fault.kind == "stream":
        if fault.variant == "stdout_full":
            stdout = open(os.devnull.replace("null", "full"), "wb")  # noqa: SIM115 (closed below)
        elif fault.variant == "stderr_full":
            stderr = open(os.devnull.replace("null", "full"), "wb")  # noqa: SIM115
        else:
            read_end, write_end = os.pipe()
            os.close(read_end)
            stdout = write_end
    elif fault.kind == "bad_out":
        if fault.variant == "out_too_long":
            out = work / "parent" / ("n" * TOO_LONG)
        else:
            out.write_text("a file the user keeps\n")
    elif fault.kind == "agent":
        spec = f"{agent_file(work, fault.variant)}:act"
        argv = agent_argv(command, spec, fault.variant)
        if fault.variant == "catches_signals":
            ready = work / AGENT_READY
            trigger = (None, 0.2, int(signal.SIGINT))
    before = digest(out) if os.path.lexists(out) and not out.is_symlink() else None
    outside_before = digest(work, skip=scratch(work))
    ran, fired = cli.run([*argv, "--out", str(out)], work / "cwd", stdout, stderr, inject, trigger, ready)
    for stream in (stdout, stderr):
        if isinstance(stream, int) and stream >= 0:
            os.close(stream)
        elif hasattr(stream, "close"):
            stream.close()
    if fault.kind == "enospc":
        log = work / WRITES_LOG
        fired = log.exists() and len(log.read_text().splitlines()) >= int(inject["FAULT_ENOSPC_AT"])  # type: ignore[index]
    if fault.kind == "agent" and fault.variant != "catches_signals":
        fired = True
    if fault.kind == "kill":  # SIGKILL cannot be caught: any other status is a process already ending as it came
        fired = fired and ran.status == -signal.SIGKILL
    after = digest(out) if os.path.lexists(out) and not out.is_symlink() else None
    outcome = Outcome(
        case, ran.status, ran.stdout, ran.stderr, ran.timed_out, fired, before, after,
        outside_before, digest(work, skip=scratch(work)), note=note,
    )  # fmt: skip
    stopped = fault.kind in ("signal", "kill", "enospc") and fired and not ran.timed_out
    if command.resumes and stopped:
        resumed, _ = cli.run([command.argv[0], "--out", str(out), "--resume"], work / "cwd")
        resumed.contents = contents(command, out) if resumed.status == 0 else {}
        outcome.resumed = resumed
        if command.same_after_resume and resumed.status == 0 and fault.kind != "enospc":
            outcome.unstopped = contents(command, baselines.run_folder(command, "unstopped"))
    return outcome
