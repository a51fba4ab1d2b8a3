"""Training: the run lifecycle (`run`, `folder`, `settings`) and the trainers plugged into it: `loop` (train:
distillation, then PPO against `pool`, with `checkpoint`s), `az` (train-az), `rllib_run` (train-rllib).

Words: a *snapshot* is a frozen copy of the learner in the opponent pool; a *checkpoint* is the file a run goes
on from; *to resume* is `--resume`; *to load* a checkpoint puts its contents back into the learner. This layer
imports agents, evaluation and the env adapters; only `commands/` imports it.
"""
