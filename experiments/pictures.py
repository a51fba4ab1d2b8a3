"""The pictures of the docs, made with the project's own drawing: `docs/pictures/` (shown in docs/pictures.md)
and the README's `docs/board.png`.

`python -m experiments.pictures [--out docs]` writes, under OUT:

- `board.png`: the position after Red's first roll e5 (dice 5, 5), a friendly hit that captured e4 and d5;
- `pictures/frames/frame_006.png` and `frame_021.png`: two frames of `ReplayViewer.save_pngs` of one game,
  greedy (Red) against random (Blue) on dice seed 5, analysed by `expectimax:depth=1` (ply 7 and the end);
- `pictures/game.gif`: that game, `pictures/luck.png`: its luck per roll (`draw_luck`);
- `pictures/heatmap.png`: the shipped PPO policy (`ppo`) at ply 7 of that game: the probability it gives each
  legal square (`PPOAgent.probabilities`) and its critic's value (`PPOAgent.values`), under `draw_heatmap`;
- `pictures/rgb_array.png` and `rgb_array_end.png`: `render.rgb_array` of ply 7 and of the end;
- `skill/first_player.png`, redrawn from `skill/skill.json` (the skill report's own file, where OUT has one)
  by the report's `plot_first_player`.

Needs the `train` extra (torch, for the PPO policy) and matplotlib.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from strategic_reserve_env import Game
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.ppo import PPOAgent
from strategic_reserve_env.core.board import parse_square
from strategic_reserve_env.core.observation import planes
from strategic_reserve_env.envs.arena import play_logged
from strategic_reserve_env.evaluation.analysis import analyse
from strategic_reserve_env.evaluation.skill_report import FIGURES, plot_first_player
from strategic_reserve_env.files import records

SEED = 5  # the dice of the game the pictures show
PLAYERS = ("greedy", "random")  # Red, Blue
ANALYST = "expectimax:depth=1"  # the agent whose analysis the replay captions quote
FRAME = 6  # the replay frame shown in detail: ply 7, Red to move after its roll
KEPT_FRAMES = (FRAME, 21)  # the frames docs/pictures.md shows (21: the game's end)
POLICY = "ppo"  # the policy of the heatmap: the shipped MaskablePPO model
BOARD_ROLL = "e5"  # the README's board: Red's first roll (a friendly hit)


def policy_heat(agent: PPOAgent, game: Game) -> tuple[np.ndarray, float]:
    """The probability `agent` gives each square in `game` (to move, after its roll) as 36 numbers in square
    index order, NaN on the squares it may not place on (the heatmap leaves them plain), and its critic's value
    of the position from the mover's side."""
    observation = planes(game, game.to_move)[None]
    legal = np.zeros((1, 36), dtype=bool)
    legal[0, game.legal_squares()] = True
    probabilities = agent.probabilities(observation, legal)[0]
    value = float(agent.values(observation)[0])
    return np.where(legal[0], probabilities, np.nan), value


def board_game() -> Game:
    """The README's position: Red has rolled e5 on the start board and is to place."""
    game = Game()
    game.roll(parse_square(BOARD_ROLL))
    return game


def write(out: Path) -> list[Path]:
    """Every picture of the module's docstring, under `out`; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from strategic_reserve_env.pictures.plotting import ReplayViewer, draw_heatmap, draw_luck, draw_position
    from strategic_reserve_env.pictures.render import rgb_array

    pictures, written = out / "pictures", []

    def save(figure, path: Path, dpi: int = 100) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=dpi)
        plt.close(figure)
        written.append(path)

    save(draw_position(board_game()).figure, out / "board.png")
    _, final = play_logged([load_agent(name) for name in PLAYERS], red_agent=0, dice_seed=SEED)
    record = records.record_of(final, players=PLAYERS, seed=SEED)
    analysis = analyse(record, ANALYST)
    viewer = ReplayViewer(record, analysis)
    with tempfile.TemporaryDirectory() as scratch:  # every frame, of which the docs keep two
        frames = viewer.save_pngs(scratch)
        for index in KEPT_FRAMES:
            path = pictures / "frames" / frames[index].name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(frames[index].read_bytes())
            written.append(path)
    written.append(viewer.save_gif(pictures / "game.gif"))
    save(draw_luck(analysis).figure, pictures / "luck.png")
    agent = load_agent(POLICY)
    if not isinstance(agent, PPOAgent):
        raise TypeError(f"{POLICY} is not a PPO policy: {agent!r}")
    heat, value = policy_heat(agent, viewer.frames[FRAME])
    label = f"{POLICY}: probability of placing here"
    save(draw_heatmap(viewer.frames[FRAME], heat, label=label, value=value).figure, pictures / "heatmap.png")
    for game, name in ((viewer.frames[FRAME], "rgb_array.png"), (viewer.frames[-1], "rgb_array_end.png")):
        Image.fromarray(rgb_array(game)).save(pictures / name)
        written.append(pictures / name)
    report = out / FIGURES / "skill.json"
    if report.is_file():
        plot_first_player(out / FIGURES / "first_player.png", json.loads(report.read_text(encoding="utf-8")))
        written.append(out / FIGURES / "first_player.png")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs"), help="the folder to write under (default docs)")
    for path in write(parser.parse_args(argv).out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
