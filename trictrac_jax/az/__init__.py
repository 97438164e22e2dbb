"""The AlphaZero stack on top of the engine: the network, mctx search with the simulator as
the model, self-play, the replay buffer, training, checkpoints, evaluation and the shipped
champion. Imports the engine (`trictrac_jax`), never the tools; needs the `train` extra.

    from trictrac_jax.az import config, training
    cfg = config.load_config("configs/quick.yaml")            # a frozen, typed Config
    state = training.init_state(cfg, jax.random.PRNGKey(0))    # see train/az.py for the loop
"""
