"""The package as a library people install: its version, the rules it ships, one-line errors for a missing extra,
agent specs in the Gymnasium env, actions out of range, and one ply numbering in every view of a game."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
import tomllib

import strategic_reserve_env
from strategic_reserve_env import Game, IllegalActionError, env
from strategic_reserve_env.__main__ import COMMANDS, main
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.commands import show_rules as rules
from strategic_reserve_env.commands.terminal import PROMPT, terminal_game
from strategic_reserve_env.core.board import parse_square
from strategic_reserve_env.envs.gym_env import StrategicReserveEnv, StrategicReserveVectorEnv
from strategic_reserve_env.extras import (
    EXIT_MISSING_EXTRA,
    EXTRAS,
    TORCH_CPU_INDEX,
    TORCH_CPU_LINE,
    TORCH_REQUIREMENT,
    install_line,
    needs_extra,
)
from strategic_reserve_env.files import records

from conftest import REPO


def run_python(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter from the checkout (so that a library can be hidden before anything
    imports it)."""
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


# -- version ---------------------------------------------------------------------------------------------------


def test_the_version_is_one_number_everywhere(capsys):
    with open(REPO / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "strategic_reserve_env.version.__version__"}
    assert importlib.metadata.version("strategic-reserve-env") == strategic_reserve_env.__version__ == "0.4.0"
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.split() == ["strategic-reserve", strategic_reserve_env.__version__]
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(strategic_reserve_env.__version__)} \(\d{{4}}-\d\d-\d\d\)$", changelog, re.M)
    for page in ("README.md", "docs/installation.md"):  # the wheel the docs install is this release's
        wheels = set(re.findall(r"strategic_reserve_env-([\d.]+)-py3-none-any\.whl", (REPO / page).read_text()))
        assert wheels == {strategic_reserve_env.__version__}, page


def test_every_file_a_run_writes_names_the_package_version(tmp_path, capsys):
    """benchmark.json, results.json and run.json say which release wrote them (two score cards of different
    releases can be told apart)."""
    from strategic_reserve_env.evaluation.benchmark_protocol import run_benchmark
    from strategic_reserve_env.files import outputs

    version = strategic_reserve_env.__version__
    assert run_benchmark("random", games=2, progress=False).as_json()["package_version"] == version
    assert main(["evaluate", "random", "greedy", "--games", "2", "--no-progress", "--out", str(tmp_path / "t")]) == 0
    assert json.loads((tmp_path / "t" / "results.json").read_text())["package_version"] == version
    outputs.write_run(tmp_path, outputs.new_run_id(), "train")
    assert json.loads((tmp_path / outputs.RUN_FILE).read_text())["package_version"] == version


def test_the_licence_and_the_designer_are_in_the_metadata():
    metadata = importlib.metadata.metadata("strategic-reserve-env")
    assert "License :: OSI Approved :: MIT License" in metadata.get_all("Classifier")
    assert "Mark Steere" in metadata["Summary"]
    urls = dict(value.split(", ", 1) for value in metadata.get_all("Project-URL"))
    assert urls["Game rules (designer: Mark Steere)"] == "https://www.marksteeregames.com/"
    assert not [url for url in urls.values() if "OWNER" in url]  # no placeholder address (issue 41)
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert (REPO / "strategic_reserve_env" / "py.typed").is_file()


# -- the rules, shipped --------------------------------------------------------------------------------------------


def test_the_rules_command_prints_the_rules_of_the_repository(capsys):
    assert main(["rules"]) == 0
    assert capsys.readouterr().out == rules.brief() + (REPO / "docs" / "RULES.md").read_text(encoding="utf-8")
    assert main(["rules", "--path"]) == 0
    assert capsys.readouterr().out.strip() == str((REPO / "docs" / "RULES.md").resolve())


def _plain(markdown: str) -> str:
    """Markdown as read: emphasis and code marks dropped, every run of white space one space."""
    return " ".join(re.sub(r"\*\*|`", "", markdown).split())


def test_the_rules_command_reaches_the_goal_of_the_game_in_its_first_screen(capsys):
    assert main(["rules"]) == 0
    screen = capsys.readouterr().out.splitlines()[: rules.SCREEN_LINES]
    assert "A player whose placement leaves its own reserve empty wins at once" in " ".join(screen)
    assert len(rules.brief().splitlines()) <= rules.SCREEN_LINES  # the whole brief, not only the goal
    assert all(len(line) <= rules.WIDTH for line in rules.brief().splitlines())
    text = _plain((REPO / "docs" / "RULES.md").read_text(encoding="utf-8"))
    winning = text[text.index("Winning.") :]
    assert winning.startswith("Winning. " + rules.BRIEF[0][1])  # the goal is the rules' own "Winning" item
    for topic, quote in rules.BRIEF:  # every fact of the brief, word for word in the rules
        for passage in quote.split(rules.ELISION):
            assert passage in text, (topic, passage)

    """A wheel has no docs/ folder: messages name the command that prints the rules."""
    from strategic_reserve_env.commands.terminal import INTRODUCTION

    assert "strategic-reserve rules" in INTRODUCTION
    assert not re.search(r"RULES\.md in the (project's )?repository", INTRODUCTION)


# -- one line naming the extra when a library is missing ---------------------------------------------------------


def hidden(modules: tuple[str, ...], then: str) -> subprocess.CompletedProcess:
    """Run `then` with `modules` made unimportable (as if not installed)."""
    block = "".join(f"sys.modules[{name!r}] = None\n" for name in modules)
    return run_python(f"import sys\n{block}{then}")


@pytest.mark.parametrize(
    "modules, argv, library, extra",
    [
        (("scipy",), ["evaluate", "random", "greedy", "--games", "2", "--no-progress"], "scipy", "train"),
        (("torch",), ["train", "--help"], "torch", "train"),
        (("tensorboard",), ["train", "--out", "{tmp}/run"], "tensorboard", "train"),
        (("ray",), ["train-rllib", "--out", "{tmp}/run"], "ray", "rllib"),
        (("torch",), ["play", "--opponent", "ppo", "--seed", "1"], "torch", "train"),
        (("jax",), ["bench", "--jax", "--batch-sizes", "4"], "jax", "jax"),
        (("mctx",), ["train-az", "--out", "{tmp}/run"], "mctx", "mctx"),
        (("jax",), ["train-az", "--out", "{tmp}/run"], "jax", "mctx"),
        (("mctx",), ["evaluate", "mctx", "random", "--games", "2", "--no-progress"], "mctx", "mctx"),
    ],
    ids=[
        "evaluate-scipy",
        "train-torch",
        "train-tensorboard",
        "train-rllib-ray",
        "play-ppo-torch",
        "bench-jax",
        "train-az-mctx",
        "train-az-jax",
        "mctx-agent",
    ],
)
def test_a_command_missing_a_library_says_which_extra_in_one_line(modules, argv, library, extra, tmp_path):
    """One rule (strategic_reserve_env/extras.py): the hint names the extra that brings the library for this
    command (train-rllib's torch comes with [rllib], train-az's jax with [mctx]), the exit status is one for
    every command, and a command's declared extras are checked before it writes anything."""
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    done = hidden(modules, f"from strategic_reserve_env.__main__ import main\nsys.exit(main({argv!r}))")
    assert done.returncode == EXIT_MISSING_EXTRA == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"needs {library}, which is not installed: pip install " in lines[0]
    assert lines[0].endswith(f"pip install 'strategic-reserve-env[{extra}]'")
    assert (TORCH_CPU_LINE in lines[0]) == (library == "torch")  # torch's CPU build first, when torch is missing
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_the_hint_names_the_extra_the_command_declares_that_brings_the_library():
    """torch comes with [train] and with [rllib]: train-rllib (which declares rllib) is told [rllib]."""
    torch_missing = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert needs_extra(torch_missing, "train-rllib", ("rllib",)).extra == "rllib"
    assert needs_extra(torch_missing, "evaluate").extra == "train"
    assert needs_extra(ModuleNotFoundError("", name="jax.numpy"), "train-az", ("mctx",)).extra == "mctx"
    assert needs_extra(ModuleNotFoundError("", name="no_such_module"), "train") is None


def test_every_extra_of_the_registry_is_one_of_pyproject():
    """The extras the commands declare and EXTRAS lists are those pyproject.toml defines."""
    with open(REPO / "pyproject.toml", "rb") as file:
        defined = set(tomllib.load(file)["project"]["optional-dependencies"])
    assert set(EXTRAS) <= defined
    assert {extra for command in COMMANDS.values() for extra in command.extras} <= set(EXTRAS)
    assert {name for name, command in COMMANDS.items() if command.extras} == {"train", "train-rllib", "train-az"}


def test_an_agent_spec_missing_its_library_is_a_missing_extra_error():
    done = hidden(
        ("torch",),
        "from strategic_reserve_env.agents import load_agent\n"
        "from strategic_reserve_env.extras import MissingExtraError\n"
        "try:\n    load_agent('ppo')\n"
        "except MissingExtraError as error:\n"
        "    print(isinstance(error, ImportError), isinstance(error, ValueError), error.extra, error)\n",
    )
    assert done.stdout.split(" ", 3) == [
        "True",
        "True",
        "train",
        "agent spec 'ppo' needs torch, which is not installed: pip install torch==2.13.0 --index-url "
        "https://download.pytorch.org/whl/cpu, then pip install 'strategic-reserve-env[train]'\n",
    ], done.stderr


def test_the_hint_the_makefile_and_the_docs_install_the_same_cpu_torch():
    """One install story (issue 41): the hint for an extra that brings torch, the Makefile's bootstrap, the README
    and the installation page name the same command for torch's CPU build; the hint leaves it out once torch is
    installed, and for an extra without torch."""
    makefile = (REPO / "Makefile").read_text()
    assert re.search(rf"^TORCH \?= {re.escape(TORCH_REQUIREMENT)}$", makefile, re.M)
    assert re.search(rf"^TORCH_INDEX := {re.escape(TORCH_CPU_INDEX)}$", makefile, re.M)
    assert re.search(r"^INSTALL := install\b", makefile, re.M)  # pip's command, with the Makefile's flags
    assert re.search(r'pip (install|\$\(INSTALL\)) .*"\$\(TORCH\)" --index-url \$\(TORCH_INDEX\)', makefile)
    assert f"{TORCH_REQUIREMENT}\n" in (REPO / "constraints-cpu.txt").read_text()
    assert TORCH_CPU_LINE == f"pip install {TORCH_REQUIREMENT} --index-url {TORCH_CPU_INDEX}"
    for page in ("README.md", "docs/installation.md"):
        text = (REPO / page).read_text()
        assert TORCH_CPU_LINE in text, page
        assert not re.search(r"pip install torch==[\d.]+ *(#|$)", text, re.M), page  # PyPI's torch: CUDA on Linux
    done = hidden(("torch",), "from strategic_reserve_env.extras import install_line\nprint(install_line('rllib'))")
    assert done.stdout == f"{TORCH_CPU_LINE}, then pip install 'strategic-reserve-env[rllib]'\n", done.stderr
    if importlib.util.find_spec("torch") is not None:
        assert install_line("train") == "pip install 'strategic-reserve-env[train]'"
    assert install_line("jax") == "pip install 'strategic-reserve-env[jax]'"


# -- Gymnasium: agent specs, actions out of range, the checker without pygame -----------------------------------------


def test_gymnasium_make_takes_every_agent_spec(tmp_path):
    """The opponent by spec plays as the agent loaded by the same spec passed as an object."""
    (tmp_path / "mine.py").write_text(
        "import numpy as np\n\ndef act(observation, action_mask, rng=None):\n"
        "    return int(np.flatnonzero(action_mask)[-1])\n"
    )
    for spec in ("greedy", "expectimax:depth=1", f"{tmp_path / 'mine.py'}:act"):
        by_spec = gymnasium.make("StrategicReserve-v1", opponent=spec, seat="blue")
        by_object = StrategicReserveEnv(opponent=load_agent(spec), seat="blue")
        for made in (by_spec, by_object):
            made.reset(seed=4)
        for _ in range(6):
            action = int(np.flatnonzero(by_object.action_masks())[0])
            a, b = by_spec.step(action), by_object.step(action)
            assert np.array_equal(a[0], b[0]) and a[1:4] == b[1:4]
            if a[2]:
                break


def test_an_action_outside_the_board_is_an_error_in_both_envs_and_changes_nothing():
    gym_env = StrategicReserveEnv(seat="red")
    observation, _ = gym_env.reset(seed=3)
    aec = env()
    aec.reset(seed=3)
    for action in (99, -1, 36):
        with pytest.raises(IllegalActionError, match=rf"action {action} is not a square index \(0\.\.35\)"):
            gym_env.step(action)
        with pytest.raises(IllegalActionError, match=rf"action {action} is not a square index \(0\.\.35\)"):
            aec.step(action)
    assert np.array_equal(gym_env.games.observations()[0], observation)  # nothing changed
    assert aec.unwrapped.game.ply == 0
    vector = StrategicReserveVectorEnv(num_envs=2)
    vector.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"action 40 \(game 1\) is not a square index"):
        vector.step(np.array([int(np.flatnonzero(vector.action_masks()[0])[0]), 40]))


def test_an_illegal_square_of_the_board_is_the_documented_forfeit_in_both_envs():
    gym_env = StrategicReserveEnv(seat="red")
    gym_env.reset(seed=3)
    illegal = int(np.flatnonzero(~gym_env.action_masks())[0])
    _, reward, terminated, _, info = gym_env.step(illegal)
    assert (reward, terminated) == (-1.0, True) and "is not a legal placement" in info["illegal_action"]
    aec = env()
    aec.reset(seed=3)
    mover = aec.agent_selection
    aec.step(int(np.flatnonzero(aec.observe(mover)["action_mask"] == 0)[0]))
    assert aec.rewards[mover] == -1 and aec.terminations[mover]


def test_check_env_with_its_defaults_passes_without_pygame():
    done = hidden(
        ("pygame",),
        "import warnings\nwarnings.simplefilter('ignore')\n"
        "import gymnasium, strategic_reserve_env\n"
        "from gymnasium.utils.env_checker import check_env\n"
        "made = gymnasium.make('StrategicReserve-v1', seat='red')\n"
        "check_env(made.unwrapped)\n"
        "print(made.metadata['render_modes'])\n"
        "from strategic_reserve_env.envs.gym_env import StrategicReserveEnv\n"
        "try:\n    StrategicReserveEnv(render_mode='human')\n"
        "except ValueError as error:\n    print(error)\n",
    )
    assert done.returncode == 0, done.stderr
    modes, message = done.stdout.splitlines()
    assert modes == "['ansi', 'rgb_array']"
    assert message == (
        "render_mode='human' needs pygame, which is not installed: pip install 'strategic-reserve-env[render]'"
    )


# -- one ply numbering -------------------------------------------------------------------------------------------


def test_one_game_has_the_same_ply_numbers_in_every_view(tmp_path, capsys):
    """play's screens, the saved record's replay trace, analyse's lines, the replay viewer's captions and the
    pictures' titles number a game's plies alike: ply k is its k-th roll and that roll's placement."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from strategic_reserve_env.evaluation.analysis import analyse
    from strategic_reserve_env.pictures.plotting import ReplayViewer, draw_heatmap, draw_position

    said: list[str] = []
    squares = [f"{file}{rank}" for rank in range(1, 7) for file in "abcdef"]

    def read(prompt: str) -> str:  # the person plays the first legal square it tries
        return next(attempts) if prompt == PROMPT else ""

    attempts = iter(squares * 200)
    path = tmp_path / "game.json"
    terminal_game(load_agent("greedy"), seed=2, reserve=2, save=str(path), read=read, say=said.append)
    screen = {  # ply -> roll, from the screens shown before each of the person's placements (not after them)
        int(match[1]): match[2]
        for text in said
        if not text.startswith("You place on")
        for match in re.finditer(r"Ply (\d+), \w+ to move\. \w+ rolled (\w\d)", text)
    }
    record = records.load_record(path)
    trace = {entry["ply"]: entry["roll"] for entry in records.replay(record)}
    assert screen and all(trace[ply] == roll for ply, roll in screen.items())
    assert record.result in ("red", "blue") and record.seed == 2 and "person" in record.players

    analysis = analyse(record, "expectimax:depth=1")
    lines = analysis.text().splitlines()
    analysed = {int(m[1]): m[2] for line in lines if (m := re.match(r"\s*(\d+)\s+(?:red|blue)\s+(\w\d)\s", line))}
    assert analysed == trace
    assert main(["analyse", str(path), "--agent", "expectimax:depth=1", "--json"]) == 0
    assert [p["ply"] for p in json.loads(capsys.readouterr().out)["plies"]] == sorted(trace)

    viewer = ReplayViewer(record, analysis)
    for index, caption in enumerate(viewer.captions[:-1]):
        ply, roll = re.match(r"ply (\d+): \w+ rolled (\w\d)", caption).groups()
        assert trace[int(ply)] == roll and int(ply) == index + 1
        figure, (left, right) = plt.subplots(1, 2)
        draw_position(viewer.frames[index], ax=left)
        draw_heatmap(viewer.frames[index], np.zeros(36), ax=right, colorbar=False)
        assert left.get_title().startswith(f"Ply {ply}, ") and right.get_title().startswith(f"Ply {ply}, ")
        plt.close(figure)
    last = len(trace)
    assert re.search(rf"won at ply {last}\.", viewer.captions[-1])

    game = Game(record.config)  # the trace numbers its plies as Game.ply counts them when they end
    for number, (rolled, placed) in enumerate(record.plies, start=1):
        game.roll(parse_square(rolled))
        game.place(parse_square(placed))
        assert game.ply == number
