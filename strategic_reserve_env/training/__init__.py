"""Training: what `train.py` (and the shared PPO settings of `train_rllib.py`) runs, by role.

- `settings`: `TrainSettings`, every setting with its meaning, checked in `__post_init__`
  (numbers finite and in range, the opponent mixture a real distribution, the memory the sizes will take);
- `pool`: the opponent pool (baseline agents and frozen snapshots of the learner);
- `distillation`: the expert's labelled decisions and the supervised fit before PPO;
- `checkpoint`: the checkpoint file (what it holds, checked when read) and SB3's private learner fields;
- `run`: the run lifecycle (its states, the claim, what `--restart` removes, resume, status, stop);
- `folder`: the run's settings file as `--resume` reads it, and the settings' digest;
- `loop`: the run itself, top to bottom: build, (distil,) PPO with snapshots, evaluations and
  checkpoints, stop on a signal after the update, save, evaluate;
- `az`: `train-az`'s run (AlphaZero-style self-play with chance nodes), on the same folder and
  signals.

Words: a *snapshot* is a frozen copy of the learner in the opponent pool; a *checkpoint* is the file a run
goes on from; *to resume* is the command-line action (`--resume`) of going on from the last checkpoint;
*to load* a checkpoint puts its contents back into the learner, the pool, the games and the generators.
This layer sits between the evaluation and the command-line tools: it imports agents, evaluation and the
env adapters, and nothing imports it but `commands/`.
"""
