"""Plausible wrong answers to the exercises of notebook 05: each must fail with a hint."""

WRONG = {
    "5.1": [8, 768, "12"],
    "5.2": [True, "yes"],
    "5.3": ["ttft", "correct"],
    "5.4": ["faster"],
    "5.5": [0, 1e9, "fast"],
    "5.6": ["bandwidth", "a bigger GPU", 3],
}
