"""Deprecated name of :mod:`agents.position` (which holds no base class), kept until every module imports that."""

from __future__ import annotations

from .position import Position, argmin_random_ties, captures_by_roll, read_position

__all__ = ["Position", "argmin_random_ties", "captures_by_roll", "read_position"]
