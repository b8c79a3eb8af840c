"""Plausible wrong answers to the exercises of notebook 08: each must fail with a hint."""

WRONG = {
    "8.1": [2 / 12, -0.2, -16.67],
    "8.2": [0.016, 0.096],
    "8.3": [10000 / 600, 100],
    "8.4": ["bursts"],
}
