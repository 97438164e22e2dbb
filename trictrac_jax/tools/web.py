"""Play Trictrac in a browser against a bot: a local web server and its page.

    python -m trictrac_jax.tools.web [--opponent SPEC] [--port 8000] [--host 127.0.0.1]
                                     [--max-games 64] [--no-browser]

It compiles the engine and the bot (the champion with its lookahead over the rolls unless
`--opponent` names another `players.load_agent` spec), prints the page's address and opens
it in a browser. The page (web_static/: plain HTML, JavaScript and SVG, nothing fetched from
elsewhere) draws the board as `render.svg` does and talks to the JSON API below; the games
themselves are in web_game.py. docs/web.md describes both.

API (JSON in and out; errors are `{"error": reason}` with a 4xx status and change nothing):

    POST /api/games                 {seat, seed?, start?, record?} -> a new game's view (201)
    GET  /api/games/ID              ?log_from=N -> the view (the log from line N)
    POST /api/games/ID/move         {turn, from, to} -> one half-move of the player's move
    POST /api/games/ID/undo         {turn} -> the half-moves taken back
    POST /api/games/ID/play         {turn, action} -> the decision, then the bot's
    GET  /api/games/ID/why          ?from=F[&to=T] -> {reason}: why that is not allowed
    GET  /api/games/ID/hint         -> {moves}: the champion's three best, with their worths
    GET  /api/games/ID/record       -> the game record (a download)
    GET  /api/config                -> the board's geometry, the opponent, the limits

400: the body is no JSON object; 404: no such game (any more) or route; 409: not possible
now (an illegal move, the game over, a `turn` that is not the game's: the game has moved
on); 422: a value of the wrong type or out of range, an unreadable position or record.

Requests are answered in a thread pool, one at a time: each holds the games' lock while it
runs (web_game.py says why).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import secrets
import socket
import sys
import threading
import time
import webbrowser

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from trictrac_jax import devices
from trictrac_jax import render
from trictrac_jax.state import NUM_ACTIONS
from trictrac_jax.tools.web_game import (DEFAULT_OPPONENT, SEATS, Engine, Game, GameError,
                                         Games)

STATIC = pathlib.Path(__file__).with_name("web_static")
MAX_SEED = 2**32 - 1
OFF = 0  # the `to` of a bear-off


# ---------------------------------------------------------------------------------------------
#  Reading requests
# ---------------------------------------------------------------------------------------------

async def _body(request: Request) -> dict:
    """The request's JSON object; GameError 400 if it is not one."""
    try:
        body = json.loads(await request.body() or b"{}")
    except (ValueError, UnicodeDecodeError) as error:
        raise GameError(400, f"malformed JSON: {error}") from None
    if not isinstance(body, dict):
        raise GameError(400, "the body must be a JSON object")
    return body


def _int(value, name: str, low: int, high: int) -> int:
    """`value` if it is an integer in low..high (a JSON number, not a float or a boolean);
    GameError 422 otherwise."""
    if type(value) is not int or not low <= value <= high:
        raise GameError(422, f"'{name}' must be an integer in {low}..{high}, got {value!r}")
    return value


def _query_int(request: Request, name: str, low: int, high: int, default=None):
    """The query parameter `name` as an integer in low..high (`default` if absent)."""
    text = request.query_params.get(name)
    if text is None and default is not None:
        return default
    value = int(text) if text is not None and text.lstrip("-").isdigit() else text
    return _int(value, name, low, high)


def _turn(body: dict, game: Game) -> None:
    """The decision the request was made at must be the game's (two tabs, a late click)."""
    turn = _int(body.get("turn"), "turn", 0, 10**9)
    if turn != game.turn:
        raise GameError(409, f"The game has moved on (it is at decision {game.turn}, the "
                             f"request was made at {turn}): reload it.")


# ---------------------------------------------------------------------------------------------
#  Routes
# ---------------------------------------------------------------------------------------------

def create_app(games: Games) -> Starlette:
    """The page and the API over `games` (whose engine is compiled: see `Engine.warm`)."""
    engine = games.engine

    async def answer(work, status: int = 200):
        """Run `work()` in the thread pool under the games' lock; its value as JSON."""
        def locked():
            with games.lock:
                return work()
        return JSONResponse(await run_in_threadpool(locked), status_code=status)

    def game_of(request: Request) -> Game:
        return games.get(request.path_params["game_id"])

    async def config(request):
        return await answer(lambda: {
            "opponent": engine.opponent_spec, "max_games": games.max_games,
            "hints": engine.hinter is not None, "width": render.WIDTH, "height": render.HEIGHT,
            "fields": {f: render.field_box(f) for f in range(1, 25)},
            "off": [render.off_box(c) for c in (0, 1)]})

    async def create(request):
        body = await _body(request)
        seat = body.get("seat", SEATS[0])
        if seat not in SEATS:
            raise GameError(422, f"'seat' must be one of {list(SEATS)}, got {seat!r}")
        seed = body.get("seed")
        seed = secrets.randbelow(MAX_SEED) if seed is None else _int(seed, "seed", 0, MAX_SEED)
        start, record = body.get("start"), body.get("record")
        if start is not None and not isinstance(start, str):
            raise GameError(422, "'start' must be a string id")
        if start is not None and record is not None:
            raise GameError(422, "give a 'start' position or a 'record', not both")

        def new():
            game = Game.create(engine, SEATS.index(seat), seed, start=start, record=record)
            return games.add(game).view(engine)
        return await answer(new, status=201)

    async def view(request):
        log_from = _query_int(request, "log_from", 0, 10**9, default=0)
        return await answer(lambda: game_of(request).view(engine, log_from))

    def mutation(change):
        """A route that changes a game made at the game's current turn; the view after it
        with the log lines it added."""
        async def route(request):
            body = await _body(request)

            def work():
                game = game_of(request)
                _turn(body, game)
                log_from = len(game.log)
                change(game, body)
                return game.view(engine, log_from)
            return await answer(work)
        return route

    def half_move(game: Game, body: dict):
        frm = _int(body.get("from"), "from", 1, 24)
        game.half_move(engine, frm, _int(body.get("to"), "to", OFF, 24))

    def decide(game: Game, body: dict):
        game.play(engine, _int(body.get("action"), "action", 0, NUM_ACTIONS - 1))

    async def why(request):
        frm = _query_int(request, "from", 1, 24)
        to = None if "to" not in request.query_params else _query_int(request, "to", OFF, 24)
        return await answer(lambda: {"reason": game_of(request).why(engine, frm, to)})

    async def hint(request):
        return await answer(lambda: {"moves": game_of(request).hint(engine)})

    async def record(request):
        response = await answer(lambda: game_of(request).record_of())
        response.headers["Content-Disposition"] = 'attachment; filename="trictrac-game.json"'
        return response

    async def page(request):
        return FileResponse(STATIC / "index.html")

    async def game_error(request, error: GameError):
        return JSONResponse({"error": str(error)}, status_code=error.status)

    async def http_error(request, error: HTTPException):
        return JSONResponse({"error": error.detail}, status_code=error.status_code)

    game = "/api/games/{game_id}"
    routes = [Route("/", page), Route("/api/config", config),
              Route("/api/games", create, methods=["POST"]), Route(game, view),
              Route(game + "/move", mutation(half_move), methods=["POST"]),
              Route(game + "/undo", mutation(lambda g, body: g.undo()), methods=["POST"]),
              Route(game + "/play", mutation(decide), methods=["POST"]),
              Route(game + "/why", why), Route(game + "/hint", hint),
              Route(game + "/record", record),
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    return Starlette(routes=routes, exception_handlers={GameError: game_error,
                                                        HTTPException: http_error})


# ---------------------------------------------------------------------------------------------
#  Serving
# ---------------------------------------------------------------------------------------------

class Server:
    """The app served by uvicorn in a thread of this process, on a socket bound here (port
    0: a free one); `stop()` ends it. For the command below and for tests."""

    def __init__(self, games: Games, host: str = "127.0.0.1", port: int = 0):
        import uvicorn
        self.socket = socket.create_server((host, port))
        self.port = self.socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}/"
        config = uvicorn.Config(create_app(games), log_level="warning", lifespan="off")
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
    parser = argparse.ArgumentParser(prog="python -m trictrac_jax.tools.web",
                                     description="Play Trictrac against a bot in a browser.")
    parser.add_argument("--opponent", default=DEFAULT_OPPONENT,
                        help="the bot: any `players.load_agent` spec, as `play` takes it "
                             "(champion, champion:N, NETWORK@PLAY, greedy, greedy:K, first, "
                             "random, a checkpoint path; default: champion, with its lookahead "
                             "over the rolls)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0: any)")
    parser.add_argument("--max-games", type=int, default=64,
                        help="games kept at once; the one idle longest is dropped for a new "
                             "one (default: 64)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if args.max_games < 1:
        parser.error("--max-games must be at least 1")
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
        server = Server(Games(engine, args.max_games), args.host, args.port).start()
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
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
