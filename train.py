"""Train the default agent: `python train.py --help` (the code: strategic_reserve_env/commands/train.py)."""

import sys

from strategic_reserve_env.interrupts import script

if __name__ == "__main__":
    sys.exit(script("strategic_reserve_env.commands.train:main"))
