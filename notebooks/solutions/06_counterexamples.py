"""Answers to the exercises of 06_counterexamples.ipynb."""

# 6.1: same prompts, slots and KV mode; only --cont-batching / --no-cont-batching changes.
answer_6_1 = "cont_batching"

# 6.2: compare usage.prompt_tokens with the prompt's real length: a shifted or truncated context
# can still answer 200.
answer_6_2 = "prompt_tokens"

# 6.3: the 8 summaries share the 4 slots (4 at a time); the merge waits for all of them.
answer_6_3 = 4

# 6.4: the 700 shared leading tokens are reused from the slot's cache; only the document is new.
answer_6_4 = 60

# 6.5: an open question about your own timelines; quote your figures.
answer_6_5 = ("With continuous batching my three short requests had all finished by 1.3 s; "
              "without it the last one waited for the long request and finished at 3.1 s, while "
              "the long request itself ended about 0.2 s earlier without the company. For people "
              "waiting on short answers I would keep continuous batching on; only an offline "
              "batch of equally long jobs might run without it, and I would measure that first.")
