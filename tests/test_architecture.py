"""docs/ARCHITECTURE.md's table from module to test files cannot go stale: every module of the package has a row,
and every row names a module that exists and test files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

from conftest import REPO

ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
TABLE_HEADING = "## Where each module is tested"
ROW = re.compile(r"^\|\s*(?P<module>[^|]+?)\s*\|\s*(?P<tests>[^|]+?)\s*\|$")


def package_folders() -> list[Path]:
    """The folders the installed package is made of: `strategic_reserve_env/` and those pyproject.toml maps into it
    (`[tool.setuptools.package-dir]`)."""
    with open(REPO / "pyproject.toml", "rb") as file:
        mapped = tomllib.load(file)["tool"]["setuptools"]["package-dir"]
    return [REPO / "strategic_reserve_env", *(REPO / folder for folder in mapped.values())]


def package_modules() -> set[str]:
    """Every module of the package, as a path from the repository's root."""
    return {path.relative_to(REPO).as_posix() for folder in package_folders() for path in folder.rglob("*.py")}


def table() -> dict[str, list[str]]:
    """The rows of the table under `TABLE_HEADING`: module -> its test files, both as paths from the root."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert TABLE_HEADING in text, f"docs/ARCHITECTURE.md has no section {TABLE_HEADING!r}"
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        match = ROW.match(line.strip())
        if match is None or match["module"] in ("module", "---"):
            continue
        assert match["module"] not in rows, f"{match['module']} has two rows"
        rows[match["module"]] = [name.strip() for name in match["tests"].split(",")]
    return rows


def test_the_table_is_read_whole():
    """Each table line but the header and its rule is a row read, each naming at least one test file."""
    section = ARCHITECTURE.read_text(encoding="utf-8").split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    rows = table()
    assert len(rows) == len(lines) - 2 > 0
    assert all(tests and all(tests) for tests in rows.values())


def test_every_module_of_the_package_has_a_row():
    missing = sorted(package_modules() - set(table()))
    assert not missing, f"modules with no row in docs/ARCHITECTURE.md's {TABLE_HEADING!r}: {missing}"


def test_every_row_names_a_module_that_exists():
    gone = sorted(set(table()) - package_modules())
    assert not gone, f"rows of docs/ARCHITECTURE.md naming no module of the package: {gone}"


def test_every_row_names_test_files_that_exist():
    named = {name for tests in table().values() for name in tests}
    absent = sorted(name for name in named if not (name.startswith("tests/") and (REPO / name).is_file()))
    assert not absent, f"test files named in docs/ARCHITECTURE.md that do not exist: {absent}"
