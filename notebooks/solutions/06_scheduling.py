"""Answers to the exercises of 06_scheduling.ipynb."""

# 6.1: shortest-job-first always prefers the short requests; while they keep coming, a long one
# never reaches the front (the notebook's starvation table shows it).
answer_6_1 = "sjf"

# 6.2: fair share (a virtual token counter per user) serves the user with the least service so far.
answer_6_2 = "fair"

# 6.3: 2 requests take the idle slots, 4 wait in the bounded queue, 10 - 2 - 4 = 4 are refused.
answer_6_3 = 10 - 2 - 4

# 6.4: past saturation more slots share the same steps: each stream gets its tokens more slowly.
answer_6_4 = "down"
