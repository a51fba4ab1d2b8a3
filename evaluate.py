"""Evaluate agents: ``python evaluate.py --help`` (the code: strategic_reserve_env/commands/evaluate.py)."""

import sys

from strategic_reserve_env.commands.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
