"""Fitted value iteration with exact backups against the lambda-return recipe, on the same positions.

`python -m experiments.exact_backup --out /tmp/exact-backup [--iterations 4] [--games 1000]` starts both
chains from the shipped value net (`models/value_net.safetensors`) and per iteration:

1. plays `games` self-play games of `value:NET,depth=1` (`NET` the exact chain's current net) with a
   random legal placement `epsilon` of the time (`Exploring`,
   as the models/README recipe), and adds their pre-roll positions to the replay (every iteration's);
2. exact chain: targets of every replay position by `exact_backup`
   under the current net, then a fit warm-started from it;
3. lambda chain (the recipe's `value-net fit --lam 0.5 --bootstrap NET`): lambda-returns along the same
   replay's games bootstrapped from the lambda chain's current net, a fit from scratch;
4. logs both nets' log-loss on common held-out games (against the outcomes) and their play strength:
   `strategic-reserve evaluate value:NEW,depth=1 greedy --games G --seed S` (paired dice, luck-adjusted).

Each iteration's line goes to `OUT/progress.jsonl` as it ends, each net to `OUT/{exact,lam}-K.safetensors`.
The positions are played by the exact chain's nets only, so the lambda chain sees the same positions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from strategic_reserve_env import models
from strategic_reserve_env.agents.value_network import Exploring, decided, features, fit, load_value_net, play_positions
from strategic_reserve_env.agents.value_search import ValueSearchAgent, exact_backup
from strategic_reserve_env.core.config import Config

POSITION_KEYS = ("me", "opp", "reserve_me", "reserve_opp")


@dataclass(frozen=True)
class Settings:
    """One run of the comparison."""

    out: str
    """folder of the nets and progress.jsonl"""
    iterations: int = 4
    """rounds of self-play, targets and fit"""
    games: int = 1000
    """self-play games a round"""
    epsilon: float = 0.2
    """probability of a random legal placement in self-play and in the held-out games (the recipe's 0.2)"""
    epochs: int = 3
    """epochs of each fit (the recipe's 3)"""
    lam: float = 0.5
    """lambda of the lambda chain's returns (the recipe's 0.5)"""
    seed: int = 100
    """self-play of round K uses seed `seed + K`; fits seed K"""
    held_out_games: int = 400
    """games of the common held-out set: the shipped net's exploring self-play"""
    held_out_seed: int = 999
    """their seed (no training round uses it)"""
    eval_games: int = 2000
    """games of each evaluation against greedy"""
    eval_seed: int = 41
    """seed of each evaluation (the same dice for every net)"""


def log_loss(net, data: dict[str, np.ndarray]) -> float:
    """Mean log-loss of `net`'s logits against the outcomes on the positions not `decided`."""
    known, _ = decided(data["reserve_me"], data["reserve_opp"])
    rows = np.flatnonzero(~known)
    logits = net.logits(features(*(data[k][rows] for k in POSITION_KEYS)))
    won = data["won"][rows].astype(float)
    return float(np.mean(np.logaddexp(0, logits) - won * logits))


ROW = re.compile(r"^value:\S+\s+greedy\s+([\d.]+)\s+\[([\d.]+), ([\d.]+)\]\s+([\d.]+)\s+\[([\d.]+), ([\d.]+)\]")


def strength(path: Path, settings: Settings) -> dict[str, float]:
    """`value:PATH,depth=1` against greedy by the evaluate command: raw and luck-adjusted scores with 95 %."""
    command = [sys.executable, "-m", "strategic_reserve_env", "evaluate", f"value:{path},depth=1", "greedy"]
    command += ["--games", str(settings.eval_games), "--seed", str(settings.eval_seed), "--no-progress"]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = [ROW.match(line) for line in text.splitlines()]
    numbers = [float(x) for x in next(m for m in found if m).groups()]
    return dict(zip(("raw", "raw_low", "raw_high", "adjusted", "low", "high"), numbers, strict=True))


def quiet(*args, **kwargs) -> None:
    """No progress lines from the fits."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for field in dataclasses.fields(Settings):
        required = field.default is dataclasses.MISSING
        parser.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=str if field.name == "out" else type(field.default),
            required=required,
            default=None if required else field.default,
        )
    settings = Settings(**vars(parser.parse_args(argv)))
    import torch

    torch.set_num_threads(1)
    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    config = Config()
    shipped = load_value_net(models.path(models.VALUE_NET))
    hidden = shipped.hidden

    def self_play(net, games: int, seed: int) -> dict[str, np.ndarray]:
        agent = Exploring(ValueSearchAgent(net, depth=1), settings.epsilon)
        return play_positions([agent, agent], games, seed, config)

    def record(line: dict) -> None:
        print(json.dumps(line), flush=True)
        with open(out / "progress.jsonl", "a") as file:
            file.write(json.dumps(line) + "\n")

    start = time.perf_counter()
    held = self_play(shipped, settings.held_out_games, settings.held_out_seed)
    shipped.save(out / "shipped.safetensors")
    record(
        {
            "iteration": 0,
            "settings": dataclasses.asdict(settings),
            "held_out_positions": int((~decided(held["reserve_me"], held["reserve_opp"])[0]).sum()),
            "log_loss": round(log_loss(shipped, held), 4),
            "strength": strength(out / "shipped.safetensors", settings),
            "wall_s": round(time.perf_counter() - start),
        }
    )
    exact_net = lam_net = shipped
    replay: list[dict[str, np.ndarray]] = []
    for iteration in range(1, settings.iterations + 1):
        tick = time.perf_counter()
        replay.append(self_play(exact_net, settings.games, settings.seed + iteration))
        data = {key: np.concatenate([part[key] for part in replay]) for key in replay[0]}
        played = time.perf_counter()
        targets = exact_backup(exact_net, *(data[k] for k in POSITION_KEYS))
        backed = time.perf_counter()
        exact_net, _ = fit(data, hidden, settings.epochs, iteration, targets=targets, start=exact_net, log=quiet)
        fitted = time.perf_counter()
        lam_net, _ = fit(data, hidden, settings.epochs, iteration, bootstrap=lam_net, lam=settings.lam, log=quiet)
        lam_fitted = time.perf_counter()
        line: dict = {"iteration": iteration, "positions": len(data["me"])}
        for name, net in (("exact", exact_net), ("lam", lam_net)):
            path = net.save(out / f"{name}-{iteration}.safetensors")
            line[name] = {"log_loss": round(log_loss(net, held), 4), "strength": strength(path, settings)}
        line["seconds"] = {
            "self_play": round(played - tick),
            "backup": round(backed - played),
            "exact_fit": round(fitted - backed),
            "lam_fit": round(lam_fitted - fitted),
            "evaluations": round(time.perf_counter() - lam_fitted),
        }
        record(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
