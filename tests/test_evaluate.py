"""evaluate.py and evaluation.tournament: paired dice, determinism by seed, ratings, a small tournament
end to end, and every bad argument or agent caught before the first game (issue 11)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from strategic_reserve_env import models
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.commands.evaluate import main
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import ECHO_LIMIT, array_to_bitboards
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.envs import arena
from strategic_reserve_env.envs.arena import MAX_ACT_SECONDS
from strategic_reserve_env.evaluation import benchmark_protocol as benchmark
from strategic_reserve_env.evaluation import tournament
from strategic_reserve_env.evaluation.tournament import Pairing, Settings, bradley_terry, dice_seeds, play_pairing
from strategic_reserve_env.files import outputs

from conftest import REPO


def _rolls_per_ply(agents, seeds, agent_seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The rolled square and liveness of every game after each ply."""
    rolled, live = [], []

    def record(state):
        rolled.append(state.rolled.copy())
        live.append(~state.done)

    red = np.tile([0, 1], len(seeds) // 2)
    rngs = [np.random.default_rng([agent_seed, k]) for k in range(2)]
    arena.play(agents, red, seeds, Config(), rngs, on_ply=record)
    return rolled, live


def test_both_games_of_a_pair_see_the_same_rolls():
    seeds = dice_seeds(4, 30)
    agents = (load_agent("random"), load_agent("greedy"))
    rolled, live = _rolls_per_ply(agents, seeds, agent_seed=0)
    compared = 0
    for ply_rolls, ply_live in zip(rolled, live, strict=True):
        both = ply_live[0::2] & ply_live[1::2]
        assert np.array_equal(ply_rolls[0::2][both], ply_rolls[1::2][both])
        compared += int(both.sum())
    assert compared > 300
    assert not np.array_equal(rolled[0][0::2], rolled[0][2::2].tolist() + [rolled[0][0]])  # pairs differ


def test_dice_do_not_depend_on_the_agents_randomness():
    seeds = dice_seeds(4, 10)
    agents = (load_agent("random"), load_agent("random"))
    first, live_first = _rolls_per_ply(agents, seeds, agent_seed=1)
    second, live_second = _rolls_per_ply(agents, seeds, agent_seed=2)
    for a, b, la, lb in zip(first, second, live_first, live_second, strict=False):
        both = la & lb
        assert np.array_equal(a[both], b[both])


@pytest.mark.slow
def test_same_seed_same_results(tmp_path):
    for run in ("a", "b"):
        assert (
            main(
                [
                    "random",
                    "greedy",
                    "--games",
                    "40",
                    "--seed",
                    "5",
                    "--batch",
                    "20",
                    "--no-progress",
                    "--out",
                    str(tmp_path / run),
                ]
            )
            == 0
        )
    results = [json.loads((tmp_path / run / "results.json").read_text()) for run in ("a", "b")]
    for result in results:
        result["settings"].pop("out")
        for pairing in result["pairings"]:
            pairing.pop("seconds")
    assert results[0] == results[1]
    other = play_pairing("random", "greedy", Settings(agents=[], games=40, seed=6, progress=False))
    assert other.pair_scores != results[0]["pairings"][0]["pair_scores"]


@pytest.mark.slow
def test_pairing_counts_add_up():
    pairing = play_pairing("greedy", "random", Settings(agents=[], games=200, seed=1, batch=100, progress=False))
    assert pairing.games_as_red == pairing.games_as_blue == 100
    wins = pairing.wins_as_red + pairing.wins_as_blue
    assert abs(pairing.score * 200 - (wins + pairing.truncated / 2)) < 1e-9
    low, high = pairing.interval()
    assert low < pairing.score < high and pairing.score > 0.6


def test_bradley_terry_orders_and_anchors():
    def pairing(a, b, score, games=1000):
        return Pairing(a, b, games, 0, 1, 0, 1, 0, 0, 1.0, [score] * (games // 2))

    ratings = bradley_terry(
        ["strong", "random", "weak"],
        [
            pairing("strong", "random", 0.75),
            pairing("random", "weak", 0.75),
            pairing("strong", "weak", 0.9),
        ],
    )
    assert ratings["random"] == (0.0, 0.0)
    assert ratings["strong"][0] > 150 and ratings["weak"][0] < -150
    assert 0 < ratings["strong"][1] < 60


@pytest.mark.slow
def test_small_tournament_end_to_end(tmp_path):
    out = tmp_path / "results"
    result = subprocess.run(
        [
            sys.executable,
            "evaluate.py",
            "random",
            "greedy",
            "expectimax:depth=1",
            "--games",
            "20",
            "--seed",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "agent A" in result.stdout and "rating (Elo)" in result.stdout
    assert {p.name for p in out.iterdir()} == {".lock", "results.json", "results.md", "ratings.png"}
    data = json.loads((out / "results.json").read_text())
    assert len(data["pairings"]) == 3 and data["settings"]["games"] == 20
    assert (out / "ratings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_bad_specs_and_settings():
    result = subprocess.run(
        [sys.executable, "evaluate.py", "random", "minimax"], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert result.returncode == 2
    assert "unknown agent 'minimax'; known agents: random, greedy" in result.stderr
    assert "Traceback" not in result.stderr
    odd = subprocess.run(
        [sys.executable, "evaluate.py", "random", "greedy", "--games", "7"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert odd.returncode == 2 and "--games must be an even number" in odd.stderr


def test_play_continues_given_games_and_rejects_games_awaiting_a_placement():
    agents, config, seeds = (load_agent("greedy"), load_agent("random")), Config(), np.arange(40)
    red = np.tile([0, 1], 20)
    fresh = arena.play(agents, red, seeds, config, [np.random.default_rng(k) for k in range(2)])
    given = arena.play(
        agents, red, seeds, config, [np.random.default_rng(k) for k in range(2)], start=engine.init(config, 40)
    )
    assert np.array_equal(fresh.winner, given.winner) and np.array_equal(fresh.plies, given.plies)
    rolled = engine.roll(engine.init(config, 40), np.zeros(40, dtype=np.int64))
    with pytest.raises(ValueError, match="40 games awaiting their roll"):
        arena.play(agents, red, seeds, config, [np.random.default_rng(0)] * 2, start=rolled)
    with pytest.raises(ValueError, match="40 games awaiting their roll"):
        arena.play(agents, red, seeds, config, [np.random.default_rng(0)] * 2, start=engine.init(config, 39))


# ---- issue 11: every argument and agent checked before the first game; nothing computed is lost ----

FAULTY = '''
import numpy as np

class LateFault:
    """Legal squares (the lowest) for ``calls`` calls, then an occupied square in the middle row."""
    def __init__(self, calls=0):
        self.calls, self.limit = 0, calls
    def act(self, observations, masks, rng):
        self.calls += 1
        squares = np.argmax(masks, axis=1)
        if self.calls > self.limit:
            row = len(squares) // 2
            squares[row] = np.flatnonzero(~masks[row])[0]
        return squares

def raises_late(observation, mask, calls=[0]):
    calls[0] += 1
    if calls[0] > 3000:
        raise KeyError("no such opening")
    return int(np.flatnonzero(mask)[0])
'''


def _shipped_ppo(prefix: str = "") -> str:
    """The shipped PPO model's spec with its file's path relative to the repository, written after `prefix`
    (`./` for a second spelling of the same agent)."""
    return f"ppo:{prefix}{os.path.relpath(models.path(models.SHIPPED_POLICY), REPO)}"


def _main(argv: list[str], capsys) -> tuple[int, str, str]:
    """evaluate.main's exit status (argparse's SystemExit included), stdout and stderr."""
    try:
        status = main([*argv, "--no-progress"])
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _strict_json(path):
    """The JSON of `path`; NaN or Infinity in it fail the test."""

    def refuse(constant):
        raise AssertionError(f"{path} holds {constant}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.slow
@pytest.mark.parametrize(
    "typed, canonical",
    [
        ("expectimax", "expectimax:depth=2"),
        ("expectimax:width=6", "expectimax:depth=2"),
        (_shipped_ppo("./"), _shipped_ppo()),
    ],
)
def test_results_are_keyed_by_canonical_names(typed, canonical, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    status, out, err = _main(["random", typed, "--games", "4", "--out", str(tmp_path)], capsys)
    assert status == 0, err
    data = _strict_json(tmp_path / "results.json")
    assert data["complete"] is True and data["settings"]["agents"] == ["random", canonical]
    assert data["pairings"][0]["b"] == canonical and set(data["ratings_elo"]) == {"random", canonical}
    assert canonical in out


@pytest.mark.parametrize(
    "specs, message",
    [
        (
            ["random", "expectimax", "expectimax:depth=2"],
            "'expectimax' and 'expectimax:depth=2' are the same agent (expectimax:depth=2): give each agent once",
        ),
        ([_shipped_ppo(), _shipped_ppo("./")], f"{_shipped_ppo()!r} and {_shipped_ppo('./')!r} are the same agent"),
        (["greedy", "random", "greedy"], "'greedy' is given 2 times"),
        (["greedy"], "give at least two different agents, got 1"),
        (["greedy", "minimax"], "unknown agent 'minimax'; known agents: random, greedy"),
    ],
)
def test_bad_agent_lists_are_refused_before_the_first_game(specs, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "new"
    status, stdout, err = _main([*specs, "--games", "4", "--out", str(out)], capsys)
    assert status == 2 and message in err and "Traceback" not in err
    assert not out.exists() and stdout == ""  # nothing created, nothing played


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--seed", "-1"], "--seed must be an integer >= 0, got -1"),
        (["--games", "7"], "--games must be an even number >= 2, got 7"),
        (["--games", "0"], "--games must be an even number >= 2, got 0"),
        (["--batch", "3"], "--batch must be an even number >= 2, got 3"),
        (["--reserve", "13"], "--reserve must be in 1..12, got 13"),
        (["--ply-limit", "0"], "--ply-limit must be in 1.."),
        (["--benchmark-games", "4"], "--benchmark-games needs --benchmark SPEC"),
    ],
)
def test_bad_settings_are_refused_by_the_parser(arguments, message, tmp_path, capsys):
    status, stdout, err = _main(["random", "greedy", *arguments, "--out", str(tmp_path / "new")], capsys)
    assert status == 2 and message in err and stdout == ""
    assert not (tmp_path / "new").exists()


def test_out_must_be_a_writable_directory(tmp_path, capsys):
    file = tmp_path / "results.txt"
    file.write_text("keep me")
    for out, message in [(file, "is a file, not a directory"), (file / "sub", f"lies under the file {file}")]:
        for command in (["random", "greedy", "--games", "4"], ["--benchmark", "greedy", "--benchmark-games", "2"]):
            status, stdout, err = _main([*command, "--out", str(out)], capsys)
            assert status == 2 and f"--out {out}: {message}" in err and stdout == ""
    assert file.read_text() == "keep me"
    if os.geteuid() == 0:  # root writes everywhere a file system lets it: take a folder no one can write in
        locked = Path("/proc")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
    status, _, err = _main(["random", "greedy", "--games", "4", "--out", str(locked / "results")], capsys)
    assert status == 2 and f"cannot write in {locked}" in err


def test_two_games_give_valid_json_with_null_intervals(tmp_path, capsys):
    status, stdout, err = _main(["random", "greedy", "--games", "2", "--out", str(tmp_path)], capsys)
    assert status == 0, err
    data = _strict_json(tmp_path / "results.json")
    assert data["pairings"][0]["ci95"] is None and len(data["pairings"][0]["pair_scores"]) == 1
    assert "n/a" in stdout and "| n/a |" in (tmp_path / "results.md").read_text()


def test_an_agent_failing_mid_tournament_keeps_the_finished_pairings(tmp_path, capsys):
    (tmp_path / "faulty.py").write_text(FAULTY)
    spec = f"{tmp_path / 'faulty.py'}:LateFault:calls=150"
    out = tmp_path / "results"
    status, stdout, err = _main(
        ["random", "greedy", spec, "--games", "200", "--batch", "100", "--out", str(out)], capsys
    )
    assert status == 1
    name = f"{tmp_path / 'faulty.py'}:LateFault:calls=150"
    assert re.search(
        rf"error: random vs {re.escape(name)}: agent '{re.escape(name)}' in game \d+: returned [a-f][1-6] "
        r"\(square \d+\), which is not a legal placement; legal: .*; position: board [.RB]{36} ",
        err,
    )
    assert "the 1 pairing(s) finished before are kept" in err and "where it came from" not in err
    assert "random   greedy" in stdout  # the finished pairing is printed
    data = _strict_json(out / "results.json")
    assert data["complete"] is False and data["ratings_elo"] is None and "LateFault" in data["error"]
    assert [(p["a"], p["b"], p["games"]) for p in data["pairings"]] == [("random", "greedy", 200)]
    assert "**Unfinished**" in (out / "results.md").read_text() and not (out / "ratings.png").exists()


def test_an_exception_in_the_agent_names_it_and_where_it_came_from_in_one_line(tmp_path, capsys):
    """The failing line of the user's code is named in the one line (main before issue 40: a traceback)."""
    (tmp_path / "faulty.py").write_text(FAULTY)
    status, _, err = _main(["random", f"{tmp_path / 'faulty.py'}:raises_late", "--games", "400"], capsys)
    assert status == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert re.search(r"raised KeyError: 'no such opening' at \S*faulty\.py, line \d+ \(choosing for", err), err


def test_a_faulty_agent_is_caught_before_the_first_game(tmp_path, capsys):
    (tmp_path / "faulty.py").write_text(FAULTY)
    out = tmp_path / "results"
    status, stdout, err = _main(["random", f"{tmp_path / 'faulty.py'}:LateFault", "--out", str(out)], capsys)
    assert status == 2 and stdout == ""
    assert re.search(
        r"agent '.*LateFault' failed before the first game, on test position \d+: returned [a-f][1-6] "
        r"\(square \d+\), which is not a legal placement",
        err,
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "answer, message, row",
    [
        (lambda masks: np.argmax(masks, axis=1)[:-1], r"returned shape \(7,\) for 8 game\(s\), expected \(8,\)", None),
        (lambda masks: np.argmax(masks, axis=1).astype(float), "returned float64 values, not integer square", 0),
        (lambda masks: np.where(np.arange(8) == 5, 36, np.argmax(masks, axis=1)), "returned 36, not a square index", 5),
        (lambda masks: [[1, 2], [3]], "not an array of squares", None),
        (lambda masks: np.argmax(masks, axis=1) > 0, "returned bool values", 0),
    ],
)
def test_wrong_answers_are_named_with_their_row(answer, message, row):
    from strategic_reserve_env.core.policies import InvalidActionsError, checked_actions

    masks = np.zeros((8, 36), dtype=bool)
    masks[:, 3:9] = True
    with pytest.raises(InvalidActionsError, match=message) as caught:
        checked_actions(answer(masks), array_to_bitboards(masks))
    assert caught.value.row == row


def test_rows_without_a_legal_square_are_not_looked_at():
    from strategic_reserve_env.core.policies import InvalidActionsError, checked_actions

    masks = np.zeros((4, 36), dtype=bool)
    masks[1, [7, 8]] = True
    assert checked_actions(np.array([-1, 8, 99, 0]), array_to_bitboards(masks)).tolist() == [-1, 8, 99, 0]
    with pytest.raises(
        InvalidActionsError,
        match=r"returned a1 \(square 0\), which is not a legal placement; "
        r"legal: b2, c2$",
    ) as caught:
        checked_actions(np.array([-1, 0, 99, 0]), array_to_bitboards(masks))
    assert caught.value.row == 1


@pytest.mark.parametrize("spec", ["random", "greedy", "expectimax:depth=1"])
def test_every_built_in_agent_is_a_policy(spec):
    from strategic_reserve_env.core.policies import Policy, as_policy

    agent = load_agent(spec)
    assert isinstance(agent, Policy)
    assert as_policy(agent) is agent


def test_as_policy_wraps_a_function_and_refuses_what_has_no_act():
    from strategic_reserve_env.core.policies import Policy, as_policy

    def first_legal(observations, masks, rng):
        return np.argmax(masks, axis=1)

    policy = as_policy(first_legal)
    assert isinstance(policy, Policy) and not isinstance(first_legal, Policy)
    masks = np.zeros((2, 36), dtype=bool)
    masks[0, 4] = masks[1, 30] = True
    assert policy.act(None, masks, np.random.default_rng(0)).tolist() == [4, 30]
    with pytest.raises(ValueError, match="a policy must be 'random', an object with act"):
        as_policy(42)


def test_arena_names_the_agent_the_game_and_the_position():
    class Occupied:
        name = "occupied"

        def act(self, observations, masks, rng):
            squares = np.argmax(masks, axis=1)
            if observations[:, :, :, 0].sum() > 0:  # once the mover has a checker on the board
                squares[0] = np.flatnonzero(~masks[0])[0]
            return squares

    with pytest.raises(arena.AgentError) as caught:
        arena.play(
            (load_agent("random"), Occupied()),
            np.tile([0, 1], 10),
            np.arange(20),
            Config(),
            [np.random.default_rng(k) for k in range(2)],
            game_numbers=np.arange(100, 120),
        )
    error = caught.value
    assert error.agent == 1 and error.name == "occupied" and 100 <= error.game < 120
    assert "which is not a legal placement" in error.detail and re.match(r"board [.RB]{36} ", error.position)
    assert isinstance(error.__cause__, ValueError)


def test_json_text_keeps_number_lists_on_one_line_and_refuses_nan():
    from strategic_reserve_env.evaluation.tournament import json_text

    payload = {"pair_scores": [0.5, 1.0, 0.0, 0.25], "ci95": [-1e-05, 2.5e300], "nested": {"names": ["a", "b"]}}
    text = json_text(payload)
    assert json.loads(text) == payload
    assert '"pair_scores": [0.5, 1.0, 0.0, 0.25]' in text and '"ci95": [-1e-05, 2.5e+300]' in text
    with pytest.raises(ValueError):
        json_text({"score": float("nan")})


def test_a_two_agent_evaluate_says_which_agent_is_anchored_at_0(tmp_path, capsys):
    """Without random the first agent is fixed at 0 (it showed "+0" without saying so); with random, random is."""
    from strategic_reserve_env.__main__ import main

    out = tmp_path / "t"
    assert main(["evaluate", "greedy", "expectimax:depth=1", "--games", "2", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ratings relative to greedy, fixed at 0 (the first agent given; random is anchored when it plays)" in printed
    assert "*ratings relative to greedy, fixed at 0 (the first agent given" in (out / "results.md").read_text()
    assert main(["evaluate", "greedy", "random", "--games", "2", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "ratings relative to random, fixed at 0: only differences between ratings mean anything" in printed


# -- runs that stop say so (an agent's BaseException, a full disk, a full stdout); act timeout and sizes ---------------


RANDOM_AFTER_BODY = """
masks = np.asarray(masks, dtype=bool)
return np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=-1)
"""


def agent_file(directory: Path, name: str, body: str, prelude: str = "") -> str:
    """The spec of an agent file whose `act` runs `body` from its second call on (its first is the check
    before the first game), then plays uniformly at random."""
    path = directory / f"{name}.py"
    source = "import sys, time\nimport numpy as np\n" + textwrap.dedent(prelude) + "\ncalls = 0\n"
    source += "def act(observations, masks, rng):\n    global calls\n    calls += 1\n    if calls > 1:\n"
    source += textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
    source += textwrap.indent(RANDOM_AFTER_BODY.strip() + "\n", " " * 4)
    path.write_text(source)
    return f"{path}:act"


def run_command(*args: str, stdout=subprocess.PIPE, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def no_traceback(stderr: str) -> bool:
    return "Traceback" not in stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "raised",
    [
        "class Halt(BaseException):\n    pass\n",  # a custom BaseException
        "Halt = GeneratorExit\n",
    ],
)
def test_an_agent_raising_a_base_exception_stops_the_run_and_says_so(tmp_path, raised):
    spec = agent_file(tmp_path, "halts", "raise Halt('enough')", prelude=raised)
    out = tmp_path / "out"
    result = run_command("evaluate", "random", spec, "--games", "2", "--no-progress", "--out", str(out))
    assert result.returncode == 1, result.stderr
    name = "Halt" if "class" in raised else "GeneratorExit"
    assert result.stderr.splitlines()[-1].startswith("error: ") and f"raised {name}: enough" in result.stderr
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and f"raised {name}: enough" in written["error"]
    assert "still running" not in (out / "results.md").read_text()


@pytest.mark.slow
def test_the_benchmark_stops_with_its_reason_when_an_agent_raises_a_base_exception(tmp_path):
    spec = agent_file(tmp_path, "halts", "raise Halt('enough')", prelude="class Halt(BaseException):\n    pass\n")
    out = tmp_path / "out"
    result = run_command("benchmark", spec, "--benchmark-games", "2", "--no-progress", "--out", str(out))
    assert result.returncode == 1, result.stderr
    card = json.loads((out / "benchmark.json").read_text())
    assert card["complete"] is False and "raised Halt: enough" in card["error"]


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_at_the_last_file_stops_the_tournament_with_the_reason_in_its_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tournament, "plot_ratings", enospc)  # the picture, the last file before results.json
    out = tmp_path / "out"
    assert main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "No space left on device" in error[0], error
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and "No space left on device" in written["error"]
    assert "still running" not in (out / "results.md").read_text()


def test_a_disk_full_for_every_write_ends_with_one_line_and_files_that_do_not_say_running(
    tmp_path, monkeypatch, capsys
):
    """The first write (after the first pairing) succeeds, every later one fails: what is on disk must not
    claim a live run, and the run ends with one line and exit 1."""
    real = outputs.write_text
    calls = []

    def fills_up(path, text):
        calls.append(path)
        if len(calls) > 2:  # results.md and results.json after the first pairing
            enospc()
        real(path, text)

    monkeypatch.setattr(tournament, "write_text", fills_up)
    out = tmp_path / "out"
    assert main(["random", "greedy", "expectimax:depth=1", "--games", "2", "--no-progress", "--out", str(out)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "No space left on device" in error[0] and "could not be written" in error[0], error
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and written["error"]
    assert "still running" not in written["error"] and "still running" not in (out / "results.md").read_text()


def test_a_full_disk_during_the_benchmark_stops_it_with_the_reason(tmp_path, monkeypatch, capsys):
    real = benchmark.write_text
    calls = []

    def fails_once(path, text):
        calls.append(path)
        if len(calls) == 3:  # the first write after the first opponent
            enospc()
        real(path, text)

    monkeypatch.setattr(benchmark, "write_text", fails_once)
    out = tmp_path / "out"
    assert main(["--benchmark", "random", "--benchmark-games", "2", "--no-progress", "--out", str(out)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert "No space left on device" in error[-1], error
    card = json.loads((out / "benchmark.json").read_text())
    assert card["complete"] is False and "No space left on device" in card["error"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", [["evaluate", "random", "greedy", "--games", "2"], ["benchmark", "random", "--benchmark-games", "2"]]
)
def test_stdout_on_a_full_device_ends_with_one_line_and_a_stopped_run(tmp_path, command):
    out = tmp_path / "out"
    with open("/dev/full", "w") as full:
        result = run_command(*command, "--no-progress", "--out", str(out), stdout=full)
    assert result.returncode == 1, result.stderr
    error = result.stderr.strip().splitlines()
    assert len(error) == 1 and "standard output" in error[0], result.stderr
    stem = "results" if command[0] == "evaluate" else "benchmark"
    written = json.loads((out / f"{stem}.json").read_text())
    assert written["complete"] is False and "standard output" in written["error"]


def test_results_written_while_running_do_not_claim_a_live_run(tmp_path):
    settings = tournament.Settings(agents=["random", "greedy"], games=2, progress=False)
    pairings, _ = tournament.run(settings)
    tournament.write_outputs(tmp_path, settings, pairings, None)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["complete"] is False and written["error"] == tournament.UNFINISHED
    assert "still running" not in (tmp_path / "results.md").read_text()


@pytest.mark.slow
def test_the_act_timeout_holds_against_an_agent_that_catches_exception(tmp_path):
    body = """
    try:
        time.sleep(2)
    except Exception:
        pass
    """
    spec = agent_file(tmp_path, "swallows", body)
    out = tmp_path / "out"
    result = run_command(
        "evaluate", "random", spec, "--games", "2", "--batch", "2", "--act-timeout", "0.25", "--no-progress",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "ActTimeoutError" in result.stderr.splitlines()[-1]
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and "ActTimeoutError" in written["error"]


@pytest.mark.slow
@pytest.mark.parametrize("option", ["1e8", str(MAX_ACT_SECONDS * 2)])
def test_a_huge_act_timeout_is_refused_before_play(option):
    result = run_command("evaluate", "random", "greedy", "--games", "2", "--act-timeout", option)
    assert result.returncode == 2 and "--act-timeout" in result.stderr and no_traceback(result.stderr)
    assert "OverflowError" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, option",
    [
        (["evaluate", "random", "greedy", "--games", str(10**12)], "--games"),
        (["evaluate", "random", "greedy", "--batch", str(10**8)], "--batch"),
        (["benchmark", "random", "--benchmark-games", str(10**12)], "--benchmark-games"),
        (["bench", "--batch-sizes", "64", str(10**8)], "--batch-sizes"),
        (["bench", "--batch-sizes", "0"], "--batch-sizes"),
    ],
)
def test_huge_sizes_are_refused_with_one_line_before_anything_is_allocated(tmp_path, args, option):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if args[0] != "bench" else []
    result = run_command(*args, *extra, timeout=60)
    assert result.returncode == 2, result.stderr
    assert option in result.stderr.splitlines()[-1] and no_traceback(result.stderr)
    assert not out.exists()


def test_the_size_limits_are_the_settings_own():
    with pytest.raises(ValueError, match="games"):
        tournament.Settings(agents=[], games=tournament.MAX_GAMES + 2)
    with pytest.raises(ValueError, match="batch"):
        tournament.Settings(agents=[], batch=tournament.MAX_BATCH + 2)
    tournament.Settings(agents=[], games=tournament.MAX_GAMES, batch=tournament.MAX_BATCH)


# -- two spellings of one agent, echoed shortened ---------------------------------------------------------------------


def test_two_spellings_of_one_agent_are_echoed_shortened():
    from strategic_reserve_env.evaluation.tournament import load_agents

    padded = "expectimax:" + "," * 100_000 + "depth=2"
    with pytest.raises(ValueError, match="same agent") as caught:
        load_agents(["expectimax", padded])
    assert "," * (ECHO_LIMIT + 1) not in str(caught.value) and len(str(caught.value)) < 500
    with pytest.raises(ValueError, match="given 2 times") as caught:
        load_agents([padded, padded])
    assert "," * (ECHO_LIMIT + 1) not in str(caught.value)
