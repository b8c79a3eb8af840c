"""Plausible wrong answers to the exercises of notebook 00: each must fail with a hint."""

WRONG = {
    "0.1": ["file name", "size_bytes"],
    "0.2": ["accepted"],
    "0.3": [2048, 1000],
}
