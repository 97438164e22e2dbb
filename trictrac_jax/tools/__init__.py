"""Programs for people around the engine and the AlphaZero stack, each run as
`python -m trictrac_jax.tools.<name>`: `play` (a terminal game), `verify` (agreement with the
reference engine), `fuzz` (invariants), `bench` (benchmarks), `latency` (one call at a time);
`openspiel_game` registers the game with OpenSpiel. Nothing in the engine or the AlphaZero
stack imports from here.
"""
