"""The shipped champion network: it loads without training, plays, and names a bad file."""
import json
import pathlib
import re

import jax
import numpy as np
import pytest

pytest.importorskip("mctx", reason="needs the train extra")

from trictrac_jax.az import champion  # noqa: E402
from trictrac_jax.league import network_agents  # noqa: E402
from trictrac_jax.agents import random_agent  # noqa: E402
from trictrac_jax.env import Trictrac  # noqa: E402
from trictrac_jax.league.matches import play_match, summarise  # noqa: E402


def test_champion_file_is_small_and_complete():
    params, config, provenance = champion.load()
    assert champion.PATH.stat().st_size < 4e6
    assert config.network.width > 0 and provenance.get("command")


def test_champion_beats_random():
    agent = network_agents.load_agent("champion")  # the raw policy: cheap on a CPU
    outcomes = jax.jit(lambda key: play_match(Trictrac(), agent, random_agent, key, 16))(
        jax.random.PRNGKey(0))
    result = summarise(outcomes)
    assert result.wins >= 15, result.summary()


def test_champion_over_the_rolls_beats_random():
    agent = network_agents.load_agent("champion", network_agents.Play(lookahead=4, rolls=True))
    outcomes = jax.jit(lambda key: play_match(Trictrac(), agent, random_agent, key, 4))(
        jax.random.PRNGKey(1))
    result = summarise(outcomes)
    assert result.wins == 4, result.summary()


@pytest.mark.parametrize("content", [b"", b"not msgpack at all", None])
def test_bad_champion_file_is_named(tmp_path, content):
    path = tmp_path / "champion.msgpack"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises((OSError, ValueError), match="champion.msgpack"):
        champion.load(path)


def test_export_from_a_network_file_keeps_its_record(tmp_path):
    """A run's snapshot (a network file) exports as the next champion: same parameters, the
    snapshot's own provenance kept under `recorded`, the given provenance added."""
    source = champion.numbered(1)
    prov = tmp_path / "prov.json"
    prov.write_text(json.dumps({"command": "train it", "evaluation": "vs champion:1"}))
    out = tmp_path / "next.msgpack"
    assert champion.main(["--export", str(source), "--provenance", str(prov),
                          "--out", str(out)]) == 0
    params, config, provenance = champion.load(out)
    old_params, old_config, old_provenance = champion.load(source)
    assert config == old_config and provenance["command"] == "train it"
    assert provenance["recorded"] == old_provenance
    assert provenance["network_file"] == str(source)
    assert champion.main([str(out)]) == 0  # shows any network file's record
    assert champion.main([str(tmp_path / "missing.msgpack")]) == 2
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(old_params)):
        np.testing.assert_array_equal(a, b)


def test_the_records_name_files_that_exist():
    """Every network file a shipped champion's record names, as `python -m
    trictrac_jax.az.champion champion:N` prints it, is in the repository (files moved since
    a record was written are shown at their place now: `champion.MOVED`)."""
    root = pathlib.Path(__file__).resolve().parents[1]
    for n in range(1, champion.count() + 1):
        _, _, provenance = champion.load(champion.file_of(f"champion:{n}"))
        named = set(re.findall(r"[\w./-]+\.msgpack", champion.shown(provenance)))
        local = [p for p in named if "/" in p and not p.startswith(("runs/", "/"))]
        assert all((root / p).is_file() for p in local), (n, local)
