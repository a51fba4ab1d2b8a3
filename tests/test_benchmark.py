"""The benchmark (issue 14): agents from outside the repository (a module, a single-game function file, an
entry-point plugin) through evaluate.py and --benchmark, the README's own example, the score card and its
documented JSON schema, the reference cards, and a faulty agent keeping what was played."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from strategic_reserve_env.evaluation.benchmark_protocol import (
    DEFAULT_PROTOCOL,
    PANEL_PPO,
    PROTOCOL_V1,
    PROTOCOL_V2,
    SCHEMA,
    SHIPPED_PPO,
    ScoreCard,
    fit_rating,
    run_benchmark,
)
from strategic_reserve_env.evaluation.reference_cards import END, REFERENCE_AGENTS, START, file_stem
from strategic_reserve_env.evaluation.tournament import Pairing, PairingError

from conftest import REPO

QUICK = ["--benchmark-games", "20", "--no-progress"]
SPREAD = '''
import numpy as np

class Spread:
    """The legal square with the fewest own checkers around it (lowest index on ties)."""
    def __init__(self, penalty=1):
        self.penalty = penalty
    def act(self, observations, masks, rng):
        own = np.pad(observations[..., 0], ((0, 0), (1, 1), (1, 1)))
        around = own[:, :-2, 1:-1] + own[:, 2:, 1:-1] + own[:, 1:-1, :-2] + own[:, 1:-1, 2:]
        return np.argmin(np.where(masks, self.penalty * around.reshape(-1, 36), 99), axis=1)
'''
SINGLE = """
import numpy as np

def act(observation, mask):
    return int(np.flatnonzero(mask)[-1])
"""


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """Agents outside the repository: a package on a folder of its own, a single-game function file,
    and an installed plugin (a .dist-info folder with an entry point, as pip leaves one)."""
    root = tmp_path_factory.mktemp("outside")
    (root / "lib" / "mybots").mkdir(parents=True)
    (root / "lib" / "mybots" / "__init__.py").write_text("")
    (root / "lib" / "mybots" / "heuristics.py").write_text(SPREAD)
    (root / "single.py").write_text(SINGLE)
    plugins = root / "plugins"
    (plugins / "sr_spread_plugin").mkdir(parents=True)
    (plugins / "sr_spread_plugin" / "__init__.py").write_text(SPREAD)
    info = plugins / "sr_spread_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sr-spread-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[strategic_reserve_env.agents]\nspread = sr_spread_plugin:Spread\n")
    return root


def _evaluate(arguments: list[str], cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    """evaluate.py run as a user would, from `cwd` (outside the repository)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


def _kinds(outside: Path) -> dict[str, tuple[str, Path | None, str]]:
    """kind -> (spec, PYTHONPATH, canonical name)"""
    return {
        "module": ("mybots.heuristics:Spread:penalty=2", outside / "lib", "mybots.heuristics:Spread:penalty=2"),
        "single-game function": (str(outside / "single.py") + ":act", None, "single.py:act"),
        "entry point": ("spread:penalty=2", outside / "plugins", "spread:penalty=2"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["module", "single-game function", "entry point"])
def test_an_agent_from_outside_runs_a_tournament_and_a_benchmark(kind, outside, tmp_path):
    spec, pythonpath, name = _kinds(outside)[kind]
    cwd = outside if kind == "single-game function" else tmp_path
    tournament = _evaluate(
        [spec, "random", "--games", "20", "--no-progress", "--out", str(tmp_path / "rr")], cwd, pythonpath
    )
    assert tournament.returncode == 0, tournament.stderr
    results = json.loads((tmp_path / "rr" / "results.json").read_text())
    assert results["settings"]["agents"] == [name, "random"] and results["pairings"][0]["games"] == 20

    benchmark = _evaluate(["--benchmark", spec, *QUICK, "--out", str(tmp_path / "bench")], cwd, pythonpath)
    assert benchmark.returncode == 0, benchmark.stderr
    assert f"NOT protocol v2 (20 games per opponent; not comparable with protocol scores): {name}" in benchmark.stdout
    assert re.search(r"^rating: [+-]\d+ ± \d+ \(Bradley-Terry", benchmark.stdout, flags=re.MULTILINE)
    card = json.loads((tmp_path / "bench" / "benchmark.json").read_text())
    assert card["agent"] == name and card["conformant"] is False and card["complete"] is True
    assert [o["label"] for o in card["opponents"]] == [m.label for m in PROTOCOL_V2.panel]
    assert all(o["games"] == 20 for o in card["opponents"]) and card["games"] == 80
    assert card["rating"]["ci95_half_width"] > 0
    assert (tmp_path / "bench" / "benchmark.md").read_text().startswith("# Strategic Reserve benchmark, NOT protocol")


@pytest.mark.slow
def test_list_agents_shows_installed_plugins(outside, tmp_path):
    result = _evaluate(["--list-agents"], tmp_path, outside / "plugins")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^spread\s+sr_spread_plugin:Spread \(sr-spread-plugin 0.1\)$", result.stdout, flags=re.MULTILINE)
    assert "expectimax[:depth=1|2,width=K]" in result.stdout and "path/to/file.py:attribute" in result.stdout


@pytest.mark.slow
def test_benchmark_errors_come_before_the_first_game(outside, tmp_path):
    missing = _evaluate(["--benchmark", "mybots.heuristics:Nope", *QUICK], tmp_path, outside / "lib")
    assert missing.returncode == 2 and missing.stdout == ""
    assert "mybots.heuristics has no attribute 'Nope' (it has: Spread)" in missing.stderr
    (tmp_path / "illegal.py").write_text("def act(observation, mask):\n    return 40\n")
    illegal = _evaluate(["--benchmark", "illegal.py:act", *QUICK], tmp_path)
    assert illegal.returncode == 2 and illegal.stdout == ""
    assert re.search(
        r"agent 'illegal.py:act' failed before the first game, on test position 0: returned 40, not a "
        r"square index 0..35; position: board [.RB]{36} ",
        illegal.stderr,
    )
    clash = _evaluate(["--benchmark", "greedy", "random", "--games", "20"], tmp_path)
    assert clash.returncode == 2 and "drop --games, random" in clash.stderr


def _readme_example() -> tuple[str, str, str]:
    """The README's custom agent file, its name, and the benchmark command that follows it."""
    section = (REPO / "README.md").read_text().split("## Benchmark your own agent", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(# (\S+\.py).*?)```", section, flags=re.DOTALL)
    command = re.search(r"```bash\n(strategic-reserve benchmark \S+.*?)\n", section)
    assert code and command, "the README's section lost its example"
    return code.group(1), code.group(2), command.group(1)


@pytest.mark.slow
def test_the_readmes_custom_agent_benchmarks_as_shown(tmp_path):
    code, filename, command = _readme_example()
    assert len(code.strip().splitlines()) <= 12  # "a ten-line custom agent"
    (tmp_path / filename).write_text(code)
    arguments = shlex.split(command)[1:]  # after "strategic-reserve": the command's name, then its arguments
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", *arguments, *QUICK],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert f": {filename}:act" in result.stdout and "rating:" in result.stdout
    out = arguments[arguments.index("--out") + 1]
    assert json.loads((tmp_path / out / "benchmark.json").read_text())["agent"] == f"{filename}:act"


def _schema_fields(heading: str) -> list[str]:
    """The field names listed in the table under `heading` of docs/BENCHMARK.md."""
    text = (REPO / "docs" / "BENCHMARK.md").read_text().split(heading, 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `([a-z_0-9]+)` \|", text, flags=re.MULTILINE)


@pytest.mark.slow
def test_the_json_schema_is_documented_field_by_field():
    card = run_benchmark("random", games=2, progress=False)
    data = card.as_json()
    assert data["schema"] == SCHEMA and SCHEMA in (REPO / "docs" / "BENCHMARK.md").read_text()
    assert _schema_fields("### Score card fields") == list(data)
    assert _schema_fields("### Opponent fields") == list(data["opponents"][0])
    assert _schema_fields("### Protocol fields") == list(data["protocol"])
    assert data["opponents"][0]["ci95"] is None  # one pair: no interval, and valid JSON
    json.loads(json.dumps(data, allow_nan=False))


@pytest.mark.parametrize("protocol", [PROTOCOL_V1, PROTOCOL_V2], ids=["v1", "v2"])
def test_the_protocols_are_well_formed(protocol):
    assert protocol.panel[0].spec == "random" and protocol.panel[0].rating == 0
    assert all(m.games % 2 == 0 and m.games >= 2 for m in protocol.panel)
    assert len({m.label for m in protocol.panel}) == len(protocol.panel)
    assert PANEL_PPO in [m.spec for m in protocol.panel] and Path(PANEL_PPO.partition(":")[2]).is_file()
    assert SHIPPED_PPO not in [m.spec for m in protocol.panel]  # shipping a new model leaves the panel alone


def test_v2_is_v1_scored_luck_adjusted():
    """The same panel, seed and rules; v1 scores raw, v2 luck-adjusted (docs/BENCHMARK.md)."""
    assert (PROTOCOL_V1.version, PROTOCOL_V2.version) == ("v1", "v2") and DEFAULT_PROTOCOL is PROTOCOL_V2
    assert [(m.label, m.spec) for m in PROTOCOL_V1.panel] == [(m.label, m.spec) for m in PROTOCOL_V2.panel]
    for key in ("seed", "reserve", "ply_limit"):
        assert getattr(PROTOCOL_V1, key) == getattr(PROTOCOL_V2, key)
    assert not PROTOCOL_V1.adjusted and PROTOCOL_V2.adjusted and PROTOCOL_V2.luck_value == "race"


def _reference_cards() -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted((REPO / "docs" / "benchmark").glob("*.json"))]


def test_the_reference_cards_are_protocol_v2_and_their_ratings_follow_from_their_games():
    cards = _reference_cards()
    models = {spec for spec in REFERENCE_AGENTS if spec.startswith("ppo:")}  # named from the repository root
    expected = {spec for spec in REFERENCE_AGENTS if spec not in models} | {
        "ppo:" + os.path.relpath(spec.partition(":")[2], REPO) for spec in models
    }
    assert {card["agent"] for card in cards} == expected
    for card in cards:
        assert card["schema"] == SCHEMA and card["conformant"] and card["complete"]
        assert card["protocol"]["version"] == PROTOCOL_V2.version
        expected = PROTOCOL_V2.as_json()
        for key in ("seed", "reserve", "ply_limit", "batch"):
            assert card["protocol"][key] == expected[key]
        assert [(m["label"], m["games"], m["rating"]) for m in card["protocol"]["panel"]] == [
            (m.label, m.games, m.rating) for m in PROTOCOL_V2.panel
        ]
        results = [
            (member, Pairing(**{k: o[k] for k in Pairing.__dataclass_fields__}))
            for member, o in zip(PROTOCOL_V2.panel, card["opponents"], strict=True)
        ]
        value, half = fit_rating(PROTOCOL_V2, results)
        assert card["rating"]["elo"] == pytest.approx(value, abs=1e-6)
        assert card["rating"]["ci95_half_width"] == pytest.approx(half, abs=1e-6)
        assert (REPO / "docs" / "benchmark" / f"{file_stem(card['agent'])}.md").is_file()


def test_the_reference_table_in_benchmark_md_is_the_generated_one():
    document = (REPO / "docs" / "BENCHMARK.md").read_text()
    table = document.split(START, 1)[1].split(END, 1)[0].strip()
    generated = (REPO / "docs" / "benchmark" / "reference.md").read_text()
    assert table and table in generated
    for card in _reference_cards():
        assert f"`{card['agent']}` | {card['rating']['elo']:+z.0f} ± {card['rating']['ci95_half_width']:.0f} |" in table


class FailsLate:
    """Plays the lowest legal square, then raises once it has been asked `calls` times."""

    name = "fails-late"
    uses_observation = False

    def __init__(self, calls: int) -> None:
        self.calls, self.limit = 0, calls

    def act(self, observations, masks, rng):
        self.calls += 1
        if self.calls > self.limit:
            raise RuntimeError("out of memory in my tree search")
        return np.argmax(masks, axis=1)


@pytest.mark.slow
def test_a_faulty_agent_keeps_the_opponents_played_before(tmp_path):
    agent, seen = FailsLate(calls=10**9), []

    def after_opponent(card: ScoreCard) -> None:  # the first opponent is played out; the second fails
        seen.append(len(card.results))
        agent.limit = agent.calls + 5

    with pytest.raises(
        PairingError, match=r"agent 'fails-late' in game \d+: raised RuntimeError: out of memory"
    ) as caught:
        run_benchmark(agent, games=20, progress=False, on_opponent=after_opponent)
    card: ScoreCard = caught.value.card
    assert seen == [1] and len(card.results) == 1 and card.rating is None and not card.complete
    card.write(tmp_path)
    data = json.loads((tmp_path / "benchmark.json").read_text())
    assert data["complete"] is False and "out of memory" in data["error"] and len(data["opponents"]) == 1
    assert "unfinished:" in card.text()


@pytest.mark.slow
def test_the_reference_run_deletes_the_cards_of_agents_no_longer_in_it(tmp_path, monkeypatch, capsys):
    """A card of an agent the run no longer benchmarks (here: the PPO's old .zip spelling) would linger beside
    the new ones and break the set of reference agents; other files in the folder stay."""
    from strategic_reserve_env.commands.maintainer import reference as reference_command
    from strategic_reserve_env.evaluation import reference_cards as reference

    monkeypatch.chdir(REPO)  # main moves to the repository root: put it back after the test
    monkeypatch.setattr(
        reference,
        "run_benchmark",
        lambda spec, protocol, progress: run_benchmark(spec, protocol, games=2, progress=False),
    )
    docs = tmp_path / "docs"
    cards = docs / "benchmark"
    cards.mkdir(parents=True)
    (docs / "BENCHMARK.md").write_text(f"# Benchmark\n\n{START}\nold table\n{END}\n")
    stale = [cards / "ppo-models-ppo_baseline-zip.json", cards / "ppo-models-ppo_baseline-zip.md"]
    for path in [*stale, cards / "random.json", cards / "reference.md", cards / "notes.txt"]:
        path.write_text("old")
    assert reference_command(["--docs", str(docs), "--agents", "random", "greedy", "--no-progress"]) == 0
    assert sorted(path.name for path in cards.iterdir()) == [
        "greedy.json",
        "greedy.md",
        "notes.txt",
        "random.json",
        "random.md",
        "reference.md",
    ]
    assert json.loads((cards / "random.json").read_text())["agent"] == "random"
    assert "`greedy`" in (cards / "reference.md").read_text() and "old table" not in (docs / "BENCHMARK.md").read_text()
    out = capsys.readouterr().out
    assert all(f"removed {path}: its agent is not in this run" in out for path in stale)


def test_a_card_stopped_before_an_opponent_finished_says_so_not_zero_games():
    """Stopped during the first opponent (Ctrl-C after 8,000 games), the card printed "0 games in 0.0 s"; it
    says that no opponent finished, and a card stopped later counts the finished opponents' games as theirs."""
    card = run_benchmark("random", games=2, progress=False)
    stopped = ScoreCard(card.agent, card.protocol, 2, card.panel_names, error="stopped: interrupted")
    assert stopped.speed_line().startswith("no opponent finished: the games of the one under way are not scored")
    assert "0 games" not in stopped.text()
    stopped.results = card.results[:1]
    assert stopped.speed_line().startswith("2 games against the opponents finished in ")
    assert card.speed_line().startswith(f"{card.games:,} games in ")


def test_reference_outside_a_clone_is_refused_in_one_line_writing_nothing(tmp_path, monkeypatch, capsys):
    """`strategic-reserve reference` in a folder that is not a clone (no docs/BENCHMARK.md with its markers)
    used to play for minutes and write docs/benchmark/ there; it is refused before anything is played."""
    from strategic_reserve_env.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["reference", "--agents", "random"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "docs/BENCHMARK.md" in err and "--docs DIR" in err, err
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "BENCHMARK.md").write_text("# not this project's\n")
    assert main(["reference", "--agents", "random"]) == 2
    assert "lacks the markers" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["BENCHMARK.md", "docs"]


def test_reference_stops_on_ctrl_c_in_one_line_with_130(tmp_path, monkeypatch, capsys):
    """A SIGINT while the second agent plays: one line on stderr, exit 130, the first card written."""
    import signal

    from strategic_reserve_env.commands.maintainer import reference as reference_command
    from strategic_reserve_env.evaluation import reference_cards as reference

    played = []

    def benchmark(spec, protocol, progress):
        played.append(spec)
        if len(played) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return run_benchmark(spec, protocol, games=2, progress=False)

    monkeypatch.setattr(reference, "run_benchmark", benchmark)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "BENCHMARK.md").write_text(f"# Benchmark\n\n{START}\nold table\n{END}\n")
    assert reference_command(["--docs", str(docs), "--agents", "random", "greedy", "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted (SIGINT, Ctrl-C)" in err and "Traceback" not in err, err
    assert sorted(path.name for path in (docs / "benchmark").iterdir()) == ["random.json", "random.md"]
    assert "old table" in (docs / "BENCHMARK.md").read_text()


@pytest.mark.slow
def test_protocol_1_is_still_played_and_scored_raw(tmp_path):
    """`--protocol 1` plays v1 (its batch, its raw scoring: the rating from the win counts, as before v2);
    the card still carries the adjusted scores beside the raw ones."""
    result = subprocess.run(
        [sys.executable, "evaluate.py", "--benchmark", "greedy", "--protocol", "1", *QUICK, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "NOT protocol v1" in result.stdout and "Bradley-Terry on the raw scores" in result.stdout
    card = json.loads((tmp_path / "benchmark.json").read_text())
    assert card["protocol"]["version"] == "v1" and card["protocol"]["scoring"] == "raw"
    assert card["protocol"]["batch"] == PROTOCOL_V1.batch
    results = [
        (member, Pairing(**{k: o[k] for k in Pairing.__dataclass_fields__}))
        for member, o in zip(PROTOCOL_V1.panel, card["opponents"], strict=True)
    ]
    assert card["rating"]["elo"] == pytest.approx(fit_rating(PROTOCOL_V1, results)[0], abs=1e-6)
    assert card["rating"]["elo"] != pytest.approx(fit_rating(PROTOCOL_V2, results)[0], abs=1e-3)
    assert all(o["score_adjusted"] is not None for o in card["opponents"])
