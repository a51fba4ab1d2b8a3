"""Notebook-facing pictures (SVG, matplotlib), the replay viewer and the example notebook."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from strategic_reserve_env import Game, records  # noqa: E402
from strategic_reserve_env.board import SQUARE_INDEX  # noqa: E402
from strategic_reserve_env.plotting import ReplayViewer, draw_heatmap, draw_position  # noqa: E402

from conftest import REPO, conformance_records  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"


def _elements(svg_text: str, kind: str) -> list:
    root = ElementTree.fromstring(svg_text)
    return [e for e in root.iter() if kind in e.get("class", "").split()]


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


def test_example_notebook_executes(monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    # the kernel runs in examples/: put this checkout first on its path (not an installed copy elsewhere)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    path = REPO / "examples" / "inspect_learned_play.ipynb"
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3
    assert sum("image/svg+xml" in o.get("data", {}) for o in outputs) >= 2
    assert Path(REPO / "models" / "ppo_baseline.safetensors").exists()
