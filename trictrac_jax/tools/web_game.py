"""The games behind the browser page: one game's state, the player's half-moves, the bot's
replies (or, in free play, the person moving both colours), the record, positions set up on
the board, and the store that keeps a bounded number of games apart.

Nothing here knows HTTP (web.py does, and checks every request's types and sizes before a
value reaches this module). The engine's functions are compiled once per process (`Engine`,
warmed before the server answers). Each game has its own lock, held around every call that
reads or changes it; the store's lock guards only its table of games. A new game (a record
replayed, say) is built before it is stored, under no lock at all, so that a long replay
keeps no other player waiting; its time is bounded (`MAX_REPLAY_SECONDS`).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import secrets
import threading
import time

import jax
import numpy as np

from trictrac_jax import io, render
from trictrac_jax.env import WINNING_HOLES, Trictrac, dice_to_outcome, new_game
from trictrac_jax.state import (NUM_CHECKERS, STAGE_IN_GAME, TS_HOLD_OR_GO, TS_MOVE,
                                TS_ROLL_DICE, State)
from trictrac_jax.tools import notation, play, reasons

DEFAULT_OPPONENT = "champion"  # with play's lookahead over the rolls, as `play` runs it
LOOKAHEAD = 32  # play's default: the bot's 1-ply search over its 32 likeliest moves
HINTS = 3
RECORD_FORMAT = "trictrac-jax game record"
RECORD_VERSION = 2  # 2: the record names its mode and opponent (1 had its seat and seed)
PENDING_INK, HINT_INK = "#2e9e5b", "#3d7bbf"  # the bot's last move: render.move_arrows' own
SEATS = ("white", "black")

# Limits on what a request may ask of a game (web.py bounds its bytes, strings and lists).
MAX_REPLAY_SECONDS = 10.0  # a record whose replay takes longer is refused
MAX_LISTED = 12  # legal moves named in a refusal
CLIP = 40  # characters of a request's own text quoted back in an error
# Why a score can pass 12 holes: the reference (store/src/game.rs, mark_points) adds each
# mark's holes in full, two per 12 points while the scorer can bredouille, and the game ends
# at 12 or more.
PAST_12 = ("Holes are counted past 12, as the reference engine counts them: a hole won in "
           "bredouille counts two.")

Move = tuple[int, int]  # (from, to) on the real board; to 0: borne off


class GameError(Exception):
    """A request that cannot be honoured: `status` is its HTTP status, the message why (in
    a player's words); `stale` when the request was made at a version the game has left."""

    def __init__(self, status: int, message: str, stale: bool = False):
        super().__init__(message)
        self.status, self.stale = status, stale


def clip(text: str, n: int = CLIP) -> str:
    """`text` cut to `n` characters (an error never echoes unbounded input)."""
    return text if len(text) <= n else text[:n - 1] + "…"


# ---------------------------------------------------------------------------------------------
#  The compiled functions every game shares
# ---------------------------------------------------------------------------------------------

class Hinter:
    """The champion's worth of its likeliest moves in a position, as its lookahead over the
    rolls values them (`search.likeliest`, then `model.rolled_worth` of each): one jitted
    call a position."""

    def __init__(self, spec: str = "champion", top_k: int = LOOKAHEAD):
        from trictrac_jax.az import search  # the training extra
        from trictrac_jax.league import network_agents
        from trictrac_jax.az.model import model_from_config, rolled_worth
        from trictrac_jax.ranking import candidate_worths
        params, config = network_agents.load_network(spec)
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
        self.restore = jax.jit(self.env.restore)  # a loaded position's legal moves
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
        legal move, the bot answers, with a hint, a refusal, a loaded position and its
        preview."""
        game = Game.create(self, human=0, seed=0)
        if self.hinter is not None:
            game.hint(self)
        reasons.candidate_lists(game.state)
        game.play(self, min(game.sequences(self).values()))
        Game.create(self, human=1, seed=0, start=game.record[0]["id"]).view(self)
        preview(self, io.record_from_string_id(game.record[0]["id"]))


# ---------------------------------------------------------------------------------------------
#  One game
# ---------------------------------------------------------------------------------------------

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


def dice_text(dice) -> str:
    return f"{dice[0]}-{dice[1]}"


@dataclasses.dataclass
class Game:
    """One game: against the bot, the player being colour `human` (0 White, 1 Black), or in
    free play (`mode` "free") the person moving both colours (`human`: the seat he chose)."""

    id: str
    human: int
    seed: int
    state: State
    key: jax.Array
    start: str | None  # string id of the position the game started from (None: a new game)
    mode: str = "bot"
    record: list[dict] = dataclasses.field(default_factory=list)  # one entry a decision
    log: list[str] = dataclasses.field(default_factory=list)
    pending: list[Move] = dataclasses.field(default_factory=list)  # half-moves not confirmed
    last_moves: tuple[Move, ...] = ()  # the other side's last move, while its board is shown
    rolls: list = dataclasses.field(default_factory=lambda: [None, None])  # each colour's last
    last_turn: dict | None = None  # the last decision: its colour, roll and move
    version: int = 0  # changes made: a request names the version it was made at
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False,
                                             compare=False)
    _turn_cache: dict = dataclasses.field(default_factory=dict)  # per decision: see `_cached`

    # --- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls, engine: Engine, human: int, seed: int, start: str | None = None,
               mode: str = "bot") -> "Game":
        """A game from the start or from the position of string id `start`, then played on
        by the bot until the player's turn."""
        game = cls._new(human, seed, mode)
        if start is not None:
            game._load(engine, start)
            game.log.append(f"Position {start} loaded.")
        return game._begin(engine)

    @classmethod
    def from_record(cls, engine: Engine, record: dict) -> "Game":
        """The game of a record (see `record_of`; its types checked by the caller) replayed
        in its own seat, seed and mode, then played on from its end. A record made here
        goes on as the game it records would have: the seed's key is drawn as it was."""
        game = cls._new(SEATS.index(record.get("you") or SEATS[0]), record.get("seed") or 0,
                        record.get("mode") or "bot")
        opponent = record.get("opponent")
        if game.mode == "bot" and opponent not in (None, engine.opponent_spec):
            game.log.append(f"This record was played against {clip(opponent)}; the bot here "
                            f"is {engine.opponent_spec}.")
        game._replay(engine, record)
        return game._begin(engine)

    @classmethod
    def _new(cls, human: int, seed: int, mode: str) -> "Game":
        return cls(id=secrets.token_urlsafe(18), human=human, seed=seed, state=new_game(),
                   key=jax.random.PRNGKey(seed), start=None, mode=mode)

    def _load(self, engine: Engine, start: str) -> None:
        """Start from the position of string id `start`; its dice, if it is at a decision,
        are the mover's roll."""
        self.start, self.state = start, _loaded(engine, start)
        if not self.state.is_chance:
            self.rolls[int(self.state.current_player)] = [
                int(d) for d in np.asarray(self.state._dice)]

    def _begin(self, engine: Engine) -> "Game":
        if self.state.is_chance:
            self._roll(engine)
        self._bot_plays(engine)
        return self

    def _replay(self, engine: Engine, record: dict) -> None:
        """Play a record's decisions again, each roll's dice read from the next id."""
        deadline = time.monotonic() + MAX_REPLAY_SECONDS
        decisions, start, position = record["decisions"], record.get("start"), \
            record.get("position")
        if start is not None:
            self._load(engine, start)
        ids = [d["id"] for d in decisions] + ([position] if position is not None else [])
        for n, string_id in enumerate(ids):
            what = _nth_move(decisions, n)
            if time.monotonic() > deadline:
                raise GameError(422, f"This record takes too long to replay (over "
                                     f"{MAX_REPLAY_SECONDS:.0f} s, at {what}).")
            if self.state.is_chance:
                self._roll(engine, outcome=_outcome_of(string_id, what))
            if io.to_string_id(self.state) != string_id:
                raise GameError(422, f"This record does not replay: {what} was made in "
                                     f"position {clip(string_id)}, but the game before it "
                                     f"leads to {io.to_string_id(self.state)}.")
            if n < len(decisions):
                action = decisions[n]["action"]
                if bool(self.state.done) or not bool(self.state.legal_action_mask[action]):
                    raise GameError(422, f"This record does not replay: {what} is not legal "
                                         "in its position.")
                if self.bots_turn():  # the key the bot's choice was drawn from
                    self.key, _, _ = engine.k.draw(self.key)
                self._decide(engine, action)

    # --- the player's turn --------------------------------------------------------------------

    @property
    def turn(self) -> int:
        """Decisions taken so far."""
        return len(self.record)

    def seat(self) -> int:
        """The colour the page plays now: the player's; in free play, the one to move."""
        return int(self.state.current_player) if self.mode == "free" else self.human

    def bots_turn(self) -> bool:
        return self.mode == "bot" and int(self.state.current_player) != self.human

    def yours(self) -> bool:
        return not bool(self.state.done) and not self.bots_turn()

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
        me = self.seat()
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
        self.version += 1

    def undo(self) -> None:
        """Take back the half-moves not yet confirmed."""
        if not self.yours():
            raise GameError(409, self._not_your_turn())
        if self.pending:
            self.pending = []
            self.version += 1

    def play(self, engine: Engine, action: int) -> None:
        """The player's decision (a Move, Go, or the empty move), then the bot's until the
        player's next decision or the end."""
        if not self.yours():
            raise GameError(409, self._not_your_turn())
        if not bool(self.state.legal_action_mask[action]):
            legal = [t for _, t in self.legal_moves(engine)]
            named = ", ".join(legal[:MAX_LISTED]) + (", …" if len(legal) > MAX_LISTED else "")
            raise GameError(409, f"That move is not legal here. Legal: {named}.")
        self._decide(engine, action)
        if not bool(self.state.done):
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
        board, me = np.asarray(self.state._board), self.seat()
        scale = engine.hinter.points_per_unit
        out, seen = [], set()
        for action, worth in engine.hinter.ranked(self.state):
            moves = () if action == notation.GO else moves_of(pairs[action])
            after = moved(board, me, moves)
            if (action == notation.GO, *after) in seen:
                continue
            seen.add((action == notation.GO, *after))
            out.append({"action": action, "move": notations[action], "worth": worth,
                        "points": None if scale is None else worth * scale,
                        "arrows": render.arrow_ends(after, me, moves)})
        return out[:HINTS]

    def _not_your_turn(self) -> str:
        return "The game is over." if bool(self.state.done) else "It is not your turn."

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
        self.version += 1
        self.last_turn = {"colour": mover, "dice": self.rolls[mover], "move": text}
        new_setting = action == notation.GO or (
            not bool(self.state.done) and int(self.state.current_player) == mover)
        self.last_moves = () if new_setting or (self.mode == "bot" and mover == self.human) \
            else moves

    def _roll(self, engine: Engine, outcome: int | None = None) -> None:
        """The dice (drawn from the game's key unless given: a record's, whose key is drawn
        all the same), and their jans explained."""
        self.key, drawn, _ = engine.k.draw(self.key)
        roller = int(self.state.current_player)
        roll = engine.k.roll(self.state, drawn if outcome is None else outcome)
        self.log += notation.roll_report(self.state, roll)
        self.state = roll.state
        self.rolls[roller] = [int(d) for d in np.asarray(self.state._dice)]
        self._turn_cache = {}

    def _bot_plays(self, engine: Engine) -> None:
        while not bool(self.state.done) and self.bots_turn():
            self.key, _, agent_key = engine.k.draw(self.key)
            self._decide(engine, int(engine.opponent(agent_key, self.state)))
            if not bool(self.state.done):
                self._roll(engine)
        if bool(self.state.done):
            self.log.append(render.status_line(render.position(self.state)) + ".")

    # --- what the page shows ---------------------------------------------------------------

    def result(self) -> str | None:
        """How the game ended, said to the player (in free play, by colour)."""
        if not bool(self.state.done):
            return None
        holes = [int(h) for h in np.asarray(self.state._holes)]
        winner = int(np.argmax(np.asarray(self.state.rewards)))
        if bool(self.state.truncated) or not np.any(np.asarray(self.state.rewards)):
            return "The game ended without a winner."
        if self.mode == "free":
            who = f"{render.COLOUR_NAMES[winner]} wins"
        else:
            who = "You win" if winner == self.human else "The bot wins"
        said = f"{who}, {holes[winner]} holes to {holes[1 - winner]}."
        if max(holes) > WINNING_HOLES:
            said += f" {PAST_12}"
        return said

    def other_turn(self) -> str | None:
        """The other side's last turn, as the page says it: "The bot rolled 5-3 and played
        1-6 1-7." (in free play the colour's name); None when the last decision was the
        seat's own."""
        last = self.last_turn
        if last is None or last["colour"] == self.seat():
            return None
        who = "The bot" if self.mode == "bot" else render.COLOUR_NAMES[last["colour"]]
        rolled = f" rolled {dice_text(last['dice'])} and" if last["dice"] else ""
        did = "went (new setting)" if last["move"] == "go" else (
            "could not move" if last["move"] == "pass" else f"played {last['move']}")
        return f"{who}{rolled} {did}."

    def view(self, engine: Engine, log_from: int = 0) -> dict:
        """Everything the page draws, as JSON values; the log from line `log_from` on."""
        pos = render.position(self.state)
        yours, me = self.yours(), self.seat()
        board = moved(pos.board, me, self.pending)
        if self.pending:
            arrows = render.move_arrows(board, me, self.pending, PENDING_INK)
        elif self.last_turn is not None:
            arrows = render.move_arrows(board, self.last_turn["colour"], self.last_moves)
        else:
            arrows = ""
        orders = self.sequences(engine) if yours else {}
        empty = orders.get(()) if not self.pending else None
        go = yours and bool(self.state.legal_action_mask[notation.GO])
        return {
            "game": self.id, "turn": self.turn, "version": self.version, "you": me,
            "seat": SEATS[self.human], "mode": self.mode, "seed": self.seed,
            "opponent": engine.opponent_spec if self.mode == "bot" else None,
            "svg": render.svg_of(pos._replace(board=tuple(board)), extra=arrows),
            "position": {"board": board, "dice": list(pos.dice), "points": list(pos.points),
                         "holes": list(pos.holes), "bredouille": list(pos.can_bredouille),
                         "player": pos.player, "status": pos.status},
            "rolls": list(self.rolls), "status": render.status_line(pos),
            "string_id": io.to_string_id(self.state),
            "yours": yours, "pending": [list(m) for m in self.pending],
            "options": self.options(engine) if yours else {},
            "complete": orders.get(tuple(self.pending)) if self.pending else None,
            "pass": empty, "go": go,
            "last_move": " ".join(f"{f}-{t or 'off'}" for f, t in self.last_moves) or None,
            "other_turn": self.other_turn(),
            "over": bool(self.state.done), "result": self.result(),
            "hints": engine.hinter is not None,
            "log": self.log[log_from:], "log_size": len(self.log),
        }

    def record_of(self, engine: Engine) -> dict:
        """The game record: one string id per decision (the position the decision was taken
        in, as the reference engine writes it) with the action taken; `position` is the id
        of the position now; the seat, seed and mode it was played in.
        `Game.from_record` replays it."""
        return {"format": RECORD_FORMAT, "version": RECORD_VERSION, "start": self.start,
                "you": SEATS[self.human], "seed": self.seed, "mode": self.mode,
                "opponent": engine.opponent_spec if self.mode == "bot" else None,
                "decisions": list(self.record), "position": io.to_string_id(self.state),
                "result": self.result()}

    def fingerprint(self) -> bytes:
        """Every byte of the game that a request may change (tests compare it)."""
        leaves = [np.asarray(x).tobytes() for x in jax.tree.leaves((self.state, self.key))]
        return b"|".join(leaves + [repr((self.record, self.log, self.pending, self.last_moves,
                                         self.start, self.rolls, self.last_turn, self.version,
                                         self.human, self.mode)).encode()])


def _nth_move(decisions: list[dict], n: int) -> str:
    """A record's decision `n` as a player names it: "its move 4 (White's 1-6 1-7)"."""
    if n >= len(decisions):
        return "its last position"
    d = decisions[n]
    said = f" ({d['player']}'s {clip(d['move'], 24)})" if d.get("player") and d.get("move") \
        else ""
    return f"its move {n + 1}{said}"


# ---------------------------------------------------------------------------------------------
#  Positions: read from a string id, or set up on the board
# ---------------------------------------------------------------------------------------------

def decode_id(string_id: str) -> dict:
    """The reference's record of a string id (`io.record_from_string_id`); GameError 422,
    said for a player, if it is none."""
    try:
        return io.record_from_string_id(string_id)
    except ValueError:
        raise GameError(422, f"“{clip(string_id)}” is not a position id: an id is 24 "
                             "letters, digits, + or /, as the page shows under “This "
                             "position”.") from None


def position_problems(rec: dict) -> list[str]:
    """What makes a position's record (`io.record_from_string_id`'s) one no game reaches, or
    one the game cannot be played on from: too many checkers, a side with none, points or
    holes out of range, a stage between a roll and a decision, dice that are no roll."""
    board = rec["board"]
    problems = []
    for name, n in (("White", sum(max(v, 0) for v in board)),
                    ("Black", sum(max(-v, 0) for v in board))):
        if n > NUM_CHECKERS:
            problems.append(f"{name} has {n} checkers on the board (15 at most)")
        elif n == 0:
            problems.append(f"{name} has no checker on the board")
    for name, key in (("White", "p1"), ("Black", "p2")):
        points, holes = rec[key][:2]
        if points >= render.POINTS_PER_HOLE:
            problems.append(f"{name} has {points} points (0 to 11)")
        if holes >= 12:
            problems.append(f"{name} has {holes} holes: the game is over")
    if rec["turn_stage"] not in (TS_ROLL_DICE, TS_MOVE, TS_HOLD_OR_GO):
        problems.append("it is between a roll and a decision (load one at a roll, a move or a "
                        "hold-or-go choice)")
    elif rec["turn_stage"] != TS_ROLL_DICE and not all(1 <= d <= 6 for d in rec["dice"]):
        problems.append(f"its dice {rec['dice'][0]} and {rec['dice'][1]} are no roll")
    return problems


def _loaded(engine: Engine, string_id: str) -> State:
    """The position of a string id, at a roll, a move or a hold-or-go choice; the engine
    derives its legal moves."""
    rec = decode_id(string_id)
    problems = position_problems(rec)
    if problems:
        raise GameError(422, f"Position {clip(string_id)} cannot be played: "
                             + "; ".join(problems) + ".")
    return engine.restore(io.state_from_record(rec))


def setup_record(board, player: int, dice, points=(0, 0), holes=(0, 0),
                 bredouille=(True, True)) -> dict:
    """The record (as `io.record_from_string_id` gives) of a position set up on the board:
    `player` to move with `dice`."""
    players = [[int(points[c]), int(holes[c]), int(bredouille[c]), int(bredouille[c]), 0]
               for c in (0, 1)]
    rec = {"board": [int(n) for n in board], "active": player + 1, "stage": STAGE_IN_GAME,
           "turn_stage": TS_MOVE, "dice": [int(d) for d in dice], "p1": players[0],
           "p2": players[1], "dice_points": [0, 0]}
    rec["id"] = io.record_string_id(rec)
    return rec


def preview(engine: Engine, rec: dict) -> dict:
    """A position set up on the board, as the page shows it while it is edited: its
    picture, its string id, and what the engine says of it (its problems, or its legal
    moves)."""
    problems = position_problems(rec)
    mover = render.COLOUR_NAMES[rec["active"] - 1]
    if problems:
        said = "This position cannot be played: " + "; ".join(problems) + "."
    else:
        state = engine.restore(io.state_from_record(rec))
        moves = [t for _, t in notation.legal_moves(state, engine.k)]
        said = (f"{mover} to move with {dice_text(rec['dice'])}: "
                + ("no move possible (pass)." if moves == ["pass"] else
                   f"{len(moves)} legal move{'s' * (len(moves) > 1)}."))
    pos = render.Position(
        board=tuple(rec["board"]), dice=tuple(rec["dice"]),
        points=(rec["p1"][0], rec["p2"][0]), holes=(rec["p1"][1], rec["p2"][1]),
        can_bredouille=(bool(rec["p1"][2]), bool(rec["p2"][2])), player=rec["active"] - 1,
        status="move")
    return {"string_id": rec["id"], "svg": render.svg_of(pos), "problems": problems,
            "said": said}


def _outcome_of(string_id: str, what: str) -> int:
    """The chance outcome of the dice in a record's decision's string id."""
    dice = decode_id(string_id)["dice"]
    if not all(1 <= d <= 6 for d in dice):
        raise GameError(422, f"This record does not replay: {what} has no dice.")
    return int(dice_to_outcome(np.asarray(dice)))


# ---------------------------------------------------------------------------------------------
#  The store
# ---------------------------------------------------------------------------------------------

GONE = ("This game is no longer on the server: it keeps the {n} games used last and drops "
        "the one left idle longest, and forgets them all when it restarts. Start a new game, "
        "or load your record.")


class Games:
    """At most `max_games` games by id, the one idle longest dropped for a new one. `lock`
    guards the table only; each game has its own (`Game.lock`)."""

    def __init__(self, engine: Engine, max_games: int = 64):
        if max_games < 1:
            raise ValueError(f"max_games must be at least 1, got {max_games}")
        self.engine, self.max_games = engine, max_games
        self.lock = threading.Lock()
        self._games: collections.OrderedDict[str, Game] = collections.OrderedDict()

    def add(self, game: Game) -> Game:
        with self.lock:
            while len(self._games) >= self.max_games:
                self._games.popitem(last=False)
            self._games[game.id] = game
        return game

    def get(self, game_id: str) -> Game:
        """The game `game_id`, marked as just used; GameError 404 if there is none."""
        with self.lock:
            game = self._games.get(game_id)
            if game is None:
                raise GameError(404, GONE.format(n=self.max_games))
            self._games.move_to_end(game_id)
        return game

    def __len__(self) -> int:
        return len(self._games)

    def __iter__(self):
        with self.lock:
            return iter(list(self._games.values()))
