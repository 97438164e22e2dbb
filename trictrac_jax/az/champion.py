"""The shipped champions: trained networks small enough to live inside the package.

    python -m trictrac_jax.az.champion                       # the newest: what, from where
    python -m trictrac_jax.az.champion champion:1            # an earlier one
    python -m trictrac_jax.az.champion NETWORK.msgpack        # any network file: its record
    python -m trictrac_jax.az.champion --export RUN_CHECKPOINT_OR_NETWORK --provenance FILE.json

`champion:N` is the N-th shipped champion (`trictrac_jax/az/data/championN.msgpack`) and
`champion` the newest: each new one had to beat the one before, and the earlier ones stay
loadable so that anyone can replay that match. A file holds the network's parameters
(float32), the config of the run that trained it, and its provenance (command, iterations,
wall-clock, hardware, evaluation), serialised with `flax.serialization`: no checkpoint
or run directory is needed to read it. `network_agents.load_agent("champion")` plays it.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import jax
import numpy as np
from flax import serialization

from trictrac_jax.az.config import Config, load_config, to_dict

DATA = pathlib.Path(__file__).resolve().parent / "data"


def numbered(n: int) -> pathlib.Path:
    return DATA / f"champion{n}.msgpack"


def count() -> int:
    """How many champions are shipped: champion1 .. championN."""
    n = 0
    while numbered(n + 1).is_file():
        n += 1
    return n


PATH = numbered(count())  # the newest


def is_name(spec: str) -> bool:
    """Whether `spec` names a shipped champion: 'champion' or 'champion:N'."""
    return spec == "champion" or spec.startswith("champion:")


def is_network_file(spec: str) -> bool:
    """Whether `spec` names a network file in the champion's format (`*.msgpack`)."""
    return spec.endswith(".msgpack")


def file_of(name: str = "champion") -> pathlib.Path:
    """The file of 'champion' (the newest) or 'champion:N' (the N-th, from 1); any other
    `name` is a network file's path. Raises ValueError naming the champions there are."""
    if not is_name(name):
        return pathlib.Path(name)
    if name == "champion":
        return PATH
    n = name.removeprefix("champion:")
    if not (n.isdigit() and 1 <= int(n) <= count()):
        raise ValueError(f"unknown champion {name!r}: there are champion:1 to "
                         f"champion:{count()} (champion is champion:{count()})")
    return numbered(int(n))


def save(params, config: Config, provenance: dict, path=PATH) -> pathlib.Path:
    """Write `params` (a pytree of arrays), the run's `config` and `provenance` to `path`."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = {"params": jax.tree.map(lambda x: np.asarray(x, np.float32), params),
            "config": json.dumps(to_dict(config), sort_keys=True),
            "provenance": json.dumps(provenance, sort_keys=True)}
    path.write_bytes(serialization.msgpack_serialize(tree))
    return path


def load(path=PATH) -> tuple[dict, Config, dict]:
    """(params, config, provenance) from a champion file. Raises OSError for a missing or
    unreadable file and ValueError for one that is not a champion, naming the file."""
    path = pathlib.Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OSError(f"{path}: cannot read the champion file ({e.strerror or e})") from None
    try:
        tree = serialization.msgpack_restore(data)
        params, config = tree["params"], load_config(base=json.loads(tree["config"]))
        return params, config, json.loads(tree["provenance"])
    except Exception as e:  # msgpack, JSON or missing-key errors: one readable line
        raise ValueError(f"{path}: not a champion file ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else 'corrupt'})") from None


def export(source: str, provenance_file: str | None, out) -> pathlib.Path:
    """Write the network of `source` (a network file, which keeps its own record under
    'recorded', or a run or checkpoint directory) with the provenance in `provenance_file`
    (JSON) to `out`."""
    provenance = json.loads(pathlib.Path(provenance_file).read_text()) if provenance_file else {}
    if is_network_file(source):  # keeps its own record
        params, config, recorded = load(source)
        provenance = {"network_file": source, "recorded": recorded, **provenance}
    else:
        from trictrac_jax.az import training  # the training stack reads orbax checkpoints
        params, config = training.load_params(source)
        provenance = {"checkpoint": source, **provenance}
    return save(params, config, provenance, out)


# Files a record names that have moved since it was written: their place now, so that the
# commands a record prints run as they stand (the file keeps the record as written).
MOVED = {"train/networks/": "experiments/networks/"}


def shown(provenance: dict) -> str:
    """A record as JSON, with the paths of `MOVED` at their place now."""
    text = json.dumps(provenance, indent=2, sort_keys=True)
    for old, new in MOVED.items():
        text = text.replace(old, new)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m trictrac_jax.az.champion",
                                description="Show or export a shipped champion network.")
    p.add_argument("name", nargs="?", default="champion",
                   help="champion (the newest), champion:N, or a network file in the champion's "
                        "format (default: champion)")
    p.add_argument("--export", metavar="CHECKPOINT",
                   help="a run directory (its best checkpoint), one checkpoint directory, or a "
                        "network file in the champion's format (a run's snapshot)")
    p.add_argument("--provenance", metavar="FILE",
                   help="JSON file: how the checkpoint was made and evaluated (with --export)")
    p.add_argument("--out", default=str(numbered(count() + 1)),
                   help=f"with --export: the file to write (default: the next champion, "
                        f"{numbered(count() + 1)})")
    args = p.parse_args(argv)
    try:
        if args.export:
            out = export(args.export, args.provenance, args.out)
            print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
            return 0
        file = file_of(args.name)
        params, config, provenance = load(file)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    size = sum(x.size for x in jax.tree.leaves(params))
    print(f"{args.name} = {file}: network {config.network.width}x{config.network.blocks}, "
          f"{size:,} parameters")
    print(shown(provenance))
    return 0


if __name__ == "__main__":
    sys.exit(main())
