"""Exercises and their checks: each notebook ends with a few questions, and a check says at
once whether an answer is right, with a hint when it is not.

In a notebook::

    from labkit.exercises import check
    answer_3_1 = ...          # replace ... with your answer
    check("3.1", answer_3_1)

``...`` (or None) means "not answered yet": the check says so and does not raise, so a
notebook runs top to bottom before anyone has answered. :func:`evaluate` returns the
verdict instead of printing it (the tests use it). Worked solutions live apart, in
``notebooks/solutions/``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..lang.i18n import Both, pick, t, text
from ..machine.unreadable import fall_back_to_defaults

CORRECT, WRONG, UNANSWERED = "correct", "wrong", "unanswered"


CLOSED, OPEN, CODE = "closed", "open", "code"     # a number or a word; explain or decide; a function


@dataclass(frozen=True)
class Exercise:
    id: str
    question: str | Both       # shown in the language in use (labkit.lang.i18n.Both)
    judge: Callable[[Any], tuple[bool, str]]   # answer -> (right?, hint when wrong, or a note)
    kind: str = CLOSED
    needs_model: bool = False     # the judge loads the model (the tests run it in the slow lane)


@dataclass(frozen=True)
class CheckResult:
    id: str
    status: str
    message: str
    kind: str = CLOSED

    @property
    def ok(self) -> bool:
        return self.status == CORRECT

    def __str__(self) -> str:
        mark = {CORRECT: "check.correct", WRONG: "check.wrong", UNANSWERED: "check.unanswered"}
        if self.kind == OPEN and self.status == CORRECT:
            mark[CORRECT] = "check.answered"
        head = f"{t('check.exercise', id=self.id)}{pick(': ', '：')}{t(mark[self.status])}"
        return head + (f"{pick(': ', '：')}{self.message}" if self.message else "")


class LearnerCodeError(Exception):
    """The learner's function raised: reported as a wrong answer with the error, never raised."""


REGISTRY: dict[str, Exercise] = {}
_last: dict[str, CheckResult] = {}


def exercise(id: str, question: str, kind: str = CLOSED, needs_model: bool = False):
    """Register ``judge(answer) -> (right, hint)`` as the check of exercise ``id``.

    ``kind`` is :data:`CLOSED` (a number, a word, a choice), :data:`CODE` (the answer is the
    learner's function; the judge runs it through :func:`call`) or :data:`OPEN` (use
    :func:`open_question`). ``needs_model=True`` says that the judge loads the model."""
    if kind not in (CLOSED, OPEN, CODE):
        raise ValueError(f"kind must be {CLOSED}, {OPEN} or {CODE}, not {kind!r}")

    def wrap(judge):
        if id in REGISTRY:
            raise ValueError(f"exercise {id} is registered twice")
        REGISTRY[id] = Exercise(id, question, judge, kind, needs_model)
        return judge
    return wrap


def open_question(id: str, question: str | Both, model_answer: str | Both,
                  rubric: list[str | Both], *,
                  min_words: int = 15, needs_number: bool = False) -> None:
    """Register an open question: explain or decide, in the learner's own words.

    Any answer of at least ``min_words`` words (a CJK character counts as half a word, so 30
    characters of Chinese are 15 words) is accepted and answered with the model answer and the
    rubric; with ``needs_number`` the answer must also quote a figure (one digit at least),
    because the question asks about the learner's own measurements. The model answer stays
    hidden until then. Each text may be a :class:`labkit.lang.i18n.Both`, shown in the language in
    use."""
    def judge(answer):
        if not isinstance(answer, str):
            raise TypeError(pick("answer in words, between quotes", "請用文字作答，放在引號之間"))
        if word_count(answer) < min_words:
            return False, pick(f"write two or three sentences (at least {min_words} words, or "
                               f"{2 * min_words} characters of Chinese) that say why",
                               f"寫兩三句話說明原因（至少 {2 * min_words} 個中文字，"
                               f"或 {min_words} 個英文單字）")
        if needs_number and not any(ch.isdigit() for ch in answer):
            return False, pick("quote your own figures: the question is about what you measured",
                               "請引用你自己量到的數字：這題問的是你的測量結果")
        lines = "\n".join(f"  ({i}) {text(r)}" for i, r in enumerate(rubric, 1))
        return True, pick(f"compare yours with this.\nModel answer: {text(model_answer)}\n"
                          f"Rubric:\n{lines}",
                          f"和下面的參考答案比較看看。\n參考答案：{text(model_answer)}\n"
                          f"評分重點：\n{lines}")
    exercise(id, question, OPEN)(judge)


def word_count(text: str) -> float:
    """Words in ``text``, a CJK character counting as half a word."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    latin = len("".join(" " if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" else ch
                        for ch in text).split())
    return latin + cjk / 2


def call(fn, *args, **kwargs):
    """Run the learner's function; what it raises comes back as a wrong answer, not a traceback."""
    if not callable(fn):
        raise TypeError(pick(f"expected a function (def ...), got {type(fn).__name__}",
                             f"這裡要的是一個函式（def ...），收到的是 {type(fn).__name__}"))
    try:
        return fn(*args, **kwargs)
    except Exception as exc:      # the learner's code may raise anything
        raise LearnerCodeError(pick(f"your function raised {type(exc).__name__}: {exc}",
                                    f"你的函式丟出了 `{type(exc).__name__}: {exc}`")) from exc


def is_unanswered(answer) -> bool:
    return answer is ... or answer is None


def evaluate(id: str, answer) -> CheckResult:
    """The verdict on ``answer`` for exercise ``id``, without printing."""
    try:
        ex = REGISTRY[id]
    except KeyError:
        raise KeyError(f"no exercise {id!r}; known: {', '.join(sorted(REGISTRY))}") from None
    if is_unanswered(answer) or (isinstance(answer, str) and not answer.strip()):
        return CheckResult(id, UNANSWERED, pick("replace the ... with your answer and run the cell "
                                                "again", "把 ... 換成你的答案，再執行一次這一格"),
                           ex.kind)
    try:
        right, hint = ex.judge(answer)
    except LearnerCodeError as exc:
        return CheckResult(id, WRONG, str(exc), ex.kind)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return CheckResult(id, WRONG, pick(f"could not read this answer ({exc}). {ex.question}",
                                           f"讀不懂這個答案（`{exc}`）。{ex.question}"), ex.kind)
    except Exception as exc:     # arithmetic on an answer no check foresaw: still a verdict
        return CheckResult(id, WRONG, pick(f"could not check this answer ({type(exc).__name__}). "
                                           f"{ex.question}",
                                           f"無法檢查這個答案（`{type(exc).__name__}`）。"
                                           f"{ex.question}"), ex.kind)
    return CheckResult(id, CORRECT if right else WRONG, hint, ex.kind)


def check(id: str, answer) -> None:
    """Print the verdict on ``answer`` (never raises for a wrong or missing answer, nor for
    an unreadable ``LABKIT_LANG`` or ``LABKIT_QUICK``: one line says so, and the check goes on
    with the default)."""
    fall_back_to_defaults()
    result = evaluate(id, answer)
    _last[id] = result
    print(result)


def results() -> dict[str, CheckResult]:
    """The latest verdict of every exercise checked in this session."""
    return dict(_last)


def question(id: str) -> str:
    """Exercise ``id``'s question in the language in use."""
    return text(REGISTRY[id].question)


def ids(prefix: str = "") -> list[str]:
    """Registered exercise ids, optionally those of one notebook (prefix ``"2."``)."""
    return sorted((i for i in REGISTRY if i.startswith(prefix)),
                  key=lambda i: tuple(int(p) for p in i.split(".")))


def kinds() -> dict[str, int]:
    """How many exercises of each kind (closed, open, code) the workbook has."""
    out = {CLOSED: 0, OPEN: 0, CODE: 0}
    for ex in REGISTRY.values():
        out[ex.kind] += 1
    return out


# ---------------------------------------------------------------------------- answer helpers

# Words a learner may put around a number: English units, Chinese counters and units, "about".
_UNITS = ("mib", "gib", "bytes", "byte", "b", "tokens", "token", "requests", "request", "x", "×",
          "s", "ms")
_ZERO = ("none", "no one", "zero", "零", "沒有", "都沒有", "一個也沒有", "零個")
_SMALL = {"一": 1, "二": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
          "十": 10}
_NUMBER = re.compile(r"^([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*(.*)$", re.I)
_CJK = re.compile(r"^[\u3400-\u9fff\s]+$")
_COUNTERS = "個次倍格段位張"


def as_number(x) -> float:
    """An int, float, or a string as a learner writes a number: ``"131,072"``, ``"90 MiB"``,
    ``"約 60 個"``, ``"8192 格"``, ``"4 倍"``, ``"兩個"``, ``"沒有"`` (0). A unit or counter after
    the number is dropped (English units, or any Chinese word); anything else is a ValueError in
    the learner's language."""
    if isinstance(x, bool):
        raise ValueError(pick("expected a number, got True/False", "這裡要的是數字，不是 True/False"))
    if isinstance(x, (int, float)):
        return finite(x, x)
    if hasattr(x, "item"):            # numpy scalars
        return finite(x.item(), x)
    if not isinstance(x, str):
        raise TypeError(pick(f"expected a number, got {type(x).__name__}",
                             f"這裡要的是數字，收到的是 {type(x).__name__}"))
    s = x.strip().strip("。.！!？? ").replace(",", "").replace("_", "")
    for about in ("大約", "約", "about", "~"):
        s = s.removeprefix(about).strip()
    s = s.removesuffix("左右").strip()
    if s.lower() in _ZERO:
        return 0.0
    if s and s[0] in _SMALL and (len(s) == 1 or s[1] in _COUNTERS):
        return float(_SMALL[s[0]])                       # 兩個, 四個槽位 (but not 兩百)
    m = _NUMBER.match(s)
    if m and (not m[2] or m[2].lower() in _UNITS or _CJK.match(m[2])
              or m[2].lower().startswith("個")):
        return finite(m[1], x)
    raise ValueError(pick(f"expected a number, got {x!r}", f"這裡要的是數字，收到的是 {x!r}"))


def finite(value, written) -> float:
    """``value`` as a float, or a ValueError in the learner's language when it has no finite
    float (an integer of 400 digits, ``inf``, ``nan``, ``"1e400"``)."""
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        shown = repr(written) if len(repr(written)) <= 40 else repr(written)[:37] + "..."
        raise ValueError(pick(f"expected a finite number, got {shown}",
                              f"這裡要的是有限的數字，收到的是 {shown}"))
    return v


def close(x, want: float, rel: float = 1e-6, abs_: float = 0.0) -> bool:
    v = as_number(x)
    return abs(v - want) <= max(abs_, rel * abs(want))


def as_word(x) -> str:
    """A word or phrase, lower case, separators as single spaces, Chinese quotes and final
    punctuation dropped (so "「拒絕」。" reads as "拒絕")."""
    if not isinstance(x, str):
        raise TypeError(pick(f"expected a word in quotes, got {type(x).__name__}",
                             f"這裡要的是放在引號裡的詞，收到的是 {type(x).__name__}"))
    s = x.strip().strip("「」『』“”\"'。，,.!！?？ ")
    return " ".join(s.lower().replace("_", " ").replace("-", " ").split())


def choice(answer, options: dict[str, tuple[str, ...]]) -> str:
    """The option ``answer`` names: ``options`` maps each canonical answer to the words that
    mean it, English and Traditional Chinese (from the seeds and the glossary). A word that names
    no option raises ValueError listing them, so the learner is told what to write."""
    w = as_word(answer)
    for key, words in options.items():
        if w == as_word(key) or w in {as_word(x) for x in words} \
                or w.replace(" ", "") in {as_word(x).replace(" ", "") for x in words}:
            return key
    def shown(key, words):     # an option and two of its words, Chinese ones for a Chinese reader
        if not words:
            return key
        from ..lang.glossary import avoided
        cjk = [x for x in words if any("\u3400" <= ch <= "\u9fff" for ch in x) and not avoided(x)]
        return pick(f"{key} ({'/'.join(words[:2])})",
                    f"{key}（{'/'.join((cjk + list(words))[:2])}）")
    raise ValueError(pick("answer one of: ", "請從這些選一個：") + pick(", ", "、").join(
        shown(k, v) for k, v in options.items()))


from . import ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08  # noqa: E402,F401  (register the exercises)
