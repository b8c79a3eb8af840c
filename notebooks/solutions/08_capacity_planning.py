"""Answers to the exercises of 08_capacity_planning.ipynb."""

# 8.1: (10 - 12) / 12: the prediction was 1/6 too low.
answer_8_1 = (10 - 12) / 12

# 8.2: the fixed cost once, plus 0.002 s for each of the 8 decoding sequences.
answer_8_2 = 0.01 + 8 * 0.002

# 8.3: the instance bills 730 h x 1.0 = 730 a month (365 x 24 / 12 h, notebook 08's month) whether
# busy or not; the machine costs 20 a month of power, so each month of owning saves 710:
# 600 / 710 = 0.85 months.
answer_8_3 = 600 / (730 * 1.0 - 20)

# 8.4: a steady climb that never drains: arrivals outpace service, so capacity is short
# (the seed: 穩定攀升代表容量不足).
answer_8_4 = "容量不足"

# 8.5: 16 x 2,048 tokens x 131,072 B = 4 GiB.
answer_8_5 = 16 * 2048 * 131072 / 2**30

# 8.6: an open question; an answer of 30 words or more that quotes one of your figures (within
# rounding) is recorded, not graded, then compared with the model answer and the rubric.
answer_8_6 = ("My simulated day kept the server busy about 300 hours a month. There the whole "
              "machine costs about 45 dollars a month, against 730 for an instance always on, 340 "
              "stopped when idle and 465 serverless; owning costs less above about 21 busy hours a "
              "month. Our documents must stay private, so we buy.")
