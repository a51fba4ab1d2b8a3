"""Without the `openspiel` extra (or on Python 3.10), the OpenSpiel module and agent say what is missing.

Each check runs in a fresh interpreter that hides `pyspiel` (or pretends to be Python 3.10), so it holds in
the main venv (no OpenSpiel) and in .venv-integrations (OpenSpiel installed) alike. The game itself is tested
in tests/integration/test_openspiel.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

HIDE_PYSPIEL = "import sys\nsys.modules['pyspiel'] = None  # import pyspiel now raises ImportError\n"


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_importing_the_module_without_openspiel_says_how_to_install_it():
    done = run_python(HIDE_PYSPIEL + "import strategic_reserve_env.envs.openspiel")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: strategic_reserve_env.envs.openspiel needs OpenSpiel")
    assert last.endswith("pip install 'strategic-reserve-env[openspiel]'")


def test_importing_the_module_on_python_3_10_says_it_needs_3_11():
    done = run_python(
        "import sys\nsys.version_info = (3, 10, 14, 'final', 0)\nimport strategic_reserve_env.envs.openspiel"
    )
    assert done.returncode == 1
    assert "ImportError: strategic_reserve_env.envs.openspiel needs Python 3.11 or newer" in done.stderr


@pytest.mark.slow
def test_the_mcts_agent_without_openspiel_is_a_bad_spec_for_evaluate():
    done = run_python(
        HIDE_PYSPIEL + "from strategic_reserve_env.commands.evaluate import main\n"
        "raise SystemExit(main(['openspiel-mcts:simulations=5', 'random', '--games', '2', '--no-progress']))"
    )
    assert done.returncode == 2, done.stderr  # refused before any game
    assert "agent spec 'openspiel-mcts:simulations=5'" in done.stderr
    assert "needs OpenSpiel" in done.stderr and "[openspiel]" in done.stderr
    assert "Traceback" not in done.stderr
