"""The AlphaZero stack on top of the engine: the network, mctx search with the simulator as
the model, self-play, the replay buffer, training, checkpoints, evaluation, the agents that
play a network, the shipped champion and a training run's loop. Imports the engine
(`trictrac_jax`) and `trictrac_jax.rl` (PPO runs load as agents), never the tools; needs the
`train` extra.

    from trictrac_jax.az import config, run, training
    cfg = config.load_config("configs/quick.yaml")            # a frozen, typed Config
    state = training.init_state(cfg, jax.random.PRNGKey(0))    # one step at a time, or
    run.train(cfg)                                             # the loop of train/az.py
"""
