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

import re
from dataclasses import dataclass
from typing import Any, Callable

from ..lang.i18n import Both, pick, t, text
from ..machine import figures
from ..machine.unreadable import fall_back_to_defaults
from .learner_code import LearnerCodeError, Rule, call
from .quantities import Unreadable, is_cjk, readings

#: The verdicts: an open question's answer is ANSWERED (recorded, not graded), never CORRECT.
CORRECT, WRONG, UNANSWERED, ANSWERED = "correct", "wrong", "unanswered", "answered"


CLOSED, OPEN, CODE = "closed", "open", "code"     # a number or a word; explain or decide; a function


@dataclass(frozen=True)
class Exercise:
    id: str
    question: str | Both       # shown in the language in use (labkit.lang.i18n.Both)
    judge: Callable[[Any], tuple[bool | str, str]]   # answer -> (right? or ANSWERED, hint or note)
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
        mark = {CORRECT: "check.correct", WRONG: "check.wrong", UNANSWERED: "check.unanswered",
                ANSWERED: "check.answered"}
        head = f"{t('check.exercise', id=self.id)}{pick(': ', '：')}{t(mark[self.status])}"
        return head + (f"{pick(': ', '：')}{self.message}" if self.message else "")


REGISTRY: dict[str, Exercise] = {}
_last: dict[str, CheckResult] = {}


def exercise(id: str, question: str, kind: str = CLOSED, needs_model: bool = False):
    """Register ``judge(answer) -> (right, hint)`` as the check of exercise ``id``.

    ``kind`` is :data:`CLOSED` (a number, a word, a choice), :data:`CODE` (the answer is the
    learner's function; the judge runs it through :func:`call`, with a time limit and the
    :class:`Rule` of what it may not call, on fixed cases and cases drawn at check time:
    :mod:`labkit.exercises.learner_code`) or :data:`OPEN` (use
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

    An answer is recorded, not graded: the verdict is :data:`ANSWERED`, never correct, and it
    shows the model answer and the rubric to compare with. Refused first: fewer than
    ``min_words`` words (a CJK character counts as half a word, so 30 characters of Chinese are
    15 words), or an answer made mostly of the question's own words. With ``needs_number`` the
    question asks about the learner's own results, so the answer must quote one of the figures
    this notebook showed (:mod:`labkit.machine.figures`, within rounding), and the verdict says
    which; when the notebook has shown none in this kernel, it says it could not compare. Each
    text may be a :class:`labkit.lang.i18n.Both`, shown in the language in use."""
    def judge(answer):
        if not isinstance(answer, str):
            raise TypeError(pick("answer in words, between quotes", "請用文字作答，放在引號之間"))
        if word_count(answer) < min_words:
            return False, pick(f"write two or three sentences (at least {min_words} words, or "
                               f"{2 * min_words} characters of Chinese) that say why",
                               f"寫兩三句話說明原因（至少 {2 * min_words} 個中文字，"
                               f"或 {min_words} 個英文單字）")
        if own_words_share(answer, question) >= ECHO_SHARE:
            return False, pick("these are the question's own words, not an answer yet: say what "
                               "you think, in your words",
                               "這幾乎都是題目自己的字句，還不算回答：請用你自己的話寫出你的想法")
        refused, figure_note = own_figure(answer, question) if needs_number else (None, "")
        if refused:
            return False, refused
        return ANSWERED, recorded(model_answer, rubric, figure_note)
    exercise(id, question, OPEN)(judge)


def recorded(model_answer: str | Both, rubric: list[str | Both], note: str) -> str:
    """What an open answer gets: recorded, not graded, a ``note`` (which of the learner's
    figures it quotes), then the model answer and the rubric to compare it with."""
    items = "\n".join(f"  ({i}) {text(r)}" for i, r in enumerate(rubric, 1))
    lines = [pick("recorded, not graded: compare yours with the model answer and the rubric.",
                  "已記錄，不評分：拿你的答案和參考答案、評分重點比較看看。"), note,
             pick(f"Model answer: {text(model_answer)}", f"參考答案：{text(model_answer)}"),
             pick("Rubric:", "評分重點："), items]
    return "\n".join(line for line in lines if line)


def word_count(text: str) -> float:
    """Words in ``text``, a CJK character counting as half a word."""
    cjk = sum(1 for ch in text if is_cjk(ch))
    latin = len("".join(" " if is_cjk(ch) else ch for ch in text).split())
    return latin + cjk / 2


#: The share of an answer's words found in its question above which it is the question
#: pasted back (a written answer reuses some of the question's words, far fewer than this).
ECHO_SHARE = 0.6
_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9_'.-]*")
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def words_of(text: str) -> list[str]:
    """``text`` as words: Latin words in lower case, and each pair of neighbouring CJK
    characters (a lone one alone)."""
    words = _LATIN_WORD.findall(text.lower())
    for run in _CJK_RUN.findall(text):
        words += [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
    return words


def own_words_share(answer: str, question: str | Both) -> float:
    """The share of ``answer``'s words that its question (in either language) holds."""
    asked = set(words_of(_both_languages(question)))
    written = words_of(answer)
    return sum(w in asked for w in written) / len(written) if written else 0.0


def _both_languages(value: str | Both) -> str:
    return f"{value.en}\n{value.zh}" if isinstance(value, Both) else str(value)


def own_figure(answer: str, question: str | Both) -> tuple[str | None, str]:
    """(why the answer is refused, or None; the note that says which of the learner's figures
    it quotes): an answer about the learner's own results must quote a figure this notebook
    showed, and the question's own numbers do not count."""
    asked = {w.value for w in figures.numbers_in(_both_languages(question))}
    written = [w for w in figures.numbers_in(answer) if w.value not in asked]
    if not written:
        return pick("quote your own figures: the question is about what you measured",
                    "請引用你自己量到的數字：這題問的是你的測量結果"), ""
    if not figures.shown():
        return None, pick("This kernel has shown no figure of this notebook yet, so your "
                          "numbers were not compared with your results (run the notebook's "
                          "cells above first).",
                          "這個核心還沒顯示過這本筆記本的任何數字，所以沒有拿你的數字和你的結果"
                          "比對（請先執行上面的格子）。")
    found = figures.matching(written)
    if found is None:
        quoted = pick(", ", "、").join(w.text for w in written[:4])
        return pick(f"none of the numbers you quote ({quoted}) is among the figures this "
                    f"notebook showed you: quote one of your own results",
                    f"你引用的數字（{quoted}）都不在這本筆記本顯示給你的結果裡：請引用你自己的"
                    f"結果"), ""
    w, figure = found
    return None, pick(f"It quotes {w.text}, one of your own figures ({figure:.6g} in this "
                      f"notebook's results).",
                      f"你引用了 {w.text}，是你自己的結果之一（這本筆記本的結果裡是 "
                      f"{figure:.6g}）。")


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
    with readings() as notes:
        status, hint = _verdict(ex, answer)
    return CheckResult(id, status, pick("; ", "；").join(notes + [hint] if hint else notes),
                       ex.kind)


def _verdict(ex: Exercise, answer) -> tuple[str, str]:
    """(status, hint or note) of the judge of ``ex`` on ``answer``: whatever it raises is a
    wrong answer that says why, never a traceback."""
    try:
        right, hint = ex.judge(answer)
    except (LearnerCodeError, Unreadable) as exc:
        return WRONG, str(exc)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return WRONG, pick(f"could not read this answer ({exc}). {ex.question}",
                           f"讀不懂這個答案（`{exc}`）。{ex.question}")
    except Exception as exc:     # arithmetic on an answer no check foresaw: still a verdict
        return WRONG, pick(f"could not check this answer ({type(exc).__name__}). {ex.question}",
                           f"無法檢查這個答案（`{type(exc).__name__}`）。{ex.question}")
    if isinstance(right, str):
        return right, hint
    return (CORRECT if right else WRONG), hint


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
        cjk = [x for x in words if any(is_cjk(ch) for ch in x) and not avoided(x)]
        return pick(f"{key} ({'/'.join(words[:2])})",
                    f"{key}（{'/'.join((cjk + list(words))[:2])}）")
    raise ValueError(pick("answer one of: ", "請從這些選一個：") + pick(", ", "、").join(
        shown(k, v) for k, v in options.items()))


from . import ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08  # noqa: E402,F401  (register the exercises)
