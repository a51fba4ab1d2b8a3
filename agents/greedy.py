"""The greedy agent: the placement that minimises the checkers the opponent's next roll sends back.

For each legal placement `p` the expected loss over the opponent's 36
equally likely rolls is computed exactly from the groups of both colours.
With `me' = me + {p}` (`p` joins the mover's groups `N(p)` that touch
it, making a group of size `1 + sum of their sizes`), the total loss over
the 36 rolls is:

```text
  sum over the mover's groups g of |g|**2              (the roll hits g: g goes)
+ sum over the opponent's groups H of |H| * S_H        (the roll hits H: every
                                                         mover group touching H goes)
```

where `S_H` is the size of the mover's groups touching `H`. Both sums are
the position's values before `p`, corrected for the groups `p` merges, so
no capture has to be simulated per roll: the work is a few (B, 36, groups)
array operations. The tests check the result against the plain reference
implementation of the rules, roll by roll.
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.core.board import NUM_SQUARES, bitboards_to_array
from strategic_reserve_env.core.rules import adjacent, group
from strategic_reserve_env.core.sampling import popcount

from .position import argmin_random_ties, read_position

NOT_COMPUTED = 10**6  # loss shown for squares that were not evaluated


def groups_of(bits: np.ndarray) -> np.ndarray:
    """(B, K) int64 bitboards of the groups of each game's checkers, padded with 0 (K: most groups in the batch)."""
    rest, found = np.array(bits, dtype=np.int64), []
    while np.any(rest):
        lowest = rest & -rest
        found.append(group(lowest, bits))
        rest = rest ^ found[-1]
    return np.stack(found, axis=1) if found else np.zeros((len(rest), 1), dtype=np.int64)


def _neighbour_squares(groups: np.ndarray) -> np.ndarray:
    """(B, 36, K) bool: square p is orthogonally next to group k, for (B, K) group bitboards."""
    batch, count = groups.shape
    return bitboards_to_array(adjacent(groups).reshape(-1)).reshape(batch, count, NUM_SQUARES).transpose(0, 2, 1)


def expected_losses(me: np.ndarray, opp: np.ndarray, legal: np.ndarray | None = None) -> np.ndarray:
    """(B, 36) total over the opponent's 36 rolls of the mover's checkers lost, if the mover places on each square.

    Divide by 36 for the expectation. Only squares where `legal` ((B, 36) bool; default: every
    empty square) are given; the others hold `NOT_COMPUTED`.
    """
    if legal is None:
        legal = ~bitboards_to_array(me | opp)
    groups_me, groups_opp = groups_of(me), groups_of(opp)  # (B, K), (B, M)
    size_me = popcount(groups_me).astype(np.float64)  # (B, K) exact: small ints
    size_opp = popcount(groups_opp).astype(np.float64)  # (B, M)
    # (B, K, M): the mover's group i touches the opponent's group j
    touching = ((adjacent(groups_me)[:, :, None] & groups_opp[:, None, :]) != 0).astype(np.float64)
    threat = touching @ size_opp[:, :, None]  # (B, K, 1): sizes of the opponent's groups touching group i
    per_group = np.concatenate([size_me[:, :, None], size_me[:, :, None] ** 2, size_me[:, :, None] * threat], axis=-1)
    joins = _neighbour_squares(groups_me).astype(np.float64)  # (B, 36, K): p touches the mover's group i
    meets = _neighbour_squares(groups_opp)  # (B, 36, M): p touches the opponent's group j
    joined = joins @ per_group  # (B, 36, 3): sizes, squared sizes and threats of the groups p joins
    total = per_group.sum(axis=1)[:, None, :]  # (B, 1, 3): the same over all the mover's groups
    merged = 1 + joined[..., 0]  # (B, 36) size of the group p ends in
    enemy_hits = total[..., 1] - joined[..., 1] + merged * merged
    merged_touches = ((joins @ touching) > 0) | meets  # (B, 36, M)
    friendly_hits = total[..., 2] - joined[..., 2] + merged * (merged_touches @ size_opp[:, :, None])[..., 0]
    return np.where(legal, np.rint(enemy_hits + friendly_hits).astype(np.int64), NOT_COMPUTED)


class GreedyAgent:
    """One-ply lookahead: minimise the expected number of the mover's checkers captured by the opponent's next roll."""

    name = "greedy"
    uses_observation = True

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        position = read_position(observations, masks)
        legal = np.asarray(masks, dtype=bool)
        losses = expected_losses(position.me, position.opp, legal)
        return argmin_random_ties(losses.astype(np.float64), legal, rng, step=1.0)

    def __repr__(self) -> str:
        return "GreedyAgent()"
