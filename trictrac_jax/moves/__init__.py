"""Move rules: the move sequences the reference engine allows, and their action indices.

Three concerns, one module each: the candidate set (`candidates.py`, laid out as
`layout.py` says), the reference's three lists over it (`lists.py`), and the action index
of their legal sequences (`actions.py`). This package exports what the rest of the engine
and the tools use.

The reference builds its list of legal move pairs by nested loops: for each die order
(bigger die first, then smaller die first), each own checker field for the first move and
each own field for the second move (or no second move), then checks each pair against the
rules. We evaluate all of those loop iterations at once as a fixed array of *candidates*:

    candidate (pass p, first slot i, second slot k)   p in {0, 1}, i in 0..14, k in 0..16

where first slot i is the (i + 1)-th field holding own checkers (counted from field 1; at
most 15 such fields). A second move can only start from a field that holds own checkers
after the first move: one of those same fields, or the first move's destination when it
was empty. So second slot k < 15 is the field of first slot k, k = 15 (`CHAINED_SLOT`) is
the first move's destination when it was empty, and k = 16 (`NO_SECOND_MOVE`) is "no
second move"; 255 a die order instead of the 375 of a second slot per field. A 16th row
(`layout.PUISSANCE_ROW`, a first slot that never holds a checker) holds each die order's
candidate for taking the rest corner "par puissance": 544 candidates, the grid reshaped
(`layout.py` says why). `Candidates.order` is the position of each candidate in the
reference's loop order: "first in the list" is a minimum over it.

Per-candidate arrays are int8 (fields, counts and dice are small): narrow arrays are what
makes this fast on CPU, where the cost is proportional to the elements touched.

Games are laid out *game-minor*: every array has the structure axes first (fields,
candidates, ...) and then `lanes`, trailing axes shared by all arguments: none for one
position, or one axis of games. Under `jax.vmap`, `legal_moves` and
`scoring.roll_outcome` move the batch axis there (`lowering.game_minor`): XLA's CPU loops
then run along contiguous games, whereas with the batch first they run along the short
structure axes and mostly do not vectorise. For the same reason candidate masks are bytes
(`layout.as_mask`). What every candidate reads about the position (`candidates.position`),
the first moves, the candidates and each list are `lowering.materialised`: computed once,
not in each loop that reads them.

Rules of the form "if any sequence does X, only those are allowed" become reductions over
candidates: the reference's three lists (filling, exact, legal) in `lists.py`.

Everything is on the mover's view board (see board.py).
"""

from trictrac_jax.moves.actions import (CHECKERS, FIRST_MOVE, GO, ORDER_ACTIONS, decision_mask,
                                        decode, encode, legal_action_mask, legal_moves,
                                        move_actions)
from trictrac_jax.moves.candidates import Candidates, can_take_corner_by_effect, candidates
from trictrac_jax.moves.layout import NO_ORDER, NUM_CANDIDATES, PASS_OF, PASS_SIZE
from trictrac_jax.moves.lists import (Found, MoveLists, Probes, earliest, first_listed, member,
                                      move_lists, no_probes)

__all__ = ["CHECKERS", "FIRST_MOVE", "GO", "ORDER_ACTIONS", "NO_ORDER", "NUM_CANDIDATES",
           "PASS_OF", "PASS_SIZE", "Candidates", "Found", "MoveLists", "Probes",
           "can_take_corner_by_effect", "candidates", "decision_mask", "decode", "earliest",
           "encode", "first_listed",
           "legal_action_mask", "legal_moves", "member", "move_actions", "move_lists",
           "no_probes"]
