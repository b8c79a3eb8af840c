"""Answers to the exercises of 07_scheduling.ipynb."""

# 7.1: shortest-job-first always prefers the short requests; while they keep coming, a long one
# never reaches the front (the notebook's starvation table shows it).
answer_7_1 = "sjf"

# 7.2: fair share (a virtual token counter per user) serves the user with the least service so far.
answer_7_2 = "fair"

# 7.3: 2 requests take the idle slots, 4 wait in the bounded queue, 10 - 2 - 4 = 4 are refused.
answer_7_3 = 10 - 2 - 4

# 7.4: past saturation more slots share the same steps: each stream gets its tokens more slowly.
answer_7_4 = "down"
