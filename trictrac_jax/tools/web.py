"""Play Trictrac in a browser against a bot, or move both colours: a local web server and
its page.

    python -m trictrac_jax.tools.web [--opponent SPEC] [--port 8000] [--host 127.0.0.1]
                                     [--allow-origin ORIGIN ...] [--max-games 64] [--no-browser]

It compiles the engine and the bot (the champion with its lookahead over the rolls unless
`--opponent` names another `network_agents.load_agent` spec), prints the page's address and opens
it in a browser. The page (web_static/: plain HTML, JavaScript and SVG, nothing fetched from
elsewhere) draws the board as `render.svg` does and talks to the JSON API below; the games
themselves are in web_game.py. docs/web.md describes both, and the limits.

API (JSON in and out; errors are `{"error": reason}` with a 4xx status and change nothing):

    POST /api/games                 {seat?, seed?, mode?, start?} or {record} -> a new game (201)
    GET  /api/games/ID              ?log_from=N -> the view (the log from line N)
    POST /api/games/ID/move         {version, from, to} -> one half-move of the player's move
    POST /api/games/ID/undo         {version} -> the half-moves taken back
    POST /api/games/ID/play         {version, action} -> the decision, then the bot's
    GET  /api/games/ID/why          ?from=F[&to=T] -> {reason}: why that is not allowed
    GET  /api/games/ID/hint         -> {moves}: the champion's three best, with their worths
    GET  /api/games/ID/record       -> the game record (a download)
    POST /api/positions             {board, player, dice, points?, holes?, bredouille?} -> a
                                    position set up on the board: its id, picture, problems
    GET  /api/config                -> the board's geometry, the opponent, the limits, words

Every request is read here, in one place ("Reading requests"): the body's bytes bounded
(413), its JSON parsed and typed by pydantic models (strict: no string for a number, no
unknown key; nesting bounded by the parser), query integers strictly ASCII digits. 400: no
JSON object; 403: a Host this server does not serve, or a state-changing request from a
page of another origin; 404: no such game (any more) or route; 409: not possible now (an
illegal move, the game over, a `version` the game has left: `"stale": true`); 413: a body
over `MAX_BODY` bytes; 422: a value of the wrong type or out of range, an unreadable
position or record. Under the app, web_http.py answers in the same shape: 400 for what is
no HTTP/1.1 request it reads (both length headers, ...), 408 for a request not whole in
time, 431 for a head over 16 KiB.
"""
from __future__ import annotations

import argparse
import functools
import pathlib
import re
import secrets
import socket
import sys
import threading
import time
import urllib.parse
import webbrowser
from typing import Annotated, Literal

import uvicorn
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from trictrac_jax import devices
from trictrac_jax import render
from trictrac_jax.env import WINNING_HOLES
from trictrac_jax.state import NUM_ACTIONS
from trictrac_jax.tools import notation
from trictrac_jax.tools.web_game import (CLIP, DEFAULT_OPPONENT, MAX_REPLAY_SECONDS, PAST_12,
                                         SEATS, Engine, Game, GameError, Games, clip,
                                         preview, setup_record)
from trictrac_jax.tools.web_http import (KEEP_ALIVE_SECONDS, MAX_HEAD, REQUEST_SECONDS,
                                         CheckedH11Protocol)

STATIC = pathlib.Path(__file__).with_name("web_static")
MAX_SEED = 2**32 - 1
MAX_VERSION = 10**9
MAX_BODY = 256 * 1024  # bytes: a record of MAX_RECORD_DECISIONS decisions is ~100 KB
MAX_ID_CHARS = 64  # a string id is 24 characters; longer is no id
MAX_RECORD_DECISIONS = 1000  # a record to replay (a whole game has a few hundred)
MAX_QUERY_DIGITS = 9
MAX_REASON = 300  # characters of a schema error's reason
OFF = 0  # the `to` of a bear-off
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")
# The page's words in French, as the reference and the literature name them (English first).
FRENCH_WORDS = {"rest corner": "coin de repos", "small jan": "petit jan",
                "big jan": "grand jan", "last quarter": "jan de retour",
                "new setting": "relevé",
                **{label: label[label.index("(") + 1:-1]
                   for label in notation.JAN_LABELS.values()}}


# ---------------------------------------------------------------------------------------------
#  Reading requests: the one place where a request's bytes become typed values
# ---------------------------------------------------------------------------------------------

class Schema(BaseModel):
    """A request body: strict types (no "2" or 2.0 or true for an integer), no unknown key."""
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _int(low: int, high: int):
    return Annotated[int, Field(ge=low, le=high)]


def _text(n: int):
    return Annotated[str, StringConstraints(max_length=n)]


StringId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
Seat = Literal["white", "black"]
Mode = Literal["bot", "free"]
Pair = tuple[_int(0, 11), _int(0, 11)]


class RecordedDecision(Schema):
    """A decision of a game record (its `player` and `move` are for people; ignored)."""
    model_config = ConfigDict(extra="ignore")
    id: StringId
    action: _int(0, NUM_ACTIONS - 1)
    player: _text(16) | None = None
    move: _text(32) | None = None


class GameRecord(Schema):
    """A game record as `Game.record_of` writes it (version 1 had no mode nor opponent)."""
    model_config = ConfigDict(extra="ignore")
    decisions: Annotated[list[RecordedDecision], Field(max_length=MAX_RECORD_DECISIONS)]
    you: Seat = "white"
    seed: _int(0, MAX_SEED) = 0
    mode: Mode = "bot"
    opponent: _text(200) | None = None
    start: StringId | None = None
    position: StringId | None = None


class NewGame(Schema):
    """POST /api/games: a new game (seat, seed, mode; from a string id `start`), or the game
    of a `record`, which brings its own seat, seed and mode."""
    seat: Seat | None = None
    seed: _int(0, MAX_SEED) | None = None
    mode: Mode | None = None
    start: StringId | None = None
    record: GameRecord | None = None


class Change(Schema):
    """A request that changes a game names the game's version it was made at."""
    version: _int(0, MAX_VERSION)


class HalfMove(Change):
    frm: _int(1, 24) = Field(alias="from")
    to: _int(OFF, 24)


class Decision(Change):
    action: _int(0, NUM_ACTIONS - 1)


class Setup(Schema):
    """POST /api/positions: a position set up on the board, `player` to move with `dice`."""
    board: Annotated[list[_int(-15, 15)], Field(min_length=24, max_length=24)]
    player: Seat = "white"
    dice: tuple[_int(1, 6), _int(1, 6)]
    points: Pair = (0, 0)
    holes: Pair = (0, 0)
    bredouille: tuple[bool, bool] = (True, True)


async def read_body(request: Request, schema: type[Schema]) -> Schema:
    """The request's body as `schema`: at most MAX_BODY bytes (413 as soon as more is
    announced or arrives), one JSON object of the schema's types (400, 422)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not re.fullmatch(r"[0-9]{1,15}", length):
            raise GameError(400, "The request's Content-Length is no number.")
        if int(length) > MAX_BODY:
            raise GameError(413, f"The request is too large ({int(length)} bytes; at most "
                                 f"{MAX_BODY}).")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise GameError(413, f"The request is too large (over {MAX_BODY} bytes).")
    except ClientDisconnect:  # the connection closed (web_http logs it): nobody to answer
        raise GameError(400, "The request's body was cut off.") from None
    try:
        return schema.model_validate_json(bytes(body) or b"{}")
    except ValidationError as error:
        raise _refusal(error) from None


def _refusal(error: ValidationError) -> GameError:
    """A schema's refusal said for a person: the first problem, where it is, truncated."""
    first = error.errors(include_url=False, include_input=False, include_context=False)[0]
    if first["type"] == "json_invalid":
        return GameError(400, "The request is not valid JSON: " + clip(
            first["msg"].removeprefix("Invalid JSON: "), MAX_REASON))
    if not first["loc"]:
        return GameError(400, "The request's body must be a JSON object.")
    where = ".".join(f"[{p + 1}]" if isinstance(p, int) else clip(str(p), CLIP)
                     for p in first["loc"]).replace(".[", "[")
    said = first["msg"].replace("Input should be a valid integer", "should be a whole number")
    said = said.replace("Input should", "should").replace("Extra inputs are not permitted",
                                                          "is not a field of this request")
    prefix = ("This file is not a game record this page can read: " if first["loc"][0] ==
              "record" else "")
    return GameError(422, clip(f"{prefix}'{where}' {said[0].lower()}{said[1:]}.", MAX_REASON))


def query_int(request: Request, name: str, low: int, high: int, default: int | None = None
              ) -> int:
    """The query parameter `name`, given once, as ASCII digits (no sign, no other script's
    digits, at most MAX_QUERY_DIGITS) of an integer in low..high; 422 otherwise."""
    values = request.query_params.getlist(name)
    if not values and default is not None:
        return default
    if len(values) != 1:
        raise GameError(422, f"Give '{name}' once, a whole number from {low} to {high}.")
    text = values[0]
    if not re.fullmatch(rf"[0-9]{{1,{MAX_QUERY_DIGITS}}}", text) or not low <= int(text) <= high:
        raise GameError(422, f"'{name}' should be a whole number from {low} to {high}, not "
                             f"“{clip(text, 12)}”.")
    return int(text)


# ---------------------------------------------------------------------------------------------
#  Host and Origin: only this machine's pages (or the deployment's) drive the server
# ---------------------------------------------------------------------------------------------

def served(port: int, host: str = "127.0.0.1", allow_origins=()) -> dict:
    """The Host headers and Origins a server on `host`:`port` answers: this machine's
    names at that port, `host` itself unless it is every interface, and each origin of
    `allow_origins` (a deliberate deployment: "https://trictrac.example") with its host.
    create_app's keyword arguments."""
    names = set(LOCAL_NAMES)
    if host not in ("0.0.0.0", "::", ""):
        names.add(f"[{host}]" if ":" in host else host)
    authorities = {f"{name}:{port}" for name in names} | (names if port == 80 else set())
    origins = {f"http://{a}" for a in authorities} | {o.lower() for o in allow_origins}
    hosts = authorities | {urllib.parse.urlsplit(o).netloc.lower() for o in allow_origins}
    return {"hosts": frozenset(hosts), "origins": frozenset(origins)}


def origin_of(text: str) -> str:
    """An --allow-origin value checked: scheme://host[:port], no path; ValueError else."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("",) \
            or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"{text!r} is no origin: write scheme://host[:port], e.g. "
                         "https://trictrac.example or http://192.168.1.5:8000")
    return f"{parts.scheme}://{parts.netloc}".lower()


class HostAndOrigin:
    """ASGI middleware: 403 for a Host header not served (DNS rebinding: a foreign page
    whose name now points here) and for a state-changing request whose Origin is not
    served (a foreign page posting to 127.0.0.1). A request without Origin (curl, a
    script) is a program on this machine, not a page."""

    SAFE = ("GET", "HEAD", "OPTIONS")

    def __init__(self, app, hosts: frozenset[str], origins: frozenset[str]):
        self.app, self.hosts, self.origins = app, hosts, origins

    def refusal(self, method: str, headers: Headers) -> str | None:
        if headers.get("host", "").lower() not in self.hosts:
            return ("This server answers only at its own address (the Host of the request "
                    "is not one it serves).")
        origin = headers.get("origin")
        if method not in self.SAFE and origin is not None and origin.lower() not in self.origins:
            return ("A page of another site may not play here (its Origin is not this "
                    "server's; a deployment names it with --allow-origin).")
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            reason = self.refusal(scope["method"], Headers(scope=scope))
            if reason:
                await JSONResponse({"error": reason}, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------------------------
#  Routes
# ---------------------------------------------------------------------------------------------

def create_app(games: Games, hosts: frozenset[str], origins: frozenset[str]) -> Starlette:
    """The page and the API over `games` (whose engine is compiled: see `Engine.warm`),
    answering the Host headers `hosts` and state-changing requests from `origins` (see
    `served`)."""
    engine = games.engine

    async def answer(work, status: int = 200):
        """`work()` in the thread pool (under no lock of its own); its value as JSON."""
        return JSONResponse(await run_in_threadpool(work), status_code=status)

    def on_game(request: Request, work):
        """`work(game)` under the game's lock."""
        def locked():
            game = games.get(request.path_params["game_id"])
            with game.lock:
                return work(game)
        return answer(locked)

    async def config(request):
        return JSONResponse({
            "opponent": engine.opponent_spec, "max_games": games.max_games,
            "hints": engine.hinter is not None, "width": render.WIDTH, "height": render.HEIGHT,
            "fields": {f: render.field_box(f) for f in range(1, 25)},
            "off": [render.off_box(c) for c in (0, 1)],
            "holes_to_win": WINNING_HOLES, "past_12": PAST_12,
            "limits": {"body_bytes": MAX_BODY, "id_chars": MAX_ID_CHARS,
                       "record_decisions": MAX_RECORD_DECISIONS,
                       "replay_seconds": MAX_REPLAY_SECONDS},
            "french": sorted(FRENCH_WORDS.items(), key=lambda kv: -len(kv[0]))})

    async def create(request):
        body = await read_body(request, NewGame)
        if body.record is not None:
            if any(v is not None for v in (body.seat, body.seed, body.mode, body.start)):
                raise GameError(422, "A record brings its own seat, seed and mode: send it "
                                     "alone.")
            record = body.record.model_dump()
            work = lambda: Game.from_record(engine, record)
        else:
            seed = secrets.randbelow(MAX_SEED) if body.seed is None else body.seed
            human = SEATS.index(body.seat or SEATS[0])
            work = lambda: Game.create(engine, human, seed, start=body.start,
                                       mode=body.mode or "bot")

        def made():
            game = work()
            with game.lock:
                return games.add(game).view(engine)
        return await answer(made, status=201)

    async def view(request):
        log_from = query_int(request, "log_from", 0, MAX_VERSION, default=0)
        return await on_game(request, lambda game: game.view(engine, log_from))

    def mutation(schema: type[Change], change):
        """A route that changes a game, made at the game's current version; the view after
        it with the log lines it added."""
        async def route(request):
            body = await read_body(request, schema)

            def work(game: Game):
                if body.version != game.version:
                    raise GameError(409, "This game has moved on (in another tab or window): "
                                         "the board now shows where it is.", stale=True)
                log_from = len(game.log)
                change(game, body)
                return game.view(engine, log_from)
            return await on_game(request, work)
        return route

    async def why(request):
        frm = query_int(request, "from", 1, 24)
        to = None if "to" not in request.query_params else query_int(request, "to", OFF, 24)
        return await on_game(request, lambda game: {"reason": game.why(engine, frm, to)})

    async def hint(request):
        return await on_game(request, lambda game: {"moves": game.hint(engine)})

    async def record(request):
        response = await on_game(request, lambda game: game.record_of(engine))
        response.headers["Content-Disposition"] = 'attachment; filename="trictrac-game.json"'
        return response

    async def position(request):
        body = await read_body(request, Setup)
        rec = setup_record(body.board, SEATS.index(body.player), body.dice, body.points,
                           body.holes, body.bredouille)
        return await answer(lambda: preview(engine, rec))

    async def page(request):
        return FileResponse(STATIC / "index.html")

    async def game_error(request, error: GameError):
        content = {"error": str(error)} | ({"stale": True} if error.stale else {})
        return JSONResponse(content, status_code=error.status)

    async def http_error(request, error: HTTPException):
        return JSONResponse({"error": error.detail}, status_code=error.status_code)

    game = "/api/games/{game_id}"
    routes = [Route("/", page), Route("/api/config", config),
              Route("/api/games", create, methods=["POST"]), Route(game, view),
              Route(game + "/move", mutation(HalfMove, lambda g, b: g.half_move(
                  engine, b.frm, b.to)), methods=["POST"]),
              Route(game + "/undo", mutation(Change, lambda g, b: g.undo()), methods=["POST"]),
              Route(game + "/play", mutation(Decision, lambda g, b: g.play(engine, b.action)),
                    methods=["POST"]),
              Route(game + "/why", why), Route(game + "/hint", hint),
              Route(game + "/record", record),
              Route("/api/positions", position, methods=["POST"]),
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    return Starlette(routes=routes,
                     middleware=[Middleware(HostAndOrigin, hosts=hosts, origins=origins)],
                     exception_handlers={GameError: game_error, HTTPException: http_error})


# ---------------------------------------------------------------------------------------------
#  Serving
# ---------------------------------------------------------------------------------------------

class Server:
    """The app served by uvicorn in a thread of this process, on a socket bound here (port
    0: a free one), each request to arrive whole within `request_seconds` (web_http);
    `stop()` ends it. For the command below and for tests."""

    def __init__(self, games: Games, host: str = "127.0.0.1", port: int = 0,
                 allow_origins=(), request_seconds: float = REQUEST_SECONDS):
        self.socket = socket.create_server((host, port))
        self.port = self.socket.getsockname()[1]
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else (
            f"[{host}]" if ":" in host else host)
        self.url = f"http://{shown}:{self.port}/"
        app = create_app(games, **served(self.port, host, allow_origins))
        # h11 with web_http's checks and deadlines, whatever else is installed (httptools)
        protocol = functools.partial(CheckedH11Protocol, request_seconds=request_seconds)
        config = uvicorn.Config(app, http=protocol, h11_max_incomplete_event_size=MAX_HEAD,
                                timeout_keep_alive=KEEP_ALIVE_SECONDS, log_level="warning",
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self.socket]}, daemon=True)

    def start(self, timeout: float = 30.0) -> "Server":
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join()
        self.socket.close()


def main(argv=None) -> int:
    """Serves the browser game until interrupted, with the options of the module's
    docstring in `argv` (default: the command line); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m trictrac_jax.tools.web",
                                     description="Play Trictrac in a browser, against a bot or moving "
                                                 "both colours.")
    parser.add_argument("--opponent", default=DEFAULT_OPPONENT,
                        help="the bot: any `network_agents.load_agent` spec, as `play` takes it "
                             "(champion, champion:N, NETWORK@PLAY, greedy, greedy:K, first, "
                             "random, a checkpoint path; default: champion, with its lookahead "
                             "over the rolls)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0: any)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="an address the page is reached at besides this machine's own, "
                             "e.g. https://trictrac.example (repeatable): its pages may play "
                             "and its host name is served")
    parser.add_argument("--max-games", type=int, default=64,
                        help="games kept at once; the one idle longest is dropped for a new "
                             "one (default: 64)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if args.max_games < 1:
        parser.error("--max-games must be at least 1")
    try:
        origins = [origin_of(o) for o in args.allow_origin]
    except ValueError as error:
        parser.error(f"--allow-origin: {error}")
    print(f"Compiling the engine and the bot ({args.opponent}), once: minutes on a 2-core CPU...",
          flush=True)
    started = time.perf_counter()
    try:
        engine = Engine(args.opponent)
    except ImportError as error:  # a network needs the training extra
        print(f"cannot load opponent {args.opponent!r}: {error} (pip install -e '.[train]')",
              file=sys.stderr)
        return 2
    except (ValueError, OSError, RuntimeError) as error:  # unknown name, bad checkpoint
        print(f"cannot load opponent {args.opponent!r}: {error}", file=sys.stderr)
        return 2
    engine.warm()
    try:
        server = Server(Games(engine, args.max_games), args.host, args.port, origins).start()
    except OSError as error:
        print(f"cannot listen on {args.host}:{args.port}: {error} (try --port)", file=sys.stderr)
        return 2
    print(f"Ready in {time.perf_counter() - started:.0f} s. Play at {server.url} "
          f"(Ctrl-C to stop).", flush=True)
    if not args.no_browser:
        webbrowser.open(server.url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("Stopping.")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
