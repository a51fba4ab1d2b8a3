"""The pictures of the JAX env's States (`strategic_reserve_env.envs.pgx_state.State`): the project's SVG board.

`State.to_svg`, `State.save_svg` and a notebook's `State._repr_html_` draw through these functions,
on the games converted to the numpy engine's State (`pgx_state.to_engine`), with
`strategic_reserve_env.pictures.render.svg`. pgx's own drawing (`pgx.save_svg`, `pgx.save_svg_animation`)
knows only pgx's games: it fails on this env's States with a bare `AssertionError`; draw with
`state.save_svg(path)` instead (one game), or `to_svg` of each state for frames of an animation.
"""

from __future__ import annotations

from strategic_reserve_env.core import engine
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.pictures.render import svg

HTML_GAMES = 16
"""The most games of a batched State that `_repr_html_` draws."""
CELL = 40
"""Pixels of a square at scale 1."""
MIN_CELL = 8
"""The smallest square drawn, in pixels, whatever the scale."""
HTML_SCALE = 0.75
"""The scale of each board in a notebook's view of a batch."""


def board_svg(games: engine.State, index: int, scale: float | None = None) -> str:
    """SVG of game `index` of `games` (`render.svg`); `scale` multiplies its size (None: 1)."""
    game = Game()
    game.load(games, index)
    return svg(game, cell=max(MIN_CELL, round(CELL * (1.0 if scale is None else scale))))


def boards_html(games: engine.State) -> str:
    """HTML of the first `HTML_GAMES` games of `games` side by side, and how many more were not drawn."""
    shown = min(games.batch_size, HTML_GAMES)
    drawn = "".join(f'<div style="margin:4px">{board_svg(games, i, HTML_SCALE)}</div>' for i in range(shown))
    more = f"<p>{games.batch_size - shown} more games not drawn</p>" if games.batch_size > shown else ""
    return f'<div style="display:flex;flex-wrap:wrap">{drawn}</div>{more}'


__all__ = ["CELL", "HTML_GAMES", "HTML_SCALE", "MIN_CELL", "board_svg", "boards_html"]
