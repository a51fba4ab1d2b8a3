"""Specs and settings from hostile or careless hands (issue 29, items 13, 15, 16, 18): agents whose attributes
raise load with the one-line error, a Gym env finished before the learner's first move is refused, every name
a results file holds loads back, and no error echoes more than a few dozen characters of its input.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import gymnasium
import pytest

import strategic_reserve_env  # noqa: F401  (registers the Gym id)
from strategic_reserve_env import models
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.luck_values import load_luck_value
from strategic_reserve_env.board import ECHO_LIMIT
from strategic_reserve_env.config import Config, StartPosition
from strategic_reserve_env.evaluation.benchmark import PROTOCOLS
from strategic_reserve_env.learner import LearnerGames

from conftest import REPO

GYM_ID = next(name for name in gymnasium.registry if name.startswith("StrategicReserve-v"))

# -- 13: attributes that raise -------------------------------------------------------------------------------

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


# -- 15: a Gym env over before the learner moves ---------------------------------------------------------------


@pytest.mark.parametrize("seat", ["blue", "random"])
def test_a_ply_limit_that_ends_the_game_before_the_learners_first_move_is_refused(seat):
    with pytest.raises(ValueError, match="ply_limit"):
        gymnasium.make(GYM_ID, ply_limit=1, seat=seat)
    with pytest.raises(ValueError, match="ply_limit"):
        LearnerGames(Config(ply_limit=1), 2, seat=seat)


def test_a_ply_limit_of_one_is_fine_for_the_first_mover():
    env = gymnasium.make(GYM_ID, ply_limit=1, seat="red")
    _, info = env.reset(seed=0)
    assert info["action_mask"].any()
    blue_first = Config(ply_limit=1, start=StartPosition(to_move="blue"))
    LearnerGames(blue_first, 1, seat="blue")
    with pytest.raises(ValueError, match="ply_limit"):
        LearnerGames(blue_first, 1, seat="red")


# -- 16: what a results file names loads ---------------------------------------------------------------------

SPECS = [
    "random",
    "greedy",
    "expectimax",
    "expectimax:depth=1",
    "expectimax:depth=1,width=3",
    "rollout:rollouts=4,width=2",
    "rollout:rollouts=4,luck=false,horizon=3",
    "rollout:rollouts=4,base=ppo",
    "ppo",
    "ppo:deterministic=false",
    "ppo:deterministic=true",
    "value",
    "value:depth=1",
    "value:width=3,depth=1",
    f"ppo:{models.path(models.SHIPPED_POLICY)},deterministic=false",
    f"value:{models.path(models.VALUE_NET)},depth=1",
]


@pytest.mark.parametrize("spec", SPECS)
def test_every_canonical_name_loads_as_the_same_agent(spec):
    name = load_agent(spec).name
    assert load_agent(name).name == name


def test_the_benchmark_panels_names_load():
    for protocol in PROTOCOLS.values():
        for member in protocol.panel:
            name = load_agent(member.spec).name
            assert load_agent(name).name == name


def test_a_user_agents_name_with_options_loads(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from strategic_reserve_env.agents import ExpectimaxAgent\ndef make(depth=2):\n"
                    "    return ExpectimaxAgent(depth=depth)\n")  # fmt: skip
    name = load_agent(f"{path}:make:depth=1").name
    assert load_agent(name).name == name


# -- 18: errors echo a few dozen characters of their input ----------------------------------------------------

HUGE = "x" * 100_000
HUGE_SPECS = [
    HUGE,
    f"{HUGE}.py:act",
    f"pkg.{HUGE}:act",
    f"{REPO}/evaluate.py:{HUGE}",
    f"greedy:{HUGE}",
    f"expectimax:depth={HUGE}",
    f"expectimax:{HUGE}=1",
    f"ppo:{HUGE}.safetensors",
    f"value:{HUGE}.safetensors",
    f"rollout:base={HUGE}",
    f"random:{HUGE}",
]


@pytest.mark.parametrize("spec", HUGE_SPECS, ids=range(len(HUGE_SPECS)))
def test_a_huge_spec_is_echoed_shortened(spec):
    with pytest.raises(ValueError) as caught:
        load_agent(spec)
    message = str(caught.value)
    assert "x" * (ECHO_LIMIT + 1) not in message, message[:200]
    assert len(message) < 2000


def test_a_huge_luck_value_spec_is_echoed_shortened():
    with pytest.raises(ValueError) as caught:
        load_luck_value(HUGE)
    assert "x" * (ECHO_LIMIT + 1) not in str(caught.value)


def test_evaluate_echoes_a_huge_spec_shortened():
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "evaluate", "random", f"greedy:{HUGE}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2 and len(result.stderr) < 2000, result.stderr[:300]


def test_two_spellings_of_one_agent_are_echoed_shortened():
    from strategic_reserve_env.evaluation.tournament import load_agents

    padded = "expectimax:" + "," * 100_000 + "depth=2"
    with pytest.raises(ValueError, match="same agent") as caught:
        load_agents(["expectimax", padded])
    assert "," * (ECHO_LIMIT + 1) not in str(caught.value) and len(str(caught.value)) < 500
    with pytest.raises(ValueError, match="given 2 times") as caught:
        load_agents([padded, padded])
    assert "," * (ECHO_LIMIT + 1) not in str(caught.value)
