"""Plausible wrong answers to the exercises of notebook 07: each must fail with a hint."""

WRONG = {
    "7.1": ["fifo", "fair", "FIFO"],
    "7.2": ["priority", "fifo", "sjf"],
    "7.3": [6, 8, 0],
    "7.4": ["up", "higher"],
}
