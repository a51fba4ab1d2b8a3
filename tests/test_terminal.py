"""A person against an agent in the terminal (`python -m strategic_reserve_env play`): the game, its input
errors, and the record kept after Ctrl-C and when the save path cannot be written."""

from __future__ import annotations

import ast
import json
import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from strategic_reserve_env import Game
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.commands.terminal import (
    INPUT_ENDED,
    INTERRUPTED,
    INTRODUCTION,
    PROMPT,
    SAVE_FAILED,
    SAVE_PROMPT,
    dice_line,
    terminal_game,
    why_not_legal,
)
from strategic_reserve_env.core.board import SQUARE_NAMES, parse_square
from strategic_reserve_env.files import records
from strategic_reserve_env.pictures.render import TEXT_WIDTH, ansi, legal_line

from conftest import REPO, as_from_a_shell


def test_terminal_game_in_process(tmp_path):
    answers = iter(["zz", "?"] + [f"{f}{r}" for _ in range(300) for f in "abcdef" for r in "123456"])
    said = []
    code = terminal_game(
        load_agent("random"),
        seat="blue",
        seed=5,
        save=str(tmp_path / "game.json"),
        read=lambda _: next(answers),
        say=said.append,
    )
    assert code == 0
    text = "\n".join(said)
    assert "You are Blue, random is Red" in text
    assert "'zz' is not a square" in text and "Legal squares:" in text and "is not a legal placement now" in text
    assert "You won!" in text or "random won." in text
    trace = list(records.replay(records.load_record(tmp_path / "game.json")))
    assert trace[-1]["winner"] is not None


def test_the_play_command_and_replay(tmp_path):
    moves = "zz\n" + "".join(f"{f}{r}\n" for _ in range(300) for f in "abcdef" for r in "123456")
    record = tmp_path / "played.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "strategic_reserve_env",
            "play",
            "--opponent",
            "greedy",
            "--seed",
            "3",
            "--save",
            str(record),
        ],
        input=moves,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "greedy places on" in result.stdout and "Saved" in result.stdout
    replayed = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "replay", str(record)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert replayed.returncode == 0 and json.loads(replayed.stdout.splitlines()[-1])["winner"] in ("red", "blue")


def test_terminal_game_quits_and_handles_end_of_input(tmp_path):
    said = []
    answers = iter(["q", "y", ""])
    assert terminal_game(load_agent("random"), seat="red", seed=1, read=lambda _: next(answers), say=said.append) == 0
    assert not any("won" in line for line in said)

    def closed(_):
        raise EOFError

    said = []
    assert terminal_game(load_agent("random"), seat="red", seed=1, read=closed, say=said.append) == INPUT_ENDED == 1
    assert "Input ended" in "\n".join(said)


def test_closed_input_is_not_asked_the_save_question_and_exits_1(tmp_path):
    """stdin closed (`play < /dev/null`): the game stops, the save question is not asked (it was, then exit 0),
    the record is printed as one line of JSON, or saved where --save says; exit 1."""
    asked = []

    def closed(prompt):
        asked.append(prompt)
        raise EOFError

    said = []
    assert terminal_game(load_agent("random"), seat="red", seed=1, read=closed, say=said.append) == 1
    assert SAVE_PROMPT not in asked and said[-2].startswith("No input to ask where to save it")
    assert json.loads(said[-1])["seed"] == 1
    path = tmp_path / "game.json"
    assert terminal_game(load_agent("random"), seed=1, save=str(path), read=closed, say=said.append) == 1
    assert SAVE_PROMPT not in asked and json.loads(path.read_text())["seed"] == 1


def scripted(answers: list[str], interrupt_at: int | None = None, interrupt_prompt: str | None = None):
    """A `read` that gives `answers` in turn and raises KeyboardInterrupt at the `interrupt_at`-th
    placement prompt, or at the first prompt starting with `interrupt_prompt`."""
    answers, placements = iter(answers), 0

    def read(prompt: str) -> str:
        nonlocal placements
        if prompt == PROMPT:
            placements += 1
            if placements == interrupt_at:
                raise KeyboardInterrupt
        if interrupt_prompt is not None and prompt.startswith(interrupt_prompt):
            raise KeyboardInterrupt
        return next(answers)

    return read


def legal_moves() -> list[str]:
    """Every square, over and over: the first legal one is taken each turn."""
    return [f"{f}{r}" for _ in range(300) for f in "abcdef" for r in "123456"]


def printed_record(said: list[str]) -> records.Record:
    """The record printed as the line after the 'here is the game record' line."""
    index = next(i for i, line in enumerate(said) if "here is the game record" in line)
    return records.parse_record(json.loads(said[index + 1]))


def test_ctrl_c_during_the_game_saves_the_record_to_the_save_path(tmp_path):
    said, path = [], tmp_path / "game.json"
    code = terminal_game(
        load_agent("random"),
        seat="red",
        seed=4,
        save=str(path),
        read=scripted(legal_moves(), interrupt_at=4),
        say=said.append,
    )
    assert code == INTERRUPTED
    assert "Interrupted; the game stops here." in "\n".join(said)
    assert not any(line.endswith("won.") or line == "You won!" for line in said)
    record = records.load_record(path)
    assert len(record.plies) == 6  # three placements each before the fourth prompt (Red moves first)
    trace = list(records.replay(record))
    assert trace[-1]["winner"] is None


def test_ctrl_c_then_a_file_name_at_the_question(tmp_path):
    said, path = [], tmp_path / "asked.json"
    moves = legal_moves()
    code = terminal_game(
        load_agent("random"),
        seat="blue",
        seed=9,
        read=scripted(moves[:2] + [str(path)], interrupt_at=3),
        say=said.append,
    )
    assert code == INTERRUPTED
    assert len(records.load_record(path).plies) == 5  # Red moved 3 times, Blue (the person) twice


def test_ctrl_c_at_the_save_question_prints_the_record():
    said = []
    code = terminal_game(
        load_agent("random"),
        seat="red",
        seed=2,
        read=scripted(legal_moves(), interrupt_prompt="Save the game"),
        say=said.append,
    )
    assert code == INTERRUPTED
    assert any(line.endswith("won.") or line == "You won!" for line in said)  # the game was finished
    record = printed_record(said)
    assert list(records.replay(record))[-1]["winner"] in ("red", "blue")


@pytest.mark.parametrize("where", ["missing-directory/game.json", "a-file/game.json"])
def test_an_unwritable_save_path_prints_the_record(tmp_path, where):
    (tmp_path / "a-file").write_text("not a directory")
    said = []
    code = terminal_game(
        load_agent("random"),
        seat="red",
        seed=3,
        save=str(tmp_path / where),
        read=scripted(legal_moves()),
        say=said.append,
    )
    assert code == SAVE_FAILED
    assert any(line.startswith(f"Could not write {tmp_path / where}") for line in said)
    record = printed_record(said)
    assert list(records.replay(record))[-1]["winner"] in ("red", "blue")


def test_a_real_sigint_keeps_the_record(tmp_path):
    """The command under a real SIGINT while it waits for the person's third placement."""
    full = tmp_path / "full.json"  # the same game played in-process: the person's placements to type
    terminal_game(
        load_agent("random"), seat="red", seed=5, save=str(full), read=scripted(legal_moves()), say=lambda _: None
    )
    mine = [placed for _, placed in records.load_record(full).plies[0::2]]
    path = tmp_path / "sigint.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "strategic_reserve_env",
            "play",
            "--opponent",
            "random",
            "--seed",
            "5",
            "--save",
            str(path),
        ],
        cwd=REPO,
        preexec_fn=as_from_a_shell,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    prompt, shown, deadline = PROMPT.encode(), b"", time.monotonic() + 120
    while shown.count(prompt) < 3 and time.monotonic() < deadline:
        if select.select([process.stdout], [], [], 1)[0]:
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"play ended early: {shown.decode()}"
            shown += chunk
            if shown.endswith(prompt) and shown.count(prompt) < 3:
                process.stdin.write(f"{mine[shown.count(prompt) - 1]}\n".encode())
                process.stdin.flush()
    assert shown.count(prompt) == 3
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == INTERRUPTED, err
    assert b"Traceback" not in err
    text = (shown + out).decode()
    assert "Interrupted; the game stops here." in text and f"Saved {path}" in text
    assert records.load_record(path).plies == records.load_record(full).plies[:4]  # two placements each


class FirstLegal:
    """A policy of the caller's own: the lowest legal square."""

    name = "first-legal"
    uses_observation = False

    def act(self, observations, masks, rng):
        return np.argmax(np.asarray(masks, dtype=bool), axis=1)


def test_the_caller_passes_any_policy_and_a_bad_seat_is_refused(tmp_path):
    said, path = [], tmp_path / "game.json"
    code = terminal_game(
        FirstLegal(), seat="blue", seed=8, save=str(path), read=scripted(legal_moves()), say=said.append
    )
    assert code == 0 and "You are Blue, first-legal is Red" in said[0]
    assert said[1] == INTRODUCTION and "first-legal places on" in said[2]  # Red moves first
    assert said[-2] in ("You won!", "first-legal won.")
    first_red = records.load_record(path).plies[0]  # (rolled, placed): first-legal placed on the lowest square
    game = Game()
    game.roll(parse_square(first_red[0]))
    assert parse_square(first_red[1]) == game.legal_squares()[0]
    said = []
    with pytest.raises(ValueError, match="seat must be 'red', 'blue' or 'random', got 'green'"):
        terminal_game(FirstLegal(), seat="green", read=scripted([]), say=said.append)
    assert said == []


def test_the_env_package_imports_neither_agents_nor_evaluation():
    """Only the command line (`__main__`, `commands/`) may load agents and evaluation; every other module of
    the package sits below them (two documented exceptions: the RLlib adapter loads the network it trains, and
    the learner's opponent pool loads agent spec strings through `agents.as_agent`, when it is set)."""
    above = ("agents", "evaluation", "commands")
    allowed = {  # by module, so that a move into subpackages renames them here too
        "strategic_reserve_env.envs.rllib_env": {"strategic_reserve_env.agents.rllib_model"},
        "strategic_reserve_env.envs.learner": {"strategic_reserve_env.agents.as_agent"},
    }
    package = REPO / "strategic_reserve_env"
    for module in sorted(package.rglob("*.py")):
        if module.name == "__main__.py" or {"commands", "training"} & set(module.relative_to(package).parts):
            continue
        dotted = ".".join(("strategic_reserve_env", *module.relative_to(package).with_suffix("").parts))
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):  # each imported name in full: package.module.name
                base = "strategic_reserve_env." * (node.level == 1) + (f"{node.module}." if node.module else "")
                names = [base + a.name for a in node.names]
            wrong = [
                name
                for name in names
                if name.removeprefix("strategic_reserve_env.").split(".")[0] in above
                and not any(name.startswith(ok) for ok in allowed.get(dotted, ()))
            ]
            assert not wrong, f"{dotted} imports {wrong}"


def test_the_game_opens_with_the_goal_the_hits_the_legend_and_the_rules(tmp_path):
    said = []
    terminal_game(
        load_agent("greedy"), seed=1, save=str(tmp_path / "g.json"), read=scripted(["q", "y"]), say=said.append
    )
    opening = said[1]
    assert opening == INTRODUCTION
    assert "Goal: empty your reserve." in opening
    hits = [line.strip() for line in opening.splitlines() if " hit: " in line]
    assert [line.split(":")[0] for line in hits] == ["empty hit", "enemy hit", "friendly hit"]
    flat = " ".join(opening.split())
    assert "Captured checkers go back to their owner's reserve: that is how a reserve grows again." in flat
    for mark in ("R a red checker", "B a blue one", ". an empty square", "+ a square you may place", "[ ] the rolled"):
        assert mark in flat, mark
    assert "strategic-reserve rules" in flat and "docs/RULES.md" in flat and (REPO / "docs" / "RULES.md").is_file()
    assert all(len(line) <= TEXT_WIDTH for line in opening.splitlines())


def test_help_explains_and_question_mark_lists(tmp_path):
    said = []
    terminal_game(
        load_agent("greedy"),
        seed=1,
        save=str(tmp_path / "g.json"),
        read=scripted(["help", "?", "q", "y"]),
        say=said.append,
    )
    board_at = next(i for i, text in enumerate(said) if "Dice: purple" in text)
    assert said[board_at + 1] == INTRODUCTION and said[board_at + 2].startswith("Legal squares now: ")
    assert said[board_at + 3].startswith("Legal squares: ")


@pytest.mark.parametrize(
    ("roller", "square", "expected"),
    [
        ("red", "b5", "Dice: purple 2 is file b, green 5 is rank 5 (Red counts from its own side: files a to f"),
        ("blue", "b5", "Dice: purple 5 is file b, green 2 is rank 5 (Blue counts from its own side: files f to a"),
        ("blue", "f6", "Dice: purple 1 is file f, green 1 is rank 6"),
    ],
)
def test_the_dice_line_says_how_the_dice_name_the_square(roller, square, expected):
    game = Game()
    if roller == "blue":
        game.roll(parse_square("a1"))
        game.place(game.legal_squares()[0])
    game.roll(parse_square(square))
    assert dice_line(game).startswith(expected)


def test_the_legal_line_wraps_between_square_names():
    names = ", ".join(SQUARE_NAMES)  # all 36: far wider than a terminal
    lines = legal_line(names).splitlines()
    assert len(lines) > 1 and all(len(line) <= TEXT_WIDTH for line in lines)
    assert lines[0].startswith("Legal: ") and all(line.startswith(" " * len("Legal: ")) for line in lines[1:])
    assert [name.strip() for name in " ".join(lines).removeprefix("Legal: ").split(",")] == list(SQUARE_NAMES)
    board = ansi(Game())  # before a roll: no legal line; after an empty hit on a3, every empty square is legal
    game = Game()
    game.roll(parse_square("a3"))
    assert "Legal:" not in board and all(len(line) <= TEXT_WIDTH for line in ansi(game).splitlines())


# -- play: the save target, the seed, quitting, why a square is refused, the board after one's own move ----------


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_save_to_a_fifo_or_a_folder_is_refused_before_the_game(tmp_path, kind):
    """A record never replaces what is not a regular file (as root, --save /dev/null would have replaced the
    device): refused in one line before anything is played, the target untouched."""
    target = tmp_path / "target"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    said = []
    with pytest.raises(ValueError, match=f"cannot save the game record to {target}: it is not a regular file"):
        terminal_game(load_agent("random"), seed=1, save=str(target), read=scripted([]), say=said.append)
    assert said == [] and (target.is_fifo() if kind == "fifo" else target.is_dir())
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "play", "--seed", "1", "--save", str(target)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert "it is not a regular file" in result.stderr


def test_a_device_is_never_replaced_by_a_write():
    from strategic_reserve_env.files import outputs

    with pytest.raises(OSError, match="not a regular file"):  # checked before anything is written
        outputs.check_replaceable("/dev/null")


def played_then_asked(answers: list[str]) -> tuple[int, list[str]]:
    """(exit status, what was said) of a game of Red against random (seed 3) played to its end by the first
    legal squares, `answers` given in turn to the questions that are not the placement prompt."""
    moves, answers_left, said = iter(legal_moves()), iter(answers), []
    code = terminal_game(
        load_agent("random"),
        seat="red",
        seed=3,
        read=lambda prompt: next(moves) if prompt == PROMPT else next(answers_left),
        say=said.append,
    )
    return code, said


def test_a_fifo_given_at_the_save_question_is_not_replaced(tmp_path):
    target = tmp_path / "target"
    os.mkfifo(target)
    code, said = played_then_asked([str(target)])
    assert code == SAVE_FAILED and target.is_fifo()
    assert any(line.startswith(f"Could not write {target} (it is not a regular file") for line in said)
    assert list(records.replay(printed_record(said)))[-1]["winner"] in ("red", "blue")


def test_a_seed_a_record_cannot_hold_is_refused_before_the_game_and_the_largest_replays(tmp_path):
    said = []
    for seed in (2**64, -1):
        with pytest.raises(ValueError, match=r"the seed must be an integer in 0 \.\. 2\*\*64 - 1"):
            terminal_game(load_agent("random"), seed=seed, read=scripted([]), say=said.append)
    assert said == []
    path = tmp_path / "game.json"
    terminal_game(load_agent("random"), seed=2**64 - 1, save=str(path), read=scripted(legal_moves()), say=said.append)
    record = records.load_record(path)
    assert record.seed == 2**64 - 1 and list(records.replay(record))[-1]["winner"] in ("red", "blue")


@pytest.mark.parametrize("word", ["q", "quit", "exit"])
def test_quitting_asks_first_and_the_answer_is_not_a_file_name(tmp_path, monkeypatch, word):
    """The answer after `exit` goes to a confirmation, not to the save question: a square typed then is no
    file name, and the game goes on."""
    monkeypatch.chdir(tmp_path)
    said = []
    code = terminal_game(
        load_agent("random"), seat="red", seed=1, read=scripted([word, "c4", word, "y", ""]), say=said.append
    )
    assert code == 0 and list(tmp_path.iterdir()) == []  # no file c4, no record (the save question: empty)
    assert "The game goes on." in said and not any("won" in line for line in said)


def test_a_refused_square_says_why():
    game = Game()
    game.roll(parse_square("b2"))  # a friendly hit on Red's b2: Blue's c2 and b3 go; Red places next to b2
    assert why_not_legal(game, parse_square("c5")) == (
        "c5 is not a legal placement now: it holds one of your checkers; you rolled b2, one of your own checkers "
        "(a friendly hit), so you place on an empty square next to its group."
    )
    assert why_not_legal(game, parse_square("a1")).endswith("so you place on an empty square next to its group.")
    game.place(parse_square("a2"))
    game.roll(parse_square("a6"))  # an empty hit for Blue
    assert why_not_legal(game, parse_square("b2")) == (
        "b2 is not a legal placement now: it holds an opponent's checker; you place on an empty square."
    )
    said = []
    terminal_game(load_agent("random"), seat="red", seed=1, read=scripted(["b2", "q", "y", ""]), say=said.append)
    assert any(line.startswith("b2 is not a legal placement now: it holds one of your checkers") for line in said)


def test_the_person_sees_the_board_after_their_own_placement(tmp_path):
    said = []
    terminal_game(
        load_agent("random"),
        seat="red",
        seed=1,
        save=str(tmp_path / "game.json"),
        read=scripted(legal_moves()),
        say=said.append,
    )
    mine = [line for line in said if line.startswith("You place on ")]
    assert len(mine) > 3
    for text in mine:  # "You place on c4:", then the board with a red checker on c4
        square = text.split()[3].rstrip(":")
        file, rank = "abcdef".index(square[0]), int(square[1])
        row = next(line for line in text.splitlines() if line.startswith(f"{rank} "))
        assert row[2 + 3 * file + 1] == "R", text


def test_a_square_or_a_game_word_at_the_save_question_is_asked_again(tmp_path, monkeypatch):
    """Typed out of habit after the game ends, c4 or q is no file name: the question is asked again."""
    monkeypatch.chdir(tmp_path)
    code, said = played_then_asked(["c4", "q", "game.json"])
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["game.json"]
    assert sum("is an answer to the game's question, not a file name" in line for line in said) == 2
    assert list(records.replay(records.load_record(tmp_path / "game.json")))[-1]["winner"] in ("red", "blue")
