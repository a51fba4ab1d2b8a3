"""Which optional extra of ``strategic-reserve-env`` brings each library that the core does not install.

The core needs numpy, Pillow, Gymnasium and PettingZoo only. A command or an agent spec that needs more (scipy for
the evaluation's intervals, torch for the networks, ray for RLlib) says so in one line naming the extra to
install, through :func:`needs_extra`, instead of a ``ModuleNotFoundError`` traceback.
"""

from __future__ import annotations

DISTRIBUTION = "strategic-reserve-env"  # the name pip installs

#: top-level module -> the extra of pyproject.toml that installs it
EXTRA_OF_MODULE: dict[str, str] = {
    "scipy": "train",
    "torch": "train",
    "stable_baselines3": "train",
    "sb3_contrib": "train",
    "safetensors": "train",
    "tqdm": "train",
    "matplotlib": "train",
    "tensorboard": "train",
    "ray": "rllib",
    "jax": "jax",
    "jaxlib": "jax",
    "pgx": "jax",
    "mctx": "mctx",
    "optax": "mctx",
    "pyspiel": "openspiel",
    "open_spiel": "openspiel",
    "pygame": "render",
    "mkdocs": "docs",
}


class MissingExtraError(ImportError, ValueError):
    """A library of an optional extra is not installed. An ``ImportError`` (what it is) and a ``ValueError``
    (what the commands report in one line for an agent spec they cannot load)."""

    def __init__(self, message: str, module: str, extra: str) -> None:
        super().__init__(message, name=module)
        self.extra = extra


def install_line(extra: str) -> str:
    """The pip command that installs ``extra``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def needs_extra(error: ModuleNotFoundError, what: str) -> MissingExtraError | None:
    """A one-line :class:`MissingExtraError` saying that ``what`` (e.g. ``strategic-reserve evaluate`` or
    ``agent spec 'ppo'``) needs the library ``error`` could not import, and the extra to install; None when
    that library is not one of an extra's (the error is then someone else's: re-raise it)."""
    module = (error.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    return MissingExtraError(f"{what} needs {module}, which is not installed: {install_line(extra)}", module, extra)


__all__ = ["DISTRIBUTION", "EXTRA_OF_MODULE", "MissingExtraError", "install_line", "needs_extra"]
