#!/usr/bin/env bash
# The wheel as a user gets it (`make test-wheel`, part of `make test`): build it, install it (not editable, with
# its train extra) in a fresh venv outside the checkout, then run the env's PettingZoo API test and the console
# commands with the shipped models, once from an empty folder and once from a folder holding packages of its own
# named agents/ and evaluation/ (a researcher's project). Nothing here reads the checkout but to build the wheel.
#
#   tests/wheel/check.sh BUILD_PYTHON VENV_PYTHON
#     BUILD_PYTHON: builds the wheel (has setuptools: .venv's); VENV_PYTHON: makes the fresh venv (python3.11)
# Dependencies come from pip's cache and the local wheels pip is configured with; --no-compile skips writing
# .pyc files for torch and the rest (about half the install's time).
set -euo pipefail

build_python="$1"
venv_python="$2"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/strategic-reserve-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP_WHEEL_VENV:-}" ] && trap - EXIT  # keep it to look at
passed=0
failed=0

step() {  # step NAME COMMAND...: run COMMAND, count it, show its output only when it fails
    local name="$1"
    shift
    local began
    began=$(seconds)
    if "$@" >"$work/step.log" 2>&1; then
        passed=$((passed + 1))
        echo "wheel: ok    $(($(seconds) - began)) s  $name"
    else
        failed=$((failed + 1))
        echo "wheel: FAIL  $(($(seconds) - began)) s  $name"
        sed 's/^/    /' "$work/step.log"
    fi
}

seconds() { date +%s; }

start=$(seconds)
# from a copy of the checkout's files (tracked and untracked, not ignored): a build/ left in the checkout
# would carry stale modules into the wheel
mkdir "$work/src"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
    (cd "$repo" && tar --null --ignore-failed-read -cf - -T - 2>/dev/null) | tar -xf - -C "$work/src"
"$build_python" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/dist" "$work/src" >/dev/null
wheel="$(ls "$work"/dist/strategic_reserve_env-*.whl)"
built=$(seconds)
"$venv_python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-compile -c "$repo/constraints-cpu.txt" "$wheel[train]" 2>&1 |
    grep -v "is ignored: it is neither a file nor a directory" || true
installed=$(seconds)
echo "wheel: built $(basename "$wheel") in $((built - start)) s; fresh venv with its train extra in $((installed - built)) s"
export PATH="$work/venv/bin:$PATH"
export OMP_NUM_THREADS=1  # torch: one thread for these small networks (many times faster on busy cores)
python="$work/venv/bin/python"

top_level="$("$python" -c "import importlib.metadata as m; print(m.distribution('strategic-reserve-env').read_text('top_level.txt').split())")"
echo "wheel: top_level.txt: $top_level"
step "one top-level name" test "$top_level" = "['strategic_reserve_env']"

# an agent of the user's own, as a file
cat >"$work/my_agent.py" <<'PY'
import numpy as np


def act(observation, action_mask, rng=None):
    """The first legal square."""
    return int(np.flatnonzero(action_mask)[0])
PY

# the installed package, not the checkout, and nothing bare from the user's folder
read -r -d '' api_test <<'PY' || true
import strategic_reserve_env
from pettingzoo.test import api_test

from strategic_reserve_env.agents import load_agent

assert "site-packages" in strategic_reserve_env.__file__, strategic_reserve_env.__file__
api_test(strategic_reserve_env.env(), num_cycles=200)
print("api_test passed; the shipped models load:", load_agent("ppo").name, load_agent("value").name)
PY

# a game against the shipped PPO: every square in turn until one is legal, to the end of the game
squares="$(for rank in 1 2 3 4 5 6; do for file in a b c d e f; do echo "$file$rank"; done; done)"
play_input() { for _ in $(seq 60); do echo "$squares"; done; }

check_folder() {  # check_folder DIR LABEL PLAY...: every command, run from DIR; PLAY: the command that plays
    local dir="$1" label="$2"
    shift 2
    cp "$work/my_agent.py" "$dir/"
    cd "$dir"
    step "$label: PettingZoo api_test" "$python" -c "$api_test"
    step "$label: strategic-reserve evaluate random greedy --games 20" \
        strategic-reserve evaluate random greedy --games 20 --no-progress
    step "$label: strategic-reserve benchmark my_agent.py:act --benchmark-games 50" \
        strategic-reserve benchmark my_agent.py:act --benchmark-games 50 --no-progress --out card
    step "$label: $* play --opponent ppo (scripted to the end of a game), then replay its record" \
        bash -c "$(declare -f play_input); squares='$squares'; play_input |
            timeout 300 $* play --opponent ppo --seed 3 --save game.json | tail -n 3 &&
            strategic-reserve replay game.json | tail -n 1 | grep -q '\"winner\"'"
    cd "$work"
}

mkdir "$work/empty"
check_folder "$work/empty" "empty folder" strategic-reserve

# the README's Python examples, run by the wheel's interpreter from an empty folder (no file of the checkout)
mkdir "$work/readme"
cd "$work/readme"
step "README's Python examples, from an empty folder" "$python" "$work/src/tests/wheel/run_readme.py" "$work/src/README.md"
step "strategic-reserve rules prints the rules shipped in the wheel" \
    bash -c "strategic-reserve rules | grep -q '^\*\*Ply numbers\.\*\*'"
cd "$work"

# a user's script type-checked against the installed package (py.typed): real types, not Any
"$work/venv/bin/python" -m pip install --quiet --no-compile "mypy==2.4.1" 2>&1 |
    grep -v "is ignored: it is neither a file nor a directory" || true
mkdir "$work/typed"
cp "$work/src/tests/wheel/user_script.py" "$work/typed/"
cd "$work/typed"
step "mypy on a user's script against the installed wheel" "$python" -m mypy user_script.py
cd "$work"

# a researcher's project: its own agents/ and evaluation/ packages, which must not shadow the installed ones
mkdir -p "$work/project/agents" "$work/project/evaluation"
echo 'raise ImportError("the project'"'"'s own agents package was imported")' >"$work/project/agents/__init__.py"
echo 'raise ImportError("the project'"'"'s own evaluation package was imported")' >"$work/project/evaluation/__init__.py"
# (python -m puts the folder first on sys.path, as python -c does for the API test)
check_folder "$work/project" "folder with its own agents/" "$python" -m strategic_reserve_env

times >"$work/times"  # the shell's, then its children's user and system CPU time
echo "wheel: $(($(seconds) - start)) s in all; CPU time of the commands (user, system): $(tail -n 1 "$work/times")"
echo "wheel: $passed passed, $failed failed"
test "$failed" -eq 0
