"""The studies behind the docs' choices, each run from the repository root as
`python -m experiments.NAME` (experiments/README.md lists them with their docs section).
"""
