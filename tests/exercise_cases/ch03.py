"""Plausible wrong answers to the exercises of notebook 03: each must fail with a hint."""

WRONG = {
    "3.1": [131072, 65536, "a lot"],
    "3.2": [180, 90 * 2**20],
    "3.3": [18, 0],
    "3.4": [0.25, 2],
}
