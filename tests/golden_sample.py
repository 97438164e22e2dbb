"""Where the golden data lives, for the tests.

The full golden files (made with the reference engine, described in ../shared/golden/README.md)
sit next to the repository in a development checkout. A user's clone has only the small
committed sample in tests/data/golden (see tests/data/golden/SAMPLE.md), which the tests use
when the full files are absent. Set TRICTRAC_GOLDEN_DIR to point the tests at another copy.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Iterator

REPO_ROOT = Path(__file__).resolve().parents[1]
FULL_GOLDEN_DIR = REPO_ROOT.parent / "shared" / "golden"
SAMPLE_GOLDEN_DIR = REPO_ROOT / "tests" / "data" / "golden"


def golden_dir() -> Path:
    """`$TRICTRAC_GOLDEN_DIR` if set, else `../shared/golden` if it exists, else the sample."""
    env = os.environ.get("TRICTRAC_GOLDEN_DIR")
    if env:
        return Path(env)
    if FULL_GOLDEN_DIR.is_dir():
        return FULL_GOLDEN_DIR
    return SAMPLE_GOLDEN_DIR


def using_sample() -> bool:
    """True when the tests read the committed sample rather than the full golden files."""
    return golden_dir().resolve() == SAMPLE_GOLDEN_DIR.resolve()


def _resolve(name: str) -> Path:
    d = golden_dir()
    path = d / name
    if path.exists():
        return path
    # Accept the name with or without the .gz suffix.
    alt = d / (name[:-3] if name.endswith(".gz") else name + ".gz")
    if alt.exists():
        return alt
    raise FileNotFoundError(f"golden file {name!r} not found in {d}")


def iter_jsonl(name: str) -> Iterator[dict]:
    """Yield the JSON objects of `<golden_dir()>/<name>`, gzip-compressed or plain."""
    path = _resolve(name)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)
