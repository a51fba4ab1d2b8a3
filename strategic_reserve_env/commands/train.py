"""Train a MaskablePPO agent for Strategic Reserve against a pool of opponents, then evaluate it.

    python train.py                       # the default run (what `make train` does): distillation
    python train.py --distill-games 1000 --out runs/quick
    python train.py --distill-games 0 --total-steps 6000000 --out runs/ppo   # PPO alone, from scratch
    python train.py --out runs/ppo --resume                # go on with a stopped or killed run, as it was started
    python train.py --out runs/ppo --resume --total-steps 9000000           # ... and train it further

Two phases. First, distillation (--distill-*, agents/distill.py): the expert (expectimax:depth=2) plays
--distill-games games against each of --distill-opponents; each of its decisions is labelled with its
choice, and the network is fitted to those labels. --distill-games 0 skips it. Then PPO continues from the
fitted network: the learner plays --n-envs games in one engine batch against a weighted mixture of
baseline agents and frozen snapshots of itself ("self"). Periodic and final evaluations use paired dice.

Everything goes to --out: the run's settings (settings.json) and status (run.json), TensorBoard logs
(tb/), checkpoints, the network after the distillation (distilled.safetensors), the policy file
model.safetensors (the agent spec ppo:OUT/model.safetensors; it cannot run code when loaded), SB3's
model.zip (pickles: for SB3 users, loaded only with ,trust=pickle), evaluation.json / .md.

A run owns its --out: a folder that holds another run is refused unless --resume (go on with it, with its
own settings.json; only the total steps, the evaluation and checkpoint cadence, --threads, --device and
--progress may be given again) or --restart (start over: its results and state go first). A checkpoint is
taken after a PPO update every --checkpoint-every steps; --resume goes on exactly from the last one that
loads. Ctrl-C (SIGINT) or SIGTERM stops the run after the current update with a checkpoint, prints where
it stopped and how to go on, and exits 130 / 143; a second signal stops it at once. The code:
strategic_reserve_env/training/.
"""

from __future__ import annotations

from strategic_reserve_env.commands.arguments import run_options, run_settings
from strategic_reserve_env.training import loop
from strategic_reserve_env.training.run import error_status, execute
from strategic_reserve_env.training.settings import TrainSettings


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Train; exit status 0, 2 for bad settings or a refused folder (one line), 1 for a file that cannot be
    written (one line naming it), 130 / 143 when SIGINT / SIGTERM stopped the run."""
    given, out, again = run_options(TrainSettings, argv, prog, __doc__, "python train.py")
    try:
        return execute(loop.Trainer, run_settings(TrainSettings, given, out, loop.KIND.command), again)
    except (ValueError, OSError) as error:
        return error_status(error)
