"""The expectimax agent: search through the opponent's roll and the agent's own next roll.

Value of placing on `p` (every chance node enumerated exactly, 36 rolls):

- `depth=1`: the average, over the opponent's roll `r1`, of the win
  probability at the opponent's decision that follows;
- `depth=2`: the average over `r1` and over the agent's own next roll
  `r2` of the win probability at the agent's next decision.

**Evaluation function.** A win probability from the two reserves at a
decision, the reserve race being what decides the game:

```text
P(mover wins | mover reserve m, opponent reserve o) =
    1                                   if m == 1 (the mover places its last checker)
    0                                   if o == 1 < m (the opponent does so next)
    sigmoid((A * (o - m) + B) / sqrt(m + o))   otherwise
```

with `A = 1.553` and `B = 0.368` (`strategic_reserve_env.core.luck.race_win_probability`,
`RACE_A` and `RACE_B`), fitted by logistic regression to the
96,661 decisions of 4,000 greedy self-play games (``python -m
experiments.fit_race_model`` reproduces the fit). Reserves at the next decision
come from exact captures: `r1` sends the agent's checkers back to its
reserve, `r2` the opponent's. The opponent's placement between the two
rolls is not modelled except for its reserve (it adds one checker and
cannot capture).

Depth 2 searches the `width` best placements of the depth-1 search; ties
are broken at random. Everything is vectorised over games, placements and
rolls with the engine's own `resolve_roll`.
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.core.board import BIT_ARRAY, NUM_SQUARES, checked_int
from strategic_reserve_env.core.luck import race_win_probability

from .position import argmin_random_ties, captures_by_roll, read_position

DEPTHS = (1, 2)
SEARCH_CHUNK = 256
"""Games searched at once. Depth 2 holds (games, width, 36, 36) arrays, 7,776 values a game at width 6:
256 games keep each near 16 MB. Measured on 2,000 positions at depth 2 (the whole process, 3 searches, median
of 5 paired runs): 256 at once takes 0.67 of the time of 2,000 at once and 0.68 of 1,000 at once, with a
sixth of the peak memory (193 MiB against 1,129 MiB); 64 at once is 1.3 times slower than 256."""
#: P(the player to decide wins) from both reserves: the reserve-race model, which lives in the core
#: (:mod:`strategic_reserve_env.core.luck`, where the luck of a roll uses it too)
win_probability = race_win_probability


class ExpectimaxAgent:
    """Expectimax over the opponent's roll (depth 1) and the agent's own next roll (depth 2)."""

    uses_observation = True

    def __init__(self, depth: int = 2, width: int = 6) -> None:
        if depth not in DEPTHS:
            raise ValueError(f"expectimax depth must be one of {DEPTHS}, got {depth!r}")
        width = checked_int("expectimax width", width, 1, NUM_SQUARES)
        self.depth, self.width = depth, width
        self.name = f"expectimax:depth={depth}" + (f",width={width}" if width != 6 else "")

    def _search(self, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, ...]:
        """The search of `act`: `(legal, value, candidates, deep)` with `legal` (B, 36) bool,
        `value` (B, 36) the depth-1 values, and at depth 2 `candidates` (B, k) the squares searched
        deeper and `deep` (B, k) their depth-2 values (both None at depth 1). Games are searched
        `SEARCH_CHUNK` at a time (each game's search is its own, so the result is the same)."""
        if len(masks) <= SEARCH_CHUNK:
            return self._search_chunk(observations, masks)
        parts = [
            self._search_chunk(observations[start : start + SEARCH_CHUNK], masks[start : start + SEARCH_CHUNK])
            for start in range(0, len(masks), SEARCH_CHUNK)
        ]
        return tuple(None if part[0] is None else np.concatenate(part) for part in zip(*parts, strict=True))

    def _search_chunk(self, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, ...]:
        """`_search` of at most `SEARCH_CHUNK` games."""
        position = read_position(observations, masks)
        legal = np.asarray(masks, dtype=bool)
        m, o = position.reserve_me, position.reserve_opp
        placed = position.me[:, None] | BIT_ARRAY[None, :]  # (B, 36 placements)
        me_left, lost = captures_by_roll(position.opp[:, None], placed)  # (B, 36 p, 36 r1)
        my_reserve = (m - 1)[:, None, None] + lost  # at my next decision
        value = 1.0 - win_probability(o[:, None, None], my_reserve).mean(axis=-1)  # the opponent decides next
        value = np.where((m == 1)[:, None], 1.0, value)  # placing the last checker wins at once
        if self.depth == 1:
            return legal, value, None, None
        ranked = np.argsort(np.where(legal, -value, np.inf), axis=-1, kind="stable")
        candidates = ranked[:, : self.width]  # (B, k); illegal ones sort last and are masked below
        rows = np.arange(len(candidates))[:, None]
        _, gained = captures_by_roll(me_left[rows, candidates], position.opp[:, None, None])  # (B, k, 36 r1, 36 r2)
        opponent_reserve = (o - 1)[:, None, None, None] + gained  # the opponent placed once, then r2 captured
        leaf = win_probability(my_reserve[rows, candidates][..., None], opponent_reserve)
        leaf = np.where((o == 1)[:, None, None, None], 0.0, leaf)  # the opponent's placement won first
        deep = np.where((m == 1)[:, None], 1.0, leaf.mean(axis=(-1, -2)))  # (B, k)
        return legal, value, candidates, deep

    def move_values(
        self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """(B, 36) float64: the value `act` maximises for each searched square (at depth 2 the
        `width` squares searched deeper; at depth 1 every legal one), NaN for the others. `rng` is not
        used (the search has no chance of its own); searches that have, like the rollout agent's, draw it
        from `rng`, so distillation passes one to every expert."""
        legal, value, candidates, deep = self._search(observations, masks)
        if candidates is None:
            return np.where(legal, value, np.nan)
        rows = np.arange(len(candidates))[:, None]
        values = np.full(legal.shape, np.nan)
        values[rows, candidates] = np.where(legal[rows, candidates], deep, np.nan)
        return values

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        legal, value, candidates, deep = self._search(observations, masks)
        if candidates is None:
            return argmin_random_ties(-value, legal, rng, step=1e-9)
        rows = np.arange(len(candidates))[:, None]
        choice = argmin_random_ties(-deep, legal[rows, candidates], rng, step=1e-9)
        return candidates[np.arange(len(candidates)), choice]

    def __repr__(self) -> str:
        return f"ExpectimaxAgent(depth={self.depth}, width={self.width})"
