"""The README's Python examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO

PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.DOTALL)


def test_the_readme_has_python_examples():
    assert len(PYTHON_BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_example_runs(index, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    exec(compile(PYTHON_BLOCKS[index], f"README.md python example {index + 1}", "exec"), {"__name__": "__readme__"})
    if "print(" in PYTHON_BLOCKS[index]:
        assert capsys.readouterr().out.strip()


@pytest.mark.parametrize(
    "command, mentions",
    [
        (["train.py", "--help"], "--total-steps"),
        (["evaluate.py", "--help"], "--games"),
        (["-m", "agents.headroom", "--help"], "--rollouts"),
        (["-m", "strategic_reserve_env", "--help"], "replay"),
    ],
)
def test_readme_commands_explain_themselves(command, mentions):
    result = subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert mentions in result.stdout
