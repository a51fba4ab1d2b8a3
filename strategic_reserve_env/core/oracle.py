"""The independent scalar reference implementation of Strategic Reserve, written from docs/RULES.md.

It shares nothing with the engine and imports nothing from this package: the
board is a list of 36 characters and groups are found by breadth-first
search. It aims to be obviously right, not fast. It is used for the
differential tests (the engine, the single-game path, the AEC env and the
greedy agent are checked against it) and as the baseline of
`python -m strategic_reserve_env bench`; no engine or environment path uses it.
"""

from __future__ import annotations

from collections import deque

SIZE = 6
SQUARES = SIZE * SIZE
OTHER = {"R": "B", "B": "R"}
NAME = {"R": "red", "B": "blue"}


def neighbours(square: int) -> list[int]:
    """Orthogonal neighbours of a square."""
    rank, file = divmod(square, SIZE)
    result = []
    if file > 0:
        result.append(square - 1)
    if file < SIZE - 1:
        result.append(square + 1)
    if rank > 0:
        result.append(square - SIZE)
    if rank < SIZE - 1:
        result.append(square + SIZE)
    return result


def group_of(board: list[str], square: int) -> set[int]:
    """The maximal orthogonally connected set of like-coloured checkers containing `square`."""
    colour = board[square]
    seen = {square}
    queue = deque([square])
    while queue:
        for n in neighbours(queue.popleft()):
            if n not in seen and board[n] == colour:
                seen.add(n)
                queue.append(n)
    return seen


class ReferenceGame:
    """One game; `roll` then `place`; `winner` is 'R', 'B' or None."""

    def __init__(self, board: str, reserves: dict[str, int], to_move: str) -> None:
        self.board = list(board)
        self.reserves = {"R": reserves["red"], "B": reserves["blue"]}
        self.mover = "R" if to_move == "red" else "B"
        self.winner: str | None = None
        self.legal: list[int] = []
        self.hit: str | None = None
        self.captured: list[int] = []

    @classmethod
    def from_config(cls, config) -> ReferenceGame:
        """Start from a Config's start position (read as plain data)."""
        start = config.start_position
        return cls(start.board, {"red": start.reserves[0], "blue": start.reserves[1]}, start.to_move)

    def roll(self, square: int) -> list[int]:
        """Resolve the roll on `square`; return the legal placements in index order."""
        assert self.winner is None and not self.legal
        me, enemy = self.mover, OTHER[self.mover]
        removed: set[int] = set()
        if self.board[square] == enemy:
            self.hit = "enemy"
            removed = group_of(self.board, square)
        elif self.board[square] == me:
            self.hit = "friendly"
            friends = group_of(self.board, square)
            for f in friends:
                for n in neighbours(f):
                    if self.board[n] == enemy and n not in removed:
                        removed |= group_of(self.board, n)
        else:
            self.hit = "empty"
        for s in removed:
            self.board[s] = "."
        self.reserves[enemy] += len(removed)
        self.captured = sorted(removed)
        if self.hit == "friendly":
            touching = {n for f in friends for n in neighbours(f)}
            self.legal = sorted(s for s in touching if self.board[s] == ".")
        else:
            self.legal = [s for s in range(SQUARES) if self.board[s] == "."]
        return self.legal

    def place(self, square: int) -> None:
        """Put the mover's checker on a legal square; the turn passes."""
        assert square in self.legal, (square, self.legal)
        self.board[square] = self.mover
        self.reserves[self.mover] -= 1
        if self.reserves[self.mover] == 0:
            self.winner = self.mover
        self.mover = OTHER[self.mover]
        self.legal = []

    def board_string(self) -> str:
        """The board in docs/RULES.md notation."""
        return "".join(self.board)
