"""The commands behind the repository's scripts and the ``strategic-reserve`` console command.

- :mod:`.evaluate`: round robins with paired dice and the versioned benchmark (``evaluate.py``);
- :mod:`.train`: distillation, then optional PPO (``train.py``);
- :mod:`.train_rllib`: Ray RLlib self-play (``train_rllib.py``).

The top layer: they may import anything of the package below them.
"""
