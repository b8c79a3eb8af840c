"""Notebook 08 (capacity planning): prediction error, the step cost, rent or buy, a day's plot."""

from __future__ import annotations

from . import as_number, as_word, exercise


@exercise("8.1", "Predicted 10 s, measured 12 s: (predicted - measured) / measured?")
def _error(answer):
    v = as_number(answer)
    want = (10 - 12) / 12
    if abs(v - want) < 0.005:
        return True, ""
    if abs(v + want) < 0.005:
        return False, "the prediction was too low, so the error is negative"
    if abs(v - (10 - 12) / 10) < 0.005:
        return False, "divide by the measured value (12), not the predicted one"
    if abs(abs(v) - 16.67) < 0.1:
        return False, "as a fraction, not a percentage"
    return False, "(10 - 12) / 12"


@exercise("8.2", "a = 0.01, b = 0, c = 0.002 per decoding sequence, d = 0: one step with 8 sequences?")
def _step(answer):
    v = as_number(answer)
    if abs(v - (0.01 + 8 * 0.002)) < 1e-6:
        return True, ""
    if abs(v - 8 * 0.002) < 1e-6:
        return False, "every step also pays the fixed cost a"
    if abs(v - 8 * 0.012) < 1e-6:
        return False, "a is paid once per step, not once per sequence"
    return False, "dur = a + c x decoding sequences"


@exercise("8.3", "Buy 10000 + 100/month, rent 600/month: break-even after how many months?")
def _break_even(answer):
    v = as_number(answer)
    if abs(v - 10000 / (600 - 100)) < 0.01:
        return True, ""
    if abs(v - 10000 / 600) < 0.1:
        return False, "buying also costs 100 a month to run: each month saves 600 - 100"
    return False, "months = price / (rent per month - running cost per month)"


@exercise("8.4", "TTFT and queue depth climb all afternoon and never drain: bursts or capacity?")
def _day(answer):
    w = as_word(answer)
    if w in ("capacity", "not enough capacity", "capacity short", "short capacity"):
        return True, ""
    if w in ("bursts", "burst", "burstiness"):
        return False, "a burst drains once it passes (a saw-tooth); a steady climb means arrivals outpace service"
    raise ValueError("answer 'bursts' or 'capacity'")
