"""Hostile input to `python -m strategic_reserve_env replay` (and `analyse`) and `records.load_record`: bounded reads,
one error line naming the file and the fault (input echoed only in part), `-` for the standard input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strategic_reserve_env.__main__ import main
from strategic_reserve_env.agents import RandomAgent
from strategic_reserve_env.core.board import ECHO_LIMIT
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.envs.arena import play_logged
from strategic_reserve_env.files import records

from conftest import REPO

GAME = {"plies": [["a1", "a1"], ["b1", "b1"], ["e5", "e4"]]}
MAX_LINE = 200  # characters of an error line besides the file's name, whatever the input


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _replay(argv, capsys, stdin: bytes | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = main(["replay", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_error_line(err: str, name: object = "") -> str:
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert len(err) - len(str(name)) < MAX_LINE
    return err


@pytest.mark.parametrize("kind", ["dev-zero", "dev-zero-link", "fifo"])
@pytest.mark.parametrize("command", ["replay", "analyse"])
def test_a_record_that_is_not_a_regular_file_is_refused_unread(tmp_path, command, kind):
    """A FIFO (which would hang with no writer) or a device such as /dev/zero (endless), named or through a
    link: one line, before anything is read."""
    path = Path("/dev/zero") if kind == "dev-zero" else tmp_path / "game.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", command, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
        check=False,
    )
    assert time.perf_counter() - start < 20
    assert result.returncode == 1 and result.stdout == ""
    assert f"cannot read {path}: not a regular file" in _one_error_line(result.stderr, path)


def test_limit_is_documented():
    # that a real 1,600-ply record fits well below the limit is checked in test_records
    assert f"{records.MAX_RECORD_BYTES:,} bytes" in subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "replay", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    ).stdout.replace("\n", " ").replace("  ", " ")


@pytest.mark.parametrize("header", [{"k" * 1_000_000: 1}, {"start": {"k" * 1_000_000: 1}}], ids=["record", "start"])
def test_a_huge_unknown_field_is_named_briefly(tmp_path, capsys, header):
    path = _write(tmp_path, "key.json", json.dumps({**header, "plies": []}).encode())
    status, out, err = _replay([str(path)], capsys)
    line = _one_error_line(err, path)
    assert status == 1 and "unknown" in line and "field(s): kkk" in line and len(line) < 200 + len(str(path))


def test_a_record_just_over_the_limit(tmp_path, capsys):
    square = "x" * (records.MAX_RECORD_BYTES + 1_000_000)  # a 5 MB bad square: not read, not echoed
    path = _write(tmp_path, "huge.json", json.dumps({"plies": [["a1", square]]}).encode())
    status, out, err = _replay([str(path)], capsys)
    assert status == 1 and out == ""
    assert f"{path} is larger than" in _one_error_line(err, path)


def test_a_long_bad_square_is_echoed_in_part(tmp_path, capsys):
    square = "x" * 3_000_000  # under the limit: the square is checked and named, cut short
    path = _write(tmp_path, "square.json", json.dumps({"plies": [["a1", "a1"], ["b1", square]]}).encode())
    status, out, err = _replay([str(path)], capsys)
    assert status == 1 and len(out.splitlines()) == 1  # the good ply first
    line = _one_error_line(err, path)
    assert line.startswith(f"error: {path}: ply 2: 'xxx") and line.endswith("xxx' is not a square (a1 .. f6)\n")
    echoed = line.split("ply 2: ")[1].split(" is not")[0]
    assert len(echoed) <= ECHO_LIMIT and "..." in echoed


def test_deep_nesting(tmp_path, capsys):
    path = _write(tmp_path, "deep.json", b"[" * 100_000 + b"]" * 100_000)
    status, out, err = _replay([str(path)], capsys)
    assert status == 1
    assert f"{path} is not a record: its JSON arrays or objects are nested too deeply" in _one_error_line(err, path)


def test_nesting_that_json_accepts_is_echoed_in_part(tmp_path, capsys):
    ply = "[" * 500 + "]" * 500
    path = _write(tmp_path, "nested.json", ('{"plies": [' + ply + "]}").encode())
    status, out, err = _replay([str(path)], capsys)
    assert status == 1
    assert f"{path}: ply 1: expected a [rolled, placed] pair of squares, got [[[[...]]]]" in _one_error_line(err, path)


def test_not_utf8(tmp_path, capsys):
    path = _write(tmp_path, "latin1.json", '{"plies": [["a1", "ä1"]]}'.encode("latin-1"))
    status, out, err = _replay([str(path)], capsys)
    assert status == 1
    assert f"{path} is not UTF-8 text: byte 0xe4 at offset 19" in _one_error_line(err, path)


def test_byte_order_mark_is_accepted(tmp_path, capsys):
    path = _write(tmp_path, "bom.json", b"\xef\xbb\xbf" + json.dumps(GAME).encode())
    plain = _write(tmp_path, "plain.json", json.dumps(GAME).encode())
    status, out, err = _replay([str(path)], capsys)
    assert status == 0 and err == ""
    assert out == _replay([str(plain)], capsys)[1]


@pytest.mark.parametrize("digits", [5000, 4000])
def test_huge_integers(tmp_path, capsys, digits):
    # 5000 digits: past Python's conversion limit, JSON fails; 4000: parsed, then the header check fails
    path = _write(tmp_path, "int.json", ('{"variant": {"reserve": ' + "9" * digits + '}, "plies": []}').encode())
    status, out, err = _replay([str(path)], capsys)
    assert status == 1
    line = _one_error_line(err, path)
    assert line.startswith(f"error: {path}")
    if digits == 5000:
        assert "is not valid JSON: Exceeds the limit (4300 digits)" in line
    else:
        assert "record header: variant.reserve must be in 1..12, got 9999" in line
        assert len(line) < 200  # the 4000-digit value is not echoed whole


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[1, 2]", "a record must be a JSON object, got list"),
        ("", "is not valid JSON: Expecting value (line 1, column 1)"),
    ],
)
def test_malformed_json_names_the_file(tmp_path, capsys, text, message):
    path = _write(tmp_path, "bad.json", text.encode())
    status, out, err = _replay([str(path)], capsys)
    assert status == 1 and message in _one_error_line(err, path) and str(path) in err


@pytest.mark.parametrize("make", [lambda tmp: tmp / "missing.json", lambda tmp: tmp])
def test_unreadable_paths(tmp_path, capsys, make):
    path = make(tmp_path)
    status, out, err = _replay([str(path)], capsys)
    assert status == 1
    assert f"error: cannot read {path}: " in _one_error_line(err, path)


def test_dash_reads_the_standard_input(tmp_path, capsys, monkeypatch):
    path = _write(tmp_path, "game.json", json.dumps(GAME).encode())
    from_file = _replay([str(path)], capsys)
    from_stdin = _replay(["-"], capsys, stdin=json.dumps(GAME).encode(), monkeypatch=monkeypatch)
    assert from_stdin == from_file and from_file[0] == 0 and len(from_file[1].splitlines()) == 3


def test_dash_names_the_standard_input_in_errors(capsys, monkeypatch):
    bad = {"plies": [["a1", "a1"], ["b1", "zz"]]}
    status, out, err = _replay(["-"], capsys, stdin=json.dumps(bad).encode(), monkeypatch=monkeypatch)
    assert status == 1 and len(out.splitlines()) == 1
    assert _one_error_line(err) == "error: <stdin>: ply 2: 'zz' is not a square (a1 .. f6)\n"
    status, out, err = _replay(["-"], capsys, stdin=b"\xff", monkeypatch=monkeypatch)
    assert _one_error_line(err) == "error: <stdin> is not UTF-8 text: byte 0xff at offset 0\n"


def test_dash_in_a_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "replay", "-"],
        input=json.dumps(GAME),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and result.stderr == ""
    assert [json.loads(line)["place"] for line in result.stdout.splitlines()] == ["a1", "b1", "e4"]


def test_load_record_from_a_file_object_and_by_path(tmp_path):
    path = _write(tmp_path, "game.json", json.dumps(GAME).encode())
    by_path = records.load_record(path)
    by_file = records.load_record(io.BytesIO(json.dumps(GAME).encode()), name="memory")
    assert by_path == by_file
    with pytest.raises(records.RecordError, match=r"^memory is larger than"):
        records.load_record(io.BytesIO(b" " * (records.MAX_RECORD_BYTES + 1)), name="memory")
    with pytest.raises(records.RecordError, match=r"^ply 1: expected a \[rolled, placed\] pair of squares, got 1"):
        list(records.replay(records.load_record(io.BytesIO(b'{"plies": [1]}'), name="memory")))


def test_header_errors_echo_long_values_in_part(tmp_path, capsys):
    # a header field holding a megabyte of text: the message stays one short line
    for header in ({"variant": {"x" * 1_000_000: 1}}, {"start": {"to_move": "x" * 1_000_000}}):
        path = _write(tmp_path, "header.json", json.dumps({**header, "plies": []}).encode())
        status, out, err = _replay([str(path)], capsys)
        assert status == 1 and _one_error_line(err, path).startswith(f"error: {path}: ")


# -- replay and analyse at the edges: a huge duplicate key, a closed standard input, a full standard output -----------


def command(*args: str, shell_suffix: str = "") -> subprocess.CompletedProcess:
    line = " ".join([f"'{sys.executable}'", "-m", "strategic_reserve_env", *(f"'{a}'" for a in args)]) + shell_suffix
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=REPO, timeout=120)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr, stderr[:500]
    return lines[0]


@pytest.mark.parametrize("tool", ["replay", "analyse"])
def test_a_two_megabyte_duplicate_key_is_echoed_shortened(tmp_path, tool):
    key = "k" * 2_000_000
    path = tmp_path / "dup.json"
    path.write_text('{"plies": [], "' + key + '": 1, "' + key + '": 2}')
    result = command(tool, str(path))
    assert result.returncode == 1
    line = one_line(result.stderr)
    assert "appears twice" in line and "k" * (ECHO_LIMIT + 1) not in line and len(line) < 300


@pytest.mark.parametrize("tool", ["replay", "analyse"])
def test_a_closed_standard_input_is_one_line(tool):
    result = command(tool, "-", shell_suffix=" <&-")
    assert result.returncode == 1
    assert "standard input" in one_line(result.stderr)


@pytest.mark.parametrize("tool", ["replay", "analyse"])
def test_a_full_standard_output_is_one_line(tmp_path, tool):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GAME))
    result = command(tool, str(path), shell_suffix=" > /dev/full")
    assert result.returncode == 1
    assert "standard output" in one_line(result.stderr)


def test_a_full_standard_output_on_a_long_replay_is_one_line(tmp_path):
    """Past the first buffer's worth of lines, the failure comes in the middle of the printing."""
    path = tmp_path / "long.json"
    _, game = play_logged([RandomAgent(), RandomAgent()], 0, dice_seed=3, config=Config(ply_limit=1000))
    records.write_record(records.record_of(game), path)
    assert len(records.load_record(path).plies) > 20  # more lines than fit a small write
    result = command("replay", str(path), shell_suffix=" > /dev/full")
    assert result.returncode == 1
    one_line(result.stderr)
