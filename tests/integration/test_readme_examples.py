"""The README's Python examples marked `# needs: module, ...` (tests/readme_blocks.py), run here, where
the RL libraries are installed; tests/test_docs.py runs the unmarked ones, and those needing only the
core venv's extra jax, in the core venv."""

from __future__ import annotations

import importlib.util

import pytest

from readme_blocks import python_blocks, run_as_a_reader_would

MARKED = [block for block in python_blocks() if not block.in_core_venv]  # the others run in the core venv


def test_the_readme_has_integration_examples():
    assert len(MARKED) >= 3


@pytest.mark.parametrize("block", MARKED, ids=lambda block: f"example-{block.number}-{'-'.join(block.needs)}")
def test_marked_readme_example_runs(block, monkeypatch, capsys):
    missing = [name for name in block.needs if importlib.util.find_spec(name.split(".")[0]) is None]
    assert not missing, f"{block.name}: {', '.join(missing)} not installed in this venv"
    run_as_a_reader_would(block, monkeypatch, capsys)
