"""A notebook keeps the figures it shows the learner (labkit.machine.figures): the numbers of
the lines nb.say prints and of the tables nb.show shows, since its banner; a number written in
an answer matches a figure that rounds to it."""

import pandas as pd
import pytest

from labkit import notebook as nb
from labkit.machine import figures


@pytest.fixture(autouse=True)
def no_figures_shown():
    figures.forget()
    yield
    figures.forget()


def test_a_line_the_notebook_says_keeps_its_figures(capsys):
    nb.say("SJF: 17 of 52 reports starved, longest wait 57.3 s; TTFT p90 1.02 s", "同上")
    assert {17, 52, 57.3, 1.02} <= figures.shown()
    assert 90 not in figures.shown()                   # the digits of a name (p90) are no figure


def test_a_table_the_notebook_shows_keeps_its_numeric_cells():
    nb.show(pd.DataFrame({"finish_s": [2.547, float("nan")], "slot": ["a", "b"]}))
    nb.show(pd.Series([0.53, 4.4], name="chars_per_token"))
    nb.show("not a table")
    assert figures.shown() == {2.547, 0.53, 4.4}


def test_the_banner_starts_a_notebook_with_no_figures(monkeypatch, capsys):
    nb.say("36 tokens in 1.23 s", "1.23 秒生成 36 個 token")
    assert figures.shown()
    monkeypatch.setattr(nb, "banner_text", lambda: "banner")
    nb.banner()
    assert figures.shown() == frozenset()


def test_a_number_matches_the_figures_that_round_to_it():
    assert [w.matches(6.43) for w in figures.numbers_in("6 6.4 6.43 6.5 7")] == \
        [True, True, True, False, False]
    assert [w.matches(7547) for w in figures.numbers_in("7,500 7,550 7,600 7547 8000 9000")] == \
        [True, True, False, True, True, False]
    assert [w.value for w in figures.numbers_in("約７５００個 token，rtx4090、q8_0")] == [7500]


def test_matching_names_the_number_written_and_the_figure():
    nb.say("busy 6.43 hours a day", "每天忙碌 6.43 小時")
    written, figure = figures.matching(figures.numbers_in("about 3 or 6.4 hours"))
    assert (written.text, figure) == ("6.4", 6.43)
    assert figures.matching(figures.numbers_in("3 hours")) is None


def test_a_nullable_column_with_a_missing_cell_is_shown_and_its_figures_kept():
    # the case that failed before: pd.NA (an Int64 column's missing cell) has no float
    nb.show(pd.DataFrame({"prompt_tokens": pd.array([177, None], dtype="Int64")}))
    assert figures.shown() == {177}
