"""Answers to the exercises of 04_slots_live.ipynb."""

# 4.1: 12 answers x 64 tokens = 768 tokens in 8 seconds of wall time.
answer_4_1 = 12 * 64 / 8

# 4.2: one wrong answer fails the "answers correct" gate, so the configuration fails.
answer_4_2 = False

# 4.3: each of 4 split slots holds 4096 / 4 = 1024 cells; a 2048-token prompt is refused (HTTP 400).
answer_4_3 = "fits context"

# 4.4: completion time is per request; 1.3x as long is slower, whatever the total did.
answer_4_4 = "slower"
