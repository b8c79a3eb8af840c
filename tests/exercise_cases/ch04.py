"""Plausible wrong answers to the exercises of notebook 04: each must fail with a hint."""

WRONG = {
    "4.1": [16384, 4096],
    "4.2": [(1024, 341), (1000, 333), 1536],
    "4.3": [(1, False, 8192), (4, False, 2048), (4, True, 2048)],
    "4.4": [4, 3],
}
