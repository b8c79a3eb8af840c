"""Exercises and their checks: each notebook ends with a few questions, and a check says at
once whether an answer is right, with a hint when it is not.

In a notebook::

    from labkit.exercises import check
    answer_2_1 = ...          # replace ... with your answer
    check("2.1", answer_2_1)

``...`` (or None) means "not answered yet": the check says so and does not raise, so a
notebook runs top to bottom before anyone has answered. :func:`evaluate` returns the
verdict instead of printing it (the tests use it). Worked solutions live apart, in
``notebooks/solutions/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

CORRECT, WRONG, UNANSWERED = "correct", "wrong", "unanswered"


@dataclass(frozen=True)
class Exercise:
    id: str
    question: str
    judge: Callable[[Any], tuple[bool, str]]   # answer -> (right?, hint when wrong, or a note)


@dataclass(frozen=True)
class CheckResult:
    id: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == CORRECT

    def __str__(self) -> str:
        mark = {CORRECT: "✔ correct", WRONG: "✘ not yet", UNANSWERED: "… not answered yet"}
        return f"Exercise {self.id}: {mark[self.status]}" + (f": {self.message}" if self.message else "")


REGISTRY: dict[str, Exercise] = {}
_last: dict[str, CheckResult] = {}


def exercise(id: str, question: str):
    """Register ``judge(answer) -> (right, hint)`` as the check of exercise ``id``."""
    def wrap(judge):
        if id in REGISTRY:
            raise ValueError(f"exercise {id} is registered twice")
        REGISTRY[id] = Exercise(id, question, judge)
        return judge
    return wrap


def is_unanswered(answer) -> bool:
    return answer is ... or answer is None


def evaluate(id: str, answer) -> CheckResult:
    """The verdict on ``answer`` for exercise ``id``, without printing."""
    try:
        ex = REGISTRY[id]
    except KeyError:
        raise KeyError(f"no exercise {id!r}; known: {', '.join(sorted(REGISTRY))}") from None
    if is_unanswered(answer):
        return CheckResult(id, UNANSWERED, "replace the ... with your answer and run the cell again")
    try:
        right, hint = ex.judge(answer)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return CheckResult(id, WRONG, f"could not read this answer ({exc}). {ex.question}")
    return CheckResult(id, CORRECT if right else WRONG, hint)


def check(id: str, answer) -> None:
    """Print the verdict on ``answer`` (never raises for a wrong or missing answer)."""
    result = evaluate(id, answer)
    _last[id] = result
    print(result)


def results() -> dict[str, CheckResult]:
    """The latest verdict of every exercise checked in this session."""
    return dict(_last)


def question(id: str) -> str:
    return REGISTRY[id].question


def ids(prefix: str = "") -> list[str]:
    """Registered exercise ids, optionally those of one notebook (prefix ``"2."``)."""
    return sorted(i for i in REGISTRY if i.startswith(prefix))


# ---------------------------------------------------------------------------- answer helpers

def as_number(x) -> float:
    """An int, float, or a string such as ``"131,072"`` / ``"90 MiB"`` as a float."""
    if isinstance(x, bool):
        raise ValueError("expected a number, got True/False")
    if isinstance(x, (int, float)):
        return float(x)
    if hasattr(x, "item"):            # numpy scalars
        return float(x.item())
    if isinstance(x, str):
        s = x.strip().replace(",", "").replace("_", "")
        for unit in ("mib", "bytes", "byte", "b", "tokens", "x", "×"):
            if s.lower().endswith(unit):
                s = s[: -len(unit)].strip()
        return float(s)
    raise TypeError(f"expected a number, got {type(x).__name__}")


def close(x, want: float, rel: float = 1e-6, abs_: float = 0.0) -> bool:
    v = as_number(x)
    return abs(v - want) <= max(abs_, rel * abs(want))


def as_word(x) -> str:
    if not isinstance(x, str):
        raise TypeError(f"expected a word in quotes, got {type(x).__name__}")
    return " ".join(x.strip().lower().replace("_", " ").replace("-", " ").split())


from . import ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07  # noqa: E402,F401  (register the exercises)
