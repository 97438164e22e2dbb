"""A rating ladder: every pair of agents plays a match, both seats equally; Elo ratings with
95% intervals from a Bradley-Terry fit on all the results (`trictrac_jax.league.ladder`).

    python train/ladder.py random first greedy:8 greedy --games 40
    python train/ladder.py random greedy runs/long2 champion --games 100 --out ladder

An AGENT is anything `network_agents.load_agent` accepts: random, first, greedy (every legal
action), greedy:K (the first K legal actions by index), a run or checkpoint directory.
Checkpoint agents play the 1-ply lookahead over their policy's K likeliest moves
(`--lookahead K`, 0: the raw policy; `--rolls`: each move valued over the 36 rolls). Games
are truncated after `--max-steps` decisions and count as draws, half a win to each side.
Writes to DIR: ladder.md (the command and the table), pairs.json (the raw results of each
pair, saved as each pair finishes) and ladder.png (if matplotlib is installed). A ladder run
again into the same DIR with the same settings (games, seed, lookahead, rolls, max steps)
plays only the pairs that pairs.json lacks: a stopped ladder continues, and a ladder with one
more agent plays only that agent's matches. A pair's games depend on the seed and the two
agents' names alone, so a continued ladder gives what one run would have. A name stands for
what it loaded when its pairs were played (`champion` is the newest shipped champion): delete
pairs.json, or name the agents exactly (`champion:1`), when that changes.
"""
from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import sys
import time
import zlib

import jax

from trictrac_jax import devices
from trictrac_jax.league import ladder as L
from trictrac_jax.league import network_agents
from trictrac_jax.az.checkpoint import CheckpointError
from trictrac_jax.league.matches import play_match, summarise
from trictrac_jax.env import Trictrac


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("agents", nargs="+", metavar="AGENT")
    p.add_argument("--games", type=int, default=100,
                   help="games per pair (even: both seats equally; default 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="ladder", metavar="DIR", help="output directory")
    p.add_argument("--lookahead", type=int, default=32, metavar="K",
                   help="checkpoint agents' 1-ply search over K moves (0: raw policy; "
                        "default 32)")
    p.add_argument("--rolls", action="store_true",
                   help="checkpoint agents value each lookahead move over the 36 rolls after it")
    p.add_argument("--max-steps", type=int, default=1000,
                   help="decisions before a game is truncated (a draw; default 1000)")
    p.add_argument("--anchor", default=None,
                   help="the agent rated 0 (default: random if listed, else the first)")
    args = p.parse_args(argv)
    if len(set(args.agents)) != len(args.agents) or len(args.agents) < 2:
        p.error("AGENT: at least two, all different")
    if args.games < 2 or args.games % 2:
        p.error(f"--games: must be an even number >= 2, got {args.games}")
    if args.rolls and not args.lookahead:
        p.error("--rolls: needs --lookahead K > 0")
    if args.anchor is not None and args.anchor not in args.agents:
        p.error(f"--anchor: {args.anchor!r} is not among the agents")
    return args


def pair_key(key, a: str, b: str):
    """The match key of agents named `a` (White in the first half) and `b`: from the names
    alone, so the result does not depend on the other agents or their order."""
    return jax.random.fold_in(key, zlib.crc32(f"{a} vs {b}".encode()) & 0x7FFFFFFF)


def play_round_robin(names: list[str], agents: list, env: Trictrac, games: int, key,
                     done: dict | None = None, save=lambda pairs: None,
                     log=print) -> list[L.Pair]:
    """Every pair (i < j) plays `games` games, i White in the first half. `done` maps
    (name_i, name_j) to a result (wins_i, wins_j, draws) already played: reused, not replayed.
    `save(pairs)` after each pair played."""
    done = done or {}
    pairs = []
    for i, j in itertools.combinations(range(len(agents)), 2):
        if (names[i], names[j]) in done:
            pairs.append(L.Pair(i, j, *done[names[i], names[j]]))
            continue
        t0 = time.time()
        match = jax.jit(lambda key: play_match(env, agents[i], agents[j], key, games))
        result = summarise(match(pair_key(key, names[i], names[j])))
        pairs.append(L.Pair(i, j, result.wins, result.losses, result.draws))
        save(pairs)
        log(f"  {i} vs {j}: {result.summary()}, {time.time() - t0:.0f}s")
    return pairs


def settings(args) -> dict:
    return {"games_per_pair": args.games, "seed": args.seed, "lookahead": args.lookahead,
            "rolls": args.rolls, "max_steps": args.max_steps}


def played(path: pathlib.Path, args, log=print) -> dict:
    """The results in an earlier pairs.json played with the same settings, by pair of names
    ({} when there is none, or its settings differ)."""
    if not path.exists():
        return {}
    try:
        saved = json.loads(path.read_text())
        same = all(saved[k] == v for k, v in settings(args).items())
        results = {(p["a"], p["b"]): (p["wins_a"], p["wins_b"], p["draws"])
                   for p in saved["pairs"]}
    except (ValueError, KeyError, TypeError) as e:
        log(f"{path}: not read ({type(e).__name__}: {e}); every pair is played")
        return {}
    if not same:
        log(f"{path}: other settings; every pair is played")
        return {}
    log(f"{path}: {len(results)} pairs already played with these settings are reused")
    return results


def write_pairs(path: pathlib.Path, args, anchor: str, pairs: list[L.Pair],
                done: dict) -> None:
    """pairs.json: the settings, and the pairs played now and earlier (written whole, then
    renamed: a stop mid-write leaves the previous file)."""
    results = dict(done)
    results.update({(args.agents[p.a], args.agents[p.b]): (p.wins, p.losses, p.draws)
                    for p in pairs})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "agents": args.agents, **settings(args), "anchor": anchor,
        "pairs": [{"a": a, "b": b, "wins_a": w, "wins_b": l, "draws": d}
                  for (a, b), (w, l, d) in results.items()]}, indent=1))
    tmp.replace(path)


def plot(names, ratings: L.Ratings, path: pathlib.Path) -> bool:
    """The ratings with their intervals, best on top; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    order = sorted(range(len(names)), key=lambda i: ratings.elo[i])
    elo = ratings.elo[order]
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(names) + 1.2))
    ax.errorbar(elo, range(len(order)), xerr=[elo - ratings.lo[order], ratings.hi[order] - elo],
                fmt="o", capsize=4)
    ax.set_yticks(range(len(order)), [names[i] for i in order])
    ax.set_xlabel("Elo (95% interval)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None, log=print):
    args = parse_args(argv)
    try:
        play = network_agents.Play(lookahead=args.lookahead, rolls=args.rolls)
        agents = [network_agents.load_agent(a, play) for a in args.agents]
    except (CheckpointError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    log("agents: " + ", ".join(f"{i} {a}" for i, a in enumerate(args.agents)))
    env = Trictrac(max_steps=args.max_steps)
    anchor = args.anchor or ("random" if "random" in args.agents else args.agents[0])
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done = played(out / "pairs.json", args, log)
    pairs = play_round_robin(args.agents, agents, env, args.games,
                             jax.random.PRNGKey(args.seed), done,
                             lambda pairs: write_pairs(out / "pairs.json", args, anchor,
                                                       pairs, done), log)
    write_pairs(out / "pairs.json", args, anchor, pairs, done)
    ratings = L.fit(len(args.agents), pairs, anchor=args.agents.index(anchor))

    table = L.table(args.agents, ratings, pairs)
    command = "python train/ladder.py " + " ".join(sys.argv[1:] if argv is None else argv)
    over_rolls = " over the rolls" if args.rolls else ""
    header = (f"`{command}` on {jax.devices()[0].device_kind}.\n\n"
              f"Round robin, {args.games} games per pair (both seats equally), seed "
              f"{args.seed}, checkpoint lookahead {args.lookahead}{over_rolls}, truncated after "
              f"{args.max_steps} decisions (a draw, half a win each); Elo from a "
              f"Bradley-Terry fit, {anchor} = 0, 95% intervals.\n\n")
    (out / "ladder.md").write_text(header + table + "\n")
    log(table)
    if not plot(args.agents, ratings, out / "ladder.png"):
        log("matplotlib is not installed: no plot")
    log(f"written to {out}/")
    return 0


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
