"""Plausible wrong answers to the exercises of notebook 01: each must fail with a hint."""

WRONG = {
    "1.1": [{"guest's order": "request", "table": "context", "table top": "slot",
             "notes": "KV cache", "refilling tables at every step": "continuous batching"},
            {"table": "slot"}, "slot"],
    "1.2": [400, 10],
    "1.3": [1, 8],
    "1.4": [200, 3],
}
