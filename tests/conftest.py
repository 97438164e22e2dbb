"""The suite runs on the CPU. With the CUDA compiler plugin installed (the `test` extra, for
compiling GPU programs without a GPU) jax would also try to start a CUDA backend in every
process, and log a traceback where there is no driver; the GPU programs are compiled through
compile-only devices (`tools/gpu_program.py`), which need no backend."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
