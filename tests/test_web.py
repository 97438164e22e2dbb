"""The browser game (tools/web.py, web_game.py, reasons.py): its HTTP API (bad requests
refused with a reason and changing nothing, a generated corpus of malformed bodies and
queries at every route, sizes bounded, foreign pages and Host headers refused, games kept
apart and bounded, records replayed in their own seat and seed, positions loaded and set
up, free play, hints, refusals that name the rule), and games played by clicking in headless
Chromium, the page checked against the engine's state at every decision.

Chromium and its driver are Debian's (`apt-get install chromium chromium-driver`, as .ci/run
does); a missing browser is an error. `TRICTRAC_WEB_SCREENSHOT=docs/images/web.png` makes
the browser game save the page there in mid-game (the README's picture).
"""
import http.client
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from starlette.testclient import TestClient

from trictrac_jax import io, render
from trictrac_jax.state import NUM_ACTIONS, TS_MARK_POINTS, TS_MOVE, TS_ROLL_DICE
from trictrac_jax.tools import web, web_game, web_http
from trictrac_jax.tools.notation import GO

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = os.environ.get("TRICTRAC_WEB_SCREENSHOT")
# A seed whose game, the test's player (Black, running his checkers farthest) against
# `random`, ends in about 30 of his decisions, some offering hold or go.
GAME_SEED = 4
PORT = 8000  # the address the TestClient's app serves: http://127.0.0.1:8000
HERE = f"http://127.0.0.1:{PORT}"


@pytest.fixture(scope="module")
def engine():
    """The engine against `random`, without the champion's hints (test_hints adds them)."""
    engine = web_game.Engine("random", hints=False)
    engine.warm()
    return engine


def app_client(games, **served) -> TestClient:
    """A TestClient of the app over `games`, served at 127.0.0.1:PORT; a server error
    fails the test."""
    client = TestClient(web.create_app(games, **web.served(PORT, **served)), base_url=HERE)
    client.games = games
    return client


@pytest.fixture
def client(engine):
    with app_client(web_game.Games(engine, max_games=8)) as client:
        yield client


def new_game(client, **body) -> dict:
    response = client.post("/api/games", json={"seat": "white", "seed": 1, **body})
    assert response.status_code == 201, response.text
    return response.json()


def first_action(client, view) -> int:
    """A legal decision of the game's player: its lowest legal action."""
    game = client.games.get(view["game"])
    return int(np.flatnonzero(np.asarray(game.state.legal_action_mask))[0])


def play(client, view, action) -> dict:
    response = client.post(f"/api/games/{view['game']}/play",
                           json={"version": view["version"], "action": action})
    assert response.status_code == 200, response.text
    return response.json()


def board_of(white: dict, black: dict) -> list[int]:
    """A real board from {field: checkers} of each colour."""
    return [white.get(f, 0) - black.get(f, 0) for f in range(1, 25)]


def position_id(board, player: int, dice, turn_stage=TS_MOVE, score=((0, 0), (0, 0))) -> str:
    """The string id of a position (real board, > 0 White), `player` to act; `score`: each
    colour's (points, holes), both able to bredouille."""
    return io.record_string_id({"board": list(board), "active": player + 1,
                                "turn_stage": turn_stage, "dice": list(dice),
                                "p1": [*score[0], 1, 1, 0], "p2": [*score[1], 1, 1, 0]})


def fingerprints(games) -> dict:
    return {g.id: g.fingerprint() for g in games}


# ---------------------------------------------------------------------------------------------
#  The HTTP API
# ---------------------------------------------------------------------------------------------

def test_games_are_kept_apart_by_unguessable_ids(client):
    a = new_game(client, seat="white", seed=1)
    b = new_game(client, seat="black", seed=1)
    assert a["game"] != b["game"] and min(len(a["game"]), len(b["game"])) >= 24
    assert re.fullmatch(r"[A-Za-z0-9_-]+", a["game"])
    untouched = client.games.get(b["game"]).fingerprint()
    after = play(client, a, first_action(client, a))
    assert after["turn"] > a["turn"] and after["game"] == a["game"]
    assert client.games.get(b["game"]).fingerprint() == untouched
    assert client.get(f"/api/games/{b['game']}").json()["string_id"] == b["string_id"]


def test_bad_requests_are_refused_and_change_nothing(client):
    view = new_game(client, seat="white", seed=2)
    new_game(client, seat="black", seed=3)  # another game, which must not change either
    game, version = f"/api/games/{view['game']}", view["version"]
    mask = np.asarray(client.games.get(view["game"]).state.legal_action_mask)
    legal, illegal = int(np.flatnonzero(mask)[0]), int(np.flatnonzero(~mask)[-1])
    sources = {int(f) for f in view["options"]}
    empty = next(f for f in range(1, 25) if view["position"]["board"][f - 1] == 0)
    frm = min(sources)
    wrong_to = next(t for t in range(frm + 1, 25) if t not in view["options"][str(frm)])
    mark_points = position_id(render.position(client.games.get(view["game"]).state).board, 0,
                              (3, 4), turn_stage=TS_MARK_POINTS)
    v = {"version": version}
    bad = [
        ("get", "/api/games/no-such-game", {}, 404),
        ("get", "/api/games/" + "x" * 5000, {}, 404),
        ("post", "/api/games/no-such-game/play", {"json": {**v, "action": 2}}, 404),
        ("get", "/api/no-such-route", {}, 404),
        ("delete", game, {}, 405),
        ("post", game + "/play", {"content": b"{not json"}, 400),
        ("post", game + "/play", {"content": b"[2]"}, 400),
        ("post", game + "/play", {"content": b"\xff\xfe"}, 400),
        ("post", game + "/play", {"content": b"[" * 100_000}, 400),  # deeper than any parser
        ("post", "/api/games", {"content": b'{"record": ' * 5000}, 400),
        ("post", game + "/play", {"content": b'{"version": 0, "action": 1' + b"0" * 5000 + b"}"},
         400),
        ("post", game + "/play", {"json": v}, 422),
        ("post", game + "/play", {"json": {**v, "action": "2"}}, 422),
        ("post", game + "/play", {"json": {**v, "action": 2.0}}, 422),
        ("post", game + "/play", {"json": {**v, "action": True}}, 422),
        ("post", game + "/play", {"json": {**v, "action": NUM_ACTIONS}}, 422),
        ("post", game + "/play", {"json": {**v, "action": -1}}, 422),
        ("post", game + "/play", {"json": {**v, "action": 10**30}}, 422),
        ("post", game + "/play", {"json": {**v, "action": legal, "extra": 1}}, 422),
        ("post", game + "/play", {"json": {"action": legal}}, 422),
        ("post", game + "/play", {"json": {"turn": version, "action": legal}}, 422),
        ("post", game + "/play", {"json": {**v, "action": illegal}}, 409),
        ("post", game + "/play", {"json": {**v, "action": GO}}, 409),
        ("post", game + "/play", {"json": {"version": version + 1, "action": legal}}, 409),
        ("post", game + "/move", {"json": {**v, "from": empty, "to": empty + 1}}, 409),
        ("post", game + "/move", {"json": {**v, "from": frm, "to": wrong_to}}, 409),
        ("post", game + "/move", {"json": {**v, "from": str(frm), "to": 3}}, 422),
        ("post", game + "/move", {"json": {**v, "from": 25, "to": 3}}, 422),
        ("post", game + "/move", {"json": {**v, "from": frm, "to": None}}, 422),
        ("post", game + "/undo", {"json": {"version": version + 5}}, 409),
        ("get", game + "/why?from=abc", {}, 422),
        ("get", game + "/why?from=0", {}, 422),
        ("get", game + "/why?from=3&to=25", {}, 422),
        ("get", game + "/why?from=3&from=4", {}, 422),
        ("get", game + "/why?from=%C2%B3", {}, 422),  # a superscript 3: isdigit, not int
        ("get", game + "/why?from=--3", {}, 422),
        ("get", game + "/why?from=+3", {}, 422),
        ("get", game + "/why?from=%D9%A3", {}, 422),  # an Arabic-Indic 3: int() reads it
        ("get", game + "/why?from=" + "1" * 5000, {}, 422),
        ("get", game + "?log_from=-1", {}, 422),
        ("get", game + "?log_from=" + "9" * 5000, {}, 422),
        ("post", "/api/games", {"json": {"seat": "red"}}, 422),
        ("post", "/api/games", {"json": {"seat": "white", "seed": -1}}, 422),
        ("post", "/api/games", {"json": {"seat": "white", "seed": "7"}}, 422),
        ("post", "/api/games", {"json": {"mode": "both"}}, 422),
        ("post", "/api/games", {"json": {"start": "not an id"}}, 422),
        ("post", "/api/games", {"json": {"start": "AAAA" * 4000}}, 422),
        ("post", "/api/games", {"json": {"start": 12}}, 422),
        ("post", "/api/games", {"json": {"start": mark_points}}, 422),
        ("post", "/api/games", {"json": {"record": {"decisions": "none"}}}, 422),
        ("post", "/api/games", {"json": {"record": {"decisions": [
            {"id": view["string_id"], "action": illegal}]}}}, 422),
        ("post", "/api/games", {"json": {"record": {"decisions": [
            {"id": view["string_id"], "action": "2"}]}}}, 422),
        ("post", "/api/games", {"json": {"seat": "black", "record": {"decisions": []}}}, 422),
        ("post", "/api/positions", {"json": {"board": [1] * 23, "dice": [3, 4]}}, 422),
        ("post", "/api/positions", {"json": {"board": [16] + [0] * 23, "dice": [3, 4]}}, 422),
        ("post", "/api/positions", {"json": {"board": [1] + [0] * 23, "dice": [0, 4]}}, 422),
    ]
    before = fingerprints(client.games)
    for method, path, kwargs, status in bad:
        response = client.request(method.upper(), path, **kwargs)
        assert response.status_code == status, (method, path[:80], kwargs, response.text)
        assert 0 < len(response.json()["error"]) <= web.MAX_REASON, (path[:80], kwargs)
        assert fingerprints(client.games) == before, (path[:80], kwargs)
    refused = client.post(game + "/move", json={**v, "from": empty, "to": empty + 1})
    assert refused.json()["error"] == f"Field {empty} holds none of your checkers."
    stale = client.post(game + "/undo", json={"version": version + 5}).json()
    assert stale["stale"] and "moved on" in stale["error"]
    # said for a player: no developer's words, no echo of the whole input
    unread = client.post("/api/games", json={"start": "A" * 60 + "="}).json()["error"]
    assert "is not a position id" in unread and "padding" not in unread and len(unread) < 200
    assert "action" in client.post(game + "/play", json={**v, "action": "2"}).json()["error"]


def test_sizes_are_bounded_before_the_body_is_read(client):
    view = new_game(client)
    before = fingerprints(client.games)
    padding = b" " * (web.MAX_BODY + 1)
    announced = client.post("/api/games", content=b"{}" + padding,
                            headers={"content-type": "application/json"})
    assert announced.status_code == 413 and str(web.MAX_BODY) in announced.json()["error"]

    def chunks():  # no Content-Length: the body arrives in pieces
        yield b'{"version": 0, "action": 2'
        for _ in range(web.MAX_BODY // 4096 + 2):
            yield b" " * 4096
        yield b"}"
    chunked = client.post(f"/api/games/{view['game']}/play", content=chunks())
    assert chunked.status_code == 413
    wrong_length = client.post("/api/games", content=b"{}", headers={"content-length": "x"})
    assert wrong_length.status_code == 400

    entry = {"id": view["string_id"], "action": 2}
    long_record = {"decisions": [entry] * (web.MAX_RECORD_DECISIONS + 1)}
    refused = client.post("/api/games", json={"record": long_record})
    assert refused.status_code == 422 and "1000" in refused.json()["error"]
    assert fingerprints(client.games) == before


def test_a_slow_replay_is_refused(client, monkeypatch):
    view = new_game(client, seat="black", seed=5)
    view = play(client, view, first_action(client, view))
    record = client.get(f"/api/games/{view['game']}/record").json()
    monkeypatch.setattr(web_game, "MAX_REPLAY_SECONDS", -1.0)
    refused = client.post("/api/games", json={"record": record})
    assert refused.status_code == 422 and "too long to replay" in refused.json()["error"]


def test_foreign_pages_and_hosts_are_refused(engine):
    games = web_game.Games(engine, max_games=8)
    with app_client(games, allow_origins=["https://trictrac.example"]) as client:
        view = new_game(client)
        play_body = {"version": view["version"], "action": first_action(client, view)}
        path = f"/api/games/{view['game']}/play"
        before = fingerprints(games)
        for origin in ("http://evil.example", "null", "http://127.0.0.1:8001",
                       "https://127.0.0.1:8000"):
            refused = client.post(path, json=play_body, headers={"origin": origin})
            assert refused.status_code == 403 and "another site" in refused.json()["error"]
            assert client.post("/api/games", json={}, headers={"origin": origin}
                               ).status_code == 403
        for host in ("evil.example", "evil.example:8000", "127.0.0.1:8001", "127.0.0.1"):
            for method, where in (("GET", "/"), ("GET", "/api/config"), ("POST", path)):
                refused = client.request(method, where, json=play_body if method == "POST"
                                         else None, headers={"host": host})
                assert refused.status_code == 403, (host, where)
                assert "own address" in refused.json()["error"]
        assert fingerprints(games) == before and len(games) == 1
        # a GET from another page cannot read the answer (no CORS): it is served
        assert client.get(path[:-5], headers={"origin": "http://evil.example"}
                          ).status_code == 200
        # this machine's own page, the deployment's, and a program with no Origin
        for origin in ("http://localhost:8000", "https://trictrac.example", None):
            headers = {"origin": origin} if origin else {}
            made = client.post("/api/games", json={}, headers=headers)
            assert made.status_code == 201, (origin, made.text)
        assert client.get("/api/config", headers={"host": "trictrac.example"}).status_code == 200
        assert client.post(path, json=play_body,
                           headers={"origin": "http://localhost:8000"}).status_code == 200
    assert web.origin_of("HTTPS://Trictrac.Example") == "https://trictrac.example"
    for text in ("trictrac.example", "https://trictrac.example/page", "ftp://x", "http://a@b"):
        with pytest.raises(ValueError, match="no origin"):
            web.origin_of(text)


# A generated corpus of malformed requests, at every route.
KEYS = ["seat", "seed", "mode", "start", "record", "version", "from", "to", "action", "board",
        "player", "dice", "points", "holes", "bredouille", "decisions", "id", "turn"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
    | st.text(max_size=30) | st.sampled_from(["white", "black", "bot", "free", "AAAA" * 6]),
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5),
    max_leaves=15)
BODIES = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), JSON, max_size=5).map(
        lambda d: json.dumps(d).encode()),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=80),
    st.integers(150, 20_000).flatmap(lambda n: st.sampled_from(
        [b"[" * n, b'{"record": ' * n, b'{"a": [' * n + b"1" + b"]}" * n])),
    st.integers(20, 6000).map(lambda n: b'{"version": 1' + b"0" * n + b', "action": 2}'),
)
QUERY_TEXT = st.text(alphabet="0123456789-+ .e_x²³¹٣०\u0000%&=", max_size=12) | st.integers(
    20, 5000).map(lambda n: "7" * n)
START = position_id(board_of({1: 15}, {24: 15}), 0, (3, 4))
# A valid body of each route, for one of its values to be spoilt (deeper than the first check).
TEMPLATES = {
    "": {"seat": "black", "seed": 3, "mode": "free", "start": START},
    "record": {"record": {"decisions": [{"id": START, "action": 2, "move": "1-4 1-5"}],
                          "you": "black", "seed": 3, "mode": "bot", "start": START}},
    "/move": {"version": 0, "from": 1, "to": 5},
    "/undo": {"version": 0},
    "/play": {"version": 0, "action": 2},
    "/api/positions": {"board": board_of({1: 15}, {24: 15}), "player": "black", "dice": [3, 4],
                       "points": [0, 5], "holes": [1, 2], "bredouille": [True, False]},
}
DROP = object()


@st.composite
def spoilt(draw, template: dict) -> bytes:
    """`template` with one value (at the top, or in a record's fields, or in its first
    decision) replaced by any JSON value, or dropped, or a key added."""
    body = json.loads(json.dumps(template))
    where = body
    if "record" in body:
        where = draw(st.sampled_from([body, body["record"], body["record"]["decisions"][0]]))
    key = draw(st.sampled_from(sorted(where) + ["extra"]))
    value = draw(JSON | st.just(DROP))
    if value is DROP:
        where.pop(key, None)
    else:
        where[key] = value
    return json.dumps(body).encode()


ROUTES = [("POST", ""), ("POST", "record"), ("POST", "/move"), ("POST", "/undo"),
          ("POST", "/play"), ("GET", ""), ("GET", "/why"), ("GET", "/hint"), ("GET", "/record"),
          ("POST", "/api/positions"), ("GET", "/api/config")]


@st.composite
def malformed_requests(draw, game_ids):
    method, route = draw(st.sampled_from(ROUTES))
    game = draw(st.sampled_from(game_ids) | st.text(min_size=1, max_size=40).map(
        lambda t: urllib.parse.quote(t, safe="")))
    path = route if route.startswith("/api/") else (
        "/api/games" if method == "POST" and route in ("", "record")
        else f"/api/games/{game}{route}")
    query = draw(st.dictionaries(st.sampled_from(["from", "to", "log_from", "x"]), QUERY_TEXT,
                                 max_size=3))
    if query:
        path += "?" + urllib.parse.urlencode(query)
    if method == "GET":
        return method, path, None
    return method, path, draw(spoilt(TEMPLATES[route]) | BODIES)


def test_a_generated_corpus_of_malformed_requests_gets_no_5xx_and_changes_no_game(engine):
    """Bodies (JSON of every shape with the API's keys, bytes, nesting deeper than the
    parser's limit, numbers longer than any integer) and queries (signs, other scripts'
    digits, thousands of digits) at every route: a 4xx with a reason, or a request that was
    valid after all; every game as it was unless the request was valid."""
    games = web_game.Games(engine, max_games=1000)
    with app_client(games) as client:
        ids = [new_game(client, seat=seat, seed=seed)["game"]
               for seat, seed in (("white", 30), ("black", 31))]

        @settings(max_examples=150, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(malformed_requests(ids))
        def check(request):
            method, path, body = request
            before = fingerprints(games)
            response = client.request(method, path, content=body)
            event(f"{method} {response.status_code}")  # pytest --hypothesis-show-statistics
            assert response.status_code < 500, (method, path[:100], body[:100], response.text)
            if response.status_code >= 400:
                error = response.json()["error"]
                assert 0 < len(error) <= 2 * web.MAX_REASON, error
                assert fingerprints(games) == {k: before[k] for k in fingerprints(games)}
        check()


def test_no_request_waits_for_another_game(client):
    """While a game is busy (its lock held, as during a long request on it), another game
    is played and a new one made: no lock is shared between games."""
    busy, other = new_game(client, seed=13), new_game(client, seed=14)
    answers = []

    def requests():
        answers.append(play(client, other, first_action(client, other))["turn"])
        answers.append(new_game(client, seed=15)["turn"])
    with client.games.get(busy["game"]).lock:
        worker = threading.Thread(target=requests)
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive() and len(answers) == 2


def test_the_game_idle_longest_is_dropped_and_the_page_told(engine):
    with app_client(web_game.Games(engine, max_games=2)) as client:
        a, b = new_game(client, seed=5), new_game(client, seed=6)
        assert client.get(f"/api/games/{a['game']}").status_code == 200  # b is now idle longest
        c = new_game(client, seed=7)
        assert len(client.games) == 2
        gone = client.get(f"/api/games/{b['game']}")
        assert gone.status_code == 404 and "no longer on the server" in gone.json()["error"]
        for view in (a, c):
            assert client.get(f"/api/games/{view['game']}").status_code == 200


def test_a_record_replays_in_its_seat_and_seed_and_a_position_loads(client):
    view = new_game(client, seat="black", seed=8)
    while not view["over"]:
        view = play(client, view, first_action(client, view))
    assert view["result"] and client.post(f"/api/games/{view['game']}/play", json={
        "version": view["version"], "action": 2}).status_code == 409
    record = client.get(f"/api/games/{view['game']}/record")
    assert "attachment" in record.headers["content-disposition"]
    record = record.json()
    assert len(record["decisions"]) == view["turn"] and record["position"] == view["string_id"]
    assert (record["you"], record["seed"], record["mode"], record["opponent"]) == (
        "black", 8, "bot", "random")
    assert all(io.from_string_id(d["id"]) is not None for d in record["decisions"])

    replayed = client.post("/api/games", json={"record": record})
    assert replayed.status_code == 201, replayed.text
    replayed = replayed.json()  # in Black's seat again, the result said from his side
    assert (replayed["seat"], replayed["seed"]) == ("black", 8)
    assert replayed["over"] and replayed["string_id"] == view["string_id"]
    assert replayed["turn"] == view["turn"] and replayed["result"] == view["result"]
    assert client.get(f"/api/games/{replayed['game']}/record").json()["decisions"] == \
        record["decisions"]
    forged = json.loads(json.dumps(record))
    forged["decisions"][3]["action"] = 0  # Roll: never a decision
    refused = client.post("/api/games", json={"record": forged})
    assert refused.status_code == 422
    assert "its move 4 (" in refused.json()["error"] and "decision" not in \
        refused.json()["error"]

    # a position where Black is to move, loaded with the player in Black's seat
    decision = next(d for d in record["decisions"][5:] if d["player"] == "Black")
    loaded = new_game(client, seat="black", start=decision["id"])
    assert loaded["string_id"] == decision["id"] and loaded["turn"] == 0 and loaded["yours"]
    assert loaded["position"]["board"] == list(render.position(
        io.from_string_id(decision["id"])).board)


def test_a_record_goes_on_as_its_game_would_have(client):
    """A game broken off and loaded from its record draws the same dice and bot's choices
    after it as the game itself: the seed's key is drawn as it was."""
    view = new_game(client, seat="black", seed=12)
    for _ in range(4):
        view = play(client, view, first_action(client, view))
    record = client.get(f"/api/games/{view['game']}/record").json()
    record["version"] = 1  # a record of the first version: no mode, no opponent
    del record["mode"], record["opponent"]
    loaded = client.post("/api/games", json={"record": record}).json()
    original = client.games.get(view["game"])
    assert client.games.get(loaded["game"]).fingerprint() == original.fingerprint()
    for _ in range(6):
        action = first_action(client, view)
        view, loaded = play(client, view, action), play(client, loaded, action)
    assert client.get(f"/api/games/{loaded['game']}/record").json()["decisions"] == \
        client.get(f"/api/games/{view['game']}/record").json()["decisions"]


def test_free_play_and_a_position_set_up(client):
    """A position set up on the board is checked by the engine; played in free play, the
    person moves both colours, and the record keeps the mode."""
    board = board_of({1: 13, 3: 2}, {24: 15})
    setup = {"board": board, "player": "white", "dice": [5, 2]}
    shown = client.post("/api/positions", json=setup).json()
    assert shown["problems"] == [] and "White to move with 5-2" in shown["said"]
    assert shown["string_id"] == position_id(board, 0, (5, 2)) and "<svg" in shown["svg"]
    wrong = client.post("/api/positions", json={**setup, "board": board_of({1: 8, 2: 8}, {})}
                        ).json()
    assert wrong["problems"] == ["White has 16 checkers on the board (15 at most)",
                                 "Black has no checker on the board"]
    assert "<svg" in wrong["svg"]  # drawn all the same, while it is being set up
    assert client.post("/api/games", json={"start": wrong["string_id"]}).status_code == 422

    view = new_game(client, start=shown["string_id"], mode="free", seed=3)
    colours = []
    for _ in range(4):
        assert view["yours"] and view["mode"] == "free" and view["opponent"] is None
        colours.append(view["position"]["player"])
        assert view["you"] == view["position"]["player"]
        if view["turn"]:
            assert view["other_turn"].startswith(("White rolled", "Black rolled"))
        view = play(client, view, first_action(client, view))
    assert set(colours) == {0, 1}
    record = client.get(f"/api/games/{view['game']}/record").json()
    assert record["mode"] == "free" and record["start"] == shown["string_id"]
    again = client.post("/api/games", json={"record": record}).json()
    assert again["mode"] == "free" and again["string_id"] == view["string_id"]


def test_the_bots_roll_is_said_and_its_arrows_do_not_cross(client):
    view = new_game(client, seat="black", seed=1)  # White, the bot, has rolled and moved
    bot = view["rolls"][0]
    assert view["other_turn"] == f"The bot rolled {bot[0]}-{bot[1]} and played " \
        f"{view['last_move']}." and view["rolls"][1] == view["position"]["dice"]
    # two checkers along one path, or from one stack: side by side, never crossed
    for board, moves in (([2, 0, 0, 0, 2] + [0] * 19, [(1, 5), (1, 5)]),
                         ([3, 0, 0, 0, 0, 1, 1] + [0] * 17, [(1, 6), (1, 7)])):
        a, b = render.arrow_ends(board, 0, moves)
        assert not crossed(a, b), (a, b)


def crossed(a, b) -> bool:
    """Whether arrows a and b, (x1, y1, x2, y2) each and neither vertical, cross: one above
    the other somewhere in the width both span, below it elsewhere."""
    y = lambda s, x: s[1] + (s[3] - s[1]) * (x - s[0]) / (s[2] - s[0])
    xs = np.linspace(max(min(a[0], a[2]), min(b[0], b[2])),
                     min(max(a[0], a[2]), max(b[0], b[2])), 64)
    gaps = [y(a, x) - y(b, x) for x in xs]
    return min(gaps) < 0 < max(gaps)


def test_hints_are_the_champions_best_distinct_moves(engine):
    engine = web_game.Engine("random")  # the same compiled kernels, and the champion's
    with app_client(web_game.Games(engine)) as client:
        for seat, seed in (("black", 9), ("white", 10)):
            view = new_game(client, seat=seat, seed=seed)
            game = client.games.get(view["game"])
            hints = client.get(f"/api/games/{view['game']}/hint").json()["moves"]
            assert 1 <= len(hints) <= web_game.HINTS
            assert all(game.state.legal_action_mask[h["action"]] for h in hints)
            worths = [h["worth"] for h in hints]
            assert worths == sorted(worths, reverse=True)
            afters = {tuple(web_game.moved(game.state._board, game.human, web_game.moves_of(
                game.pairs(engine)[h["action"]]))) for h in hints}
            assert len(afters) == len(hints)  # distinct positions
            legal = dict(game.legal_moves(engine))
            for h in hints:
                assert legal[h["action"]] == h["move"]
                assert len(h["arrows"]) == h["move"].count("-")
        play(client, view, first_action(client, view))
        assert client.get(f"/api/games/{view['game']}/hint").status_code == 200


def test_refusals_name_the_rule_that_forbids_the_move(client):
    """Crafted positions and positions met in random games (their string ids), each with a
    refused move and the rule that forbids it."""
    start = board_of({1: 15}, {24: 15})
    crafted = [
        (start, 0, (5, 2), 1, 5, "With 5 and 2 to play, a checker on field 1 goes to 3, 6, not 5."),
        (start, 0, (5, 2), 24, None, "Field 24 (your opponent's) holds none of your checkers."),
        (start, 1, (5, 2), 24, 23, "With 5 and 2 to play, a checker on field 24 goes to 22, 19, "),
        (board_of({1: 13, 3: 2}, {8: 2, 24: 13}), 0, (5, 2), 3, 8,
         "Field 8 is held by your opponent."),
        (board_of({1: 13, 7: 2}, {24: 15}), 0, (5, 3), 7, 12, "Your rest corner (field 12) is "
         "taken with two checkers at once"),
        (board_of({1: 15}, {18: 2, 24: 13}), 1, (5, 3), 18, 13, "Your rest corner (field 13) is "
         "taken with two checkers at once"),
        (board_of({1: 3, 2: 2, 3: 2, 4: 2, 5: 2, 6: 1, 7: 3}, {24: 15}), 0, (5, 4), 2, 6,
         "You must fill a quarter"),
        (board_of({15: 1, 16: 1, 20: 4, 21: 4, 22: 3, 23: 2}, {6: 15}), 0, (4, 3), 22, 0,
         "You can bear off only once all your checkers are in your last quarter (fields 19-24)."),
        (board_of({1: 15}, {8: 1, 10: 1, 20: 4, 21: 4, 22: 3, 23: 2}), 1, (4, 3), 3, 0,
         "Field 3 holds none of your checkers."),
    ]
    cases = [(position_id(board, player, dice), frm, to, expected)
             for board, player, dice, frm, to, expected in crafted] + [
        ("Aj4/EwAABygGPjgAACE1BiwC", 5, 6, "You must play both dice when you can: after 5-6"),
        ("Bjs3NAAABykVGxgAACM1BiQC", 8, 14, "You may not play into fields 13-18: your opponent"),
        ("Pi0rKAAABz8BGDQAACQyASQS", 7, 13, "No checker may stop on your opponent's rest corner"),
        ("PzgDMDAABR0rHwAAACUaACwC", 12, 15, "The last two checkers on your rest corner (field 12)"),
        ("AAAABi4AAAACPzAAASIKAjUK", 2, 1, "A checker is borne off with a number higher than it "
         "needs only when no move plays exact numbers (e.g. 2-off 1-off)."),
        ("AAAACz0YAAABDS8+ASYqAjUK", 1, 0, "With a number higher than it needs, only your "
         "farthest checker"),
    ]
    for string_id, frm, to, expected in cases:
        player = io.record_from_string_id(string_id)["active"] - 1
        view = new_game(client, seat=web_game.SEATS[player], start=string_id)
        assert view["yours"], string_id
        query = f"from={frm}" + ("" if to is None else f"&to={to}")
        reason = client.get(f"/api/games/{view['game']}/why?{query}").json()["reason"]
        assert reason.startswith(expected), (string_id, frm, to, reason)
        if to is not None:  # and the half-move itself is refused with it, changing nothing
            before = client.games.get(view["game"]).fingerprint()
            refused = client.post(f"/api/games/{view['game']}/move",
                                  json={"version": view["version"], "from": frm, "to": to})
            assert refused.status_code == 409 and refused.json()["error"] == reason
            assert client.games.get(view["game"]).fingerprint() == before


def test_every_refused_half_move_is_explained_and_every_allowed_one_is_legal(engine):
    """Over random games, each half-move of each die from each field: allowed exactly when it
    starts a legal move, and a refusal names a rule (never the catch-all)."""
    for seed, seat in ((11, 0), (12, 1)):
        game = web_game.Game.create(engine, seat, seed)
        for _ in range(25):
            if bool(game.state.done):
                break
            options, sign = game.options(engine), 1 if seat == 0 else -1
            for frm in range(1, 25):
                for die in set(int(d) for d in np.asarray(game.state._dice)):
                    to = frm + sign * die
                    to = to if 1 <= to <= 24 else 0
                    reason = game.why(engine, frm, to)
                    assert (reason is None) == (to in options.get(frm, [])), (frm, to, reason)
                    assert reason is None or not any(vague in reason for vague in (
                        "is in no legal move here", "goes with no legal move")), reason
            game.play(engine, min(game.sequences(engine).values()) if game.sequences(engine)
                      else GO)


# ---------------------------------------------------------------------------------------------
#  The live server
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(engine):
    """The server in a thread; with the champion's hints when it takes the screenshot."""
    if SCREENSHOT:
        engine = web_game.Engine("random")
        engine.warm()
    server = web.Server(web_game.Games(engine, max_games=8)).start()
    yield server
    server.stop()


def test_the_live_server_refuses_a_large_body_unread_and_a_foreign_host(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        # 1 GB announced, a few bytes sent: answered at once (a server reading the body
        # first would wait for the rest until the timeout)
        connection.putrequest("POST", "/api/games")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(10**9))
        connection.endheaders(b"{")
        assert connection.getresponse().status == 413
    finally:
        connection.close()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.putrequest("POST", "/api/games")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        try:
            for _ in range(web.MAX_BODY // 65536 + 2):
                connection.send(b"10000\r\n" + b" " * 65536 + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):  # refused before the end
            pass
        assert connection.getresponse().status == 413
    finally:
        connection.close()
    for host in ("evil.example", f"localhost:{server.port}"):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            connection.putrequest("GET", "/api/config", skip_host=True)
            connection.putheader("Host", host)
            connection.endheaders()
            assert connection.getresponse().status == (403 if host == "evil.example" else 200)
        finally:
            connection.close()


# ---------------------------------------------------------------------------------------------
#  The HTTP layer, byte by byte (web_http: smuggling shapes, deadlines, refusals in JSON)
# ---------------------------------------------------------------------------------------------

STALL_SECONDS = 1.0  # the test server's deadline for a request (REQUEST_SECONDS in use)
GIVE_UP_SECONDS = 60.0  # a client's patience: a server without the deadline holds it longer


@pytest.fixture(scope="module")
def raw_server(engine):
    """A live server whose requests must arrive whole within STALL_SECONDS; its `games`."""
    games = web_game.Games(engine, max_games=8)
    server = web.Server(games, request_seconds=STALL_SECONDS).start()
    server.games = games
    yield server
    server.stop()


def exchange(port: int, data: bytes) -> bytes:
    """Everything the server answers on one connection to `data` (sent in one write), up to
    its closing; an error if it holds the connection GIVE_UP_SECONDS."""
    with socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP_SECONDS) as s:
        s.sendall(data)
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except ConnectionResetError:  # closed before reading all we sent: the answer stands
            pass
        return answer


def one_refusal(answer: bytes) -> tuple[int, str]:
    """The status and reason of an answer that is one JSON refusal, closing."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert len(body) == int(headers["content-length"]), "a second answer followed"
    reason = json.loads(body)["error"]
    assert isinstance(reason, str) and 0 < len(reason) <= 200 and "b'" not in reason, reason
    return int(lines[0].split()[1]), reason


def raw_request(port: int, method: str, path: str, headers: list[str], body: bytes = b"",
                version: str = "1.1") -> bytes:
    return ("\r\n".join([f"{method} {path} HTTP/{version}", f"Host: 127.0.0.1:{port}",
                         *headers, "", ""]).encode() + body)


def test_request_smuggling_shapes_are_refused_in_json_and_run_nothing(raw_server):
    port = raw_server.port
    view = json.load(urllib.request.urlopen(urllib.request.Request(
        f"http://127.0.0.1:{port}/api/games", data=b'{"seed": 3, "mode": "free"}',
        headers={"Content-Type": "application/json"})))
    frm = min(int(f) for f in view["options"])
    move = json.dumps({"version": view["version"], "from": frm,
                       "to": view["options"][str(frm)][0]}).encode()
    hidden = raw_request(port, "POST", f"/api/games/{view['game']}/move",
                         ["Content-Type: application/json", f"Content-Length: {len(move)}"],
                         move)
    assert hidden.count(b"\r\n\r\n") == 1
    before = fingerprints(raw_server.games)
    chunked_end = b"0\r\n\r\n"
    shapes = {  # each followed, in the same write, by a move on the game
        "both lengths": ["Content-Length: 5", "Transfer-Encoding: chunked"],
        "both, chunked first": ["Transfer-Encoding: chunked", "Content-Length: 5"],
        "Transfer-Encoding twice": ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
        "Transfer-Encoding listed twice": ["Transfer-Encoding: chunked, chunked"],
        "Transfer-Encoding not chunked": ["Transfer-Encoding: xchunked"],
        "Transfer-Encoding with identity": ["Transfer-Encoding: identity, chunked"],
        "a space before the colon": ["Transfer-Encoding : chunked"],
        "Transfer-Encoding folded": ["Transfer-Encoding: chunked", " identity"],
        "two lengths": ["Content-Length: 5", "Content-Length: 0"],
        "two lengths in a list": ["Content-Length: 0, 5"],
        "a signed length": ["Content-Length: +0"],
    }
    for name, headers in shapes.items():
        status, reason = one_refusal(exchange(port, raw_request(
            port, "POST", "/api/games", ["Content-Type: application/json", *headers],
            chunked_end) + hidden))
        assert status == 400 and "HTTP/1.1" in reason, (name, reason)
    status, reason = one_refusal(exchange(port, raw_request(
        port, "POST", "/api/games", ["Transfer-Encoding: chunked"], chunked_end, "1.0")))
    assert status == 400 and "HTTP/1.0" in reason
    assert fingerprints(raw_server.games) == before  # no move ran, no game was made
    assert exchange(port, raw_request(port, "GET", f"/api/games/{view['game']}",
                                      ["Connection: close"])).startswith(b"HTTP/1.1 200")

    # headers over 16 KiB, whole or still arriving; a request line that is none
    big = ["X-Padding: " + "a" * web_http.MAX_HEAD]
    for data in (raw_request(port, "GET", "/api/config", big),
                 raw_request(port, "GET", "/api/config", big)[:-4]):  # the last line unended
        status, reason = one_refusal(exchange(port, data))
        assert status == 431 and str(web_http.MAX_HEAD) in reason
    assert one_refusal(exchange(port, b"HELLO\r\n\r\n"))[0] == 400


def test_a_stalled_request_is_closed_with_a_json_408(raw_server):
    port = raw_server.port
    stalled = {  # each sent and never finished
        "headers never ended": raw_request(port, "GET", "/api/config", [])[:-2],
        "a body short of its length": raw_request(
            port, "POST", "/api/games", ["Content-Length: 100"], b'{"seed": '),
        "a chunk of 2^64 - 1 bytes": raw_request(
            port, "POST", "/api/games", ["Transfer-Encoding: chunked"],
            b"ffffffffffffffff\r\n{"),
        "a second request unfinished": raw_request(
            port, "GET", "/api/config", []) + raw_request(port, "GET", "/api/config", [])[:20],
    }
    answers = {}

    def stall(name, data):
        answers[name] = exchange(port, data)

    threads = [threading.Thread(target=stall, args=item) for item in stalled.items()]
    threads.append(threading.Thread(target=stall, args=("nothing sent", b"")))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.pop("nothing sent") == b""  # closed without a word: no request began
    config = answers.pop("a second request unfinished")
    assert config.startswith(b"HTTP/1.1 200")
    answers["a second request unfinished"] = config[config.index(b"HTTP/1.1 408"):]
    for name, answer in answers.items():
        status, reason = one_refusal(answer)
        assert status == 408 and f"{STALL_SECONDS:g} s" in reason, (name, reason)

    # a body refused before it is read (413) does not keep its connection either
    answer = exchange(port, raw_request(port, "POST", "/api/games",
                                        [f"Content-Length: {10 ** 9}"], b"{"))
    assert answer.startswith(b"HTTP/1.1 413") and b'"error"' in answer


def test_a_client_gone_mid_request_is_one_line_in_the_log(raw_server):
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("uvicorn")
    logger.addHandler(handler)
    try:
        port = raw_server.port
        with socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP_SECONDS) as s:
            s.sendall(raw_request(port, "POST", "/api/games", ["Content-Length: 50"], b"{"))
        for _ in range(int(GIVE_UP_SECONDS / 0.05)):  # the server's thread logs it
            if records:
                break
            time.sleep(0.05)
        # a request answered after it: the cut-off one's handler has ended meanwhile
        assert exchange(port, raw_request(port, "GET", "/api/config", ["Connection: close"])
                        ).startswith(b"HTTP/1.1 200")
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage().split(" - ")[1] for r in records] == [
        "the client closed its connection in the middle of a request."]
    assert not any(r.exc_info for r in records)


# ---------------------------------------------------------------------------------------------
#  The page in a real browser
# ---------------------------------------------------------------------------------------------

READ_PAGE = """
const svg = document.querySelector('#board svg');
if (!svg) return {game: null, busy: true};
const drawn = (sel) => [...svg.querySelectorAll(sel)].filter((e) => !e.closest('#overlay'));
return {
  checkers: drawn('circle[r="21"]').map((c) => [+c.getAttribute('cx'), +c.getAttribute('cy'),
                                               c.getAttribute('fill')]),
  counts: drawn('text.stack-count').map((t) => [+t.getAttribute('x'), +t.getAttribute('y'),
                                                +t.textContent]),
  arrows: svg.querySelectorAll('g.move-arrows line').length,
  quarters: [...svg.querySelectorAll('text.quarter-label')].map((t) => t.textContent),
  score: [0, 1].map((c) => ['points', 'holes', 'bredouille'].map(
    (k) => document.getElementById(`score-${c}-${k}`).textContent)),
  names: [0, 1].map((c) => document.getElementById(`score-${c}-name`).textContent),
  rolls: [0, 1].map((c) => document.getElementById(`score-${c}-roll`).dataset.roll),
  note: document.getElementById('score-note').hidden ? ''
    : document.getElementById('score-note').textContent,
  game: new URLSearchParams(location.hash.slice(1)).get('game'),
  turn: document.body.dataset.turn, pending: document.body.dataset.pending,
  version: document.body.dataset.version, setup: document.body.dataset.setup,
  busy: !!document.body.dataset.busy,
  message: document.getElementById('message').textContent,
};
"""


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium through its own chromedriver (Selenium Manager skipped:
    nothing is downloaded), in a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: apt-get install -y chromium "
                                    "chromium-driver (as .ci/run does)")
    profile = tempfile.mkdtemp(prefix="trictrac-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={profile}", "--window-size=1400,940"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


class Page:
    """The page in the browser, and the same game through the API."""

    def __init__(self, driver, url: str):
        from selenium.webdriver.support.ui import WebDriverWait
        self.driver, self.url = driver, url
        self.wait = lambda until: WebDriverWait(driver, 30, poll_frequency=0.02).until(
            lambda d: until(self.read()))

    def open(self) -> None:
        """A fresh load of the page, which starts a game of its own."""
        self.driver.get("about:blank")
        self.driver.get(self.url)
        self.wait(lambda page: page["game"] and not page["busy"])

    def read(self) -> dict:
        return self.driver.execute_script(READ_PAGE)

    def api(self, path: str, body: dict | None = None) -> dict:
        """The page's game through the API: GET `path`, or POST `body` to it."""
        url = self.url + "api/games/" + self.read()["game"] + path
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as r:
            return json.load(r)

    def click(self, element_id: str) -> None:
        self.driver.find_element("id", element_id).click()

    def click_and_wait(self, element_id: str, until) -> dict:
        self.click(element_id)
        return self.wait(lambda page: not page["busy"] and until(page))

    def choose(self, name: str, value: str) -> None:
        self.driver.find_element("css selector", f"input[name={name}][value={value}]").click()

    def load_position(self, seat: str, string_id: str) -> dict:
        """A game from the position `string_id`, loaded through the form; its view."""
        self.choose("seat", seat)
        self.driver.find_element("id", "position").send_keys(string_id)
        first = self.read()["game"]
        self.driver.find_element("css selector", "#load-position button").click()
        self.wait(lambda p: p["game"] != first and not p["busy"])
        return self.api("")

    def new_game(self, button: str) -> dict:
        """Click `button`, which starts a game; the new game's view."""
        first = self.read()["game"]
        self.click_and_wait(button, lambda p: p["game"] != first)
        return self.api("")

    def field(self, field: int) -> str:
        return f"field-{field}" if field else "field-off"

    def play_move(self, view: dict) -> dict:
        """The mover's move by clicking (each checker from the lowest field it can leave,
        to the tray when it can, else to the lowest field), checked half-move by half-move;
        then Confirm. The view after it."""
        turn = int(view["turn"])
        while view["complete"] is None:
            frm = min(int(f) for f in view["options"])
            targets = view["options"][str(frm)]
            pending = len(view["pending"])
            self.click(self.field(frm))
            self.click_and_wait(self.field(0 if 0 in targets else min(targets)),
                                lambda p: p["pending"] == str(pending + 1))
            view = self.api("")
            check_page(self.read(), view)
        self.click_and_wait("confirm", lambda p: int(p["turn"]) > turn)
        return self.api("")


def drawn_board(page: dict) -> list[int]:
    """The board as the page draws it: checkers counted by where they stand, a stack's
    number where it shows one."""
    column = {render.field_column(f): f for f in range(1, 25)}
    x_of = {x for x, _ in column}
    board = [0] * 24
    for cx, cy, fill in page["checkers"]:
        assert cx in x_of, cx
        top = cy < render.Y0 + render.FELT_H / 2
        board[column[(cx, top)] - 1] += 1 if fill == "url(#tt-white)" else -1
    for x, y, count in page["counts"]:  # the stack's number replaces the checkers drawn
        f = column[(x, y < render.Y0 + render.FELT_H / 2)]
        assert abs(board[f - 1]) == render.SVG_STACK
        board[f - 1] = int(count * np.sign(board[f - 1]))
    return board


def check_page(page: dict, view: dict) -> None:
    """The page's board, score panel (with each side's last roll) and message are those of
    the engine's state (by its id) and of the game's view."""
    rec = io.record_from_string_id(view["string_id"])
    board = render.position(io.state_from_record(rec)).board
    if not view["pending"]:
        assert drawn_board(page) == list(board)
    assert drawn_board(page) == view["position"]["board"]
    for colour, player in enumerate((rec["p1"], rec["p2"])):
        points, holes, bredouille = player[:3]
        assert page["score"][colour] == [str(points), str(holes), "yes" if bredouille else "no"]
        roll = view["rolls"][colour]
        assert page["rolls"][colour] == (f"{roll[0]}-{roll[1]}" if roll else "")
    assert page["note"] == (web_game.PAST_12 if max(rec["p1"][1], rec["p2"][1]) > 12 else "")
    if view["over"]:
        assert page["message"] == view["result"]
    elif view["other_turn"] and not view["pending"]:
        assert page["message"].startswith(view["other_turn"]), page["message"]


def test_a_whole_game_by_clicking_in_chromium(engine, server, browser):
    page = Page(browser, server.url)
    page.open()
    page.choose("seat", "black")
    browser.find_element("id", "seed").send_keys(str(GAME_SEED))
    view = page.new_game("new")
    went, decisions, arrows_seen = False, 0, 0
    assert view["seat"] == "black" and view["seed"] == GAME_SEED
    assert page.read()["names"] == ["White (bot)", "Black (you) ◀"]

    while True:
        shown = page.read()
        check_page(shown, view)
        if view["over"]:
            break
        decisions += 1
        if view["last_move"]:
            assert shown["arrows"] == len(view["last_move"].split())
            arrows_seen += 1
        if decisions == 1:  # a click on a field without a checker: the rule, nothing changed
            empty = next(f for f in range(1, 25) if view["position"]["board"][f - 1] == 0)
            page.click_and_wait(page.field(empty), lambda p: p["message"].startswith("Field"))
            assert page.read()["message"] == page.api(f"/why?from={empty}")["reason"]
            assert page.api("")["string_id"] == view["string_id"]
        if SCREENSHOT and decisions == 12:
            page.click_and_wait("hint", lambda p: browser.find_elements("css selector", "#hints li"))
            browser.save_screenshot(SCREENSHOT)
        turn = int(shown["turn"])
        if view["go"] and not went:
            went = True
            page.click_and_wait("go", lambda p: int(p["turn"]) > turn)
        elif view["pass"] is not None:
            page.click_and_wait("pass", lambda p: int(p["turn"]) > turn)
        else:
            if decisions == 2:  # a half-move taken back
                frm = min(int(f) for f in view["options"])
                page.click(page.field(frm))
                page.click_and_wait(page.field(view["options"][str(frm)][0]),
                                    lambda p: p["pending"] == "1")
                check_page(page.read(), page.api(""))
                page.click_and_wait("undo", lambda p: p["pending"] == "0")
                assert page.api("")["string_id"] == view["string_id"]
            page.play_move(view)  # Black runs his checkers farthest
        view = page.api("")

    assert went and arrows_seen > 0
    holes = view["position"]["holes"]
    assert max(holes) >= 12 and view["result"].startswith(
        "You win" if holes[1] > holes[0] else "The bot wins")
    # the same seed and the same choices make the same game through the API
    record = page.api("/record")
    with app_client(web_game.Games(engine)) as client:
        again = new_game(client, seat="black", seed=GAME_SEED)
        for decision in record["decisions"][again["turn"]:]:
            if decision["player"] == "Black":
                again = play(client, again, decision["action"])
        assert client.get(f"/api/games/{again['game']}/record").json()["decisions"] == \
            record["decisions"]


def test_a_loaded_position_borne_off_by_clicking_in_chromium(server, browser):
    """Black bears off two checkers through the tray, in a position loaded from its id."""
    board = [-2, -2, -2, -3, -3, -3] + [0] * 12 + [3, 3, 3, 2, 2, 2]
    string_id = position_id(board, 1, (6, 5))
    page = Page(browser, server.url)
    page.open()
    view = page.load_position("black", string_id)
    assert view["string_id"] == string_id and view["yours"]
    check_page(page.read(), view)
    for pending, frm in enumerate((6, 5)):
        page.click(page.field(frm))
        page.click_and_wait("field-off", lambda p: p["pending"] == str(pending + 1))
    check_page(page.read(), page.api(""))
    page.click_and_wait("confirm", lambda p: p["turn"] != "0")
    view = page.api("")
    check_page(page.read(), view)
    record = page.api("/record")
    assert record["start"] == string_id and record["decisions"][0]["move"] in (
        "6-off 5-off", "5-off 6-off")


def test_a_loaded_record_seats_the_player_in_chromium(engine, server, browser, tmp_path):
    """Records of games played as Black, loaded with White chosen in the form: the player
    is Black again, the result is his, he plays on by clicking; a tab left behind by
    another that played refreshes itself."""
    with app_client(web_game.Games(engine)) as client:
        view = new_game(client, seat="black", seed=8)
        for n in range(1000):
            if n == 3:
                broken_off = client.get(f"/api/games/{view['game']}/record").json()
            if view["over"]:
                break
            view = play(client, view, first_action(client, view))
        finished = client.get(f"/api/games/{view['game']}/record").json()
    page = Page(browser, server.url)
    page.open()
    page.choose("seat", "white")
    for record in (finished, broken_off):
        path = tmp_path / "record.json"
        path.write_text(json.dumps(record))
        first = page.read()["game"]
        browser.find_element("id", "record-file").send_keys(str(path))
        page.wait(lambda p: p["game"] != first and not p["busy"])
        view = page.api("")
        assert (view["seat"], view["seed"], view["turn"]) == (
            "black", 8, len(record["decisions"]))
        check_page(page.read(), view)  # the result, when over, under the board
        assert page.read()["names"][1].startswith("Black (you)")
        if record is finished:
            holes = view["position"]["holes"]
            assert view["over"] and view["result"] == finished["result"]
            assert view["result"].startswith("You win" if holes[1] > holes[0] else "The bot")
    assert view["yours"] and not view["over"]
    view = page.play_move(view)
    check_page(page.read(), view)

    # another tab makes a half-move: this one, clicking on its old board, catches up
    frm = min(int(f) for f in view["options"])
    page.api("/move", {"version": view["version"], "from": frm,
                       "to": view["options"][str(frm)][0]})
    page.click(page.field(frm))
    page.click_and_wait(page.field(view["options"][str(frm)][0]),
                        lambda p: p["pending"] == "1")
    assert "moved on" in page.read()["message"]
    view = page.api("")
    check_page(page.read(), view)
    # and a tab shown again after another played catches up by itself
    page.api("/undo", {"version": view["version"]})
    browser.execute_script("document.dispatchEvent(new Event('visibilitychange'))")
    page.wait(lambda p: not p["busy"] and p["pending"] == "0")
    assert "moved on in another tab" in page.read()["message"]


def test_free_play_from_a_position_set_up_by_clicking_in_chromium(server, browser):
    """A position set up on the board by clicking (checked by the engine as it is edited),
    then played in free play: White's move and Black's by clicking; the quarters' French
    names on the board."""
    from selenium.webdriver.support.ui import Select
    page = Page(browser, server.url)
    page.open()
    page.choose("mode", "free")
    page.click_and_wait("setup", lambda p: p["setup"])
    start = board_of({1: 15}, {24: 15})
    page.click_and_wait("setup-initial", lambda p: p["setup"] == position_id(
        start, 0, page.api("")["position"]["dice"]))
    for die, value in (("setup-die-0", "5"), ("setup-die-1", "2")):
        Select(browser.find_element("id", die)).select_by_value(value)
    page.wait(lambda p: not p["busy"] and p["setup"] == position_id(start, 0, (5, 2)))
    steps = [("off", 1, {1: 14}), ("off", 1, {1: 13}), ("white", 3, {1: 13, 3: 1}),
             ("white", 3, {1: 13, 3: 2})]
    for tool, field, white in steps:
        page.choose("tool", tool)
        expected = position_id(board_of(white, {24: 15}), 0, (5, 2))
        page.click_and_wait(page.field(field), lambda p: p["setup"] == expected)
    assert page.read()["message"].startswith("White to move with 5-2:")
    page.click_and_wait("french", lambda p: p["quarters"] == [
        "petit jan", "grand jan", "jan de retour"])
    page.click_and_wait("french", lambda p: p["quarters"] == [])

    view = page.new_game("setup-play")
    assert view["mode"] == "free" and view["string_id"] == expected and view["yours"]
    assert page.read()["names"] == ["White ◀", "Black"]
    check_page(page.read(), view)
    for colour in (0, 1, 0):
        assert view["yours"] and view["position"]["player"] == colour
        if view["pass"] is not None:
            turn = int(view["turn"])
            page.click_and_wait("pass", lambda p: int(p["turn"]) > turn)
            view = page.api("")
        else:
            view = page.play_move(view)
        check_page(page.read(), view)
    record = page.api("/record")
    assert record["mode"] == "free" and [d["player"] for d in record["decisions"]] == [
        "White", "Black", "White"]


def test_a_double_hole_past_12_and_a_set_up_from_scratch_in_chromium(server, browser):
    """White, at 11 points and 11 holes with his bredouille, rolls: any roll hits Black's
    blot on 11 for points, a hole won in bredouille, two holes: 13 to 0, as the reference
    counts them (its `mark_points` adds the holes in full), and the page says why. Then
    set-up's starting position and empty board start from a score of zero, not the game's."""
    from selenium.webdriver.support.ui import Select
    board = board_of({1: 9, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1}, {11: 1, 24: 14})
    page = Page(browser, server.url)
    page.open()
    view = page.load_position("white", position_id(board, 0, (1, 1), TS_ROLL_DICE,
                                                   score=((11, 11), (0, 0))))
    assert view["over"] and view["position"]["holes"] == [13, 0]
    shown = page.read()
    check_page(shown, view)
    assert shown["message"] == f"You win, 13 holes to 0. {web_game.PAST_12}"
    assert shown["note"] == web_game.PAST_12 and shown["score"][0][1] == "13"

    page.click_and_wait("setup", lambda p: p["setup"])
    dice = [int(Select(browser.find_element("id", f"setup-die-{i}")).first_selected_option
                .get_attribute("value")) for i in (0, 1)]
    score = lambda: [browser.find_element("id", f"setup-{what}-{i}").get_attribute("value")
                     for what in ("points", "holes") for i in (0, 1)]
    assert score() != ["0"] * 4  # the game's own
    for button, board in (("setup-initial", board_of({1: 15}, {24: 15})),
                          ("setup-empty", [0] * 24)):
        expected = web_game.setup_record(board, 0, dice)["id"]
        page.click_and_wait(button, lambda p: p["setup"] == expected)
        assert score() == ["0"] * 4
        browser.execute_script("const e = document.getElementById('setup-holes-1');"
                               "e.value = 5; e.dispatchEvent(new Event('change'));")
        page.wait(lambda p: not p["busy"] and p["setup"] == web_game.setup_record(
            board, 0, dice, holes=(0, 5))["id"])
