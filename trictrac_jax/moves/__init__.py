"""Move rules: the move sequences the reference engine allows, and their action indices.

Three concerns, one module each: the candidate set (`candidates.py`, laid out as
`layout.py` says), the reference's three lists over it (`lists.py`), and the action index
of their legal sequences (`actions.py`); `table.py` unpacks the candidates one by one for
tools. This package exports what the rest of the engine and the tools use.

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
candidate for taking the rest corner "par puissance": 544 candidates.

A fact about the candidates, or a set of them, is a word of bits a (pass, row): bit k of
word (p, i) is candidate (p, i, k)'s (`layout.RowWords`, uint32[2, 16, *lanes]). A set is
128 bytes a game, "some candidate of a set" an OR of 32 words, and the reference's loop
order the rows', then the slots' in a row: the step moves a few kilobytes a game where a
byte a candidate moved tens. Programs that read candidates one by one (the reference's bot,
the jans' pairs, the reasons a move is not allowed) unpack them outside the step
(`table.candidate_table`, `layout.unpack`).

Games are laid out *game-minor*: every array has the structure axes first (fields, passes,
rows, ...) and then `lanes`, trailing axes shared by all arguments: none for one position,
or one axis of games. Under `jax.vmap` on CPU, `legal_moves` and `scoring.roll_outcome`
move the batch axis there (`lowering.game_minor`): XLA's CPU loops then run along contiguous
games (on a GPU they are plain `vmap`s, the games first).
What every candidate reads about the position (`candidates.position`), the first moves,
the candidates and each list are `lowering.materialised`: computed once, not in each loop
that reads them.

Rules of the form "if any sequence does X, only those are allowed" become ORs over the
candidates' words: the reference's three lists (filling, exact, legal) in `lists.py`.

Everything is on the mover's view board (see board.py).
"""

from trictrac_jax.moves.actions import (CHECKERS, FIRST_MOVE, GO, ORDER_ACTIONS, decision_mask,
                                        decode, encode, legal_action_mask, legal_moves,
                                        move_actions)
from trictrac_jax.moves.candidates import (Candidates, CandidateRows, can_take_corner_by_effect,
                                           candidates)
from trictrac_jax.moves.layout import (NO_ORDER, NUM_CANDIDATES, PASS_OF, PASS_SIZE, RowWords,
                                       any_set, count_set, keep, pack, unpack, word_of)
from trictrac_jax.moves.lists import (MoveLists, first_listed, member, move_lists, same_listed,
                                      some_legal_in)
from trictrac_jax.moves.table import CandidateTable, candidate_table, earliest_pair

__all__ = ["CHECKERS", "FIRST_MOVE", "GO", "ORDER_ACTIONS", "NO_ORDER", "NUM_CANDIDATES",
           "PASS_OF", "PASS_SIZE", "CandidateRows", "CandidateTable", "Candidates",
           "MoveLists", "RowWords", "any_set", "can_take_corner_by_effect", "candidate_table",
           "candidates", "count_set", "decision_mask", "decode", "earliest_pair", "encode",
           "first_listed", "keep", "legal_action_mask", "legal_moves", "member",
           "move_actions", "move_lists", "pack", "same_listed", "some_legal_in", "unpack",
           "word_of"]
