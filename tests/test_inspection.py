"""Pictures of a position: the scene model and its four backends (ANSI text, RGB array, SVG, matplotlib),
the replay viewer and the example notebook."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from strategic_reserve_env import Game  # noqa: E402
from strategic_reserve_env.core.board import SQUARE_INDEX  # noqa: E402
from strategic_reserve_env.core.dice import GameDice  # noqa: E402
from strategic_reserve_env.files import records  # noqa: E402
from strategic_reserve_env.pictures.plotting import ReplayViewer, draw_heatmap, draw_position  # noqa: E402
from strategic_reserve_env.pictures.render import ansi, frame_layout, rgb_array, svg  # noqa: E402
from strategic_reserve_env.pictures.scene import PALETTE, scene_of  # noqa: E402

from conftest import REPO, conformance_records  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"


def _elements(svg_text: str, kind: str) -> list:
    root = ElementTree.fromstring(svg_text)
    return [e for e in root.iter() if kind in e.get("class", "").split()]


def test_scene_of_a_friendly_hit_and_the_placement_after_it():
    game = Game()
    game.roll(SQUARE_INDEX["e5"])  # Red's friendly hit: e4 and d5 captured
    view = scene_of(game)
    by_name = {square.name: square for square in view.squares}
    assert [square.index for square in view.squares] == list(range(36))
    assert sum(s.content == "red" for s in view.squares) == 6 and sum(s.content == "blue" for s in view.squares) == 4
    assert [s.name for s in view.squares if s.rolled] == ["e5"]
    assert [s.name for s in view.squares if s.captured] == ["e4", "d5"]
    assert [s.name for s in view.squares if s.legal] == ["e4", "d5", "f5", "e6"]
    assert (by_name["e5"].row, by_name["e5"].column) == (1, 4)  # rank 5 is the second row from the top
    assert [s.name for s in view.rows()[0]] == ["a6", "b6", "c6", "d6", "e6", "f6"]
    assert [s.name for s in view.rows()[-1]] == ["a1", "b1", "c1", "d1", "e1", "f1"]
    assert by_name["a1"].shade == "dark" and by_name["b1"].shade == "light"
    assert [(r.player, r.count, r.to_move) for r in view.reserves] == [("blue", 9, False), ("red", 7, True)]
    assert view.files == tuple("abcdef") and view.ranks == tuple("654321")
    assert view.caption == "Ply 1, Red to move. Red rolled e5 (dice 5, 5): friendly hit, captured e4, d5."
    assert view.legal_names == "e4, d5, f5, e6"
    assert all(np.isnan(s.heat) for s in view.squares)
    assert (
        not any(s.legal for s in scene_of(game, legal=False).squares) and scene_of(game, legal=False).legal_names == ""
    )

    game.place(SQUARE_INDEX["e4"])  # onto a captured square: a checker again, no ring
    view = scene_of(game)
    by_name = {square.name: square for square in view.squares}
    assert by_name["e4"].content == "red" and not by_name["e4"].captured and by_name["d5"].captured
    assert by_name["e5"].rolled and not any(s.legal for s in view.squares) and view.legal_names == ""
    assert view.caption == "Ply 2, Blue to move. Red rolled e5 (dice 5, 5): friendly hit, captured e4, d5."
    assert [(r.player, r.count, r.to_move) for r in view.reserves] == [("blue", 9, True), ("red", 6, False)]


def test_scene_at_the_end_and_its_heat():
    game = finished_game()
    view = scene_of(game, heat=np.arange(36.0).reshape(6, 6))  # any shape holding 36 numbers
    assert view.status.endswith(f"won at ply {game.ply}.") and not any(r.to_move for r in view.reserves)
    assert [s.heat for s in view.squares] == list(range(36))
    for bad in (np.zeros(35), "hot", [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="heat must be 36 numbers"):
            scene_of(game, heat=bad)


def finished_game(seed: int = 3) -> Game:
    """A game played to its end with the first legal square each turn."""
    game, dice = Game(), GameDice(seed)
    while not game.done:
        game.roll(dice.next())
        game.place(game.legal_squares()[0])
    return game


def positions(seed: int, every: int = 1) -> list[Game]:
    """Every `every`-th position of a game (first legal square each turn): before and after each roll."""
    game, dice, seen = Game(), GameDice(seed), []
    while not game.done:
        seen.append(game.copy())
        game.roll(dice.next())
        seen.append(game.copy())
        game.place(game.legal_squares()[len(game.legal_squares()) // 2])
    seen.append(game)
    return seen[::every]


def _ansi_cells(text: str) -> dict[str, str]:
    """Square name -> its three ANSI characters."""
    lines = text.splitlines()
    cells = {}
    for row, line in enumerate(lines[1:7]):
        for column in range(6):
            cells[f"{'abcdef'[column]}{6 - row}"] = line[2 + 3 * column : 5 + 3 * column]
    return cells


def _svg_marks(text: str) -> dict[str, set[str]]:
    """Square name -> the classes of the SVG elements drawn on it."""
    marks: dict[str, set[str]] = {}
    for element in ElementTree.fromstring(text).iter():
        if element.get("data-square"):
            marks.setdefault(element.get("data-square"), set()).add(element.get("class"))
    return marks


LAYOUT = frame_layout()  # the default frame's
CELL = LAYOUT.cell


def _pixel(image: np.ndarray, square, dx: int, dy: int) -> tuple[int, ...]:
    """The RGB pixel at (dx, dy) from the top-left corner of a scene square."""
    x, y = LAYOUT.square_origin(square.row, square.column)
    return tuple(int(v) for v in image[y + dy, x + dx])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 7])
def test_every_backend_draws_the_scene(seed):
    """ANSI, RGB, SVG and matplotlib each show, square by square, what the scene says; the scene is checked
    against the game above, so this ties each backend to the game."""
    seen = {"captured": 0, "legal": 0, "rolled": 0, "red": 0, "blue": 0}
    for index, game in enumerate(positions(seed, every=7)):
        view = scene_of(game)
        text, image, picture = _ansi_cells(ansi(game)), rgb_array(game), _svg_marks(svg(game))
        figure, ax = plt.subplots()
        gids = {p.get_gid() for p in draw_position(game, ax=ax).patches}
        plt.close(figure)
        for square in view.squares:
            where = f"position {index}, {square.name}"
            mark = {"red": "R", "blue": "B"}.get(square.content, "+" if square.legal else ".")
            assert text[square.name] == (f"[{mark}]" if square.rolled else f" {mark} "), where
            checker = square.content != "empty"
            marks = {"captured": square.captured, "legal": square.legal, "rolled": square.rolled}
            expected = {"square"} | {name for name, shown in marks.items() if shown}
            assert picture[square.name] == expected | ({f"checker {square.content}"} if checker else set()), where
            centre = "legal" if square.legal else square.shade if square.content == "empty" else square.content
            assert _pixel(image, square, CELL // 2, CELL // 2) == PALETTE[centre], where
            ring = square.content if square.content != "empty" else "captured" if square.captured else square.shade
            assert _pixel(image, square, CELL // 2, CELL // 2 + round(CELL * 0.3) - 1) == PALETTE[ring], where
            corner = "rolled" if square.rolled else square.shade
            assert _pixel(image, square, 1, 1) == PALETTE[corner], where
            i = square.index
            expected_gids = {f"{name}-{i}" for name in expected} | (
                {f"checker-{square.content}-{i}"} if checker else set()
            )
            assert {g for g in gids if g and g.split("-")[-1] == str(i)} == expected_gids, where
            for mark in ("captured", "legal", "rolled"):
                seen[mark] += getattr(square, mark)
            seen[square.content] = seen.get(square.content, 0) + 1
    assert all(seen.values()), f"the positions never showed some mark: {seen}"


def test_a_game_shows_as_svg_in_jupyter_without_importing_its_drawing():
    """The drawing attaches `_repr_svg_` to Game; game.py itself imports no drawing module."""
    import strategic_reserve_env.core.game

    game_source = Path(strategic_reserve_env.core.game.__file__).read_text()
    assert not re.search(r"^\s*(from|import) .*\b(render|scene|plotting)\b", game_source, re.MULTILINE)
    shown = subprocess.run(
        [sys.executable, "-c", "from strategic_reserve_env import Game\nprint(Game()._repr_svg_())"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert shown == svg(Game()) + "\n"


def test_svg_shows_checkers_roll_captures_legal_and_reserves():
    game = Game()
    game.roll(SQUARE_INDEX["e5"])  # friendly hit: e4 and d5 captured
    picture = game._repr_svg_()
    checkers = _elements(picture, "checker")
    assert len(checkers) == 10  # six red, four blue left after the capture
    assert sum("red" in e.get("class") for e in checkers) == 6
    assert [e.get("data-square") for e in _elements(picture, "rolled")] == ["e5"]
    assert sorted(e.get("data-square") for e in _elements(picture, "captured")) == ["d5", "e4"]
    assert sorted(e.get("data-square") for e in _elements(picture, "legal")) == ["d5", "e4", "e6", "f5"]
    reserves = {e.get("class"): e.text for e in _elements(picture, "reserve")}
    assert reserves == {"reserve red": "7", "reserve blue": "9"}
    assert len(_elements(picture, "file")) == 6 and len(_elements(picture, "rank")) == 6


def test_matplotlib_position_and_heatmap():
    game = Game()
    game.roll(SQUARE_INDEX["c2"])  # enemy hit on c2
    figure, axes = plt.subplots(1, 2)
    draw_position(game, ax=axes[0])
    gids = [p.get_gid() for p in axes[0].patches if p.get_gid()]
    assert sum(g.startswith("checker-") for g in gids) == 11
    assert "rolled-" + str(SQUARE_INDEX["c2"]) in gids and "captured-" + str(SQUARE_INDEX["c2"]) in gids
    assert sum(g.startswith("legal-") for g in gids) == 25
    values = np.full(36, np.nan)
    values[game.legal_squares()] = np.linspace(0, 1, 25)
    draw_heatmap(game, values, ax=axes[1], label="probability", value=0.5)
    assert len(axes[1].images) == 1 and "value +0.50" in axes[1].get_title()
    assert len(figure.axes) == 3  # the two boards and the colour bar
    plt.close(figure)


@pytest.mark.slow
def test_replay_viewer_steps_and_exports(tmp_path):
    record_path = next(p for p in conformance_records() if p.stem == "clump_game_00")
    record = records.load_record(record_path)
    viewer = ReplayViewer(record)
    assert len(viewer) == len(record.plies) + 1
    trace = [
        json.loads(line) for line in record_path.with_name(record_path.stem + ".trace.jsonl").read_text().splitlines()
    ]
    viewer.forward(3)
    assert viewer.index == 3 and viewer.game.rolled == SQUARE_INDEX[trace[3]["roll"]]
    viewer.back().back(10)
    assert viewer.index == 0
    assert viewer.goto(-1).game.board_string() == trace[-1]["board"]
    with pytest.raises(IndexError, match="outside"):
        viewer.goto(len(viewer))
    assert "<svg" in viewer._repr_svg_()
    gif = viewer.save_gif(tmp_path / "game.gif", fps=4)
    assert gif.read_bytes()[:6] in (b"GIF87a", b"GIF89a")
    short = ReplayViewer(records.parse_record({"plies": [["a1", "a1"], ["b1", "b1"]]}))
    pngs = short.save_pngs(tmp_path / "frames")
    assert len(pngs) == 3 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def _steady(text: str) -> str:
    """`text` without what changes from run to run or machine to machine: object addresses, where the
    checkout is (a model's path), and the games/s column of a Markdown table (a speed)."""
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x...", text)
    text = re.sub(r"[^\s:|]*models/", "models/", text)
    rows = [line.split("|") for line in text.split("\n")]
    header = [cell.strip() for cell in rows[0]]
    if "games/s" in header:
        column = header.index("games/s")
        rows = [row[:column] + row[column + 1 :] for row in rows]
    return "\n".join("|".join(row) for row in rows)


def _shown(cell) -> list[tuple[str, str]]:
    """What a code cell showed, as (kind, text): printed text, Markdown, SVG and plain-text results (see
    `_steady`), and a marker per PNG (its pixels depend on the platform's rasteriser)."""
    shown: list[tuple[str, str]] = []
    for output in cell.outputs:
        if output.output_type == "stream":  # consecutive pieces of one stream as one text
            if shown and shown[-1][0] == output.name:
                shown[-1] = (output.name, shown[-1][1] + output.text)
            else:
                shown.append((output.name, output.text))
            continue
        data = output.get("data", {})
        for kind in ("text/markdown", "image/svg+xml", "text/plain"):
            if kind in data:
                shown.append((kind, _steady(data[kind] if isinstance(data[kind], str) else "".join(data[kind]))))
        if "image/png" in data:
            shown.append(("image/png", "a picture"))
    return shown


@pytest.mark.slow
def test_example_notebook_executes_and_shows_what_it_shipped_with(monkeypatch):
    """Run the notebook from a clean slate: no errors, and the same printed lines, tables, SVG boards and
    number of figures as the outputs saved in the repository (the game, the model's choices and the
    evaluation are seeded, so a change in any of them shows here)."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    # the kernel runs in examples/: put this checkout first on its path (not an installed copy elsewhere)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    path = REPO / "examples" / "inspect_learned_play.ipynb"
    saved = nbformat.read(path, as_version=4)
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3
    assert sum("image/svg+xml" in o.get("data", {}) for o in outputs) >= 2
    code = [(ran, kept) for ran, kept in zip(notebook.cells, saved.cells, strict=True) if ran.cell_type == "code"]
    for number, (ran, kept) in enumerate(code):
        assert _shown(ran) == _shown(kept), f"code cell {number} shows something else than the saved notebook"
