"""AlphaZero-style self-play with chance nodes: Stochastic MuZero's search on the true model, a policy-value net.

    strategic-reserve train-az --out runs/az --iterations 200
    strategic-reserve train-az --out runs/az --resume                   # go on with a stopped run, as it was started
    strategic-reserve train-az --out runs/az --resume --iterations 400  # ... and train it further

Each iteration plays --games self-play games in lockstep for --steps decisions each, every decision a search
of --simulations simulations with the network at the leaves and Dirichlet noise at the root; the network is
then fitted in --updates Adam steps to the searches' visit distributions and the games' results.

Everything goes to --out: the run's settings (settings.json) and status (run.json), checkpoint.npz, the
network model.safetensors (the agent spec mctx:net=OUT/model.safetensors; simulations=0 for the network
alone), progress.jsonl (one line per iteration) and TensorBoard logs (tb/). A run owns its --out: a folder
that holds another run (of this command or another) is refused unless --resume (go on with it, with its own
settings.json; only --iterations may be given again) or --restart (start over, for a train-az run). Ctrl-C
(SIGINT) or SIGTERM stops the run after the current iteration with its checkpoint, prints where it stopped
and how to go on, and exits 130 / 143; a second signal stops it at once. The first iteration compiles the
search and the update, which takes a while. Needs the mctx extra. The code: strategic_reserve_env/training/az.py.
"""

from __future__ import annotations

import sys

from strategic_reserve_env.commands.arguments import run_options, run_settings
from strategic_reserve_env.interrupts import Signals, StopNow, exit_status
from strategic_reserve_env.training import az
from strategic_reserve_env.training.run import error_status, execute


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Train; exit status 0, 2 for bad settings or a refused folder, 1 for a file that cannot be written (one
    line), 130 / 143 when SIGINT / SIGTERM stopped the run."""
    given, out, again = run_options(az.AZSettings, argv, prog, __doc__, "strategic-reserve train-az")
    with Signals() as signals:  # a signal outside the iterations (imports, checks) stops it at once, in one line
        try:
            import mctx  # noqa: F401  (without the mctx extra: the registry's one line naming it, before any write)
            import optax  # noqa: F401

            return execute(az.Trainer, run_settings(az.AZSettings, given, out, az.COMMAND), again, signals)
        except (ValueError, OSError) as error:
            return error_status(error)
        except StopNow as stop:
            print(f"{stop}: train-az stopped at once", file=sys.stderr)
            return exit_status(stop.signum)
