"""Rendering: the text and SVG pictures show exactly the state's checkers, dice and scores."""
import re
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax import render
from trictrac_jax.tools import notation
from trictrac_jax.agents import random_agent

SVG = "{http://www.w3.org/2000/svg}"


def random_game(seed: int, decisions: int):
    """States of one random game: the first roll's state, then the state after each decision
    and roll (single-game kernels, shared with the play tests)."""
    k = notation.kernels()
    agent = jax.jit(random_agent)
    key = jax.random.PRNGKey(seed)
    state = k.roll(tt.new_game(), 9).state
    states = [state]
    for _ in range(decisions):
        key, outcome, agent_key = k.draw(key)
        state = k.decide(state, agent(agent_key, state))
        if not bool(state.terminated):
            state = k.roll(state, outcome).state
        states.append(state)
        if bool(state.terminated):
            break
    return states


@pytest.fixture(scope="module")
def game():
    return random_game(seed=11, decisions=60)


def test_layout_is_the_trictrac_table():
    x = lambda f: render.field_column(f)[0]
    top = lambda f: render.field_column(f)[1]
    # White's fields along the bottom, 12 at the left to his talon 1 at the right; Black's
    # 13..24 along the top, so 1 faces 24 and the rest corners 12 and 13 face each other.
    assert not any(top(f) for f in range(1, 13)) and all(top(f) for f in range(13, 25))
    assert [x(f) for f in range(12, 0, -1)] == sorted(x(f) for f in range(1, 13))
    assert [x(f) for f in range(13, 25)] == sorted(x(f) for f in range(13, 25))
    for f in range(1, 13):
        assert x(f) == x(25 - f)
    assert x(12) < x(7) < x(6) < x(1)
    assert x(6) - x(7) > render.FIELD_W  # the bar between the jans


def read_text_board(picture: str) -> list[int]:
    """Parse render.text back into a real board: each field's column under its number."""
    lines = picture.splitlines()
    numbers = [i for i, l in enumerate(lines) if re.fullmatch(r"[\s\d]+", l) and l.strip()]
    top_numbers, bottom_numbers = lines[numbers[0]], lines[numbers[1]]
    top_rows = lines[numbers[0] + 2:numbers[0] + 2 + render.TEXT_STACK]
    bottom_rows = lines[numbers[1] - 1 - render.TEXT_STACK:numbers[1] - 1][::-1]
    board = [0] * 24
    for number_line, rows in ((top_numbers, top_rows), (bottom_numbers, bottom_rows)):
        for m in re.finditer(r"\d+", number_line):
            field = int(m.group())
            cells = [row[m.start() - 1:m.end() + 1].strip() for row in rows]
            symbols = [c for c in cells if c in render.TEXT_SYMBOLS]
            counts = [int(c) for c in cells if c.isdigit()]
            n = counts[0] if counts else len(symbols)
            sign = 1 if symbols and symbols[0] == render.TEXT_SYMBOLS[0] else -1
            board[field - 1] = sign * n
    return board


def test_text_shows_the_board_scores_and_dice(game):
    for state in game[::5] + [game[-1]]:
        picture = render.text(state)
        assert read_text_board(picture) == np.asarray(state._board).tolist()
        pos = render.position(state)
        for colour in (0, 1):
            line = next(l for l in picture.splitlines()
                        if l.strip().startswith(render.COLOUR_NAMES[colour]))
            assert f"points {pos.points[colour]:>2}" in line
            assert render.holes_label(pos.holes[colour]) in line
            assert ("bredouille" in line) == pos.can_bredouille[colour]
        assert f"Dice {pos.dice[0]}-{pos.dice[1]}" in picture
        assert render.status_line(pos) in picture


def checker_counts(element) -> dict:
    """Checkers drawn per colour and the stack-count labels, from SVG elements."""
    circles = [c.get("fill") for c in element.iter(SVG + "circle")]
    return {"white": circles.count("url(#tt-white)"), "black": circles.count("url(#tt-black)")}


def expected_counts(state) -> dict:
    board = np.asarray(state._board, np.int32)
    shown = np.minimum(np.abs(board), render.SVG_STACK)
    # + 1 each: the checker beside each player's name in the score panel
    return {"white": int(shown[board > 0].sum()) + 1, "black": int(shown[board < 0].sum()) + 1}


def test_svg_draws_checkers_dice_and_scores(game):
    state = game[len(game) // 2]
    root = ET.fromstring(render.svg(state, caption="middle"))
    assert checker_counts(root) == expected_counts(state)
    texts = [t.text for t in root.iter(SVG + "text")]
    assert stack_counts(root) == tall_stacks(state)
    pos = render.position(state)
    for colour in (0, 1):
        assert f"points {pos.points[colour]}" in texts
        assert render.holes_label(pos.holes[colour]) in texts
    assert "middle" in texts
    pips = [c for c in root.iter(SVG + "circle") if c.get("r") == str(40 / 11)]
    assert len(pips) == sum(pos.dice)


def stack_counts(element) -> list[int]:
    return sorted(int(t.text) for t in element.iter(SVG + "text") if t.get("class") == "stack-count")


def tall_stacks(state) -> list[int]:
    board = np.abs(np.asarray(state._board, np.int32))
    return sorted(int(n) for n in board[board > render.SVG_STACK])


def test_svg_counts_tall_stacks():
    state = notation.kernels().roll(tt.new_game(), 0).state  # both talons hold 15
    root = ET.fromstring(render.svg(state))
    assert stack_counts(root) == [15, 15]
    assert checker_counts(root) == expected_counts(state)


def test_svg_grid_places_every_board(game):
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *game[:5])
    root = ET.fromstring(render.svg_grid(batch, cols=2))
    cells = root.findall(SVG + "svg")
    assert len(cells) == 5
    assert {(c.get("x"), c.get("y")) for c in cells} == {
        (str(i % 2 * render.WIDTH), str(i // 2 * render.HEIGHT)) for i in range(5)}
    assert root.get("width") == str(2 * render.WIDTH)
    assert root.get("height") == str(3 * render.HEIGHT)
    for cell, state in zip(cells, game[:5]):
        assert checker_counts(cell) == expected_counts(state)
    # a list of states gives the same picture as the batch
    assert render.svg_grid(game[:5], cols=2) == render.svg_grid(batch, cols=2)


def test_states_draw_themselves_as_pgx_states_do(game, tmp_path):
    """pgx's `to_svg`, `save_svg` and `_repr_html_` (a notebook's display) on our states:
    one game as `svg`, a batch as `svg_grid`, the size times `scale`."""
    state = game[3]
    assert state.to_svg() == state._repr_html_() == render.svg(state)
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *game[:5])
    batch.save_svg(tmp_path / "batch.svg")
    assert (tmp_path / "batch.svg").read_text() == render.svg_grid(batch)
    root = ET.fromstring(state.to_svg(scale=0.5, color_theme="light"))
    assert float(root.get("width")) == render.WIDTH / 2
    assert float(root.get("height")) == render.HEIGHT / 2
    assert root.get("viewBox") == f"0 0 {render.WIDTH} {render.HEIGHT}"
    with pytest.raises(ValueError, match="one palette"):
        state.to_svg(color_theme="dark")
    with pytest.raises(ValueError, match="scale"):
        state.save_svg(tmp_path / "none.svg", scale=0)
    assert not (tmp_path / "none.svg").exists()


def test_svg_animation_shows_one_frame_at_a_time(game):
    frames = game[:6]
    root = ET.fromstring(render.svg_animation(frames, seconds_per_frame=0.5))
    groups = root.findall(SVG + "g")
    assert len(groups) == len(frames)
    assert [g.get("visibility") for g in groups] == ["visible"] + ["hidden"] * 5
    starts = []
    for i, g in enumerate(groups):
        anim = g.find(SVG + "animate")
        assert anim.get("dur") == "3.000s" and anim.get("repeatCount") == "indefinite"
        values = anim.get("values").split(";")
        times = [float(t) for t in anim.get("keyTimes").split(";")]
        assert len(values) == len(times) and times == sorted(times) and times[0] == 0
        starts.append(times[values.index("visible")])
        assert checker_counts(g) == expected_counts(frames[i])
    assert starts == pytest.approx([i / 6 for i in range(6)], abs=1e-5)


def test_status_of_finished_games(game):
    k = notation.kernels()
    state = game[3]
    illegal = int(np.flatnonzero(~np.asarray(state.legal_action_mask))[-1])
    forfeit = k.decide(state, illegal)
    loser = render.COLOUR_NAMES[int(state.current_player)]
    assert render.position(forfeit).status == "forfeit"
    assert render.status_line(render.position(forfeit)).startswith(loser)
    truncated = state.replace(truncated=jnp.bool_(True))
    assert render.status_line(render.position(truncated)) == "Game truncated: no winner"
    if bool(game[-1].terminated):
        assert render.position(game[-1]).status == "won"


def test_holes_past_twelve_are_shown_as_counted(game):
    # The reference adds a bredouille's two holes in full: a game can end 13 holes to 2.
    state = game[-1].replace(_holes=jnp.asarray([13, 2], game[-1]._holes.dtype))
    assert render.position(state).holes == (13, 2)
    picture = render.text(state)
    texts = [t.text for t in ET.fromstring(render.svg(state)).iter(SVG + "text")]
    for shown in (picture, "\n".join(texts)):
        assert "holes 13, won" in shown and "holes 2/12" in shown
        assert "13/12" not in shown


def test_bad_input_is_refused(game):
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *game[:2])
    with pytest.raises(ValueError, match="svg_grid"):
        render.svg(batch)
    with pytest.raises(ValueError, match="cols"):
        render.svg_grid(batch, cols=0)
    with pytest.raises(ValueError, match="captions"):
        render.svg_grid(batch, captions=["only one"])
    with pytest.raises(ValueError, match="seconds_per_frame"):
        render.svg_animation(batch, seconds_per_frame=0)


def test_svg_renders_with_a_real_renderer(game):
    import cairosvg  # the test extra's; the cairo C library from Debian's libcairo2

    png = cairosvg.svg2png(bytestring=render.svg(game[-1]).encode())
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
