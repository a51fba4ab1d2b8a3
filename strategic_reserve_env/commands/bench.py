"""Plies per second of uniformly random legal play, one process, at several engine batch sizes."""

from __future__ import annotations

import argparse
import sys

from strategic_reserve_env import bench
from strategic_reserve_env.board import DEFAULT_RESERVE, brief
from strategic_reserve_env.config import Config
from strategic_reserve_env.policies import seconds_argument


def batch_size(text: str) -> int:
    """A ``--batch-sizes`` value: an integer in 1..``bench.MAX_BATCH``, checked before anything is allocated."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= bench.MAX_BATCH:
        raise argparse.ArgumentTypeError(f"must be integers in 1..{bench.MAX_BATCH:,}, got {brief(text)}")
    return value


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; ``prog``: the name ``--help`` shows."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--seconds", type=seconds_argument, default=2.0, help="time per measurement, a finite number > 0 (default 2)"
    )
    parser.add_argument(
        "--batch-sizes",
        type=batch_size,
        nargs="+",
        default=None,
        metavar="B",
        help="batch sizes (default 1 64 4096; with --jax 256 4096 65536)",
    )
    parser.add_argument(
        "--jax",
        action="store_true",
        help="the JAX path (pgx_env, the extra jax) beside the numpy engine at each batch size, without and "
        "with the observation, compile times apart",
    )
    parser.add_argument("--reserve", type=int, default=DEFAULT_RESERVE, help="reserve size (default %(default)s)")
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print plies/s of random legal play; exit 2 with one line on stderr for bad settings (``--reserve 20``)."""
    args = build_parser(prog).parse_args(argv)
    try:
        config = Config(reserve=args.reserve)
        if any(size < 1 for size in args.batch_sizes or ()):
            raise ValueError(f"batch sizes must be positive, got {' '.join(map(str, args.batch_sizes))}")
        print(f"random legal play, reserve {config.reserve}, {args.seconds:g} s per line, one process")
        if args.jax:
            sizes = tuple(args.batch_sizes or bench.JAX_BATCH_SIZES)
            lines = bench.run_jax(seconds=args.seconds, batch_sizes=sizes, config=config)
        else:
            lines = iter(
                bench.run(seconds=args.seconds, batch_sizes=tuple(args.batch_sizes or (1, 64, 4096)), config=config)
            )
        for line in lines:
            print(line, flush=True)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
