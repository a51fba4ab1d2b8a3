"""Matplotlib pictures of positions, per-square heatmaps, and replays of whole games.

Nothing here changes a game; the rules stay in the engine. Typical use in a
notebook:

```python
fig, ax = plt.subplots()
draw_heatmap(game, probabilities, ax=ax, label="policy", value=0.12)

viewer = ReplayViewer(records.load_record("game.json"))
viewer.forward(); viewer        # shows the position as SVG
viewer.save_gif("game.gif")

analysis = evaluation.analysis.analyse(record)     # luck and errors (needs the agents)
viewer = ReplayViewer(record, analysis)             # captions show them
draw_luck(analysis)                                 # luck per roll and Red's luck so far
```
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import BOARD_SIZE, parse_square
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.files.records import Record, replay

from .render import svg
from .scene import PALETTE, Scene, ply_number, roll_summary, scene_of

TITLE_SIZE = 10  # points: the caption above a board
COLORBAR_SHARE = 0.8  # of a figure's width: what a heatmap's title may fill beside its colour bar
FRAME_SIZE = (4.2, 4.4)  # inches: a frame of save_pngs and save_gif (room for a caption of three lines)


def _mpl_colour(name: str) -> tuple[float, float, float]:
    """A palette colour as matplotlib RGB (0..1)."""
    red, green, blue = PALETTE[name]
    return red / 255, green / 255, blue / 255


def _wrapped(text: str, ax, fontsize: float, share: float = 1.0) -> str:
    """`text` broken into lines that fit `share` of the width of `ax`'s figure at `fontsize` points (a
    caption is never cut at the figure's edges: it grows downwards instead)."""
    width_points = ax.figure.get_figwidth() * 72 * share
    characters = max(20, int(width_points / (0.56 * fontsize)))  # a sans-serif character is about 0.56 em wide
    return textwrap.fill(text, width=characters, break_long_words=False, break_on_hyphens=False)


def _draw_scene(view: Scene, ax, title: str) -> None:
    """Map `view` to patches and text on `ax` (file on x, rank on y: a square spans one unit)."""
    from matplotlib.patches import Circle, Rectangle
    from matplotlib.patheffects import withStroke

    ax.set_xlim(0, BOARD_SIZE + 1.6)
    ax.set_ylim(0, BOARD_SIZE)
    ax.set_aspect("equal")
    ax.set_xticks([i + 0.5 for i in range(BOARD_SIZE)], list(view.files))
    ax.set_yticks([i + 0.5 for i in range(BOARD_SIZE)], list(reversed(view.ranks)))  # rank 1 at the bottom
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for square in view.squares:
        x, y = square.column + 0.5, BOARD_SIZE - 1 - square.row + 0.5
        index = square.index
        ax.add_patch(
            Rectangle((x - 0.5, y - 0.5), 1, 1, color=_mpl_colour(square.shade), zorder=0, gid=f"square-{index}")
        )
        if square.content != "empty":
            colour = square.content
            ax.add_patch(Circle((x, y), 0.38, color=_mpl_colour(colour), zorder=3, gid=f"checker-{colour}-{index}"))
        elif square.captured:
            ax.add_patch(
                Circle(
                    (x, y),
                    0.3,
                    fill=False,
                    edgecolor=_mpl_colour("captured"),
                    linewidth=2,
                    zorder=3,
                    gid=f"captured-{index}",
                )
            )
        if square.legal:  # a white rim in an ink outline keeps the dot visible on any heatmap colour
            ax.add_patch(
                Circle(
                    (x, y),
                    0.1,
                    facecolor=_mpl_colour("legal"),
                    edgecolor=_mpl_colour("halo"),
                    linewidth=1,
                    path_effects=[withStroke(linewidth=2.5, foreground=_mpl_colour("ink"))],
                    zorder=4,
                    gid=f"legal-{index}",
                )
            )
        if square.rolled:
            ax.add_patch(
                Rectangle(
                    (x - 0.46, y - 0.46),
                    0.92,
                    0.92,
                    fill=False,
                    edgecolor=_mpl_colour("rolled"),
                    linewidth=3,
                    zorder=5,
                    gid=f"rolled-{index}",
                )
            )
    for reserve, y in zip(view.reserves, (BOARD_SIZE - 0.6, 0.6), strict=True):
        ax.add_patch(
            Circle((BOARD_SIZE + 0.5, y), 0.3, color=_mpl_colour(reserve.player), gid=f"reserve-{reserve.player}")
        )
        ax.text(BOARD_SIZE + 0.95, y, str(reserve.count), va="center", fontsize=11)
    _legend(view, ax)
    ax.set_title(_wrapped(title, ax, TITLE_SIZE), fontsize=TITLE_SIZE)


def _legend(view: Scene, ax) -> None:
    """The scene's legend under the board: each mark drawn as on a light square, beside what it means."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D

    def marker(shape: str, face: str, edge: str, width: float = 1.0, size: float = 7.0) -> Line2D:
        colour = "none" if face == "none" else _mpl_colour(face)
        return Line2D(
            [], [], linestyle="", marker=shape, markersize=size, markerfacecolor=colour,
            markeredgecolor=_mpl_colour(edge), markeredgewidth=width,
        )  # fmt: skip

    handles = {
        "legal": marker("o", "legal", "halo", size=5),
        "rolled": marker("s", "none", "rolled", width=2, size=10),
        "captured": marker("o", "none", "captured", width=1.5, size=9),
        "reserve": (marker("o", "red", "red"), marker("o", "blue", "blue")),
    }
    keys = view.legend
    ax.legend(
        [handles[key.mark] for key in keys],
        [key.text for key in keys],
        handler_map={tuple: HandlerTuple(ndivide=None, pad=0.1)},
        loc="upper center",
        bbox_to_anchor=(0.5, -0.07),
        ncols=2,
        fontsize="small",
        facecolor=_mpl_colour("light"),
        framealpha=1.0,
        edgecolor=_mpl_colour("dark"),
    )


def _axes(ax):
    """`ax`, or the Axes of a new figure when None."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(4.2, 3.6), layout="constrained")[1]


def draw_position(game: Game, ax=None, title: str | None = None, legal: bool = True):
    """Draw the board on `ax` (a new figure if None): labels, checkers, the rolled square,
    captured squares, legal squares (if `legal`), both reserves and a legend of the marks under the board.
    `title`: the caption above it; by default the scene's (whose turn it is or who won, and the latest
    roll: what the marked squares are). Returns the Axes."""
    view = scene_of(game, legal=legal)
    ax = _axes(ax)
    _draw_scene(view, ax, title if title is not None else view.caption)
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
    """The position with a per-square heatmap underneath (`values`: 36 numbers, NaN to leave a
    square plain), a colour bar named `label`, the legend of the marks, and `value` (e.g. a critic's
    estimate) after the title (by default the scene's caption). Returns the Axes."""
    import matplotlib.pyplot as plt

    view = scene_of(game, heat=values)
    ax = _axes(ax)
    _draw_scene(view, ax, "")
    grid = np.ma.masked_invalid([[square.heat for square in row] for row in view.rows()])
    image = ax.imshow(grid, cmap=cmap, origin="upper", extent=(0, BOARD_SIZE, 0, BOARD_SIZE), alpha=0.75, zorder=1)
    if colorbar:
        plt.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label=label)
    heading = title if title is not None else view.caption
    if value is not None:
        heading += f"  value {value:+.2f}"
    share = COLORBAR_SHARE if colorbar else 1.0  # the title is centred over the board, left of the colour bar
    ax.set_title(_wrapped(heading, ax, TITLE_SIZE, share), fontsize=TITLE_SIZE)
    return ax


def draw_luck(analysis, ax=None, title: str | None = None):
    """Bars of each roll's luck from Red's side (Blue's rolls negated: a red bar is a roll that helped Red, a
    blue bar one that helped Blue) and a line of Red's total luck so far, from an analysis
    (`strategic_reserve_env.evaluation.analysis.GameAnalysis`, or anything with
    `luck_by_ply() -> (plies, red_luck)`). A roll's luck is a change of a win probability (-1..1); the total
    is a sum of such changes, so it can pass 1 over a long game. Returns the axes (a new 6.4 x 3.6 inch
    figure when `ax` is None)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")[1]
    plies, red_luck = analysis.luck_by_ply()
    colours = [_mpl_colour("red" if value >= 0 else "blue") for value in red_luck]
    ax.bar(plies, red_luck, color=colours, width=0.8)
    ax.plot(plies, np.cumsum(red_luck), color="black", linewidth=1.5)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # plies are whole numbers
    ax.set_xlabel("ply (the game's k-th roll)")
    ax.set_ylabel("luck for Red\n(win probability gained)")
    ax.set_title(title if title is not None else f"luck of each roll (value function {analysis.luck_value})")
    handles = [
        Patch(color=_mpl_colour("red"), label="a roll that helped Red"),
        Patch(color=_mpl_colour("blue"), label="a roll that helped Blue"),
        Line2D([], [], color="black", linewidth=1.5, label="Red's total luck so far (sum; may pass 1)"),
    ]
    ax.legend(handles=handles, loc="best", fontsize="small")
    return ax


class ReplayViewer:
    """Step through a record: one frame per decision (after the roll) and one after the last placement.

    `forward()`, `back()`, `goto(i)` move; the viewer shows the current frame as SVG in a
    notebook; `widget()` gives a slider (needs ipywidgets); `save_gif` / `save_pngs` export.
    """

    def __init__(self, record: Record, analysis=None) -> None:
        """`analysis` (optional; a `strategic_reserve_env.evaluation.analysis.GameAnalysis` of the same
        record, or anything with such `plies`) adds each roll's luck and each placement's error to the
        captions."""
        self.frames: list[Game] = []
        self.captions: list[str] = []
        plies = list(analysis.plies) if analysis is not None else []

        def keep(game: Game) -> None:
            self.frames.append(game.copy())
            caption = f"ply {ply_number(game)}: {roll_summary(game)}"
            if len(self.frames) <= len(plies):
                ply = plies[len(self.frames) - 1]
                caption = f"{caption.rstrip('.')}; luck {ply.luck:+.3f}, error {ply.error:.3f}"
            self.captions.append(caption)

        trace = list(replay(record, on_roll=keep))  # RecordError, naming the ply, for a bad record
        final = self.frames[-1].copy() if trace else Game(record.config)
        if trace:
            final.place(parse_square(trace[-1]["place"]))
        self.frames.append(final)
        self.captions.append(scene_of(final).caption)  # how it ended, and the last roll its marks show
        self.index = 0

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def game(self) -> Game:
        """The current frame."""
        return self.frames[self.index]

    def goto(self, index: int) -> ReplayViewer:
        """Jump to frame `index` (negative counts from the end)."""
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

        figure, ax = plt.subplots(figsize=FRAME_SIZE, layout="constrained")
        draw_position(self.frames[index], ax=ax, title=self.captions[index])
        return figure

    def save_pngs(self, directory: str | Path) -> list[Path]:
        """One PNG per frame in `directory` (frame_000.png, ...)."""
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

        figure, ax = plt.subplots(figsize=FRAME_SIZE, layout="constrained")

        def draw(index: int):
            ax.clear()
            draw_position(self.frames[index], ax=ax, title=self.captions[index])
            return []

        animation = FuncAnimation(figure, draw, frames=len(self), blit=False)
        animation.save(str(path), writer=PillowWriter(fps=fps), dpi=70)
        plt.close(figure)
        return Path(path)
