"""How long a learner needs for a notebook: reading and exercises, not the machine's time.

Each notebook's header states two times. The machine time is what its cells take to run
(measured with ``benchmarks/notebook_times.py``). The study time, computed here, is what a
person needs to read it and do its exercises, at stated rates:

- prose: English words at :data:`WORDS_PER_MIN` (150, a careful reading rate for technical
  text); in the Chinese edition, CJK characters at :data:`CJK_CHARS_PER_MIN` (300) and the
  Latin words among them at 150;
- code: the words of the code cells (names, numbers) at 150 a minute, the same in both
  editions;
- exercises, by kind (:data:`EXERCISE_MIN`): a closed one (a number, a word, a choice) 3
  minutes, an open question 8, a code exercise 15.

These are estimates with their assumptions in plain view, not measurements of learners.

    python -m authoring.study_time           # each notebook's study time, both editions
    python -m authoring.study_time --write   # write the line into each header

``--write`` puts the line (:func:`header_line`) into the first cell of each notebook, in place of
the one already there, or before the machine-time line, and the English figure into the map of
notebooks/README.md (its "study time" column). ``tests/test_study_time.py`` fails when a header's
line or the map's figure is not the one the notebook's present text gives.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

from labkit.machine.atomic import write_atomic
from labkit.exercises import CLOSED, CODE, OPEN, REGISTRY

WORDS_PER_MIN = 150
CJK_CHARS_PER_MIN = 300
EXERCISE_MIN = {CLOSED: 3, OPEN: 8, CODE: 15}
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

# The header's study-time line, and the machine-time line it goes before.
STUDY_MARK = {"en": "**Study time:**", "zh-TW": "**學習時間**："}
MACHINE_MARK = {"en": "**Machine time:**", "zh-TW": "**機器時間**："}

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")
_CODE_WORD = re.compile(r"[A-Za-z_0-9]+")
_CHECKED = re.compile(r"""\bcheck\(["'](\d+\.\d+)["']""")      # check("5.3", ...)
# What prose shows but nobody reads word by word: links' targets, HTML comments.
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class StudyTime:
    notebook: str            # "05_slots_live"
    language: str            # "en" or "zh-TW"
    prose_words: int         # Latin words of the prose
    prose_cjk: int           # CJK characters of the prose
    code_words: int
    exercises: dict          # kind -> count

    @property
    def reading_min(self) -> float:
        return ((self.prose_words + self.code_words) / WORDS_PER_MIN
                + self.prose_cjk / CJK_CHARS_PER_MIN)

    @property
    def exercise_min(self) -> float:
        return sum(EXERCISE_MIN[k] * n for k, n in self.exercises.items())

    @property
    def minutes(self) -> int:
        """The whole, rounded to 5 minutes (at least 5)."""
        return max(5, 5 * round((self.reading_min + self.exercise_min) / 5))


def _source(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _prose(text: str) -> str:
    return _LINK_TARGET.sub("]", _COMMENT.sub(" ", text))


def estimate(path: Path | str, language: str | None = None) -> StudyTime:
    """The study time of one notebook file, its exercises those its code cells check (a
    chapter's exercises may be spread over its parts: 5.1 and 5.2 are checked in 05_roofline,
    5.3 to 5.8 in 05_slots_live), their kinds read from the registry. The header's own
    study-time line is not counted."""
    path = Path(path)
    language = language or ("zh-TW" if path.parent.name == "zh-TW" else "en")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    prose = "\n".join(_prose(_source(c)) for c in cells if c["cell_type"] == "markdown")
    prose = "\n".join(line for line in prose.splitlines() if STUDY_MARK[language] not in line)
    code = "\n".join(_source(c) for c in cells if c["cell_type"] == "code")
    kinds: dict = {}
    for ex_id in dict.fromkeys(_CHECKED.findall(code)):
        kind = REGISTRY[ex_id].kind
        kinds[kind] = kinds.get(kind, 0) + 1
    return StudyTime(path.stem, language, len(_LATIN_WORD.findall(_CJK.sub(" ", prose))),
                     len(_CJK.findall(prose)), len(_CODE_WORD.findall(code)), kinds)


def header_line(s: StudyTime) -> str:
    """The header's line, in the notebook's language, with what it was computed from."""
    n = {k: s.exercises.get(k, 0) for k in (CLOSED, OPEN, CODE)}
    m = EXERCISE_MIN
    read, work = round(s.reading_min), round(s.exercise_min)
    if s.language == "zh-TW":
        parts = [f"{n[CLOSED]} 題短題每題 {m[CLOSED]} 分鐘"]
        if n[OPEN]:
            parts.append(f"{n[OPEN]} 題開放題每題 {m[OPEN]} 分鐘")
        if n[CODE]:
            parts.append(f"{n[CODE]} 題程式題每題 {m[CODE]} 分鐘")
        return (f"{STUDY_MARK['zh-TW']}約 {s.minutes} 分鐘。閱讀 {s.prose_cjk:,} 字說明"
                f"（每分鐘 {CJK_CHARS_PER_MIN} 字）和 {s.prose_words + s.code_words:,} 個英文與"
                f"程式碼單字（每分鐘 {WORDS_PER_MIN} 個）約 {read} 分鐘；練習題約 {work} 分鐘"
                f"（{'、'.join(parts)}）。這是按上列速率估算的，不是量測出來的。")
    parts = [f"{n[CLOSED]} short exercise{'s' * (n[CLOSED] != 1)} at {m[CLOSED]} min"]
    if n[OPEN]:
        parts.append(f"{n[OPEN]} open question{'s' * (n[OPEN] != 1)} at {m[OPEN]}")
    if n[CODE]:
        parts.append(f"{n[CODE]} code exercise{'s' * (n[CODE] != 1)} at {m[CODE]}")
    return (f"{STUDY_MARK['en']} about {s.minutes} minutes: reading {s.prose_words:,} words of "
            f"prose and {s.code_words:,} of code at {WORDS_PER_MIN} words a minute, about {read} "
            f"min; the exercises, about {work} min ({', '.join(parts)}). An estimate at these "
            f"rates, not a measurement.")


def notebooks() -> list[Path]:
    """Every notebook of both editions."""
    return sorted(NOTEBOOKS.glob("*.ipynb")) + \
        sorted((NOTEBOOKS / "zh-TW").glob("*.ipynb"))


def with_line(header: str, line: str, language: str) -> str:
    """The header cell's text with ``line`` in place of its study-time line, or, where it has
    none, as a paragraph of its own before the machine-time line (or at the end)."""
    lines = header.split("\n")
    for i, text in enumerate(lines):
        if text.startswith(STUDY_MARK[language]):
            lines[i] = line
            return "\n".join(lines)
    for i, text in enumerate(lines):
        if text.startswith(MACHINE_MARK[language]):
            return "\n".join(lines[:i] + [line, ""] + lines[i:])
    return header.rstrip("\n") + "\n\n" + line


def write(path: Path) -> bool:
    """Put the study-time line into the notebook's header; whether the file changed."""
    s = estimate(path)
    raw = path.read_text(encoding="utf-8")
    nb = json.loads(raw)
    head = nb["cells"][0]
    new = with_line(_source(head), header_line(s), s.language)
    if new == _source(head):
        return False
    head["source"] = new.splitlines(keepends=True)
    write_atomic(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return True


MAP = NOTEBOOKS / "README.md"
_MAP_ROW = re.compile(r"^(\| \[`(\w+)`\]\(\2\.ipynb\).*\| )([^|]*)( \| [^|]+ \|)$")


def map_minutes(text: str) -> dict[str, str]:
    """The map's study-time cell for each notebook (stem -> "about 85 min")."""
    return {m[2]: m[3].strip() for m in map(_MAP_ROW.match, text.splitlines()) if m}


def map_cell(s: StudyTime) -> str:
    return f"about {s.minutes} min"


def write_map(path: Path = MAP) -> bool:
    """Put each English notebook's study time into the map; whether the file changed."""
    text = path.read_text(encoding="utf-8")
    out = []
    for line in text.split("\n"):
        m = _MAP_ROW.match(line)
        if m:
            line = m[1] + map_cell(estimate(NOTEBOOKS / f"{m[2]}.ipynb")) + m[4]
        out.append(line)
    new = "\n".join(out)
    if new != text:
        write_atomic(path, new)
    return new != text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="write the line into each header")
    a = p.parse_args(argv)
    for path in notebooks():
        s = estimate(path)
        changed = write(path) if a.write else False
        print(f"{path.relative_to(NOTEBOOKS.parent)}: {s.minutes} min (reading "
              f"{s.reading_min:.0f}, exercises {s.exercise_min:.0f})"
              + (" written" if changed else ""))
    if a.write and write_map():
        print(f"{MAP.relative_to(NOTEBOOKS.parent)}: study times written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
