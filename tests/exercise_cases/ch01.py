"""Plausible wrong answers to the exercises of notebook 01: each must fail with a hint."""


def _continuous(guests, slots, cost, n_batch=2048):
    """run_by_hand unchanged: prompts read next to decode tokens (continuous batching)."""
    t, waiting, seated, steps = 0.0, sorted(guests), [], []
    while waiting or seated:
        while waiting and waiting[0][0] <= t and len(seated) < slots:
            _, prompt, answer = waiting.pop(0)
            seated.append({"prompt_left": prompt, "cells": 0, "answer_left": answer})
        if not seated:
            t = waiting[0][0]
            continue
        decoding = [g for g in seated if g["prompt_left"] == 0]
        budget, chunks = n_batch - len(decoding), []
        for g in seated:
            if g["prompt_left"] and budget > 0:
                chunks.append((g, min(g["prompt_left"], budget)))
                budget -= chunks[-1][1]
        n_prompt = sum(n for _, n in chunks)
        attended = sum(g["cells"] + 1 for g in decoding) + sum(g["cells"] + n for g, n in chunks)
        pairs = sum(n * (g["cells"] + n / 2) for g, n in chunks)
        dur = cost.a + cost.b * n_prompt + cost.c * len(decoding) + cost.d * attended + cost.e * pairs
        t += dur
        steps.append(dur)
        for g in decoding:
            g["cells"] += 1
            g["answer_left"] -= 1
        for g, n in chunks:
            g["cells"] += n
            g["prompt_left"] -= n
            g["answer_left"] -= g["prompt_left"] == 0
        seated = [g for g in seated if g["answer_left"] > 0]
    return steps


WRONG = {
    "1.1": [{"guest's order": "request", "table": "context", "table top": "slot",
             "notes": "KV cache", "refilling tables at every step": "continuous batching"},
            {"table": "slot"}, "slot",
            {"guest's order": "請求", "table": "桌面", "table top": "窗口", "notes": "已讀筆記",
             "refilling tables at every step": "連續批次"}],
    "1.2": [400, 10],
    "1.3": [1, 8],
    "1.4": [200, 3],
    # seconds instead of ms; without the attended cells; without the prompt pairs
    "1.5": [0.0569, 56.6 - 0.278, 56.88 - 0.159, 120],
    # too short; no figure from the run
    "1.6": ["no, it does not", "No. Continuous batching is only a scheduling decision taken between "
            "steps, and llama.cpp does it with plain cells; PagedAttention is about memory waste "
            "and lets a bigger batch fit, which matters on a GPU."],
    # the continuous schedule unchanged; a function that raises
    "1.7": [_continuous, lambda guests, slots, cost: guests[0]["prompt"]],
}
