"""Registration of the envs with Gymnasium's and PettingZoo's registries, without importing either eagerly.

The core (`board`, `config`, `rules`, `engine`, `game`, `records`) needs
numpy only, so importing the package must not import Gymnasium or PettingZoo (a few hundred modules). Neither
registry offers plugin discovery (Gymnasium >= 1.0 dropped its entry-point plugins; PettingZoo's registry has
none), so `install` registers with each library as soon as that library is imported: at once if it
already is, otherwise right after its module finishes executing (a one-shot `sys.meta_path` hook that
wraps the library's loader). `import strategic_reserve_env` followed, in either order, by
`import gymnasium` makes `gymnasium.make(GYM_ID)` work, and likewise `pettingzoo.make("aec", ENV_NAME)`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType

#: the PettingZoo AEC env's name (``pettingzoo.make("aec", ENV_NAME)``)
ENV_NAME = "strategic_reserve_v2"
#: the Gymnasium id of the single-agent env and its vector env
GYM_ID = "StrategicReserve-v1"
AEC_ENTRY_POINT = "strategic_reserve_env.envs.aec_env:env"
GYM_ENTRY_POINT = "strategic_reserve_env.envs.gym_env:StrategicReserveEnv"
GYM_VECTOR_ENTRY_POINT = "strategic_reserve_env.envs.gym_env:StrategicReserveVectorEnv"


def register_gymnasium() -> None:
    """Register `GYM_ID` with Gymnasium's registry (once; imports gymnasium)."""
    import gymnasium

    if GYM_ID not in gymnasium.registry:
        gymnasium.register(id=GYM_ID, entry_point=GYM_ENTRY_POINT, vector_entry_point=GYM_VECTOR_ENTRY_POINT)


def register_pettingzoo() -> None:
    """Register `ENV_NAME` with PettingZoo's AEC registry (once; PettingZoo < 1.26 has none)."""
    try:
        from pettingzoo import aec_registry, register
    except ImportError:  # PettingZoo < 1.26 has no registry
        return
    if not any(spec.entry_point == AEC_ENTRY_POINT for spec in aec_registry.values()):
        register("aec", ENV_NAME, entry_point=AEC_ENTRY_POINT)


#: library module name -> its registration
REGISTRATIONS: dict[str, Callable[[], None]] = {"gymnasium": register_gymnasium, "pettingzoo": register_pettingzoo}


class _HookedLoader(importlib.abc.Loader):
    """A loader that runs `after()` once `loader` has executed the module; everything else is delegated."""

    def __init__(self, loader: importlib.abc.Loader, after: Callable[[], None]) -> None:
        self._loader = loader
        self._after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name: str) -> object:  # get_resource_reader, is_package, get_code, ...
        return getattr(self._loader, name)


class _AfterImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a module with a pending hook it wraps the loader the other finders find."""

    def __init__(self) -> None:
        self.pending: dict[str, Callable[[], None]] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        after = self.pending.pop(fullname, None)
        if after is None:
            return None
        if not self.pending:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None  # not installed: nothing to register with
        if spec.loader is not None:
            spec.loader = _HookedLoader(spec.loader, after)
        return spec


def install() -> None:
    """Register with each library of `REGISTRATIONS` now if it is imported, else right after its import."""
    finder = next((f for f in sys.meta_path if isinstance(f, _AfterImportFinder)), None)
    for name, register in REGISTRATIONS.items():
        if name in sys.modules:
            register()
            continue
        if finder is None:
            finder = _AfterImportFinder()
            sys.meta_path.insert(0, finder)
        finder.pending[name] = register
