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

# 6.6: three teams take turns on two slots, so the least recently used slot always holds another
# team's prompt; labkit reuses only the few leading tokens the teams' prompts share (section 4's
# fleet: "You are the", 3 tokens). llama-server restores the prompt from its cache in RAM.
answer_6_6 = 3

# 6.5: an open question about your own timelines; quote your figures. These are from section 1 in
# quick mode on 2026-11-30, a shared 2-core VM with a 1-minute load average of about 6.
answer_6_5 = ("With continuous batching my slowest short request finished at 2.55 s, without it at "
              "3.11 s, because the last short one waited until the long request had ended; the long "
              "request paid for the company, 3.48 s with continuous batching against 2.10 s without. "
              "For people waiting on short answers behind long jobs I would keep it on; only an "
              "offline batch of equally long jobs, where just the total counts, might run without "
              "it, and I would measure that first.")
