"""Each Exercises section explains open questions exactly where the notebook asks one, and each
question is labelled by its kind (authoring.exercise_intro), in both editions."""

import json
import shutil

import nbformat
import pytest

from authoring import exercise_intro as intro
from labkit.exercises import OPEN, REGISTRY

NOTEBOOKS = intro.notebooks()


def _cells(*markdown, checks=()):
    """A notebook's cells: the markdown given, then one code cell per checked exercise."""
    cells = [nbformat.v4.new_markdown_cell(m) for m in markdown]
    cells += [nbformat.v4.new_code_cell(f'check("{i}", ...)') for i in checks]
    return cells


def _section(language, *open_too):
    parts = [intro.HOW[language], *(intro.OPEN_EXPLAINED[language] for _ in open_too)]
    return f"{intro.HEADING[language]}\n\n" + " ".join(parts) + "\n\nWorked answers: `solutions/x.py`."


def test_the_workbook_has_open_and_closed_exercises_to_tell_apart():
    kinds = {REGISTRY[i].kind for p in NOTEBOOKS for i in intro.checked(
        json.loads(p.read_text(encoding="utf-8"))["cells"])}
    assert OPEN in kinds and len(kinds) > 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_section_explains_open_questions_where_it_asks_them(path):
    assert intro.problems(path) == []


def test_an_explanation_without_an_open_question_fails():
    cells = _cells(_section("en", True), "**0.1** Which field?", checks=["0.1"])
    assert intro.problems_in(cells, "en") == [
        "its Exercises section explains open questions, but the notebook checks none"]


@pytest.mark.parametrize("language", ["en", "zh-TW"])
def test_an_open_question_without_its_explanation_fails(language):
    label = intro.LABEL[language]
    cells = _cells(_section(language), f"**0.4** {label}Why?", checks=["0.4"])
    assert intro.problems_in(cells, language) == [
        "checks open question(s) 0.4 but its Exercises section does not explain how an open "
        "answer is treated"]


def test_a_section_that_does_not_say_how_to_answer_fails():
    cells = _cells("## Exercises\n\nWorked answers: `solutions/x.py`.\n\n**0.1** Which?",
                   checks=["0.1"])
    assert intro.problems_in(cells, "en") == [
        "its Exercises section does not say how to answer (the HOW paragraph)"]


def test_labels_follow_the_kind():
    unlabelled_open = _cells(_section("en", True), "**0.4** Why?", checks=["0.4"])
    assert intro.problems_in(unlabelled_open, "en") == [
        "0.4 is an open question but is not marked *(open)*"]
    labelled_closed = _cells(_section("zh-TW"), "**0.1** （開放題）哪一個欄位？", checks=["0.1"])
    assert intro.problems_in(labelled_closed, "zh-TW") == [
        "0.1 is marked （開放題） but its check grades it"]


def test_write_puts_the_paragraph_and_labels_in_place(tmp_path):
    """A section written by hand, without the explanation and with an old label, is fixed."""
    nb = nbformat.v4.new_notebook(cells=_cells(
        "## Exercises\n\nWorked answers are in `notebooks/solutions/x.py` (this part's).\n\n"
        "**0.4** *Open question.* Why?", checks=["0.4"]))
    path = tmp_path / "00_x.ipynb"
    nbformat.write(nb, path)
    assert len(intro.problems(path)) == 3
    assert intro.write(path) and intro.problems(path) == []
    text = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
    assert "Worked answers: `solutions/x.py` (this part's)." in "".join(text)
    assert not intro.write(path)                  # a second pass changes nothing


def test_write_refuses_a_section_without_its_worked_answers_line(tmp_path):
    path = tmp_path / "00_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=_cells("## Exercises\n\n**0.1** Which?",
                                                         checks=["0.1"])), path)
    before = path.read_bytes()
    with pytest.raises(SystemExit, match="worked-answers line"):
        intro.write(path)
    assert path.read_bytes() == before


def test_the_zh_edition_of_a_real_notebook_is_checked_in_chinese(tmp_path):
    src = intro.NOTEBOOKS / "zh-TW" / "02_build_a_batcher.ipynb"
    (tmp_path / "zh-TW").mkdir()
    path = tmp_path / "zh-TW" / src.name
    shutil.copy(src, path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    for c in nb["cells"]:
        c["source"] = "".join(c["source"]).replace(intro.OPEN_EXPLAINED["zh-TW"], "")
    path.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    assert intro.problems(path) == [
        "checks open question(s) 2.2 but its Exercises section does not explain how an open "
        "answer is treated"]
