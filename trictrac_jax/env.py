"""The environment: init, step, and the split of a step into decision and chance.

The game is a set of pure functions of one `State` (use `jax.vmap` for a batch):

    init(key)                                  a new game, White to decide after his roll
    step(state, action, key, max_steps)        step_deterministic, then chance_step
    step_deterministic(state, action, max_steps)   the decision: an afterstate
    chance_step(state, outcome, max_steps)     the dice of outcome 0..35, scored
    every_roll(afterstates, max_steps, distinct)   a batch after each roll (36, or 21)

and `Trictrac` is a thin class over them with pgx's `Env` interface, which holds
`max_steps` and calls each function compiled (`step_jit`, ...: `jax.jit`, once per
`max_steps`): called on one state outside `jit` that is one compiled call rather than
hundreds of dispatched operations; inside a user's `jit` or `vmap` it is traced as part of
it. A step, `Trictrac.step` -> `step_jit` -> `step` -> `_decide_and_roll` (chunked on the
CPU, lowering.py) -> `_deterministic` and `_chance` -> the rules (`_decide`, `_roll`:
the moves package, scoring.py).

The user only sees decision nodes (`turn_stage` Move or HoldOrGoChoice), chance nodes
(waiting for the dice, `is_chance`, only between `step_deterministic` and `chance_step`) and
terminal states.

Conventions (as pgx):
* `rewards` are those of the last transition, by colour: +1 / -1 when a game is won.
* An illegal action ends the game: the player who took it loses (-1, the other +1).
* Stepping a terminated or truncated state returns it unchanged with zero rewards.
* At terminal states `legal_action_mask` is all True (so that normalising a policy over it
  never divides by zero); at chance nodes it is all False.

Ours, for inputs that fit no node (no error can be raised under `jit`): `step_deterministic`
at a chance node, and `chance_step` anywhere but at a chance node or with an outcome outside
0..35, return the state unchanged with zero rewards. `step` is `step_deterministic` then
`chance_step`: at a chance node it ignores the action and rolls the dice.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import board as B
from trictrac_jax import moves
from trictrac_jax import scoring
from trictrac_jax.arrays import fold, of_colour, select_tree, uniform_below
from trictrac_jax.lowering import cpu_chunked, kernel_boundary
from trictrac_jax.state import (INITIAL_BOARD, NUM_ACTIONS, OBS_SIZE, STAGE_ENDED,
                                STAGE_IN_GAME, TS_HOLD_OR_GO, TS_MARK_POINTS, TS_MOVE,
                                TS_ROLL_DICE, State)

WINNING_HOLES = 12
DEFAULT_MAX_STEPS = 1000
NUM_CHANCE_OUTCOMES = 36  # the ordered rolls of two dice: outcome k is (k // 6 + 1, k % 6 + 1)
# Outcome k is the ordered roll (k // 6 + 1, k % 6 + 1).
CHANCE_DICE = np.stack(np.divmod(np.arange(36, dtype=np.int32), 6), -1) + 1
CHANCE_PROBS = np.full(NUM_CHANCE_OUTCOMES, 1.0 / NUM_CHANCE_OUTCOMES, np.float32)
# The 21 distinct rolls (the outcomes with the lower die first) and their probabilities: a
# roll and its mirror (2-1, 1-2) score alike and allow the same positions (tests/test_rate.py);
# only the order of `_dice`, hence the observation and the action numbers, differ.
DISTINCT_OUTCOMES = np.flatnonzero(CHANCE_DICE[:, 0] <= CHANCE_DICE[:, 1]).astype(np.int32)
DISTINCT_PROBS = (np.where(CHANCE_DICE[DISTINCT_OUTCOMES, 0] == CHANCE_DICE[DISTINCT_OUTCOMES, 1],
                           1.0, 2.0) / NUM_CHANCE_OUTCOMES).astype(np.float32)


def roll_probs(distinct: bool = False) -> np.ndarray:
    """float32[R]: the probabilities of `every_roll`'s rolls (R = 36, or 21 if `distinct`)."""
    return DISTINCT_PROBS if distinct else CHANCE_PROBS


def dice_to_outcome(dice):
    """int32[...]: the chance outcome 0..35 of each ordered roll of `dice` int32[..., 2]."""
    return (dice[..., 0] - 1) * 6 + dice[..., 1] - 1


def sample_outcome(key):
    """A chance outcome 0..35 (two fair dice)."""
    return uniform_below(key, NUM_CHANCE_OUTCOMES)


# --- the game's functions ------------------------------------------------------------------

def new_game() -> State:
    """The `State` of one game before White's first roll (a chance node)."""
    zeros = jnp.zeros(2, jnp.int32)
    return State(
        current_player=jnp.int32(0), observation=jnp.zeros(OBS_SIZE, jnp.float32),
        rewards=jnp.zeros(2, jnp.float32), terminated=jnp.bool_(False),
        truncated=jnp.bool_(False), legal_action_mask=jnp.zeros(NUM_ACTIONS, bool),
        _is_chance=jnp.bool_(True), _step_count=jnp.int32(0),
        _board=jnp.asarray(INITIAL_BOARD), _stage=jnp.int32(STAGE_IN_GAME), _turn_stage=jnp.int32(TS_ROLL_DICE),
        _dice=zeros, _points=zeros, _holes=zeros, _can_bredouille=jnp.ones(2, bool),
        _can_big_bredouille=jnp.ones(2, bool), _dice_roll_count=zeros, _dice_points=zeros)


# The game after each of White's 36 first rolls, as `roll_first_positions` computes it
# (tests/test_env.py checks that they agree). Scoring a roll is most of what a step costs to
# compile, and `init` would otherwise compile it once more, on its first call.
FIRST_POSITIONS_FILE = pathlib.Path(__file__).parent / "data" / "first_positions.npz"


def roll_first_positions() -> State:
    """State[36]: the game after each of White's possible first rolls, computed."""
    return jax.jit(jax.vmap(lambda outcome: chance_step(new_game(), outcome)))(
        jnp.arange(NUM_CHANCE_OUTCOMES))


def write_first_positions(path=FIRST_POSITIONS_FILE):
    """Store `roll_first_positions()` in `path` (after a change of the rules or the State:
    `python -c "from trictrac_jax import env; env.write_first_positions()"`)."""
    fields = jax.device_get(roll_first_positions())
    np.savez_compressed(path, **{name: getattr(fields, name) for name in _state_fields()})


def _state_fields() -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(State))


@functools.lru_cache(maxsize=1)
def first_positions() -> State:
    """State[36] of numpy arrays: the game after each of White's possible first rolls, read
    from `FIRST_POSITIONS_FILE`."""
    with np.load(FIRST_POSITIONS_FILE) as stored:
        missing = set(_state_fields()) - set(stored.files)
        if missing:
            raise ValueError(f"{FIRST_POSITIONS_FILE} lacks the State fields {sorted(missing)}: "
                             "rewrite it with env.write_first_positions()")
        return State(**{name: stored[name] for name in _state_fields()})


def init(key) -> State:
    """A new game, White to play, after White's first roll (sampled with `key`): one of
    the `first_positions`, looked up."""
    outcome = sample_outcome(key)
    return jax.tree.map(lambda x: jnp.asarray(x)[outcome], first_positions())


def step(state: State, action, key, max_steps: int | None = DEFAULT_MAX_STEPS) -> State:
    """Take `action` at a decision node, then roll the dice with `key` if needed (at a
    chance node: only roll)."""
    return _decide_and_roll(state, action, key, max_steps=max_steps)


@cpu_chunked(static_argnames=("max_steps",))
def _decide_and_roll(state: State, action, key, max_steps: int | None) -> State:
    """`step`; batches of several CPU chunks run chunk by chunk (lowering.py)."""
    after = _deterministic(state, action, max_steps, observed=False)
    # `after` is a chance node, whose mask the roll writes, or a finished game, whose mask is
    # all True (state.py): stated, so that the step does not read the old state's mask
    after = after.replace(legal_action_mask=jnp.ones(NUM_ACTIONS, bool))
    rolled = _chance(after, sample_outcome(key), max_steps, observed=False)
    # observed once, on the final state, rather than after each half
    return rolled.replace(rewards=after.rewards + rolled.rewards, observation=observe(rolled))


def step_deterministic(state: State, action, max_steps: int | None = DEFAULT_MAX_STEPS
                       ) -> State:
    """Take `action` at a decision node; the result waits for the dice (`is_chance`)
    unless the game ended. Elsewhere a no-op with zero rewards."""
    return _deterministic(state, action, max_steps, observed=True)


def chance_step(state: State, outcome, max_steps: int | None = DEFAULT_MAX_STEPS) -> State:
    """Roll the dice of chance outcome `outcome` (0..35) at a chance node. Elsewhere, or
    for an outcome outside 0..35, a no-op with zero rewards."""
    return _chance(state, outcome, max_steps, observed=True)


def _deterministic(state: State, action, max_steps: int | None, observed: bool) -> State:
    """`step_deterministic`, the observation left as it was unless `observed`."""
    action = jnp.asarray(action, jnp.int32)
    legal = state.legal_action_mask[jnp.clip(action, 0, NUM_ACTIONS - 1)]
    legal &= (action >= 0) & (action < NUM_ACTIONS)
    played = _decide(state, action)
    played = played.replace(_step_count=state._step_count + 1)
    played = _finish(played, max_steps, rolled=False, observed=observed)
    # At a chance node no decision is due: nobody forfeits, nothing happens. (`keep` is read
    # by the selects of every field, in many kernels: computed once, they no longer read
    # the old state's flags after the new ones are written, which made XLA copy them.)
    keep = kernel_boundary(state.done | state.is_chance)
    return select_tree(keep, state.replace(rewards=jnp.zeros(2, jnp.float32)),
                       select_tree(legal, played, _forfeit(state)))


def _chance(state: State, outcome, max_steps: int | None, observed: bool) -> State:
    """`chance_step`, the observation left as it was unless `observed`."""
    outcome = jnp.asarray(outcome, jnp.int32)
    valid = (outcome >= 0) & (outcome < NUM_CHANCE_OUTCOMES)
    # an outcome out of range indexes some other outcome's dice: that roll is discarded
    rolled = _finish(_roll(state, jnp.asarray(CHANCE_DICE)[outcome]), max_steps, rolled=True,
                     observed=observed)
    keep = state.replace(rewards=jnp.zeros(2, jnp.float32))
    return select_tree(state.is_chance & valid, rolled, keep)


def every_roll(afterstates: State, max_steps: int | None = DEFAULT_MAX_STEPS,
               distinct: bool = False) -> tuple[State, State]:
    """(repeated, rolled), both [P * R]: each of `afterstates` [P] once per roll, and
    the position after that roll; an afterstate's R rolls are together, in outcome order,
    weighted by `roll_probs(distinct)`: the 36 ordered rolls, or the 21 distinct ones."""
    outcomes = DISTINCT_OUTCOMES if distinct else np.arange(NUM_CHANCE_OUTCOMES, dtype=np.int32)
    repeated = jax.tree.map(lambda x: jnp.repeat(x, outcomes.size, axis=0), afterstates)
    outcomes = jnp.tile(outcomes, afterstates.current_player.shape[0])
    roll = functools.partial(chance_step, max_steps=max_steps)
    return repeated, jax.vmap(roll)(repeated, outcomes)


def restore(state: State, max_steps: int | None = DEFAULT_MAX_STEPS) -> State:
    """Recompute the derived fields of a state given only its game fields (a position
    loaded from the reference engine, say): legal actions, observation, flags."""
    view = B.view_board(state._board, state.current_player)
    hold_or_go = state._turn_stage == TS_HOLD_OR_GO
    deciding = hold_or_go | (state._turn_stage == TS_MOVE)
    mask = jnp.where(deciding, moves.legal_action_mask(view, state._dice, hold_or_go), False)
    return _finish(state.replace(legal_action_mask=mask), max_steps, rolled=True)


def _finish(state: State, max_steps: int | None, rolled: bool, observed: bool = True
            ) -> State:
    """Derived fields: termination, rewards, truncation, chance flag, mask, observation
    (left as it was unless `observed`)."""
    ended = state._stage == STAGE_ENDED
    winner = state.current_player  # the game only ends on a mark by the player to move
    rewards = jnp.where(ended, jnp.where(jnp.arange(2) == winner, 1.0, -1.0), 0.0)
    truncated = ~ended & (max_steps is not None) & (state._step_count >= (max_steps or 0))
    is_chance = ~ended & (state._turn_stage == TS_ROLL_DICE)
    mask = state.legal_action_mask if rolled else jnp.zeros(NUM_ACTIONS, bool)
    mask = jnp.where(ended | truncated, True, mask)
    return state.replace(rewards=rewards.astype(jnp.float32), terminated=ended,
                         truncated=truncated, _is_chance=is_chance, legal_action_mask=mask,
                         observation=observe(state) if observed else state.observation)


def has_choice(states: State):
    """bool[...]: states (any batch shape) whose player to move has a choice to make: the
    game goes on and more than one action is legal."""
    return ~states.done & (jnp.sum(states.legal_action_mask, -1) > 1)


# --- what a decision and a roll do to the game ---------------------------------------------

def _forfeit(state: State) -> State:
    """The player to move loses (illegal action)."""
    loser = state.current_player
    rewards = jnp.where(jnp.arange(2) == loser, -1.0, 1.0).astype(jnp.float32)
    return state.replace(rewards=rewards, terminated=jnp.bool_(True),
                         legal_action_mask=jnp.ones(NUM_ACTIONS, bool),
                         _is_chance=jnp.bool_(False))


def _pick_up(state: State, reset_points) -> State:
    """A new setting ("relevé"): initial board, roll counts 0, bredouille restored."""
    return state.replace(
        _board=jnp.asarray(INITIAL_BOARD), _turn_stage=jnp.int32(TS_ROLL_DICE),
        _points=jnp.where(reset_points, 0, state._points),
        _dice_roll_count=jnp.zeros(2, jnp.int32), _can_bredouille=jnp.ones(2, bool))


def _mark(state: State, scorer, n, opponent):
    """`scoring.mark_points` on the state: (state, whether a hole was won)."""
    points, holes, bredouille, new_hole = scoring.mark_points(
        state._points, state._holes, state._can_bredouille, scorer, n, opponent)
    return state.replace(_points=points, _holes=holes, _can_bredouille=bredouille), new_hole


def _decide(state: State, action) -> State:
    """Apply a legal decision: Go (1) or a Move (2..513)."""
    mover = state.current_player
    other = 1 - mover
    gone = _pick_up(state, reset_points=True)

    view = B.view_board(state._board, mover)
    pair = moves.decode(view, state._dice, action)
    # the last checker borne off: as many borne off (a move to 0) as the mover had, counted
    # on the old view (a GPU then needs no kernel between the new board and these values)
    first_off, second_off = (pair[0] > 0) & (pair[1] == 0), (pair[2] > 0) & (pair[3] == 0)
    all_off = fold(jnp.add, jnp.maximum(view, 0)) == first_off.astype(jnp.int32) + second_off
    # the pair's change on the view, mirrored and added: the new board is elementwise in
    # the old one, which XLA then updates in place (a mirrored board it copied)
    change = B.apply_move(B.apply_move(jnp.zeros_like(view), pair[0], pair[1]), pair[2], pair[3])
    moved = state.replace(_board=state._board + B.real_board(change, mover))
    # Bearing off the last checker: the opponent marks his points, then a new setting with
    # the same player to move. Otherwise the opponent marks his points and moves next.
    bore_off, _ = _mark(moved, other, state._dice_points[1], other)
    bore_off = _pick_up(bore_off, reset_points=False)
    passed, new_hole = _mark(moved.replace(current_player=other), other,
                             state._dice_points[1], mover)
    won = new_hole & (of_colour(passed._holes, other) >= WINNING_HOLES)
    passed = passed.replace(_turn_stage=jnp.int32(TS_ROLL_DICE),
                            _stage=jnp.where(won, STAGE_ENDED, passed._stage))
    moved = select_tree(all_off, bore_off, passed)
    return select_tree(action == 1, gone, moved)


def _roll(state: State, dice) -> State:
    """The dice are thrown: score the roll for the player to move and mark his points."""
    player = state.current_player
    roll_count = state._dice_roll_count + (jnp.arange(2) == player)  # a select, no scatter
    view = B.view_board(state._board, player)
    # indexed, not `of_colour`: as a select the count joins the hits' kernel, which then
    # spills registers at 131,072 games with resets
    points, move_mask, some_move = scoring.roll_outcome(view, dice, roll_count[player])
    state = state.replace(_dice=dice, _dice_roll_count=roll_count, _dice_points=points)
    state, new_hole = _mark(state, player, points[0], 1 - player)
    won = new_hole & (of_colour(state._holes, player) >= WINNING_HOLES)
    turn_stage = jnp.where(new_hole, jnp.where(won, TS_MARK_POINTS, TS_HOLD_OR_GO), TS_MOVE)
    mask = moves.decision_mask(dice, move_mask, some_move, turn_stage == TS_HOLD_OR_GO)
    return state.replace(_turn_stage=turn_stage.astype(jnp.int32), legal_action_mask=mask,
                         _stage=jnp.where(won, STAGE_ENDED, state._stage).astype(jnp.int32))


def observe(state: State, player=None):
    """float32[217]: the reference's encoding of `player`'s view (default: player to move):
    4 features of each field's own checkers, then of the opponent's, then `_game_features`."""
    player = state.current_player if player is None else player
    view = B.view_board(state._board, player)
    # The game's 25 features, from a handful of a game's values each, are computed apart
    # and read: fused into the observation's kernel on a GPU, each of a game's 217 threads
    # chose its feature through them all (the step's costliest kernel on an H200).
    tail = kernel_boundary(_game_features(state, view, player))
    return jnp.concatenate([_checker_features(jnp.maximum(view, 0)),
                            _checker_features(jnp.maximum(-view, 0)), tail])


# Scales are multiplied, not divided: XLA turns a division by a constant into a
# multiplication under jit only, and results must not depend on jit.
_TWELFTH = np.float32(1 / 12)


def _checker_features(n):
    """float32[96]: of the checker counts n int[24], field after field: n == 1, n == 2,
    n == 3, (n - 3) / 12 if more."""
    return jnp.stack([n == 1, n == 2, n == 3, jnp.maximum(n - 3, 0) * _TWELFTH],
                     -1).astype(jnp.float32).ravel()


def _game_features(state: State, view, player):
    """float32[25]: the dice, the turn stage, both players' records, the filled quarters of
    each, the walls and the corners held, the mover's rolls."""
    def record(p):
        return jnp.stack([of_colour(state._points, p) * _TWELFTH,
                          of_colour(state._holes, p) * _TWELFTH,
                          of_colour(state._can_bredouille, p),
                          of_colour(state._can_big_bredouille, p)])

    parts = [
        state._dice * jnp.float32(1 / 6), jnp.zeros(1), (state._turn_stage * jnp.float32(1 / 5))[None],
        record(player), record(1 - player),
        B.quarter_filled(view), B.opp_quarter_filled(view),
        jnp.stack([jnp.all(view[:18] <= 0), jnp.all(view[6:] >= 0),
                   view[11] >= 2, view[12] <= -2]),
        jnp.minimum(of_colour(state._dice_roll_count, player) * jnp.float32(1 / 3), 1.0)[None],
    ]
    return jnp.concatenate([jnp.asarray(x, jnp.float32).ravel() for x in parts])


# --- the class: pgx's Env interface over the functions, each called compiled ---------------

# The functions compiled, one program per `max_steps` (static): what the class's methods
# call (see the module).
init_jit = jax.jit(init)
step_jit = jax.jit(step, static_argnames="max_steps")
step_deterministic_jit = jax.jit(step_deterministic, static_argnames="max_steps")
chance_step_jit = jax.jit(chance_step, static_argnames="max_steps")
every_roll_jit = jax.jit(every_roll, static_argnames=("max_steps", "distinct"))
restore_jit = jax.jit(restore, static_argnames="max_steps")
observe_jit = jax.jit(observe)


class Trictrac:
    """Trictrac as the reference engine plays it (mmai/trictrac, schools disabled).

    `max_steps`: decisions after which a game is truncated (None: never). Each method is
    the module function of its name, compiled (see the module's docstring)."""

    version = "v1"  # pgx's meaning: changes when the behaviour or the API does
    num_players = 2  # White (0) and Black (1)
    num_actions = NUM_ACTIONS  # 514: 0 Roll (never a decision here), 1 Go, 2..513 Move
    observation_shape = (OBS_SIZE,)  # (217,): `observe`'s float32[217]
    chance_probs = CHANCE_PROBS  # float32[36]: each ordered roll 1/36 (`CHANCE_DICE`)

    def __init__(self, max_steps: int | None = DEFAULT_MAX_STEPS):
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        self.max_steps = max_steps

    # Environments with the same `max_steps` are equal (a static argument of a jit), the
    # pgx subclass that `make` returns included: their methods are the same.
    def __eq__(self, other):
        return isinstance(other, Trictrac) and other.max_steps == self.max_steps

    def __hash__(self):
        return hash(self.max_steps)

    @property
    def id(self) -> str:
        """The id "trictrac", of `make` (pgx's `Env.id`)."""
        return "trictrac"

    def init(self, key) -> State:
        """`init`: the `State` of a new game from a PRNG `key`, White to play after his first
        roll (`jax.vmap` over keys[B] for B games)."""
        return init_jit(key)

    def step(self, state: State, action, key=None) -> State:
        """`step`: the decision `action` (int32, 0..513), then the dice rolled with `key`: the
        next `State` (`jax.vmap` over states[B], int32[B], keys[B]). pgx's signature;
        the dice need the key, so that a missing one is an error (as in pgx's backgammon):
        `step_deterministic(state, action)` is the decision alone, before the dice."""
        if key is None:
            raise ValueError("Trictrac.step(state, action, key): the key rolls the dice of "
                             "the next decision; step_deterministic(state, action) takes the "
                             "decision alone")
        return step_jit(state, action, key, max_steps=self.max_steps)

    def step_deterministic(self, state: State, action) -> State:
        """`step_deterministic`: the decision `action` (int32); the result (an afterstate,
        `is_chance`) waits for the dice."""
        return step_deterministic_jit(state, action, max_steps=self.max_steps)

    def chance_step(self, state: State, outcome) -> State:
        """`chance_step`: the dice of chance outcome `outcome` (int32, 0..35) on an
        afterstate."""
        return chance_step_jit(state, outcome, max_steps=self.max_steps)

    def every_roll(self, afterstates: State, distinct: bool = False) -> tuple[State, State]:
        """`every_roll`: each of `afterstates` [P] after each of the 36 rolls (21 distinct
        ones if `distinct`), [P * R]."""
        return every_roll_jit(afterstates, max_steps=self.max_steps, distinct=distinct)

    def observe(self, state: State, player_id=None):
        """float32[217]: `observe` as pgx's `Env.observe` (default: the player to move)."""
        return observe_jit(state, player_id)

    def restore(self, state: State) -> State:
        """`restore`: the derived fields of a state loaded from its game fields."""
        return restore_jit(state, max_steps=self.max_steps)


ENV_IDS = ("trictrac",)  # the ids `make` knows


def make(env_id: str, max_steps: int | None = DEFAULT_MAX_STEPS) -> Trictrac:
    """The environment `env_id`, as `pgx.make`: where pgx is installed, a `Trictrac` that is
    also a `pgx.Env` (same methods), else a `Trictrac`; pgx is imported only here."""
    if env_id not in ENV_IDS:
        raise ValueError(f"unknown environment id {env_id!r}; known ids: {list(ENV_IDS)}")
    import importlib.util
    return (Trictrac if importlib.util.find_spec("pgx") is None else _pgx_trictrac())(max_steps)


@functools.cache
def _pgx_trictrac() -> type[Trictrac]:
    import pgx

    class PgxTrictrac(Trictrac, pgx.Env):
        """`Trictrac`, a `pgx.Env`. Its methods are `Trictrac`'s (pgx's `Env.step` would
        take a chance node's all-False mask for an illegal action); pgx's abstract hooks are
        the game's functions. `state.env_id`, "trictrac", is not among pgx's `EnvId`s."""

        def _init(self, key) -> State:
            return init(key)

        def _step(self, state: State, action, key) -> State:
            return step(state, action, key, self.max_steps)

        def _observe(self, state: State, player_id) -> jax.Array:
            return observe(state, player_id)

    return PgxTrictrac
