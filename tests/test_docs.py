"""The README's Python examples run as written (those marked `# needs: ...` run in the integration venv)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO
from readme_blocks import Block, python_blocks, run_as_a_reader_would

BLOCKS = python_blocks()
CORE_BLOCKS = [block for block in BLOCKS if block.in_core_venv]


def test_the_readme_has_python_examples():
    assert len(CORE_BLOCKS) >= 4
    assert sum(1 for block in CORE_BLOCKS if "jax" in block.needs) >= 2  # the JAX loop and the chance API


@pytest.mark.slow
@pytest.mark.parametrize("block", CORE_BLOCKS, ids=lambda block: f"example-{block.number}")
def test_readme_example_runs(block, monkeypatch, capsys):
    run_as_a_reader_would(block, monkeypatch, capsys)


# the site's own pages with examples: the quickstart and the environment cards (docs/envs/)
PAGE_BLOCKS = [
    (page, block)
    for page in [REPO / "docs" / "quickstart.md", *sorted((REPO / "docs" / "envs").glob("*.md"))]
    for block in python_blocks(page)
    if block.in_core_venv
]


def test_the_environment_cards_have_examples():
    cards = {page.stem for page, _ in PAGE_BLOCKS if page.parent.name == "envs"}
    assert cards == {"aec", "gymnasium", "vector", "sb3", "pgx"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "page, block", PAGE_BLOCKS, ids=lambda item: getattr(item, "stem", None) or f"example-{item.number}"
)
def test_docs_page_example_runs(page, block, monkeypatch, capsys):
    run_as_a_reader_would(block, monkeypatch, capsys)


def test_needs_markers_are_read(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "```python\nprint(1)\n```\n\n```python\n# needs: tianshou, ray.rllib\nimport ray\n```\n"
        "```python\n# needs tianshou\n```\n"
    )
    with pytest.raises(ValueError, match=r"python example 3: malformed '# needs tianshou'"):
        python_blocks(readme)
    readme.write_text(readme.read_text().rsplit("```python", 1)[0])
    assert python_blocks(readme) == [
        Block(1, (), "print(1)\n"),
        Block(2, ("tianshou", "ray.rllib"), "# needs: tianshou, ray.rllib\nimport ray\n"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, mentions",
    [
        (["train.py", "--help"], "--total-steps"),
        (["evaluate.py", "--help"], "--games"),
        (["-m", "strategic_reserve_env", "headroom", "--help"], "--rollouts"),
        (["-m", "strategic_reserve_env", "--help"], "replay"),
    ],
)
def test_readme_commands_explain_themselves(command, mentions):
    result = subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert mentions in result.stdout


def _arguments_section(card: str) -> str:
    return card.split("## Arguments", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize(
    "card, constructor",
    [
        ("aec", "strategic_reserve_env.envs.aec_env:raw_env"),
        ("gymnasium", "strategic_reserve_env.envs.gym_env:StrategicReserveEnv"),
        ("vector", "strategic_reserve_env.envs.gym_env:StrategicReserveVectorEnv"),
        ("sb3", "strategic_reserve_env.envs.sb3_env:StrategicReserveVecEnv"),
        ("pgx", "strategic_reserve_env.envs.pgx_env:StrategicReserve"),
    ],
)
def test_every_env_card_lists_every_constructor_argument_with_its_default(card, constructor):
    """The Arguments section of each environment card (docs/envs/) names each argument of the constructor with
    the default the code has: a new or changed argument shows here."""
    import importlib
    import inspect

    module, _, name = constructor.partition(":")
    if name == "StrategicReserve":
        pytest.importorskip("jax")
    cls = getattr(importlib.import_module(module), name)
    section = _arguments_section((REPO / "docs" / "envs" / f"{card}.md").read_text())
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, flags=re.M))
    parameters = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    assert set(rows) == {p.name for p in parameters}, (card, set(rows) ^ {p.name for p in parameters})
    for parameter in parameters:
        shown = rows[parameter.name].strip()
        expected = "(required)" if parameter.default is inspect.Parameter.empty else f"`{parameter.default!r}`"
        assert shown == expected.replace("'", '"'), (card, parameter.name, shown, expected)
