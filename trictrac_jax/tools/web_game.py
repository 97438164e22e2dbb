"""The games behind the browser page: one game's state, the player's half-moves, the bot's
replies, the record, and the store that keeps a bounded number of games apart.

Nothing here knows HTTP (web.py does). The engine's functions are compiled once per process
(`Engine`, warmed before the server answers); the store's lock (`Games.lock`) is held around
every call that reads or changes a game, so requests run one at a time: no two games
interleave, and JAX is never called from two threads at once.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import secrets
import threading

import jax
import numpy as np

from trictrac_jax import io, render
from trictrac_jax.env import Trictrac, dice_to_outcome, new_game
from trictrac_jax.state import (NUM_ACTIONS, NUM_CHECKERS, TS_HOLD_OR_GO, TS_MOVE, TS_ROLL_DICE,
                                State)
from trictrac_jax.tools import notation, play, reasons

DEFAULT_OPPONENT = "champion"  # with play's lookahead over the rolls, as `play` runs it
LOOKAHEAD = 32  # play's default: the bot's 1-ply search over its 32 likeliest moves
HINTS = 3
MAX_RECORD_DECISIONS = 5000  # a record to replay (a whole game has a few hundred)
RECORD_FORMAT = "trictrac-jax game record"
PENDING_INK, HINT_INK = "#2e9e5b", "#3d7bbf"  # the bot's last move: render.move_arrows' own
SEATS = ("white", "black")

Move = tuple[int, int]  # (from, to) on the real board; to 0: borne off


class GameError(Exception):
    """A request that cannot be honoured: `status` is its HTTP status, the message why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------------------------------------
#  The compiled functions every game shares
# ---------------------------------------------------------------------------------------------

class Hinter:
    """The champion's worth of its likeliest moves in a position, as its lookahead over the
    rolls values them (`search.likeliest`, then `model.rolled_worth` of each): one jitted
    call a position."""

    def __init__(self, spec: str = "champion", top_k: int = LOOKAHEAD):
        from trictrac_jax.az import players, search  # the training extra
        from trictrac_jax.az.model import model_from_config, rolled_worth
        from trictrac_jax.worths import candidate_worths
        params, config = players.load_network(spec)
        model = model_from_config(config)
        # a `points` value is the score margin still to come / margin_scale
        self.points_per_unit = model.margin_scale if model.value_target == "points" else None

        def worths(params, state):
            states = jax.tree.map(lambda x: x[None], state)
            actions, legal, _ = search.likeliest(model, params, states, top_k)
            worth = candidate_worths(states, actions, legal,
                                     lambda s, a: rolled_worth(model, params, a, s))
            return actions[0], worth[0]
        self._worths = functools.partial(jax.jit(worths), params)

    def ranked(self, state: State) -> list[tuple[int, float]]:
        """(action, worth) of the champion's legal candidates, best first (ties: the likelier
        first, as its lookahead breaks them)."""
        actions, worth = jax.device_get(self._worths(state))
        order = np.argsort(-worth, kind="stable")
        return [(int(actions[i]), float(worth[i])) for i in order if np.isfinite(worth[i])]


class Engine:
    """What the games share: the one-game kernels, the bot, the hint's network; `warm`
    compiles them all."""

    def __init__(self, opponent: str = DEFAULT_OPPONENT, hints: bool = True):
        self.k = notation.kernels()
        self.env = Trictrac(max_steps=None)
        self.opponent_spec = opponent
        self.opponent = jax.jit(play.load_opponent(opponent, LOOKAHEAD))
        self.hinter = None
        if hints:
            try:
                self.hinter = Hinter()
            except ImportError:  # no training extra: no hint
                pass

    def warm(self) -> None:
        """Compile every function a game calls: a game where the player plays his first
        legal move, the bot answers, with a hint, a refusal and a loaded position."""
        game = Game.create(self, human=0, seed=0)
        if self.hinter is not None:
            game.hint(self)
        reasons.candidate_lists(game.state)
        game.play(self, min(game.sequences(self).values()))
        Game.create(self, human=1, seed=0, start=game.record[0]["id"]).view(self)


# ---------------------------------------------------------------------------------------------
#  One game
# ---------------------------------------------------------------------------------------------

def done(state: State) -> bool:
    return bool(state.terminated | state.truncated)


def moves_of(pair) -> tuple[Move, ...]:
    """The half-moves of a real-board pair (from1, to1, from2, to2)."""
    return tuple((int(f), int(t)) for f, t in ((pair[0], pair[1]), (pair[2], pair[3])) if f)


def moved(board, colour: int, moves) -> list[int]:
    """The real `board` after `colour` plays `moves`; ValueError if a move has no checker."""
    board, sign = [int(n) for n in board], 1 if colour == 0 else -1
    for frm, to in moves:
        if sign * board[frm - 1] <= 0:
            raise ValueError(f"no checker of colour {colour} on field {frm}")
        board[frm - 1] -= sign
        if to:
            board[to - 1] += sign
    return board


@dataclasses.dataclass
class Game:
    """One game against the bot, the player being colour `human` (0 White, 1 Black)."""

    id: str
    human: int
    seed: int
    state: State
    key: jax.Array
    start: str | None  # string id of the position the game started from (None: a new game)
    record: list[dict] = dataclasses.field(default_factory=list)  # one entry a decision
    log: list[str] = dataclasses.field(default_factory=list)
    pending: list[Move] = dataclasses.field(default_factory=list)  # half-moves not confirmed
    bot_moves: tuple[Move, ...] = ()  # the bot's last move, while its board is shown
    _turn_cache: dict = dataclasses.field(default_factory=dict)  # per decision: see `_cached`

    # --- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls, engine: Engine, human: int, seed: int, start: str | None = None,
               record: dict | None = None) -> "Game":
        """A game from the start, from the position of string id `start`, or replayed from a
        `record` (see `record_of`), then played on by the bot until the player's turn."""
        game = cls(id=secrets.token_urlsafe(18), human=human, seed=seed, state=new_game(),
                   key=jax.random.PRNGKey(seed), start=start)
        if record is not None:
            game._replay(engine, record)
        elif start is not None:
            game.state = _loaded(engine, start)
            game.log.append(f"Position {start} loaded.")
        if game.state.is_chance:
            game._roll(engine)
        game._bot_plays(engine)
        return game

    def _replay(self, engine: Engine, record) -> None:
        """Play a record's decisions again, each roll's dice read from the next id."""
        decisions, start, position = _read_record(record)
        self.start = start
        if start is not None:
            self.state = _loaded(engine, start)
        ids = [d["id"] for d in decisions] + ([position] if position is not None else [])
        for n, string_id in enumerate(ids):
            if self.state.is_chance:
                self._roll(engine, outcome=_outcome_of(string_id))
            if io.to_string_id(self.state) != string_id:
                what = f"decision {n + 1}" if n < len(decisions) else "the last position"
                raise GameError(422, f"record: {what} does not follow: its position "
                                     f"{string_id} is not {io.to_string_id(self.state)}")
            if n < len(decisions):
                action = decisions[n]["action"]
                if done(self.state) or not bool(self.state.legal_action_mask[action]):
                    raise GameError(422, f"record: decision {n + 1}: action {action} is not "
                                         "legal there")
                self._decide(engine, action)

    # --- the player's turn --------------------------------------------------------------------

    @property
    def turn(self) -> int:
        """Decisions taken so far: a request naming another turn comes too late."""
        return len(self.record)

    def yours(self) -> bool:
        return not done(self.state) and int(self.state.current_player) == self.human

    def _cached(self, name: str, compute):
        """A value of the current decision, computed once (the cache is emptied each turn)."""
        if name not in self._turn_cache:
            self._turn_cache[name] = compute()
        return self._turn_cache[name]

    def sequences(self, engine: Engine) -> dict[tuple[Move, ...], int]:
        """Every order in which the player may play the half-moves of each legal move ->
        its action (the empty move: ()); Go is apart."""
        def compute():
            pairs = self.pairs(engine)
            board, colour = np.asarray(self.state._board), int(self.state.current_player)
            orders = {}
            for action in np.flatnonzero(np.asarray(self.state.legal_action_mask)):
                if action == notation.GO:
                    continue
                moves = moves_of(pairs[action])
                for order in (moves, moves[::-1]):
                    try:
                        moved(board, colour, order)
                        orders.setdefault(order, int(action))
                    except ValueError:  # a checker moved twice: its first move first
                        pass
            return orders
        return self._cached("sequences", compute)

    def options(self, engine: Engine) -> dict[int, list[int]]:
        """The next half-moves after the pending ones: from -> [to, ...] (to 0: off)."""
        n, out = len(self.pending), collections.defaultdict(set)
        for order in self.sequences(engine):
            if len(order) > n and list(order[:n]) == self.pending:
                out[order[n][0]].add(order[n][1])
        return {f: sorted(t, key=lambda x: x or 25) for f, t in sorted(out.items())}

    def why(self, engine: Engine, frm: int, to: int | None = None) -> str | None:
        """Why the half-move `frm`-`to` (or any from `frm`) is not allowed now; None if it
        is."""
        if not self.yours():
            return self._not_your_turn()
        options = self.options(engine)
        if frm in options and (to is None or to in options[frm]):
            return None
        lists = self._cached("lists", lambda: reasons.candidate_lists(self.state))
        me = self.human
        pending = [reasons.view_move(m, me) for m in self.pending]
        if to is None:
            return reasons.why_not_from(lists, me, pending, reasons.view_move((frm, 0), me)[0])
        return reasons.why_not(lists, me, pending, reasons.view_move((frm, to), me))

    def half_move(self, engine: Engine, frm: int, to: int) -> None:
        """Play one checker of the move being made (not yet confirmed)."""
        reason = self.why(engine, frm, to)
        if reason:
            raise GameError(409, reason)
        self.pending.append((frm, to))

    def undo(self) -> None:
        """Take back the half-moves not yet confirmed."""
        if not self.yours():
            raise GameError(409, self._not_your_turn())
        self.pending = []

    def play(self, engine: Engine, action: int) -> None:
        """The player's decision (a Move, Go, or the empty move), then the bot's until the
        player's next decision or the end."""
        if not self.yours():
            raise GameError(409, self._not_your_turn())
        if not bool(self.state.legal_action_mask[action]):
            raise GameError(409, f"Action {action} is not legal here; legal: "
                                 f"{', '.join(t for _, t in self.legal_moves(engine))}.")
        self._decide(engine, action)
        if not done(self.state):
            self._roll(engine)
        self._bot_plays(engine)

    def legal_moves(self, engine: Engine) -> list[tuple[int, str]]:
        """(action, notation) of the legal actions (`notation.legal_moves`)."""
        return self._cached("legal", lambda: notation.legal_moves(self.state, engine.k))

    def pairs(self, engine: Engine) -> np.ndarray:
        """int32[514, 4]: the real-board move pair of every action (`Kernels.action_pairs`)."""
        return self._cached("pairs", lambda: np.asarray(engine.k.action_pairs(self.state)))

    def hint(self, engine: Engine) -> list[dict]:
        """The champion's `HINTS` best moves for the player here, with their worths; of moves
        that leave the same position (1-3 3-8 and 1-6 6-8), the likelier."""
        if engine.hinter is None:
            raise GameError(409, "No hint: the champion needs the training extra "
                                 "(pip install -e '.[train]').")
        if not self.yours():
            raise GameError(409, self._not_your_turn())
        notations, pairs = dict(self.legal_moves(engine)), self.pairs(engine)
        board = np.asarray(self.state._board)
        scale = engine.hinter.points_per_unit
        out, seen = [], set()
        for action, worth in engine.hinter.ranked(self.state):
            moves = () if action == notation.GO else moves_of(pairs[action])
            after = moved(board, self.human, moves)
            if (action == notation.GO, *after) in seen:
                continue
            seen.add((action == notation.GO, *after))
            out.append({"action": action, "move": notations[action], "worth": worth,
                        "points": None if scale is None else worth * scale,
                        "arrows": render.arrow_ends(after, self.human, moves)})
        return out[:HINTS]

    def _not_your_turn(self) -> str:
        return "The game is over." if done(self.state) else "It is not your turn."

    # --- steps ---------------------------------------------------------------------------------

    def _decide(self, engine: Engine, action: int) -> None:
        """Take a decision (either side), log and record it."""
        before, mover = self.state, int(self.state.current_player)
        text = dict(self.legal_moves(engine)).get(action, f"action {action}")
        moves = moves_of(self.pairs(engine)[action])
        self.record.append({"id": io.to_string_id(before), "player": render.COLOUR_NAMES[mover],
                            "action": int(action), "move": text})
        self.state = engine.k.decide(before, action)
        if action != notation.GO:
            self.log.append(f"{render.COLOUR_NAMES[mover]} plays {text}.")
        self.log += notation.decision_report(before, self.state, action)
        self.pending, self._turn_cache = [], {}
        new_setting = action == notation.GO or (
            not done(self.state) and int(self.state.current_player) == mover)
        self.bot_moves = () if new_setting or mover == self.human else moves

    def _roll(self, engine: Engine, outcome: int | None = None) -> None:
        """The dice (drawn from the game's key unless given), and their jans explained."""
        if outcome is None:
            self.key, outcome, _ = engine.k.draw(self.key)
        roll = engine.k.roll(self.state, outcome)
        self.log += notation.roll_report(self.state, roll)
        self.state = roll.state
        self._turn_cache = {}

    def _bot_plays(self, engine: Engine) -> None:
        while not done(self.state) and int(self.state.current_player) != self.human:
            self.key, _, agent_key = engine.k.draw(self.key)
            self._decide(engine, int(engine.opponent(agent_key, self.state)))
            if not done(self.state):
                self._roll(engine)
        if done(self.state):
            self.log.append(render.status_line(render.position(self.state)) + ".")

    # --- what the page shows ---------------------------------------------------------------

    def result(self) -> str | None:
        if not done(self.state):
            return None
        holes = [int(h) for h in np.asarray(self.state._holes)]
        winner = int(np.argmax(np.asarray(self.state.rewards)))
        if bool(self.state.truncated) or not np.any(np.asarray(self.state.rewards)):
            return "The game ended without a winner."
        who = "You win" if winner == self.human else "The bot wins"
        return f"{who}, {holes[winner]} holes to {holes[1 - winner]}."

    def view(self, engine: Engine, log_from: int = 0) -> dict:
        """Everything the page draws, as JSON values; the log from line `log_from` on."""
        pos = render.position(self.state)
        yours = self.yours()
        board = moved(pos.board, self.human, self.pending)
        if self.pending:
            arrows = render.move_arrows(board, self.human, self.pending, PENDING_INK)
        else:
            arrows = render.move_arrows(board, 1 - self.human, self.bot_moves)
        orders = self.sequences(engine) if yours else {}
        empty = orders.get(()) if not self.pending else None
        go = yours and bool(self.state.legal_action_mask[notation.GO])
        return {
            "game": self.id, "turn": self.turn, "you": self.human, "seat": SEATS[self.human],
            "seed": self.seed, "opponent": engine.opponent_spec,
            "svg": render.svg_of(pos._replace(board=tuple(board)), extra=arrows),
            "position": {"board": board, "dice": list(pos.dice), "points": list(pos.points),
                         "holes": list(pos.holes), "bredouille": list(pos.can_bredouille),
                         "player": pos.player, "status": pos.status},
            "status": render.status_line(pos), "string_id": io.to_string_id(self.state),
            "yours": yours, "pending": [list(m) for m in self.pending],
            "options": self.options(engine) if yours else {},
            "complete": orders.get(tuple(self.pending)) if self.pending else None,
            "pass": empty, "go": go,
            "bot_move": " ".join(f"{f}-{t or 'off'}" for f, t in self.bot_moves) or None,
            "over": done(self.state), "result": self.result(),
            "hints": engine.hinter is not None,
            "log": self.log[log_from:], "log_size": len(self.log),
        }

    def record_of(self) -> dict:
        """The game record: one string id per decision (the position the decision was taken
        in, as the reference engine writes it) with the action taken; `position` is the id
        of the position now. `Game.create(record=...)` replays it."""
        return {"format": RECORD_FORMAT, "version": 1, "start": self.start,
                "you": SEATS[self.human], "seed": self.seed, "decisions": list(self.record),
                "position": io.to_string_id(self.state), "result": self.result()}

    def fingerprint(self) -> bytes:
        """Every byte of the game that a request may change (tests compare it)."""
        leaves = [np.asarray(x).tobytes() for x in jax.tree.leaves((self.state, self.key))]
        return b"|".join(leaves + [repr((self.record, self.log, self.pending, self.bot_moves,
                                         self.start)).encode()])


def _loaded(engine: Engine, string_id: str) -> State:
    """The position of a string id, at a roll, a move or a hold-or-go choice."""
    try:
        rec = io.record_from_string_id(string_id)
    except ValueError as error:
        raise GameError(422, str(error)) from None
    board = rec["board"]
    problems = [f"{name} has {n} checkers on the board (15 at most)"
                for name, n in (("White", sum(max(v, 0) for v in board)),
                                ("Black", sum(max(-v, 0) for v in board))) if n > NUM_CHECKERS]
    problems += [f"{p} has {rec[key][0]} points (0 to 11)" for p, key in
                 (("White", "p1"), ("Black", "p2")) if rec[key][0] >= render.POINTS_PER_HOLE]
    problems += [f"{p} has {rec[key][1]} holes: the game is over" for p, key in
                 (("White", "p1"), ("Black", "p2")) if rec[key][1] >= 12]
    if rec["turn_stage"] not in (TS_ROLL_DICE, TS_MOVE, TS_HOLD_OR_GO):
        problems.append("it is between a roll and a decision (load one at a roll, a move or a "
                        "hold-or-go choice)")
    elif rec["turn_stage"] != TS_ROLL_DICE and not all(1 <= d <= 6 for d in rec["dice"]):
        problems.append(f"its dice {rec['dice']} are no roll")
    if problems:
        raise GameError(422, f"position {string_id}: " + "; ".join(problems) + ".")
    return engine.env.restore(io.state_from_record(rec))


def _outcome_of(string_id: str) -> int:
    """The chance outcome of the dice in a decision's string id."""
    try:
        dice = io.record_from_string_id(string_id)["dice"]
    except ValueError as error:
        raise GameError(422, f"record: {error}") from None
    if not all(1 <= d <= 6 for d in dice):
        raise GameError(422, f"record: position {string_id} has no roll")
    return int(dice_to_outcome(np.asarray(dice)))


def _read_record(record) -> tuple[list[dict], str | None, str | None]:
    """(decisions, start, position) of a record, its types checked."""
    if not isinstance(record, dict) or not isinstance(record.get("decisions"), list):
        raise GameError(422, "record: expected an object with a list 'decisions'")
    decisions = record["decisions"]
    if len(decisions) > MAX_RECORD_DECISIONS:
        raise GameError(422, f"record: {len(decisions)} decisions, at most "
                             f"{MAX_RECORD_DECISIONS}")
    for n, d in enumerate(decisions):
        if not (isinstance(d, dict) and isinstance(d.get("id"), str)
                and type(d.get("action")) is int and 0 <= d["action"] < NUM_ACTIONS):
            raise GameError(422, f"record: decision {n + 1} needs a string 'id' and an "
                                 f"integer 'action' in 0..{NUM_ACTIONS - 1}")
    start, position = record.get("start"), record.get("position")
    for name, value in (("start", start), ("position", position)):
        if value is not None and not isinstance(value, str):
            raise GameError(422, f"record: '{name}' must be a string id or null")
    return decisions, start, position


# ---------------------------------------------------------------------------------------------
#  The store
# ---------------------------------------------------------------------------------------------

GONE = ("This game is no longer on the server: it keeps the {n} games used last and drops "
        "the one left idle longest, and forgets them all when it restarts. Start a new game, "
        "or load your record.")


class Games:
    """At most `max_games` games by id, the one idle longest dropped for a new one. Hold
    `lock` around every use of a game or of the engine."""

    def __init__(self, engine: Engine, max_games: int = 64):
        if max_games < 1:
            raise ValueError(f"max_games must be at least 1, got {max_games}")
        self.engine, self.max_games = engine, max_games
        self.lock = threading.Lock()
        self._games: collections.OrderedDict[str, Game] = collections.OrderedDict()

    def add(self, game: Game) -> Game:
        while len(self._games) >= self.max_games:
            self._games.popitem(last=False)
        self._games[game.id] = game
        return game

    def get(self, game_id: str) -> Game:
        """The game `game_id`, marked as just used; GameError 404 if there is none."""
        game = self._games.get(game_id)
        if game is None:
            raise GameError(404, GONE.format(n=self.max_games))
        self._games.move_to_end(game_id)
        return game

    def __len__(self) -> int:
        return len(self._games)

    def __iter__(self):
        return iter(list(self._games.values()))
