"""What a notebook's Exercises section says before its first question, kept in one place.

Every Exercises section opens with one paragraph: how to answer (replace ``...``, run the cell),
that word answers may be English or Traditional Chinese, and, only where the notebook checks an
*open* question (:data:`labkit.exercises.OPEN`), how an open answer is treated: recorded, never
graded, then a model answer to compare with. After it comes the line naming the worked answers.
Each open question is marked as one where it is asked (:data:`LABEL`), and no other question is.

    python -m authoring.exercise_intro            # list what does not match, both editions
    python -m authoring.exercise_intro --write    # put the paragraph and the labels in place

``tests/test_exercise_intro.py`` fails when a notebook explains open questions it does not ask,
asks one it does not explain, or labels a question against its kind.
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from pathlib import Path

from labkit.machine.atomic import write_atomic
from labkit.exercises import OPEN, REGISTRY

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

HEADING = {"en": "## Exercises", "zh-TW": "## 練習"}

HOW = {
    "en": "Replace each `...` with your answer and run the cell; the check says whether it is right "
          "and gives a hint when it is not. Word answers may be written in English or in "
          "Traditional Chinese (the glossary's terms and the seeds').",
    "zh-TW": "把每個 `...` 換成你的答案，再執行那一格；檢查會告訴你對不對，不對時會給提示。"
             "文字答案用英文或繁體中文寫都可以（詞彙表和種子文章用的詞都算）。",
}
OPEN_EXPLAINED = {
    "en": "An *open* question takes a few sentences of your own: the check records them without "
          "grading (its verdict is *answered*, never *correct*), then shows a model answer and "
          "what to compare; where the question asks about your results, quote at least one "
          "figure this notebook showed you.",
    "zh-TW": "「開放題」要你用自己的話寫幾句：檢查會記下答案但不評分（結果是「已作答」，不會是"
             "「正確」），再顯示參考答案和比對重點；題目問到你的結果時，請至少引用一個這本筆記本"
             "顯示過的數字。",
}
#: How an open question is marked where it is asked, right after its number.
LABEL = {"en": "*(open)*", "zh-TW": "（開放題）"}

_CHECKED = re.compile(r"""\bcheck\(["'](\d+\.\d+)["']""")
# A question where it is asked: its number in bold at the start of a line, then any label it has
# been given by hand (--write puts LABEL in their place).
_QUESTION = re.compile(r"^\*\*(\d+\.\d+)\*\*[ \t]*"
                       r"(\*\(open\)\*|\(open\)|\*Open question\.\*|\*（開放題）\*|（開放題）|\*開放題\*。)?"
                       r"[ \t]*", re.M)
_WORKED = {
    "en": re.compile(r"Worked answers(?: are in|:)\s*`(?:notebooks/)?solutions/[\w.]+`"
                     r"(?:\s*\((?:[^()]|\([^()]*\))*\))?\."),
    "zh-TW": re.compile(r"參考解答(?:在\s*|：)\s*`(?:notebooks/)?solutions/[\w.]+`(?:（[^（）]*）)?。"),
}


def language_of(path: Path) -> str:
    return "zh-TW" if path.parent.name == "zh-TW" else "en"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def paragraph(ids: list[str], language: str) -> str:
    """The opening paragraph for a section whose notebook checks ``ids``."""
    parts = [HOW[language]]
    if any(REGISTRY[i].kind == OPEN for i in ids):
        parts.append(OPEN_EXPLAINED[language])
    if language == "zh-TW":
        return "".join(parts)
    return textwrap.fill(" ".join(parts), 100, break_on_hyphens=False)


def checked(cells: list[dict]) -> list[str]:
    """The exercise ids the notebook's code cells check, in order."""
    return [i for c in cells if c["cell_type"] == "code"
            for i in _CHECKED.findall("".join(c["source"]))]


def problems_in(cells: list[dict], language: str) -> list[str]:
    """What does not match in one notebook's cells (empty when all is well)."""
    ids = checked(cells)
    out = []
    opens = [i for i in ids if REGISTRY[i].kind == OPEN]
    sections = [("".join(c["source"])) for c in cells if c["cell_type"] == "markdown"
                and HEADING[language] in "".join(c["source"])]
    if ids and not sections:
        out.append(f"no {HEADING[language]!r} section, yet it checks {', '.join(ids)}")
    for s in sections:
        intro = s[s.index(HEADING[language]) + len(HEADING[language]):]
        m = _QUESTION.search(intro)
        intro = _flat(intro[:m.start()] if m else intro)
        explains = _flat(OPEN_EXPLAINED[language]) in intro
        if opens and not explains:
            out.append(f"checks open question(s) {', '.join(opens)} but its Exercises section "
                       "does not explain how an open answer is treated")
        if explains and not opens:
            out.append("its Exercises section explains open questions, but the notebook checks "
                       "none")
        if _flat(HOW[language]) not in intro:
            out.append("its Exercises section does not say how to answer (the HOW paragraph)")
    for c in cells:
        if c["cell_type"] != "markdown":
            continue
        for m in _QUESTION.finditer("".join(c["source"])):
            if m.group(1) not in REGISTRY:
                continue
            is_open, label = REGISTRY[m.group(1)].kind == OPEN, m.group(2)
            if is_open and label != LABEL[language]:
                out.append(f"{m.group(1)} is an open question but is not marked "
                           f"{LABEL[language]}")
            if label and not is_open:
                out.append(f"{m.group(1)} is marked {label} but its check grades it")
    return out


def problems(path: Path) -> list[str]:
    return problems_in(json.loads(Path(path).read_text(encoding="utf-8"))["cells"],
                       language_of(Path(path)))


def _rewrite_section(source: str, ids: list[str], language: str) -> str:
    head = source.index(HEADING[language]) + len(HEADING[language])
    rest = source[head:]
    m = _QUESTION.search(rest)
    intro, after = (rest[:m.start()], rest[m.start():]) if m else (rest, "")
    worked = _WORKED[language].search(intro)
    if not worked:
        raise SystemExit(f"cannot find the worked-answers line in: {intro.strip()[:120]!r}")
    line = _flat(worked.group(0))
    if language == "en":
        line = textwrap.fill(re.sub(r"^Worked answers(?: are in|:)\s*`(?:notebooks/)?",
                                    "Worked answers: `", line), 100, break_on_hyphens=False)
    else:
        line = re.sub(r"^參考解答(?:在\s*|：)\s*`(?:notebooks/)?", "參考解答：`", line)
    block = paragraph(ids, language) + "\n\n" + line
    return source[:head] + "\n\n" + block + ("\n\n" + after if after else "\n")


def _relabel(source: str, language: str) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) not in REGISTRY:
            return m.group(0)
        if REGISTRY[m.group(1)].kind == OPEN:
            return f"**{m.group(1)}** {LABEL[language]}" + ("" if language == "zh-TW" else " ")
        return f"**{m.group(1)}** " if m.group(2) else m.group(0)
    return _QUESTION.sub(one, source)


def write(path: Path) -> bool:
    """Put the paragraph and the labels in place in one notebook; True when it changed."""
    path = Path(path)
    language = language_of(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids = checked(nb["cells"])
    changed = False
    for c in nb["cells"]:
        if c["cell_type"] != "markdown":
            continue
        src = "".join(c["source"])
        new = src
        if HEADING[language] in new and ids:
            new = _rewrite_section(new, ids, language)
        new = _relabel(new, language)
        if new != src:
            c["source"] = new.splitlines(keepends=True)
            changed = True
    if changed:
        write_atomic(path, json.dumps(nb, ensure_ascii=False, indent=1) + "\n")
    return changed


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "zh-TW").glob("*.ipynb"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m authoring.exercise_intro", description=__doc__)
    ap.add_argument("--write", action="store_true", help="put the paragraph and labels in place")
    args = ap.parse_args(argv)
    bad = 0
    for path in notebooks():
        if args.write and write(path):
            print(f"wrote {path.relative_to(NOTEBOOKS.parent)}")
        for p in problems(path):
            bad += 1
            print(f"{path.relative_to(NOTEBOOKS.parent)}: {p}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
