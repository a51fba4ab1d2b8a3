"""Import layers: the core needs numpy only; the env adapters and their registrations load on demand.

Each check runs in a fresh interpreter (this test process has imported everything already)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

ADAPTER_LIBRARIES = ("pettingzoo", "gymnasium", "torch", "jax", "pgx")  # jax, pgx: the extra jax
CORE = ("", ".board", ".config", ".rules", ".engine", ".game", ".records", ".dice", ".observation", ".luck")


def run_python(code: str) -> str:
    """stdout of `code` run by a fresh interpreter from the checkout's root; fails with its stderr."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("module", CORE)
def test_core_imports_no_adapter_library(module):
    loaded = run_python(
        f"import sys\nimport strategic_reserve_env{module}\n"
        f"print(' '.join(name for name in {ADAPTER_LIBRARIES!r} if name in sys.modules))"
    )
    assert loaded.split() == [], f"import strategic_reserve_env{module} loaded {loaded.split()}"


# library -> (code using its registry, what the code prints)
MAKE_CASES = {
    "gymnasium": (
        "single = gymnasium.make('StrategicReserve-v1', seat='blue')\n"
        "vector = gymnasium.make_vec('StrategicReserve-v1', num_envs=2, vectorization_mode='vector_entry_point')\n"
        "observation = single.reset(seed=0)[0]\n"
        "print(type(single.unwrapped).__name__, type(vector).__name__, observation in single.observation_space)",
        ["StrategicReserveEnv", "StrategicReserveVectorEnv", "True"],
    ),
    "pettingzoo": (
        "made = pettingzoo.make('aec', 'strategic_reserve_v2', reserve=6)\n"
        "made.reset(seed=0)\n"
        "print(made.unwrapped.config.reserve, made.metadata['name'], strategic_reserve_env.ENV_NAME)",
        ["6", "strategic_reserve_v2", "strategic_reserve_v2"],
    ),
}


@pytest.mark.parametrize("library", sorted(MAKE_CASES))
@pytest.mark.parametrize("library_first", [False, True], ids=["package-first", "library-first"])
def test_registry_make_after_import(library, library_first):
    """The library's own make finds the env whichever of the package and the library is imported first."""
    imports = ["import strategic_reserve_env", f"import {library}"]
    if library_first:
        imports.reverse()
    code, expected = MAKE_CASES[library]
    assert run_python("\n".join(imports) + "\n" + code).split() == expected


def test_adapters_are_exposed_lazily():
    out = run_python(
        "import sys, strategic_reserve_env as sre\n"
        "before = 'pettingzoo' in sys.modules\n"
        "from strategic_reserve_env import env, raw_env\n"
        "from strategic_reserve_env.aec_env import raw_env as direct\n"
        "print(before, 'pettingzoo' in sys.modules, raw_env is direct, type(env()).__name__ != '')"
    )
    assert out.split() == ["False", "True", "True", "True"]
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        import strategic_reserve_env

        strategic_reserve_env.no_such_name  # noqa: B018


# the one import name: what installs does so under strategic_reserve_env (pyproject's package-dir mapping)
BARE_NAMES = {"agents", "evaluation", "experiments", "evaluate", "train", "train_rllib"}
INSTALLED_FOLDERS = ("strategic_reserve_env", "agents", "evaluation", "models")


def _python_files() -> list[Path]:
    skip = {".git", "build", "runs"}
    return [
        path
        for path in REPO.rglob("*.py")
        if not {part for part in path.relative_to(REPO).parts if part in skip or part.startswith(".venv")}
    ]


def _bare_imports(path: Path, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        found += [f"{path.relative_to(REPO)}:{node.lineno} {m}" for m in modules if m.split(".")[0] in names]
    return found


@pytest.mark.slow
def test_no_module_imports_the_bare_agents_or_evaluation_packages():
    """pytest's `pythonpath = ["."]` would let `import agents` pass here and fail from a wheel."""
    files = _python_files()
    assert len(files) > 50
    leftovers = [hit for path in files for hit in _bare_imports(path, BARE_NAMES - {"experiments"})]
    assert leftovers == []


def test_nothing_installed_imports_or_runs_experiments():
    installed = [path for path in _python_files() if path.relative_to(REPO).parts[0] in INSTALLED_FOLDERS]
    assert any(path.parts[-2] == "agents" for path in installed)
    assert [hit for path in installed for hit in _bare_imports(path, {"experiments"})] == []
    # nor names it as a module to run (a string "experiments.x" handed to python -m)
    assert [str(path) for path in installed if re.search(r"[\"']experiments\.[a-z_]", path.read_text())] == []


def test_the_repository_folders_are_subpackages_of_the_one_import_name():
    printed = run_python(
        "import strategic_reserve_env.agents as a, strategic_reserve_env.evaluation as e, "
        "strategic_reserve_env.models as m\nprint(a.__file__, e.__file__, m.__file__)"
    )
    assert [Path(name).parent.name for name in printed.split()] == ["agents", "evaluation", "models"]


def _package_imports(path: Path) -> set[str]:
    """The `strategic_reserve_env` modules `path` imports (relative imports resolved)."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = module.split(".")[: -node.level]
            found.add(".".join(base + ([node.module] if node.module else [])))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("strategic_reserve_env")}


def test_the_training_layer_sits_between_evaluation_and_the_commands():
    """Only the command-line tools import `strategic_reserve_env.training`, and it imports none of them."""
    package = REPO / "strategic_reserve_env"
    training = sorted((package / "training").glob("*.py"))
    assert {path.stem for path in training} >= {"settings", "pool", "checkpoint", "folder", "loop", "distillation"}
    for path in training:
        assert not [m for m in _package_imports(path) if m.startswith("strategic_reserve_env.commands")], path
    below = [
        path
        for path in _python_files()
        if path.relative_to(REPO).parts[0] in INSTALLED_FOLDERS
        and not {"training", "commands"} & set(path.relative_to(REPO).parts)
        and path.name != "__main__.py"
    ]
    assert len(below) > 40
    users = [str(path) for path in below if any("training" in m.split(".") for m in _package_imports(path))]
    assert users == []
