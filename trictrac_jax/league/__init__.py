"""What both learners share, on a layer above them: agents by spec, the rule agents or a
network of either learner's runs (`network_agents`), matches between agents (`matches`),
ratings of a round robin (`ladder`), and a run of either learner set up with what only
this layer loads: its evaluation's opponents, the network it starts from, PPO's opponent
(`runs`, which `train/az.py`, `train/ppo.py` and `train/gpu_run.py` call). Imports the
engine, `trictrac_jax.az` and `trictrac_jax.rl`; needs the `train` extra.

    from trictrac_jax.az import config
    from trictrac_jax.league import network_agents, runs
    agent = network_agents.load_agent("champion@lookahead:32")   # (key, state) -> action
    runs.train_az(config.load_config("configs/quick.yaml"))      # the loop of train/az.py
"""
