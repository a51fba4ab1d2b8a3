"""Pictures a person reads at a glance: captions that fit, the luck plot's legend, units and ticks, video
frames with a caption, the result at the end of a game and a size option, a legend of the marks on every
board picture, a last frame that names its roll, and the docs' heatmap drawn from the shipped policy."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
from xml.etree import ElementTree  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from strategic_reserve_env import Config, Game  # noqa: E402
from strategic_reserve_env.agents import load_agent  # noqa: E402
from strategic_reserve_env.core.board import COLOURS, SQUARE_INDEX, square_name  # noqa: E402
from strategic_reserve_env.core.dice import GameDice  # noqa: E402
from strategic_reserve_env.core.observation import planes  # noqa: E402
from strategic_reserve_env.files import records  # noqa: E402
from strategic_reserve_env.pictures.plotting import FRAME_SIZE, ReplayViewer, draw_heatmap, draw_luck, draw_position  # noqa: E402
from strategic_reserve_env.pictures.render import ansi, frame_layout, rgb_array, svg  # noqa: E402
from strategic_reserve_env.pictures.scene import MEANINGS, PALETTE, scene_of  # noqa: E402

from conftest import REPO  # noqa: E402


def random_game(seed: int, reserve: int = 7) -> Game:
    """A finished game of uniformly random placements on the dice of `seed`."""
    game, dice, rng = Game(Config(reserve=reserve)), GameDice(seed), np.random.default_rng(seed)
    while not game.done:
        game.roll(dice.next())
        game.place(int(rng.choice(game.legal_squares())))
    return game


def inside(artist, figure) -> bool:
    """`artist` is drawn wholly inside `figure` (nothing cut at its edges)."""
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- legends, captions and the heatmap: pictures that explain themselves --------------------------------------------


def friendly_hit() -> Game:
    """Red's first roll e5 (dice 5, 5): a friendly hit that captured e4 and d5; every mark is on the board."""
    game = Game()
    game.roll(SQUARE_INDEX["e5"])
    return game


def test_the_scene_carries_a_legend_of_every_mark_it_can_show():
    view = scene_of(friendly_hit())
    assert [(key.mark, key.text) for key in view.legend] == [
        ("legal", "legal square"),
        ("rolled", "rolled square"),
        ("captured", "captured checker"),
        ("reserve", "checkers in reserve"),
    ]
    assert {key.mark for key in view.legend} == set(MEANINGS)
    shown = {mark for mark in ("legal", "rolled", "captured") if any(getattr(s, mark) for s in view.squares)}
    assert shown == {"legal", "rolled", "captured"}  # the position shows every mark its legend names
    assert [key.mark for key in scene_of(friendly_hit(), legal=False).legend] == ["rolled", "captured", "reserve"]


def test_every_backend_draws_the_scenes_legend():
    """SVG, matplotlib, the RGB frame and ANSI text each show each key of the scene's legend, with its mark."""
    game = friendly_hit()
    keys = scene_of(game).legend
    picture = ElementTree.fromstring(svg(game))
    legend = [element for element in picture.iter() if element.get("class") == "legend"]
    assert len(legend) == 1
    groups = [element for element in legend[0] if element.get("class") == "key"]
    assert [group.get("data-mark") for group in groups] == [key.mark for key in keys]
    for group, key in zip(groups, keys, strict=True):
        texts = [element.text for element in group.iter() if element.tag.endswith("text")]
        assert texts == [key.text]
        marks = [element.get("class", "").split()[0] for element in group.iter() if element.get("class")]
        assert f"legend-{key.mark}" in marks
        assert not any(element.get("data-square") for element in group.iter())  # no board square's mark
    ax = draw_position(game)  # its own figure, laid out to hold the legend under the board
    figure = ax.figure
    assert [text.get_text() for text in ax.get_legend().get_texts()] == [key.text for key in keys]
    assert inside(ax.get_legend(), figure)
    plt.close(figure)
    layout = frame_layout()
    frame = rgb_array(game)
    icon = layout.legend_icon
    samples = {  # where each key's sample square shows its mark's colour, from its top-left pixel
        "legal": [(icon // 2, icon // 2, "legal")],
        "rolled": [(0, 0, "rolled"), (icon - 1, icon - 1, "rolled")],
        "captured": [(icon // 2, icon // 2 - round(icon * 0.3) + 1, "captured")],
        "reserve": [(round(icon * 0.25), icon // 2, "red"), (round(icon * 0.75), icon // 2, "blue")],
    }
    for number, key in enumerate(keys):
        x, y = layout.legend_origin(number)
        for dx, dy, colour in samples[key.mark]:
            assert tuple(frame[y + dy, x + dx]) == PALETTE[colour], key
        text = frame[y : y + icon, x + icon : layout.width]
        assert np.all(text == PALETTE["ink"], axis=-1).sum() > 20, key  # its words, right of the sample
    line = ansi(game).splitlines()[-1]
    assert line.startswith("Key: ") and "+ legal square" in line and "[ ] rolled square" in line


def test_the_last_replay_frame_says_what_its_marked_squares_were():
    game = random_game(2)
    viewer = ReplayViewer(records.record_of(game))
    final = viewer.frames[-1]
    assert final.winner >= 0 and final.rolled >= 0
    caption = viewer.captions[-1]
    assert caption == scene_of(final).caption  # the same words as the rgb_array frame's caption
    assert caption.startswith(f"{COLOURS[final.winner].capitalize()} won at ply {final.ply}.")
    assert f"rolled {square_name(final.rolled)}" in caption and "captured" in caption
    figure = viewer._figure(len(viewer) - 1)
    assert " ".join(figure.axes[0].get_title().split()) == caption
    plt.close(figure)


def contrast(one, other) -> float:
    """The WCAG contrast ratio of two RGB colours (0..1 each): 1 for equal luminance, 21 for black on white."""

    def luminance(colour) -> float:
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in colour]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_a_legal_dot_stands_out_on_every_colour_of_a_heatmap():
    """Each colour a heatmap square can take (the colour map blended over a light or dark square, as drawn)
    differs clearly from the dot's fill, its white rim or its ink outline: the green dot alone vanishes on
    viridis's greens, and a white rim alone is faint on its middle colours."""
    game = friendly_hit()
    figure, ax = plt.subplots()
    draw_heatmap(game, np.linspace(0, 1, 36), ax=ax)
    image = ax.get_images()[0]
    dots = [patch for patch in ax.patches if (patch.get_gid() or "").startswith("legal-")]
    assert len(dots) == len(game.legal_squares())
    fill, rim = to_rgb(dots[0].get_facecolor()), to_rgb(dots[0].get_edgecolor())
    (outline,) = [effect._gc["foreground"] for effect in dots[0].get_path_effects()]
    assert dots[0].get_linewidth() > 0
    alpha = image.get_alpha()
    worst = min(
        max(contrast(fill, shown), contrast(rim, shown), contrast(to_rgb(outline), shown))
        for colour in image.get_cmap()(np.linspace(0, 1, 256))[:, :3]
        for square in ("light", "dark")
        for shown in [alpha * colour + (1 - alpha) * np.array(PALETTE[square]) / 255]
    )
    assert worst >= 3.0, worst  # WCAG's least contrast for a graphic
    plt.close(figure)


def test_the_docs_heatmap_is_the_shipped_policys_probabilities_over_the_legal_squares():
    pytest.importorskip("torch")
    from experiments.pictures import POLICY, policy_heat

    game = friendly_hit()  # Red to place on one of e4, d5, f5, e6
    agent = load_agent(POLICY)
    heat, value = policy_heat(agent, game)
    legal = np.zeros(36, dtype=bool)
    legal[game.legal_squares()] = True
    assert np.array_equal(~np.isnan(heat), legal)
    expected = agent.probabilities(planes(game, game.to_move)[None], legal[None])[0]
    assert np.allclose(heat[legal], expected[legal]) and np.isclose(heat[legal].sum(), 1.0)
    assert len(set(np.round(heat[legal], 6))) > 1  # a policy's preferences, not a flat or made-up field
    assert value == pytest.approx(float(agent.values(planes(game, game.to_move)[None])[0]))
    ax = draw_heatmap(game, heat, label="probability")
    shown = np.ma.filled(ax.get_images()[0].get_array(), np.nan)  # rows: rank 6 at the top
    assert np.allclose(shown[::-1].reshape(36), heat, equal_nan=True)
    plt.close(ax.figure)


@pytest.mark.slow
def test_the_first_player_plot_labels_each_pairing_readably_from_the_reports_own_file():
    from strategic_reserve_env.evaluation.skill_report import first_player_figure

    data = json.loads((REPO / "docs" / "skill" / "skill.json").read_text(encoding="utf-8"))
    figure = first_player_figure(data)
    left = figure.axes[0]
    labels = left.get_yticklabels()
    assert [label.get_text() for label in labels] == [f"{p['a']} vs {p['b']}" for p in data["ladders"][0]["pairings"]]
    points = left.lines[0].get_xdata()  # the scores drawn are the file's
    assert np.allclose(points, [p["red"]["score"] for p in data["ladders"][0]["pairings"]])
    for label in labels:
        assert label.get_fontsize() >= 9 and inside(label, figure), label.get_text()
    plt.close(figure)


def test_a_disc_drawn_in_its_bounding_box_is_the_disc_of_the_whole_frame():
    """Differential: `_disc` (which measures only the pixels of its bounding box) colours exactly the pixels
    of the frame within its radius (or its ring), for discs and rings inside the frame and across its edges."""
    from strategic_reserve_env.pictures.render import _disc

    rng = np.random.default_rng(3)
    height, width = 60, 80
    ys, xs = np.ogrid[:height, :width]
    for _ in range(300):
        cx, cy = rng.uniform(-15, width + 15), rng.uniform(-15, height + 15)
        radius, ring = rng.uniform(0.2, 25), float(rng.choice([0.0, rng.uniform(0.5, 5)]))
        distance = np.hypot(xs - cx, ys - cy)
        inside = distance <= radius if ring == 0 else (distance <= radius) & (distance >= radius - ring)
        image = np.zeros((height, width, 3), dtype=np.uint8)
        _disc(image, cx, cy, radius, (255, 1, 2), ring=ring)
        assert np.array_equal(image.any(axis=2), inside), (cx, cy, radius, ring)
        assert (image[inside] == (255, 1, 2)).all()
