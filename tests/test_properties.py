"""Invariants checked with hypothesis over random dice, choices, reserves and start positions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from strategic_reserve_env import Game
from strategic_reserve_env.core import engine, rules, sampling
from strategic_reserve_env.core.board import (
    BIT_ARRAY,
    BOARD_SIZE,
    FULL,
    array_to_bitboards,
    bit_to_square,
    bits_of,
    squares_of,
)
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.sampling import popcount, uniform_square

from conftest import random_start

BATCH = 6
MAX_PLIES = 90

plays = st.integers(1, MAX_PLIES).flatmap(
    lambda plies: st.tuples(
        arrays(np.int64, (plies, BATCH), elements=st.integers(0, 35)),  # rolled squares
        arrays(np.float64, (plies, BATCH), elements=st.floats(0, 1, exclude_max=True)),  # choices
    )
)
configs = st.builds(
    lambda reserve, start_seed, limit: Config(
        reserve=reserve,
        ply_limit=limit,
        start=None if start_seed is None else random_start(np.random.default_rng(start_seed)),
    ),
    st.integers(1, 12),
    st.none() | st.integers(0, 2**32 - 1),
    st.sampled_from([1000, 25]),
)


def totals(state: engine.State) -> np.ndarray:
    """(B, 2) checkers each player owns: on the board plus in reserve."""
    on_board = np.stack([popcount(state.red()), popcount(state.blue())], axis=1)
    return on_board + state.reserves()


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(plays, configs)
def test_batch_invariants(play, config):
    rolls, uniforms = play
    state = engine.init(config, BATCH)
    owned = totals(state)
    frozen: dict[int, engine.State] = {}
    for t in range(len(rolls)):
        state = engine.roll(state, rolls[t])
        live = ~state.done
        assert np.all(state.legal[live] != 0), "a live game has a legal placement"
        assert np.all(state.legal & (state.me | state.opp) == 0), "legal squares are empty"
        assert np.all(state.legal & ~FULL == 0)
        state = engine.place(state, uniform_square(state.legal, uniforms[t]), config)
        assert np.array_equal(totals(state), owned), "board + reserve is constant for each player"
        assert np.all(state.me & state.opp == 0)
        for i, snapshot in frozen.items():
            assert _same(state[i], snapshot), f"finished game {i} changed at ply {t}"
        for i in np.flatnonzero(state.done):
            frozen.setdefault(int(i), state[int(i)])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(plays, configs)
def test_batch_element_equals_game_run_alone(play, config):
    """Game i of a batch evolves exactly as the same game alone: batched B = 1 and the int path."""
    rolls, uniforms = play
    batch = engine.init(config, BATCH)
    alone = [engine.init(config, 1) for _ in range(BATCH)]
    games = [Game(config) for _ in range(BATCH)]
    for t in range(len(rolls)):
        batch = engine.roll(batch, rolls[t])
        batch = engine.place(batch, uniform_square(batch.legal, uniforms[t]), config)
        for i in range(BATCH):
            alone[i] = engine.roll(alone[i], rolls[t, i : i + 1])
            alone[i] = engine.place(alone[i], uniform_square(alone[i].legal, uniforms[t, i : i + 1]), config)
            if not games[i].done:
                games[i].roll(int(rolls[t, i]))
                games[i].place(int(uniform_square(games[i].legal, float(uniforms[t, i]))))
            assert _same(batch[i], alone[i]), f"ply {t}, game {i}: batch differs from B = 1"
            assert _same(batch[i], games[i].to_state()), f"ply {t}, game {i}: batch differs from Game"
            assert _same_views(batch[i], games[i]), f"ply {t}, game {i}: the views differ"


def _same_views(state: engine.State, game: Game) -> bool:
    """A one-game State's views (arrays) read as the Game's (ints)."""
    return (
        int(state.red()[0]) == game.red
        and int(state.blue()[0]) == game.blue
        and tuple(state.reserves()[0].tolist()) == game.reserves
        and int(state.roller()[0]) == game.roller
        and tuple(state.dice()[0].tolist()) == game.dice
    )


def _same(a: engine.State, b: engine.State) -> bool:
    """Every field equal (values and dtypes)."""
    from dataclasses import fields

    return all(
        np.array_equal(getattr(a, f.name), getattr(b, f.name)) and getattr(a, f.name).dtype == getattr(b, f.name).dtype
        for f in fields(engine.State)
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.05, 0.95), st.sampled_from([(1,), (300,), (2000,), (40, 36)]))
def test_batched_group_equals_the_int_fill_of_each_game(seed, density, shape):
    """Large batches narrow to the games still growing (rules.COMPACT_MIN): every game's group is still
    the one the Python-int fill finds alone, seeded by one square or by several."""
    rng = np.random.default_rng(seed)
    masks = array_to_bitboards(rng.random(shape + (36,)) < density)
    seeds = masks & np.where(
        rng.random(shape) < 0.5, BIT_ARRAY[rng.integers(0, 36, shape)], rng.integers(0, 2**41, shape)
    )
    groups = rules.group(seeds, masks)
    assert groups.shape == shape and groups.dtype == np.int64
    for index in np.ndindex(shape):
        assert int(groups[index]) == rules.group(int(seeds[index]), int(masks[index])), index


def _component(seed: int, mask: int) -> int:
    """The squares of `mask` connected to `seed` found square by square (a breadth-first search on
    ranks and files, not on bits)."""
    inside, found = set(squares_of(mask)), set(squares_of(seed))
    frontier = list(found)
    while frontier:
        rank, file = divmod(frontier.pop(), BOARD_SIZE)
        for r, f in ((rank + 1, file), (rank - 1, file), (rank, file + 1), (rank, file - 1)):
            square = r * BOARD_SIZE + f
            if 0 <= r < BOARD_SIZE and 0 <= f < BOARD_SIZE and square in inside and square not in found:
                found.add(square)
                frontier.append(square)
    return bits_of(found)


#: a one-square-wide path through all six ranks (ranks 1, 3, 5 whole, joined at alternate edges): the
#: longest group, many passes of the fill
SNAKE = bits_of(s for s in range(36) if s // 6 % 2 == 0 or s % 6 == (5 if s // 6 % 4 == 1 else 0))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.05, 0.95),
    st.sampled_from([(1,), (7,), (300,), (2000,), (40, 36)]),
    st.integers(0, 3 * rules.FINISH_ALONE),
    st.booleans(),
)
def test_group_is_the_connected_component(seed, density, shape, snakes, broadcast):
    """The batched fill (narrowing, then finishing the last few growing games alone) and the int fill
    find each game's connected component, on random masks (pieces at the edge files and ranks, runs
    that meet the guard bits) with `snakes` games on the longest path; a mask broadcast over seeds too."""
    rng = np.random.default_rng(seed)
    flat = array_to_bitboards(rng.random((int(np.prod(shape)), 36)) < density)  # (N,) board bitboards
    flat[rng.permutation(flat.size)[:snakes]] = SNAKE
    masks = flat.reshape(shape)
    seeds = masks & np.where(
        rng.random(shape) < 0.5, BIT_ARRAY[rng.integers(0, 36, shape)], rng.integers(0, 2**41, shape)
    )
    if broadcast:  # one mask for every game
        masks = np.int64(SNAKE if snakes else int(flat[0]))
        seeds &= masks
    groups = rules.group(seeds, masks)
    assert groups.shape == shape and groups.dtype == np.int64
    masks = np.broadcast_to(masks, shape)
    for index in np.ndindex(shape):
        expected = _component(int(seeds[index]), int(masks[index]))
        assert int(groups[index]) == expected, index
        assert rules.group(int(seeds[index]), int(masks[index])) == expected, index


words = st.integers(0, 2 ** (8 * sampling.WORD_BYTES) - 1) | st.sampled_from([0, 1, FULL, 2**56 - 1, 2**55, 0xFF << 48])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(words, st.floats(0, 1, exclude_max=True)), min_size=1, max_size=40))
def test_select_equals_the_naive_definition(cases):
    """nth_set_bit, uniform_square and the byte counts on ints and arrays agree with counting the bits one by
    one, for every k of every word (empty bytes, full bytes, the top searched byte and every board bitboard)."""
    bits = np.array([word for word, _ in cases], dtype=np.int64)
    uniforms = np.array([uniform for _, uniform in cases])
    set_bits = [[p for p in range(64) if word >> p & 1] for word, _ in cases]
    assert sampling.byte_counts(bits).tolist() == [
        sum(popcount((word >> 8 * i) & 0xFF) << 8 * i for i in range(8)) for word, _ in cases
    ]
    for (word, uniform), positions in zip(cases, set_bits, strict=True):
        assert sampling.byte_counts(word) == int(sampling.byte_counts(np.array(word)))
        assert [sampling.nth_set_bit(word, k) for k in range(len(positions))] == positions
        if word <= FULL and positions:
            assert uniform_square(word, uniform) == bit_to_square(positions[int(uniform * len(positions))])
    live = bits != 0
    for k in range(max(map(len, set_bits))):
        has = np.array([k < len(positions) for positions in set_bits])
        found = sampling.nth_set_bit(bits[has], np.full(has.sum(), k))
        assert found.dtype == np.int64
        assert found.tolist() == [positions[k] for positions in set_bits if k < len(positions)]
    empty = ~live  # a masked-out row (no legal square) rides along without an error
    assert sampling.nth_set_bit(bits[empty], np.zeros(empty.sum(), dtype=np.int64)).shape == (empty.sum(),)
    assert uniform_square(bits[empty], uniforms[empty]).shape == (empty.sum(),)
    board = live & (bits <= FULL)
    picks = uniform_square(bits[board], uniforms[board])
    assert picks.tolist() == [
        uniform_square(int(w), float(u)) for w, u in zip(bits[board], uniforms[board], strict=True)
    ]
