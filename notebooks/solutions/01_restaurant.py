"""Answers to the exercises of 01_restaurant.ipynb."""

from labkit import sim
from labkit.sim import experiments

# 1.1: the five parts, restaurant word -> llama.cpp part.
answer_1_1 = {
    "guest's order": "request",
    "table": "slot",
    "table top": "context",
    "notes": "KV cache",
    "refilling tables at every step": "continuous batching",
}

# 1.2: the 10-token guest is done after step 10; the batch runs until step 400.
answer_1_2 = 400 - 10

# 1.3: walk up from one slot until the continuous row's p90 TTFT drops below 1 s.
answer_1_3 = next(s for s in range(1, 9)
                  if experiments.restaurant_summary(slots=s).loc["continuous", "ttft_p90"] < 1.0)

# 1.4: one decode token for each of 3 generating slots, plus the 200 prompt tokens.
answer_1_4 = 3 + 200

# 1.5: every term of the step cost. After the step the three decoding slots hold 301, 501 and
# 701 cells and the chunk 200, so 1,703 cells are attended; a 200-token chunk from an empty
# slot makes 200 x (0 + 200/2) = 20,000 (prompt token, earlier token) pairs.
_cost = sim.preset("rtx4090", "8b-q4")
answer_1_5 = 1000 * (_cost.a + _cost.b * 200 + _cost.c * 3 + _cost.d * 1703 + _cost.e * 20_000)

# 1.6: open; any answer of two or three sentences that quotes the run's figures is accepted,
# and the model answer and rubric appear. One such answer:
answer_1_6 = ("No. My engine read a new prompt in 2 of its 60 steps while the other slots kept "
              "decoding, with a fixed stripe of 512 cells per slot and no pages, so continuous "
              "batching is only scheduling between steps. PagedAttention hands out KV memory in "
              "blocks as sequences grow, so less memory sits reserved and more sequences fit in "
              "a batch; I would want it on a GPU with long, uneven requests.")
