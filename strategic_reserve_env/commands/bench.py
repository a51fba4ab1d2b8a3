"""Plies per second of uniformly random legal play, one process, at several engine batch sizes."""

from __future__ import annotations

import argparse

from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import command_parser, seconds_argument
from strategic_reserve_env.core.board import DEFAULT_RESERVE, brief
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.speed import engine_speed as bench
from strategic_reserve_env.speed import jax_speed as bench_jax

MCTX_SIMULATIONS = 32  # the search of --mctx's agent


def batch_size(text: str) -> int:
    """A `--batch-sizes` value: an integer in 1..`bench_jax.MAX_BATCH` (the numpy lines' limit: `main`)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= bench_jax.MAX_BATCH:
        raise argparse.ArgumentTypeError(f"must be integers in 1..{bench_jax.MAX_BATCH:,}, got {brief(text)}")
    return value


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print plies/s of random legal play; exit 2 with one line on stderr for bad settings (`--reserve 20`)."""
    parser = command_parser(prog, __doc__)
    parser.add_argument(
        "--seconds", type=seconds_argument, default=2.0, help="time per measurement, a finite number > 0 (default 2)"
    )
    parser.add_argument(
        "--batch-sizes",
        type=batch_size,
        nargs="+",
        metavar="B",
        help="batch sizes (default 1 64 4096; with --jax 256 4096 65536)",
    )
    parser.add_argument(
        "--jax",
        action="store_true",
        help="the JAX env (pgx_env, the extra jax) in the loop a pgx user writes, beside the numpy engine and "
        "pgx's connect_four and backgammon at each batch size, compile times apart",
    )
    parser.add_argument(
        "--device",
        choices=bench_jax.DEVICES,
        default="cpu",
        help="with --jax: the jax device the loops run on (default cpu; gpu needs jax's CUDA build)",
    )
    parser.add_argument(
        "--mctx",
        type=batch_size,
        metavar="B",
        help=f"with --jax: also the mctx agent's decisions/s at batch B ({MCTX_SIMULATIONS} simulations; extra mctx)",
    )
    parser.add_argument("--reserve", type=int, default=DEFAULT_RESERVE, help="reserve size (default %(default)s)")
    args = parser.parse_args(argv)
    sizes = {"batch_sizes": tuple(args.batch_sizes)} if args.batch_sizes else {}
    try:
        config = Config(reserve=args.reserve)
        if not args.jax and (args.device != "cpu" or args.mctx is not None):
            raise ValueError("--device and --mctx measure the JAX env: add --jax")
        if args.jax:
            bench_jax.check_device(args.device)  # the extra and the device, before the header
            from strategic_reserve_env.agents import load_agent  # the agents layer, only for the JAX lines

            agent = None if args.mctx is None else load_agent(f"mctx:simulations={MCTX_SIMULATIONS}")
            lines = bench_jax.run(
                args.seconds, **sizes, config=config, device=args.device, mctx_batch=args.mctx, mctx_agent=agent
            )
        elif max(args.batch_sizes or [0]) > bench.MAX_BATCH:
            largest = max(args.batch_sizes)
            raise ValueError(f"--batch-sizes must be integers in 1..{bench.MAX_BATCH:,} without --jax, got {largest}")
        print(f"random legal play, reserve {config.reserve}, {args.seconds:g} s per line, one process")
        for line in lines if args.jax else bench.run(args.seconds, **sizes, config=config):
            print(line, flush=True)
    except ValueError as error:
        return fail(str(error))
    return 0
