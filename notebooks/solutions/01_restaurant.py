"""Answers to the exercises of 01_restaurant.ipynb."""

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
