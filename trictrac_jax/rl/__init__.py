"""PPO on the AlphaZero stack's network and run parts: `ppo` (the algorithm in the
single-agent environment) and `loop` (its loop on the host, which `train/ppo.py` starts
through `league.runs.train_ppo`). Imports the engine and `trictrac_jax.az`, never `league`
or the tools; needs the `train` extra.
"""
