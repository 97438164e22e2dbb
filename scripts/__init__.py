"""Scripts that regenerate the repository's data files, each run from the repository root as
`python -m scripts.NAME`: `benchmark_positions` (the position benchmark) and `pictures` (the
docs' SVG pictures).
"""
