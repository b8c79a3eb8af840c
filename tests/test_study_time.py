"""Study time: each notebook's header states what its present text and exercises give, in the
notebook's language (authoring.study_time)."""

import json
from pathlib import Path

import pytest

from labkit.exercises import CLOSED, CODE, OPEN
from authoring import study_time as st

NOTEBOOKS = st.notebooks()


def _notebook(tmp_path: Path, name: str, cells: list, zh: bool = False) -> Path:
    folder = tmp_path / ("zh-TW" if zh else "en")
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}), encoding="utf-8")
    return path


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(text):
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": [],
            "execution_count": None}


def test_both_editions_are_there():
    assert len(NOTEBOOKS) == 30       # 15 per edition: chapters 01, 03, 04, 05 and 07 come in two parts each


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_header_states_the_study_time_its_text_gives(path):
    header = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
    header = "".join(header) if isinstance(header, list) else header
    s = st.estimate(path)
    assert st.header_line(s) in header, (
        f"{path.name}: the header's study time is not what the notebook now gives "
        f"({s.minutes} min); run python -m authoring.study_time --write")
    assert header.index(st.STUDY_MARK[s.language]) < header.index(st.MACHINE_MARK[s.language])


def test_a_stale_line_is_caught(tmp_path):
    """The header test's own failing case: text added after the line was written."""
    path = _notebook(tmp_path, "99_x.ipynb", [md("# 99\n\n**Machine time:** 5 s"),
                                               md("word " * 300)])
    st.write(path)
    before = st.header_line(st.estimate(path))
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"].append(md("more " * 1500))          # ten more minutes of reading
    path.write_text(json.dumps(nb), encoding="utf-8")
    header = "".join(json.loads(path.read_text())["cells"][0]["source"])
    assert before in header and st.header_line(st.estimate(path)) not in header


def test_reading_counts_prose_and_code_at_the_stated_rates(tmp_path):
    path = _notebook(tmp_path, "99_x.ipynb", [
        md("# Title\n\n" + "word " * 298 + "[a link](https://example.com/a/b/c) <!-- hidden note -->"),
        code("x = f(1, 2)\n")])
    s = st.estimate(path)
    # "Title" + 298 + "a link"; neither the link's target nor the comment is read
    assert (s.prose_words, s.prose_cjk, s.code_words) == (301, 0, 4)
    assert s.reading_min == pytest.approx(305 / st.WORDS_PER_MIN)
    assert s.exercises == {} and s.minutes == 5


def test_chinese_prose_is_read_by_characters(tmp_path):
    path = _notebook(tmp_path, "99_x.ipynb", [md("槽位" * 300 + " KV cache")], zh=True)
    s = st.estimate(path)
    assert s.language == "zh-TW" and (s.prose_cjk, s.prose_words) == (600, 2)
    assert s.reading_min == pytest.approx(600 / st.CJK_CHARS_PER_MIN + 2 / st.WORDS_PER_MIN)
    assert st.header_line(s).startswith("**學習時間**：約 5 分鐘")


def test_exercises_are_counted_by_kind_from_the_notebooks_own_checks():
    """A chapter's exercises are spread over its parts: each part counts the ones it checks,
    and the parts together count the chapter's, each once."""
    from labkit.exercises import REGISTRY
    parts = [st.estimate(st.NOTEBOOKS / f"{stem}.ipynb") for stem in ("05_roofline", "05_slots_live")]
    ids = [i for i in REGISTRY if i.startswith("5.")]
    assert sum(sum(s.exercises.values()) for s in parts) == len(ids) > 0
    assert sum(s.exercise_min for s in parts) == sum(st.EXERCISE_MIN[REGISTRY[i].kind] for i in ids)
    assert parts[0].exercises == {OPEN: 1, CLOSED: 1}          # 5.1 and 5.2
    assert set(st.EXERCISE_MIN) == {CLOSED, OPEN, CODE}


def test_an_exercise_named_only_in_prose_is_not_counted(tmp_path):
    """The failing case: a notebook that mentions 5.7 without checking it has no exercise."""
    path = _notebook(tmp_path, "99_x.ipynb", [md('Exercise 5.7: `check("5.7", timer)` in part 2.'),
                                               code("answer = ...\n")])
    assert st.estimate(path).exercises == {}
    path = _notebook(tmp_path, "98_x.ipynb", [code('check("5.7", timer)\ncheck("5.7", timer)\n')])
    assert st.estimate(path).exercises == {CODE: 1}


def test_the_line_replaces_the_old_one_or_goes_before_the_machine_time():
    head = "# 01\n\nintro\n\n**Machine time:** 5 s"
    once = st.with_line(head, "**Study time:** about 5 minutes", "en")
    assert once == "# 01\n\nintro\n\n**Study time:** about 5 minutes\n\n**Machine time:** 5 s"
    assert st.with_line(once, "**Study time:** about 10 minutes", "en") == \
        once.replace("5 minutes", "10 minutes")
    assert st.with_line("# 01", "**Study time:** x", "en") == "# 01\n\n**Study time:** x"


def test_writing_twice_changes_nothing(tmp_path):
    path = _notebook(tmp_path, "99_x.ipynb", [md("# 99\n\n**Machine time:** 5 s"), md("a b c")])
    assert st.write(path) is True
    assert st.write(path) is False


@pytest.mark.parametrize("words, minutes", [(0, 5), (150 * 12, 10), (150 * 13, 15), (150 * 60, 60)])
def test_the_total_is_rounded_to_five_minutes(words, minutes):
    s = st.StudyTime("99", "en", words, 0, 0, {})
    assert s.minutes == minutes


def test_the_map_gives_each_notebooks_study_time():
    said = st.map_minutes(st.MAP.read_text(encoding="utf-8"))
    assert set(said) == {p.stem for p in NOTEBOOKS if p.parent.name != "zh-TW"}
    for stem, cell in said.items():
        assert cell == st.map_cell(st.estimate(st.NOTEBOOKS / f"{stem}.ipynb")), stem


def test_a_stale_map_cell_is_caught():
    row = "| [`05_slots_live`](05_slots_live.ipynb) | measure | `bench` | about 5 min | 25 s / 20 min |"
    assert st.map_minutes(row) == {"05_slots_live": "about 5 min"}
    assert st.map_cell(st.estimate(st.NOTEBOOKS / "05_slots_live.ipynb")) != "about 5 min"
