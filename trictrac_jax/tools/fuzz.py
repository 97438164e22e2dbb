"""Fuzzing the environment: random and adversarial inputs, invariants checked after every step.

    python -m trictrac_jax.tools.fuzz --steps 1000000 --batch 1024

Every game of the batch is given, at every step, one of `env.step`, `env.step_deterministic`
or `env.chance_step`, whatever node it is at, with mostly legal actions and some illegal or
out-of-range ones (each game draws its rate of bad inputs when it starts), and dice outcomes
that are sometimes out of range. Finished games are kept a while (stepping them must change
nothing), then restarted. After every step each game is checked against `INVARIANTS`; the
whole run is one jitted `lax.scan` that counts violations per invariant.
"""
from __future__ import annotations

import argparse
import functools
import sys

import jax
import jax.numpy as jnp

from trictrac_jax import devices
from trictrac_jax import agents
from trictrac_jax.env import NUM_CHANCE_OUTCOMES, WINNING_HOLES, Trictrac, observe
from trictrac_jax.state import (INITIAL_BOARD, NUM_ACTIONS, NUM_CHECKERS, STAGE_ENDED,
                                STAGE_IN_GAME, TS_HOLD_OR_GO, TS_MOVE, TS_ROLL_DICE, State)

INVARIANTS = (
    "checkers",         # 1..15 checkers a side on the board
    "checkers_return",  # a side's checkers only come back with a new setting (initial board)
    "ranges",           # every field within its range
    "holes_decrease",   # holes never decrease
    "flags",            # terminated, truncated, is_chance agree with the game fields
    "legal_mask",       # non-empty at decision nodes (Go iff hold-or-go), empty at chance nodes, full at the end
    "observation",      # equals observe(state)
    "rewards",          # zero-sum, +1 / -1 on the step that ends the game, zero otherwise
    "absorbing",        # a finished game never changes
    "step_count",       # counts the legal decisions taken
    "bad_inputs",       # the documented answers: a no-op, or the forfeit of an illegal action
)
COVERAGE = ("decision_nodes", "chance_nodes", "finished", "illegal_actions", "bad_outcomes",
            "wins", "forfeits", "truncations")

STEP, DECIDE, ROLL = range(3)  # which function a game is given
OP_LOGITS = jnp.log(jnp.array([0.7, 0.15, 0.15]))
BAD_RATES = jnp.array([0.0, 0.001, 0.01, 0.1])  # from games played out to quick forfeits
BAD_ACTIONS = jnp.array([-5, -1, NUM_ACTIONS, 999, 2**31 - 1, -2**31], jnp.int32)
BAD_OUTCOMES = jnp.array([-1, NUM_CHANCE_OUTCOMES, 40, 999, -2**31], jnp.int32)
BAD_OUTCOME_RATE = 0.1
RESTART_RATE = 0.1  # per step, for a finished game
MAX_HOLES = 2 * WINNING_HOLES  # loose: quirk 7 lets holes pass 12 (16 in the golden data)


def _inputs(key, state: State, bad_rate):
    """(function, action, outcome) for one game: the action uniform over the legal ones, or,
    at rate `bad_rate`, half the time an illegal index, half the time one out of range."""
    k_op, k_legal, k_illegal, k_bad, k_kind, k_outcome, k_bad_outcome, k_odd = (
        jax.random.split(key, 8))
    op = jax.random.categorical(k_op, OP_LOGITS)
    legal = agents.random_agent(k_legal, state)  # NUM_ACTIONS (out of range) at chance nodes
    illegal = agents.random_agent(
        k_illegal, state.replace(legal_action_mask=~state.legal_action_mask))
    out_of_range = jax.random.choice(k_bad, BAD_ACTIONS)
    u = jax.random.uniform(k_kind)
    action = jnp.where(u < bad_rate / 2, illegal, jnp.where(u < bad_rate, out_of_range, legal))
    outcome = jnp.where(jax.random.uniform(k_odd) < BAD_OUTCOME_RATE,
                        jax.random.choice(k_bad_outcome, BAD_OUTCOMES),
                        jax.random.randint(k_outcome, (), 0, NUM_CHANCE_OUTCOMES))
    return op, action, outcome


def _unchanged(a: State, b: State):
    """Whether two states agree on every field but the rewards."""
    zero = jnp.zeros(2, jnp.float32)
    same = jax.tree.map(jnp.array_equal, a.replace(rewards=zero), b.replace(rewards=zero))
    return jnp.all(jnp.stack(jax.tree.leaves(same)))


def _on_board(board):
    """int32[2]: White's and Black's checkers on the board."""
    board = board.astype(jnp.int32)
    return jnp.stack([jnp.sum(jnp.maximum(board, 0)), jnp.sum(jnp.maximum(-board, 0))])


def violations(env: Trictrac, prev: State, op, action, outcome, nxt: State):
    """bool[len(INVARIANTS)]: which invariants the step `prev` -> `nxt` of one game breaks,
    given the function `op` (STEP, DECIDE, ROLL) with `action` or `outcome` it was given."""
    finished = prev.done
    decision = ~finished & ~prev.is_chance
    in_range = (action >= 0) & (action < NUM_ACTIONS)
    legal = in_range & prev.legal_action_mask[jnp.clip(action, 0, NUM_ACTIONS - 1)]
    decided = (op != ROLL) & decision  # a decision was due
    # a truncated afterstate still takes its roll, as in `step`
    absorbing = prev.terminated | (prev.truncated & ~prev.is_chance)
    no_op = ((op == DECIDE) & prev.is_chance) | ((op == ROLL) & ~(
        prev.is_chance & (outcome >= 0) & (outcome < NUM_CHANCE_OUTCOMES)))
    done = nxt.done
    mover = prev.current_player

    count = _on_board(nxt._board)
    returned = jnp.any(count > _on_board(prev._board))
    in_range_fields = jnp.stack([
        (nxt.current_player == 0) | (nxt.current_player == 1),
        (nxt._stage == STAGE_IN_GAME) | (nxt._stage == STAGE_ENDED),
        (nxt._turn_stage >= TS_ROLL_DICE) & (nxt._turn_stage <= TS_MOVE),
        jnp.all((nxt._dice >= 1) & (nxt._dice <= 6)),
        jnp.all((nxt._points >= 0) & (nxt._points < 12)),  # 12 make a hole
        jnp.all((nxt._holes >= 0) & (nxt._holes <= MAX_HOLES)),
        jnp.all(nxt._dice_roll_count >= 0) & jnp.all(nxt._dice_points >= 0),
        (nxt._step_count >= 0) & (nxt._step_count <= (env.max_steps or 2**31 - 1)),
        jnp.all(nxt._can_big_bredouille),
    ])
    mask = nxt.legal_action_mask
    ts = nxt._turn_stage
    mask_ok = jnp.where(
        done, jnp.all(mask),
        jnp.where(nxt.is_chance, ~jnp.any(mask) & (ts == TS_ROLL_DICE),
                  jnp.any(mask) & ~mask[0] & (mask[1] == (ts == TS_HOLD_OR_GO))
                  & ((ts == TS_HOLD_OR_GO) | (ts == TS_MOVE))))
    ended = nxt.terminated & ~prev.terminated
    win_loss = jnp.sort(nxt.rewards)
    forfeit = (nxt.terminated & (nxt.rewards[mover] == -1) & (nxt.rewards[1 - mover] == 1)
               & _unchanged(prev, nxt.replace(terminated=prev.terminated,
                                              _is_chance=prev._is_chance,
                                              legal_action_mask=prev.legal_action_mask)))
    ok = {
        "checkers": jnp.all((count >= 1) & (count <= NUM_CHECKERS))
                    & jnp.all(jnp.abs(nxt._board.astype(jnp.int32)) <= NUM_CHECKERS),
        "checkers_return": ~returned | jnp.array_equal(nxt._board, INITIAL_BOARD),
        "ranges": jnp.all(in_range_fields),
        "holes_decrease": jnp.all(nxt._holes >= prev._holes),
        "flags": ~(nxt.terminated & nxt.truncated)
                 & (~nxt.is_chance | (~nxt.terminated & (ts == TS_ROLL_DICE)))
                 & ((nxt._stage != STAGE_ENDED) | nxt.terminated),
        "legal_mask": mask_ok,
        "observation": jnp.array_equal(nxt.observation, observe(nxt)),
        "rewards": jnp.where(ended, jnp.array_equal(win_loss, jnp.array([-1.0, 1.0])),
                             ~jnp.any(nxt.rewards)),
        "absorbing": ~absorbing | (_unchanged(prev, nxt) & ~jnp.any(nxt.rewards)),
        "step_count": nxt._step_count == prev._step_count + (decided & legal),
        "bad_inputs": jnp.where(no_op, _unchanged(prev, nxt) & ~jnp.any(nxt.rewards),
                                ~(decided & ~legal) | forfeit),
    }
    return ~jnp.stack([ok[name] for name in INVARIANTS])


def _coverage(prev: State, op, action, outcome, nxt: State):
    """bool[len(COVERAGE)]: what this step of one game exercised."""
    finished = prev.done
    illegal = ~prev.legal_action_mask[jnp.clip(action, 0, NUM_ACTIONS - 1)] | (action < 0) | (
        action >= NUM_ACTIONS)
    ended = nxt.terminated & ~prev.terminated
    return jnp.stack([
        ~finished & ~prev.is_chance, ~finished & prev.is_chance, finished,
        (op != ROLL) & ~finished & ~prev.is_chance & illegal,
        (op != DECIDE) & ((outcome < 0) | (outcome >= NUM_CHANCE_OUTCOMES)),
        ended & (nxt._stage == STAGE_ENDED), ended & (nxt._stage != STAGE_ENDED),
        nxt.truncated & ~prev.truncated,
    ])


def fuzz(env: Trictrac, key, iterations: int, batch: int):
    """(int32[len(INVARIANTS)] violations, int32[len(COVERAGE)] coverage) counted over
    `iterations` steps of `batch` games."""
    def start(key):
        """New games, and the rate of bad inputs of each."""
        k_init, k_rate = jax.random.split(key)
        rate = BAD_RATES[jax.random.randint(k_rate, (batch,), 0, BAD_RATES.shape[0])]
        return jax.vmap(env.init)(jax.random.split(k_init, batch)), rate

    def pick(which, a, b):  # per game
        return jax.tree.map(
            lambda x, y: jnp.where(which.reshape(which.shape + (1,) * (x.ndim - 1)), x, y), a, b)

    def body(carry, key):
        state, bad_rate, counts, seen = carry
        k_start, k_restart, k_inputs, k_step = jax.random.split(key, 4)
        finished = state.done
        restart = finished & (jax.random.uniform(k_restart, (batch,)) < RESTART_RATE)
        state, bad_rate = pick(restart, start(k_start), (state, bad_rate))
        op, action, outcome = jax.vmap(_inputs)(jax.random.split(k_inputs, batch), state,
                                                bad_rate)
        nxt = pick(op == STEP, jax.vmap(env.step)(state, action, jax.random.split(k_step, batch)),
                   pick(op == DECIDE, jax.vmap(env.step_deterministic)(state, action),
                        jax.vmap(env.chance_step)(state, outcome)))
        broken = jax.vmap(functools.partial(violations, env))(state, op, action, outcome, nxt)
        covered = jax.vmap(_coverage)(state, op, action, outcome, nxt)
        return (nxt, bad_rate, counts + jnp.sum(broken, 0, jnp.int32),
                seen + jnp.sum(covered, 0, jnp.int32)), None

    k_start, key = jax.random.split(key)
    init = (*start(k_start), jnp.zeros(len(INVARIANTS), jnp.int32),
            jnp.zeros(len(COVERAGE), jnp.int32))
    _, _, counts, seen = jax.lax.scan(body, init, jax.random.split(key, iterations))[0]
    return counts, seen


run = jax.jit(fuzz, static_argnums=(0, 2, 3))


def main(argv=None) -> int:
    """Runs the fuzzer with the options in `argv` (default: the command line) and prints its
    counts; returns 0 when no invariant was violated, else 1."""
    parser = argparse.ArgumentParser(prog="python -m trictrac_jax.tools.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1_000_000,
                        help="game steps in all (rounded up to a multiple of --batch)")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--max-steps", type=int, default=100,
                        help="truncation of the environment (low enough to be reached)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    iterations = -(-args.steps // args.batch)
    counts, seen = run(Trictrac(max_steps=args.max_steps), jax.random.PRNGKey(args.seed),
                       iterations, args.batch)
    print(f"steps checked: {iterations * args.batch} ({iterations} x {args.batch} games)")
    print("violations:")
    for name, n in zip(INVARIANTS, counts.tolist()):
        print(f"  {name:<16} {n}")
    print("coverage (game steps):")
    for name, n in zip(COVERAGE, seen.tolist()):
        print(f"  {name:<16} {n}")
    return int(any(counts.tolist()))


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
