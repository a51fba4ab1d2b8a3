"""Ray RLlib self-play: `python train_rllib.py --help` (the code: strategic_reserve_env/commands/train_rllib.py)."""

import sys

from strategic_reserve_env.interrupts import script

if __name__ == "__main__":
    sys.exit(script("strategic_reserve_env.commands.train_rllib:main"))
