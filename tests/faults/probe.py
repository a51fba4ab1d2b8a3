"""The hostile probe (issue 40, "Done when"): N random cases of the fault catalogue against an installed wheel.

    python tests/faults/probe.py --wheel dist/strategic_reserve_env-X.whl --probes 300 --seed 0 --out probes/

It builds nothing: it installs the given wheel (with its `train` and `mctx` extras, from pip's cache and the
local wheels pip is configured with, as tests/wheel/check.sh does) into a fresh venv, or uses `--venv DIR`
where that venv already holds it. Each probe is a case of `catalogue.all_cases()` drawn with `--seed`, its
instant, full-disk write and delay drawn too (signals at random instants, every run file tampered, full disks,
user agents that misbehave); `runner.run_case` runs it and `promises.check` judges it, as the pytest harness
does. Each result is appended to OUT/report.jsonl as it comes (case, expectation, what happened, pass/fail,
the classes of its problems), so a probe may be run in chunks (`--first K`: skip the first K draws) into one
OUT; `--summary` writes OUT/report.md from every line there (totals, failures by class) and prints it;
`--again OLD/report.jsonl` runs the failed cases of an earlier probe again, each as it was drawn (after a fix).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalogue  # noqa: E402
import promises  # noqa: E402
import runner  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MAX_DELAY = 3.0  # seconds after a phase's line, drawn uniformly
MAX_EARLY_WRITE = 12  # a full disk at a write drawn in 1..this, or counted from the last one
MAX_LATE_WRITE = 4


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help="the wheel to install (built elsewhere)")
    parser.add_argument("--venv", type=Path, help="a venv to use (made and the wheel installed when missing)")
    parser.add_argument("--probes", type=int, default=300, help="cases to draw")
    parser.add_argument("--first", type=int, default=0, help="skip the first K draws (run in chunks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--commands", nargs="*", help="draw only cases of these commands")
    parser.add_argument("--out", type=Path, required=True, help="folder of report.jsonl and report.md")
    parser.add_argument("--summary", action="store_true", help="only write and print OUT/report.md")
    parser.add_argument(
        "--again", type=Path, help="instead of drawing: the failed cases of this earlier report.jsonl, each as it was"
    )
    return parser.parse_args(argv)


def venv_python(args: argparse.Namespace) -> Path:
    """The venv's python, the wheel installed into it first when it is not there."""
    venv = args.venv or args.out / "venv"
    python = venv / "bin" / "python"
    probe = [
        str(python),
        "-c",
        "import strategic_reserve_env, sys; sys.exit('site-packages' not in strategic_reserve_env.__file__)",
    ]
    if python.exists() and subprocess.run(probe, capture_output=True, cwd="/").returncode == 0:
        return python
    if args.wheel is None:
        sys.exit(f"probe: {venv} does not hold the package: give --wheel")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-compile", "-c", str(REPO / "constraints-cpu.txt"),
         f"{args.wheel.resolve()}[train,mctx]"],
        check=True,
    )  # fmt: skip
    return python


def drawn(rng: random.Random, cases: list[catalogue.Case]) -> catalogue.Case:
    """One case, its instant or write drawn at random."""
    case = rng.choice(cases)
    fault = case.fault
    if fault.instant is not None:
        instant = catalogue.Instant(fault.instant.phase, round(rng.uniform(0.0, MAX_DELAY), 2))
        fault = dataclasses.replace(fault, instant=instant)
    elif fault.kind == "enospc":
        write = rng.randint(1, MAX_EARLY_WRITE) if rng.random() < 0.5 else -rng.randint(1, MAX_LATE_WRITE)
        fault = dataclasses.replace(fault, write=write)
    return dataclasses.replace(case, fault=fault)


def as_drawn(case_id: str, cases: list[catalogue.Case]) -> catalogue.Case:
    """The case `case_id` names (`command/label`, as `drawn` made it: its instant's delay, its full disk's write)."""
    for case in cases:
        fault = case.fault
        if fault.instant is not None:
            delay = case_id.rpartition("+")[2].removesuffix("s")
            instant = catalogue.Instant(fault.instant.phase, float(delay) if delay.replace(".", "").isdigit() else 0)
            case = dataclasses.replace(case, fault=dataclasses.replace(fault, instant=instant))
        elif fault.kind == "enospc":
            write = case_id.rpartition("@write")[2]
            if write.lstrip("-").isdigit():
                case = dataclasses.replace(case, fault=dataclasses.replace(fault, write=int(write)))
        if case.id == case_id:
            return case
    raise ValueError(f"no case of the catalogue is {case_id!r}")


def expectation(outcome: runner.Outcome) -> str:
    """What the case expected, in words."""
    statuses = " or ".join(map(str, sorted(promises.expected_status(outcome))))
    extra = ", then --resume to completion" if outcome.resumed is not None else ""
    return f"exit {statuses}, at most one line, no traceback, the folder as promised{extra}"


def happened(outcome: runner.Outcome) -> str:
    """What happened, in words."""
    line = promises.last_line(outcome.stderr)
    resumed = f"; --resume: exit {outcome.resumed.status}" if outcome.resumed is not None else ""
    timed = outcome.case.fault.kind in ("signal", "kill", "enospc")
    fired = " (the fault did not fire: the run ended first)" if timed and not outcome.fired else ""
    return f"exit {outcome.status}{fired}: {line!r}{resumed}"


def classes(problems: list[str], case: catalogue.Case) -> list[str]:
    """The classes of a case's problems: the promise broken, by command and kind of fault."""
    return sorted({f"{problem.split(':')[0]} / {case.command.name} / {case.fault.kind}" for problem in problems})


def summary(out: Path) -> str:
    """The report of every probe in OUT/report.jsonl, as Markdown."""
    results = [json.loads(line) for line in (out / "report.jsonl").read_text().splitlines() if line.strip()]
    ran = [result for result in results if result["result"] != "skip"]
    failed = [result for result in ran if result["result"] == "fail"]
    by_class = collections.Counter(name for result in failed for name in result["classes"])
    lines = [
        "# Hostile probe",
        "",
        f"{len(ran)} probes run ({len(results) - len(ran)} not applicable), {len(ran) - len(failed)} passed, "
        f"{len(failed)} failed.",
        "",
        "| failures | class (promise / command / fault) |",
        "|---:|---|",
        *(f"| {count} | {name} |" for name, count in by_class.most_common()),
        "",
        "| # | case | result | what happened | problems |",
        "|---:|---|---|---|---|",
    ]
    for result in results:
        problems = "; ".join(result["problems"])[:300].replace("|", "/")
        lines.append(
            f"| {result['draw']} | {result['case']} | {result['result']} | "
            f"{result['happened'][:160].replace('|', '/')} | {problems} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.summary:
        text = summary(args.out)
        (args.out / "report.md").write_text(text)
        print(text)
        return 0
    cli = runner.Cli([str(venv_python(args)), "-m", "strategic_reserve_env"])
    cases = [case for case in catalogue.all_cases() if not args.commands or case.command.name in args.commands]
    rng = random.Random(args.seed)
    draws = [drawn(rng, cases) for _ in range(args.first + args.probes)][args.first :]
    if args.again is not None:
        earlier = [json.loads(line) for line in args.again.read_text().splitlines() if line.strip()]
        draws = [as_drawn(result["case"], cases) for result in earlier if result["result"] == "fail"]
    baselines = runner.Baselines(cli, args.out / "baselines")
    with open(args.out / "report.jsonl", "a") as report:
        for number, case in enumerate(draws, start=args.first):
            work = Path(tempfile.mkdtemp(prefix="probe-", dir=args.out))
            began = time.monotonic()
            try:
                outcome = runner.run_case(case, cli, work, baselines)
                problems = promises.check(outcome)
                result = "skip" if outcome.note.startswith("not applicable") else "fail" if problems else "pass"
                record = {"expectation": expectation(outcome), "happened": happened(outcome)}
            except Exception as error:  # the probe's own failure on one case: recorded, the others go on
                problems, result = [f"probe: {type(error).__name__}: {error}"], "fail"
                record = {"expectation": "", "happened": "the probe itself failed"}
            finally:
                shutil.rmtree(work, ignore_errors=True)
            entry = {
                "draw": number, "case": case.id, "result": result, **record, "problems": problems,
                "classes": classes(problems, case), "seconds": round(time.monotonic() - began, 1),
            }  # fmt: skip
            report.write(json.dumps(entry) + "\n")
            report.flush()
            print(f"{number:4d} {result:4s} {entry['seconds']:6.1f}s {case.id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
