"""Grade an answer against the answer key: pass or fail, and why.

An answer passes only when all of these hold, checked in this order:

1. the request succeeded (no HTTP or stream error);
2. the text, stripped of surrounding whitespace, parses as JSON;
3. it is one JSON object;
4. it has every expected field and no other;
5. every value equals the key's value exactly (same type, same characters).

Nothing is repaired: no code fences removed, no case folded, no whitespace trimmed inside
values. The first failing rule is the reason.

    >>> grade('{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"}',
    ...       {"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"})
    Grade(ok=True, reason='correct')
"""

from __future__ import annotations

import json
from typing import NamedTuple


# What a timing-only run shows instead of a grade: a workload without an answer key
# (decode_heavy, labkit.bench.stories), or a more precise "not graded (...)" such as a
# synthetic model's (labkit.bench.timing).
NOT_GRADED = "not graded (timing only)"


def not_graded(value) -> bool:
    """Is ``value`` a timing-only run's mark (:data:`NOT_GRADED` or another "not graded (...)")?"""
    return isinstance(value, str) and value.startswith("not graded")


class Grade(NamedTuple):
    ok: bool
    reason: str


def grade(answer: str | None, expected: dict, error: str | None = None) -> Grade:
    """Grade one answer text against the expected fields (see the module docstring)."""
    if error:
        return Grade(False, f"request failed: {error}")
    if answer is None or not answer.strip():
        return Grade(False, "empty answer")
    try:
        got = json.loads(answer.strip())
    except json.JSONDecodeError as exc:
        return Grade(False, f"not JSON: {exc.msg} at character {exc.pos}")
    if not isinstance(got, dict):
        return Grade(False, f"not a JSON object: got {type(got).__name__}")
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra:
            parts.append("extra " + ", ".join(map(str, extra)))
        return Grade(False, "; ".join(parts))
    wrong = [f"{k}: got {json.dumps(got[k])}, expected {json.dumps(v)}"
             for k, v in expected.items() if got[k] != v or type(got[k]) is not type(v)]
    if wrong:
        return Grade(False, "wrong " + "; ".join(wrong))
    return Grade(True, "correct")
