"""The single-agent environment (`trictrac_jax.wrappers`) under jit and vmap, as gymnax's own
classes (`trictrac_jax.gymnax_env`) inside gymnax's own wrappers and `RolloutWrapper`: the
opponent never moves for the learner, an illegal action is counted and (opted in) replaced
by a legal one at its penalty, auto-reset keeps the final observation, episodes end at
`max_steps_in_episode` learner steps, returns add up to the engine's rewards and to the score
margins, seats and opponents are drawn per episode, gymnax's conventions hold, and every
wrapper of gymnax runs on it in every observation mode it accepts."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax import wrappers as W

GAMES, STEPS = 8, 160
LIMIT = 60  # max_steps_in_episode: some episodes end by it, some by the game's end
# observe(): 192 checker features, 2 dice, a zero, the turn stage, then per player (the
# viewer first) points / 12, holes / 12, and two bredouille flags.
POINTS, HOLES = (196, 200), (197, 201)


def test_score_features_are_where_the_tests_read_them():
    state = tt.Trictrac().init(jax.random.PRNGKey(0))
    state = state.replace(_points=jnp.array([5, 7]), _holes=jnp.array([3, 11]))
    obs = np.asarray(tt.observe(state, 1))
    np.testing.assert_allclose(obs[list(POINTS)], [7 / 12, 5 / 12], rtol=1e-6)
    np.testing.assert_allclose(obs[list(HOLES)], [11 / 12, 3 / 12], rtol=1e-6)


def score_margin(obs):
    """int[...]: the viewer's lead in 12 * holes + points, read off observations."""
    score = lambda p: 144 * obs[..., HOLES[p]] + 12 * obs[..., POINTS[p]]
    return np.rint(score(0) - score(1)).astype(int)


def rollout(env, policy, games: int, steps: int, seed: int):
    """Reset `games` environments and step them `steps` times with `policy(key, obs, state)`,
    all in one jit; returns (first obs, first state, per-step records [steps, games])."""
    def run(key):
        k_reset, k_steps = jax.random.split(key)
        params = env.default_params
        obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, games), params)

        def one(carry, key):
            obs, state = carry
            k_act, k_step = jax.random.split(key)
            action = policy(jax.random.split(k_act, games), obs, state)
            out = jax.vmap(env.step, (0, 0, 0, None))(jax.random.split(k_step, games), state,
                                                       action, params)
            nxt_obs, nxt, reward, terminated, truncated, info = out
            return (nxt_obs, nxt), dict(before=state, obs=obs, action=action, next_obs=nxt_obs,
                                        next=nxt, reward=reward, terminated=terminated,
                                        truncated=truncated, info=info)
        _, records = jax.lax.scan(one, (obs, state), jax.random.split(k_steps, steps))
        return obs, state, records
    return jax.device_get(jax.jit(run)(jax.random.PRNGKey(seed)))


def episodes(done):
    """Per game, the (start, end) step ranges of its finished episodes."""
    spans = []
    for g in range(done.shape[1]):
        start = 0
        for t in np.flatnonzero(done[:, g]):
            spans.append((g, start, t))
            start = t + 1
    return spans


@pytest.fixture(scope="module")
def gymnax_env():
    pytest.importorskip("gymnax")  # the test extra installs it
    from trictrac_jax import gymnax_env  # importing it registers Trictrac-v1
    gymnax_env.register()  # registering again is harmless
    return gymnax_env


@pytest.fixture(scope="module")
def played(gymnax_env):
    """gymnax.make's environment in gymnax's FlattenObservationWrapper and LogWrapper, points
    rewards, two opponents drawn per episode (random and first), the view and the mask in
    one Box ("flat"), illegal actions replaced, a learner that ignores the mask one step in
    four (any of the 514 actions) and otherwise draws among the legal actions, read
    through the wrappers' state."""
    import gymnax
    from gymnax.wrappers import FlattenObservationWrapper, LogWrapper

    env, params = gymnax.make("Trictrac-v1", reward="points", max_steps_in_episode=LIMIT,
                              opponent=(tt.agents.random_agent, tt.agents.first_agent),
                              observation="flat", illegal_action="replace")
    env = LogWrapper(FlattenObservationWrapper(env))

    def sometimes_unaware(keys, obs, state):
        space = env.action_space(params)
        legal = jax.vmap(space.sample)(keys, env.legal_action_mask(state))
        k_any, k_which = jax.random.split(keys[0])
        return jnp.where(jax.random.uniform(k_which, legal.shape) < 0.25,
                         jax.vmap(space.sample)(jax.random.split(k_any, len(keys))), legal)
    return env, params, rollout(env, sometimes_unaware, GAMES, STEPS, seed=0)


def view(obs):
    """float32[..., 217]: the learner's view in a "flat" observation (the mask follows)."""
    return obs[..., :tt.OBS_SIZE]


def test_the_opponent_never_moves_for_the_learner(played):
    _, _, (_, _, r) = played
    before = r["before"].env_state  # ours, inside LogWrapper's
    assert not before.game.done.any()
    np.testing.assert_array_equal(before.game.current_player, before.seat)
    assert not before.game.is_chance.any()
    # the observation is the learner's: his view, then the legal mask of his decision
    np.testing.assert_array_equal(view(r["obs"]), jax.vmap(jax.vmap(tt.observe))(before.game,
                                                                                  before.seat))
    np.testing.assert_array_equal(r["obs"][..., tt.OBS_SIZE:], before.game.legal_action_mask)


def test_illegal_actions_are_counted_and_replaced(played):
    """Under `illegal_action="replace"` an illegal action is replaced by a legal one: the
    game goes on (a game's end is never the learner's forfeit), `info["illegal_action"]`
    marks the step, its reward loses the penalty, and the episode's count is returned at its
    end, as the episode's length."""
    _, _, (_, _, r) = played
    before, info = r["before"].env_state, r["info"]
    legal = np.take_along_axis(before.game.legal_action_mask, r["action"][..., None], -1)[..., 0]
    np.testing.assert_array_equal(info["illegal_action"], ~legal)
    assert 0.1 < (~legal).mean() < 0.4, (~legal).mean()  # a quarter of the steps, mostly illegal
    lost = r["terminated"] & (info["outcome"] < 0)
    assert lost.any() and (info["final_observation"][lost][:, HOLES[1]] >= 1).all()  # 12 holes
    for g, start, end in episodes(r["terminated"] | r["truncated"]):
        assert info["returned_episode_illegal_actions"][end, g] == (~legal[start:end + 1, g]).sum()


def penalties(r):
    """float32[steps, games]: the illegal actions' penalties taken from the rewards."""
    return W.DEFAULT_ILLEGAL_PENALTY * r["info"]["illegal_action"]


def test_seats_and_opponents_are_drawn_per_episode(played):
    _, _, (_, first, r) = played
    first, done = first.env_state, r["terminated"] | r["truncated"]
    seats = np.concatenate([first.seat, r["next"].env_state.seat[done]])
    opponents = np.concatenate([first.opponent, r["next"].env_state.opponent[done]])
    assert set(seats) == {0, 1} and set(opponents) == {0, 1}
    # where the learner is Black, White has played before his first decision
    assert (first.game._step_count[first.seat == 1] >= 1).all()
    assert (first.game._step_count[first.seat == 0] == 0).all()


def test_auto_reset_keeps_the_final_observation(played):
    _, _, (_, _, r) = played
    done = r["terminated"] | r["truncated"]
    final, nxt, outcome = r["info"]["final_observation"], r["next_obs"], r["info"]["outcome"]
    np.testing.assert_array_equal(final[~done], nxt[~done])  # gymnax: equal when not done
    won, lost = done & (outcome > 0), done & (outcome < 0)
    assert won.sum() >= 2 and lost.sum() >= 2, "too few finished games to check"
    assert (final[won][:, HOLES[0]] >= 1).all()  # the learner's 12 holes, his view
    assert (final[lost][:, HOLES[1]] >= 1).all()
    assert (nxt[done][:, list(HOLES)] == 0).all()  # the next episode's first observation


def test_returns_add_up_to_the_engine_rewards(played):
    """The engine's rewards (`info["outcome"]`) add up to the game's result, the points
    rewards to the score margin gained, and the statistics (ours and gymnax's LogWrapper's)
    to those of the steps."""
    _, _, (_, _, r) = played
    done = r["terminated"] | r["truncated"]
    spans = episodes(done)
    assert len(spans) >= 6
    info = r["info"]
    for g, start, end in spans:
        outcome = info["outcome"][start:end + 1, g]
        assert (outcome[:-1] == 0).all()
        assert outcome.sum() in ((1.0, -1.0) if r["terminated"][end, g] else (0.0,))
        rewards = r["reward"][start:end + 1, g]
        gained = score_margin(info["final_observation"][end, g]) - score_margin(r["obs"][start, g])
        assert round(144 * (rewards + penalties(r)[start:end + 1, g]).sum()) == gained
        assert info["returned_episode_returns"][end, g] == pytest.approx(rewards.sum(), abs=1e-5)
        assert info["returned_episode_lengths"][end, g] == end + 1 - start
    np.testing.assert_array_equal(info["returned_episode"], done)
    assert (info["returned_episode_valid"] == (np.cumsum(done, 0) > 0)).all()
    ours = r["next"].env_state
    np.testing.assert_array_equal(info["returned_episode_returns"], ours.returned_episode_return)
    np.testing.assert_array_equal(info["returned_episode_lengths"], ours.returned_episode_length)


def test_episodes_end_at_max_steps_in_episode_learner_steps(played):
    """`EnvParams.max_steps_in_episode` counts the learner's steps (`state.time`): an
    episode that reaches it unfinished is truncated there, and auto-reset."""
    _, _, (_, _, r) = played
    spans = episodes(r["terminated"] | r["truncated"])
    ends = {"terminated": 0, "truncated": 0}
    time = r["before"].env_state.time
    for g, start, end in spans:
        kind = "terminated" if r["terminated"][end, g] else "truncated"
        ends[kind] += 1
        assert end + 1 - start == LIMIT if kind == "truncated" else end + 1 - start <= LIMIT
        np.testing.assert_array_equal(time[start:end + 1, g], np.arange(end + 1 - start))
    assert min(ends.values()) >= 2, ends


def test_gymnax_classes_spaces_and_conventions(played):
    import gymnax
    from gymnax.environments import environment, spaces
    from gymnax.wrappers import LegacyStepAPIWrapper
    env, params, (obs, state, r) = played
    assert isinstance(env._env._env, environment.Environment)  # inside Log(Flatten(ours))
    assert isinstance(params, gymnax.EnvParams) and isinstance(state.env_state, gymnax.EnvState)
    # a lean info: gymnax's keys, the outcome, the illegal action and LogWrapper's
    # statistics, no legal mask
    info = r["info"]
    assert set(info) == {"terminated", "truncated", "final_observation", "discount", "outcome",
                         "illegal_action", "returned_episode", "returned_episode_returns",
                         "returned_episode_lengths", "returned_episode_illegal_actions",
                         "returned_episode_valid"}
    assert all(np.shape(v) == (STEPS, GAMES) for k, v in info.items() if k != "final_observation")
    np.testing.assert_array_equal(info["discount"], 1.0 - r["terminated"])
    space = env.observation_space(params)
    assert isinstance(space, spaces.Box) and isinstance(env.action_space(params), spaces.Discrete)
    assert env.action_space(params).n == tt.NUM_ACTIONS == env.num_actions
    assert obs.shape == (GAMES,) + space.shape and bool(space.contains(r["obs"]))
    # the five-value API of earlier gymnax, by gymnax's own adapter
    legacy = LegacyStepAPIWrapper(env)
    out = jax.eval_shape(legacy.step, jax.random.PRNGKey(0), jax.tree.map(lambda x: x[0], state),
                         jnp.int32(1), params)
    assert len(out) == 5 and out[3].dtype == jnp.bool_


def test_rollout_wrapper_plays_legal_moves_read_from_the_observation(gymnax_env):
    """gymnax's RolloutWrapper on `observation="dict"`: its policy reads the legal mask in the
    observation and samples among them; `num_env_steps` defaults to max_steps_in_episode."""
    from gymnax.experimental import RolloutWrapper

    def masked_random(policy_params, obs, key):
        return rollouts.env.action_space(rollouts.env_params).sample(key, obs["action_mask"])
    rollouts = RolloutWrapper(masked_random, env_name="Trictrac-v1",
                              env_kwargs={"observation": "dict", "final_observation": False},
                              env_params={"max_steps_in_episode": 12})
    assert rollouts.num_env_steps == 12
    obs, action, _, _, done, _ = jax.device_get(
        rollouts.batch_rollout(jax.random.split(jax.random.PRNGKey(5), GAMES), None))
    assert action.shape == (GAMES, 12) and obs["action_mask"].shape == (GAMES, 12, tt.NUM_ACTIONS)
    assert np.take_along_axis(obs["action_mask"], action[..., None], -1).all(), "an illegal move"
    assert done.any(1).all()  # every first episode ended within its 12 learner steps
    space = rollouts.env.observation_space(rollouts.env_params)
    assert bool(space.contains(jax.tree.map(lambda x: x[0, 0], obs)))


def test_an_illegal_action_is_replaced_by_a_uniform_legal_one():
    """Three legal actions by hand: an illegal action (in range or out of it) becomes one of
    the three, each drawn a third of the time; a legal one stays; the same key draws the
    same one. (The penalty and the counts in `info`: test_illegal_actions_are_counted_and_
    replaced, test_returns_add_up_to_the_engine_rewards.)"""
    mask = np.zeros(tt.NUM_ACTIONS, bool)
    mask[[5, 300, 400]] = True
    game = tt.Trictrac().init(jax.random.PRNGKey(0)).replace(legal_action_mask=jnp.asarray(mask))
    keys = jax.random.split(jax.random.PRNGKey(1), 3000)
    replaced = jax.jit(jax.vmap(W._legal_or_random, (0, None, None)))
    for illegal in (3, 6, 513, -1, 514):
        played = np.asarray(replaced(keys, game, illegal))
        counts = np.bincount(played, minlength=tt.NUM_ACTIONS)
        assert counts[[5, 300, 400]].sum() == len(keys)  # always legal
        assert (np.abs(counts[[5, 300, 400]] - 1000) < 130).all(), counts[[5, 300, 400]]  # 5 sd
        np.testing.assert_array_equal(played, replaced(keys, game, illegal))
    for legal in (5, 300, 400):
        assert (np.asarray(replaced(keys, game, legal)) == legal).all()


def test_rejects_bad_settings():
    with pytest.raises(ValueError, match="seat"):
        W.SingleAgent(seat=2)
    with pytest.raises(ValueError, match="reward"):
        W.SingleAgent(reward="margin")
    with pytest.raises(ValueError, match="observation"):
        W.SingleAgent(observation="masked")
    with pytest.raises(ValueError, match="max_steps_in_episode"):
        W.SingleAgent(max_steps_in_episode=0)
    with pytest.raises(ValueError, match="illegal_action"):
        W.SingleAgent(illegal_action="ignore")
    with pytest.raises(ValueError, match="illegal_penalty"):
        W.SingleAgent(illegal_action="replace", illegal_penalty=-1.0)
    with pytest.raises(ValueError, match="at least one"):
        W.agents_opponent()
    space = W.SingleAgent().observation_space()  # our own, duck-typed as gymnax's
    assert space.shape == (tt.OBS_SIZE,) and not bool(space.contains(-np.ones(tt.OBS_SIZE)))
    space = W.SingleAgent(observation="dict").observation_space()
    obs = {"observation": np.zeros(tt.OBS_SIZE, np.float32),
           "action_mask": np.ones(tt.NUM_ACTIONS, bool)}
    assert bool(space.contains(obs))
    assert not bool(space.contains({**obs, "observation": -np.ones(tt.OBS_SIZE)}))


def box_modes():
    """The observation modes whose space is one Box (`FlattenObservationWrapper`'s)."""
    return [mode for mode in W.OBSERVATIONS if mode != "dict"]


@pytest.mark.parametrize("final_observation", [True, False])
def test_every_gymnax_wrapper_runs_in_every_mode_it_accepts(gymnax_env, final_observation):
    """Each of `gymnax.wrappers` on gymnax.make's Trictrac-v1 in each observation mode
    (FlattenObservationWrapper and RolloutWrapper's `input_shape`: the Box ones;
    FlattenObservationWrapper refuses the Dict), a reset and a step,
    traced through the wrapper's code (`jax.eval_shape`: what a run computes, without
    compiling it): the observations keep the environment's shapes, `info` keeps its keys."""
    import gymnasium
    import gymnax
    from gymnax import wrappers as GW
    from gymnax.experimental import RolloutWrapper

    key, action = jax.random.key(0), jnp.int32(2)
    assert len(GW.__all__) == 7  # gymnax 1.0.1's: a new one is added here
    for mode in W.OBSERVATIONS:
        env, params = gymnax.make("Trictrac-v1", observation=mode,
                                  final_observation=final_observation)
        obs = jax.eval_shape(env.reset, key, params)[0]
        final = obs if final_observation else jax.ShapeDtypeStruct((), jnp.float32)
        same = lambda x, want=obs: jax.tree.map(lambda a, b: (a.shape, a.dtype) == (
            b.shape, b.dtype), x, want)

        def run(wrapped, steps_into=lambda out: out):
            state = jax.eval_shape(wrapped.reset, key, params)
            return jax.eval_shape(wrapped.step, key, steps_into(state), action, params)

        o, _, _, done, info = run(GW.LegacyStepAPIWrapper(env), lambda out: out[1])
        assert all(jax.tree.leaves(same(o))) and done.dtype == jnp.bool_
        for wrapped in (GW.LogWrapper(env), GW.StickyActionWrapper(env, 0.5)):
            o, _, _, _, _, info = run(wrapped, lambda out: out[1])
            assert all(jax.tree.leaves(same(o))) and all(jax.tree.leaves(same(
                info["final_observation"], final)))
            assert info["returned_episode_illegal_actions"].dtype == jnp.int32
        timestep = run(GW.GymnaxToDmEnvWrapper(env))
        assert all(jax.tree.leaves(same(timestep.observation)))
        assert all(jax.tree.leaves(same(timestep.final_observation, final)))
        if mode in box_modes():
            flat = GW.FlattenObservationWrapper(env)
            assert flat.observation_space(params).shape == obs.shape
            o, _, _, _, _, info = run(flat, lambda out: out[1])
            assert o.shape == obs.shape and info["final_observation"].size == final.size
            shapes = []  # RolloutWrapper's, which resets an environment to read it
            jax.eval_shape(lambda: shapes.append(
                RolloutWrapper(env=env, env_params=params).input_shape))
            assert shapes == [obs.shape]
        else:
            with pytest.raises(AssertionError, match="Only Box"):
                GW.FlattenObservationWrapper(env).observation_space(params)
        # gymnasium's: made and stepped in one traced function (they reset when made)
        made = []

        def gym():
            made.append(GW.GymnaxToGymWrapper(env, params))
            return made[-1].step(action)

        def vector():
            made.append(GW.GymnaxToVectorGymWrapper(env, 2, params))
            return made[-1].step(jnp.zeros(2, jnp.int32))
        o, reward, terminated, truncated, info = jax.eval_shape(gym)
        assert all(jax.tree.leaves(same(o))) and set(info) >= {"illegal_action", "outcome"}
        o = jax.eval_shape(vector)[0]
        assert all(jax.tree.leaves(jax.tree.map(lambda a, b: a.shape == (2,) + b.shape, o, obs)))
        assert all(isinstance(w.observation_space, gymnasium.spaces.Space) for w in made)
