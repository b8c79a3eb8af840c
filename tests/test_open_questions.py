"""Open questions are honest (issue #26, "Open questions are never judged"): an answer is
recorded, not graded (the verdict `answered`, never correct) and shows the model answer and the
rubric; the question pasted back is no answer; where the question asks about the learner's own
results, the answer must quote a figure this notebook showed, within rounding, and the verdict
names the one it found."""

import pytest

from labkit import exercises
from labkit import notebook as nb
from labkit.exercises import CORRECT, WRONG, evaluate
from labkit.lang.i18n import Both
from labkit.machine import figures

ANSWERED = "answered"
OPEN_IDS = [i for i in exercises.ids() if exercises.REGISTRY[i].kind == exercises.OPEN]
UNRELATED_EN = ("The weather in the mountains was cold and the trains ran late all week, so we "
                "read novels.")
UNRELATED_ZH = "今天早上天氣很好，我們去公園散步，看到很多小狗在草地上奔跑，心情非常愉快。"


@pytest.fixture(autouse=True)
def no_figures_shown():
    figures.forget()
    yield
    figures.forget()


def _said(*lines):
    """Lines a notebook printed through nb.say (their figures are kept)."""
    for line in lines:
        nb.say(line, line)


RECIPE_ANSWER = ("Each recipe must record the model's hash, the llama.cpp build and commit, the "
                 "exact flags of the server, the machine and its load, and the workload, so that "
                 "only one thing differs between the two runs and the difference can be pinned "
                 "on it.")


def test_an_open_answer_is_recorded_not_graded(capsys):
    result = evaluate("0.4", RECIPE_ANSWER)
    assert result.status == ANSWERED and not result.ok
    assert "recorded, not graded" in result.message
    assert "Model answer:" in result.message and "Rubric:" in result.message
    exercises.check("0.4", RECIPE_ANSWER)
    assert "✎ answered" in capsys.readouterr().out


def test_an_open_answer_is_recorded_in_chinese_too(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    result = evaluate("0.4", "兩份配方都要記下模型檔的雜湊、llama.cpp 的版本、伺服器的旗標和硬體，"
                             "這樣兩個數字之間只差一項，差異才能歸到那一項上。")
    assert result.status == ANSWERED and "已記錄，不評分" in result.message
    assert str(result).startswith("練習 0.4：✎ 已作答")


def test_15_unrelated_words_do_not_pass_5_6():
    verdict = evaluate("5.2", UNRELATED_EN)
    assert verdict.status == WRONG and "quote your own figures" in verdict.message


@pytest.mark.parametrize("ex_id", ["2.2", "5.2", "6.5"])
def test_unrelated_chinese_and_a_3_is_not_one_of_the_learners_figures(ex_id, monkeypatch):
    _said("decode-only steps, 2 slots busy: median 41.2 ms over 18 steps",
          "a step that read 35 prompt tokens: 127.6 ms")
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    verdict = evaluate(ex_id, UNRELATED_ZH + "3")
    assert verdict.status == WRONG, verdict
    assert "你引用的數字（3）都不在這本筆記本顯示給你的結果裡" in verdict.message


@pytest.mark.parametrize("ex_id", ["0.4", "3.3", "4.9", "5.2", "7.4"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_question_pasted_back_is_no_answer(ex_id, language):
    asked = exercises.REGISTRY[ex_id].question
    verdict = evaluate(ex_id, getattr(asked, language))
    assert verdict.status == WRONG, verdict
    assert "the question's own words" in verdict.message and "Model answer" not in verdict.message


def test_the_question_with_a_line_added_is_still_the_question():
    asked = exercises.REGISTRY["7.4"].question.en
    verdict = evaluate("7.4", asked + " I would pick 35 s.")
    assert verdict.status == WRONG and "the question's own words" in verdict.message


def test_an_answer_that_quotes_a_figure_of_the_notebook_says_which(monkeypatch):
    _said("SJF: 17 of 52 reports starved, longest wait 57.3 s; chat TTFT p90 1.02 s")
    answer = ("Aging kept both limits: the longest report waited about 57 s under SJF, so I deploy "
              "shortest-first with aging and cap the queue in front of the server.")
    verdict = evaluate("7.4", answer)
    assert verdict.status == ANSWERED
    assert "It quotes 57, one of your own figures (57.3 in this notebook's results)" \
        in verdict.message
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    assert "你引用了 57，是你自己的結果之一" in evaluate("7.4", answer).message


def test_an_answer_quoting_none_of_the_notebooks_figures_is_refused():
    _said("buying breaks even: vs always on after 0.84 months; vs busy hours only after 5.28 months")
    answer = ("We buy: it breaks even after 9 months against the rented instance, and our "
              "documents must stay in the building, so owning the card is worth it for the team.")
    verdict = evaluate("8.6", answer)
    assert verdict.status == WRONG
    assert "none of the numbers you quote (9)" in verdict.message


def test_the_questions_own_numbers_are_not_the_learners_figures():
    _said("-c 24576 gives 6144 cells a slot")
    answer = ("Four agents of 6k plus a 20k document need more than the 32k the model was trained "
              "on, so I would run unified KV with a bigger pool, or send the document apart when "
              "the agents are quiet, because when the pool runs out every request in flight "
              "fails and the agents would lose their work.")
    verdict = evaluate("4.9", answer)          # 4, 6, 20 and 32 are the question's
    assert verdict.status == WRONG and "quote your own figures" in verdict.message


def test_without_figures_shown_the_answer_is_recorded_and_says_it_was_not_compared():
    verdict = evaluate("6.5", "With continuous batching my slowest short request finished at "
                              "2.55 s, without it at 3.11 s; I keep it on for people waiting.")
    assert verdict.status == ANSWERED
    assert "not compared with your results" in verdict.message


def test_an_answer_may_quote_a_figure_of_a_table_the_notebook_showed():
    import pandas as pd
    nb.show(pd.DataFrame({"finish_s": [2.547, 3.112], "slot": ["a", "b"]}))
    verdict = evaluate("6.5", "With continuous batching my slowest short request finished at "
                              "2.55 s, without it at 3.11 s; I keep it on for people waiting.")
    assert verdict.status == ANSWERED and "It quotes 2.55" in verdict.message


@pytest.mark.parametrize("ex_id", OPEN_IDS)
def test_an_open_question_never_reports_correct(ex_id):
    _said("figures of the run: 0.53 chars/token, 57.3 s, 1.02 s, 6.4 hours, 2.55 s, 3.11 s")
    question = exercises.REGISTRY[ex_id].question
    for answer in (question.en, question.zh, UNRELATED_EN, UNRELATED_ZH + "3",
                   UNRELATED_EN + " 57.3 s and 2.55 s and 0.53", 12, Both("a", "b")):
        assert evaluate(ex_id, answer).status != CORRECT, (ex_id, answer)
