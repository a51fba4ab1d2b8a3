"""Agents of your own through load_agent: modules and files outside the repository, single-game and batch
functions, classes and factories with options, entry-point plugins, and the errors for each way to get it wrong."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from strategic_reserve_env.agents import list_agents, load_agent
from strategic_reserve_env.agents.custom import NamedAgent, SingleGameAgent
from strategic_reserve_env.core.board import bitboards_to_array
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import mover_planes
from strategic_reserve_env.core.policies import InvalidActionsError
from strategic_reserve_env.envs.learner import LearnerGames
from strategic_reserve_env.evaluation.tournament import check_agent, probe_positions

from conftest import REPO

BOTS = '''
import numpy as np

class Lowest:
    """The legal square with the lowest (or highest) index."""
    uses_observation = False

    def __init__(self, highest=False, label="x", weight=1.5):
        self.highest, self.label, self.weight = highest, label, weight

    def act(self, observations, masks, rng):
        masks = np.asarray(masks, dtype=bool)
        return 35 - np.argmax(masks[:, ::-1], axis=1) if self.highest else np.argmax(masks, axis=1)

lowest = Lowest()

def make(highest=False):
    return Lowest(highest=highest)

def make_function():
    return first_legal

def first_legal(observation, mask):
    assert observation.shape == (6, 6, 9) and mask.shape == (36,)
    return int(np.flatnonzero(mask)[0])

def batch(observations, masks, rng):
    return np.argmax(masks, axis=1)

def one_argument(observation):
    return 0

def factory_fails(depth=1):
    raise RuntimeError("no model here")

class BadAct:
    def act(self, observations):
        return 0

not_an_agent = 42

class Needs:
    def __init__(self, path):
        self.path = path
    def act(self, observations, masks, rng):
        return np.argmax(masks, axis=1)
'''


@pytest.fixture
def bots(tmp_path, monkeypatch):
    """A package `mybots` (module `mybots.heuristics`) outside the repository, importable; and the
    same code as the file `bots_file.py`."""
    package = tmp_path / "lib" / "mybots"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "heuristics.py").write_text(BOTS)
    (package / "broken.py").write_text("import not_an_installed_module_xyz\n")
    (tmp_path / "bots_file.py").write_text(BOTS)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("mybots")]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def positions():
    return probe_positions(Config(), seed=3)


def _act(agent, positions):
    masks = bitboards_to_array(positions.legal)
    return masks, np.asarray(agent.act(mover_planes(positions), masks, np.random.default_rng(0)))


@pytest.mark.parametrize(
    "spec, name, first",
    [
        ("mybots.heuristics:Lowest", "mybots.heuristics:Lowest", "lowest"),
        ("mybots.heuristics:Lowest:highest=true", "mybots.heuristics:Lowest:highest=true", "highest"),
        (
            "mybots.heuristics:Lowest:weight=2.0,highest=false,label=abc",
            "mybots.heuristics:Lowest:highest=false,label=abc,weight=2.0",
            "lowest",
        ),
        ("mybots.heuristics:lowest", "mybots.heuristics:lowest", "lowest"),
        ("mybots.heuristics:make:highest=true", "mybots.heuristics:make:highest=true", "highest"),
        ("mybots.heuristics:first_legal", "mybots.heuristics:first_legal", "lowest"),
        ("mybots.heuristics:make_function", "mybots.heuristics:make_function", "lowest"),
        ("mybots.heuristics:batch", "mybots.heuristics:batch", "lowest"),
        ("bots_file.py:Lowest:highest=true", "bots_file.py:Lowest:highest=true", "highest"),
        ("./bots_file.py:first_legal", "bots_file.py:first_legal", "lowest"),
    ],
)
def test_user_agents_load_under_canonical_names_and_play(bots, positions, spec, name, first):
    agent = load_agent(spec)
    assert agent.name == name
    masks, actions = _act(agent, positions)
    legal = [np.flatnonzero(row) for row in masks]
    expected = [row[0] if first == "lowest" else row[-1] for row in legal]
    assert actions.tolist() == expected
    check_agent(agent, Config())  # the pre-game check passes


def test_options_are_typed_and_reach_the_class(bots):
    agent = load_agent("mybots.heuristics:Lowest:highest=TRUE,label=7x,weight=-3")
    assert isinstance(agent, NamedAgent)
    assert (agent.agent.highest, agent.agent.label, agent.agent.weight) == (True, "7x", -3)
    assert agent.uses_observation is False  # taken from the user's class


def test_a_file_spec_has_one_name_however_the_path_is_written(bots):
    absolute = bots / "bots_file.py"
    (bots / "x").mkdir()
    names = {load_agent(f"{path}:lowest").name for path in (absolute, "bots_file.py", "./x/../bots_file.py")}
    assert names == {"bots_file.py:lowest"}


def test_single_game_functions_are_called_once_per_game(bots, positions):
    calls = []

    def record(observation, mask):
        calls.append(mask.copy())
        return int(np.flatnonzero(mask)[-1])

    agent = SingleGameAgent(record)
    masks, actions = _act(agent, positions)
    assert len(calls) == positions.batch_size and np.array_equal(np.array(calls), masks)
    assert actions.dtype == np.int64 and masks[np.arange(len(actions)), actions].all()


@pytest.mark.parametrize(
    "spec, message",
    [
        ("mybots.missing:Agent", "module 'mybots.missing' not found"),
        ("nowhere_xyz.agents:Agent", "module 'nowhere_xyz' not found"),
        ("mybots.broken:Agent", "importing mybots.broken failed: No module named 'not_an_installed_module_xyz'"),
        ("mybots.heuristics:Nothing", "mybots.heuristics has no attribute 'Nothing' \\(it has: .*Lowest"),
        ("mybots.heuristics:", "name the agent after the colon"),
        ("mybots.heuristics:one_argument", r"one_argument\(observation\) has a wrong signature; expected an object"),
        ("mybots.heuristics:BadAct", r"has act\(observations\), which does not take \(observations, masks, rng\)"),
        ("mybots.heuristics:not_an_agent", "is a int, not an agent"),
        ("mybots.heuristics:lowest:highest=true", "is an agent object, which takes no options"),
        ("mybots.heuristics:first_legal:x=1", "is a function of the game, which takes no options"),
        ("mybots.heuristics:Lowest:depth=2", "Lowest cannot be built with the options depth=2: got an unexpected"),
        ("mybots.heuristics:Needs", "Needs cannot be built with no options: missing a required argument: 'path'"),
        ("mybots.heuristics:Lowest:highest", "option 'highest' is not key=value"),
        ("mybots.heuristics:Lowest:a=1,a=2", "option 'a' given twice"),
        ("mybots.heuristics:factory_fails", "building mybots.heuristics:factory_fails raised RuntimeError: no model"),
        ("missing_file.py:Agent", "file missing_file.py not found"),
        ("some/dir:Agent", "a file agent must be a .py file"),
        ("my-bots.x:Agent", "'my-bots.x' is not a module name"),
        ("mybot:Agent", "unknown agent 'mybot'; known agents: random, greedy.*your own agent: package.module:attr"),
        ("bots_file:Lowest", r"\(there is a file bots_file.py here: name it as bots_file.py:attribute\)$"),
        ("csv:Lowest", r"\(there is a module 'csv': name it by its file, /.*/csv.py:attribute\)$"),
        ("mybots:Lowest", r"\(there is a package 'mybots': name a module in it, mybots.module:attribute\)$"),
    ],
)
def test_user_agent_errors_say_what_is_wrong(bots, spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec)


def test_a_file_that_fails_to_run_names_the_error(bots):
    (bots / "bad.py").write_text("def f(observation, mask)\n    return 0\n")
    with pytest.raises(ValueError, match=r"running bad.py raised SyntaxError") as caught:
        load_agent("bad.py:f")
    assert isinstance(caught.value.__cause__, SyntaxError)
    assert not [
        name
        for name in sys.modules
        if name.startswith("_strategic_reserve_agent_")
        and getattr(sys.modules[name], "__file__", "").endswith("bad.py")
    ]


def _plugin(root, distribution: str, entries: dict[str, str], code: str = BOTS) -> None:
    """An installed distribution as importlib.metadata finds it: a package and a .dist-info folder."""
    module = distribution.replace("-", "_")
    (root / module).mkdir(parents=True)
    (root / module / "__init__.py").write_text(code)
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[strategic_reserve_env.agents]\n{lines}")


def test_entry_point_plugins_load_by_name_and_are_listed(tmp_path, monkeypatch):
    _plugin(
        tmp_path,
        "sr-plugin-one",
        {
            "lowbot": "sr_plugin_one:Lowest",
            "firstbot": "sr_plugin_one:first_legal",
            "greedy": "sr_plugin_one:Lowest",
            "clash": "sr_plugin_one:Lowest",
        },
    )
    _plugin(tmp_path, "sr-plugin-two", {"clash": "sr_plugin_two:make"})
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = load_agent("lowbot:highest=true")
    assert agent.name == "lowbot:highest=true" and agent.agent.highest is True
    assert load_agent("firstbot").name == "firstbot"
    assert load_agent("greedy").__class__.__name__ == "GreedyAgent"  # a built-in keeps its name
    with pytest.raises(
        ValueError,
        match=r"agent 'clash' is registered by several packages: "
        r"sr_plugin_one:Lowest \(sr-plugin-one 1.0\); sr_plugin_two:make",
    ):
        load_agent("clash")
    with pytest.raises(ValueError, match="unknown agent 'nobot'.*registered by installed packages: clash, firstbot"):
        load_agent("nobot")
    listed = dict(list_agents())
    assert listed["lowbot"] == "sr_plugin_one:Lowest (sr-plugin-one 1.0)"
    assert "ignored: a built-in has this name" in listed["greedy"]
    assert "unusable: registered more than once" in listed["clash"]


def test_a_broken_plugin_names_its_distribution(tmp_path, monkeypatch):
    _plugin(tmp_path, "sr-plugin-bad", {"badbot": "sr_plugin_bad:missing_attribute"}, code="x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ValueError,
        match=r"loading entry point sr_plugin_bad:missing_attribute \(sr-plugin-bad 1.0\) "
        r"raised AttributeError",
    ):
        load_agent("badbot")


# -- agents are asked only about games where a move is due ---------------------------------------------------------

ONE_GAME_AGENT = "import numpy as np\n\ndef act(observation, mask):\n    return int(np.flatnonzero(mask)[0])\n"


@pytest.mark.parametrize("where", ["learner-games", "gym-vector", "sb3-vecenv"])
def test_an_agent_written_for_one_game_is_never_asked_about_a_game_with_no_move_due(tmp_path, where):
    """A single-game function that reads its mask's first legal square fails on an empty mask: as the only
    opponent of a batch, it is called only for the games where it is to place, as in evaluate."""
    from strategic_reserve_env.envs.gym_env import StrategicReserveVectorEnv
    from strategic_reserve_env.envs.sb3_env import StrategicReserveVecEnv

    (tmp_path / "first.py").write_text(ONE_GAME_AGENT)
    opponent = load_agent(f"{tmp_path / 'first.py'}:act")
    rng = np.random.default_rng(0)
    if where == "learner-games":
        games = LearnerGames(Config(), 16, opponent=opponent, seat="random")
        games.reset(seeds=list(range(16)))
        for _ in range(120):
            masks = games.action_masks()
            actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
            games.step(actions, autoreset=True)
        return
    env = (
        StrategicReserveVectorEnv(16, opponent=opponent, seat="random")
        if where == "gym-vector"
        else StrategicReserveVecEnv(16, opponents=(opponent,))
    )
    env.reset(seed=0) if where == "gym-vector" else env.reset()
    for _ in range(120):
        masks = env.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        env.step(actions)


# -- an agent whose attributes raise gets the one-line load error -----------------------------------------------------


RAISING = {
    "act": """
        class Agent:
            @property
            def act(self):
                raise RuntimeError("no act today")
        agent = Agent()
        """,
    "uses_observation": """
        import numpy as np
        class Agent:
            @property
            def uses_observation(self):
                raise RuntimeError("cannot say")
            def act(self, observations, masks, rng):
                return np.argmax(masks, axis=-1)
        agent = Agent()
        """,
    "name of a class": """
        class Agent:
            def __init__(self):
                pass
            @property
            def act(self):
                raise KeyError("built, then broken")
        """,
}


@pytest.mark.slow
@pytest.mark.parametrize("attribute", list(RAISING))
def test_an_agent_whose_attribute_raises_gets_the_load_error(tmp_path, attribute):
    path = tmp_path / "raising.py"
    path.write_text(textwrap.dedent(RAISING[attribute]))
    name = "Agent" if attribute == "name of a class" else "agent"
    with pytest.raises(ValueError, match="agent spec .*raised"):
        load_agent(f"{path}:{name}")
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "evaluate", "random", f"{path}:{name}", "--games", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: agent spec"), result.stderr


# -- a single-game function's answer ----------------------------------------------------------------------------------


def test_a_single_game_function_returning_true_is_refused():
    agent = SingleGameAgent(lambda observation, mask: True)
    masks = np.ones((2, 36), dtype=bool)
    with pytest.raises(InvalidActionsError, match="returned True, a bool, not an integer square index 0..35"):
        agent.act(np.zeros((2, 6, 6, 9), np.int8), masks, np.random.default_rng(0))
