"""A learned value of a position about to be rolled: the win probability of the player who rolls next.

The value is a function of the *pre-roll* position, seen from the player about
to roll (the *roller*): its checkers `me`, the other player's `opp` and both
reserves. The roll that comes next is a uniformly random square among 36,
so the network is shown what each of those rolls does, square by square:

| per-square feature | value at square `s` |
| --- | --- |
| `own`, `opponent` | 1 where the roller's / the other player's checker is |
| `own_group` | size of the roller's group on `s` (0 if none) |
| `opponent_group` | size of the other player's group on `s` |
| `gain` | the other player's checkers the roller captures if it rolls `s` now |
| `threat` | the roller's checkers the other player would capture if it rolled `s` on this board (its next roll) |

plus both reserves one-hot (`0 .. RESERVE_CAP - 1`, larger ones in the last
slot) and `race`: the logit of expectimax's evaluation of the position (the
reserve-race win probability of `strategic_reserve_env.agents.expectimax.win_probability` at the
roller's decision, averaged over its 36 rolls), divided by `LOGIT_SCALE`.
Sizes and counts are divided by `COUNT_SCALE`. Two positions are
decided without the network and never reach it: a roller whose opponent's
reserve is empty has lost (the game is over), and otherwise a roller with
one checker in reserve wins (it places it after any roll). (An opponent with
one checker left decides nothing yet: the roll may capture some of its
checkers first.)

The network is a small MLP (ReLU hidden layers, one output) that learns a
correction to that evaluation: the value's logit is the race logit plus the
MLP's output, so an untrained network (output 0) is expectimax's leaf. It is fitted
on positions of played games labelled with the game's outcome for the
roller (or lambda-returns bootstrapped from a network, `--lam`), each
position shown in one of the board's 8 symmetries at random in each epoch
(the rules do not change under rotations and mirrors, and every roll is
equally likely):

```text
strategic-reserve value-net data --games 100000 --agents greedy greedy --out /tmp/values.npz
strategic-reserve value-net fit /tmp/values.npz --out models/value_net.safetensors
```

The file is safetensors: the tensors, and the architecture as JSON in the
header (`"strategic_reserve_value"`); loading it runs no code from it.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import BOARD_SIZE, NUM_SQUARES, bitboards_to_array
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.sampling import popcount
from strategic_reserve_env.envs import arena
from strategic_reserve_env.files import outputs
from strategic_reserve_env.files.model_files import Tensor, check_description, check_tensors, header_description

from .expectimax import win_probability
from .greedy import groups_of
from .position import captures_by_roll
from .ppo_file import copy_tensors

FORMAT = "strategic-reserve-value-net"
VERSION = 1
METADATA_KEY = "strategic_reserve_value"
SQUARE_FEATURES = ("own", "opponent", "own_group", "opponent_group", "gain", "threat")
SCALAR_FEATURES = ("race",)
RESERVE_CAP = 20  # one-hot slots per reserve; reserves >= RESERVE_CAP - 1 share the last
COUNT_SCALE = 6.0  # group sizes and capture counts are divided by this
LOGIT_SCALE = 4.0  # the race logit is divided by this in the input (and clipped to +-LOGIT_CLIP)
LOGIT_CLIP = 12.0
NUM_FEATURES = NUM_SQUARES * len(SQUARE_FEATURES) + 2 * RESERVE_CAP + len(SCALAR_FEATURES)
RACE = NUM_FEATURES - 1  # column of the race feature
MAX_WIDTH = 4096  # bounds on the hidden layers a value file may describe
MAX_HIDDEN_LAYERS = 16
DESCRIPTION_KEYS = {"format", "version", "features", "reserve_cap", "hidden", "about"}


class ValueFileError(ValueError):
    """A value-network file that cannot be read, or that describes a network this code does not build."""


def _group_sizes(bits: np.ndarray) -> np.ndarray:
    """(N, 36) size of the group on each square of (N,) bitboards `bits` (0 on squares not in `bits`)."""
    groups = groups_of(bits)  # (N, K)
    sizes = popcount(groups).astype(np.float32)  # (N, K)
    members = bitboards_to_array(groups.reshape(-1)).reshape(groups.shape + (NUM_SQUARES,))  # (N, K, 36)
    return np.einsum("nks,nk->ns", members.astype(np.float32), sizes)


def square_features(me: np.ndarray, opp: np.ndarray) -> np.ndarray:
    """(N, 36, 6) float32 per-square features (`SQUARE_FEATURES`) of (N,) roller/other bitboards."""
    _, gain = captures_by_roll(me, opp)  # (N, 36): opp's checkers lost if the roller rolls s
    return _square_features(me, opp, gain)


def _square_features(me: np.ndarray, opp: np.ndarray, gain: np.ndarray) -> np.ndarray:
    _, threat = captures_by_roll(opp, me)  # (N, 36): the roller's checkers lost if the other player rolls s
    return np.stack(
        [
            bitboards_to_array(me).astype(np.float32),
            bitboards_to_array(opp).astype(np.float32),
            _group_sizes(me) / COUNT_SCALE,
            _group_sizes(opp) / COUNT_SCALE,
            gain.astype(np.float32) / COUNT_SCALE,
            threat.astype(np.float32) / COUNT_SCALE,
        ],
        axis=-1,
    )


def reserve_features(reserve_me: np.ndarray, reserve_opp: np.ndarray) -> np.ndarray:
    """(N, 2 * RESERVE_CAP) float32: both reserves one-hot."""
    eye = np.eye(RESERVE_CAP, dtype=np.float32)
    return np.concatenate(
        [eye[np.minimum(reserve_me, RESERVE_CAP - 1)], eye[np.minimum(reserve_opp, RESERVE_CAP - 1)]], axis=-1
    )


def features(me, opp, reserve_me, reserve_opp) -> np.ndarray:
    """(N, NUM_FEATURES) float32 network input of N pre-roll positions ((N,) int64 arrays, roller's view)."""
    me, opp = np.asarray(me, dtype=np.int64), np.asarray(opp, dtype=np.int64)
    reserve_me, reserve_opp = np.asarray(reserve_me), np.asarray(reserve_opp)
    _, gain = captures_by_roll(me, opp)  # (N, 36)
    race = win_probability(reserve_me[:, None], reserve_opp[:, None] + gain).mean(axis=-1)
    with np.errstate(divide="ignore"):  # a certain race (0 or 1) is clipped to +-LOGIT_CLIP
        race_logit = np.clip(np.log(race) - np.log1p(-race), -LOGIT_CLIP, LOGIT_CLIP) / LOGIT_SCALE
    squares = _square_features(me, opp, gain).reshape(len(me), -1)
    return np.concatenate(
        [squares, reserve_features(reserve_me, reserve_opp), race_logit[:, None].astype(np.float32)], axis=-1
    )


def decided(reserve_me: np.ndarray, reserve_opp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((N,) bool, (N,) float64): which pre-roll positions are decided without the network, and their value."""
    reserve_me, reserve_opp = np.asarray(reserve_me), np.asarray(reserve_opp)
    known = (reserve_me <= 1) | (reserve_opp <= 0)
    return known, np.where(reserve_opp > 0, 1.0, 0.0)


def symmetries() -> np.ndarray:
    """(8, 36) int64: square permutations of the board's rotations and mirrors."""
    rank, file = np.divmod(np.arange(NUM_SQUARES), BOARD_SIZE)
    last = BOARD_SIZE - 1
    maps = []
    for r, f in ((rank, file), (file, rank)):
        for flip_r in (False, True):
            for flip_f in (False, True):
                maps.append(np.where(flip_r, last - r, r) * BOARD_SIZE + np.where(flip_f, last - f, f))
    return np.array(maps, dtype=np.int64)


# ---------------------------------------------------------------- the network


def _logits(module, x):
    """(N,) torch logits of (N, NUM_FEATURES) torch features: the race logit plus the MLP's correction."""
    return module(x)[:, 0] + x[:, RACE] * LOGIT_SCALE


def _network(hidden: list[int]):
    from torch import nn

    layers: list = []
    width = NUM_FEATURES
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    layers.append(nn.Linear(width, 1))
    nn.init.zeros_(layers[-1].weight)  # no correction yet: the untrained value is the race evaluation
    nn.init.zeros_(layers[-1].bias)
    return nn.Sequential(*layers)


class ValueNet:
    """The fitted network: `value(me, opp, reserve_me, reserve_opp)` -> (N,) win probabilities of the roller."""

    def __init__(self, hidden: list[int], about: dict | None = None) -> None:
        import torch

        self.hidden, self.about = list(hidden), dict(about or {})
        self.module = _network(self.hidden).eval()
        self._torch = torch

    def logits(self, x: np.ndarray) -> np.ndarray:
        """(N,) float64 logits of (N, NUM_FEATURES) features."""
        torch = self._torch
        with torch.no_grad():
            return _logits(self.module, torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).double().numpy()

    def value(self, me, opp, reserve_me, reserve_opp) -> np.ndarray:
        """(N,) float64 P(the roller wins) of N pre-roll positions (exact where `decided`)."""
        known, exact = decided(reserve_me, reserve_opp)
        out = exact.astype(np.float64)
        rows = np.flatnonzero(~known)
        if rows.size:
            me, opp = np.asarray(me)[rows], np.asarray(opp)[rows]
            x = features(me, opp, np.asarray(reserve_me)[rows], np.asarray(reserve_opp)[rows])
            out[rows] = 1.0 / (1.0 + np.exp(-self.logits(x)))
        return out

    def save(self, path: str | Path) -> Path:
        """Write the network as a value file (see the module docstring); returns the path."""
        from safetensors.torch import save

        path = Path(path)
        description = {
            "format": FORMAT,
            "version": VERSION,
            "features": list(SQUARE_FEATURES + SCALAR_FEATURES),
            "reserve_cap": RESERVE_CAP,
            "hidden": self.hidden,
            "about": self.about,
        }
        tensors = {k: v.detach().contiguous() for k, v in self.module.state_dict().items()}
        outputs.write_bytes(path, save(tensors, metadata={METADATA_KEY: json.dumps(description)}))
        return path


def expected_tensors(hidden: list[int]) -> dict[str, Tensor]:
    """The tensors of the network with `hidden` layers (built on torch's meta device: nothing allocated)."""
    import torch

    with torch.device("meta"):
        module = _network(hidden)
    return {name: Tensor("F32", tuple(tensor.shape)) for name, tensor in module.named_parameters()}


def load_value_net(path: str | Path) -> ValueNet:
    """The `ValueNet` of a value file; `ValueFileError` says what is wrong with a bad one."""
    from safetensors.torch import load

    path = Path(path)
    if not path.is_file():
        raise ValueFileError(f"{path}: no such value-network file")
    description, found = header_description(path, METADATA_KEY, FORMAT, ValueFileError)
    description = check_description(description, str(path), FORMAT, VERSION, DESCRIPTION_KEYS, ValueFileError)
    if description.get("features") != list(SQUARE_FEATURES + SCALAR_FEATURES) or (
        description.get("reserve_cap") != RESERVE_CAP
    ):
        raise ValueFileError(
            f"{path}: the network reads features {description.get('features')!r} with reserve_cap "
            f"{description.get('reserve_cap')!r}; this code computes {list(SQUARE_FEATURES + SCALAR_FEATURES)} "
            f"with {RESERVE_CAP}"
        )
    hidden = description.get("hidden")
    if (
        not isinstance(hidden, list)
        or len(hidden) > MAX_HIDDEN_LAYERS
        or not all(type(n) is int and 0 < n <= MAX_WIDTH for n in hidden)
    ):
        raise ValueFileError(
            f"{path}: hidden must be a list of at most {MAX_HIDDEN_LAYERS} layer sizes in 1..{MAX_WIDTH}, "
            f"got {hidden if len(repr(hidden)) < 200 else repr(hidden)[:200] + '...'}"
        )
    check_tensors(found, expected_tensors(hidden), str(path), ValueFileError)
    try:
        tensors = load(path.read_bytes())
    except Exception as error:  # safetensors raises its own error types for malformed data
        raise ValueFileError(f"{path}: the tensors do not load ({error})") from None
    net = ValueNet(hidden, description.get("about") if isinstance(description.get("about"), dict) else {})
    copy_tensors(tensors, dict(net.module.named_parameters()), str(path), ValueFileError)
    return net


# ---------------------------------------------------------------- data and fitting


class Exploring:
    """`agent`, except that each decision is, with probability `epsilon`, a uniformly random legal square
    (so the data holds the positions a search compares, not only those the agent's own choices lead to)."""

    uses_observation = True

    def __init__(self, agent, epsilon: float) -> None:
        self.agent, self.epsilon = agent, epsilon
        self.name = f"{agent.name}+explore={epsilon}"

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        chosen = np.asarray(self.agent.act(observations, masks, rng))
        legal = np.asarray(masks, dtype=bool)
        random = np.argmax(np.where(legal, rng.random(legal.shape), -1.0), axis=-1)
        return np.where(rng.random(len(chosen)) < self.epsilon, random, chosen)


def play_positions(agents: list, games: int, seed: int, config: Config) -> dict[str, np.ndarray]:
    """Pre-roll positions of `games` games of `agents[0]` against `agents[1]` (seats alternating), seen
    from the roller, with `won` (the roller won the game) and `game` (its number); truncated games dropped."""
    found: dict[str, list] = {key: [] for key in ("me", "opp", "reserve_me", "reserve_opp", "game", "roller")}

    def keep(state) -> None:
        rows = np.flatnonzero(state.legal != 0)  # just rolled: undo the roll's captures
        found["me"].append(state.me[rows])
        found["opp"].append(state.opp[rows] | state.captured[rows])
        found["reserve_me"].append(state.reserve_me[rows])
        found["reserve_opp"].append(state.reserve_opp[rows] - popcount(state.captured[rows]))
        found["game"].append(rows)
        found["roller"].append(state.to_move[rows])

    result = arena.play(
        agents,
        np.arange(games) % 2,
        10**6 * seed + np.arange(games),
        config,
        [np.random.default_rng([seed, index]) for index in range(2)],
        on_ply=keep,
    )
    data = {key: np.concatenate(value) for key, value in found.items()}
    data["won"] = result.winner[data["game"]] == data.pop("roller")
    keep_rows = ~result.truncated[data["game"]]
    data["game"] = data["game"] + 10**6 * seed
    return {key: value[keep_rows] for key, value in data.items()}


_print = functools.partial(print, flush=True)  # progress lines appear at once in a log file


def td_targets(game: np.ndarray, won: np.ndarray, value: np.ndarray, lam: float) -> np.ndarray:
    """(N,) float64 lambda-returns of N positions for their rollers: `game` (N,) game numbers, positions of
    a game in the order played; `won` (N,) bool outcomes; `value` (N,) the bootstrap values.

    Along each game, `G_t = (1 - lam) * (1 - value_{t+1}) + lam * (1 - G_{t+1})` (the next position
    belongs to the other player), and `G = won` at a game's last position: `lam = 1` is the outcome.
    """
    order = np.argsort(game, kind="stable")
    ends = np.append(game[order][1:] != game[order][:-1], True).tolist()
    outcome, bootstrap = won[order].astype(float).tolist(), value[order].tolist()
    returns = [0.0] * len(order)
    following = 0.0
    for i in range(len(order) - 1, -1, -1):
        following = outcome[i] if ends[i] else (1 - lam) * (1 - bootstrap[i + 1]) + lam * (1 - following)
        returns[i] = following
    result = np.empty(len(order))
    result[order] = returns
    return result


def fit(
    data: dict[str, np.ndarray],
    hidden: list[int],
    epochs: int,
    seed: int,
    holdout: float = 0.05,
    batch: int = 1024,
    lr: float = 1e-3,
    log=_print,
    bootstrap: ValueNet | None = None,
    lam: float = 1.0,
    targets: np.ndarray | None = None,
    start: ValueNet | None = None,
) -> tuple[ValueNet, dict]:
    """Fit a `ValueNet` on `data` (from `play_positions`), holding out `holdout` of the games;
    returns the net and its figures (held-out log-loss against the outcomes, of the net, of always predicting
    the mean and of the race evaluation). The targets are the outcomes, or with `bootstrap` (a net, or
    `None` for the race evaluation) and `lam < 1` the lambda-returns of `td_targets`, or `targets`
    ((N,) win probabilities of the positions, e.g. `exact_backup`'s). `start`: a net of the same
    layers to start from (a warm start; a copy is fitted), else a fresh one."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    known, _ = decided(data["reserve_me"], data["reserve_opp"])
    rows = np.flatnonzero(~known)
    games = np.unique(data["game"][rows])
    held = np.isin(data["game"][rows], rng.choice(games, int(len(games) * holdout), replace=False))
    x = np.concatenate(
        [
            features(*(data[k][rows[i : i + 200_000]] for k in ("me", "opp", "reserve_me", "reserve_opp")))
            for i in range(0, len(rows), 200_000)
        ]
    )
    y = data["won"][rows].astype(np.float32)
    target = y
    if targets is not None:
        target = np.asarray(targets, dtype=np.float32)[rows]
    elif lam < 1:
        guide = bootstrap if bootstrap is not None else ValueNet([1])  # an untrained net: the race evaluation
        value = decided(data["reserve_me"], data["reserve_opp"])[1]
        value[rows] = 1.0 / (1.0 + np.exp(-guide.logits(x)))
        target = td_targets(data["game"], data["won"], value, lam)[rows].astype(np.float32)
    x_train, y_train, x_test, y_test = x[~held], target[~held], x[held], y[held]
    perms = symmetries()
    width = len(SQUARE_FEATURES)
    net = ValueNet(hidden, {"positions": int(len(x_train)), "epochs": epochs, "seed": seed})
    if start is not None:
        net.module.load_state_dict(start.module.state_dict())  # copies: the start net is left as it was
    optimiser = torch.optim.Adam(net.module.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()

    def test_loss() -> float:
        net.module.eval()
        logits = net.logits(x_test)
        return float(np.mean(np.logaddexp(0, logits) - y_test * logits))

    base = float(-np.mean(y_test * np.log(y_train.mean()) + (1 - y_test) * np.log(1 - y_train.mean())))
    race = test_loss()  # the untrained network is the race evaluation
    log(
        f"{len(x_train)} training positions, {len(x_test)} held out; held-out log-loss: constant {base:.4f}, "
        f"race evaluation {race:.4f}"
    )
    for epoch in range(epochs):
        net.module.train()
        order = rng.permutation(len(x_train))
        start, total = time.perf_counter(), 0.0
        for first in range(0, len(order), batch):
            idx = order[first : first + batch]
            xb = x_train[idx].copy()
            squares = xb[:, : NUM_SQUARES * width].reshape(len(idx), NUM_SQUARES, width)
            perm = perms[rng.integers(0, len(perms), len(idx))]  # one random symmetry per position
            xb[:, : NUM_SQUARES * width] = np.take_along_axis(squares, perm[:, :, None], axis=1).reshape(len(idx), -1)
            logits = _logits(net.module, torch.from_numpy(xb))
            loss = loss_fn(logits, torch.from_numpy(y_train[idx]))  # soft targets when lam < 1
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(idx)
        for group in optimiser.param_groups:
            group["lr"] *= 0.7
        log(
            f"epoch {epoch + 1}: train {total / len(x_train):.4f} held-out {test_loss():.4f} "
            f"({time.perf_counter() - start:.0f} s)"
        )
    figures = {
        "held_out_log_loss": round(test_loss(), 4),
        "constant_log_loss": round(base, 4),
        "race_log_loss": round(race, 4),
        "held_out_positions": int(len(x_test)),
    }
    net.about |= figures
    net.module.eval()
    return net, figures
