"""Programs for people around the engine and the AlphaZero stack, each run as
`python -m trictrac_jax.tools.<name>`: `play` (a terminal game), `web` (the browser game,
`web_game` its sessions), `rate` (the position benchmark, `positions` its data), `verify`
(agreement with the reference engine), `fuzz` (invariants), `notation` and `reasons` (the
game as players read it); `openspiel_game` registers the game with OpenSpiel, and
`gpu_program` reads the programs compiled for an H100 or a TPU. Nothing in the engine or the
AlphaZero stack imports from here. (The benchmarks are outside the package: benchmarks/.)
"""
