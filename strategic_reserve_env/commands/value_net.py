"""The value network of the value agent: play games for its data, fit it (the train extra).

strategic-reserve value-net data --games 100000 --agents greedy greedy --out /tmp/values.npz
strategic-reserve value-net fit /tmp/values.npz --out models/value_net.safetensors
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from strategic_reserve_env.commands.arguments import command_parser


def _joined(parts: list[dict]) -> dict:
    """The arrays of `parts` (dicts of arrays with the same keys), concatenated key by key."""
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Make data or fit a network; returns the exit status."""
    parser = command_parser(prog, __doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    making = commands.add_parser("data", help="play games and keep their positions with the outcome")
    making.add_argument("--games", type=int, default=20000)
    making.add_argument("--agents", nargs=2, default=["greedy", "greedy"], help="the two agent specs")
    making.add_argument("--seed", type=int, default=0)
    making.add_argument("--batch", type=int, default=2000)
    making.add_argument("--epsilon", type=float, default=0.0, help="probability of a random placement")
    making.add_argument("--out", required=True)
    fitting = commands.add_parser("fit", help="fit a value network on data files")
    fitting.add_argument("data", nargs="+")
    fitting.add_argument("--hidden", default="256,256")
    fitting.add_argument("--epochs", type=int, default=6)
    fitting.add_argument("--seed", type=int, default=0)
    fitting.add_argument("--lam", type=float, default=1.0, help="lambda of the TD targets (1: the outcomes)")
    fitting.add_argument("--bootstrap", help="value file of the TD targets (default: the race evaluation)")
    fitting.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import torch

    from strategic_reserve_env.agents import load_agent
    from strategic_reserve_env.agents.value_network import Exploring, fit, load_value_net, play_positions
    from strategic_reserve_env.core.config import Config

    torch.set_num_threads(1)
    if args.command == "data":
        agents = [Exploring(load_agent(spec), args.epsilon) for spec in args.agents]
        parts = []
        for first in range(0, args.games, args.batch):
            count = min(args.batch, args.games - first)
            parts.append(play_positions(agents, count, args.seed * 10**3 + first // args.batch, Config()))
            print(f"{first + count} games", flush=True)
        np.savez(args.out, **_joined(parts))
        print(f"wrote {args.out}")
        return 0
    parts = []
    for name in args.data:
        with np.load(name, allow_pickle=False) as archive:
            parts.append({key: archive[key] for key in archive.files})
    bootstrap = load_value_net(args.bootstrap) if args.bootstrap else None
    hidden = [int(n) for n in args.hidden.split(",")]
    net, figures = fit(_joined(parts), hidden, args.epochs, args.seed, bootstrap=bootstrap, lam=args.lam)
    net.about |= {"data": [Path(name).name for name in args.data], "lam": args.lam, "bootstrap": args.bootstrap}
    net.save(args.out)
    print(json.dumps(figures), f"wrote {args.out}")
    return 0
