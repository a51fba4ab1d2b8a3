"""Self-play PPO for Strategic Reserve with Ray RLlib, on one machine or a Ray cluster.

    python train_rllib.py --iterations 50 --num-env-runners 2 --out runs/rllib
    python train_rllib.py --address auto --num-env-runners 32 --out runs/rllib   # join a running Ray cluster

Both seats play one shared RLModule (strategic_reserve_env/envs/rllib_env.py): a CNN
over the observation planes with the action mask applied to its logits, so
every action sampled in training is legal. Each iteration prints env steps,
env steps per second, Red's mean return, game length and the illegal actions
the env received (always 0 unless the mask is broken); the same numbers go to
`--out/progress.jsonl`. At the end the module is written to `--out` as
`model.json` + `weights.npz` (no pickle): play it with
`strategic-reserve evaluate rllib:runs/rllib random greedy`. Needs the `rllib` extra.

A run owns its --out as train.py's does (run.json naming the command, settings.json; --restart to start over;
another command's folder is refused). After each iteration the module is written to `checkpoints/iteration_N/`
(the same pickle-free files, the last two kept, each naming its run and settings). Ctrl-C (SIGINT) or SIGTERM
stops the run after the current iteration (exit 130 / 143, one line saying where and how to go on); a second
signal stops it at once. `--out DIR --resume` goes on from the last checkpoint with the run's own settings
(--iterations, --num-env-runners, --address, --num-cpus and --threads may change; a run complete at its
--iterations stays as it is). What RLlib's state holds beyond the module's weights is not kept, since RLlib
saves it only as pickles, which this project never loads: a resumed run starts with fresh Adam moments, new
games in the env runners and RLlib's counters (env steps, the lifetime totals) from zero, so it is not the run
that never stopped. The loop: strategic_reserve_env/training/rllib_run.py.
"""

from __future__ import annotations

from strategic_reserve_env.commands.arguments import run_options, run_settings
from strategic_reserve_env.training.rllib_run import COMMAND, Settings, Trainer
from strategic_reserve_env.training.run import error_status, execute


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Train; the exit status (as train's)."""
    given, out, again = run_options(Settings, argv, prog, __doc__, "python train_rllib.py")
    try:
        return execute(Trainer, run_settings(Settings, given, out, COMMAND), again)
    except (ValueError, OSError) as error:  # a bad setting, a folder another process writes (OutputBusyError)
        return error_status(error)
