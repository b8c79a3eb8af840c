"""Answers to the exercises of 07_capacity_planning.ipynb."""

# 7.1: (10 - 12) / 12: the prediction was 1/6 too low.
answer_7_1 = (10 - 12) / 12

# 7.2: the fixed cost once, plus 0.002 s for each of the 8 decoding sequences.
answer_7_2 = 0.01 + 8 * 0.002

# 7.3: each month of owning saves 600 - 100 = 500; 10000 / 500 = 20 months.
answer_7_3 = 10000 / (600 - 100)

# 7.4: a steady climb that never drains: arrivals outpace service, so capacity is short.
answer_7_4 = "capacity"
