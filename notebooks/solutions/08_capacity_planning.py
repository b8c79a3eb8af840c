"""Answers to the exercises of 08_capacity_planning.ipynb."""

# 8.1: (10 - 12) / 12: the prediction was 1/6 too low.
answer_8_1 = (10 - 12) / 12

# 8.2: the fixed cost once, plus 0.002 s for each of the 8 decoding sequences.
answer_8_2 = 0.01 + 8 * 0.002

# 8.3: the instance bills 24 h x 30 days x 1.0 = 720 a month whether busy or not; owning costs 10
# a month of power, so each month of owning saves 710: 600 / 710 = 0.85 months.
answer_8_3 = 600 / (24 * 30 * 1.0 - 10)

# 8.4: a steady climb that never drains: arrivals outpace service, so capacity is short
# (the seed: 穩定攀升代表容量不足).
answer_8_4 = "容量不足"

# 8.5: 16 x 2,048 tokens x 131,072 B = 4 GiB.
answer_8_5 = 16 * 2048 * 131072 / 2**30

# 8.6: an open question; an answer of 30 words or more that quotes one of your figures (within
# rounding) is recorded, not graded, then compared with the model answer and the rubric.
answer_8_6 = ("My simulated day kept the server busy about 6 hours a day. At 1 dollar an hour an "
              "instance left up costs 720 a month and serverless 180; a 600 dollar card with 10 a "
              "month of power breaks even in under a month against the instance and in about 3.5 "
              "months against serverless. Our documents must stay private, so we buy.")
