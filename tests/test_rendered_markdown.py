"""Every bold and italic span of the workbook renders as bold or italics: each markdown cell of
every notebook, in both editions, and every markdown file of the repository (the READMEs,
docs/, data/, notebooks/README.md, the solutions' README) is rendered by a CommonMark renderer,
as JupyterLab and GitHub render it, and none may show its markers as text or run on into the
next span (tests/markdown_support.py says how they are found). No model, no kernel."""

import pytest

from authoring import editions
from markdown_support import ROOT, markdown_files, markdown_texts, unrendered_emphasis

FILES = markdown_files()


def _short(span: str, width: int = 70) -> str:
    return span if len(span) <= width else f"{span[:50]} … {span[-12:]}"


def problems(name: str, texts) -> list[str]:
    """One line for each span of ``texts`` ((where, markdown) pairs of the file ``name``) that
    does not render: the file, the cell, the line in it, what the reader sees wrong, the span."""
    return [", ".join(filter(None, (name, where, f"line {line}"))) + f": {what}: {_short(span)}"
            for where, markdown in texts for line, what, span in unrendered_emphasis(markdown)]


def message(found: list[str]) -> str:
    """The lines, and the way to write a Chinese label where one has its punctuation inside."""
    hint = any(stop in line for line in found for stop in editions.FULL_WIDTH_STOPS)
    return "\n".join(found + ([f"In Chinese prose, {editions.EMPHASIS_HOWTO}."] if hint else []))


def _name(path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_workbooks_markdown_is_all_read():
    names = set(map(_name, FILES))
    assert {"README.md", "README.zh-TW.md", "notebooks/README.md", "data/README.md",
            "docs/GLOSSARY.md", "notebooks/solutions/README.md"} <= names, names
    for english in editions.english_notebooks():
        assert {english, editions.twin(english)} <= set(FILES), english.name


@pytest.mark.parametrize("path", FILES, ids=list(map(_name, FILES)))
def test_every_bold_and_italic_span_renders(path):
    found = problems(_name(path), markdown_texts(path))
    assert not found, message(found)


def test_a_label_with_its_punctuation_inside_is_reported_where_it_is():
    found = problems("notebooks/zh-TW/00_setup.ipynb",
                     [("cell 4", "## 第一位客人\n\n**在餐廳裡：**第一位客人進門前，主廚先點火。")])
    assert found == ["notebooks/zh-TW/00_setup.ipynb, cell 4, line 3: markers shown as text: "
                     "**在餐廳裡：**"]
    assert message(found).endswith(f"In Chinese prose, {editions.EMPHASIS_HOWTO}.")
    assert problems("README.zh-TW.md", [("", "- **筆記本。**每本\n- **5.6** *開放題。*你的")]) == [
        "README.zh-TW.md, line 1: markers shown as text: **筆記本。**",
        "README.zh-TW.md, line 2: markers shown as text: *開放題。*"]


def test_bold_that_runs_on_to_the_next_span_is_reported():
    """A later ** that can close pairs with the label's second **: no asterisk is left, but
    the bold runs from the label to 請求."""
    assert unrendered_emphasis("**給工程師的說法。**那張單是一個**請求**（request）。") == [
        (1, "bold inside bold", "**給工程師的說法。**那張單是一個**請求**")]


@pytest.mark.parametrize("markdown", [
    "**在餐廳裡**：第一位客人進門。",                     # the punctuation outside the markers
    "**5.6** *開放題*。你的數字；*完全一樣*的批次",
    "**文件。**`docs/` 裡的文件",                         # closes: code follows the label
    "**Time:** about 5 s. *Open question.* What do your numbers say?",
    "Use `**kwargs` and `*args`:\n\n```python\nf(**{'a': 1}) * 2\n```",
    "2 * 3 = 6; n_ctx_seq = n_ctx / n_slots; q8_0 and Q4_K_M; 5 \\* 3 with an escaped star",
    "$$t_\\text{step}(B) = 2**B$$ and $x_1 * y_2$",       # formulas go to MathJax
    "| mode | note |\n|---|---|\n| **split** | *per slot* |",
    "***both***, **bold with *italics* inside**, *italics with **bold** inside*",
])
def test_spans_that_render_pass(markdown):
    assert unrendered_emphasis(markdown) == []
