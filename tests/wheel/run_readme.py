"""Run the README's Python examples with the interpreter that runs this script, from the current folder
(tests/wheel/check.sh: the wheel's venv, an empty folder). The examples that need the integration venv's
libraries (a first line `# needs: ...`) are left to tests/integration.

    python run_readme.py README.md
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: readme_blocks, the README's parser

from readme_blocks import python_blocks  # noqa: E402

readme = Path(sys.argv[1])
failed = 0
blocks = [block for block in python_blocks(readme) if not block.needs]
for block in blocks:
    done = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True, timeout=600)
    print(f"{'ok  ' if done.returncode == 0 else 'FAIL'} {block.name}")
    if done.returncode != 0:
        failed += 1
        print(done.stderr[-3000:])
print(f"{len(blocks) - failed} of {len(blocks)} README examples ran")
sys.exit(1 if failed or not blocks else 0)
