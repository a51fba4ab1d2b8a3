"""The checkout is self-contained: its rules, its conformance data, and no path that leaves it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from strategic_reserve_env.files import records

from conftest import CONFORMANCE, REPO, conformance_records

# text that points outside the checkout: the old shared folder beside it, or this machine's layout
OUTSIDE = ("../shared", "shared/conformance", "SR_CONFORMANCE_DIR", "/work/")


def checkout_files() -> list[Path]:
    """The files of the checkout: git's tracked files, or every file when it is not a git checkout."""
    if (REPO / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
        return [REPO / name for name in listed.decode().split("\0") if name]
    skipped = {".git", "__pycache__", ".pytest_cache", ".hypothesis", "runs", "build"}
    return [
        path
        for path in REPO.rglob("*")
        if path.is_file()
        and not any(part in skipped or part.startswith(".venv") for part in path.relative_to(REPO).parts)
    ]


def readable_text(path: Path) -> str | None:
    """What a file says to a reader: a notebook's cell sources (not its stored outputs), a text
    file's text, None for a binary file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):
        return None
    if path.suffix == ".ipynb":
        return "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
    return text


def test_the_conformance_set_is_in_the_checkout():
    assert CONFORMANCE.resolve().is_relative_to(REPO.resolve())
    record_files = conformance_records()
    traces = sorted(CONFORMANCE.glob("*.trace.jsonl"))
    assert len(record_files) == len(traces) >= 35
    assert [t.name for t in traces] == [r.stem + ".trace.jsonl" for r in record_files]
    assert sorted(CONFORMANCE.iterdir()) == sorted(record_files + traces)  # nothing else, no stray file
    for path in record_files + traces:
        assert not path.is_symlink() and path.stat().st_size > 0, path
    for path in record_files:
        records.load_record(path)  # every record's header is valid


def test_the_conformance_set_is_committed():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout (e.g. an exported copy): nothing to compare with")
    tracked = {path.resolve() for path in checkout_files()}
    missing = [path.name for path in sorted(CONFORMANCE.iterdir()) if path.resolve() not in tracked]
    assert not missing, f"conformance files not committed: {missing}"


def test_no_file_points_outside_the_checkout():
    this = Path(__file__).resolve()
    offending = []
    for path in checkout_files():
        text = None if path.resolve() == this else readable_text(path)
        for needle in OUTSIDE:
            if text is not None and needle in text:
                offending.append(f"{path.relative_to(REPO)}: {needle}")
    assert not offending, offending


def test_the_rules_document_is_linked_and_complete():
    rules = (REPO / "docs" / "RULES.md").read_text()
    assert "designed by Mark Steere" in " ".join(rules.split())
    assert rules.count("**(reading)**") >= 4
    for heading in (
        "## Board and notation",
        "## Setup",
        "## A turn",
        "## What the environments add",
        "## Game records",
        "## Replay traces",
        "## Conformance set",
    ):
        assert heading in rules, heading
    assert "](docs/RULES.md)" in (REPO / "README.md").read_text()
    import strategic_reserve_env.envs.aec_env
    import strategic_reserve_env.files.records

    for module in (strategic_reserve_env, strategic_reserve_env.files.records, strategic_reserve_env.envs.aec_env):
        assert "docs/RULES.md" in Path(module.__file__).read_text(), module
