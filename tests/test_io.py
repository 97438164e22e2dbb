"""Tests of trictrac_jax.io against the reference engine's golden states and string ids."""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from trictrac_jax.io import (
    from_string_id,
    record_from_string_id,
    state_from_record,
    state_to_record,
    states_from_records,
    states_to_records,
    to_string_id,
)

from tests.golden_sample import iter_jsonl

N_GAMES = 20
S_KEYS = ["board", "active", "stage", "turn_stage", "dice", "p1", "p2", "dice_points", "id"]

# The one golden state with holes >= 16 (positions.jsonl.gz, pos 627, dice [4, 4], after_roll).
HOLES16 = {
    "board": [0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 4, 2, -5, -3, -1, -1, 0, -3, -1, -1, 1, 0, 0, 0],
    "active": 1,
    "stage": 2,
    "turn_stage": 2,
    "dice": [4, 4],
    "p1": [2, 16, 1, 1, 20],
    "p2": [0, 9, 1, 1, 19],
    "dice_points": [28, 0],
    "id": "ADY2PSACABUyLj4AABQhEDAn",
}


def _has_long_holes(rec: dict) -> bool:
    return rec["p1"][1] >= 16 or rec["p2"][1] >= 16


def _id_from_bits(bits: str) -> str:
    bits = bits.ljust(108, "0")
    return base64.b64encode(bytes(int(bits[i : i + 6], 2) for i in range(0, 108, 6))).decode()


def _game_states() -> list[tuple[str, dict]]:
    """Distinct before/after states of the first N_GAMES games in the file."""
    seen_games: list[int] = []
    seen: set[str] = set()
    out = []
    for line in iter_jsonl("games.jsonl.gz"):
        g = line["game"]
        if g not in seen_games:
            if len(seen_games) == N_GAMES:
                break
            seen_games.append(g)
        for side in ("before", "after"):
            rec = line[side]
            key = json.dumps(rec, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append((f"game {g} t {line['t']} {side}", rec))
    return out


def _position_state_chunks(size: int = 4096):
    """All `state` and `after_roll` objects of positions.jsonl.gz, in lists of `size`."""
    chunk = []
    for line in iter_jsonl("positions.jsonl.gz"):
        for side in ("state", "after_roll"):
            chunk.append((f"pos {line['pos']} dice {line['dice']} {side}", line[side]))
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@pytest.fixture(scope="module")
def game_states():
    states = _game_states()
    assert len(states) > 100
    return states


def _assert_decoded_matches(decoded: dict, rec: dict, where: str) -> None:
    """What the string id carries: board, active, turn stage, dice, points, holes, flags."""
    for k in ("board", "active", "turn_stage", "dice"):
        assert decoded[k] == rec[k], (where, k)
    for p in ("p1", "p2"):
        assert decoded[p][:4] == rec[p][:4], (where, p)
        assert decoded[p][4] == 0, (where, p)  # dice_roll_count is not in the id
    assert decoded["stage"] == 1 and decoded["dice_points"] == [0, 0], where
    assert decoded["id"] == rec["id"], where


# ---------------------------------------------------------------------------------------------
#  golden round trips
# ---------------------------------------------------------------------------------------------


def test_games_record_round_trip(game_states):
    for where, rec in game_states:
        assert list(rec) == S_KEYS, where
        state = state_from_record(rec)
        assert to_string_id(state) == rec["id"], where
        out = state_to_record(state)
        assert out == rec, where
        assert list(out) == S_KEYS, where


def test_games_from_string_id(game_states):
    for where, rec in game_states:
        assert not _has_long_holes(rec), where  # holes stay <= 15 in the games file
        decoded = state_to_record(from_string_id(rec["id"]))
        _assert_decoded_matches(decoded, rec, where)


def test_positions_record_round_trip():
    n = 0
    for chunk in _position_state_chunks():
        recs = [rec for _, rec in chunk]
        batch = states_from_records(recs)
        assert batch._board.shape == (len(recs), 24)
        out = states_to_records(batch)  # ids recomputed with the to_string_id encoder
        for (where, rec), got in zip(chunk, out):
            assert got == rec, where
        n += len(recs)
    assert n >= 2 * 36 * 40


def test_positions_single_state_path_and_from_string_id():
    """Every id decodes (pure-python decoder); a subsample goes through the jax State path."""
    n = n_long = 0
    for chunk in _position_state_chunks():
        for i, (where, rec) in enumerate(chunk):
            decoded = record_from_string_id(rec["id"])
            if _has_long_holes(rec):
                n_long += 1
                continue  # checked in test_holes_16_quirk
            _assert_decoded_matches(decoded, rec, where)
            if (n + i) % 97 == 0:
                state = state_from_record(rec)
                assert to_string_id(state) == rec["id"], where
                assert state_to_record(state) == rec, where
                assert state_to_record(from_string_id(rec["id"])) == decoded, where
        n += len(chunk)
    assert n_long <= 1


def test_holes_16_in_golden_data():
    found = [
        line["after_roll"]
        for line in iter_jsonl("positions.jsonl.gz")
        if line["pos"] == 627 and line["dice"] == [4, 4]
    ]
    assert found == [HOLES16]


# ---------------------------------------------------------------------------------------------
#  string id quirks and errors
# ---------------------------------------------------------------------------------------------


def test_holes_16_quirk():
    # holes = 16 is written "10000" (5 bits): 108 bits in all, so no padding bit is added and
    # the id keeps 24 characters; every bit after it is shifted by one.
    state = state_from_record(HOLES16)
    assert to_string_id(state) == HOLES16["id"]
    assert state_to_record(state) == HOLES16
    # The decoder reads fixed widths, so the players' records come back garbled.
    decoded = state_to_record(from_string_id(HOLES16["id"]))
    assert decoded["board"] == HOLES16["board"]
    assert decoded["active"] == 1 and decoded["turn_stage"] == 2 and decoded["dice"] == [4, 4]
    assert decoded["p1"] == [2, 8, 0, 1, 0]
    assert decoded["p2"] == [8, 4, 1, 1, 0]
    assert decoded["id"] != HOLES16["id"]
    # Two long holes values: 109 bits; the 19th, partial group (the last bit) is dropped.
    rec2 = dict(HOLES16, p2=[0, 17, 1, 1, 19])
    id2 = to_string_id(state_from_record(rec2))
    assert len(id2) == 24
    bits = "".join(format(b, "06b") for b in base64.b64decode(id2))
    assert len(bits) == 108
    # White: points 2, holes 16, flags 1 1; Black: points 0, holes 17, can_bredouille 1, and
    # its can_big_bredouille bit, the 109th, is cut.
    assert bits.endswith("0010" + "10000" + "1" + "1" + "0000" + "10001" + "1")
    assert bits[77:87] == "0" + "010" + "100" + "100"


def test_string_id_of_initial_state():
    rec = {
        "board": [15] + [0] * 22 + [-15],
        "active": 1,
        "stage": 1,
        "turn_stage": 1,
        "dice": [0, 0],
        "p1": [0, 0, 1, 1, 0],
        "p2": [0, 0, 1, 1, 0],
        "dice_points": [0, 0],
        "id": "Pz84AAAABz8/AAAAAAgAASAG",
    }
    assert to_string_id(state_from_record(rec)) == rec["id"]
    assert state_to_record(from_string_id(rec["id"])) == rec


@pytest.mark.parametrize(
    "bad, match",
    [
        ("not base64!!", "base64"),
        ("Pz84AAAABz8/AAAAAAgAASA", "base64"),  # 23 characters: bad padding
        ("Pz84AAAABz8/AAAAAAgAASAG=", "base64"),
        ("Pz84AAAABz8/AAAAAAgA", "bits"),  # too short: 15 bytes = 90 bits
        ("", "bits"),
        (_id_from_bits("0" * 77 + "0" + "110"), "turn stage"),
        (_id_from_bits("0" * 77 + "0" + "111"), "turn stage"),
        # one White checker on field 1, then Black's runs from 24 down: one on field 1 too
        (_id_from_bits("10" + "0" * 23 + "0" * 23 + "10"), "both colours on field 1"),
    ],
)
def test_malformed_id_raises(bad, match):
    with pytest.raises(ValueError, match=match):
        from_string_id(bad)


def test_from_string_id_rejects_non_str():
    with pytest.raises(ValueError):
        from_string_id(b"Pz84AAAABz8/AAAAAAgAASAG")  # type: ignore[arg-type]


def test_to_string_id_rejects_bad_turn_stage():
    state = state_from_record(HOLES16).replace(_turn_stage=np.int32(7))
    with pytest.raises(ValueError, match="turn_stage"):
        to_string_id(state)


# ---------------------------------------------------------------------------------------------
#  State layout
# ---------------------------------------------------------------------------------------------


EXPECTED = {
    "current_player": ((), np.int32),
    "observation": ((217,), np.float32),
    "rewards": ((2,), np.float32),
    "terminated": ((), np.bool_),
    "truncated": ((), np.bool_),
    "legal_action_mask": ((514,), np.bool_),
    "_is_chance": ((), np.bool_),
    "_step_count": ((), np.int32),
    "_board": ((24,), np.int8),
    "_stage": ((), np.int32),
    "_turn_stage": ((), np.int32),
    "_dice": ((2,), np.int32),
    "_points": ((2,), np.int32),
    "_holes": ((2,), np.int32),
    "_can_bredouille": ((2,), np.bool_),
    "_can_big_bredouille": ((2,), np.bool_),
    "_dice_roll_count": ((2,), np.int32),
    "_dice_points": ((2,), np.int32),
}


def test_state_layout_and_derived_fields(game_states):
    rec = dict(HOLES16, active=2, p1=[3, 4, 0, 1, 2], p2=[5, 6, 1, 1, 7], dice_points=[4, 2])
    state = state_from_record(rec)
    for name, (shape, dtype) in EXPECTED.items():
        x = getattr(state, name)
        assert x.shape == shape and x.dtype == dtype, name
    assert int(state.current_player) == 1
    np.testing.assert_array_equal(state._points, [3, 5])
    np.testing.assert_array_equal(state._holes, [4, 6])
    np.testing.assert_array_equal(state._can_bredouille, [False, True])
    np.testing.assert_array_equal(state._dice_roll_count, [2, 7])
    np.testing.assert_array_equal(state._dice_points, [4, 2])
    assert bool(state.terminated) and not bool(state.truncated) and not bool(state.is_chance)
    assert not np.any(state.observation) and not np.any(state.rewards)
    assert not np.any(state.legal_action_mask) and int(state._step_count) == 0

    recs = [r for _, r in game_states[:5]]
    assert recs[0]["turn_stage"] == 1 and recs[0]["stage"] == 1
    assert bool(state_from_record(recs[0]).is_chance)
    batch = states_from_records(recs)
    for name, (shape, dtype) in EXPECTED.items():
        x = getattr(batch, name)
        assert x.shape == (5, *shape) and x.dtype == dtype, name
    assert states_to_records(batch) == recs
    with pytest.raises(ValueError, match="unbatched"):
        state_to_record(batch)


def test_state_to_record_accepts_numpy_leaves(game_states):
    import jax

    rec = game_states[3][1]
    host = jax.tree_util.tree_map(np.asarray, state_from_record(rec))
    assert isinstance(host._board, np.ndarray)
    assert state_to_record(host) == rec
    assert to_string_id(host) == rec["id"]


def test_bad_record_raises():
    with pytest.raises(ValueError, match="active"):
        state_from_record(dict(HOLES16, active=0))
    with pytest.raises(ValueError, match="board"):
        state_from_record(dict(HOLES16, board=[0] * 23))
    with pytest.raises(ValueError, match="missing"):
        state_from_record({k: v for k, v in HOLES16.items() if k != "p2"})
