"""Pictures a person reads at a glance: captions that fit, the luck plot's legend, units and ticks, and video
frames with a caption, the result at the end of a game and a size option."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from strategic_reserve_env import Config, Game, records  # noqa: E402
from strategic_reserve_env.dice import GameDice  # noqa: E402
from strategic_reserve_env.plotting import FRAME_SIZE, ReplayViewer, draw_luck, draw_position  # noqa: E402
from strategic_reserve_env.render import frame_layout, rgb_array  # noqa: E402
from strategic_reserve_env.scene import PALETTE  # noqa: E402


def random_game(seed: int, reserve: int = 7) -> Game:
    """A finished game of uniformly random placements on the dice of ``seed``."""
    game, dice, rng = Game(Config(reserve=reserve)), GameDice(seed), np.random.default_rng(seed)
    while not game.done:
        game.roll(dice.next())
        game.place(int(rng.choice(game.legal_squares())))
    return game


def inside(artist, figure) -> bool:
    """``artist`` is drawn wholly inside ``figure`` (nothing cut at its edges)."""
    figure.canvas.draw()
    box, frame = artist.get_window_extent(), figure.bbox
    return (
        box.x0 >= frame.x0 - 0.5 and box.x1 <= frame.x1 + 0.5 and box.y0 >= frame.y0 - 0.5 and box.y1 <= frame.y1 + 0.5
    )


def test_a_long_caption_wraps_inside_a_replay_frame():
    game = random_game(3)
    record = records.record_of(game)
    viewer = ReplayViewer(record)
    longest = max(range(len(viewer) - 1), key=lambda i: len(viewer.captions[i]))
    caption = viewer.captions[longest] + "; luck +0.123, error 0.045"  # as long as an analysed caption
    figure, ax = plt.subplots(figsize=FRAME_SIZE, layout="constrained")
    draw_position(viewer.frames[longest], ax=ax, title=caption)
    title = ax.title
    assert "\n" in title.get_text() and " ".join(title.get_text().split()) == caption
    assert inside(title, figure)
    plt.close(figure)


class FakeAnalysis:
    """What draw_luck reads: ply numbers and Red's luck per roll (a total past 1, as a long game's can be)."""

    luck_value = "race"

    def luck_by_ply(self):
        plies = np.arange(1, 41)
        return plies, np.where(plies % 3 == 0, -0.02, 0.06)


def test_the_luck_plot_shows_both_colours_its_units_and_whole_plies():
    ax = draw_luck(FakeAnalysis())
    figure = ax.figure
    legend = ax.get_legend()
    colours = [tuple(np.round(handle.get_facecolor()[:3], 3)) for handle in legend.legend_handles[:2]]
    assert colours == [tuple(np.round(np.array(PALETTE[c]) / 255, 3)) for c in ("red", "blue")]
    assert [text.get_text() for text in legend.get_texts()][:2] == ["a roll that helped Red", "a roll that helped Blue"]
    assert "win probability" in ax.get_ylabel() and "may pass 1" in legend.get_texts()[2].get_text()
    assert np.cumsum(FakeAnalysis().luck_by_ply()[1])[-1] > 1  # the case the legend warns of
    figure.canvas.draw()
    ticks = [tick for tick in ax.get_xticks() if ax.get_xlim()[0] <= tick <= ax.get_xlim()[1]]
    assert ticks and all(float(tick).is_integer() for tick in ticks)
    for artist in (ax.xaxis.label, ax.yaxis.label, ax.title, legend):
        assert inside(artist, figure), artist
    bars = {to_rgb(patch.get_facecolor()) for patch in ax.patches}
    assert len(bars) == 2
    plt.close(figure)


def test_an_rgb_array_frame_has_a_caption_the_result_and_a_size_option():
    game = random_game(2)
    assert game.winner >= 0
    frame = rgb_array(game)
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8
    layout = frame_layout()
    strip = frame[layout.caption_top :]
    ink = np.all(strip == PALETTE["ink"], axis=-1)
    assert ink.sum() > 200  # the caption's text ("Red won at ply N. ...")
    bigger = rgb_array(game, width=1280)
    assert bigger.shape == (960, 1280, 3)
    unfinished = Game()
    unfinished.roll(28)
    assert not np.array_equal(rgb_array(unfinished)[layout.caption_top :], strip)  # another caption
    for width in (321, 100, 640.0, True):
        with pytest.raises(ValueError, match="width must be an even number of pixels >= 320"):
            rgb_array(game, width=width)
