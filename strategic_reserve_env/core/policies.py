"""The agent interface (`Policy`), used for opponents and by every agent, and the uniformly random policy.

`as_policy` turns a `Policy` or a plain callable with
the signature of `Policy.act` into a policy (agent spec strings are the agents' layer's:
`strategic_reserve_env.agents.as_agent`); `policy_name` is how
errors and reports name a policy (its `name` attribute if it has one);
`choose` asks a policy for the squares of a position and checks them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .board import BIT_ARRAY, NUM_SQUARES, bitboards_to_array, brief, names_of, square_name
from .observation import planes
from .sampling import nth_set_bit, popcount, uniform_square

_MASK_BYTES = (NUM_SQUARES + 7) // 8


@runtime_checkable
class Policy(Protocol):
    """The agent interface: an object that acts on a batch of B games.

    `act(observations, masks, rng) -> actions`: `observations` are `(B, 6, 6, 9)` int8 planes from
    the mover's side (`strategic_reserve_env.core.observation`), `masks` `(B, 36)` legal placements
    (bool, or 0/1 ints), `rng` a `numpy.random.Generator`; `actions` are `(B,)` integer square
    indices, legal in every row whose mask has a legal square (other rows are not looked at).

    Optional attributes, read with `getattr`: `name`, the agent's display name (for an agent of
    `agents`, its canonical spec string: two agents with the same name are the same agent);
    `uses_observation = False`, when the masks are all the policy needs: it is then given `None` for
    `observations` (which saves the encoding); `act_from_uniforms(legal, uniforms)`, its choice made
    from given uniform numbers, `legal` (B,) int64 bitboards and `uniforms` (B,) floats in [0, 1), one
    per game: the single-agent envs (`strategic_reserve_env.envs.learner`) call it with each game's own
    chance stream, so that game's choices depend on its seed alone (`UniformRandomPolicy` has it).

    `isinstance(x, Policy)` checks that `x` has an `act` method.
    """

    def act(self, observations: Any, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B,) integer squares, one legal placement per game that has one (`observations`: (B, 6, 6, 9)
        int8, or None for a policy whose `uses_observation` is False)."""
        ...


class NamedPolicy(Policy, Protocol):
    """A `Policy` with a `name`, as every agent `strategic_reserve_env.agents.load_agent` returns."""

    name: str


class UniformRandomPolicy:
    """Uniform over the legal squares."""

    uses_observation = False

    def act(self, observations, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One legal square per row of `(B, 36)` masks, uniformly at random (0 where none is legal)."""
        masks = np.asarray(masks, dtype=bool)
        packed = np.zeros((masks.shape[0], 8), dtype=np.uint8)  # bit s of row i = masks[i, s]
        packed[:, :_MASK_BYTES] = np.packbits(masks, axis=1, bitorder="little")
        bits = packed.view(np.int64)[:, 0]
        k = (rng.random(len(bits)) * popcount(bits)).astype(np.int64)
        return np.where(bits != 0, nth_set_bit(bits, k), 0)

    def act_from_uniforms(self, legal: np.ndarray | int, uniforms: np.ndarray | float) -> np.ndarray | int:
        """(B,) int64 squares: the one `act` picks when its generator draws `uniforms` ((B,) floats
        in [0, 1)), from `legal` ((B,) int64 bitboards); 0 where none is legal. One game's Python ints
        (`legal` an int, `uniforms` a float) give an int."""
        if type(legal) is int:
            return uniform_square(legal, uniforms) if legal else 0
        return np.where(legal != 0, uniform_square(legal, uniforms), 0)

    def __repr__(self) -> str:
        return "UniformRandomPolicy()"


class _CallablePolicy:
    """Adapts a function `f(observations, masks, rng)` to the `Policy` interface."""

    uses_observation = True

    def __init__(self, function: Callable) -> None:
        self.function = function
        self.name = getattr(function, "__name__", repr(function))

    def act(self, observations, masks, rng):
        return self.function(observations, masks, rng)

    def __repr__(self) -> str:
        return f"policy({self.function!r})"


def as_policy(policy: Policy | Callable) -> Policy:
    """A `Policy` (an object with `act`), or a callable with the signature of `Policy.act`, as a `Policy`;
    `ValueError` for anything else. Agent spec strings (`"random"`, `"greedy"`, `"my_agent.py:act"`) are
    turned into agents in one place, the agents' layer: `strategic_reserve_env.agents.as_agent` takes a
    spec, a `Policy` or a callable."""
    if isinstance(policy, str):
        raise ValueError(
            f"an agent spec string ({policy!r:.80}) is loaded by strategic_reserve_env.agents.as_agent,"
            " not by the core's policies.as_policy"
        )
    if isinstance(policy, Policy):
        return policy
    if callable(policy):
        return _CallablePolicy(policy)
    raise ValueError(
        f"a policy must be 'random', an object with act(observations, masks, rng), or a callable; got {policy!r:.80}"
    )


class InvalidActionsError(ValueError):
    """A policy's answer is not one legal square per game; `row` is the first faulty row of the
    batch it was given (None when the answer as a whole is wrong, e.g. its shape)."""

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.row = row


def checked_actions(answer, legal: np.ndarray) -> np.ndarray:
    """A policy's `answer` for positions whose legal squares are `legal` ((B,) int64 bitboards) as
    (B,) int64 squares, after checking that it is an integer array of shape (B,) holding a legal square
    in every row that has one (other rows, where no placement is due, are not looked at).
    `InvalidActionsError` says what is wrong, and in which row."""
    legal = np.asarray(legal, dtype=np.int64)
    batch = legal.shape[0]
    try:
        actions = np.asarray(answer)
    except ValueError as error:  # e.g. a ragged list
        raise InvalidActionsError(f"returned {answer!r:.80}, not an array of squares ({error})") from None
    if actions.ndim == 0:
        raise InvalidActionsError(f"returned {brief(answer)}, not an array of {batch} square index(es)")
    if actions.shape != (batch,):
        raise InvalidActionsError(f"returned shape {actions.shape} for {batch} game(s), expected ({batch},)")
    if actions.dtype.kind not in "iu":
        raise InvalidActionsError(
            f"returned {actions.dtype} values, not integer square indices 0..35"
            f" (the first: {brief(actions[:1].tolist()[0])})",
            0,
        )
    playable = legal != 0
    outside = playable & ((actions < 0) | (actions >= NUM_SQUARES))  # before any cast: uint64 2**63 stays itself
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise InvalidActionsError(f"returned {int(actions[row])}, not a square index 0..35", row)
    actions = actions.astype(np.int64)
    illegal = playable & ((BIT_ARRAY.take(actions, mode="clip") & legal) == 0)
    if illegal.any():
        row = int(np.flatnonzero(illegal)[0])
        raise InvalidActionsError(
            f"returned {square_name(int(actions[row]))} (square {actions[row]}), "
            f"which is not a legal placement; legal: {names_of(int(legal[row]))}",
            row,
        )
    return actions


def policy_name(policy: Policy) -> str:
    """A policy's display name: its `name` attribute, else its type's name."""
    return str(getattr(policy, "name", type(policy).__name__))


def policy_inputs(policy: Policy, position) -> tuple[np.ndarray | None, np.ndarray]:
    """`(observations, masks)` for `policy.act` from a batched State ((B, 6, 6, 9) planes from the
    mover's side, or None for a policy that does not use them; (B, 36) bool masks), or from a
    `Game` (a batch of one)."""
    single = type(position.me) is int
    observations = None
    if getattr(policy, "uses_observation", True):
        observations = planes(position, position.to_move)
        observations = observations[None] if single else observations
    masks = bitboards_to_array(np.atleast_1d(np.asarray(position.legal, dtype=np.int64)))
    return observations, masks


def choose(policy: Policy, position, rng: np.random.Generator):
    """The squares `policy` picks for the player to move: (B,) int64 for a batched State, an int
    for a `Game`. Observations are encoded only for policies
    that use them. The answer is checked (`checked_actions`): a policy that returns a wrong
    shape or dtype, or a square that is out of range or illegal, raises `InvalidActionsError`."""
    legal = np.atleast_1d(np.asarray(position.legal, dtype=np.int64))
    actions = checked_actions(policy.act(*policy_inputs(policy, position), rng), legal)
    return int(actions[0]) if type(position.me) is int else actions
