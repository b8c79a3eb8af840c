"""Notebook 04 (slots, live): the worksheet's arithmetic, the gates, reading the result."""

from __future__ import annotations

from . import as_number, as_word, exercise


@exercise("4.1", "12 documents, 64-token answers each, a run wall time of 8 s: the output tok/s?")
def _tok_s(answer):
    v = as_number(answer)
    want = 12 * 64 / 8
    if abs(v - want) < 0.01:
        return True, ""
    if abs(v - 64 / 8) < 0.01:
        return False, "count every document's tokens: the run produced 12 x 64 of them"
    return False, "output tok/s = sum of generated tokens / the run's wall time"


def _bool(answer) -> bool:
    if isinstance(answer, bool):
        return answer
    if hasattr(answer, "item") and isinstance(answer.item(), bool):
        return answer.item()
    w = as_word(answer)
    if w in ("true", "yes", "pass", "passes"):
        return True
    if w in ("false", "no", "fail", "fails"):
        return False
    raise ValueError("answer True or False")


@exercise("4.2", "Fits every document, every first token in time, 11 of 12 answers correct: does it pass?")
def _gates(answer):
    if _bool(answer) is False:
        return True, ""
    return False, "all three gates must hold: every answer correct is one of them"


@exercise("4.3", "-c 4096 -np 4 split KV, a 2048-token document: which gate fails?")
def _fits(answer):
    w = as_word(answer)
    if w in ("fits context", "fits", "context", "fit", "fits the context"):
        return True, ""
    if w in ("ttft", "waits", "ttft ok", "correct", "all correct"):
        return False, ("each split slot holds 4096 / 4 = 1024 cells; the request is refused before "
                       "any first token or answer exists")
    raise ValueError("answer 'fits context', 'ttft' or 'correct'")


@exercise("4.4", "1.5x the total tok/s, 1.3x the median completion time: single requests faster or slower?")
def _slower(answer):
    w = as_word(answer)
    if w in ("slower", "slow"):
        return True, ""
    if w in ("faster", "fast"):
        return False, "completion time is per request: 1.3x as long means each request took longer"
    raise ValueError("answer 'faster' or 'slower'")
