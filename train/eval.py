"""Win rate of a trained checkpoint against an opponent, with a 95% (Wilson) interval.

    python train/eval.py --checkpoint runs/quick --opponent random --games 400
    python train/eval.py --checkpoint runs/quick/checkpoints/40 --opponent greedy:8 --games 100
    python train/eval.py --checkpoint runs/a --opponent runs/b --games 200 --simulations 16
    python train/eval.py --checkpoint runs/quick --opponent greedy --games 200 --lookahead 32
    python train/eval.py --checkpoint champion --opponent greedy --games 1000 --lookahead 32
    python train/eval.py --checkpoint champion --opponent greedy --games 1000 --lookahead 32 --rolls
    python train/eval.py --checkpoint champion@search:64 --opponent champion@rolls:32 --games 1000
    python train/eval.py --checkpoint web --opponent greedy --games 200

CHECKPOINT and a network OPPONENT are 'champion' (the newest shipped), 'champion:N', a
network file (*.msgpack), a run directory (its best checkpoint) or one checkpoint directory;
each checkpoint is named on stderr as it loads (`loaded runs/quick/checkpoints/85 (best: vs
random 0.990)`). Networks play as --lookahead/--rolls/--simulations say, or as their own
`@PLAY` (policy, lookahead:K, rolls:K, search:N). CHECKPOINT may also be a baseline (random,
first, greedy, greedy:K, web), to match two bots. Both seats are played equally; games are
truncated after the run's env.max_steps decisions (1000 for two bots) and then count as not
won.
"""
from __future__ import annotations

import argparse
import sys
import time

import jax

from trictrac_jax import agents, devices
from trictrac_jax.league import network_agents
from trictrac_jax.az.checkpoint import CheckpointError
from trictrac_jax.league.matches import play_match, summarise
from trictrac_jax.env import Trictrac


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True,
                   help="champion (the newest shipped network), champion:N, a network file, a "
                        "run or checkpoint directory; NETWORK@PLAY to say how it plays; or a "
                        "baseline (random, first, greedy, greedy:K, web)")
    p.add_argument("--opponent", default="random",
                   help="random | first | greedy (every legal action) | greedy:K (the first K "
                        "legal actions by index) | web | a network as --checkpoint")
    p.add_argument("--games", type=int, default=200, help="games (even: both seats equally)")
    p.add_argument("--simulations", type=int, default=0,
                   help="search simulations per move for checkpoint agents (0: raw policy)")
    p.add_argument("--lookahead", type=int, default=0, metavar="K",
                   help="1-ply search for checkpoint agents: the best learned afterstate value "
                        "among the policy's K most likely actions (0: off)")
    p.add_argument("--rolls", action="store_true",
                   help="with --lookahead: value each move over the 36 rolls after it (the "
                        "network's values of the rolled positions; 36x the evaluations)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.games < 2 or args.games % 2:
        p.error(f"--games: must be an even number >= 2, got {args.games}")
    if args.simulations < 0:
        p.error(f"--simulations: must be >= 0, got {args.simulations}")
    if args.rolls and not args.lookahead:
        p.error("--rolls: needs --lookahead K > 0")
    return args


def bots_match(baseline: str, opponent: str, games: int, play: network_agents.Play):
    """`key -> MatchResult` of `baseline` against `opponent` (a network opponent plays as
    its `@PLAY` says, else as `play`), on the default env, jitted."""
    agent, other = network_agents.load_agent(baseline), network_agents.load_agent(opponent, play)
    outcomes = jax.jit(lambda key: play_match(Trictrac(), agent, other, key, games))
    return lambda key: summarise(outcomes(key))


def main(argv=None):
    args = parse_args(argv)
    try:
        name, own = network_agents.split_spec(args.checkpoint)
        play = network_agents.Play(lookahead=args.lookahead, rolls=args.rolls,
                             simulations=args.simulations).check()
        if agents.baseline(name) is not None:
            match = bots_match(args.checkpoint, args.opponent, args.games, play)
        else:
            params, config = network_agents.load_network(name)
            network_match = network_agents.evaluator(config, args.opponent, args.games,
                                                     own or play, play)
            match = lambda key: network_match(params, key)
    except (CheckpointError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t0 = time.time()
    result = match(jax.random.PRNGKey(args.seed))
    print(f"{args.checkpoint} vs {args.opponent}: win rate {result.summary()}, 95% Wilson "
          f"interval; {time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
