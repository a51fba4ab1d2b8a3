"""Evaluate agents: `python evaluate.py --help` (the code: strategic_reserve_env/commands/evaluate.py)."""

import sys

from strategic_reserve_env.interrupts import script

if __name__ == "__main__":
    sys.exit(script("strategic_reserve_env.commands.evaluate:main"))
