"""Host-side conversion between `State` and the reference engine's formats.

Nothing here is jitted: these are plain numpy/python helpers for tests, debugging and data
loading.

* `state_from_record` / `states_from_records` / `state_to_record` / `states_to_records`
  convert to and from the golden "S" object (see the golden data README, "State object S").
* `to_string_id` / `from_string_id` (and the pure-python `record_from_string_id`) reproduce
  `GameState::to_string_id` and `GameState::from_string_id` of the reference engine
  (mmai/trictrac, store crate, 0.2.17), bit for bit, including its quirks:

  - the position part is cut (or padded) to 77 bits, so with all 30 checkers on the board
    the final separator bit is lost;
  - numbers are written with `{:0>Nb}`, a minimum width: a `holes` value of 16 or more takes
    5 bits and shifts every later bit by one. The bits are packed into 6-bit groups and
    zero-padded only while fewer than 18 groups exist, so one extra bit simply replaces the
    padding bit (still 18 bytes, 24 base64 characters); a trailing partial group is dropped
    and a 19th full group would make the id longer. The decoder always reads fixed widths,
    so such an id does not decode back to the same players' records.

Structure-of-arrays layout follows `trictrac_jax.state`: per-colour arrays are indexed by
colour (0 = White = the reference's player 1, 1 = Black = player 2).
"""
from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from typing import Any, Iterable, Mapping

import jax
import numpy as np

from trictrac_jax import scoring
from trictrac_jax.state import NUM_ACTIONS, NUM_FIELDS, OBS_SIZE, STAGE_ENDED, STAGE_IN_GAME, TS_ROLL_DICE, State

__all__ = [
    "state_from_record",
    "states_from_records",
    "state_to_record",
    "states_to_records",
    "to_string_id",
    "from_string_id",
    "record_from_string_id",
    "record_string_id",
]

ID_POSITION_BITS = 77
ID_TOTAL_BITS = 108
ID_TOTAL_BYTES = ID_TOTAL_BITS // 6  # 18 six-bit groups -> 24 base64 characters

# Order of the keys of a golden S object.
RECORD_KEYS = ("board", "active", "stage", "turn_stage", "dice", "p1", "p2", "dice_points", "id")

_TURN_STAGE_BITS = {0: "000", 1: "001", 2: "010", 3: "011", 4: "100", 5: "101"}
_TURN_STAGE_FROM_BITS = {v: k for k, v in _TURN_STAGE_BITS.items()}


# ---------------------------------------------------------------------------------------------
#  numpy field dictionaries
# ---------------------------------------------------------------------------------------------

# (field, dtype, shape of one game) of the fields an S object sets
_ROW_FIELDS = (
    ("current_player", np.int32, ()),
    ("_stage", np.int32, ()),
    ("_turn_stage", np.int32, ()),
    ("_board", np.int8, (NUM_FIELDS,)),
    ("_dice", np.int32, (2,)),
    ("_points", np.int32, (2,)),
    ("_holes", np.int32, (2,)),
    ("_can_bredouille", np.bool_, (2,)),
    ("_can_big_bredouille", np.bool_, (2,)),
    ("_dice_roll_count", np.int32, (2,)),
    ("_dice_points", np.int32, (2,)),
)


def _check_len(name: str, value: Any, n: int) -> list:
    try:
        seq = list(value)
    except TypeError:
        raise ValueError(f"record field {name!r} must be a list of {n} values, got {value!r}") from None
    if len(seq) != n:
        raise ValueError(f"record field {name!r} must have {n} values, got {len(seq)}")
    return seq


def _row_from_record(rec: Mapping[str, Any]) -> tuple:
    """One game's values, in `_ROW_FIELDS` order, as python values (validated)."""
    try:
        board, active, stage, turn_stage = rec["board"], rec["active"], rec["stage"], rec["turn_stage"]
        dice, p1, p2, dice_points = rec["dice"], rec["p1"], rec["p2"], rec["dice_points"]
    except (KeyError, TypeError):
        missing = [k for k in RECORD_KEYS if k != "id" and k not in rec]
        raise ValueError(f"record is missing field(s) {missing}") from None
    board = _check_len("board", board, NUM_FIELDS)
    if active not in (1, 2):
        raise ValueError(f"record field 'active' must be 1 or 2, got {active!r}")
    p1 = _check_len("p1", p1, 5)
    p2 = _check_len("p2", p2, 5)
    return (
        int(active) - 1,
        int(stage),
        int(turn_stage),
        board,
        _check_len("dice", dice, 2),
        [p1[0], p2[0]],
        [p1[1], p2[1]],
        [bool(p1[2]), bool(p2[2])],
        [bool(p1[3]), bool(p2[3])],
        [p1[4], p2[4]],
        _check_len("dice_points", dice_points, 2),
    )


def _fields_from_rows(rows: list[tuple], batched: bool) -> dict[str, np.ndarray]:
    """All `State` fields as numpy arrays with the engine's dtypes; derived fields simple.

    `batched`: a leading axis of len(rows); otherwise `rows` holds exactly one game.
    """
    lead = (len(rows),) if batched else ()
    fields = {}
    for i, (name, dtype, shape) in enumerate(_ROW_FIELDS):
        values = [r[i] for r in rows] if batched else rows[0][i]
        fields[name] = np.asarray(values, dtype).reshape(lead + shape)
    stage, turn_stage = fields["_stage"], fields["_turn_stage"]
    fields.update(
        observation=np.zeros(lead + (OBS_SIZE,), np.float32),
        rewards=np.zeros(lead + (2,), np.float32),
        terminated=np.asarray(stage == STAGE_ENDED),
        truncated=np.zeros(lead, np.bool_),
        legal_action_mask=np.zeros(lead + (NUM_ACTIONS,), np.bool_),
        _is_chance=np.asarray((turn_stage == TS_ROLL_DICE) & (stage != STAGE_ENDED)),
        _step_count=np.zeros(lead, np.int32),
    )
    return fields


def _to_state(fields: Mapping[str, np.ndarray]) -> State:
    """Build a `State` whose leaves are jax arrays (one host-to-device transfer)."""
    return jax.device_put(State(**fields))


# ---------------------------------------------------------------------------------------------
#  golden S records
# ---------------------------------------------------------------------------------------------


def state_from_record(rec: Mapping[str, Any]) -> State:
    """A `State` from a golden S object (its `id` is ignored).

    Derived public fields get simple values: zero observation, rewards and legal-action mask,
    `terminated = stage == 2`, `truncated = False`, `is_chance = turn_stage == 1 and
    stage != 2`; `_step_count` is 0.
    """
    return _to_state(_fields_from_rows([_row_from_record(rec)], batched=False))


def states_from_records(recs: Iterable[Mapping[str, Any]]) -> State:
    """`state_from_record` for several records, stacked along a leading batch axis."""
    rows = [_row_from_record(r) for r in recs]
    if not rows:
        raise ValueError("states_from_records needs at least one record")
    return _to_state(_fields_from_rows(rows, batched=True))


def _record_from_lists(f: Mapping[str, Any]) -> dict:
    """The S object from one game's fields given as python scalars/lists."""
    players = [
        [
            int(f["_points"][c]),
            int(f["_holes"][c]),
            int(bool(f["_can_bredouille"][c])),
            int(bool(f["_can_big_bredouille"][c])),
            int(f["_dice_roll_count"][c]),
        ]
        for c in range(2)
    ]
    rec = {
        "board": [int(v) for v in f["_board"]],
        "active": int(f["current_player"]) + 1,
        "stage": int(f["_stage"]),
        "turn_stage": int(f["_turn_stage"]),
        "dice": [int(v) for v in f["_dice"]],
        "p1": players[0],
        "p2": players[1],
        "dice_points": [int(v) for v in f["_dice_points"]],
    }
    rec["id"] = _string_id(
        rec["board"], rec["active"] - 1, rec["turn_stage"], rec["dice"], players[0], players[1]
    )
    return rec


_RECORD_FIELDS = (
    "current_player",
    "_board",
    "_stage",
    "_turn_stage",
    "_dice",
    "_points",
    "_holes",
    "_can_bredouille",
    "_can_big_bredouille",
    "_dice_roll_count",
    "_dice_points",
)


def _host_lists(state: State, batched: bool) -> dict[str, Any]:
    """The fields an S object needs, as python lists (one device-to-host transfer)."""
    host = jax.device_get({k: getattr(state, k) for k in _RECORD_FIELDS})
    board_shape = np.shape(host["_board"])
    want = 2 if batched else 1
    if len(board_shape) != want or board_shape[-1] != NUM_FIELDS:
        if batched:
            raise ValueError(f"expected a batched state with board shape (B, {NUM_FIELDS}), got {board_shape}")
        raise ValueError(
            f"expected a single (unbatched) state with board shape ({NUM_FIELDS},), got {board_shape}; "
            "use states_to_records for a batch"
        )
    return {k: np.asarray(v).tolist() for k, v in host.items()}


def state_to_record(state: State) -> dict:
    """The golden S object of a single (unbatched) state, `id` included.

    Leaves may be jax or numpy arrays. Keys come in the golden files' order.
    """
    return _record_from_lists(_host_lists(state, batched=False))


def states_to_records(states: State) -> list[dict]:
    """`state_to_record` for each element of a batched state (leading batch axis)."""
    lists = _host_lists(states, batched=True)
    n = len(lists["_board"])
    return [_record_from_lists({k: v[i] for k, v in lists.items()}) for i in range(n)]


# ---------------------------------------------------------------------------------------------
#  string id
# ---------------------------------------------------------------------------------------------


_SIX_BITS = {format(i, "06b"): i for i in range(64)}


def _uint_bits(value: int, width: int, what: str) -> str:
    """Rust `format!("{:0>W$b}", value)` for an unsigned value: at least `width` bits."""
    value = int(value)
    if value < 0:
        raise ValueError(f"{what} must be non-negative to be written in a string id, got {value}")
    return format(value, f"0{width}b")


def _position_bits(board) -> str:
    """`Board::to_gnupg_pos_id`: White runs fields 1..24, Black runs fields 24..1, 77 bits."""
    board = [int(v) for v in board]
    bits = "".join(["1" * n + "0" if n > 0 else "0" for n in board]) + "".join(
        ["1" * -n + "0" if n < 0 else "0" for n in reversed(board)]
    )
    return bits[:ID_POSITION_BITS].ljust(ID_POSITION_BITS, "0")


def _player_bits(rec, what: str) -> str:
    """`Player::to_bits_string`: points `{:0>4b}`, holes `{:0>4b}`, two flag bits."""
    points, holes, can_bredouille, can_big_bredouille = rec[0], rec[1], rec[2], rec[3]
    return (
        _uint_bits(points, 4, f"{what} points")
        + _uint_bits(holes, 4, f"{what} holes")
        + ("1" if can_bredouille else "0")
        + ("1" if can_big_bredouille else "0")
    )


def _string_id(board, active_colour: int, turn_stage: int, dice, white, black) -> str:
    turn_stage = int(turn_stage)
    if turn_stage not in _TURN_STAGE_BITS:
        raise ValueError(f"turn_stage must be 0..5 to be written in a string id, got {turn_stage}")
    bits = "".join(
        [
            _position_bits(board),
            "1" if int(active_colour) == 1 else "0",
            _TURN_STAGE_BITS[turn_stage],
            _uint_bits(dice[0], 3, "dice[0]"),
            _uint_bits(dice[1], 3, "dice[1]"),
            _player_bits(white, "White"),
            _player_bits(black, "Black"),
        ]
    )
    # The engine packs bits into 6-bit groups, keeps only complete groups (a trailing partial
    # group is dropped), and pads with zero bits only while it has fewer than 18 groups.
    n_groups = len(bits) // 6
    if n_groups < ID_TOTAL_BYTES:
        bits = bits.ljust(ID_TOTAL_BITS, "0")
        n_groups = ID_TOTAL_BYTES
    groups = bytes([_SIX_BITS[bits[i : i + 6]] for i in range(0, 6 * n_groups, 6)])
    return base64.b64encode(groups).decode("ascii")


def record_string_id(rec: Mapping[str, Any]) -> str:
    """`GameState::to_string_id()` of a golden S object (pure python, no jax)."""
    players = [rec[k][:4] for k in ("p1", "p2")]
    return _string_id(rec["board"], rec["active"] - 1, rec["turn_stage"], rec["dice"], *players)


def to_string_id(state: State) -> str:
    """str: `GameState::to_string_id()` of a single (unbatched) state."""
    f = _host_lists(state, batched=False)
    players = [
        (f["_points"][c], f["_holes"][c], f["_can_bredouille"][c], f["_can_big_bredouille"][c])
        for c in range(2)
    ]
    return _string_id(f["_board"], f["current_player"], f["_turn_stage"], f["_dice"], *players)


def _count_ones(bits: str, idx: int) -> tuple[int, int]:
    """The run of 1s at `idx` (a field's checkers) and the index after its closing 0."""
    end = idx
    while end < len(bits) and bits[end] == "1":
        end += 1
    return end - idx, end + (end < len(bits) and bits[end] == "0")


def _board_from_bits(bits: str) -> list[int]:
    """`Board::from_gnupg_pos_id`: White's fields 1..24, then Black's from 24 down."""
    positions = [0] * NUM_FIELDS
    idx = 0
    for i in range(NUM_FIELDS):
        if idx >= len(bits):
            break
        positions[i], idx = _count_ones(bits, idx)
    for i in reversed(range(NUM_FIELDS)):
        if idx >= len(bits):
            break
        count, idx = _count_ones(bits, idx)
        if positions[i] == 0:
            positions[i] = -count
        elif count > 0:
            raise ValueError(f"invalid string id: checkers of both colours on field {i + 1}")
    return positions


def record_from_string_id(s: str) -> dict:
    """Decode a string id as the engine's `GameState::from_string_id` does, into an S object.

    Only the first 108 bits are read, with fixed widths. Fields absent from the id take the
    engine's defaults: stage 1 (InGame), `dice_roll_count` 0, `dice_points` [0, 0]. The
    returned `id` is recomputed from the decoded fields: it equals the input for any id that
    `to_string_id` produced, except when a holes value of 16 or more shifted its bits.
    Pure python (no jax): use it for bulk decoding.
    """
    if not isinstance(s, str):
        raise ValueError(f"string id must be a str, got {type(s).__name__}")
    try:
        raw = base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as e:
        raise ValueError(f"invalid string id {s!r}: not valid base64 ({e})") from None
    # The engine's decoder (base64 STANDARD engine) also rejects non-canonical encodings
    # (missing/extra padding, non-zero trailing bits).
    if base64.b64encode(raw).decode("ascii") != s:
        raise ValueError(f"invalid string id {s!r}: not canonical standard base64")
    bits = "".join(format(b, "06b") for b in raw)  # Rust `{:06b}`: bytes > 63 take more bits
    if len(bits) < ID_TOTAL_BITS:
        raise ValueError(
            f"invalid string id {s!r}: decodes to {len(bits)} bits, at least {ID_TOTAL_BITS} needed"
        )
    bits = bits[:ID_TOTAL_BITS]

    board = _board_from_bits(bits[:ID_POSITION_BITS])
    active = 2 if bits[77] == "1" else 1
    ts_bits = bits[78:81]
    if ts_bits not in _TURN_STAGE_FROM_BITS:
        raise ValueError(f"invalid string id {s!r}: invalid bits for turn stage: {ts_bits}")
    players = []
    for start in (87, 97):  # White, then Black; bit 107 is padding
        pb = bits[start : start + 10]
        players.append([int(pb[0:4], 2), int(pb[4:8], 2), int(pb[8] == "1"), int(pb[9] == "1"), 0])
    rec = {
        "board": board,
        "active": active,
        "stage": STAGE_IN_GAME,
        "turn_stage": _TURN_STAGE_FROM_BITS[ts_bits],
        "dice": [int(bits[81:84], 2), int(bits[84:87], 2)],
        "p1": players[0],
        "p2": players[1],
        "dice_points": [0, 0],
    }
    rec["id"] = _string_id(board, active - 1, rec["turn_stage"], rec["dice"], players[0], players[1])
    return rec


def from_string_id(s: str) -> State:
    """The `State` of one game (unbatched) of `GameState::from_string_id`: the inverse of
    `to_string_id`, as the engine decodes it.

    See `record_from_string_id` for what is read; `_step_count` is 0 and the derived public
    fields are as in `state_from_record`. Raises ValueError on a malformed id.
    """
    return state_from_record(record_from_string_id(s))


def real_pair(pair, player):
    """View move pair [f1, t1, f2, t2] -> real-board [[f1, t1], [f2, t2]]."""
    mirror = (lambda f: 25 - f if f else 0) if player == 1 else (lambda f: f)
    f1, t1, f2, t2 = (int(x) for x in pair)
    return [[mirror(f1), mirror(t1)], [mirror(f2), mirror(t2)]]


def jans_dict(jans, listed, player) -> dict:
    """The reference's `dice_jans` (jan name -> move pairs, real board) from RollJans."""
    out = defaultdict(list)
    hit_jan, hit_to = np.asarray(jans.hit_jan), np.asarray(jans.hit_to)
    for f, die in zip(*np.nonzero(hit_jan >= 0)):
        out[scoring.JANS[hit_jan[f, die]]].append(real_pair((f + 1, hit_to[f, die], 0, 0), player))
    fill_ways = np.asarray(jans.fill_ways)
    for c in np.nonzero(fill_ways)[0]:
        out[scoring.JANS[scoring.FILLED_QUARTER]] += [real_pair(listed[c], player)] * int(fill_ways[c])
    ways, pairs = np.asarray(jans.ways), np.asarray(jans.pairs)
    for j in scoring.PAIR_JANS:
        if ways[j]:
            out[scoring.JANS[j]].append(real_pair(pairs[j], player))
    return dict(out)
