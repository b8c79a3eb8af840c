"""Plausible wrong answers to the exercises of notebook 06: each must fail with a hint."""

WRONG = {
    "6.1": ["slots", "kv_unified"],
    "6.2": ["finish_reason"],
    "6.3": [8, 9, 5],
    "6.4": [760, 780, 700],
}
