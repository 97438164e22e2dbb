"""One command for a lent GPU: the speed table when the engine changed, then a leg of the
champion-3 relay, into one folder that the device tool brings back whole.

    python -m benchmarks.gpu_session --prepare              # here, before the run: .gpu/
    python -m benchmarks.gpu_session --out $OUT --minutes 9   # there, in the repository root

`--prepare` (on the machine that sends the tree, with git and a package index) downloads the
wheels that a bare GPU machine lacks into .gpu/wheels/ (`WHEELS`) and records the code's
version and its engine's identity in .gpu/source.json: the copy of the tree sent to a GPU
machine has no .git.

The session spends `--minutes` (its own clock, from its start) in order:

1. the speed table (`python -m benchmarks.bench --gpu`, `BENCH_S` seconds at most) unless the
   last table, OUT's own or the repository's committed one (`COMMITTED_TABLE`), is current:
   measured at GPU sizes, every random-play row there, on an engine with the same
   fingerprint as this one (`engine_identity`);
2. the lab's measurements that need a GPU (`LAB`: short commands, `LAB_S` seconds each at
   most, their result lines recorded in session.md), skipped in a rehearsal (`--quick`);
3. the next leg of the relay (`python train/gpu_run.py`, `trictrac_jax.tools.relay`) on the
   minutes left, less a reserve for its start, compilation and evaluation (`leg_reserve`:
   the most a recorded leg ran past its training minutes, from the committed sessions'
   records in `SESSIONS`, plus `LEG_MARGIN_S`; `LEG_START_S` without a record) and
   `PACK_S` for the end.

Each part runs as a child process under its own deadline: one that overruns is killed, and
what it wrote stays. OUT holds, at every moment, at most `MAX_FILES` files, each under
`MAX_FILE_BYTES`, `MAX_TOTAL_BYTES` together, no deeper than `MAX_DEPTH` folders (the device
tool's limits; `pack` checks them after each part and removes what would not come back):

    OUT/session.md                      the plan, each part's status and the lab's results,
                                        rewritten as it goes
    OUT/session.log                     the children's output
    OUT/bench/bench-gpu.md, .json       the speed table (when measured)
    OUT/bench/trace.tar                 the profile of the step
    OUT/relay/leg-NN/network.msgpack, metrics.jsonl, report.md    the leg
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import hashlib
import json
import os
import pathlib
import queue
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The engine: the package's top-level modules and their data (docs/architecture.md). Its
# commit is the last commit that changed these; its fingerprint, their content's hash, tells
# the same without git.
ENGINE_GLOBS = ("trictrac_jax/*.py", "trictrac_jax/moves/*.py", "trictrac_jax/data/*")
COMMITTED_TABLE = ROOT / "benchmarks" / "data" / "bench-gpu.json"
SESSIONS = ROOT / "benchmarks" / "data" / "sessions"  # the lent sessions' records
PREPARED = ROOT / ".gpu"
WHEELS = ("mctx==0.0.71", "pgx==2.6.0", "svgwrite==1.4.3")  # what the GPU image lacks
TABLE_GAMES = (1024, 8192, 32768, 131072)  # random play's game counts at GPU sizes
# The device tool's limits on what comes back from $OUT.
MAX_FILES, MAX_FILE_BYTES, MAX_TOTAL_BYTES, MAX_DEPTH = 8, 16 * 2**20, 64 * 2**20, 2
# Seconds: the speed table at most (its rows within BENCH_BUDGET_S, the rest the process's
# start and the profile's packing); a leg's start, compilation and evaluation beyond its
# training minutes where no session has recorded one (a guess: base.yaml's programs compiled
# in 32 s on an H100, docs/speed.md; a leg's also compile the lookahead over the rolls and
# champion 2's match), and what is added to the most a recorded leg took; kept at the end to
# pack OUT.
BENCH_S, BENCH_BUDGET_S, LEG_START_S, LEG_MARGIN_S, PACK_S = 240, 200, 120, 20, 15
MIN_LEG_MINUTES = 0.5  # a leg with less training than this is not started
# The lab's open questions that only a GPU answers (experiments/README.md): each command's
# lines that begin with its marker are its results (docs/journal/engine-speed.md, issue 51).
# The "gpu-tiles" lowering (the move lists in a Pallas kernel) against the GPU lowering in
# random play: its speed, and whether the device's Triton build of it plays the same games;
# the fused network's kernels against XLA's evaluations. Some 20-50 s each.
LAB = (*((f"gpu-tiles against gpu, {games} games", ("-m", "experiments.lowering_ab",
                                                    "--lowerings", "gpu,gpu-tiles",
                                                    "--batches", games), "lowering ab:")
         for games in ("1024", "32768")),
       ("fused network, float32", ("-m", "experiments.fused_network", "--time", "2048"),
        "fused network:"),
       ("fused network, bfloat16", ("-m", "experiments.fused_network", "--time", "2048",
                                    "--dtype", "bfloat16"), "fused network:"))
LAB_S = 60
# What goes first when OUT holds too much: the profile, then the log, then anything not
# named in KEEP (the largest first), then KEEP's files from its end.
DROP_ORDER = ("bench/trace.tar", "session.log")
KEEP = ("session.md", "relay/*/network.msgpack", "relay/*/metrics.jsonl", "relay/*/report.md",
        "bench/bench-gpu.json", "bench/bench-gpu.md")


# --- the engine's identity ------------------------------------------------------------------

def engine_files(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    return sorted(p for g in ENGINE_GLOBS for p in root.glob(g) if p.is_file())


def engine_fingerprint(root: pathlib.Path = ROOT) -> str:
    """The first 16 hex digits of the SHA-256 of the engine's files, names and contents."""
    digest = hashlib.sha256()
    for path in engine_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def git(*args: str, root: pathlib.Path = ROOT) -> str:
    """git's output in `root`, "" where git or the repository is missing."""
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=root)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def engine_identity(root: pathlib.Path = ROOT) -> dict:
    """{"commit": the last commit that changed the engine, "fingerprint": its files' hash}.
    Without git (a copy sent to a GPU machine) the commit is .gpu/source.json's when its
    fingerprint is this engine's, else "unknown"."""
    fingerprint = engine_fingerprint(root)
    commit = git("log", "-1", "--format=%h", "--",
                 *(f":(glob){g}" for g in ENGINE_GLOBS), root=root)
    if not commit:
        source = read_json(root / ".gpu" / "source.json") or {}
        same = source.get("engine", {}).get("fingerprint") == fingerprint
        commit = source["engine"]["commit"] if same else "unknown"
    return {"commit": commit, "fingerprint": fingerprint}


def read_json(path: pathlib.Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# --- the speed table: measure it or not -----------------------------------------------------

def table_is_current(table: dict | None, engine: dict) -> bool:
    """Whether a bench-gpu.json's table stands for this engine: measured at GPU sizes on an
    engine of the same fingerprint, with Trictrac's random play at every size in both loops."""
    if not table or table.get("sizes") != "gpu":
        return False
    if table.get("device", {}).get("engine", {}).get("fingerprint") != engine["fingerprint"]:
        return False
    rows = {(r["batch"], r["loop"]) for r in table.get("random_play", [])
            if r["env"] == "trictrac"}
    return all((games, loop) in rows for games in TABLE_GAMES
               for loop in ("plain", "with resets"))


def last_table(out: pathlib.Path, committed: pathlib.Path = COMMITTED_TABLE):
    """(path, table) of OUT's own table if it has one, else the committed one, else None."""
    for path in (out / "bench" / "bench-gpu.json", committed):
        table = read_json(path)
        if table is not None:
            return path, table
    return None, None


# --- OUT within the device tool's limits ----------------------------------------------------

def pack(out: pathlib.Path) -> list[str]:
    """Remove from `out` what the device tool would not bring back, so that the rest comes:
    files deeper than MAX_DEPTH folders or over MAX_FILE_BYTES, then (DROP_ORDER first,
    then the largest) files until at most MAX_FILES remain within MAX_TOTAL_BYTES. Returns
    a note for each file removed."""
    notes = []

    def remove(path: pathlib.Path, why: str):
        notes.append(f"{path.relative_to(out)} removed ({why}, {path.stat().st_size:,} bytes)")
        path.unlink()

    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        if len(path.relative_to(out).parts) - 1 > MAX_DEPTH:
            remove(path, f"more than {MAX_DEPTH} folders down")
        elif path.stat().st_size > MAX_FILE_BYTES:
            remove(path, f"over {MAX_FILE_BYTES:,} bytes")
    def rank(path: pathlib.Path):
        name = path.relative_to(out).as_posix()
        first = [i for i, pattern in enumerate(DROP_ORDER) if fnmatch.fnmatch(name, pattern)]
        last = [i for i, pattern in enumerate(KEEP) if fnmatch.fnmatch(name, pattern)]
        return (0, first[0]) if first else (2, -last[0]) if last else (1, -path.stat().st_size)

    files = sorted((p for p in out.rglob("*") if p.is_file()), key=rank)
    while files and (len(files) > MAX_FILES
                     or sum(p.stat().st_size for p in files) > MAX_TOTAL_BYTES):
        remove(files.pop(0), f"more than {MAX_FILES} files or {MAX_TOTAL_BYTES:,} bytes "
                             "together")
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return notes


# --- the session ----------------------------------------------------------------------------

class Session:
    """The session's clock, its record (OUT/session.md) and its log (OUT/session.log)."""

    def __init__(self, out: pathlib.Path, minutes: float, command: str):
        self.out, self.command = out, command
        self.start = time.monotonic()
        self.end = self.start + 60 * minutes
        self.started = datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC")
        self.lines: list[str] = []
        out.mkdir(parents=True, exist_ok=True)

    def left(self) -> float:
        return self.end - time.monotonic()

    def note(self, line: str):
        """A line of the record, printed and written at once."""
        self.lines.append(line)
        print(f"[session {time.monotonic() - self.start:5.0f} s] {line}", flush=True)
        text = "\n".join([f"# GPU session {self.out}", "",
                          f"`{self.command}`, started {self.started}.", "",
                          *[f"- {x}" for x in self.lines], ""])
        tmp = self.out / "session.md.tmp"
        tmp.write_text(text)
        os.replace(tmp, self.out / "session.md")

    def run(self, name: str, argv: list[str], seconds: float, env: dict | None = None,
            results: str | None = None) -> int:
        """Run `argv` in the repository's root, its output into the log and onto stdout
        (and its lines that begin with `results` into the record, that marker left out),
        killed after `seconds`; returns its exit status (-9: killed at its deadline)."""
        self.note(f"{name}: started, {seconds:.0f} s at most: `{shlex.join(argv)}`")
        t0 = time.monotonic()
        deadline = t0 + seconds
        with (self.out / "session.log").open("ab") as log:
            child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env,
                                     process_group=0)  # killed with its children
            try:
                for line in _lines_until(child, deadline):
                    log.write(line)
                    log.flush()
                    sys.stdout.buffer.write(line)
                    sys.stdout.flush()
                    text = line.decode(errors="replace").strip()
                    if results and text.startswith(results):
                        self.note(f"{name}: {text[len(results):].strip()}")
                # its output ends a moment before it exits: not a kill
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            finally:
                killed = child.poll() is None
                if killed:
                    os.killpg(child.pid, 9)
                code = child.wait()
        how = "killed at its deadline" if killed else f"exit status {code}"
        self.note(f"{name}: ended after {time.monotonic() - t0:.0f} s, {how}")
        return -9 if killed else code


def _lines_until(child: subprocess.Popen, deadline: float):
    """The child's output lines until it ends or `deadline` passes (a reader thread, so that
    a silent child is still stopped on time)."""
    lines: queue.Queue = queue.Queue()

    def read():
        for line in iter(child.stdout.readline, b""):
            lines.put(line)
        lines.put(None)
    threading.Thread(target=read, daemon=True).start()
    while (wait := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=min(wait, 1.0))
        except queue.Empty:
            continue
        if line is None:
            return
        yield line


def code_version() -> str:
    """The code's version: git's here, .gpu/source.json's in a copy without git."""
    from trictrac_jax.az import run
    described = git("describe", "--always", "--dirty")
    source = read_json(PREPARED / "source.json") or {}
    return described or source.get("code") or run.code_version()


def child_env(code: str) -> dict:
    """The children's environment: unbuffered, the repository on the path (nothing is
    installed there), the code's version for a tree without git."""
    from trictrac_jax.az.run import CODE_VERSION_ENV
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path, CODE_VERSION_ENV: code}


def bench_part(session: Session, args, engine: dict, env: dict):
    """The speed table, unless the last one is current."""
    path, table = last_table(args.out)
    if table_is_current(table, engine):
        session.note(f"speed table: skipped, {path} is current (engine {engine['commit']}, "
                     f"fingerprint {engine['fingerprint']})")
        return
    measured = (table or {}).get("device", {}).get("engine", {})
    why = "no table" if table is None else (
        f"{path}: engine {measured.get('commit', 'not recorded')}, sizes {table.get('sizes')}")
    seconds = min(BENCH_S, session.left() - PACK_S)
    session.note(f"speed table: measured ({why}; this engine {engine['commit']}, "
                 f"fingerprint {engine['fingerprint']})")
    argv = [sys.executable, "-m", "benchmarks.bench", "--gpu", "--out", str(args.out / "bench"),
            "--budget-seconds", f"{max(1.0, seconds - (BENCH_S - BENCH_BUDGET_S)):.0f}",
            *(["--quick", "--no-pgx"] if args.quick else [])]
    session.run("speed table", argv, seconds, env)


def lab_part(session: Session, args, env: dict, lab=LAB):
    """The lab's measurements (`lab`: name, Python's arguments, the marker of its result
    lines), each within LAB_S seconds; none in a rehearsal."""
    if args.quick:
        session.note("lab: skipped (--quick: its measurements need a GPU)")
        return
    for name, command, marker in lab:
        seconds = min(LAB_S, session.left() - PACK_S)
        if seconds <= 0:
            session.note(f"lab: {name} not started (no time left)")
            continue
        session.run(f"lab: {name}", [sys.executable, *command], seconds, env, marker)


# A session record's lines of a leg (`Session.run`'s notes).
_LEG_STARTED = re.compile(r"^- leg (\d+): started, (\d+) s at most: `.*?--minutes ([\d.]+)", re.M)
_LEG_ENDED = re.compile(r"^- leg (\d+): ended after (\d+) s", re.M)


def leg_overruns(sessions: pathlib.Path = SESSIONS) -> list[float]:
    """Seconds each recorded leg ran past its training minutes (its start, compilation and
    evaluation), from the sessions' `session.md`: the legs that ended before their deadline
    (one killed there says only that it would have taken longer)."""
    overruns = []
    for record in sorted(sessions.glob("*/session.md")):
        text = record.read_text()
        ended = {int(n): int(s) for n, s in _LEG_ENDED.findall(text)}
        for n, allowed, minutes in _LEG_STARTED.findall(text):
            took = ended.get(int(n))
            if took is not None and took < int(allowed) - 1:
                overruns.append(took - 60 * float(minutes))
    return overruns


def leg_reserve(sessions: pathlib.Path = SESSIONS) -> tuple[float, str]:
    """Seconds to keep for a leg beyond its training minutes, and why."""
    overruns = leg_overruns(sessions)
    if not overruns:
        return LEG_START_S, f"no recorded leg; {LEG_START_S} s"
    return (max(overruns) + LEG_MARGIN_S,
            f"the most a recorded leg ran past its training minutes, {max(overruns):.0f} s "
            f"over {len(overruns)} recorded, + {LEG_MARGIN_S} s")


def leg_part(session: Session, args, env: dict):
    """The relay's next leg, on the minutes left."""
    from trictrac_jax.tools import relay
    plan = relay.next_leg(args.relay)
    if args.leg_start_s is None:
        reserve, why = leg_reserve()
    else:
        reserve, why = args.leg_start_s, "--leg-start-s"
    minutes = (session.left() - PACK_S - reserve) / 60
    if minutes < MIN_LEG_MINUTES:
        session.note(f"relay: no leg ({minutes:.1f} min of training left, under "
                     f"{MIN_LEG_MINUTES:g})")
        return
    leg = args.out / "relay" / relay.leg_name(plan.number)
    session.note(f"relay: leg {plan.number} from {plan.init_from}, learning rate "
                 f"{plan.learning_rate:g} ({plan.why}), {minutes:.1f} min of training, "
                 f"{reserve:.0f} s kept for its start and evaluation ({why})")
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="gpu-session-"))
    argv = [sys.executable, "train/gpu_run.py", "--minutes", f"{minutes:.2f}",
            "--init-from", plan.init_from, "--out", str(work / relay.leg_name(plan.number)),
            "--copy-to", str(leg), *(["--config", args.config] if args.config else []),
            *[f"--set={s}" for s in relay.leg_overrides(plan)],
            *[f"--set={s}" for s in args.set]]
    session.run(f"leg {plan.number}", argv, session.left() - PACK_S, env)
    if (leg / "network.msgpack").is_file():
        session.note(f"relay: leg {plan.number} in {leg.relative_to(args.out)}; here: "
                     f"`python -m trictrac_jax.tools.relay adopt OUT`")


def prepare(dest: pathlib.Path = PREPARED, download: bool = True) -> dict:
    """Write dest/source.json (the code's version, the engine's identity) and, when
    `download`, the wheels of WHEELS into dest/wheels/ (pip, for CPython 3.12 on x86-64)."""
    dest.mkdir(parents=True, exist_ok=True)
    source = {"code": git("describe", "--always", "--dirty") or "unknown",
              "engine": engine_identity()}
    (dest / "source.json").write_text(json.dumps(source, indent=1) + "\n")
    if download:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--python-version", "3.12",
                        "--implementation", "cp", "--platform", "manylinux2014_x86_64",
                        "-d", str(dest / "wheels"), *WHEELS], check=True)
    return source


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_session", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prepare", action="store_true",
                   help="here, before sending the tree: the wheels and source.json into .gpu/")
    p.add_argument("--out", type=pathlib.Path, help="the session's folder ($OUT there)")
    p.add_argument("--minutes", type=float, default=9.0,
                   help="the session's minutes, from its start (default 9)")
    p.add_argument("--relay", type=pathlib.Path, default=None,
                   help="the committed relay (default: the repository's relay/)")
    p.add_argument("--work", help="where the leg's run (its checkpoints) goes (default: a "
                                  "new temporary folder; not brought back)")
    p.add_argument("--quick", action="store_true",
                   help="a CPU rehearsal: the speed table at its smallest sizes, no pgx")
    p.add_argument("--config", help="the leg's config (default: gpu_run.py's, base.yaml on a "
                                    "GPU)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="the leg's overrides, after the relay's (a rehearsal's tiny sizes)")
    p.add_argument("--leg-start-s", type=float, default=None,
                   help="seconds kept for the leg beyond its training minutes (default: "
                        "from the recorded sessions, `leg_reserve`)")
    args = p.parse_args(argv)
    if not args.prepare and args.out is None:
        p.error("--out: required (or --prepare)")
    if args.minutes <= 0:
        p.error(f"--minutes: must be > 0, got {args.minutes:g}")
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.prepare:
        source = prepare()
        print(f"wrote {PREPARED / 'source.json'}: {json.dumps(source)}; wheels in "
              f"{PREPARED / 'wheels'}")
        return 0
    from trictrac_jax.tools import relay
    args.relay = args.relay or relay.RELAY
    session = Session(args.out, args.minutes,
                      shlex.join(["python", "-m", "benchmarks.gpu_session", *argv]))
    engine, code = engine_identity(), code_version()
    session.note(f"code {code}, engine {engine['commit']} (fingerprint "
                 f"{engine['fingerprint']}); {args.minutes:g} min")
    env = child_env(code)
    for part in (lambda: bench_part(session, args, engine, env),
                 lambda: lab_part(session, args, env),
                 lambda: leg_part(session, args, env)):
        part()
        for line in pack(args.out):
            session.note(f"packed: {line}")
    session.note(f"done, {session.left():.0f} s before the session's end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
