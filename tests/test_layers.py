"""Import layers: the core needs numpy only; the env adapters and their registrations load on demand.

Each check runs in a fresh interpreter (this test process has imported everything already)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

ADAPTER_LIBRARIES = ("pettingzoo", "gymnasium", "torch", "jax", "pgx")  # jax, pgx: the extra jax
CORE = (
    "strategic_reserve_env",
    "strategic_reserve_env.core.board",
    "strategic_reserve_env.core.config",
    "strategic_reserve_env.core.rules",
    "strategic_reserve_env.core.engine",
    "strategic_reserve_env.core.game",
    "strategic_reserve_env.files.records",
    "strategic_reserve_env.core.dice",
    "strategic_reserve_env.core.observation",
    "strategic_reserve_env.core.luck",
)


def run_python(code: str) -> str:
    """stdout of `code` run by a fresh interpreter from the checkout's root; fails with its stderr."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("module", CORE)
def test_core_imports_no_adapter_library(module):
    loaded = run_python(
        f"import sys\nimport {module}\nprint(' '.join(name for name in {ADAPTER_LIBRARIES!r} if name in sys.modules))"
    )
    assert loaded.split() == [], f"import {module} loaded {loaded.split()}"


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
        "from strategic_reserve_env.envs.aec_env import raw_env as direct\n"
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
    """The repository's Python files, outside .git, build, runs and the venvs (never walked into: a CI clone's
    venvs hold a hundred thousand files)."""
    skip = {".git", "build", "runs"}
    found = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [name for name in subfolders if name not in skip and not name.startswith(".venv")]
        found += [Path(folder, name) for name in files if name.endswith(".py")]
    return found


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


def _package_dirs() -> dict[str, Path]:
    """Import name -> folder of every installed package root: `strategic_reserve_env` and the folders pyproject's
    `[tool.setuptools.package-dir]` maps into it (read as text: `tomllib` needs Python 3.11)."""
    section = (REPO / "pyproject.toml").read_text().partition("[tool.setuptools.package-dir]")[2].partition("\n[")[0]
    mapped = dict(re.findall(r'^"([\w.]+)"\s*=\s*"([\w./-]+)"', section, re.MULTILINE))
    return {"strategic_reserve_env": REPO / "strategic_reserve_env"} | {k: REPO / v for k, v in mapped.items()}


def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module the package installs (a package by its `__init__.py`)."""
    modules = {}
    for package, folder in _package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules[".".join((package, *parts))] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its file: at the top, inside functions (lazy
    imports), under `if TYPE_CHECKING` alike. `from package import name` counts as an import of the submodule
    `package.name` where that is a module, else of `package` itself."""
    modules = _module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1] if node.level else [])
                source = ".".join(part for part in (base, node.module or "") if part)
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names
                ]
            else:
                continue
            edges |= {target for target in targets if target in modules and target != name}
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative): each is a
    set of modules that import each other, directly or through others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return cycles


def test_import_cycles_are_found_through_lazy_imports():
    """The detector itself: three modules importing in a ring are one cycle, a one-way chain is none."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle_counting_imports_inside_functions():
    """Imports point one way (docs/ARCHITECTURE.md, Layers): no module reaches itself through the modules it
    imports, lazy imports inside functions included, so each layer can be read, tested and moved alone."""
    graph = import_graph()
    assert len(graph) > 80 and "strategic_reserve_env.agents.value_network" in graph
    # the learner loads an opponent's spec inside a function: that import counts
    assert "strategic_reserve_env.agents" in graph["strategic_reserve_env.envs.learner"]
    assert import_cycles(graph) == []


UNKNOWN_AT_MOVE: set[str] = set()  # top-level modules the move into layers did not know


def test_no_two_modules_share_a_file_name():
    """The package is laid out by layer (docs/ARCHITECTURE.md, "Package layout"), each module named for what it
    holds: a file name says which module it is (`rules.py` is the core's rules, not also a command)."""
    names: dict[str, list[str]] = {}
    for module, path in _module_files().items():
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(module)
    assert {name: modules for name, modules in names.items() if len(modules) > 1} == {}


def test_the_layers_are_subpackages():
    """Every layer of the layout is a folder of the package, and the package's own folder holds only its entry
    points and plumbing."""
    modules = _module_files()
    for layer in ("core", "files", "pictures", "envs", "speed", "training", "commands", "agents", "evaluation"):
        assert any(name.startswith(f"strategic_reserve_env.{layer}.") for name in modules), layer
    top = {
        name
        for name in modules
        if name.count(".") == 1 and (REPO / "strategic_reserve_env").joinpath(name.split(".")[1] + ".py").is_file()
    }
    plumbing = {"__main__", "extras", "interrupts", "version"}  # the entry, and leaves every layer may read
    assert top <= {f"strategic_reserve_env.{name}" for name in plumbing} | UNKNOWN_AT_MOVE
