"""Answers to the exercises of 08_capacity_planning.ipynb."""

# 8.1: (10 - 12) / 12: the prediction was 1/6 too low.
answer_8_1 = (10 - 12) / 12

# 8.2: the fixed cost once, plus 0.002 s for each of the 8 decoding sequences.
answer_8_2 = 0.01 + 8 * 0.002

# 8.3: each month of owning saves 600 - 100 = 500; 10000 / 500 = 20 months.
answer_8_3 = 10000 / (600 - 100)

# 8.4: a steady climb that never drains: arrivals outpace service, so capacity is short.
answer_8_4 = "capacity"
