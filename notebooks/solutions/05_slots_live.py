"""Answers to the exercises of 05_slots_live.ipynb."""

from labkit import roofline

# 5.1: 12 answers x 64 tokens = 768 tokens in 8 seconds of wall time.
answer_5_1 = 12 * 64 / 8

# 5.2: one wrong answer fails the "answers correct" gate, so the configuration fails.
answer_5_2 = False

# 5.3: each of 4 split slots holds 4096 / 4 = 1024 cells; a 2048-token prompt is refused (HTTP 400).
answer_5_3 = "fits context"

# 5.4: completion time is per request; 1.3x as long is slower, whatever the total did.
answer_5_4 = "slower"

# 5.5: one stream reads every weight once per token, so its speed is the memory's bytes per
# second over the weights' bytes: your latest measured bandwidth / the model's tensor bytes.
answer_5_5 = roofline.machine().bandwidth / roofline.model_cost().weight_bytes

# 5.6: an open question; any answer of a few sentences gets the model answer and the rubric.
answer_5_6 = ("Memory capacity only decides what fits, a bigger model or more streams at once; "
              "bandwidth sets the ceiling of one stream's speed. My batch-1 rate came in well below "
              "the speed formula, so here arithmetic and per-step work set the speed and more "
              "bandwidth alone would help little; slots raised the decode total until the "
              "arithmetic caught up, and prefill stayed flat, so prompt-heavy work needs more "
              "arithmetic, not more memory.")
