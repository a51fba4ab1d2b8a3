"""Matplotlib pictures of positions, per-square heatmaps, and replays of whole games.

Nothing here changes a game; the rules stay in the engine. Typical use in a
notebook::

    fig, ax = plt.subplots()
    draw_heatmap(game, probabilities, ax=ax, label="policy", value=0.12)

    viewer = ReplayViewer(records.load_record("game.json"))
    viewer.forward(); viewer        # shows the position as SVG
    viewer.save_gif("game.gif")
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .board import BIT, BLUE, BOARD_SIZE, COLOURS, FILES, NUM_SQUARES, RED, parse_square
from .game import Game
from .records import Record, replay
from .render import COLOUR, roll_summary, status, svg


def _rgb(name: str) -> tuple[float, float, float]:
    """A palette colour as matplotlib RGB."""
    return tuple(c / 255 for c in COLOUR[name])


def _centre(square: int) -> tuple[float, float]:
    """Data coordinates of a square's centre (file on x, rank on y)."""
    rank_index, file_index = divmod(square, BOARD_SIZE)
    return file_index + 0.5, rank_index + 0.5


def draw_position(game: Game, ax=None, title: str | None = None, legal: bool = True):
    """Draw the board on ``ax`` (a new figure if None): labels, checkers, the rolled square,
    captured squares, legal squares (if ``legal``) and both reserves. Returns the Axes."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.set_xlim(0, BOARD_SIZE + 1.6)
    ax.set_ylim(0, BOARD_SIZE)
    ax.set_aspect("equal")
    ax.set_xticks([i + 0.5 for i in range(BOARD_SIZE)], list(FILES))
    ax.set_yticks([i + 0.5 for i in range(BOARD_SIZE)], [str(i + 1) for i in range(BOARD_SIZE)])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    red, blue = game.red, game.blue
    for square in range(NUM_SQUARES):
        x, y = _centre(square)
        shade = "light" if sum(divmod(square, BOARD_SIZE)) % 2 else "dark"
        ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, color=_rgb(shade), zorder=0, gid=f"square-{square}"))
        bit = BIT[square]
        if red & bit or blue & bit:
            ax.add_patch(
                Circle(
                    (x, y),
                    0.38,
                    color=_rgb("red" if red & bit else "blue"),
                    zorder=3,
                    gid=f"checker-{'red' if red & bit else 'blue'}-{square}",
                )
            )
        elif game.captured & bit:
            ax.add_patch(
                Circle(
                    (x, y), 0.3, fill=False, edgecolor=_rgb("captured"), linewidth=2, zorder=3, gid=f"captured-{square}"
                )
            )
        if legal and game.legal & bit:
            ax.add_patch(Circle((x, y), 0.1, color=_rgb("legal"), zorder=4, gid=f"legal-{square}"))
        if square == game.rolled:
            ax.add_patch(
                Rectangle(
                    (x - 0.46, y - 0.46),
                    0.92,
                    0.92,
                    fill=False,
                    edgecolor=_rgb("rolled"),
                    linewidth=3,
                    zorder=5,
                    gid=f"rolled-{square}",
                )
            )
    reserves = game.reserves
    for player, y in ((BLUE, BOARD_SIZE - 0.6), (RED, 0.6)):
        ax.add_patch(Circle((BOARD_SIZE + 0.5, y), 0.3, color=_rgb(COLOURS[player]), gid=f"reserve-{COLOURS[player]}"))
        ax.text(BOARD_SIZE + 0.95, y, str(reserves[player]), va="center", fontsize=11)
    ax.set_title(title if title is not None else status(game), fontsize=10)
    return ax


def draw_heatmap(
    game: Game,
    values,
    ax=None,
    label: str = "",
    cmap: str = "viridis",
    value: float | None = None,
    colorbar: bool = True,
    title: str | None = None,
):
    """The position with a per-square heatmap underneath (``values``: 36 numbers, NaN to leave a
    square plain), a colour bar named ``label``, and ``value`` (e.g. a critic's estimate) in the
    title. Returns the Axes."""
    import matplotlib.pyplot as plt

    values = np.asarray(values, dtype=np.float64).reshape(NUM_SQUARES)
    ax = draw_position(game, ax=ax, title="")
    grid = np.ma.masked_invalid(values.reshape(BOARD_SIZE, BOARD_SIZE))
    image = ax.imshow(grid, cmap=cmap, origin="lower", extent=(0, BOARD_SIZE, 0, BOARD_SIZE), alpha=0.75, zorder=1)
    if colorbar:
        plt.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label=label)
    heading = title if title is not None else status(game)
    if value is not None:
        heading += f"  value {value:+.2f}"
    ax.set_title(heading, fontsize=10)
    return ax


class ReplayViewer:
    """Step through a record: one frame per decision (after the roll) and one after the last placement.

    ``forward()``, ``back()``, ``goto(i)`` move; the viewer shows the current frame as SVG in a
    notebook; ``widget()`` gives a slider (needs ipywidgets); ``save_gif`` / ``save_pngs`` export.
    """

    def __init__(self, record: Record) -> None:
        self.frames: list[Game] = []
        self.captions: list[str] = []

        def keep(game: Game) -> None:
            self.frames.append(game.copy())
            self.captions.append(f"ply {len(self.frames)}: {roll_summary(game)}")

        trace = list(replay(record, on_roll=keep))  # RecordError, naming the ply, for a bad record
        final = self.frames[-1].copy() if trace else Game(record.config)
        if trace:
            final.place(parse_square(trace[-1]["place"]))
        self.frames.append(final)
        self.captions.append(status(final))
        self.index = 0

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def game(self) -> Game:
        """The current frame."""
        return self.frames[self.index]

    def goto(self, index: int) -> ReplayViewer:
        """Jump to frame ``index`` (negative counts from the end)."""
        if not -len(self) <= index < len(self):
            raise IndexError(f"frame {index} is outside 0..{len(self) - 1}")
        self.index = index % len(self)
        return self

    def forward(self, plies: int = 1) -> ReplayViewer:
        """Move forward (stops at the last frame)."""
        return self.goto(min(self.index + plies, len(self) - 1))

    def back(self, plies: int = 1) -> ReplayViewer:
        """Move back (stops at the first frame)."""
        return self.goto(max(self.index - plies, 0))

    def _repr_svg_(self) -> str:
        return svg(self.game)

    def widget(self):
        """An ipywidgets slider over the frames, with the board and the caption."""
        import ipywidgets
        from IPython.display import SVG, display

        output = ipywidgets.Output()

        def show(change=None) -> None:
            self.goto(slider.value)
            with output:
                output.clear_output(wait=True)
                display(SVG(svg(self.game)))
                print(self.captions[self.index])

        slider = ipywidgets.IntSlider(value=self.index, min=0, max=len(self) - 1, description="frame")
        slider.observe(show, names="value")
        show()
        return ipywidgets.VBox([slider, output])

    def _figure(self, index: int):
        """A matplotlib figure of one frame."""
        import matplotlib.pyplot as plt

        figure, ax = plt.subplots(figsize=(4.2, 3.8))
        draw_position(self.frames[index], ax=ax, title=self.captions[index])
        figure.tight_layout()
        return figure

    def save_pngs(self, directory: str | Path) -> list[Path]:
        """One PNG per frame in ``directory`` (frame_000.png, ...)."""
        import matplotlib.pyplot as plt

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths = []
        for index in range(len(self)):
            figure = self._figure(index)
            paths.append(directory / f"frame_{index:03d}.png")
            figure.savefig(paths[-1], dpi=80)
            plt.close(figure)
        return paths

    def save_gif(self, path: str | Path, fps: float = 2.0) -> Path:
        """The whole game as an animated GIF (rolls framed in yellow, captures ringed in grey)."""
        import matplotlib.pyplot as plt
        from matplotlib.animation import FuncAnimation, PillowWriter

        figure, ax = plt.subplots(figsize=(4.2, 3.8))

        def draw(index: int):
            ax.clear()
            draw_position(self.frames[index], ax=ax, title=self.captions[index])
            return []

        animation = FuncAnimation(figure, draw, frames=len(self), blit=False)
        animation.save(str(path), writer=PillowWriter(fps=fps), dpi=70)
        plt.close(figure)
        return Path(path)
