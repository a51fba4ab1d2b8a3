"""Every conformance record (tests/data/conformance) reproduces its trace on every engine path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from strategic_reserve_env.__main__ import main
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import parse_square
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.files import records

from conftest import REPO, batch_of, conformance_records, expected_trace

RECORDS = conformance_records()


def test_conformance_set_is_complete():
    assert len(RECORDS) >= 30
    for record in RECORDS:
        assert expected_trace(record).strip(), record


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.stem)
def test_replay_cli_reproduces_trace(record, capsys):
    assert main(["replay", str(record)]) == 0
    captured = capsys.readouterr()
    assert captured.out == expected_trace(record)
    assert captured.err == ""


def test_replay_cli_in_a_subprocess():
    record = next(r for r in RECORDS if r.stem == "scenario_capture_then_win")
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "replay", str(record)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected_trace(record)


def test_batched_engine_reproduces_every_trace_in_one_batch():
    """All records in one batch: different lengths, reserves and start positions."""
    parsed = [records.load_record(r) for r in RECORDS]
    plies = [[(parse_square(a), parse_square(b)) for a, b in rec.plies] for rec in parsed]
    state = batch_of([rec.config for rec in parsed])
    batch = state.batch_size
    longest = max(len(p) for p in plies)
    traces: list[list[str]] = [[] for _ in range(batch)]
    config = Config()  # only its ply limit is used by place(); records stay far below it
    ended_in_win = np.zeros(batch, dtype=bool)
    for ply in range(longest):
        active = np.array([ply < len(p) for p in plies])
        assert not np.any(state.done & active), f"ply {ply + 1}: a record plays on after its game ended"
        # games whose record is over keep playing (square a1 rolled, lowest legal square placed)
        rolls = np.array([p[ply][0] if ply < len(p) else 0 for p in plies])
        rolled = engine.roll(state, rolls)
        filler = uniform_square(rolled.legal, np.zeros(batch))
        actions = np.where(active, [p[ply][1] if ply < len(p) else 0 for p in plies], filler)
        state = engine.place(rolled, actions, config)
        reserves = state.reserves()
        red, blue = state.red(), state.blue()
        for i in np.flatnonzero(active):
            entry = records.trace_entry(
                ply + 1,
                int(rolled.to_move[i]),
                int(rolled.rolled[i]),
                int(rolled.hit[i]),
                int(rolled.captured[i]),
                int(rolled.legal[i]),
                int(actions[i]),
                int(red[i]),
                int(blue[i]),
                tuple(int(x) for x in reserves[i]),
                int(state.winner[i]),
            )
            traces[i].append(records.trace_line(entry))
            ended_in_win[i] = bool(state.done[i])
    wins = ['"winner": "' in expected_trace(r).splitlines()[-1] for r in RECORDS]
    assert ended_in_win.tolist() == wins
    for record, lines in zip(RECORDS, traces, strict=True):
        assert "".join(line + "\n" for line in lines) == expected_trace(record), record.stem
