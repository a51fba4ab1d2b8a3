"""The README's ```python blocks and the modules each one needs.

A block whose first line is `# needs: module[, module ...]` uses libraries that only the integration
venv holds (`.venv-integrations`), or the core venv's extra `jax` (`CORE_VENV_MODULES`):
tests/test_docs.py runs the blocks without that line, and those needing only the core venv's extras, in
the core venv; tests/integration/test_readme_examples.py runs the other marked ones there. Any module
names work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
#: modules of the extras the core venv installs too (the Makefile's ``.[train,test,jax]``): blocks that need
#: only these run in the core venv (tests/test_docs.py), not in the integration venv
CORE_VENV_MODULES = frozenset({"jax", "pgx"})
NEEDS = re.compile(r"#\s*needs:\s*(?P<modules>[\w.]+(?:\s*,\s*[\w.]+)*)\s*$")


@dataclass(frozen=True)
class Block:
    number: int  # 1-based position among the README's python blocks
    needs: tuple[str, ...]  # modules named by a first line "# needs: ..."; () for none
    code: str

    @property
    def in_core_venv(self) -> bool:
        """The core venv has every module the block needs."""
        return set(self.needs) <= CORE_VENV_MODULES

    @property
    def name(self) -> str:
        return f"README.md python example {self.number}" + (f" (needs {', '.join(self.needs)})" if self.needs else "")


def python_blocks(readme: Path = README) -> list[Block]:
    """Every ```python block of the README, in order; `ValueError` for a malformed `# needs:` line."""
    blocks = []
    for number, code in enumerate(re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.DOTALL), start=1):
        first = code.split("\n", 1)[0]
        needs: tuple[str, ...] = ()
        if first.lstrip().startswith("# needs"):
            match = NEEDS.fullmatch(first.strip())
            if match is None:
                raise ValueError(
                    f"README.md python example {number}: malformed {first!r}; write '# needs: module, module'"
                )
            needs = tuple(m.strip() for m in match["modules"].split(","))
        blocks.append(Block(number, needs, code))
    return blocks


def run_block(block: Block) -> None:
    """Execute a block as a fresh script."""
    exec(compile(block.code, block.name, "exec"), {"__name__": "__readme__"})


def run_as_a_reader_would(block: Block, monkeypatch, capsys) -> None:
    """Run `block` from the repository's root (pytest's `monkeypatch` and `capsys` fixtures); a block
    that prints must print something."""
    monkeypatch.chdir(README.parent)
    run_block(block)
    if "print(" in block.code:
        assert capsys.readouterr().out.strip(), f"{block.name} printed nothing"
