"""Reinforcement learning beyond AlphaZero, on the AlphaZero stack's network and run
parts: `ppo` (PPO in the single-agent environment, `train/ppo.py`). Needs the `train` extra.
"""
