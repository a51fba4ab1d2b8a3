"""AlphaZero-style self-play with chance nodes: Stochastic MuZero's search on the true model, a policy-value net.

The shape of pgx's examples/alphazero, with the rolls as chance nodes (agents/mctx_search.py):

1. self-play: ``games`` games in lockstep, ``steps`` decisions each per iteration; each decision searches
   (``simulations``, Dirichlet noise at the root) with the network as the leaf evaluation and plays a
   placement drawn from the visit counts; finished games start again;
2. targets: the search's visit distribution (policy) and the game's result for the player to move (value,
   -1 .. 1; decisions whose game has not ended by the iteration's last step get no value target);
3. ``updates`` Adam steps on the iteration's decisions (cross-entropy on the legal placements plus squared
   value error).

Writes in ``--out``: ``model.safetensors`` (the network, agents/az_net.py; play it with
``mctx:net=PATH`` or ``mctx:net=PATH,simulations=0`` for the network alone), ``checkpoint.npz`` (everything a
``--resume`` needs, the games in progress included: a resumed run gives the same network as an uninterrupted
one), ``progress.jsonl`` (one line per iteration) and ``tb/`` (TensorBoard). Needs the ``mctx`` extra.

    strategic-reserve train-az --out runs/az --iterations 200
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from strategic_reserve_env.commands.evaluate import INTERRUPTED, TERMINATED, Terminated, stop_signals
from strategic_reserve_env.model_files import Tensor, check_tensors, npz_headers
from strategic_reserve_env.outputs import atomic, check_out, lock

CHECKPOINT, MODEL, PROGRESS = "checkpoint.npz", "model.safetensors", "progress.jsonl"
_COMPILED: dict = {}  # Settings (out and resume blanked) -> the jitted iteration: a resumed run compiles nothing new


@dataclass(frozen=True)
class Settings:
    """Everything a run depends on (a resumed run must be given the same settings)."""

    out: str = "runs/az"
    """Folder of the run's files (model, checkpoint, progress, TensorBoard)."""
    iterations: int = 100
    """Iterations of self-play and training (a resumed run continues up to this number)."""
    games: int = 64
    """Self-play games played in lockstep."""
    steps: int = 32
    """Decisions of each game per iteration."""
    simulations: int = 32
    """Search simulations per self-play decision."""
    hidden: tuple[int, ...] = (128, 128)
    """The network's hidden layer widths."""
    learning_rate: float = 1e-3
    """Adam's step size."""
    updates: int = 4
    """Adam steps per iteration, each on a disjoint random part of the iteration's decisions."""
    dirichlet_fraction: float = 0.25
    """Weight of the Dirichlet noise mixed into the root's priors in self-play."""
    dirichlet_alpha: float = 0.3
    """Concentration of that noise."""
    seed: int = 0
    """Seed of everything random in the run (network, search, dice)."""
    resume: bool = False
    """Continue from ``out``'s checkpoint instead of starting over."""
    about: dict = field(default_factory=dict, compare=False)
    """Free text kept in the model file's description (not a setting)."""


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line: one option per field of :class:`Settings`, its docstring as the help."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    helps = _field_docs()
    for item in dataclasses.fields(Settings):
        if item.name == "about":
            continue
        option = "--" + item.name.replace("_", "-")
        if item.type in ("bool", bool):
            parser.add_argument(option, action="store_true", help=helps[item.name])
        elif item.name == "hidden":
            parser.add_argument(option, type=_widths, default=item.default, help=helps[item.name] + " (e.g. 128,128)")
        else:
            kind = {"int": int, "float": float, "str": str}[str(item.type)]
            parser.add_argument(
                option, type=kind, default=item.default, help=f"{helps[item.name]} (default %(default)s)"
            )
    return parser


def _field_docs() -> dict[str, str]:
    """Each field's docstring, read from this module's source (the one place they are written)."""
    import ast
    import inspect

    body = ast.parse(inspect.getsource(Settings)).body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[node.target.id] = str(after.value.value)  # type: ignore[union-attr]
    return docs


def _widths(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated layer widths, got {text!r}") from None
    if not widths or not all(0 < w <= 4096 for w in widths):
        raise argparse.ArgumentTypeError(f"widths must be in 1..4096, got {text!r}")
    return widths


def check(settings: Settings) -> None:
    """``ValueError`` naming the first setting out of range."""
    for name in ("iterations", "games", "steps", "simulations", "updates"):
        if getattr(settings, name) < 1:
            raise ValueError(f"--{name} must be >= 1, got {getattr(settings, name)}")
    if (settings.games * settings.steps) % settings.updates:
        raise ValueError(f"--updates {settings.updates} must divide games x steps = {settings.games * settings.steps}")
    if not settings.learning_rate > 0 or not 0 <= settings.dirichlet_fraction <= 1 or not settings.dirichlet_alpha > 0:
        raise ValueError("--learning-rate and --dirichlet-alpha must be > 0, --dirichlet-fraction in 0..1")


class Trainer:
    """The run's jitted functions and its state (network, optimiser, games in progress, key)."""

    def __init__(self, settings: Settings) -> None:
        import jax
        import jax.numpy as jnp
        import optax

        from strategic_reserve_env import pgx_env
        from strategic_reserve_env.agents import az_net
        from strategic_reserve_env.agents.mctx_search import TrueModel

        self.settings = settings
        self.env = pgx_env.StrategicReserve()
        self.model = TrueModel(self.env, evaluate=az_net.evaluation)
        self.optimiser = optax.adam(settings.learning_rate)
        key, init_key, roll_key = jax.random.split(jax.random.key(settings.seed), 3)
        self.params = az_net.init(init_key, list(settings.hidden))
        self.opt_state = self.optimiser.init(self.params)
        squares = jax.random.randint(roll_key, (settings.games,), 0, 36)
        fresh = self.env.new_game()
        self.start = jax.tree.map(lambda x: jnp.broadcast_to(x, (settings.games,) + x.shape), fresh)
        self.games = jax.vmap(self.env.roll)(self.start, squares)
        self.key = key
        self.iteration = 0
        shared = dataclasses.replace(settings, out="", resume=False)  # what the compiled iteration depends on
        if shared not in _COMPILED:
            _COMPILED[shared] = jax.jit(self._iteration)
        self._iterate = _COMPILED[shared]

    def _selfplay(self, params, key, games):
        import jax
        import jax.numpy as jnp

        s = self.settings

        def step(games, key):
            search_key, roll_key = jax.random.split(key)
            output = self.model.search(
                params,
                search_key,
                games,
                s.simulations,
                dirichlet_fraction=s.dirichlet_fraction,
                dirichlet_alpha=s.dirichlet_alpha,
            )
            player = games.current_player
            after = jax.vmap(self.env.place)(games, output.action)
            reward = jnp.take_along_axis(after.rewards, player[:, None], axis=-1)[:, 0]
            done = after.terminated | after.truncated
            squares = jax.random.randint(roll_key, done.shape, 0, 36)
            rolled, fresh = jax.vmap(self.env.roll)(after, squares), jax.vmap(self.env.roll)(self.start, squares)
            restart = jax.tree.map(
                lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b), fresh, rolled
            )
            record = (games.observation, games.legal_action_mask, output.action_weights, reward, done)
            return restart, record

        games, (observation, mask, policy, reward, done) = jax.lax.scan(step, games, jax.random.split(key, s.steps))

        def back(carry, row):  # the result for the player to move, from the game's end backwards
            value, known = carry
            reward, done = row
            value = jnp.where(done, reward, -value)
            known = done | known
            return (value, known), (value, known)

        start = (jnp.zeros(done.shape[1]), jnp.zeros(done.shape[1], dtype=bool))
        _, (target, known) = jax.lax.scan(back, start, (reward, done), reverse=True)
        return games, (observation, mask, policy, target, known), done

    def _loss(self, params, batch):
        import jax
        import jax.numpy as jnp

        from strategic_reserve_env.agents import az_net
        from strategic_reserve_env.agents.mctx_search import masked_logits

        observation, mask, policy, target, known = batch
        logits, value = az_net.apply(params, observation)
        log_probs = jax.nn.log_softmax(masked_logits(logits, mask))
        policy_loss = -jnp.mean(jnp.sum(jnp.where(mask, policy * log_probs, 0.0), axis=-1))
        value_loss = jnp.sum(known * (value - target) ** 2) / jnp.maximum(jnp.sum(known), 1)
        return policy_loss + value_loss, (policy_loss, value_loss)

    def _iteration(self, params, opt_state, key, games):
        import jax
        import optax

        s = self.settings
        play_key, order_key = jax.random.split(key)
        games, batch, done = self._selfplay(params, play_key, games)
        flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batch)
        order = jax.random.permutation(order_key, s.games * s.steps).reshape(s.updates, -1)

        def update(carry, rows):
            params, opt_state = carry
            part = jax.tree.map(lambda x: x[rows], flat)
            (_, (policy_loss, value_loss)), grads = jax.value_and_grad(self._loss, has_aux=True)(params, part)
            updates, opt_state = self.optimiser.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), (policy_loss, value_loss)

        (params, opt_state), (policy_loss, value_loss) = jax.lax.scan(update, (params, opt_state), order)
        stats = {
            "policy_loss": policy_loss.mean(),
            "value_loss": value_loss.mean(),
            "games_finished": done.sum(),
            "value_targets": batch[4].mean(),
        }
        return params, opt_state, games, stats

    def iterate(self) -> dict:
        """One iteration: self-play, targets, updates; returns its statistics (floats)."""
        import jax

        self.key, key = jax.random.split(self.key)
        self.params, self.opt_state, self.games, stats = self._iterate(self.params, self.opt_state, key, self.games)
        self.iteration += 1
        return {name: float(value) for name, value in stats.items()}

    # ------------------------------------------------------------------ checkpoints

    def _leaves(self) -> dict[str, np.ndarray]:
        import jax

        arrays = {f"params/{name}": np.asarray(value) for name, value in self.params.items()}
        for group, tree in (("opt", self.opt_state), ("games", self.games)):
            for i, leaf in enumerate(jax.tree.leaves(tree)):
                arrays[f"{group}/{i}"] = np.asarray(leaf)
        arrays["key"] = np.asarray(jax.random.key_data(self.key))
        arrays["iteration"] = np.asarray(self.iteration, dtype=np.int64)
        return arrays

    def save_checkpoint(self, path: Path) -> None:
        """Everything a resume needs, atomically."""
        with atomic(path) as handle:
            np.savez(handle, **self._leaves())

    def load_checkpoint(self, path: Path) -> None:
        """Continue from ``path`` (written by a run with the same settings): its arrays are checked against
        this run's before any is read."""
        import jax
        import jax.numpy as jnp

        expected = {name: Tensor(str(a.dtype), a.shape) for name, a in self._leaves().items()}
        check_tensors(npz_headers(path), expected, f"{path} (a run with other settings?)")
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in expected}

        def rebuilt(group: str, tree):
            leaves = [jnp.asarray(arrays[f"{group}/{i}"]) for i in range(len(jax.tree.leaves(tree)))]
            return jax.tree.unflatten(jax.tree.structure(tree), leaves)

        self.params = {name: jnp.asarray(arrays[f"params/{name}"]) for name in self.params}
        self.opt_state, self.games = rebuilt("opt", self.opt_state), rebuilt("games", self.games)
        self.key = jax.random.wrap_key_data(jnp.asarray(arrays["key"]))
        self.iteration = int(arrays["iteration"])


def train(settings: Settings, log=print) -> Path:
    """Run ``settings``; returns the model file's path."""

    check(settings)
    out = check_out(settings.out, [CHECKPOINT, MODEL, PROGRESS])
    with lock(out):
        trainer = Trainer(settings)
        if settings.resume:
            if not (out / CHECKPOINT).is_file():
                raise ValueError(f"--resume: {out / CHECKPOINT} does not exist")
            trainer.load_checkpoint(out / CHECKPOINT)
            log(f"resumed at iteration {trainer.iteration}")
        elif (out / CHECKPOINT).exists():
            raise ValueError(f"--out {out} holds a checkpoint: --resume to continue it, or choose another folder")
        from tensorboard.summary import Writer

        writer = Writer(str(out / "tb"))
        try:
            with stop_signals():
                _loop(trainer, settings, out, writer, log)
        except (KeyboardInterrupt, Terminated) as stopped:
            reason = "interrupted (SIGINT)" if isinstance(stopped, KeyboardInterrupt) else "terminated (SIGTERM)"
            with open(out / PROGRESS, "a", encoding="utf-8") as progress:
                progress.write(json.dumps({"stopped": reason, "iteration": trainer.iteration}) + "\n")
            log(f"{reason} after iteration {trainer.iteration}; --resume continues from its checkpoint")
            raise
        finally:
            writer.close()
    return out / MODEL


def _loop(trainer: Trainer, settings: Settings, out: Path, writer, log) -> None:
    """Iterate up to ``settings.iterations``, writing the checkpoint, model, progress and logs after each."""
    from strategic_reserve_env.agents import az_net

    settings_json = {k: v for k, v in dataclasses.asdict(settings).items() if k not in ("about", "resume")}
    while trainer.iteration < settings.iterations:
        started = time.perf_counter()
        stats = trainer.iterate()
        stats["seconds"] = time.perf_counter() - started
        for name, value in stats.items():
            writer.add_scalar(f"az/{name}", value, step=trainer.iteration)
        writer.flush()
        trainer.save_checkpoint(out / CHECKPOINT)
        about = {"settings": settings_json, "iteration": trainer.iteration} | settings.about
        az_net.save(out / MODEL, trainer.params, about)
        with open(out / PROGRESS, "a", encoding="utf-8") as progress:
            progress.write(json.dumps({"iteration": trainer.iteration} | stats) + "\n")
        log(
            f"iteration {trainer.iteration}/{settings.iterations}: policy loss {stats['policy_loss']:.4f}, "
            f"value loss {stats['value_loss']:.4f}, {stats['games_finished']:.0f} games finished, "
            f"{stats['seconds']:.1f} s"
        )


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The ``train-az`` command: exit 0 when done, 2 for bad settings (one line on stderr)."""
    args = build_parser(prog).parse_args(argv)
    import mctx  # noqa: F401  (without the mctx extra: the registry's one line naming it)
    import optax  # noqa: F401

    try:
        train(Settings(**vars(args)))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return INTERRUPTED
    except Terminated:
        return TERMINATED
    return 0
