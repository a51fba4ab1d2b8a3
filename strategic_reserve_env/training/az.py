"""AlphaZero-style self-play with chance nodes (`train-az`): `AZSettings`, `Trainer`.

Stochastic MuZero's search on the true model (agents/mctx_search.py: `place` the decision edge, `roll` the
chance edge), a policy-value net (agents/az_net.py) as its leaf evaluation; the shape of pgx's
examples/alphazero. Each iteration:

1. self-play: `games` games in lockstep, `steps` decisions each; each decision searches (`simulations`,
   Dirichlet noise at the root) and plays a placement drawn from the visit counts; finished games start again;
2. targets: the search's visit distribution (policy) and the game's result for the player to move (value,
   -1 .. 1; decisions whose game has not ended by the iteration's last step get no value target);
3. `updates` Adam steps on the iteration's decisions (cross-entropy on the legal placements plus squared
   value error).

The run folder is the run lifecycle's (`run`), with `checkpoint.npz` (everything a resume needs, checked
before use), `model.safetensors`, `progress.jsonl` and `tb/`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.files import outputs
from strategic_reserve_env.files.model_files import Tensor, check_tensors, npz_arrays, npz_headers
from strategic_reserve_env.interrupts import Signals

from . import run as lifecycle
from .folder import check_belongs, identity
from .run import Run, RunKind, say
from .settings import (
    ACTIONS,
    PROCESS,
    RunSettings,
    changeable,
    check_memory,
    defining,
    process_field,
    setting,
    with_role,
)

CHECKPOINT, MODEL, PROGRESS, LOGS = "checkpoint.npz", "model.safetensors", "progress.jsonl", "tb"
KIND = RunKind(
    command="train-az",
    results=(MODEL, PROGRESS, LOGS),
    state=(CHECKPOINT,),
    folders=(LOGS,),
    length="iterations",
    unit="iterations",
    model="mctx:net={out}/" + MODEL,
    progress=PROGRESS,
    stopped_key="iteration",
)
COMMAND = KIND.command
MAX_WIDTH = 4096
GAME_BYTES = 4096  # an upper bound of one game's state in pgx_env, its observation and mask included
_COMPILED: dict = {}  # the defining settings -> the jitted iteration: a resumed run compiles nothing new


@dataclass(frozen=True)
class AZSettings(RunSettings):
    """Settings of an AlphaZero-style run (every field is a command-line option)."""

    iterations: int = changeable(100, 1)
    """Iterations of self-play and training; the only setting --resume may change (not below the iterations
    done)."""
    games: int = setting(64, 1)
    """Self-play games played in lockstep."""
    steps: int = setting(32, 1)
    """Decisions of each game per iteration."""
    simulations: int = setting(32, 1)
    """Search simulations per self-play decision."""
    hidden: tuple[int, ...] = (128, 128)
    """The network's hidden layer widths (each 1..4096)."""
    learning_rate: float = setting(1e-3, 0, 1, open_low=True)
    """Adam's step size, in (0, 1]."""
    updates: int = setting(4, 1)
    """Adam steps per iteration, each on a disjoint random part of the iteration's decisions (it must divide
    games x steps)."""
    dirichlet_fraction: float = setting(0.25, 0, 1)
    """Weight of the Dirichlet noise mixed into the root's priors in self-play, in [0, 1]."""
    dirichlet_alpha: float = setting(0.3, 0, open_low=True)
    """Concentration of that noise (> 0)."""
    out: str = process_field("runs/az")
    """Folder of the run's files (settings, checkpoint, model, progress, TensorBoard)."""

    def __post_init__(self) -> None:
        """`ValueError` (one line naming the option) for the first bad setting, before anything is written."""
        super().__post_init__()
        if not self.hidden or not all(1 <= width <= MAX_WIDTH for width in self.hidden):
            raise ValueError(f"--hidden needs one or more widths in 1..{MAX_WIDTH}, got {list(self.hidden)}")
        if (self.games * self.steps) % self.updates:
            raise ValueError(f"--updates {self.updates} must divide games x steps = {self.games * self.steps}")
        check_memory(self, memory_needed)


def memory_needed(settings: AZSettings) -> dict[str, float]:
    """Bytes the run will allocate, roughly (from above), per setting that sizes it: the network (weights,
    gradients, Adam's moments and the checkpoint's copies), the iteration's decisions, the search trees of a
    decision and the games."""
    sizes = [math.prod(OBSERVATION_SHAPE), *settings.hidden]
    parameters = sum(a * b + b for a, b in zip(sizes, sizes[1:], strict=False)) + (settings.hidden[-1] + 1) * (
        ACTIONS + 1
    )
    decision = math.prod(OBSERVATION_SHAPE) + ACTIONS + 4.0 * ACTIONS + 16
    nodes = settings.simulations + 1
    return {
        "--hidden": 4.0 * parameters * 8,
        "--games x --steps (the iteration's decisions)": 4.0 * settings.games * settings.steps * decision,
        "--games x --simulations (the search trees)": 2.0 * settings.games * nodes * (GAME_BYTES + 8 * 4 * ACTIONS),
        "--games (the games)": 4.0 * settings.games * GAME_BYTES,
    }


class Trainer(lifecycle.Trainer):
    """train-az on the run lifecycle: its jitted functions and its state (network, optimiser, games in
    progress, key), built after the claim."""

    KIND = KIND

    def build(self, run: Run) -> tuple[int | None, int | None, str]:
        """The state of a new run, or on resume that of its checkpoint (`load_checkpoint`)."""
        import jax
        import jax.numpy as jnp
        import optax

        from strategic_reserve_env.agents import az_net
        from strategic_reserve_env.agents.mctx_search import TrueModel
        from strategic_reserve_env.envs import pgx_env

        settings = self.settings
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
        shared = json.dumps(defining(settings), sort_keys=True)
        if shared not in _COMPILED:
            _COMPILED[shared] = jax.jit(self._iteration)
        self._iterate = _COMPILED[shared]
        if settings.resume and os.path.lexists(run.out / CHECKPOINT):
            self.load_checkpoint(run.out / CHECKPOINT, run.belongs)
        return self.iteration or None, None, ""

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
        """One iteration: self-play, targets, updates; returns its statistics (floats; `value_loss` None
        when no decision of the iteration had a value target: no game ended)."""
        import jax

        self.key, key = jax.random.split(self.key)
        self.params, self.opt_state, self.games, stats = self._iterate(self.params, self.opt_state, key, self.games)
        self.iteration += 1
        numbers: dict = {name: float(value) for name, value in stats.items()}
        if not numbers["value_targets"]:
            numbers["value_loss"] = None
        return numbers

    def _leaves(self, belongs: tuple[str, str]) -> dict[str, np.ndarray]:
        import jax

        arrays = {f"params/{name}": np.asarray(value) for name, value in self.params.items()}
        for group, tree in (("opt", self.opt_state), ("games", self.games)):
            for i, leaf in enumerate(jax.tree.leaves(tree)):
                arrays[f"{group}/{i}"] = np.asarray(leaf)
        arrays["key"] = np.asarray(jax.random.key_data(self.key))
        arrays["iteration"] = np.asarray(self.iteration, dtype=np.int64)
        return arrays | identity(belongs, arrays=True)

    def save_checkpoint(self, path: Path, belongs: tuple[str, str]) -> None:
        """Everything a resume needs, with the run id and settings digest it `belongs` to, atomically."""
        with outputs.atomic(path) as handle:
            np.savez(handle, **self._leaves(belongs))

    def load_checkpoint(self, path: Path, belongs: tuple[str, str]) -> None:
        """Continue from `path` (written by this run, `belongs`: its run id and settings digest): its arrays'
        names, shapes and types are checked against this run's before any is read, and their values (its run
        and settings, an iteration >= 1, finite network and optimiser numbers) before any is used;
        `ValueError` naming the file otherwise."""
        import jax
        import jax.numpy as jnp

        expected = {name: Tensor(str(a.dtype), a.shape) for name, a in self._leaves(belongs).items()}
        check_tensors(npz_headers(path), expected, f"{path} (a run with other settings, or of an older version?)")
        arrays = npz_arrays(path, expected)
        check_belongs(path, arrays, belongs)
        iteration = int(arrays["iteration"])
        if iteration < 1:
            raise ValueError(f"{path}: iteration {iteration} is not a count of iterations done (damaged?)")
        for name, array in arrays.items():
            if name.startswith(("params/", "opt/")) and array.dtype.kind == "f" and not np.isfinite(array).all():
                raise ValueError(f"{path}: {name} holds NaN or infinite numbers (damaged?); it is not used")

        def rebuilt(group: str, tree):
            leaves = [jnp.asarray(arrays[f"{group}/{i}"]) for i in range(len(jax.tree.leaves(tree)))]
            return jax.tree.unflatten(jax.tree.structure(tree), leaves)

        self.params = {name: jnp.asarray(arrays[f"params/{name}"]) for name in self.params}
        self.opt_state, self.games = rebuilt("opt", self.opt_state), rebuilt("games", self.games)
        self.key = jax.random.wrap_key_data(jnp.asarray(arrays["key"]))
        self.iteration = iteration

    def train(self, run: Run, signals: Signals) -> dict:
        """Iterate to `settings.iterations`; after each its progress line, checkpoint, model and logs."""
        from tensorboard.summary import Writer

        from strategic_reserve_env.agents import az_net

        settings, out = self.settings, run.out
        about = {k: v for k, v in dataclasses.asdict(settings).items() if k not in with_role(settings, PROCESS)}
        with outputs.naming(out / LOGS):
            writer = Writer(str(out / LOGS))

        def step(iteration: int) -> dict:
            started = time.perf_counter()
            stats = self.iterate() | {"seconds": time.perf_counter() - started}
            with outputs.naming(out / LOGS):
                for name, value in stats.items():
                    if value is not None:
                        writer.add_scalar(f"az/{name}", value, step=iteration)
                writer.flush()
            return {"iteration": iteration} | stats

        def save(iteration: int) -> None:
            self.save_checkpoint(out / CHECKPOINT, run.belongs)
            az_net.save(out / MODEL, self.params, {"settings": about, "iteration": iteration})

        if self.iteration < settings.iterations:
            say(f"iteration {self.iteration + 1}: compiling self-play and the update first (the slow one)")
        with contextlib.closing(writer):
            lifecycle.iterate(run, signals, step, save, self.line)
        files = f"the run's files: {out} ({CHECKPOINT}, {PROGRESS}, {LOGS}/)"
        say(f"wrote {out / MODEL} (agent spec mctx:net={out / MODEL}); {files}")
        return {"iterations": self.iteration}

    def line(self, row: dict) -> str:
        """What an iteration did."""
        value = "no value targets" if row["value_loss"] is None else f"value loss {row['value_loss']:.4f}"
        return (
            f"iteration {row['iteration']}/{self.settings.iterations}: policy loss {row['policy_loss']:.4f}, "
            f"{value}, {row['games_finished']:.0f} games finished, {row['seconds']:.1f} s"
        )

    def stopped(self, run: Run, stop: BaseException) -> None:
        """The stop, as the progress file's last line."""
        lifecycle.append_progress(run.out / PROGRESS, {"stopped": str(stop), "iteration": run.checkpoint})
