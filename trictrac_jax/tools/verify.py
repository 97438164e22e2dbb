"""Replay the reference engine's golden files and measure agreement.

    python -m trictrac_jax.tools.verify ../shared/golden/*.jsonl.gz

Every line is replayed through the public API (vmapped, jitted, in batches) and compared, per
check, with what the reference engine recorded:

* legal:       the set of legal action indices of a decision state;
* moves:       the move pair an action index decodes to (decision steps);
* state:       the state after each step (chance, decision, or a position's roll);
* points:      the points of each roll;
* jans:        the jans of each roll, with their move pairs (compared as multisets: the
               reference's list order is not reproduced);
* observation: the 217-float encoding (where the file has it), to 1e-5;
* string_id:   `to_string_id` of every recorded state, and the state read back by
               `from_string_id`;
* end:         a summary file's line per game (games-summary.jsonl.gz): its number of
               steps, final stage, players and winner, against the last state that our
               replay of that game's steps reached (the games file in the same call).

Prints the agreements per check, the first disagreements, and a last line
`agreement: <agree>/<total> (<percent>%)`. Exits with status 0 only at 100%.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import devices, lowering
from trictrac_jax import board as B
from trictrac_jax import io
from trictrac_jax.moves import decode
from trictrac_jax import scoring
from trictrac_jax.env import Trictrac, dice_to_outcome

CHECKS = ("legal", "moves", "state", "points", "jans", "observation", "string_id", "end")
BATCH = 512


class Tally:
    def __init__(self, max_examples: int):
        self.agree = defaultdict(int)
        self.total = defaultdict(int)
        self.examples: list[str] = []
        self.max_examples = max_examples

    def check(self, name: str, ok: bool, where: str, want=None, got=None):
        self.total[name] += 1
        self.agree[name] += bool(ok)
        if not ok and len(self.examples) < self.max_examples:
            self.examples.append(f"[{name}] {where}\n    reference: {want}\n    ours:      {got}")


def read_jsonl(path: str):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _make_kernels(env: Trictrac):
    def roll(state, dice):
        jans, listed = scoring.roll_details(state, dice)
        rolled = env.chance_step(state.replace(_is_chance=jnp.bool_(True)), dice_to_outcome(dice))
        return rolled, jans, listed

    def decide(state, action):
        state = env.restore(state)
        view = B.view_board(state._board, state.current_player)
        pair = decode(view, state._dice, action)
        return state, pair, env.step_deterministic(state, action)

    return {k: jax.jit(jax.vmap(f)) for k, f in
            dict(roll=roll, decide=decide, restore=env.restore).items()}


def _padded(items, size):
    """Split into batches of `size`, the last one padded by repeating its first item."""
    for start in range(0, len(items), size):
        chunk = items[start:start + size]
        yield chunk, chunk + [chunk[0]] * (size - len(chunk))


def _same_jans(want: dict, got: dict) -> bool:
    canon = lambda d: {k: sorted(map(json.dumps, v)) for k, v in d.items()}
    return canon(want) == canon(got)


def _check_ids(tally: Tally, records, where: str):
    for rec in records:
        ours = io.record_string_id(rec)
        back = io.record_from_string_id(rec["id"])
        same_back = all(back[k] == rec[k] for k in ("board", "active", "turn_stage", "dice"))
        tally.check("string_id", ours == rec["id"] and same_back, where, rec["id"], ours)


def _strip_id(rec):
    return {k: v for k, v in rec.items() if k != "id"}


def verify_games(lines, kernels, tally: Tally) -> dict:
    """Checks every step; returns {game: (step, our state after it)} for each game's last
    step."""
    last = {}
    chance = [r for r in lines if r["kind"] == "chance"]
    decision = [r for r in lines if r["kind"] == "decision"]
    for chunk, padded in _padded(chance, BATCH):
        states = io.states_from_records([r["before"] for r in padded])
        dice = jnp.array([r["dice"] for r in padded], jnp.int32)
        rolled, jans, listed = kernels["roll"](states, dice)
        records = _compare_roll(tally, chunk, rolled, jans, listed, lambda r: r["after"],
                                lambda r: f"game {r['game']} step {r['t']}")
        for r, record in zip(chunk, records):
            _keep_last(last, r, record)
    for chunk, padded in _padded(decision, BATCH):
        states = io.states_from_records([r["before"] for r in padded])
        actions = jnp.array([r["action"] for r in padded], jnp.int32)
        restored, pairs, after = kernels["decide"](states, actions)
        masks, obs = np.asarray(restored.legal_action_mask), np.asarray(restored.observation)
        pairs, after = np.asarray(pairs), io.states_to_records(after)
        for k, r in enumerate(chunk):
            where = f"game {r['game']} step {r['t']}"
            legal = np.nonzero(masks[k])[0].tolist()
            tally.check("legal", legal == r["legal"], where, r["legal"], legal)
            if r["moves"] is not None:
                got = io.real_pair(pairs[k], r["before"]["active"] - 1)
                tally.check("moves", got == r["moves"], where, r["moves"], got)
            if "obs" in r:
                ok = np.allclose(obs[k], r["obs"], atol=1e-5)
                tally.check("observation", ok, where, r["obs"], obs[k].round(6).tolist())
            tally.check("state", _strip_id(after[k]) == _strip_id(r["after"]), where,
                        r["after"], after[k])
            _check_ids(tally, [r["before"], r["after"]], where)
            _keep_last(last, r, after[k])
    return last


def _keep_last(last: dict, line, record):
    """`last[game]` = (step, our state after it) if `line` is its game's latest step yet."""
    if line["game"] not in last or line["t"] > last[line["game"]][0]:
        last[line["game"]] = (line["t"], record)


def _compare_roll(tally, chunk, rolled, jans, listed, after_of, where_of):
    records = io.states_to_records(rolled)
    host = jax.device_get((jans, listed))
    for k, r in enumerate(chunk):
        where = where_of(r)
        player = r["state" if "state" in r else "before"]["active"] - 1
        one = jax.tree.map(lambda x: x[k], host[0])
        got_jans = io.jans_dict(one, host[1][k], player)
        points = np.asarray(one.points).tolist()
        tally.check("points", points == r["points"], where, r["points"], points)
        tally.check("jans", _same_jans(r["jans"], got_jans), where, r["jans"], got_jans)
        tally.check("state", _strip_id(records[k]) == _strip_id(after_of(r)), where,
                    after_of(r), records[k])
    return records[:len(chunk)]


def _winner(record) -> int | None:
    """The reference's `determine_winner`: the id of a player with more than 11 holes."""
    return next((p for p in (1, 2) if record[f"p{p}"][1] > 11), None)


def verify_summaries(summaries, last, tally: Tally) -> int:
    """Each summary line against our last state of its game (`verify_games`' `last`);
    returns how many summary lines had no replayed game to compare with."""
    missing = 0
    for row in summaries:
        if row["game"] not in last:
            missing += 1
            continue
        t, record = last[row["game"]]
        want = {k: row[k] for k in ("steps", "final_stage", "p1", "p2", "winner")}
        got = {"steps": t + 1, "final_stage": record["stage"], "p1": record["p1"],
               "p2": record["p2"], "winner": _winner(record)}
        tally.check("end", got == want, f"game {row['game']} (summary)", want, got)
    return missing


def verify_positions(lines, kernels, tally: Tally):
    for chunk, padded in _padded(lines, BATCH):
        states = io.states_from_records([r["state"] for r in padded])
        restored = kernels["restore"](states)
        masks = np.asarray(restored.legal_action_mask)
        for k, r in enumerate(chunk):
            where = f"position {r['pos']} dice {r['dice']}"
            legal = np.nonzero(masks[k])[0].tolist()
            tally.check("legal", legal == r["legal"], where, r["legal"], legal)
            _check_ids(tally, [r["state"], r["after_roll"]], where)
        to_roll = states.replace(_turn_stage=jnp.ones_like(states._turn_stage))
        dice = jnp.array([r["dice"] for r in padded], jnp.int32)
        rolled, jans, listed = kernels["roll"](to_roll, dice)
        _compare_roll(tally, chunk, rolled, jans, listed, lambda r: r["after_roll"],
                      lambda r: f"position {r['pos']} dice {r['dice']}")


def main(argv=None) -> int:
    """Replays the golden files named in `argv` (default: the command line) and prints each
    check's agreement; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m trictrac_jax.tools.verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", help="golden JSON Lines files (.jsonl or .jsonl.gz)")
    parser.add_argument("--examples", type=int, default=5, help="disagreements to print")
    parser.add_argument("--lowering", choices=sorted(lowering.LOWERINGS),
                        help="replay under this lowering of the engine (default: the "
                             "device's, or $TRICTRAC_LOWERING)")
    args = parser.parse_args(argv)
    if args.lowering:  # read when the engine is traced
        os.environ[lowering.LOWERING_VARIABLE] = args.lowering

    kernels = _make_kernels(Trictrac(max_steps=None))
    tally = Tally(args.examples)
    last, summaries = {}, []
    for path in args.files:
        lines = list(read_jsonl(path))
        if not lines:
            print(f"{path}: empty")
            continue
        if "kind" in lines[0]:
            last |= verify_games(lines, kernels, tally)
        elif "pos" in lines[0]:
            verify_positions(lines, kernels, tally)
        elif "final_stage" in lines[0]:
            summaries += lines
            print(f"{path}: {len(lines)} game summaries, checked against the games replayed")
            continue
        else:
            print(f"{path}: not a games, positions or summary file (no 'kind', 'pos' or "
                  f"'final_stage' field)")
            return 2
        print(f"{path}: {len(lines)} lines replayed")
    missing = verify_summaries(summaries, last, tally)
    if missing:
        print(f"{missing} game summaries name games that no games file of this call holds: "
              f"not checked")
    for name in CHECKS:
        if tally.total[name]:
            print(f"  {name:<12} {tally.agree[name]:>8}/{tally.total[name]}")
    if tally.examples:
        print("first disagreements:")
        print("\n".join(tally.examples))
    agree, total = sum(tally.agree.values()), sum(tally.total.values())
    print(f"agreement: {agree}/{total} ({100.0 * agree / max(total, 1):.3f}%)")
    return 0 if total and agree == total else 1


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
