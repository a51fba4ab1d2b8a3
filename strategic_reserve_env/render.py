"""Pictures of a position: ANSI text, an RGB array, and a window (pygame) for ``human``.

All functions read a :class:`~strategic_reserve_env.game.Game` (use
``Game.load(state, i)`` for game ``i`` of a batch) and never change it.
Rank 6 (Blue's side) is drawn at the top, Red's near row at the bottom.
"""

from __future__ import annotations

import numpy as np

from .board import BIT, BLUE, BOARD_SIZE, COLOURS, FILES, RED, dice_for, names_of, square_name
from .game import Game
from .rules import HIT_NAMES

# ---------------------------------------------------------------------------------------- text


def roll_summary(game: Game) -> str:
    """One line about the latest roll, e.g. ``Red rolled e5 (dice 5, 5): friendly hit, captured d5, e4``."""
    if game.rolled < 0:
        return "No roll yet."
    roller = game.to_move if game.legal else game.to_move ^ 1
    purple, green = dice_for(game.rolled, roller)
    captured = names_of(game.captured) or "nothing"
    return (
        f"{COLOURS[roller].capitalize()} rolled {square_name(game.rolled)} (dice {purple}, {green}): "
        f"{HIT_NAMES[game.hit]} hit, captured {captured}."
    )


def status(game: Game) -> str:
    """Whose turn it is, or how the game ended."""
    if game.winner >= 0:
        return f"{COLOURS[game.winner].capitalize()} won at ply {game.ply}."
    if game.truncated:
        return f"Truncated at the ply limit ({game.ply} plies)."
    return f"Ply {game.ply}, {COLOURS[game.to_move].capitalize()} to move."


def ansi(game: Game) -> str:
    """The board with file/rank labels, both reserves, the latest roll and whose turn it is.

    ``R``/``B`` checkers, ``.`` empty, ``+`` a legal placement, ``[ ]`` the rolled square.
    """
    red, blue = game.red, game.blue
    reserves = game.reserves
    files = "    " + "  ".join(FILES)
    lines = [files]
    for rank in range(BOARD_SIZE, 0, -1):
        cells = []
        for file_index in range(BOARD_SIZE):
            square = (rank - 1) * BOARD_SIZE + file_index
            bit = BIT[square]
            mark = "R" if red & bit else "B" if blue & bit else "+" if game.legal & bit else "."
            cells.append(f"[{mark}]" if square == game.rolled else f" {mark} ")
        side = {BOARD_SIZE: f"   Blue reserve {reserves[BLUE]}", 1: f"   Red reserve {reserves[RED]}"}.get(rank, "")
        lines.append(f"{rank} " + "".join(cells) + f" {rank}{side}")
    lines.append(files)
    lines.append(status(game) + " " + roll_summary(game))
    if game.legal:
        lines.append("Legal: " + names_of(game.legal))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------- image

CELL = 40  # pixels per square
MARGIN = 22  # label strip left of and below the board
PANEL = 64  # reserve panel right of the board
HEIGHT = BOARD_SIZE * CELL + MARGIN + 8
WIDTH = MARGIN + BOARD_SIZE * CELL + PANEL
COLOUR = {
    "background": (236, 226, 204),
    "light": (222, 196, 150),
    "dark": (196, 164, 112),
    "red": (200, 40, 40),
    "blue": (40, 80, 200),
    "rolled": (250, 210, 0),
    "legal": (30, 150, 60),
    "captured": (90, 90, 90),
    "ink": (40, 30, 20),
}
#: 3x5 glyphs (rows top to bottom) for the labels and reserve counts; files are drawn as capitals
_GLYPHS = {
    "a": ".#.#.#####.##.#",
    "b": "##.#.###.#.###.",
    "c": ".###..#..#...##",
    "d": "##.#.##.##.###.",
    "e": "####..##.#..###",
    "f": "####..##.#..#..",
    "0": "####.##.##.####",
    "1": ".#.##..#..#.###",
    "2": "###..#####..###",
    "3": "###..###..#####",
    "4": "#.##.####..#..#",
    "5": "####..###..####",
    "6": "####..####.####",
    "7": "###..#..#..#..#",
    "8": "####.#####.####",
    "9": "####.####..####",
}


def _text(image: np.ndarray, text: str, x: int, y: int, colour, scale: int = 2) -> None:
    """Draw ``text`` with the 3x5 glyphs, top-left corner at (x, y)."""
    for i, char in enumerate(text):
        glyph = np.array([c == "#" for c in _GLYPHS[char]]).reshape(5, 3)
        big = np.kron(glyph, np.ones((scale, scale), dtype=bool))
        left = x + i * 4 * scale
        image[y : y + big.shape[0], left : left + big.shape[1]][big] = colour


def _disc(image: np.ndarray, cx: float, cy: float, radius: float, colour, ring: float = 0.0) -> None:
    """A filled disc (or a ring of width ``ring``) centred at (cx, cy)."""
    ys, xs = np.ogrid[: image.shape[0], : image.shape[1]]
    distance = np.hypot(xs - cx, ys - cy)
    inside = distance <= radius if ring == 0 else (distance <= radius) & (distance >= radius - ring)
    image[inside] = colour


def _cell_origin(square: int) -> tuple[int, int]:
    """Top-left pixel (x, y) of a square."""
    rank_index, file_index = divmod(square, BOARD_SIZE)
    return MARGIN + file_index * CELL, (BOARD_SIZE - 1 - rank_index) * CELL + 4


def rgb_array(game: Game) -> np.ndarray:
    """An (H, W, 3) uint8 picture: board with labels, checkers, legal squares, the rolled
    square (yellow frame), captured squares (grey rings), reserves and the side to move."""
    image = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
    image[:] = COLOUR["background"]
    red, blue = game.red, game.blue
    for square in range(BOARD_SIZE * BOARD_SIZE):
        x, y = _cell_origin(square)
        rank_index, file_index = divmod(square, BOARD_SIZE)
        image[y : y + CELL, x : x + CELL] = COLOUR["light" if (rank_index + file_index) % 2 else "dark"]
        centre = (x + CELL / 2, y + CELL / 2)
        bit = BIT[square]
        if red & bit or blue & bit:
            _disc(image, *centre, CELL * 0.38, COLOUR["red" if red & bit else "blue"])
        elif game.captured & bit:
            _disc(image, *centre, CELL * 0.3, COLOUR["captured"], ring=3)
        if game.legal & bit:
            _disc(image, *centre, CELL * 0.12, COLOUR["legal"])
        if square == game.rolled:
            frame = image[y : y + CELL, x : x + CELL]
            frame[:3], frame[-3:], frame[:, :3], frame[:, -3:] = (COLOUR["rolled"],) * 4
    for i in range(BOARD_SIZE):
        _text(image, FILES[i], MARGIN + i * CELL + CELL // 2 - 3, BOARD_SIZE * CELL + 8, COLOUR["ink"])
        _text(image, str(i + 1), 6, (BOARD_SIZE - 1 - i) * CELL + CELL // 2 - 1, COLOUR["ink"])
    # reserves: Blue's at the top (its side), Red's at the bottom; a bar marks the side to move
    panel_x = MARGIN + BOARD_SIZE * CELL + 10
    reserves = game.reserves
    for player, y in ((BLUE, 12), (RED, BOARD_SIZE * CELL - 40)):
        colour = COLOUR["red" if player == RED else "blue"]
        _disc(image, panel_x + 14, y + 14, 13, colour)
        _text(image, str(min(reserves[player], 99)), panel_x + 32, y + 9, COLOUR["ink"])
        if not game.done and game.to_move == player:
            image[y + 32 : y + 36, panel_x : panel_x + 50] = colour
    return image


RENDER_MODES = ["human", "ansi", "rgb_array"]


class Renderer:
    """Renders games in one ``render_mode`` for an env; owns the window of ``"human"``."""

    def __init__(self, mode: str | None, fps: int) -> None:
        if mode is not None and mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {mode!r}")
        self.mode, self.fps = mode, fps
        self._window: Window | None = None

    def render(self, game: Game):
        """Text for ``ansi``, an image for ``rgb_array``, a window update (None) for ``human``."""
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
    """A pygame window showing :func:`rgb_array` frames (``render_mode="human"``)."""

    def __init__(self, title: str, fps: int) -> None:
        try:
            import pygame
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise ImportError("render_mode='human' needs pygame: pip install pygame") from error
        self._pygame = pygame
        pygame.display.init()
        pygame.display.set_caption(title)
        self._screen = pygame.display.set_mode((WIDTH, HEIGHT))
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


def svg(game: Game, cell: int = 40, heat: np.ndarray | None = None) -> str:
    """An SVG picture for notebooks: labels, checkers, reserves, the rolled square, captured
    squares and legal squares. Elements carry classes (``checker red``, ``rolled``, ``captured``,
    ``legal``, ``reserve``) and ``data-square`` attributes. ``heat``, if given, is a (36,) array
    in [0, 1] shaded under the checkers (NaN squares are left plain)."""
    margin, panel = cell // 2 + 4, 2 * cell
    width, height = margin + BOARD_SIZE * cell + panel, BOARD_SIZE * cell + margin + 4
    red, blue = game.red, game.blue
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{cell // 3}">',
        f'<rect width="{width}" height="{height}" fill="rgb{COLOUR["background"]}"/>',
    ]

    def origin(square: int) -> tuple[int, int]:
        rank_index, file_index = divmod(square, BOARD_SIZE)
        return margin + file_index * cell, (BOARD_SIZE - 1 - rank_index) * cell + 4

    for square in range(BOARD_SIZE * BOARD_SIZE):
        x, y = origin(square)
        name = square_name(square)
        shade = COLOUR["light" if sum(divmod(square, BOARD_SIZE)) % 2 else "dark"]
        parts.append(
            f'<rect class="square" data-square="{name}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
            f'fill="rgb{shade}"/>'
        )
        if heat is not None and not np.isnan(heat[square]):
            level = float(np.clip(heat[square], 0, 1))
            parts.append(
                f'<rect class="heat" data-square="{name}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="rgb(230,60,30)" fill-opacity="{0.1 + 0.7 * level:.2f}"/>'
            )
        cx, cy, bit = x + cell / 2, y + cell / 2, BIT[square]
        if red & bit or blue & bit:
            colour = "red" if red & bit else "blue"
            parts.append(
                f'<circle class="checker {colour}" data-square="{name}" cx="{cx}" cy="{cy}" '
                f'r="{cell * 0.38:.1f}" fill="rgb{COLOUR[colour]}"/>'
            )
        elif game.captured & bit:
            parts.append(
                f'<circle class="captured" data-square="{name}" cx="{cx}" cy="{cy}" r="{cell * 0.3:.1f}" '
                f'fill="none" stroke="rgb{COLOUR["captured"]}" stroke-width="3"/>'
            )
        if game.legal & bit:
            parts.append(
                f'<circle class="legal" data-square="{name}" cx="{cx}" cy="{cy}" r="{cell * 0.12:.1f}" '
                f'fill="rgb{COLOUR["legal"]}"/>'
            )
        if square == game.rolled:
            parts.append(
                f'<rect class="rolled" data-square="{name}" x="{x + 2}" y="{y + 2}" width="{cell - 4}" '
                f'height="{cell - 4}" fill="none" stroke="rgb{COLOUR["rolled"]}" stroke-width="4"/>'
            )
    for i in range(BOARD_SIZE):
        parts.append(
            f'<text class="file" x="{margin + i * cell + cell / 2}" y="{BOARD_SIZE * cell + margin}" '
            f'text-anchor="middle">{FILES[i]}</text>'
        )
        parts.append(
            f'<text class="rank" x="{margin / 2}" y="{(BOARD_SIZE - 1 - i) * cell + cell / 2 + 8}" '
            f'text-anchor="middle">{i + 1}</text>'
        )
    reserves = game.reserves
    panel_x = margin + BOARD_SIZE * cell + cell // 3
    for player, y in ((BLUE, cell // 2), (RED, BOARD_SIZE * cell - cell // 2)):
        colour = COLOURS[player]
        mover = not game.done and game.to_move == player
        parts.append(
            f'<circle class="reserve-disc {colour}" cx="{panel_x + cell / 3}" cy="{y}" r="{cell / 3:.1f}" '
            f'fill="rgb{COLOUR[colour]}" stroke="black" stroke-width="{3 if mover else 0}"/>'
        )
        parts.append(
            f'<text class="reserve {colour}" x="{panel_x + 0.8 * cell}" y="{y + cell / 8}">{reserves[player]}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
