"""The package's layers, each a package: the engine (`trictrac_jax`), the AlphaZero stack
(`trictrac_jax.az`), PPO on top of it (`trictrac_jax.rl`), what both learners share
(`trictrac_jax.league`: agents of either's runs, matches, the ladder, a run set up) and the
tools (`trictrac_jax.tools`); imports flow tools -> league -> rl -> az -> engine, never
back, and no module imports itself through others. The wheel holds the package alone: no
benchmark, study or script."""
import ast
import pathlib
import subprocess
import sys
import tomllib

import setuptools

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "trictrac_jax"
LAYERS = {"engine": 0, "az": 1, "rl": 2, "league": 3, "tools": 4}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "engine"


def imports_of(path, modules):
    """The package modules that `path` imports, at its top or inside functions."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def import_graph():
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def test_every_package_has_a_layer():
    """A new subpackage is given its layer here before anything can import it."""
    packages = {p.parent.name for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE}
    assert packages == set(LAYERS) - {"engine"}


def test_imports_flow_down_the_layers():
    graph = import_graph()
    assert {"trictrac_jax.env", "trictrac_jax.az.search", "trictrac_jax.rl.ppo",
            "trictrac_jax.league.runs", "trictrac_jax.tools.play"} <= set(graph)
    upward = [(m, t) for m, targets in graph.items() for t in targets
              if LAYERS[layer(t)] > LAYERS[layer(m)]]
    assert upward == [], f"imports against the layers: {upward}"


def test_no_import_circle():
    graph = import_graph()
    state = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                raise AssertionError("import circle: " + " -> ".join(path + [target]))
            if target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_engine_loads_alone():
    """`import trictrac_jax` in a fresh process loads neither the AlphaZero stack nor the
    tools, nor the learning libraries (flax's package loads flax.linen), gymnax or pgx."""
    code = ("import sys, trictrac_jax\n"
            "print('\\n'.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout.split())
    assert "trictrac_jax.env" in loaded
    above = sorted(m for m in loaded
                   if m.split(".")[:2][-1] in set(LAYERS) - {"engine"}
                   or m.split(".")[0] in ("mctx", "optax", "orbax", "chex", "pgx", "pyspiel",
                                          "gymnax", "flax"))
    assert above == []


def test_the_wheel_holds_the_package_alone():
    """The packages pyproject.toml puts in the wheel: trictrac_jax's, none of the folders
    beside it (benchmarks/, experiments/, scripts/, train/, tests/)."""
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    found = pyproject["tool"]["setuptools"]["packages"]["find"]
    packages = setuptools.find_packages(str(PACKAGE.parent), include=found["include"])
    assert {f"trictrac_jax.{layer}" for layer in set(LAYERS) - {"engine"}} <= set(packages)
    assert all(p.split(".")[0] == "trictrac_jax" for p in packages), packages
    assert not any((PACKAGE / "tools" / f"{name}.py").exists()
                   for name in ("bench", "bench_gpu", "gpu_report", "measure", "latency"))
