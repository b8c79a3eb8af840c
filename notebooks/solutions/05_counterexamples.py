"""Answers to the exercises of 05_counterexamples.ipynb."""

# 5.1: same prompts, slots and KV mode; only --cont-batching / --no-cont-batching changes.
answer_5_1 = "cont_batching"

# 5.2: compare usage.prompt_tokens with the prompt's real length: a shifted or truncated context
# can still answer 200.
answer_5_2 = "prompt_tokens"

# 5.3: the 8 summaries share the 4 slots (4 at a time); the merge waits for all of them.
answer_5_3 = 4

# 5.4: the 700 shared leading tokens are reused from the slot's cache; only the document is new.
answer_5_4 = 60
