"""The commands behind the repository's scripts and the ``strategic-reserve`` console command.

- :mod:`.evaluate`: round robins with paired dice and the versioned benchmark (``evaluate.py``);
- :mod:`.benchmark`: the versioned benchmark as a command of its own;
- :mod:`.train`: distillation, then optional PPO (``train.py``);
- :mod:`.train_rllib`: Ray RLlib self-play (``train_rllib.py``);
- :mod:`.replay`, :mod:`.bench`, :mod:`.play`: a record's trace, the engine's speed, a game in the terminal.

Each command is a function ``main(argv, prog)`` (``argv``: its arguments, default ``sys.argv[1:]``; ``prog``:
the name its ``--help`` shows, default the script's) returning the exit status; ``strategic_reserve_env.__main__``
lists them. The top layer: they may import anything of the package below them.
"""

from __future__ import annotations


def named(doc: str, script: str, prog: str | None) -> str:
    """``doc`` with the script's own command line (``python SCRIPT``) replaced by ``prog``, the name the command
    was run by (``strategic-reserve evaluate``); ``doc`` as it is when ``prog`` is None."""
    return doc if prog is None else doc.replace(f"python {script}", prog)
