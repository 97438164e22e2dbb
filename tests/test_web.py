"""The browser game (tools/web.py, web_game.py, reasons.py): its HTTP API (bad requests
refused with a reason and changing nothing, games kept apart and bounded, records replayed,
positions loaded, hints, refusals that name the rule), and whole games played by clicking in
headless Chromium, the page checked against the engine's state at every decision.

Chromium and its driver are Debian's (`apt-get install chromium chromium-driver`, as .ci/run
does); a missing browser is an error. `TRICTRAC_WEB_SCREENSHOT=docs/images/web.png` makes
the browser game save the page there in mid-game (the README's picture).
"""
import json
import os
import re
import shutil
import tempfile
import urllib.request

import numpy as np
import pytest
from starlette.testclient import TestClient

from trictrac_jax import io, render
from trictrac_jax.state import NUM_ACTIONS, TS_MARK_POINTS, TS_MOVE
from trictrac_jax.tools import web, web_game
from trictrac_jax.tools.notation import GO

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = os.environ.get("TRICTRAC_WEB_SCREENSHOT")
# A seed whose game, the test's player (Black, running his checkers farthest) against
# `random`, ends in about 30 of his decisions, some offering hold or go.
GAME_SEED = 4


@pytest.fixture(scope="module")
def engine():
    """The engine against `random`, without the champion's hints (test_hints adds them)."""
    engine = web_game.Engine("random", hints=False)
    engine.warm()
    return engine


@pytest.fixture
def client(engine):
    games = web_game.Games(engine, max_games=8)
    with TestClient(web.create_app(games)) as client:  # a server error fails the test
        client.games = games
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
                           json={"turn": view["turn"], "action": action})
    assert response.status_code == 200, response.text
    return response.json()


def board_of(white: dict, black: dict) -> list[int]:
    """A real board from {field: checkers} of each colour."""
    return [white.get(f, 0) - black.get(f, 0) for f in range(1, 25)]


def position_id(board, player: int, dice, turn_stage=TS_MOVE) -> str:
    """The string id of a position (real board, > 0 White), `player` to act."""
    return io.record_string_id({"board": list(board), "active": player + 1,
                                "turn_stage": turn_stage, "dice": list(dice),
                                "p1": [0, 0, 1, 1, 0], "p2": [0, 0, 1, 1, 0]})


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
    game, turn = f"/api/games/{view['game']}", view["turn"]
    mask = np.asarray(client.games.get(view["game"]).state.legal_action_mask)
    legal, illegal = int(np.flatnonzero(mask)[0]), int(np.flatnonzero(~mask)[-1])
    sources = {int(f) for f in view["options"]}
    empty = next(f for f in range(1, 25) if view["position"]["board"][f - 1] == 0)
    frm = min(sources)
    wrong_to = next(t for t in range(frm + 1, 25) if t not in view["options"][str(frm)])
    mark_points = position_id(render.position(client.games.get(view["game"]).state).board, 0,
                              (3, 4), turn_stage=TS_MARK_POINTS)
    bad = [
        ("get", "/api/games/no-such-game", {}, 404),
        ("post", "/api/games/no-such-game/play", {"json": {"turn": 0, "action": 2}}, 404),
        ("get", "/api/no-such-route", {}, 404),
        ("delete", game, {}, 405),
        ("post", game + "/play", {"content": b"{not json"}, 400),
        ("post", game + "/play", {"content": b"[2]"}, 400),
        ("post", game + "/play", {"content": b"\xff\xfe"}, 400),
        ("post", game + "/play", {"json": {"turn": turn}}, 422),
        ("post", game + "/play", {"json": {"turn": turn, "action": "2"}}, 422),
        ("post", game + "/play", {"json": {"turn": turn, "action": 2.0}}, 422),
        ("post", game + "/play", {"json": {"turn": turn, "action": True}}, 422),
        ("post", game + "/play", {"json": {"turn": turn, "action": NUM_ACTIONS}}, 422),
        ("post", game + "/play", {"json": {"turn": turn, "action": -1}}, 422),
        ("post", game + "/play", {"json": {"action": legal}}, 422),
        ("post", game + "/play", {"json": {"turn": turn, "action": illegal}}, 409),
        ("post", game + "/play", {"json": {"turn": turn, "action": GO}}, 409),
        ("post", game + "/play", {"json": {"turn": turn + 1, "action": legal}}, 409),
        ("post", game + "/move", {"json": {"turn": turn, "from": empty, "to": empty + 1}}, 409),
        ("post", game + "/move", {"json": {"turn": turn, "from": frm, "to": wrong_to}}, 409),
        ("post", game + "/move", {"json": {"turn": turn, "from": str(frm), "to": 3}}, 422),
        ("post", game + "/move", {"json": {"turn": turn, "from": 25, "to": 3}}, 422),
        ("post", game + "/move", {"json": {"turn": turn, "from": frm, "to": None}}, 422),
        ("post", game + "/undo", {"json": {"turn": turn + 5}}, 409),
        ("get", game + "/why?from=abc", {}, 422),
        ("get", game + "/why?from=0", {}, 422),
        ("get", game + "/why?from=3&to=25", {}, 422),
        ("get", game + "?log_from=-1", {}, 422),
        ("post", "/api/games", {"json": {"seat": "red"}}, 422),
        ("post", "/api/games", {"json": {"seat": "white", "seed": -1}}, 422),
        ("post", "/api/games", {"json": {"seat": "white", "seed": "7"}}, 422),
        ("post", "/api/games", {"json": {"start": "not an id"}}, 422),
        ("post", "/api/games", {"json": {"start": 12}}, 422),
        ("post", "/api/games", {"json": {"start": mark_points}}, 422),
        ("post", "/api/games", {"json": {"record": {"decisions": "none"}}}, 422),
        ("post", "/api/games", {"json": {"record": {"decisions": [
            {"id": view["string_id"], "action": illegal}]}}}, 422),
        ("post", "/api/games", {"json": {"record": {"decisions": [
            {"id": view["string_id"], "action": "2"}]}}}, 422),
    ]
    before = {g.id: g.fingerprint() for g in client.games}
    for method, path, kwargs, status in bad:
        response = client.request(method.upper(), path, **kwargs)
        assert response.status_code == status, (method, path, kwargs, response.text)
        assert response.json()["error"], (path, kwargs)
        assert {g.id: g.fingerprint() for g in client.games} == before, (path, kwargs)
    refused = client.post(game + "/move", json={"turn": turn, "from": empty, "to": empty + 1})
    assert refused.json()["error"] == f"Field {empty} holds none of your checkers."


def test_the_game_idle_longest_is_dropped_and_the_page_told(engine):
    games = web_game.Games(engine, max_games=2)
    with TestClient(web.create_app(games)) as client:
        client.games = games
        a, b = new_game(client, seed=5), new_game(client, seed=6)
        assert client.get(f"/api/games/{a['game']}").status_code == 200  # b is now idle longest
        c = new_game(client, seed=7)
        assert len(games) == 2
        gone = client.get(f"/api/games/{b['game']}")
        assert gone.status_code == 404 and "no longer on the server" in gone.json()["error"]
        for view in (a, c):
            assert client.get(f"/api/games/{view['game']}").status_code == 200


def test_a_record_replays_and_a_position_loads(client):
    view = new_game(client, seat="black", seed=8)
    while not view["over"]:
        view = play(client, view, first_action(client, view))
    assert view["result"] and client.post(f"/api/games/{view['game']}/play", json={
        "turn": view["turn"], "action": 2}).status_code == 409
    record = client.get(f"/api/games/{view['game']}/record")
    assert "attachment" in record.headers["content-disposition"]
    record = record.json()
    assert len(record["decisions"]) == view["turn"] and record["position"] == view["string_id"]
    assert all(io.from_string_id(d["id"]) is not None for d in record["decisions"])

    replayed = new_game(client, seat="black", seed=0, record=record)
    assert replayed["over"] and replayed["string_id"] == view["string_id"]
    assert replayed["turn"] == view["turn"] and replayed["result"] == view["result"]
    assert client.get(f"/api/games/{replayed['game']}/record").json()["decisions"] == \
        record["decisions"]
    forged = json.loads(json.dumps(record))
    forged["decisions"][3]["action"] = 0  # Roll: never a decision
    assert client.post("/api/games", json={"seat": "black", "record": forged}).status_code == 422

    # a position where Black is to move, loaded with the player in Black's seat
    decision = next(d for d in record["decisions"][5:] if d["player"] == "Black")
    loaded = new_game(client, seat="black", start=decision["id"])
    assert loaded["string_id"] == decision["id"] and loaded["turn"] == 0 and loaded["yours"]
    assert loaded["position"]["board"] == list(render.position(
        io.from_string_id(decision["id"])).board)


def test_hints_are_the_champions_best_distinct_moves(engine):
    engine = web_game.Engine("random")  # the same compiled kernels, and the champion's
    games = web_game.Games(engine)
    with TestClient(web.create_app(games)) as client:
        client.games = games
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
                                  json={"turn": view["turn"], "from": frm, "to": to})
            assert refused.status_code == 409 and refused.json()["error"] == reason
            assert client.games.get(view["game"]).fingerprint() == before


def test_every_refused_half_move_is_explained_and_every_allowed_one_is_legal(engine):
    """Over random games, each half-move of each die from each field: allowed exactly when it
    starts a legal move, and a refusal names a rule (never the catch-all)."""
    for seed, seat in ((11, 0), (12, 1)):
        game = web_game.Game.create(engine, seat, seed)
        for _ in range(25):
            if web_game.done(game.state):
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
  score: [0, 1].map((c) => ['points', 'holes', 'bredouille'].map(
    (k) => document.getElementById(`score-${c}-${k}`).textContent)),
  game: new URLSearchParams(location.hash.slice(1)).get('game'),
  turn: document.body.dataset.turn, pending: document.body.dataset.pending,
  busy: !!document.body.dataset.busy,
  message: document.getElementById('message').textContent,
};
"""


@pytest.fixture(scope="module")
def server(engine):
    """The server in a thread; with the champion's hints when it takes the screenshot."""
    if SCREENSHOT:
        engine = web_game.Engine("random")
        engine.warm()
    server = web.Server(web_game.Games(engine, max_games=8)).start()
    yield server
    server.stop()


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

    def api(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + "api/games/" + self.read()["game"] + path) as r:
            return json.load(r)

    def click(self, element_id: str) -> None:
        self.driver.find_element("id", element_id).click()

    def click_and_wait(self, element_id: str, until) -> dict:
        self.click(element_id)
        return self.wait(lambda page: not page["busy"] and until(page))

    def field(self, field: int) -> str:
        return f"field-{field}" if field else "field-off"


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
    """The page's board and score panel are those of the engine's state (by its id)."""
    rec = io.record_from_string_id(view["string_id"])
    board = render.position(io.state_from_record(rec)).board
    if not view["pending"]:
        assert drawn_board(page) == list(board)
    assert drawn_board(page) == view["position"]["board"]
    for colour, player in enumerate((rec["p1"], rec["p2"])):
        points, holes, bredouille = player[:3]
        assert page["score"][colour] == [str(points), f"{holes}/12", "yes" if bredouille else "no"]


def test_a_whole_game_by_clicking_in_chromium(engine, server, browser):
    page = Page(browser, server.url)
    page.open()
    browser.find_element("css selector", "input[name=seat][value=black]").click()
    browser.find_element("id", "seed").send_keys(str(GAME_SEED))
    first = page.read()["game"]
    page.click_and_wait("new", lambda p: p["game"] != first)
    view, went, decisions, arrows_seen = page.api(""), False, 0, 0
    assert view["seat"] == "black" and view["seed"] == GAME_SEED

    while True:
        shown = page.read()
        check_page(shown, view)
        if view["over"]:
            break
        decisions += 1
        if view["bot_move"]:
            assert shown["arrows"] == len(view["bot_move"].split())
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
            while view["complete"] is None:  # Black runs his checkers farthest
                frm = min(int(f) for f in view["options"])
                targets = view["options"][str(frm)]
                pending = len(view["pending"])
                page.click(page.field(frm))
                page.click_and_wait(page.field(0 if 0 in targets else min(targets)),
                                    lambda p: p["pending"] == str(pending + 1))
                view = page.api("")
                check_page(page.read(), view)
            page.click_and_wait("confirm", lambda p: int(p["turn"]) > turn)
        view = page.api("")

    assert went and arrows_seen > 0
    assert page.read()["message"] == view["result"]
    holes = view["position"]["holes"]
    assert max(holes) >= 12 and view["result"].startswith(
        "You win" if holes[1] > holes[0] else "The bot wins")
    # the same seed and the same choices make the same game through the API
    record = page.api("/record")
    with TestClient(web.create_app(web_game.Games(engine))) as client:
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
    browser.find_element("css selector", "input[name=seat][value=black]").click()
    browser.find_element("id", "position").send_keys(string_id)
    first = page.read()["game"]
    browser.find_element("css selector", "#load-position button").click()
    page.wait(lambda p: p["game"] != first and not p["busy"])
    view = page.api("")
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
