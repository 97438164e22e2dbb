"""The AlphaZero stack on top of the engine: the network, mctx search with the simulator as
the model, self-play, the replay buffer, training, checkpoints, the shipped champion, a
training run's parts and the AlphaZero loop (`run.az_loop`). Imports the engine
(`trictrac_jax`) only, never `rl`, `league` or the tools; needs the `train` extra.

    from trictrac_jax.az import config, training
    from trictrac_jax.league import runs
    cfg = config.load_config("configs/quick.yaml")            # a frozen, typed Config
    state = training.init_state(cfg, jax.random.PRNGKey(0))    # one step at a time, or
    runs.train_az(cfg)                                         # the loop of train/az.py
"""
