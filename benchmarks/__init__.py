"""The benchmarks, outside the installed package: `python -m benchmarks.bench` (CPU throughput
against pgx, `--gpu` the GPU figures on a device, `--h100` the H100 and TPU programs compiled
here) and `python -m benchmarks.latency` (one call at a time). Run from the repository root.
"""
