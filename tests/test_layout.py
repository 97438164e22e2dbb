"""The package's layers, each a package: the engine (`trictrac_jax`), the AlphaZero stack
(`trictrac_jax.az`), PPO on top of it (`trictrac_jax.rl`), what both learners share
(`trictrac_jax.league`: agents of either's runs, matches, the ladder, a run set up) and the
tools (`trictrac_jax.tools`); imports flow tools -> league -> rl -> az -> engine, never
back, and no module imports itself through others. The wheel (`pip wheel --no-deps .`) holds
the package alone, no benchmark, study or script, and its licence files; its metadata names
the licence and `trictrac_jax.__version__`."""
import ast
import email.message
import email.parser
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

import trictrac_jax

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "trictrac_jax"
LAYERS = {"engine": 0, "az": 1, "rl": 2, "league": 3, "tools": 4}
ENGINE_PACKAGES = {"moves"}  # subpackages of the engine itself: the engine's layer
# What `pip wheel .` reads: the project's metadata, its readme and licences, the package
WHEEL_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "NOTICE", "LICENSES", "trictrac_jax")


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
    assert packages == (set(LAYERS) - {"engine"}) | ENGINE_PACKAGES


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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """`pip wheel --no-deps .` of a copy of what the wheel is built from (no build/ of an
    earlier build can leak into it), in an isolated build environment as a user's."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    for name in WHEEL_SOURCES:
        path = PACKAGE.parent / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy(path, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source),
                    "-w", str(tmp / "dist")], check=True, capture_output=True)
    (built,) = (tmp / "dist").glob("*.whl")
    return zipfile.ZipFile(built)


def metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(wheel.read(name).decode())


def test_the_wheel_holds_the_package_alone(wheel):
    """The wheel holds trictrac_jax (its subpackages and data files) and its metadata, none of
    the folders beside it (benchmarks/, experiments/, scripts/, train/, tests/)."""
    names = wheel.namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"trictrac_jax", f"trictrac_jax-{trictrac_jax.__version__}.dist-info"}, tops
    for path in ("trictrac_jax/rl/ppo.py", "trictrac_jax/league/runs.py",
                 "trictrac_jax/moves/lists.py", "trictrac_jax/tools/web.py",
                 "trictrac_jax/data/first_positions.npz", "trictrac_jax/az/data/champion2.msgpack",
                 "trictrac_jax/tools/web_static/index.html"):
        assert path in names, path
    assert not any(f"trictrac_jax/tools/{name}.py" in names
                   for name in ("bench", "bench_gpu", "gpu_report", "measure", "latency"))


def test_the_wheel_names_its_licence_and_version_and_holds_the_licences(wheel):
    """METADATA: the version of `trictrac_jax.__version__`, the licence expression of
    pyproject.toml, and LICENSE, NOTICE and the GPL-3.0's text as licence files, in the
    wheel as they are in the repository."""
    meta = metadata(wheel)
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    assert meta["Version"] == trictrac_jax.__version__
    assert meta["License-Expression"] == pyproject["license"] == "Apache-2.0 AND GPL-3.0-only"
    files = meta.get_all("License-File")
    assert sorted(files) == ["LICENSE", "LICENSES/GPL-3.0-only.txt", "NOTICE"], files
    dist_info = f"trictrac_jax-{trictrac_jax.__version__}.dist-info/licenses"
    for name in files:
        assert wheel.read(f"{dist_info}/{name}") == (PACKAGE.parent / name).read_bytes(), name
    assert "Apache License" in (PACKAGE.parent / "LICENSE").read_text()[:200]
    assert "GNU GENERAL PUBLIC LICENSE" in (PACKAGE.parent / "LICENSES/GPL-3.0-only.txt"
                                            ).read_text()[:200]


def test_the_licences_and_the_changelog_agree_with_the_package():
    """The GPL-3.0 module says so in its header, and no other module claims a licence; the
    changelog's newest release is `__version__`."""
    spdx = {p.relative_to(PACKAGE.parent).as_posix(): line.split(":", 1)[1].strip()
            for p in PACKAGE.rglob("*.py")
            for line in p.read_text().splitlines()[:3] if "SPDX-License-Identifier" in line}
    assert spdx == {"trictrac_jax/reference_bot.py": "GPL-3.0-only"}
    assert "trictrac_jax/reference_bot.py" in (PACKAGE.parent / "NOTICE").read_text()
    changelog = (PACKAGE.parent / "CHANGELOG.md").read_text()
    newest = re.search(r"^## (\S+)", changelog, re.M).group(1)
    assert newest == trictrac_jax.__version__
