"""The single-agent environment (`trictrac_jax.wrappers`) under jit and vmap, as gymnax's own
classes (`trictrac_jax.gymnax_env`) inside gymnax's own wrappers and `RolloutWrapper`: the
opponent never moves for the learner, no illegal move is played, auto-reset keeps the final
observation, episodes end at `max_steps_in_episode` learner steps, returns add up to the
engine's rewards and to the score margins, seats and opponents are drawn per episode,
gymnax's conventions hold."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax import wrappers as W

GAMES, STEPS = 4, 160
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
    from trictrac_jax import gymnax_env
    gymnax_env.register()
    gymnax_env.register()  # registering again is harmless
    return gymnax_env


@pytest.fixture(scope="module")
def played(gymnax_env):
    """gymnax.make's environment in gymnax's FlattenObservationWrapper and LogWrapper, points
    rewards, two opponents drawn per episode (random and first), a masked random learner:
    the action space's sample among the legal actions read through the wrappers' state."""
    import gymnax
    from gymnax.wrappers import FlattenObservationWrapper, LogWrapper

    env, params = gymnax.make("Trictrac-v1", reward="points", max_steps_in_episode=LIMIT,
                              opponent=(tt.agents.random_agent, tt.agents.first_agent))
    env = LogWrapper(FlattenObservationWrapper(env))

    def masked_random(keys, obs, state):
        return jax.vmap(env.action_space(params).sample)(keys, env.legal_action_mask(state))
    return env, params, rollout(env, masked_random, GAMES, STEPS, seed=0)


def test_the_opponent_never_moves_for_the_learner(played):
    _, _, (_, _, r) = played
    before = r["before"].env_state  # ours, inside LogWrapper's
    assert not before.game.done.any()
    np.testing.assert_array_equal(before.game.current_player, before.seat)
    assert not before.game.is_chance.any()
    # the observation is the learner's, and so are the legal actions he played
    np.testing.assert_array_equal(r["obs"], jax.vmap(jax.vmap(tt.observe))(before.game,
                                                                            before.seat))
    played = np.take_along_axis(before.game.legal_action_mask, r["action"][..., None], -1)
    assert played.all(), "an illegal move"


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
        assert round(144 * rewards.sum()) == gained
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
    # a lean info: gymnax's keys, the outcome and LogWrapper's statistics, no legal mask
    info = r["info"]
    assert set(info) == {"terminated", "truncated", "final_observation", "discount", "outcome",
                         "returned_episode", "returned_episode_returns",
                         "returned_episode_lengths", "returned_episode_valid"}
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


def test_rejects_bad_settings():
    with pytest.raises(ValueError, match="max_steps"):
        W.SingleAgent(env=tt.Trictrac(max_steps=None))
    with pytest.raises(ValueError, match="seat"):
        W.SingleAgent(seat=2)
    with pytest.raises(ValueError, match="reward"):
        W.SingleAgent(reward="margin")
    with pytest.raises(ValueError, match="observation"):
        W.SingleAgent(observation="masked")
    with pytest.raises(ValueError, match="max_steps_in_episode"):
        W.SingleAgent(max_steps_in_episode=0)
    with pytest.raises(ValueError, match="at least one"):
        W.agents_opponent()
    space = W.SingleAgent().observation_space()  # our own, duck-typed as gymnax's
    assert space.shape == (tt.OBS_SIZE,) and not bool(space.contains(-np.ones(tt.OBS_SIZE)))
    space = W.SingleAgent(observation="dict").observation_space()
    obs = {"observation": np.zeros(tt.OBS_SIZE, np.float32),
           "action_mask": np.ones(tt.NUM_ACTIONS, bool)}
    assert bool(space.contains(obs))
    assert not bool(space.contains({**obs, "observation": -np.ones(tt.OBS_SIZE)}))
