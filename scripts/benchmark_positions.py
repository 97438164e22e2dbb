"""Make the position benchmark (trictrac_jax/tools/data/positions.jsonl.gz): decisions drawn
from games of several agents, every legal move valued by a deep evaluation of the champion.

    python -m scripts.benchmark_positions                          # the shipped file, seed 0
    python -m scripts.benchmark_positions --games 4 --per-source 5 --work /tmp/b --out /tmp/b.jsonl.gz

1. Games (`SOURCES`): each source plays `--games` games, its first agent White in half of
   them; every decision with more than one legal action is a candidate, of either player.
2. Sampling: from each source `--per-source` distinct positions at random, `--hold-or-go`
   of them at the hold-or-go choice (each game's first position, one of 36 openings, left
   out). Each is stored as its golden state object, checked to restore the same legal actions
   and observation.
3. Values (docs/position-benchmark.md): every legal move by `expectimax.two_ply_worths` of
   `--network` (its `--top-k` likeliest replies), and by `--rollouts` rollouts of its raw
   policy to the end of the setting (`expectimax.rollout_worths`, the same dice for every
   move of a decision), in points (x the network's margin_scale).

Work is saved in `--work` as it goes (the decisions, then one line per valued decision):
run the same command again to continue a stopped run. Same seed, same file on CPU.
"""
from __future__ import annotations

import argparse
import functools
import json
import pathlib
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import devices
from trictrac_jax import io
from trictrac_jax.az import expectimax as X
from trictrac_jax.league import network_agents
from trictrac_jax.az.model import model_from_config
from trictrac_jax.env import Trictrac, has_choice
from trictrac_jax.state import TS_HOLD_OR_GO
from trictrac_jax.tools import positions

# (first agent, second agent) of each source's games: `network_agents.load_agent` specs.
SOURCES = (("champion:2@policy", "champion:2@policy"),
           ("champion:2@rolls:32", "champion:2@rolls:32"),
           ("champion:2@rolls:32", "greedy"),
           ("champion:2@rolls:32", "web"))
PAIRS_PER_CALL = 32  # (decision, move) pairs valued per compiled call


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--games", type=int, default=40, help="games per source (even; default 40)")
    p.add_argument("--per-source", type=int, default=260,
                   help="decisions drawn from each source (default 260)")
    p.add_argument("--hold-or-go", type=int, default=20,
                   help="of which at the hold-or-go choice (default 20)")
    p.add_argument("--network", default="champion:2", help="the evaluating network")
    p.add_argument("--top-k", type=int, default=8, help="replies considered (default 8)")
    p.add_argument("--rollouts", type=int, default=16, help="rollouts per move (default 16)")
    p.add_argument("--rollout-cap", type=int, default=200,
                   help="decisions after which a rollout stops (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default="runs/benchmark", help="work directory (resumable)")
    p.add_argument("--out", default=str(positions.PATH))
    args = p.parse_args(argv)
    if args.games < 2 or args.games % 2:
        p.error(f"--games: must be an even number >= 2, got {args.games}")
    if not 0 <= args.hold_or_go <= args.per_source:
        p.error("--hold-or-go: must be between 0 and --per-source")
    return args


# --- 1. games --------------------------------------------------------------------------------

def turn(env: Trictrac, agent_a, agent_b, colour_a, states, key):
    """The next decision states of games [G]: agent A moves where `colour_a` is to move,
    agent B elsewhere (each sees the other's games as finished: no work there)."""
    ka, kb, ks = jax.random.split(key, 3)
    keys = lambda k: jax.random.split(k, colour_a.shape[0])
    a_moves = states.current_player == colour_a
    aside = lambda skip: states.replace(terminated=states.terminated | skip)
    action = jnp.where(a_moves, jax.vmap(agent_a)(keys(ka), aside(~a_moves)),
                       jax.vmap(agent_b)(keys(kb), aside(a_moves)))
    return jax.vmap(env.step)(states, action, keys(ks))


def play_games(source, games: int, key, chunk: int = 25):
    """Every state of `games` games of `source` (A White in the first half), on the host:
    a list of State [G], one per decision number, until all games are over."""
    env = Trictrac()
    agents = [network_agents.load_agent(spec) for spec in source]
    colour_a = (jnp.arange(games) >= games // 2).astype(jnp.int32)

    @jax.jit
    def run(states, key):
        def body(states, k):
            return turn(env, *agents, colour_a, states, k), states
        return jax.lax.scan(body, states, jax.random.split(key, chunk))

    k_init, key = jax.random.split(key)
    states, seen = jax.vmap(env.init)(jax.random.split(k_init, games)), []
    while not bool(jnp.all(states.done)):
        key, k = jax.random.split(key)
        states, stacked = run(states, k)
        seen += [jax.tree.map(lambda x: x[t], stacked) for t in range(chunk)]
    return jax.device_get(seen)


def candidates(source, seen: list, colour_a):
    """The decisions of the games `seen` with a choice to make, as dicts (no values yet)."""
    length = sum(~np.asarray(s.done) for s in seen)
    out = []
    for t, s in enumerate(seen[1:], start=1):  # decision 0: White's opening roll
        for g in np.flatnonzero(np.asarray(has_choice(s))):
            mover_is_a = int(s.current_player[g]) == int(colour_a[g])
            out.append({"source": " vs ".join(source), "game": int(g), "decision": t,
                        "length": int(length[g]), "agent": source[1 - mover_is_a],
                        "state": jax.tree.map(lambda x: x[g], s)})
    return out


def draw(cands: list, count: int, hold_or_go: int, rng) -> list:
    """`count` of `cands` at random, distinct positions, `hold_or_go` of them at that
    choice (fewer if there are not as many)."""
    holds = [c for c in cands if int(c["state"]._turn_stage) == TS_HOLD_OR_GO]
    moves = [c for c in cands if int(c["state"]._turn_stage) != TS_HOLD_OR_GO]
    chosen, seen = [], set()
    for pool, want in ((holds, hold_or_go), (moves, count - min(hold_or_go, len(holds)))):
        for i in rng.permutation(len(pool)):
            if want == 0:
                break
            c = dict(pool[i], record=io.state_to_record(pool[i]["state"]))
            key = json.dumps(c["record"], sort_keys=True)
            if key not in seen:
                seen.add(key)
                chosen.append(c)
                want -= 1
    return chosen


def checked_records(chosen: list) -> list:
    """The chosen decisions as JSON-ready dicts, after checking that each record restores
    the state's legal actions and observation (what the benchmark's agents see)."""
    restored = positions.states(positions.Benchmark({}, tuple(
        {"record": c["record"]} for c in chosen)))
    out = []
    for i, c in enumerate(chosen):
        mask, obs = np.asarray(c["state"].legal_action_mask), np.asarray(c["state"].observation)
        if not (np.array_equal(mask, np.asarray(restored.legal_action_mask[i])) and
                np.array_equal(obs, np.asarray(restored.observation[i]))):
            raise AssertionError(f"record does not restore its state: {c['record']}")
        out.append({k: c[k] for k in ("record", "source", "game", "decision", "length",
                                      "agent")} | {"actions": np.flatnonzero(mask).tolist()})
    return out


def make_decisions(args) -> list:
    """Play each source's games and draw its decisions (step 1 and 2)."""
    rng, out = np.random.default_rng(args.seed), []
    for n, source in enumerate(SOURCES):
        t = time.time()
        seen = play_games(source, args.games, jax.random.PRNGKey(args.seed * 100 + n))
        colour_a = np.arange(args.games) >= args.games // 2
        cands = candidates(source, seen, colour_a)
        chosen = draw(cands, args.per_source, args.hold_or_go, rng)
        out += checked_records(chosen)
        print(f"{' vs '.join(source)}: {args.games} games, {len(cands)} decisions with a "
              f"choice, {len(chosen)} drawn ({time.time() - t:.0f} s)", flush=True)
    return out


# --- 3. values -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def valuers(network: str, top_k: int, rollouts: int, cap: int):
    """(scale, two_ply, rollout): the network's margin_scale and jitted valuations of
    PAIRS_PER_CALL (state, action) pairs (rollout: `rollouts` each, keys [pairs, rollouts])."""
    params, config = network_agents.load_network(network)
    model = model_from_config(config)
    two_ply = jax.jit(lambda s, a: X.two_ply_worths(model, params, s, a, top_k))
    repeat = lambda x: jnp.repeat(x, rollouts, axis=0)

    @jax.jit
    def rollout(s, a, keys):
        worths = X.rollout_worths(model, params, jax.tree.map(repeat, s), repeat(a),
                                  keys.reshape(-1, *keys.shape[2:]), cap)
        return worths.reshape(-1, rollouts)
    return model.margin_scale, two_ply, rollout


def value_decisions(decisions: list, args, done_file: pathlib.Path):
    """Value every legal move of `decisions` not yet in `done_file`, appending one line per
    decision to it as each is complete; returns the CPU seconds spent."""
    done = {json.loads(line)["index"] for line in done_file.open()} if done_file.exists() else set()
    pairs = [(i, a) for i, d in enumerate(decisions) if i not in done for a in d["actions"]]
    if not pairs:
        return 0.0
    scale, two_ply, rollout = valuers(args.network, args.top_k, args.rollouts, args.rollout_cap)
    states = positions.states(positions.Benchmark({}, tuple(decisions)))
    root = jax.random.PRNGKey(args.seed)
    partial: dict[int, dict] = {}
    cpu, t0 = time.process_time(), time.time()
    with done_file.open("a") as out:
        for start in range(0, len(pairs), PAIRS_PER_CALL):
            chunk = pairs[start:start + PAIRS_PER_CALL]
            padded = chunk + [chunk[-1]] * (PAIRS_PER_CALL - len(chunk))
            index = jnp.asarray([i for i, _ in padded])
            s = jax.tree.map(lambda x: x[index], states)
            a = jnp.asarray([a for _, a in padded], jnp.int32)
            # the same dice for every move of a decision: keys from the decision's index
            keys = jax.vmap(lambda i: jax.random.split(jax.random.fold_in(root, i),
                                                       args.rollouts))(index)
            value = np.asarray(two_ply(s, a)) * scale
            runs = np.asarray(rollout(s, a, keys)) * scale
            for (i, _), v, r in zip(chunk, value, runs):
                p = partial.setdefault(i, {"index": i, "value": [], "rollout": [],
                                           "rollout_se": []})
                p["value"].append(round(float(v), 4))
                p["rollout"].append(round(float(r.mean()), 4))
                p["rollout_se"].append(round(float(r.std(ddof=1) / np.sqrt(r.size)), 4))
                if len(p["value"]) == len(decisions[i]["actions"]):
                    out.write(json.dumps(partial.pop(i)) + "\n")
                    out.flush()
            print(f"{start + len(chunk)}/{len(pairs)} moves, {time.time() - t0:.0f} s",
                  flush=True)
    return time.process_time() - cpu


def composition(rows: list) -> dict:
    """Per source: decisions, of which at hold-or-go, legal moves, decisions by agent, and
    decisions in each third of their game."""
    out = {}
    for r in rows:
        c = out.setdefault(r["source"], {"decisions": 0, "hold_or_go": 0, "moves": 0,
                                         "by_agent": {}, "by_third": [0, 0, 0]})
        c["decisions"] += 1
        c["hold_or_go"] += r["record"]["turn_stage"] == TS_HOLD_OR_GO
        c["moves"] += len(r["actions"])
        c["by_agent"][r["agent"]] = c["by_agent"].get(r["agent"], 0) + 1
        c["by_third"][min(3 * r["decision"] // r["length"], 2)] += 1
    return out


def agreement(rows: list) -> dict:
    """How the rollouts judge the two-ply values: over every move, its loss by the two-ply
    values (best move's value minus its own) and the same two moves' difference by the
    rollouts; their correlation, the mean and RMS of the second minus the first (points),
    and the rollouts' mean standard error."""
    by_value, by_rollout, se = [], [], []
    for r in rows:
        v, o = np.asarray(r["value"]), np.asarray(r["rollout"])
        best = np.argmax(v)
        by_value += list(v[best] - v)
        by_rollout += list(o[best] - o)
        se += r["rollout_se"]
    by_value, by_rollout = np.asarray(by_value), np.asarray(by_rollout)
    gap = by_rollout - by_value
    return {"moves": int(gap.size), "correlation": round(float(np.corrcoef(by_value, by_rollout)[0, 1]), 3),
            "mean_difference": round(float(gap.mean()), 3),
            "rms_difference": round(float(np.sqrt(np.mean(gap ** 2))), 3),
            "mean_rollout_se": round(float(np.mean(se)), 3)}


def commit() -> str:
    """The checkout's git commit (short), or '' outside one."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=pathlib.Path(__file__).parent).stdout.strip()
    except OSError:
        return ""


def main(argv=None) -> int:
    args = parse_args(argv)
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    decisions_file, values_file = work / "decisions.jsonl", work / "values.jsonl"
    costs_file = work / "cpu_seconds.json"
    costs = json.loads(costs_file.read_text()) if costs_file.exists() else {}
    if decisions_file.exists():
        decisions = [json.loads(line) for line in decisions_file.open()]
    else:
        cpu = time.process_time()
        decisions = make_decisions(args)
        costs["games"] = time.process_time() - cpu
        decisions_file.write_text("".join(json.dumps(d) + "\n" for d in decisions))
        costs_file.write_text(json.dumps(costs))
    print(f"{len(decisions)} decisions, {sum(len(d['actions']) for d in decisions)} moves",
          flush=True)
    spent = value_decisions(decisions, args, values_file)
    costs["values"] = costs.get("values", 0.0) + spent
    costs_file.write_text(json.dumps(costs))
    valued = {v["index"]: v for v in map(json.loads, values_file.open())}
    header = {"command": " ".join(["python -m scripts.benchmark_positions",
                                   *(sys.argv[1:] if argv is None else argv)]),
              "commit": commit(), "seed": args.seed, "games_per_source": args.games,
              "sources": [" vs ".join(s) for s in SOURCES], "network": args.network,
              "top_k": args.top_k, "rollouts": args.rollouts, "rollout_cap": args.rollout_cap,
              "cpu_seconds": {k: round(v) for k, v in costs.items()},
              "units": "points to come for the mover (value x margin_scale)"}
    rows = [d | {k: valued[i][k] for k in ("value", "rollout", "rollout_se")}
            for i, d in enumerate(decisions)]
    header |= {"composition": composition(rows), "agreement": agreement(rows)}
    path = positions.write(args.out, header, rows)
    print(f"wrote {path}: {len(rows)} decisions ({path.stat().st_size / 1e3:.0f} kB); CPU "
          f"seconds {header['cpu_seconds']}")
    return 0


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
