"""Notebook 08 (capacity planning): prediction error, the step cost, rent or buy against an
instance that is always up, a day's plot, a chat's KV memory, and rent or buy for your team."""

from __future__ import annotations

from . import as_number, choice, exercise, open_question


@exercise("8.1", "Predicted 10 s, measured 12 s: (predicted - measured) / measured?")
def _error(answer):
    v = as_number(answer)
    want = (10 - 12) / 12
    if abs(v - want) < 0.005:
        return True, ""
    if abs(v + want) < 0.005:
        return False, "check the sign: was the prediction above or below what was measured?"
    if abs(v - (10 - 12) / 10) < 0.005:
        return False, "the error is relative to what really happened, not to the prediction"
    if abs(abs(v) - 16.67) < 0.1:
        return False, "as a fraction, not a percentage"
    return False, "subtract first, then divide by one of the two times: which one is the reference?"


@exercise("8.2", "a = 0.01, b = 0, c = 0.002 per decoding sequence, d = 0: one step with 8 sequences?")
def _step(answer):
    v = as_number(answer)
    if abs(v - (0.01 + 8 * 0.002)) < 1e-6:
        return True, ""
    if abs(v - 8 * 0.002) < 1e-6:
        return False, "every step also pays the fixed cost a"
    if abs(v - 8 * 0.012) < 1e-6:
        return False, "a is paid once per step, not once per sequence"
    return False, "the step cost is a sum of four terms; only two of them are non-zero here"


BUY, POWER, RENT, BUSY_H, DAYS = 600, 10, 1.0, 4, 30


@exercise("8.3", "Buy 600 + 10/month of power; rent an instance at 1.0/h, up 24 h x 30 days, "
                 "busy 4 h a day: break-even after how many months?")
def _break_even(answer):
    v = as_number(answer)
    if abs(v - BUY / (24 * DAYS * RENT - POWER)) < 0.005:
        return True, ""
    if abs(v - BUY / (24 * DAYS * RENT)) < 0.005:
        return False, "owning is not free once bought: the card's power bill is paid every month"
    if abs(v - BUY / (BUSY_H * DAYS * RENT - POWER)) < 0.01 or abs(v - BUY / (BUSY_H * DAYS * RENT)) < 0.01:
        return False, ("that is the serverless price: a rented instance bills every hour it is up, "
                       "not only the hours it generates")
    if abs(v - BUY / (24 * RENT - POWER / DAYS)) < 0.5 or abs(v - BUY / (24 * RENT)) < 0.5:
        return False, "that is in days; the question asks for months"
    return False, "find what renting costs in a month, then what owning saves each month"


DAY_SHAPES = {
    "capacity": ("容量不足", "not enough capacity", "capacity short", "short capacity", "不足",
                 "穩定攀升"),
    "bursts": ("爆發", "burst", "burstiness", "佇列吸收的爆發", "鋸齒", "鋸齒狀"),
}


@exercise("8.4", "TTFT and queue depth climb all afternoon and never drain: bursts or capacity? "
                 "(容量不足 or 爆發)")
def _day(answer):
    if choice(answer, DAY_SHAPES) == "capacity":
        return True, ""
    return False, "a burst the queue absorbs leaves a saw-tooth that drains; what does a climb that never drains say?"


SEED_8B_KV = 2 * 32 * 8 * 128 * 2        # bytes per token, the seed's 8B example


@exercise("8.5", "16 conversations of 2,048 tokens each on the seed's 8B model (131,072 B of KV "
                 "per token): how many GiB of KV?")
def _chat_kv(answer):
    if isinstance(answer, str):
        answer = answer.strip().removesuffix("GiB").removesuffix("gib").removesuffix("GB")
    v = as_number(answer)
    want = 16 * 2048 * SEED_8B_KV / 2**30
    if abs(v - want) < 0.01 * want:
        return True, ""
    if abs(v - 16 * 2048 * SEED_8B_KV / 1e9) < 0.01:
        return False, "in GiB (2**30 bytes), not GB"
    if abs(v - 2048 * SEED_8B_KV / 2**30) < 0.01:
        return False, "that is one conversation; every conversation generating at once holds its own"
    if abs(v - 16 * 2048 * SEED_8B_KV / 2 / 2**30) < 0.01:
        return False, "131,072 B per token already counts both K and V"
    return False, "how many tokens are held in all, and how many bytes does each one take?"


open_question(
    "8.6",
    "Rent or buy for your team? Use your own numbers: the busy hours a day from your simulated "
    "(or measured) day, your quotes for a card and an hourly rent, and the break-even months "
    "against an always-on instance and against paying only the busy hours. Say which you choose "
    "and which non-price factor of the seed would change your mind.",
    model_answer=(
        "My simulated day kept the server busy about 6 hours; at the seed's $1 an hour that is "
        "$180 a month serverless, against $720 for an instance left up 24 hours. A $600 used "
        "24 GB card with about $10 of power a month breaks even after under a month against the "
        "always-on instance and after about 3.5 months against serverless. We generate every "
        "working day and our documents must stay in the building (privacy), so we buy; we would "
        "rent instead if our demand came in bursts or we needed an 80 GB-class model that no "
        "consumer card holds."),
    rubric=[
        "quotes the busy hours a day and where they came from (the simulated day, or a real week measured)",
        "compares buying with both kinds of renting and says an instance bills every hour it is up",
        "gives the break-even months (or 'never') for the prices used, and where the prices came from",
        "names at least one non-price factor from the seed (privacy, latency, rate limits, bursty "
        "demand, 80 GB-class models) and says how it weighs",
        "decides, and says which measurement would change the decision",
    ],
    min_words=30, needs_number=True)
