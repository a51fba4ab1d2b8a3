"""Pictures of a position: ANSI text, an RGB array, a window (pygame) for `human`, and SVG.

Every function reads a `Game` (use `Game.load(state, i)` for game
`i` of a batch) through `strategic_reserve_env.pictures.scene.scene_of`, which decides what the picture shows
and where; the functions here only map that scene to characters, pixels or SVG elements. Importing this
module also lets Jupyter show a `Game` as its `svg` board (the game does not import its drawing).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

import numpy as np

from strategic_reserve_env.core.board import BOARD_SIZE, is_integer
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.extras import install_line

from .scene import PALETTE, RGB, scene_of

# ---------------------------------------------------------------------------------------- text

#: the character of a square's content in ANSI text
_ANSI_CONTENT = {"red": "R", "blue": "B"}
#: how ANSI text shows a mark of the legend; the reserves are spelt out beside the board, and the roll line
#: names the captured checkers' squares
_ANSI_MARKS = {"legal": "+", "rolled": "[ ]"}


def ansi(game: Game) -> str:
    """The board with file/rank labels, both reserves, the latest roll, whose turn it is and a key to the marks.

    `R`/`B` checkers, `.` empty, `+` a legal placement, `[ ]` the rolled square; the roll line names the
    captured checkers' squares.
    """
    view = scene_of(game)
    files = "    " + "  ".join(view.files)
    lines = [files]
    panels = {0: view.reserves[0], BOARD_SIZE - 1: view.reserves[1]}  # beside the top and bottom rows
    for row, (label, squares) in enumerate(zip(view.ranks, view.rows(), strict=True)):
        cells = []
        for square in squares:
            mark = _ANSI_CONTENT.get(square.content, "+" if square.legal else ".")
            cells.append(f"[{mark}]" if square.rolled else f" {mark} ")
        panel = panels.get(row)
        side = f"   {panel.player.capitalize()} reserve {panel.count}" if panel is not None else ""
        lines.append(f"{label} " + "".join(cells) + f" {label}{side}")
    lines.append(files)
    lines.append(view.caption)
    if view.legal_names:
        lines.append(legal_line(view.legal_names))
    keys = [f"{_ANSI_MARKS[key.mark]} {key.text}" for key in view.legend if key.mark in _ANSI_MARKS]
    lines.append(legal_line(", ".join(["R/B checker", *keys]) + "; captures: see the roll.", "Key: "))
    return "\n".join(lines) + "\n"


TEXT_WIDTH = 78  # columns of a text line (a terminal's 80, less a margin)


def legal_line(names: str, label: str = "Legal: ") -> str:
    """`label` and the comma-separated square names, wrapped at `TEXT_WIDTH` columns between names (never
    inside one), the continuation lines indented under the first name."""
    return textwrap.fill(
        label + names,
        width=TEXT_WIDTH,
        subsequent_indent=" " * len(label),
        break_long_words=False,
        break_on_hyphens=False,
    )


# ---------------------------------------------------------------------------------------- image

FRAME_WIDTH = 640  # pixels: the default width of an rgb_array frame (4:3, even sides: what video encoders take)
MIN_FRAME_WIDTH = 320  # pixels: the narrowest frame whose caption stays legible


@dataclass(frozen=True)
class FrameLayout:
    """Where an `rgb_array` frame of `width` pixels puts things (all in pixels): a 4:3 frame with the
    board, its labels and the reserve panels centred above a caption strip of up to `CAPTION_LINES`
    lines (the status, the latest roll, the result at the end of a game)."""

    width: int
    height: int
    cell: int  # the side of a square
    left: int  # x of the board's left edge (file a)
    top: int  # y of the board's top edge (rank 6)
    label: int  # the label strip left of and below the board
    font: int  # the font size of the labels and the caption
    caption_top: int  # y where the caption strip starts

    @property
    def legend_font(self) -> int:
        """The font size of the legend's texts, right of the board between the reserve panels."""
        return max(MIN_FONT, round(self.font * 0.8))

    @property
    def panel_x(self) -> int:
        """x of the reserve panels, right of the board."""
        return self.left + BOARD_SIZE * self.cell + self.cell // 4

    @property
    def legend_icon(self) -> int:
        """The side of a legend key's sample square."""
        return round(self.cell * LEGEND_ICON)

    def legend_origin(self, number: int) -> tuple[int, int]:
        """Top-left pixel (x, y) of the sample square of the legend's key `number` (0 first): one key a row,
        in the rows of ranks 5 down to 2, between the reserve panels."""
        return self.panel_x, self.top + (1 + number) * self.cell + (self.cell - self.legend_icon) // 2

    def square_origin(self, row: int, column: int) -> tuple[int, int]:
        """Top-left pixel (x, y) of the square at `row`, `column` of a scene."""
        return self.left + column * self.cell, self.top + row * self.cell


CAPTION_LINES = 3  # lines of the caption strip under the board
MIN_FONT = 10  # pixels: the smallest font of a frame's text
LEGEND_ICON = 0.5  # the side of a legend's sample square, in squares of the board


def frame_layout(width: int = FRAME_WIDTH) -> FrameLayout:
    """The layout of a `width`-pixel frame (an even number from `MIN_FRAME_WIDTH`; its height is
    three quarters of it, rounded to an even number); `ValueError` otherwise."""
    if not is_integer(width) or width < MIN_FRAME_WIDTH or width % 2:
        raise ValueError(f"width must be an even number of pixels >= {MIN_FRAME_WIDTH}, got {width!r}")
    width = int(width)
    height = 2 * round(width * 3 / 8)
    font = max(MIN_FONT, width // 40)
    caption = CAPTION_LINES * round(font * 1.3) + font  # the strip, with a margin
    label = round(font * 1.4)
    cell = (height - caption - label - font // 2) // BOARD_SIZE
    board_width = label + BOARD_SIZE * cell + cell // 4 + 2 * cell
    left = (width - board_width) // 2 + label
    return FrameLayout(width, height, cell, left, font // 2, label, font, font // 2 + BOARD_SIZE * cell + label)


def _disc(image: np.ndarray, cx: float, cy: float, radius: float, colour, ring: float = 0.0) -> None:
    """A filled disc (or a ring of width `ring`) centred at (cx, cy): the pixels within `radius` of it, found
    in its bounding box (no pixel outside it is that near)."""
    top, left = max(0, math.floor(cy - radius)), max(0, math.floor(cx - radius))
    bottom, right = min(image.shape[0], math.ceil(cy + radius) + 1), min(image.shape[1], math.ceil(cx + radius) + 1)
    ys, xs = np.ogrid[top:bottom, left:right]
    distance = np.hypot(xs - cx, ys - cy)
    inside = distance <= radius if ring == 0 else (distance <= radius) & (distance >= radius - ring)
    image[top:bottom, left:right][inside] = colour


def _mark(image: np.ndarray, mark: str, x: int, y: int, cell: int) -> None:
    """Draw `mark` (a key of `MEANINGS`) on the `cell`-pixel square whose
    top-left pixel is (x, y), as the board and its legend both show it."""
    centre = (x + cell / 2, y + cell / 2)
    edge = max(2, cell // 13)
    if mark == "captured":  # a grey ring where the captured checker stood
        _disc(image, *centre, cell * 0.3, PALETTE["captured"], ring=edge)
    elif mark == "legal":  # a green dot, a white rim, an ink outline: visible on any colour under it
        rim = max(1, cell // 30)
        _disc(image, *centre, cell * 0.12 + 2 * rim, PALETTE["ink"])
        _disc(image, *centre, cell * 0.12 + rim, PALETTE["halo"])
        _disc(image, *centre, cell * 0.12, PALETTE["legal"])
    elif mark == "rolled":  # a yellow frame
        frame = image[y : y + cell, x : x + cell]
        frame[:edge], frame[-edge:], frame[:, :edge], frame[:, -edge:] = (PALETTE["rolled"],) * 4
    else:  # reserve: a red and a blue disc, as the panels beside the board
        _disc(image, x + cell * 0.32, centre[1], cell * 0.28, PALETTE["red"])
        _disc(image, x + cell * 0.68, centre[1], cell * 0.28, PALETTE["blue"])


def rgb_array(game: Game, width: int = FRAME_WIDTH) -> np.ndarray:
    """An (H, W, 3) uint8 frame for a video or a screen: the board with its labels, checkers, legal squares, the
    rolled square (yellow frame), captured squares (grey rings), both reserves with a bar under the side to
    move, a legend of those marks between the reserves, and under it all the caption: whose ply it is (or who
    won, at the end of a game) and the latest roll.

    `width`: the frame's width in pixels (even, at least `MIN_FRAME_WIDTH`; default
    `FRAME_WIDTH`); the height is three quarters of it (640 x 480 by default), as video encoders
    want even sides. The text is drawn with Pillow's built-in font."""
    layout = frame_layout(width)
    view = scene_of(game)
    cell = layout.cell
    image = np.empty((layout.height, layout.width, 3), dtype=np.uint8)
    image[:] = PALETTE["background"]
    for square in view.squares:
        x, y = layout.square_origin(square.row, square.column)
        image[y : y + cell, x : x + cell] = PALETTE[square.shade]
        centre = (x + cell / 2, y + cell / 2)
        if square.content != "empty":
            _disc(image, *centre, cell * 0.38, PALETTE[square.content])
        for mark in square.marks:
            _mark(image, mark, x, y, cell)
    texts: list[tuple[tuple[float, float], str, str]] = []  # ((x, y), text, anchor)
    for i, (file, rank) in enumerate(zip(view.files, view.ranks, strict=True)):  # column i's file, row i's rank
        bottom = layout.top + BOARD_SIZE * cell
        texts.append(((layout.left + i * cell + cell / 2, bottom + layout.label / 2), file, "mm"))
        texts.append(((layout.left - layout.label / 2, layout.top + i * cell + cell / 2), rank, "mm"))
    tops = (layout.top, layout.top + (BOARD_SIZE - 1) * cell)  # the panels beside the top and bottom ranks
    radius = cell * 0.36
    for reserve, y in zip(view.reserves, tops, strict=True):
        colour = PALETTE[reserve.player]
        cx, cy = layout.panel_x + radius, y + cell * 0.45
        _disc(image, cx, cy, radius, colour)
        texts.append(((cx + radius + layout.font / 2, cy), str(reserve.count), "lm"))
        if reserve.to_move:
            bar = int(y + cell * 0.88)
            image[bar : bar + max(3, cell // 12), layout.panel_x : int(layout.panel_x + 2.2 * radius)] = colour
    icon = layout.legend_icon
    legend = []  # (x, y) of each key's text, left and middle
    for number, key in enumerate(view.legend):
        x, y = layout.legend_origin(number)
        image[y : y + icon, x : x + icon] = PALETTE["light"]
        _mark(image, key.mark, x, y, icon)
        legend.append(((x + icon + layout.font / 2, y + icon / 2), key.text))
    return _with_text(image, texts, view.caption, layout, legend)


def _lines(text: str, font, room: float) -> list[str]:
    """`text` broken between words into lines of at most `room` pixels in `font` (a longer word stays whole)."""
    lines: list[str] = []
    for word in text.split():
        if lines and font.getlength(f"{lines[-1]} {word}") <= room:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines


def _with_text(
    image: np.ndarray,
    texts: list[tuple[tuple[float, float], str, str]],
    caption: str,
    layout: FrameLayout,
    legend: list[tuple[tuple[float, float], str]],
) -> np.ndarray:
    """`image` with each text drawn in the ink colour at its (x, y) and Pillow anchor, `caption` wrapped
    (between words) to the frame's width in the caption strip, all at the layout's font size, and each legend
    text left of its (x, y), vertically centred there, in a smaller font wrapped to the frame's right edge."""
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=layout.font)
    for xy, text, anchor in texts:
        draw.text(xy, text, fill=PALETTE["ink"], font=font, anchor=anchor)
    small = ImageFont.load_default(size=layout.legend_font)
    for (x, y), text in legend:
        wrapped = "\n".join(_lines(text, small, layout.width - x - layout.font / 4))
        draw.multiline_text((x, y), wrapped, fill=PALETTE["ink"], font=small, anchor="lm", spacing=1)
    lines = _lines(caption, font, layout.width - 2 * layout.font)
    for number, line in enumerate(lines[:CAPTION_LINES]):
        y = layout.caption_top + number * round(layout.font * 1.3)
        draw.text((layout.font, y), line, fill=PALETTE["ink"], font=font, anchor="la")
    return np.asarray(picture, dtype=np.uint8).copy()


def _window_available() -> bool:
    """pygame is installed (the `render` extra): `render_mode="human"` can open a window."""
    from importlib.util import find_spec

    return find_spec("pygame") is not None


#: the render modes the envs offer: "human" only where pygame is installed, so that Gymnasium's and
#: PettingZoo's checkers, which try every listed mode, pass without it
RENDER_MODES = (["human"] if _window_available() else []) + ["ansi", "rgb_array"]
HUMAN_NEEDS = f"render_mode='human' needs pygame, which is not installed: {install_line('render')}"
RENDER_FPS = 2  # frames per second of render_mode="human" (the envs' metadata)


class Renderer:
    """Renders games in one `render_mode` for an env; owns the window of `"human"`."""

    def __init__(self, mode: str | None, fps: int) -> None:
        if mode == "human" and mode not in RENDER_MODES:
            raise ValueError(HUMAN_NEEDS)
        if mode is not None and mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {mode!r}")
        self.mode, self.fps = mode, fps
        self._window: Window | None = None

    def render(self, game: Game):
        """Text for `ansi`, an image for `rgb_array`, a window update (None) for `human`."""
        if self.mode is None:
            from gymnasium import logger

            logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.mode == "ansi":
            return ansi(game)
        frame = rgb_array(game)
        if self.mode == "rgb_array":
            return frame
        if self._window is None:
            self._window = Window("Strategic Reserve", self.fps)
        self._window.show(frame)
        return None

    def close(self) -> None:
        """Close the window, if one is open."""
        if self._window is not None:
            self._window.close()
            self._window = None


class Window:
    """A pygame window showing `rgb_array` frames (`render_mode="human"`)."""

    def __init__(self, title: str, fps: int) -> None:
        try:
            import pygame
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise ImportError(HUMAN_NEEDS) from error
        self._pygame = pygame
        pygame.display.init()
        pygame.display.set_caption(title)
        self._screen = pygame.display.set_mode((FRAME_WIDTH, frame_layout(FRAME_WIDTH).height))
        self._clock = pygame.time.Clock()
        self._fps = fps

    def show(self, frame: np.ndarray) -> None:
        """Draw one frame and keep the window responsive."""
        pygame = self._pygame
        pygame.event.pump()
        surface = pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2)))
        self._screen.blit(surface, (0, 0))
        pygame.display.flip()
        self._clock.tick(self._fps)

    def close(self) -> None:
        """Close the window."""
        self._pygame.display.quit()


# ---------------------------------------------------------------------------------------- SVG


def _svg_colour(colour: RGB) -> str:
    """An SVG colour, e.g. `rgb(200, 40, 40)`."""
    return f"rgb{colour}"


def _svg_mark(mark: str, x: float, y: float, cell: float, square: str = "") -> list[str]:
    """SVG elements of `mark` (a key of `MEANINGS`) on the `cell`-wide
    square whose top-left corner is (x, y), as the board and its legend both draw it; `square` names the board
    square (its `data-square`), "" in the legend, whose elements' classes say `legend-` before the mark's."""
    where = f' data-square="{square}"' if square else ""
    kind = mark if square else f"legend-{mark}"
    cx, cy = x + cell / 2, y + cell / 2
    if mark == "captured":
        return [
            f'<circle class="{kind}"{where} cx="{cx}" cy="{cy}" r="{cell * 0.3:.1f}" fill="none" '
            f'stroke="{_svg_colour(PALETTE["captured"])}" stroke-width="{cell * 0.075:.1f}"/>'
        ]
    if mark == "legal":  # a green dot, a white rim, an ink outline: visible on any colour under it
        rim = max(1.0, cell / 30)
        return [
            f'<g class="{kind}"{where}><circle cx="{cx}" cy="{cy}" r="{cell * 0.12 + rim:.1f}" fill="none" '
            f'stroke="{_svg_colour(PALETTE["ink"])}" stroke-width="{rim:.1f}"/>'
            f'<circle cx="{cx}" cy="{cy}" r="{cell * 0.12:.1f}" fill="{_svg_colour(PALETTE["legal"])}" '
            f'stroke="{_svg_colour(PALETTE["halo"])}" stroke-width="{rim:.1f}"/></g>'
        ]
    if mark == "rolled":
        inset = cell / 20
        return [
            f'<rect class="{kind}"{where} x="{x + inset:.1f}" y="{y + inset:.1f}" width="{cell - 2 * inset:.1f}" '
            f'height="{cell - 2 * inset:.1f}" fill="none" stroke="{_svg_colour(PALETTE["rolled"])}" '
            f'stroke-width="{cell / 10:.1f}"/>'
        ]
    return [  # reserve: a red and a blue disc, as the panels beside the board
        f'<circle class="{kind} {colour}" cx="{x + cell * share:.1f}" cy="{cy}" r="{cell * 0.28:.1f}" '
        f'fill="{_svg_colour(PALETTE[colour])}"/>'
        for colour, share in (("red", 0.32), ("blue", 0.68))
    ]


SVG_PANEL = 4.5  # squares: the width of the column right of the board (reserve panels and the legend)


def svg(game: Game, cell: int = 40, heat: np.ndarray | None = None) -> str:
    """An SVG picture for notebooks: labels, checkers, reserves, the rolled square, captured
    squares, legal squares and a legend of the marks between the reserve panels. Board elements carry classes
    (`checker red`, `rolled`, `captured`, `legal`, `reserve`) and `data-square` attributes; the legend is the
    group of class `legend`. `heat`, if given, is a (36,) array in [0, 1] shaded under the checkers (NaN
    squares are left plain)."""
    view = scene_of(game, heat=heat)
    margin, panel = cell // 2 + 4, round(SVG_PANEL * cell)
    width, height = margin + BOARD_SIZE * cell + panel, BOARD_SIZE * cell + margin + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{cell // 3}">',
        f'<rect width="{width}" height="{height}" fill="{_svg_colour(PALETTE["background"])}"/>',
    ]
    for square in view.squares:
        x, y = margin + square.column * cell, square.row * cell + 4
        name = square.name
        parts.append(
            f'<rect class="square" data-square="{name}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
            f'fill="{_svg_colour(PALETTE[square.shade])}"/>'
        )
        if not np.isnan(square.heat):
            level = float(np.clip(square.heat, 0, 1))
            parts.append(
                f'<rect class="heat" data-square="{name}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="{_svg_colour(PALETTE["heat"])}" fill-opacity="{0.1 + 0.7 * level:.2f}"/>'
            )
        cx, cy = x + cell / 2, y + cell / 2
        if square.content != "empty":
            parts.append(
                f'<circle class="checker {square.content}" data-square="{name}" cx="{cx}" cy="{cy}" '
                f'r="{cell * 0.38:.1f}" fill="{_svg_colour(PALETTE[square.content])}"/>'
            )
        for mark in square.marks:
            parts.extend(_svg_mark(mark, x, y, cell, name))
    for column, file in enumerate(view.files):
        row = BOARD_SIZE - 1 - column  # file a's label then rank 1's, file b's then rank 2's, ...
        parts.append(
            f'<text class="file" x="{margin + column * cell + cell / 2}" y="{BOARD_SIZE * cell + margin}" '
            f'text-anchor="middle">{file}</text>'
        )
        parts.append(
            f'<text class="rank" x="{margin / 2}" y="{row * cell + cell / 2 + 8}" '
            f'text-anchor="middle">{view.ranks[row]}</text>'
        )
    panel_x = margin + BOARD_SIZE * cell + cell // 3
    for reserve, y in zip(view.reserves, (cell // 2, BOARD_SIZE * cell - cell // 2), strict=True):
        colour = reserve.player
        parts.append(
            f'<circle class="reserve-disc {colour}" cx="{panel_x + cell / 3}" cy="{y}" r="{cell / 3:.1f}" '
            f'fill="{_svg_colour(PALETTE[colour])}" stroke="black" stroke-width="{3 if reserve.to_move else 0}"/>'
        )
        parts.append(
            f'<text class="reserve {colour}" x="{panel_x + 0.8 * cell}" y="{y + cell / 8}">{reserve.count}</text>'
        )
    parts.append('<g class="legend">')
    icon = cell * LEGEND_ICON
    for number, key in enumerate(view.legend):  # one key a row, in the rows between the two panels
        top = 4 + (1 + number) * cell + (cell - icon) / 2
        parts.append(
            f'<g class="key" data-mark="{key.mark}"><rect x="{panel_x}" y="{top:.1f}" width="{icon:.1f}" '
            f'height="{icon:.1f}" fill="{_svg_colour(PALETTE["light"])}"/>'
        )
        parts.extend(_svg_mark(key.mark, panel_x, top, icon))
        parts.append(
            f'<text x="{panel_x + icon + cell / 6:.1f}" y="{top + icon / 2:.1f}" font-size="{cell * 0.3:.1f}" '
            f'dominant-baseline="middle">{key.text}</text></g>'
        )
    parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _game_svg(game: Game) -> str:
    """The board as SVG, for Jupyter: `svg` with its defaults."""
    return svg(game)


# Jupyter shows an object by its ``_repr_svg_``: the drawing attaches it to Game, so that the game
# module never imports its drawing (importing the package imports this module)
setattr(Game, "_repr_svg_", _game_svg)  # noqa: B010 - Game declares no such attribute: mypy needs setattr

__all__ = [
    "FRAME_WIDTH",
    "MIN_FRAME_WIDTH",
    "RENDER_MODES",
    "FrameLayout",
    "frame_layout",
    "Renderer",
    "Window",
    "ansi",
    "rgb_array",
    "svg",
]
