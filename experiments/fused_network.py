"""The network's evaluations with each pre-norm half-block (layer norm, ReLU, Dense, bias,
residual) as one Pallas (Triton) kernel for the GPU: what XLA cannot fuse (its GEMM fusion
takes at most four inputs before the product, the layer norm's apply needs five), written
by hand. Does it pay, and how much of a self-play decision's bytes does it take away?

    python -m experiments.fused_network --check 256    # the kernels in interpret mode
    python -m experiments.fused_network --h100         # one evaluation for an H100
    python -m experiments.fused_network --decision configs/base.yaml --dtype bfloat16
    python -m experiments.fused_network --time 2048    # on a GPU: XLA's and the kernels'

A program instance holds `ROWS` rows whole (the layer norm's statistics in registers) and
writes `COLUMNS` columns of the product; the first Dense (of the observation) stays XLA's,
and the heads are one kernel of 576 columns (the 514 logits, the value, zeros). `--h100` and
`--decision` compile for an H100 here (H100 estimate, compiled program, model in
docs/gpu-program.md; the model counts each kernel's operands once, where every program
instance reads its rows and its weight columns again, from L2). `--decision` compiles the
self-play step alone, its evaluations through the kernels (`network.apply` swapped: the
training step would need their gradients), the parameters given in the evaluations' type
(cast once, not in every evaluation); the kernels' part is the "?" (their frames are this
module's, not the network's). Supports docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os

import jax
import jax.numpy as jnp

from trictrac_jax.az import network as N

ROWS, COLUMNS, WARPS = 32, 64, 8  # no spill at 255 registers for width 256 (--h100 --tiles)
EPS = 1e-6  # flax.linen.LayerNorm's
HEAD_COLUMNS = 576  # 514 logits, the value, zeros: a multiple of COLUMNS
RESULT = "fused network:"  # begins the lines of --check and --time (a GPU session records them)


def _half_block(x_ref, scale_ref, bias_ref, w_ref, b_ref, *rest):
    """o = Dense(relu(LayerNorm(x))) (+ r): x [ROWS, width], w [width, COLUMNS]; the layer
    norm and the sums in float32, the product's operands in w's type (x's, as stored)."""
    *residual, o_ref = rest
    x = x_ref[...].astype(jnp.float32)
    mean = jnp.mean(x, axis=1, keepdims=True)
    var = jnp.maximum(jnp.mean(x * x, axis=1, keepdims=True) - mean * mean, 0.0)  # Flax's
    h = jnp.maximum((x - mean) * jax.lax.rsqrt(var + EPS) * scale_ref[...] + bias_ref[...], 0.0)
    out = jnp.dot(h.astype(w_ref.dtype), w_ref[...], preferred_element_type=jnp.float32)
    out = out + b_ref[...]
    if residual:
        out = out + residual[0][...].astype(jnp.float32)
    o_ref[...] = out.astype(o_ref.dtype)


def half_block(x, norm, dense, residual=None, *, tile=(ROWS, COLUMNS, WARPS), interpret=False):
    """`residual` + Dense(relu(LayerNorm(x))): x [B, width] (B a multiple of the tile's
    rows; float32, or bfloat16 for evaluations in bfloat16: the result's type too), `norm`
    and `dense` Flax's parameters of the two layers."""
    from jax.experimental import pallas as pl
    import jax.experimental.pallas.triton as plt

    rows, columns, warps = tile
    (batch, width), out = x.shape, dense["kernel"].shape[1]
    if batch % rows or out % columns:
        raise ValueError(f"half_block: {batch} rows and {out} columns do not split into "
                         f"tiles of {rows} x {columns}")
    whole = lambda n: pl.BlockSpec((1, n), lambda i, j: (0, 0))
    specs = [pl.BlockSpec((rows, width), lambda i, j: (i, 0)), whole(width), whole(width),
             pl.BlockSpec((width, columns), lambda i, j: (0, j)),
             pl.BlockSpec((1, columns), lambda i, j: (0, j))]
    args = [x, norm["scale"][None], norm["bias"][None], dense["kernel"].astype(x.dtype),
            dense["bias"][None]]
    if residual is not None:
        specs.append(pl.BlockSpec((rows, columns), lambda i, j: (i, j)))
        args.append(residual)
    compiled = (dict(interpret=True) if interpret
                else dict(compiler_params=plt.CompilerParams(num_warps=warps)))
    return pl.pallas_call(_half_block, out_shape=jax.ShapeDtypeStruct((batch, out), x.dtype),
                          grid=(batch // rows, out // columns), in_specs=specs,
                          out_specs=pl.BlockSpec((rows, columns), lambda i, j: (i, j)),
                          **compiled)(*args)


def forward(params, obs, dtype=jnp.float32, **kernel):
    """(logits float32[B, 514], value float32[B]) of `N.PolicyValueNet`'s `params` on
    observations [B, 217], its half-blocks and heads as `half_block` kernels, the
    activations stored in `dtype` (the network's `inference_dtype`)."""
    first = params["Dense_0"]
    x = (obs.astype(dtype) @ first["kernel"].astype(dtype) + first["bias"].astype(dtype))
    blocks = sorted((name for name in params if name.startswith("ResidualBlock_")),
                    key=lambda name: int(name.rsplit("_", 1)[1]))  # Flax's order
    for name in blocks:
        block = params[name]
        y = half_block(x, block["LayerNorm_0"], block["Dense_0"], **kernel)
        x = half_block(y, block["LayerNorm_1"], block["Dense_1"], residual=x, **kernel)
    logits, value = params["Dense_1"], params["Dense_2"]
    width, pad = x.shape[1], HEAD_COLUMNS - logits["kernel"].shape[1] - 1
    zeros = lambda *shape: jnp.zeros(shape, logits["kernel"].dtype)
    heads = {"kernel": jnp.concatenate([logits["kernel"], value["kernel"], zeros(width, pad)], 1),
             "bias": jnp.concatenate([logits["bias"], value["bias"], zeros(pad)])}
    out = half_block(x, params["LayerNorm_0"], heads, **kernel)
    actions = logits["kernel"].shape[1]
    out = out.astype(jnp.float32)
    return out[:, :actions], jnp.tanh(out[:, actions])


def fused_apply(net, params, obs, mask):
    """`network.apply` with `forward`'s kernels (in `net`'s computation type)."""
    logits, value = forward(params, obs, dtype=net.dtype)
    return N.masked_logits(logits, mask), value


@contextlib.contextmanager
def fused_evaluations():
    """`network.apply` (the search's and the training step's) through the kernels inside."""
    plain = N.apply
    N.apply = fused_apply
    try:
        yield
    finally:
        N.apply = plain


def random_params(width=256, blocks=4, seed=0, dtype=jnp.float32):
    """A network computing in `dtype` and its parameters, every one moved off its initial
    value (layer norms too)."""
    net = N.PolicyValueNet(width=width, blocks=blocks, dtype=dtype)
    params = N.init_params(net, jax.random.PRNGKey(seed))
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), len(leaves))
    return net, jax.tree.unflatten(tree, [x + 0.1 * jax.random.normal(k, x.shape)
                                          for x, k in zip(leaves, keys)])


def largest_difference(outputs, others) -> float:
    """The largest difference between two (logits, value) pairs."""
    return max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(outputs, others))


def check(rows: int, dtype=jnp.float32) -> float:
    """The largest difference between the kernels' logits and values (interpret mode) and the
    network's, both computing in `dtype`, on `rows` random observations."""
    net, params = random_params(dtype=dtype)
    obs = jax.random.uniform(jax.random.PRNGKey(7), (rows, 217))
    return largest_difference(net.apply({"params": params}, obs),
                              forward(params, obs, dtype=dtype, interpret=True))


def report_h100(rows: int, tiles, dtype=jnp.float32):
    from trictrac_jax.tools import gpu_program as G

    net = N.PolicyValueNet(dtype=dtype)
    params = jax.eval_shape(lambda: N.init_params(net, jax.random.PRNGKey(0)))
    obs = jax.ShapeDtypeStruct((rows, 217), jnp.float32)
    programs = [("XLA", lambda p, o: net.apply({"params": p}, o))] + [
        (f"kernels {r}x{c}, {w} warps", functools.partial(
            lambda p, o, tile: forward(p, o, dtype, tile=tile), tile=(r, c, w)))
        for r, c, w in tiles]
    print(f"one evaluation of base.yaml's network in {jnp.dtype(dtype).name}, {rows:,} rows "
          f"(H100 estimate, compiled program, model in docs/gpu-program.md):")
    for name, fn in programs:
        program = G.read(G.compile_with_kernels(G.H100, fn, params, obs))
        spills = max((k.spills for k in program.by_kernel), default=0)
        print(f"  {name:26s} {program.kernels:4.0f} kernels {program.bytes / 1e6:7.1f} MB "
              f"{G.H100_MODEL.seconds(program) * 1e6:7.1f} µs, most spilled "
              f"{spills} bytes a thread")


def report_decision(config_path: str, overrides=()):
    from benchmarks import gpu_report as R
    from experiments import move_kernels as MK
    from trictrac_jax.az import config as config_lib
    from trictrac_jax.az import training as T
    from trictrac_jax.tools import gpu_program as G

    config = config_lib.load_config(config_path, overrides)
    mesh, state, actors, buffer = R.iteration_inputs(config)

    # the parameters in the evaluations' type, cast once (a decision's evaluations then cast
    # none; the search only evaluates)
    dtype = jnp.dtype(config.network.inference_dtype)
    params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, dtype), state.params)
    for name, evaluations in (("XLA", contextlib.nullcontext), ("kernels", fused_evaluations)):
        def selfplay(params, actors, buffer, key):  # a function of its own: traced anew
            return T.selfplay_step(config, params, actors, buffer, key, mesh=mesh)

        with evaluations():
            compiled = G.compile_with_kernels(G.H100, selfplay, params, actors, buffer,
                                              jax.random.PRNGKey(2), donate_argnums=(1, 2))
        decision = R.decision_program(compiled)
        parts = MK.decision_parts(MK.kernel_parts(decision, compiled.executable.as_text()))
        print(MK.decision_line(f"{' '.join([config_path, *overrides])}, evaluations by {name}",
                               decision))
        MK.print_parts(parts)


def time_on_device(rows: int, dtype=jnp.float32, min_seconds: float = 2.0):
    """One evaluation of `rows` random observations by XLA and by the kernels on the default
    device, both computing in `dtype` (the parameters given in it, cast once): the fastest
    call of each (`measure.fastest_calls`, the two in turn), and their largest difference
    there. One line, `RESULT`'s."""
    from benchmarks import measure

    net, params = random_params(dtype=dtype)
    params = jax.tree.map(lambda x: x.astype(dtype), params)
    obs = jax.random.uniform(jax.random.PRNGKey(7), (rows, 217))
    functions = {"XLA": jax.jit(lambda p, o: net.apply({"params": p}, o)),
                 "kernels": jax.jit(functools.partial(forward, dtype=dtype))}
    seconds = measure.fastest_calls([(fn, (params, obs)) for fn in functions.values()],
                                    min_seconds)
    apart = largest_difference(*(fn(params, obs) for fn in functions.values()))
    print(f"{RESULT} one evaluation of {rows:,} rows in {jnp.dtype(dtype).name} on "
          f"{jax.devices()[0].device_kind}: XLA {seconds[0] * 1e6:.1f} µs, kernels "
          f"{seconds[1] * 1e6:.1f} µs (the fastest call of each), {apart:.2e} apart")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", type=int, metavar="ROWS",
                   help="the kernels in interpret mode against the network on ROWS rows")
    p.add_argument("--h100", action="store_true",
                   help="one evaluation of 2,048 rows compiled for an H100, XLA's and the kernels'")
    p.add_argument("--tiles", default=f"{ROWS}x{COLUMNS}x{WARPS}",
                   help="with --h100: the kernels' tiles, ROWSxCOLUMNSxWARPS,... "
                        "e.g. 64x64x4,32x64x8")
    p.add_argument("--decision", metavar="CONFIG",
                   help="one self-play decision of CONFIG compiled for an H100, by XLA's "
                        "evaluations and by the kernels'")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                   help="the evaluations' computation type (network.inference_dtype) for "
                        "--check, --h100, --decision and --time")
    p.add_argument("--time", type=int, metavar="ROWS",
                   help="on a GPU: one evaluation of ROWS rows timed, XLA's and the kernels'")
    args = p.parse_args(argv)
    if args.decision:
        os.environ["TRICTRAC_LOWERING"] = "gpu"  # the engine as an H100 runs it (traced later)
    if args.check:
        print(f"{RESULT} the kernels in interpret mode, {args.check} rows in {args.dtype}: "
              f"{check(args.check, jnp.dtype(args.dtype)):.2e} from the network at most")
    if args.h100:
        report_h100(2048, [tuple(int(n) for n in t.split("x")) for t in args.tiles.split(",")],
                    jnp.dtype(args.dtype))
    if args.decision:
        report_decision(args.decision, [f"network.inference_dtype={args.dtype}"])
    if args.time:
        if jax.default_backend() != "gpu":
            p.error(f"--time runs the kernels on a GPU; this machine's backend is "
                    f"{jax.default_backend()}")
        time_on_device(args.time, jnp.dtype(args.dtype))


if __name__ == "__main__":
    main()
