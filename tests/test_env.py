"""Properties of the environment on random play, and its API contracts."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax.agents import random_agent
from trictrac_jax.state import TS_HOLD_OR_GO, TS_MOVE
from tests.fresh import xla_flags

ENV = tt.Trictrac(max_steps=None)
# Jitted once per module: each distinct jit costs seconds of compilation.
INIT, STEP = jax.jit(ENV.init), jax.jit(ENV.step)
STEP_DET, CHANCE = jax.jit(ENV.step_deterministic), jax.jit(ENV.chance_step)


def play(env, key, batch, steps):
    """Random self-play; returns the final states and per-step snapshots (stacked)."""
    k0, key = jax.random.split(key)
    state = jax.vmap(env.init)(jax.random.split(k0, batch))

    def body(state, key):
        ka, ks = jax.random.split(key)
        action = jax.vmap(random_agent)(jax.random.split(ka, batch), state)
        nxt = jax.vmap(env.step)(state, action, jax.random.split(ks, batch))
        return nxt, (state, action)

    final, (states, actions) = jax.lax.scan(body, state, jax.random.split(key, steps))
    return final, states, actions


# The module's random play: one compiled program (16 games, 700 steps) for every key.
PLAY = jax.jit(play, static_argnums=(0, 2, 3))
GAMES, STEPS = 16, 700


@pytest.fixture(scope="module")
def random_games():
    return PLAY(ENV, jax.random.PRNGKey(7), GAMES, STEPS)


def test_fifteen_checkers_per_side_always(random_games):
    _, states, _ = random_games
    board = np.asarray(states._board, np.int32)
    assert (np.maximum(board, 0).sum(-1) <= 15).all() and (np.maximum(-board, 0).sum(-1) <= 15).all()
    # checkers only leave by bearing off, and the board is reset then: while a game runs,
    # both sides never have more than 15 and the reset board has exactly 15 each.
    live = ~np.asarray(states.terminated)
    assert live.any()
    white, black = np.maximum(board, 0).sum(-1), np.maximum(-board, 0).sum(-1)
    assert (white[live] >= 1).all() and (black[live] >= 1).all()


def test_decision_nodes_have_legal_actions(random_games):
    _, states, actions = random_games
    live = ~np.asarray(states.terminated)
    mask = np.asarray(states.legal_action_mask)
    assert mask[live].any(-1).all()
    assert not np.asarray(states.is_chance)[live].any()  # step always returns a decision node
    ts = np.asarray(states._turn_stage)[live]
    assert np.isin(ts, [TS_MOVE, TS_HOLD_OR_GO]).all()
    # Go is legal exactly in the hold-or-go stage
    assert (mask[live][:, 1] == (ts == TS_HOLD_OR_GO)).all()
    acted = np.take_along_axis(mask, np.asarray(actions)[..., None], -1)[..., 0]
    assert acted[live].all()


def test_games_end_with_a_winner(random_games):
    final, states, _ = random_games
    done = np.asarray(final.terminated)
    assert done.mean() > 0.8, done
    rewards = np.asarray(states.rewards).sum(0)  # summed over time, per game and colour
    holes = np.asarray(final._holes)
    for g in np.nonzero(done)[0]:
        winner = int(np.argmax(rewards[g]))
        assert sorted(rewards[g].tolist()) == [-1.0, 1.0]
        assert holes[g, winner] >= 12
    assert np.allclose(np.asarray(states.rewards).sum(-1), 0.0)  # zero-sum at every step


def test_same_key_same_game():
    a = PLAY(ENV, jax.random.PRNGKey(3), GAMES, STEPS)
    b = PLAY(ENV, jax.random.PRNGKey(3), GAMES, STEPS)
    c = PLAY(ENV, jax.random.PRNGKey(4), GAMES, STEPS)
    same = jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b)
    assert all(jax.tree.leaves(same))
    assert not np.array_equal(a[1]._board, c[1]._board)


def test_vmap_equals_per_game_loop():
    final, states, actions = PLAY(ENV, jax.random.PRNGKey(11), GAMES, STEPS)
    for g in range(3):
        state = jax.tree.map(lambda x: x[0, g], states)
        for t in range(39):
            # recover the dice key from the replayed snapshot: compare the deterministic part
            # and the roll through step_deterministic + chance_step with the recorded dice
            nxt = jax.tree.map(lambda x: x[t + 1, g], states)
            after = STEP_DET(state, actions[t, g])
            if bool(after.is_chance):
                rolled = CHANCE(after, tt.dice_to_outcome(nxt._dice))
            else:
                rolled = after
            same = jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)),
                                rolled.replace(rewards=nxt.rewards), nxt)
            assert all(jax.tree.leaves(same)), (g, t)
            state = nxt
    del final


def _same(a, b) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b)))


def test_jit_equals_no_jit():
    """The methods jit themselves: their results equal the unjitted computation's."""
    key = jax.random.PRNGKey(5)
    state = INIT(key)
    action = random_agent(key, state)
    after = STEP_DET(state, action)
    calls = {  # one step after init is enough: eager execution is slow
        "init": lambda: ENV.init(key), "step": lambda: ENV.step(state, action, key),
        "chance_step": lambda: ENV.chance_step(after, 17),
        "restore": lambda: ENV.restore(tt.from_string_id(tt.to_string_id(state))),
        "observe": lambda: ENV.observe(state, 1 - state.current_player),
    }
    for name, call in calls.items():
        jitted = call()
        with jax.disable_jit():
            eager = call()
        assert _same(jitted, eager), name


def test_methods_compose_with_jit_and_vmap():
    """Called inside a user's jit and vmap, the (self-jitted) methods give each game's own
    result; environments with the same settings are equal and share their compilations."""
    keys = jax.random.split(jax.random.PRNGKey(8), 3)
    states = jax.jit(jax.vmap(ENV.init))(keys)
    actions = jax.vmap(random_agent)(keys, states)
    batched = {
        "step": jax.jit(jax.vmap(ENV.step))(states, actions, keys),
        "restore": jax.jit(jax.vmap(ENV.restore))(states),
        "observe": jax.jit(jax.vmap(ENV.observe))(states, jnp.array([0, 1, 0])),
    }
    for g in range(3):
        state, action = jax.tree.map(lambda x: x[g], states), actions[g]
        one = {"step": ENV.step(state, action, keys[g]), "restore": ENV.restore(state),
               "observe": ENV.observe(state, g % 2)}
        for name, result in one.items():
            assert _same(jax.tree.map(lambda x: x[g], batched[name]), result), (name, g)
    assert tt.Trictrac(max_steps=None) == ENV and hash(tt.Trictrac(max_steps=None)) == hash(ENV)
    assert tt.Trictrac(max_steps=5) != ENV and ENV != "trictrac"


def test_pgx_env_api():
    env = tt.make("trictrac")
    assert env == tt.Trictrac() and env.max_steps == 1000
    assert (env.id, env.version, env.num_players, env.num_actions, env.observation_shape) == (
        "trictrac", "v1", 2, 514, (217,))
    state = INIT(jax.random.PRNGKey(4))
    assert bool(jnp.array_equal(env.observe(state), state.observation))
    mover = int(state.current_player)
    other = env.observe(state, 1 - mover)
    assert bool(jnp.array_equal(other, tt.observe(state, 1 - mover)))
    assert not bool(jnp.array_equal(other, state.observation))
    with pytest.raises(ValueError, match=r"unknown environment id 'backgammon'.*\['trictrac'\]"):
        tt.make("backgammon")


def test_chance_api():
    probs = np.asarray(ENV.chance_probs)
    assert probs.shape == (36,) and np.isclose(probs.sum(), 1.0) and (probs > 0).all()
    dice = np.asarray(tt.CHANCE_DICE)
    assert len({tuple(d) for d in dice}) == 36 and dice.min() == 1 and dice.max() == 6
    assert (np.asarray(tt.dice_to_outcome(tt.CHANCE_DICE)) == np.arange(36)).all()
    state = INIT(jax.random.PRNGKey(0))
    action = jnp.argmax(state.legal_action_mask)
    after = STEP_DET(state, action)
    assert bool(after.is_chance) and not bool(after.legal_action_mask.any())
    for k in (0, 17, 35):
        rolled = CHANCE(after, k)
        assert list(np.asarray(rolled._dice)) == list(dice[k])
        assert not bool(rolled.is_chance) and bool(rolled.legal_action_mask.any())
    # a chance step on a decision node changes nothing
    same = CHANCE(state, 3)
    assert bool(jnp.array_equal(same._dice, state._dice))
    # step == step_deterministic then chance_step with the sampled outcome
    key = jax.random.PRNGKey(9)
    full = STEP(state, action, key)
    split = CHANCE(after, tt.env.sample_outcome(key))
    assert bool(jnp.array_equal(full._board, split._board))
    assert bool(jnp.array_equal(full.legal_action_mask, split.legal_action_mask))


def test_the_dice_roll_each_of_the_36_outcomes_equally_often():
    """`sample_outcome` over 36,000 keys: each ordered roll about 1,000 times (a chi-square
    of 35 degrees of freedom below its 0.1% tail, 66.6), every outcome within 0..35."""
    keys = jax.random.split(jax.random.PRNGKey(11), 36_000)
    outcomes = np.asarray(jax.jit(jax.vmap(tt.env.sample_outcome))(keys))
    counts = np.bincount(outcomes, minlength=36)
    assert len(counts) == 36 and counts.sum() == len(keys)
    assert ((counts - 1_000) ** 2 / 1_000).sum() < 66.6, counts


def test_illegal_action_loses_and_terminal_is_absorbing():
    state = INIT(jax.random.PRNGKey(1))
    illegal = int(np.nonzero(~np.asarray(state.legal_action_mask))[0][0])
    mover = int(state.current_player)
    out = STEP(state, illegal, jax.random.PRNGKey(2))
    assert bool(out.terminated)
    assert out.rewards[mover] == -1 and out.rewards[1 - mover] == 1
    assert bool(jnp.array_equal(out._board, state._board))  # nothing moved
    assert bool(out.legal_action_mask.all())
    again = STEP(out, 5, jax.random.PRNGKey(3))
    assert bool(again.terminated) and not bool(again.rewards.any())
    assert _same(again, out.replace(rewards=jnp.zeros(2, jnp.float32)))
    # a finished game's mask is all True, as the step writes it (it does not read the old)
    hand_made = out.replace(legal_action_mask=jnp.zeros_like(out.legal_action_mask))
    assert bool(STEP(hand_made, 5, jax.random.PRNGKey(3)).legal_action_mask.all())
    # out-of-range action indices are illegal too
    for bad in (-1, 514, 10_000):
        out = STEP(state, bad, jax.random.PRNGKey(2))
        assert bool(out.terminated) and out.rewards[mover] == -1


def test_inputs_that_fit_no_node_change_nothing():
    """Our rule (docs/rules.md): `chance_step` off a chance node or with an outcome outside
    0..35, and `step_deterministic` at a chance node, return the state unchanged with zero
    rewards; `step` at a chance node ignores its action and rolls."""
    state = INIT(jax.random.PRNGKey(0))
    after = STEP_DET(state, jnp.argmax(state.legal_action_mask))
    assert bool(after.is_chance) and not bool(after.rewards.any())
    for outcome in (-1, 36, 40, 2**31 - 1, -2**31):
        assert _same(CHANCE(after, outcome), after), outcome
    for action in (1, 2, -5, 999):
        assert _same(STEP_DET(after, action), after), action
    key = jax.random.PRNGKey(9)
    assert _same(STEP(after, 999, key), CHANCE(after, tt.env.sample_outcome(key)))
    # per game under vmap: [decision node, chance node]
    both = jax.tree.map(lambda a, b: jnp.stack([a, b]), state, after)
    pick = lambda x, g: jax.tree.map(lambda y: y[g], x)
    roll = jax.jit(jax.vmap(ENV.chance_step))  # compiled once for both calls
    rolled = roll(both, jnp.array([3, 3]))
    assert _same(pick(rolled, 0), state) and _same(pick(rolled, 1), CHANCE(after, 3))
    assert not bool(pick(rolled, 1).is_chance)
    assert _same(roll(both, jnp.array([3, 40])), both)
    action = jnp.argmax(state.legal_action_mask)
    decided = jax.jit(jax.vmap(ENV.step_deterministic))(both, jnp.stack([action, action]))
    assert _same(pick(decided, 0), after) and _same(pick(decided, 1), after)


def test_truncation():
    env = tt.Trictrac(max_steps=5)
    final, states, _ = jax.jit(play, static_argnums=(0, 2, 3))(env, jax.random.PRNGKey(0), 4, 8)
    trunc = np.asarray(states.truncated)
    assert not trunc[:5].any() and trunc[5:].all()
    assert not np.asarray(states.terminated).any()
    assert np.asarray(final._step_count).max() == 5
    with pytest.raises(ValueError, match="max_steps"):
        tt.Trictrac(max_steps=0)


def test_string_id_round_trip_restores_decisions(random_games):
    _, states, _ = random_games
    restore = jax.jit(ENV.restore)
    for t in (0, 13, 40):
        for g in range(3):
            state = jax.tree.map(lambda x: x[t, g], states)
            if bool(state.terminated):
                continue
            loaded = tt.from_string_id(tt.to_string_id(state))
            # the id does not carry the roll count or the last roll's points
            loaded = loaded.replace(_dice_roll_count=state._dice_roll_count,
                                    _dice_points=state._dice_points)
            back = restore(loaded)
            assert bool(jnp.array_equal(back.legal_action_mask, state.legal_action_mask))
            assert bool(jnp.allclose(back.observation, state.observation))


def test_pmap_and_sharding_match_vmap():
    """The step runs under pmap and under jit with a sharded batch (4 CPU devices)."""
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        import trictrac_jax as tt
        assert jax.device_count() == 4, jax.devices()
        env = tt.Trictrac()
        keys = jax.random.split(jax.random.PRNGKey(0), 8)
        state = jax.vmap(env.init)(keys)
        action = jnp.argmax(state.legal_action_mask, -1)
        ref = jax.jit(jax.vmap(env.step))(state, action, keys)
        split = lambda x: x.reshape((4, 2) + x.shape[1:])
        out = jax.pmap(jax.vmap(env.step))(*jax.tree.map(split, (state, action, keys)))
        out = jax.tree.map(lambda x: x.reshape((8,) + x.shape[2:]), out)
        assert all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), ref, out)))
        sharding = NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), P("batch"))
        args = jax.device_put((state, action, keys), sharding)
        out = jax.jit(jax.vmap(env.step))(*args)
        assert len(out._board.sharding.device_set) == 4
        assert all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), ref, out)))
        print("ok")
    """)
    env = dict(os.environ, XLA_FLAGS=xla_flags("--xla_force_host_platform_device_count=4"),
               JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=root,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


@pytest.fixture(scope="module")
def varied():
    """Under the CPU lowering, one pass (64 games, below lowering.CPU_CHUNK): (states,
    actions, keys) of 64 games after 12 random steps (varied positions), the random agent's
    actions, and the step of those actions: the agent and the step compiled for the random
    steps, called once more."""
    from trictrac_jax import lowering

    games = 64
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(lowering.LOWERING_VARIABLE, "cpu")
        jax.clear_caches()  # the self-jitted methods keep their traces: none of another lowering
        keys = jax.random.split(jax.random.PRNGKey(21), games)
        states = jax.vmap(ENV.init)(keys)
        agent, play_step = jax.jit(jax.vmap(random_agent)), jax.jit(jax.vmap(ENV.step))
        for k in jax.random.split(jax.random.PRNGKey(22), 12):
            states = play_step(states, agent(jax.random.split(k, games), states), keys)
        actions = agent(keys, states)
        return states, actions, keys, play_step(states, actions, keys)


def lowered(states, actions, keys):
    """A step, its two halves (the roll: an outcome drawn per game) and the random agent,
    each traced anew under the lowering in force (the caches cleared before, and after:
    nothing of that lowering kept)."""
    outcomes = jax.random.randint(jax.random.PRNGKey(23), (len(keys),), 0,
                                  tt.NUM_CHANCE_OUTCOMES)
    jax.clear_caches()  # the self-jitted methods keep their traces: trace under this lowering
    after = jax.jit(jax.vmap(ENV.step_deterministic))(states, actions)
    out = (jax.jit(jax.vmap(ENV.step))(states, actions, keys), after,
           jax.jit(jax.vmap(ENV.chance_step))(after, outcomes),
           jax.jit(jax.vmap(random_agent))(keys, states))
    jax.clear_caches()
    return out


@pytest.fixture(scope="module")
def cpu_in_chunks(varied):
    """`lowered` on `varied`'s games under the CPU lowering in chunks of 16 games."""
    from trictrac_jax import lowering

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lowering, "CPU_CHUNK", 16)
        patch.setenv(lowering.LOWERING_VARIABLE, "cpu")
        return lowered(*varied[:3])


def test_large_cpu_batches_run_in_chunks_with_the_same_results(monkeypatch, varied,
                                                               cpu_in_chunks):
    """Batches above lowering.CPU_CHUNK games run a step (and the random agent) chunk by chunk:
    same states and actions."""
    from trictrac_jax import lowering

    states, actions, keys, stepped = varied
    chunked_step, _, _, chunked_actions = cpu_in_chunks
    assert _same((stepped, actions), (chunked_step, chunked_actions))
    assert not bool(jnp.all(stepped.legal_action_mask == states.legal_action_mask))
    monkeypatch.setenv(lowering.LOWERING_VARIABLE, "cpu")
    monkeypatch.setattr(lowering, "CPU_CHUNK", 16)
    jax.clear_caches()  # the self-jitted methods keep their batched traces: trace anew
    assert "scan[" in str(jax.make_jaxpr(jax.vmap(ENV.step))(states, actions, keys))
    jax.clear_caches()  # nor keep those of 16-game chunks


def test_the_lowering_is_named_by_its_variable_or_its_former_name(monkeypatch):
    """TRICTRAC_LOWERING names the lowering; TRICTRAC_LANES, its former name (the shared GPU
    proxies set it), still does when the new one is unset; a wrong name is refused, naming
    the variable read."""
    from trictrac_jax import lowering

    monkeypatch.delenv(lowering.LOWERING_VARIABLE, raising=False)
    monkeypatch.setenv(lowering.LOWERING_ALIAS, "gpu")
    assert lowering.current() is lowering.LOWERINGS["gpu"]
    monkeypatch.setenv(lowering.LOWERING_VARIABLE, "cpu")  # the new name first
    assert lowering.current() is lowering.LOWERINGS["cpu"]
    monkeypatch.setenv(lowering.LOWERING_VARIABLE, "tpu")
    with pytest.raises(ValueError, match=r"^\$TRICTRAC_LOWERING must be one of"):
        lowering.current()
    monkeypatch.delenv(lowering.LOWERING_VARIABLE)
    monkeypatch.setenv(lowering.LOWERING_ALIAS, "gpu2")
    with pytest.raises(ValueError, match=r"^\$TRICTRAC_LANES must be one of"):
        lowering.current()


def test_gpu_lowering_gives_the_states_of_the_cpu_lowering(monkeypatch, varied, cpu_in_chunks):
    """The GPU lowering (plain fusion, one pass), forced on CPU, plays the same games as the
    CPU lowering (materialisation in branches of their own, here in chunks of 16): a step, its two halves
    and the random agent; and a step under the GPU lowering with the games last, and with the
    move lists in the Pallas kernel (interpreted on the CPU)."""
    from trictrac_jax import lowering

    states, actions, keys, _ = varied
    monkeypatch.setenv(lowering.LOWERING_VARIABLE, "gpu")
    assert not lowering.current().materialise_apart and not lowering.current().chunked
    gpu = lowered(states, actions, keys)
    monkeypatch.setenv(lowering.LOWERING_VARIABLE, "gpu-games-last")  # the other GPU layout
    jax.clear_caches()
    games_last = jax.jit(jax.vmap(ENV.step))(states, actions, keys)
    monkeypatch.setenv(lowering.LOWERING_VARIABLE, "gpu-tiles")
    jax.clear_caches()
    tiles = jax.jit(jax.vmap(ENV.step))(states, actions, keys)
    jax.clear_caches()
    assert _same(cpu_in_chunks, gpu) and _same(cpu_in_chunks[0], games_last)
    assert _same(cpu_in_chunks[0], tiles)


def test_kernel_boundary_is_a_barrier_under_the_gpu_lowering_only(monkeypatch):
    """`lowering.kernel_boundary` stages an optimisation barrier under the GPU lowering (the
    spill test reads what it does to the kernels) and nothing under the CPU's; the values
    pass through unchanged under both."""
    from trictrac_jax import lowering

    x = jnp.arange(5)
    bounded = lambda v: lowering.kernel_boundary((v + 1, v * 2))
    for name, barrier in (("gpu", True), ("cpu", False)):
        monkeypatch.setenv(lowering.LOWERING_VARIABLE, name)
        staged = {e.primitive.name for e in jax.make_jaxpr(bounded)(x).eqns}
        assert ("optimization_barrier" in staged) == barrier, name
        plus, twice = jax.jit(bounded)(x)
        assert np.array_equal(plus, np.arange(1, 6)) and np.array_equal(twice, 2 * np.arange(5))
        jax.clear_caches()


def test_materialised_is_a_branch_of_its_own_under_the_cpu_lowering_only(monkeypatch):
    """`lowering.materialised` computes its rule in a conditional's branch under the CPU
    lowering (a boundary XLA does not fuse across, whose predicate it cannot know: the
    compiled program keeps it) and plainly under the GPU's; the value is the rule's under
    both."""
    from trictrac_jax import lowering

    rule = lowering.materialised(lambda v: jnp.cumsum(v * 3) - 1)
    twice = lambda v: rule(rule(v))
    x = jnp.arange(6, dtype=jnp.int32)
    expected = np.cumsum(np.cumsum(np.arange(6) * 3) * 3 - 3) - 1
    for name, branches in (("cpu", 2), ("gpu", 0)):
        monkeypatch.setenv(lowering.LOWERING_VARIABLE, name)
        staged = [e.primitive.name for e in jax.make_jaxpr(twice)(x).eqns]
        assert staged.count("cond") == branches, (name, staged)
        compiled = jax.jit(twice).lower(x).compile().as_text()
        assert ("conditional(" in compiled) == bool(branches), name
        assert np.array_equal(jax.jit(twice)(x), expected), name
        jax.clear_caches()


def test_stored_first_positions_are_the_computed_ones():
    """`init` looks up the stored positions after White's first roll: they are what the
    engine computes for each of the 36 rolls, field for field."""
    from trictrac_jax import env

    stored, computed = env.first_positions(), jax.device_get(env.roll_first_positions())
    for name in env._state_fields():
        a, b = getattr(stored, name), getattr(computed, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert len(set(map(bytes, stored._dice))) == 36  # every roll once, in outcome order


def test_game_rules_are_traced_once_under_a_lowering_that_batches_as_vmap(monkeypatch):
    """Under the GPU lowering (the games first, one pass) a `game_minor` or `cpu_chunked`
    rule is a plain function under the caller's `jax.vmap`: its Python runs once a trace.
    Under the CPU lowering the rules are batched by rules of their own, for which each is
    also traced for one game (`cpu_chunked`'s batch is that trace, batched; `game_minor`'s
    a trace with the games last). The values are the same under both."""
    from trictrac_jax import lowering

    calls = []

    def rule(v, w):
        calls.append(v.shape)
        return jnp.cumsum(v, axis=0) * w

    def chunked(v, *, scale):
        calls.append(v.shape)
        return v * scale

    minor = lowering.game_minor(rule)
    in_chunks = lowering.cpu_chunked(chunked, static_argnames=("scale",))
    x = jnp.arange(12, dtype=jnp.int32).reshape(4, 3)
    both = jax.vmap(lambda v: (minor(v, 2), in_chunks(v, scale=3)))
    for name, traces in (("gpu", 2), ("cpu", 3)):
        monkeypatch.setenv(lowering.LOWERING_VARIABLE, name)
        calls.clear()
        staged = str(jax.make_jaxpr(both)(x))
        assert len(calls) == traces, (name, calls)
        assert ("transpose" in staged) == (name == "cpu"), name  # the games moved last
        cumulative, scaled = both(x)
        assert np.array_equal(cumulative, np.cumsum(np.asarray(x), axis=1) * 2), name
        assert np.array_equal(scaled, np.asarray(x) * 3), name
        jax.clear_caches()
