"""Pictures of Trictrac positions: SVG for notebooks and documents, text for terminals.

    from trictrac_jax import render
    render.svg(state)              # one game -> SVG string
    render.svg_grid(states, 4)     # a batch (leading axis) or a list of games, 4 per row
    render.svg_animation(states)   # a game's states over time -> looping animated SVG
    print(render.text(state))
    state.to_svg(), state.save_svg("game.svg")   # pgx's methods; a notebook shows a state

The table is laid out as the reference engine prints it and as players sit at it: White at
the bottom, fields 12..1 from left to right (his talon, field 1, at the bottom right), Black
at the top, fields 13..24 (his talon, field 24, top right); the rest corners 12 and 13 face
each other at the left end, and the bar splits the small jans (1-6, 19-24) from the big jans
(7-18). Everything here runs on the host (numpy); nothing is jitted.
"""
from __future__ import annotations

import pathlib
import re
from html import escape
from typing import NamedTuple, Sequence

import jax
import numpy as np

from trictrac_jax.env import WINNING_HOLES
from trictrac_jax.state import NUM_CHECKERS, STAGE_ENDED, TS_HOLD_OR_GO, State

COLOUR_NAMES = ("White", "Black")
TEXT_SYMBOLS = ("O", "X")  # as the reference engine's board display
POINTS_PER_HOLE = 12


class Position(NamedTuple):
    """One game's displayable facts, as plain Python values (real board, by colour)."""

    board: tuple[int, ...]  # 24 fields: > 0 White, < 0 Black; index i = field i + 1
    dice: tuple[int, int]  # (0, 0) before any roll
    points: tuple[int, int]
    holes: tuple[int, int]
    can_bredouille: tuple[bool, bool]
    player: int  # colour to act
    status: str  # one of STATUSES


STATUSES = ("move", "hold_or_go", "roll", "won", "forfeit", "truncated")


def position(state: State) -> Position:
    """The displayable facts of one (unbatched) game state."""
    board = np.asarray(state._board)
    if board.shape != (24,):
        raise ValueError(f"expected one game (board of shape (24,)), got board shape "
                         f"{board.shape}; use svg_grid for a batch")
    ints = lambda x: tuple(int(v) for v in np.asarray(x))
    return Position(
        board=ints(board), dice=ints(state._dice), points=ints(state._points),
        holes=ints(state._holes),
        can_bredouille=tuple(bool(v) for v in np.asarray(state._can_bredouille)),
        player=int(state.current_player), status=_status(state))


def _status(state: State) -> str:
    if bool(state.truncated):
        return "truncated"
    if bool(state.terminated):
        # The reference only ends a game on a mark by the player to move; any other ending
        # is an illegal action by the player to move.
        return "won" if int(state._stage) == STAGE_ENDED else "forfeit"
    if bool(state.is_chance):
        return "roll"
    return "hold_or_go" if int(state._turn_stage) == TS_HOLD_OR_GO else "move"


def status_line(pos: Position) -> str:
    """Whose turn it is and to do what, or how the game ended."""
    me, other = COLOUR_NAMES[pos.player], COLOUR_NAMES[1 - pos.player]
    return {
        "move": f"{me} to move",
        "hold_or_go": f"{me} won a hole: hold (move) or go (new setting)",
        "roll": f"{me} to roll",
        "won": f"{me} wins the game",
        "forfeit": f"{me} played an illegal action: {other} wins",
        "truncated": "Game truncated: no winner",
    }[pos.status]


def positions(states) -> list[Position]:
    """A batched `State` (leading axis) or a sequence of unbatched ones -> list of Position."""
    if isinstance(states, State):
        board = np.asarray(states._board)
        if board.ndim == 1:
            return [position(states)]
        if board.ndim != 2:
            raise ValueError(f"expected a batch with one leading axis, got board shape {board.shape}")
        host = jax.tree.map(np.asarray, states)  # one transfer, then cheap numpy slices
        return [position(jax.tree.map(lambda x: x[i], host)) for i in range(board.shape[0])]
    return [position(s) for s in states]


# ---------------------------------------------------------------------------------------------
#  Text
# ---------------------------------------------------------------------------------------------

TEXT_STACK = 5  # checkers drawn per field; the last row shows the count beyond that


def text(state: State) -> str:
    """The board and score of one game as plain text (ASCII), White at the bottom."""
    return text_of(position(state))


def text_of(pos: Position) -> str:
    top_fields = list(range(13, 25))
    bottom_fields = list(range(12, 0, -1))
    number_row = lambda fields: "   " + _join_halves([f"{f:^4}" for f in fields], "   ")
    rule = "  +" + "-" * 24 + "+-+" + "-" * 24 + "+"
    top_rows = [_text_row(pos.board, top_fields, k) for k in range(TEXT_STACK)]
    bottom_rows = [_text_row(pos.board, bottom_fields, k) for k in reversed(range(TEXT_STACK))]
    lines = [_text_score(pos, 1), number_row(top_fields), rule]
    lines += ["  |" + r + "|" for r in top_rows]
    lines += ["  |" + " " * 24 + "| |" + " " * 24 + "|"]
    lines += ["  |" + r + "|" for r in bottom_rows]
    lines += [rule, number_row(bottom_fields), _text_score(pos, 0)]
    dice = "-".join(map(str, pos.dice)) if pos.dice[0] else "none"
    lines += [f"  Dice {dice}   {status_line(pos)}"]
    return "\n".join(lines)


def _join_halves(cells: list[str], bar: str) -> str:
    return "".join(cells[:6]) + bar + "".join(cells[6:])


def _text_row(board, fields, k: int) -> str:
    """Row `k` (0 = nearest the field's base) of the checker stacks on `fields`."""
    cells = []
    for f in fields:
        n = board[f - 1]
        count, symbol = abs(n), TEXT_SYMBOLS[0 if n > 0 else 1]
        if k == TEXT_STACK - 1 and count > TEXT_STACK:
            cell = f"{count:^4}"
        elif k < count:
            cell = f" {symbol}  "
        else:
            cell = " .  " if k == 0 else "    "
        cells.append(cell)
    return _join_halves(cells, "| |")


def holes_label(holes: int) -> str:
    """'holes 7/12' during a game; past the line, the count alone ('holes 13, won'): the
    reference adds a bredouille's two holes in full, so a game can end at 13."""
    return f"holes {holes}/{WINNING_HOLES}" if holes < WINNING_HOLES else f"holes {holes}, won"


def _text_score(pos: Position, colour: int) -> str:
    points, holes = pos.points[colour], pos.holes[colour]
    marks = POINTS_PER_HOLE - 1
    track = "#" * min(points, marks) + "." * (marks - min(points, marks))
    flag = "  bredouille" if pos.can_bredouille[colour] else ""
    turn = "  <" if pos.player == colour and pos.status in ("move", "hold_or_go", "roll") else ""
    off = NUM_CHECKERS - _on_board(pos.board, colour)
    return (f"  {COLOUR_NAMES[colour]} ({TEXT_SYMBOLS[colour]})  points {points:>2} [{track}]"
            f"  {holes_label(holes):<13}  off {off:>2}{flag}{turn}")


def _on_board(board, colour: int) -> int:
    sign = 1 if colour == 0 else -1
    return sum(max(sign * n, 0) for n in board)


# ---------------------------------------------------------------------------------------------
#  SVG
# ---------------------------------------------------------------------------------------------

# Geometry of one board picture (user units).
FIELD_W, BAR_W, FRAME = 48, 30, 26
ARROW_H, GAP = 168, 64
CHECKER_R, CHECKER_STEP, SVG_STACK = 21, 33, 5
X0, Y0 = FRAME + 8, FRAME + 8  # top-left corner of the felt
FELT_W, FELT_H = 12 * FIELD_W + BAR_W, 2 * ARROW_H + GAP
PANEL_X = X0 + FELT_W + FRAME + 22
WIDTH, HEIGHT = PANEL_X + 232, Y0 + FELT_H + FRAME + 8

PALETTE = dict(
    wood="#7a4a24", wood_dark="#4e2d14", felt="#2f5d3a", arrow_light="#eadfc4",
    arrow_dark="#9c2f2f", corner="#e2b33c", ink="#f6efdd", panel="#fbf7ee", panel_ink="#2b2118",
    white="#f5f0e3", white_edge="#8a7f6a", black="#26221f", black_edge="#000000",
    track_off="#e2dac8", points_on="#3d7bbf", holes_on="#c0392b", muted="#a79f90")

# Shared by every board of one document (a grid or an animation repeats the board).
SVG_DEFS = f"""<defs>
<radialGradient id="tt-white" cx="0.38" cy="0.35" r="0.7">
<stop offset="0" stop-color="#ffffff"/><stop offset="1" stop-color="{PALETTE['white']}"/></radialGradient>
<radialGradient id="tt-black" cx="0.38" cy="0.35" r="0.7">
<stop offset="0" stop-color="#5b5550"/><stop offset="1" stop-color="{PALETTE['black']}"/></radialGradient>
</defs>"""


def svg(state: State, caption: str | None = None) -> str:
    """One game as a standalone SVG document (string)."""
    return svg_of(position(state), caption)


def svg_of(pos: Position, caption: str | None = None, extra: str = "") -> str:
    """`svg` of a `Position` (a board edited on the host, say a move half played), with
    `extra` SVG elements drawn over the board (e.g. `move_arrows`)."""
    body = board_svg_body(pos, caption) + extra
    return _document(WIDTH, _board_height(caption), SVG_DEFS + body)


def svg_grid(states, cols: int = 4, captions: Sequence[str] | None = None) -> str:
    """Several games in a grid: a batched `State` (leading axis) or a sequence of States."""
    if not isinstance(cols, int) or cols < 1:
        raise ValueError(f"cols must be a positive int, got {cols!r}")
    boards = positions(states)
    if not boards:
        raise ValueError("svg_grid needs at least one state")
    captions = _check_captions(captions, len(boards))
    height = _board_height(captions[0] if captions else None)
    rows = -(-len(boards) // cols)
    cells = []
    for i, pos in enumerate(boards):
        x, y = (i % cols) * WIDTH, (i // cols) * height
        cells.append(f'<svg x="{x}" y="{y}" width="{WIDTH}" height="{height}" '
                     f'viewBox="0 0 {WIDTH} {height}">'
                     f'{board_svg_body(pos, captions[i] if captions else None)}</svg>')
    return _document(min(cols, len(boards)) * WIDTH, rows * height, SVG_DEFS + "".join(cells))


def svg_animation(states, seconds_per_frame: float = 0.8,
                  captions: Sequence[str] | None = None) -> str:
    """A game's successive states as one looping animated SVG (SMIL; plays in browsers and
    notebooks). `states`: a State stacked over time (leading axis) or a sequence of States.
    Static renderers show the first frame. Default captions number the frames."""
    if not seconds_per_frame > 0:
        raise ValueError(f"seconds_per_frame must be positive, got {seconds_per_frame!r}")
    frames = positions(states)
    if not frames:
        raise ValueError("svg_animation needs at least one state")
    n = len(frames)
    captions = _check_captions(captions, n) or [f"frame {i + 1}/{n}" for i in range(n)]
    total = seconds_per_frame * n
    groups = []
    for i, pos in enumerate(frames):
        # Discrete visibility keyed on the loop's time: frame i shows during [i/n, (i+1)/n).
        if i == 0:
            values, times = "visible;hidden", f"0;{1 / n:.6f}"
        else:
            values, times = "hidden;visible;hidden", f"0;{i / n:.6f};{(i + 1) / n:.6f}"
        anim = (f'<animate attributeName="visibility" values="{values}" keyTimes="{times}" '
                f'dur="{total:.3f}s" calcMode="discrete" repeatCount="indefinite"/>') if n > 1 else ""
        visibility = "visible" if i == 0 else "hidden"
        groups.append(f'<g visibility="{visibility}">{anim}{board_svg_body(pos, captions[i])}</g>')
    return _document(WIDTH, _board_height(captions[0]), SVG_DEFS + "".join(groups))


def _check_captions(captions, n: int):
    if captions is None:
        return None
    captions = list(captions)
    if len(captions) != n:
        raise ValueError(f"got {len(captions)} captions for {n} boards")
    return captions


def _board_height(caption) -> int:
    return HEIGHT + (30 if caption else 0)


def _document(width: int, height: int, content: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="Georgia, \'DejaVu Serif\', serif">'
            f'{content}</svg>')


def board_svg_body(pos: Position, caption: str | None = None) -> str:
    """The SVG elements of one board (no document, no defs: see SVG_DEFS)."""
    parts = [f'<rect width="{WIDTH}" height="{_board_height(caption)}" fill="{PALETTE["panel"]}"/>',
             _table(), _arrows(), _field_numbers(), _checkers(pos.board), _dice(pos),
             _panel(pos)]
    if caption:
        parts.append(_text(WIDTH / 2, HEIGHT + 18, escape(caption), 17, PALETTE["panel_ink"],
                           anchor="middle"))
    return "".join(parts)


def field_column(field: int) -> tuple[float, bool]:
    """(x of the field's centre, whether it is on the top row) for field 1..24."""
    top = field >= 13
    k = field - 13 if top else 12 - field  # column from the left, 0..11
    x = X0 + k * FIELD_W + (BAR_W if k >= 6 else 0) + FIELD_W / 2
    return x, top


def checker_centre(field: int, k: int) -> tuple[float, float]:
    """(x, y) of the `k`-th checker (0: at the arrow's base) of the stack on field 1..24;
    stacks taller than SVG_STACK draw their last checkers on the top one."""
    x, top = field_column(field)
    base = Y0 if top else Y0 + FELT_H
    direction = 1 if top else -1
    return x, base + direction * (CHECKER_R + 1 + min(k, SVG_STACK - 1) * CHECKER_STEP)


def field_box(field: int) -> tuple[float, float, float, float]:
    """(x, y, width, height): the half of the felt that field 1..24 stands in (its arrow and
    its stack), for pointing at the field."""
    x, top = field_column(field)
    return x - FIELD_W / 2, Y0 if top else Y0 + FELT_H / 2, FIELD_W, FELT_H / 2


def off_box(colour: int) -> tuple[float, float, float, float]:
    """(x, y, width, height): where `colour`'s checkers are borne off, the frame beside his
    last quarter (White's 19-24 at the top right, Black's 6-1 at the bottom right)."""
    return X0 + FELT_W, Y0 if colour == 0 else Y0 + FELT_H / 2, PANEL_X - 4 - X0 - FELT_W, FELT_H / 2


def arrow_ends(board, colour: int,
               moves: Sequence[tuple[int, int]]) -> list[tuple[float, float, float, float]]:
    """(x1, y1, x2, y2) of each move (from, to; to 0: borne off) that `colour` has just
    played, the real `board` being the one after them: from the place the checker left to
    the one it reached."""
    board = [int(n) for n in board]
    sign = 1 if colour == 0 else -1
    ends = []
    for frm, to in reversed(list(moves)):  # undo them one by one, the last first
        if to:
            end = checker_centre(to, abs(board[to - 1]) - 1)
            board[to - 1] -= sign
        else:
            x, y, w, h = off_box(colour)
            end = (x + w / 2, y + h / 2)
        board[frm - 1] += sign
        ends.append(checker_centre(frm, abs(board[frm - 1]) - 1) + end)
    return _uncrossed(ends[::-1], list(moves))


def _uncrossed(ends, moves):
    """`ends` with the starts (or ends) of two checkers that left (or reached) the same
    field swapped where their arrows would cross: two checkers moved along one path (1-5
    1-5), or from one stack to neighbouring fields, draw side by side."""
    ends = [tuple(e) for e in ends]
    for i in range(len(ends)):
        for j in range(i + 1, len(ends)):
            if not _segments_cross(ends[i], ends[j]):
                continue
            if moves[i][0] == moves[j][0]:
                ends[i], ends[j] = ends[j][:2] + ends[i][2:], ends[i][:2] + ends[j][2:]
            elif moves[i][1] == moves[j][1]:
                ends[i], ends[j] = ends[i][:2] + ends[j][2:], ends[j][:2] + ends[i][2:]
    return ends


def _segments_cross(p, q) -> bool:
    """Whether segments p and q, (x1, y1, x2, y2) each, cross at a point inside both."""
    def side(ax, ay, bx, by, cx, cy):
        return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    d1, d2 = side(*p, *q[:2]), side(*p, *q[2:])
    d3, d4 = side(*q, *p[:2]), side(*q, *p[2:])
    return d1 * d2 < 0 and d3 * d4 < 0


def move_arrows(board, colour: int, moves: Sequence[tuple[int, int]],
                ink: str = "#e8702a") -> str:
    """SVG arrows of the `moves` that `colour` has just played (see `arrow_ends`)."""
    if not moves:
        return ""
    head = f"tt-head-{ink.lstrip('#')}"
    out = [f'<marker id="{head}" viewBox="0 0 10 10" refX="7" refY="5" markerWidth="4" '
           f'markerHeight="4" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{ink}"/></marker>']
    for x1, y1, x2, y2 in arrow_ends(board, colour, moves):
        out.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{ink}" '
                   f'stroke-width="5" stroke-linecap="round" opacity="0.85" '
                   f'marker-end="url(#{head})"/>')
    return f'<g class="move-arrows">{"".join(out)}</g>'


def _table() -> str:
    outer_w, outer_h = FELT_W + 2 * FRAME, FELT_H + 2 * FRAME
    bar_x = X0 + 6 * FIELD_W
    return (f'<rect x="{X0 - FRAME}" y="{Y0 - FRAME}" width="{outer_w}" height="{outer_h}" '
            f'rx="10" fill="{PALETTE["wood"]}" stroke="{PALETTE["wood_dark"]}" stroke-width="3"/>'
            f'<rect x="{X0}" y="{Y0}" width="{FELT_W}" height="{FELT_H}" fill="{PALETTE["felt"]}" '
            f'stroke="{PALETTE["wood_dark"]}" stroke-width="2"/>'
            f'<rect x="{bar_x}" y="{Y0 - FRAME}" width="{BAR_W}" height="{outer_h}" '
            f'fill="{PALETTE["wood"]}" stroke="{PALETTE["wood_dark"]}" stroke-width="2"/>')


def _arrows() -> str:
    """The 24 arrows ("flèches"), alternating colours; the rest corners outlined in gold."""
    out = []
    for f in range(1, 25):
        x, top = field_column(f)
        base = Y0 if top else Y0 + FELT_H
        tip = base + ARROW_H if top else base - ARROW_H
        colour = PALETTE["arrow_dark"] if f % 2 else PALETTE["arrow_light"]
        corner = f in (12, 13)
        stroke = (f' stroke="{PALETTE["corner"]}" stroke-width="3" stroke-linejoin="round"'
                  if corner else "")
        half = FIELD_W / 2 - 2
        out.append(f'<polygon points="{x - half},{base} {x + half},{base} {x},{tip}" '
                   f'fill="{colour}"{stroke}/>')
    return "".join(out)


def _field_numbers() -> str:
    """Field numbers on the frame; the rest corners and the talons named in the felt."""
    out = []
    for f in range(1, 25):
        x, top = field_column(f)
        y = Y0 - 8 if top else Y0 + FELT_H + 19
        special = f in (12, 13)
        out.append(_text(x, y, str(f), 15, PALETTE["corner"] if special else PALETTE["ink"],
                         anchor="middle", bold=special))
    mid = Y0 + FELT_H / 2  # labels in the gap between the rows, clear of tall stacks
    for f, label in ((12, "coin"), (13, "coin"), (1, "talon"), (24, "talon")):
        x, top = field_column(f)
        out.append(_text(x, mid - 7 if top else mid + 15, label, 11, PALETTE["corner"],
                         anchor="middle", italic=True))
    return "".join(out)


def _checkers(board) -> str:
    """Stacks grow from each arrow's base; a stack taller than SVG_STACK shows its count."""
    out = []
    for f in range(1, 25):
        n = board[f - 1]
        if n == 0:
            continue
        colour = 0 if n > 0 else 1
        for k in range(min(abs(n), SVG_STACK)):
            out.append(_checker(*checker_centre(f, k), colour))
        if abs(n) > SVG_STACK:
            x, y = checker_centre(f, SVG_STACK - 1)
            ink = PALETTE["black"] if colour == 0 else PALETTE["white"]
            out.append(_text(x, y + 6, str(abs(n)), 17, ink, anchor="middle", bold=True,
                             cls="stack-count"))
    return "".join(out)


def _checker(x: float, y: float, colour: int, r: float = CHECKER_R) -> str:
    fill, edge = ("url(#tt-white)", PALETTE["white_edge"]) if colour == 0 else \
                 ("url(#tt-black)", PALETTE["black_edge"])
    return (f'<circle cx="{x}" cy="{y}" r="{r}" fill="{fill}" stroke="{edge}" stroke-width="1.5"/>'
            f'<circle cx="{x}" cy="{y}" r="{r * 0.62}" fill="none" stroke="{edge}" '
            f'stroke-width="0.8" opacity="0.6"/>')


PIPS = {1: [(1, 1)], 2: [(0, 0), (2, 2)], 3: [(0, 0), (1, 1), (2, 2)],
        4: [(0, 0), (0, 2), (2, 0), (2, 2)], 5: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)],
        6: [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (2, 2)]}


def _die(x: float, y: float, value: int, size: float = 40) -> str:
    step = size / 4
    pips = "".join(f'<circle cx="{x + step * (1 + col)}" cy="{y + step * (1 + row)}" '
                   f'r="{size / 11}" fill="{PALETTE["black"]}"/>'
                   for col, row in PIPS[value])
    return (f'<rect x="{x}" y="{y}" width="{size}" height="{size}" rx="7" fill="#fffdf6" '
            f'stroke="{PALETTE["black"]}" stroke-width="1.5"/>{pips}')


def _dice(pos: Position) -> str:
    """The last roll, on the right half of the table between the rows."""
    if not pos.dice[0]:
        return ""
    cx, cy = X0 + 9 * FIELD_W + BAR_W, Y0 + FELT_H / 2 - 20
    return _die(cx - 46, cy, pos.dice[0]) + _die(cx + 6, cy, pos.dice[1])


def _panel(pos: Position) -> str:
    """Each player's score (Black at the top, as he sits), and whose turn."""
    x = PANEL_X
    mid = Y0 + FELT_H / 2
    out = [_score_block(pos, 1, x, Y0 + 6), _score_block(pos, 0, x, Y0 + FELT_H - 140)]
    out.append(f'<line x1="{x}" y1="{mid}" x2="{x + 212}" y2="{mid}" stroke="{PALETTE["muted"]}"/>')
    out += _wrap_text(x, mid - 22 if pos.player == 1 else mid + 28, status_line(pos), 15)
    return "".join(out)


def _wrap_text(x: float, y: float, line: str, size: int, width_chars: int = 26) -> list[str]:
    words, rows, row = line.split(), [], ""
    for w in words:
        if row and len(row) + 1 + len(w) > width_chars:
            rows.append(row)
            row = w
        else:
            row = f"{row} {w}".strip()
    rows.append(row)
    start = y - (len(rows) - 1) * (size + 3) / 2
    return [_text(x, start + i * (size + 3), escape(r), size, PALETTE["panel_ink"], bold=True)
            for i, r in enumerate(rows)]


def _score_block(pos: Position, colour: int, x: float, y: float) -> str:
    ink, muted = PALETTE["panel_ink"], PALETTE["muted"]
    to_act = pos.player == colour and pos.status in ("move", "hold_or_go", "roll")
    name = COLOUR_NAMES[colour] + ("  \u25c0" if to_act else "")
    off = NUM_CHECKERS - _on_board(pos.board, colour)
    out = [_checker(x + 12, y + 12, colour, 11), _text(x + 32, y + 18, name, 19, ink, bold=True),
           _text(x + 212, y + 18, f"off {off}", 13, muted, anchor="end")]
    points, holes = pos.points[colour], pos.holes[colour]
    out.append(_text(x, y + 46, f"points {points}", 14, ink))
    out.append(_track(x, y + 54, min(points, POINTS_PER_HOLE - 1), POINTS_PER_HOLE - 1,
                      PALETTE["points_on"], square=True))
    out.append(_text(x, y + 88, holes_label(holes), 14, ink))
    out.append(_track(x, y + 96, min(holes, WINNING_HOLES), WINNING_HOLES, PALETTE["holes_on"]))
    flag = pos.can_bredouille[colour]
    out.append(f'<rect x="{x}" y="{y + 118}" width="92" height="20" rx="10" '
               f'fill="{PALETTE["corner"] if flag else "none"}" stroke="{PALETTE["corner"] if flag else muted}"/>')
    out.append(_text(x + 46, y + 132, "bredouille", 12, ink if flag else muted, anchor="middle",
                     italic=not flag))
    return "".join(out)


def _track(x: float, y: float, filled: int, size: int, colour: str, square: bool = False) -> str:
    """A row of `size` marks, the first `filled` coloured: points as squares, holes as pegs."""
    out = []
    for k in range(size):
        fill = colour if k < filled else PALETTE["track_off"]
        cx = x + 8 + k * 17.5
        if square:
            out.append(f'<rect x="{cx - 7}" y="{y}" width="14" height="14" rx="2" fill="{fill}"/>')
        else:
            out.append(f'<circle cx="{cx}" cy="{y + 7}" r="6.5" fill="{fill}"/>')
    return "".join(out)


def _text(x, y, content: str, size: int, fill: str, anchor: str = "start", bold: bool = False,
          italic: bool = False, cls: str | None = None) -> str:
    style = (' font-weight="bold"' if bold else "") + (' font-style="italic"' if italic else "")
    style += f' class="{cls}"' if cls else ""
    return (f'<text x="{x}" y="{y}" font-size="{size}" fill="{fill}" text-anchor="{anchor}"'
            f'{style}>{content}</text>')


# ---------------------------------------------------------------------------------------------
#  pgx's drawing methods of a state
# ---------------------------------------------------------------------------------------------


def to_svg(state: State, *, color_theme: str | None = None, scale: float | None = None) -> str:
    """pgx's `State.to_svg`: one game (`svg`), or a batch as a grid (`svg_grid`), its size
    times `scale`. The table has one palette: `color_theme` is "light" or None."""
    if color_theme not in (None, "light"):
        raise ValueError(f"color_theme: the table has one palette, 'light'; got {color_theme!r}")
    scale = 1.0 if scale is None else scale
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    picture = svg(state) if np.ndim(state.current_player) == 0 else svg_grid(state)
    return re.sub(r'width="(\d+)" height="(\d+)"',  # the document's size: its first attributes
                  lambda m: f'width="{float(m[1]) * scale:g}" height="{float(m[2]) * scale:g}"',
                  picture, count=1)


def save_svg(state: State, filename, *, color_theme: str | None = None,
             scale: float | None = None) -> None:
    """pgx's `State.save_svg`: `to_svg` written to `filename`."""
    pathlib.Path(filename).write_text(to_svg(state, color_theme=color_theme, scale=scale))


def _repr_html_(state: State) -> str:
    """pgx's `State._repr_html_`: a notebook shows a state as its picture."""
    return to_svg(state)


# The state module cannot import its pictures (this module imports it): they are its methods
# from here, and the package imports this module, so that every State has them.
State.to_svg, State.save_svg, State._repr_html_ = to_svg, save_svg, _repr_html_
