"""The RL libraries researchers already use, each driving the env exactly as its own docs do.

These tests run in `.venv-integrations` (`make test-integrations`; `make test` runs them beside
the core suite): Ray RLlib pins `gymnasium==1.2.2`, which the core venv does not hold back to.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # tests/readme_blocks.py, shared with the core docs test
