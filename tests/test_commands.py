"""The `strategic-reserve` console command: one subcommand per task, each naming itself as it was run."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from strategic_reserve_env.__main__ import COMMANDS, PROG, main


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--help"])
    assert stopped.value.code == 0
    return capsys.readouterr().out


def test_the_console_script_is_the_dispatcher():
    (script,) = entry_points(group="console_scripts", name=PROG)  # as installed from pyproject.toml
    assert script.value == "strategic_reserve_env.__main__:main"


def test_the_top_level_help_names_the_console_command_and_lists_every_command(capsys):
    text = _help([], capsys)
    assert text.startswith(f"usage: {PROG} ") and "python -m" not in text
    assert [name for name in COMMANDS if f"\n  {name} " in text] == list(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_names_itself_in_its_help(name, capsys):
    text = _help([name], capsys)
    assert text.startswith(f"usage: {PROG} {name} ")
    assert "python evaluate.py random" not in text and "python train.py --" not in text  # the examples renamed


MAINTAINER_COMMANDS = {"reference", "skill", "headroom", "value-net"}  # the project's own results, regenerated


def test_the_maintainer_commands_are_marked_in_the_registry():
    assert {name for name, command in COMMANDS.items() if command.maintainer} == MAINTAINER_COMMANDS


def test_the_top_level_help_lists_the_maintainer_commands_under_their_own_heading(capsys):
    """A user reads their commands first; the maintainers' follow under "maintainer commands", none of them
    among the user's and every user command above the heading."""
    text = _help([], capsys)
    users, heading, maintainers = text.partition("\nmaintainer commands")
    assert heading, text
    listed = lambda part: {name for name in COMMANDS if f"\n  {name} " in part}  # noqa: E731
    assert listed(users) == set(COMMANDS) - MAINTAINER_COMMANDS
    assert listed(maintainers) == MAINTAINER_COMMANDS


@pytest.mark.parametrize("name", sorted(MAINTAINER_COMMANDS))
def test_a_maintainer_command_runs_like_any_other(name, capsys):
    assert _help([name], capsys).startswith(f"usage: {PROG} {name} ")


def test_the_required_commands_are_there():
    assert set(COMMANDS) >= {"evaluate", "benchmark", "train", "train-rllib", "replay", "bench", "play"}


def test_an_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["nope"])
    assert stopped.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_python_dash_m_names_itself_so():
    done = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m strategic_reserve_env ")


@pytest.mark.slow
def test_the_benchmark_module_says_where_its_command_is():
    done = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env.evaluation.benchmark_protocol", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "strategic-reserve benchmark SPEC" in done.stderr


@pytest.mark.slow
def test_the_benchmark_command_plays_the_panel_and_its_card_names_the_games_played(capsys, tmp_path):
    assert main(["benchmark", "random", "--benchmark-games", "4", "--no-progress", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "NOT protocol v2 (4 games per opponent" in out
    card = out.split("\n\nwrote ")[0].splitlines()
    assert card[-1].startswith("protocol v2: ") and "games: 4 vs each (the protocol's: 12,000 vs random" in card[-1]
    assert (tmp_path / "benchmark.json").is_file()
    assert main(["benchmark", "random", "--protocol", "1", "--benchmark-games", "4", "--no-progress"]) == 0
    card = capsys.readouterr().out.splitlines()
    assert card[-1].startswith("protocol v1: ") and "games: 4 vs each (the protocol's: 4,000 vs random" in card[-1]


def test_the_benchmark_command_refuses_bad_games_before_playing(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["benchmark", "random", "--benchmark-games", "3"])
    assert stopped.value.code == 2
    assert "--benchmark-games" in capsys.readouterr().err


def test_bench_rows_share_their_columns():
    from strategic_reserve_env.speed.engine_speed import row

    rows = [row("engine", "B=4096", "batched numpy arrays", 1e6), row("aec raw_env", "1 game", "public API", 5.0)]
    assert len({len(text) for text in rows}) == 1 and len({text.index(" plies/s") for text in rows}) == 1
    assert rows[1].startswith("aec raw_env 1 game  public API")
