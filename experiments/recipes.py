"""The self-play searches that docs/training.md ("Choosing base.yaml") compares, as config
overrides: the strength a decision buys on the CPU (`experiments.strength_per_decision`) and
the seconds it costs on an H100 (`experiments.recipes_h100`). `-21`: over the 21 distinct
rolls; `-bf16`: the network's evaluations in bfloat16. Data only: nothing to run."""

STOCHASTIC = ("search.algorithm=stochastic", "search.max_actions=16",
              "search.max_num_considered_actions=16")
LOOKAHEAD = ("search.algorithm=lookahead",)
DISTINCT = ("search.distinct_rolls=true",)
BFLOAT16 = ("network.inference_dtype=bfloat16",)
TD = ("replay.bootstrap=0.8",)  # the lookahead's TD targets, as champion 2 learnt


def gumbel(simulations: int, algorithm: str = "gumbel") -> tuple[str, ...]:
    return (f"search.algorithm={algorithm}", f"search.num_simulations={simulations}",
            f"search.max_num_considered_actions={simulations}")


def lookahead(moves: int, *more: str) -> tuple[str, ...]:
    return (*LOOKAHEAD, f"search.max_num_considered_actions={moves}", *more)


SEARCHES = {
    "stochastic64": (*STOCHASTIC, "search.num_simulations=64"),
    "stochastic16": (*STOCHASTIC, "search.num_simulations=16"),
    "gumbel8": gumbel(8),
    "gumbel8-bf16": (*gumbel(8), *BFLOAT16),
    "gumbel16": gumbel(16),
    "gumbel_stochastic8": gumbel(8, "gumbel_stochastic"),
    "gumbel_stochastic16": gumbel(16, "gumbel_stochastic"),
    "lookahead8": lookahead(8),
    "lookahead16": lookahead(16),
    "lookahead32": lookahead(32),
    "lookahead8-21": lookahead(8, *DISTINCT),
    "lookahead16-21": lookahead(16, *DISTINCT),
    "lookahead8-21-bf16": lookahead(8, *DISTINCT, *BFLOAT16),
    "lookahead16-21-bf16": lookahead(16, *DISTINCT, *BFLOAT16),
}
