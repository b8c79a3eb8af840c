"""Every exercise check says right to a right answer, wrong (with a hint) to a wrong one, and
"not answered yet" without raising to ``...`` or None; the worked solutions in
notebooks/solutions/ pass when put into the notebooks' own exercise cells."""

import inspect
import re
import runpy
import textwrap
from pathlib import Path

import nbformat
import pytest

from labkit import exercises
from labkit.exercises import ANSWERED, CORRECT, OPEN, UNANSWERED, WRONG, evaluate, quantities
from labkit.machine import figures

ROOT = Path(__file__).resolve().parents[1]
# Chapter number -> its notebooks: a chapter may come in parts, named so that they sort in
# order (05_roofline, then 05_slots_live), its exercises numbered across them and its worked
# answers in one file.
NOTEBOOKS: dict[str, list[str]] = {}
for _p in sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb")):
    NOTEBOOKS.setdefault(str(int(_p.name[:2])), []).append(_p.stem)
ANSWER_LINE = re.compile(r"^(answer_(\d+)_(\d+)) = \.\.\.\s*$", re.M)

# Plausible mistakes, one (or more) per exercise, kept beside each notebook's exercises in
# tests/exercise_cases/chNN.py (WRONG = {id: [wrong answers]}).
WRONG_ANSWERS = {}
for _case_file in sorted((ROOT / "tests" / "exercise_cases").glob("ch*.py")):
    WRONG_ANSWERS.update(runpy.run_path(str(_case_file))["WRONG"])


def solutions(nb_key: str) -> dict:
    [path] = (ROOT / "notebooks" / "solutions").glob(f"{int(nb_key):02d}_*.py")
    ns = runpy.run_path(str(path))
    return {k: v for k, v in ns.items() if k.startswith("answer_")}


def solution_for(ex_id: str):
    nb_key, n = ex_id.split(".")
    return solutions(nb_key)[f"answer_{nb_key}_{n}"]


def _lanes(ex_ids):
    """Exercise ids as test parameters: a check whose judge loads the model (a code exercise
    run on real prompts) goes to the slow lane."""
    return [pytest.param(i, marks=pytest.mark.slow) if exercises.REGISTRY[i].needs_model else i
            for i in ex_ids]


@pytest.fixture(autouse=True)
def no_figures_shown():
    """Each test starts as a kernel that has shown no figure (labkit.machine.figures)."""
    figures.forget()
    yield
    figures.forget()


def right_status(ex_id: str) -> str:
    """What a worked answer gets: correct, or answered (recorded, not graded) for an open
    question."""
    return ANSWERED if exercises.REGISTRY[ex_id].kind == OPEN else CORRECT


def test_every_exercise_has_a_wrong_answer_case():
    assert set(WRONG_ANSWERS) == set(exercises.ids())


@pytest.mark.parametrize("ex_id", _lanes(sorted(WRONG_ANSWERS)))
def test_right_answer_passes(ex_id):
    result = evaluate(ex_id, solution_for(ex_id))
    assert result.status == right_status(ex_id), result


@pytest.mark.parametrize("ex_id", _lanes(sorted(WRONG_ANSWERS)))
def test_wrong_answers_fail_with_a_hint(ex_id):
    for wrong in WRONG_ANSWERS[ex_id]:
        result = evaluate(ex_id, wrong)
        assert result.status == WRONG, (wrong, result)
        assert result.message, f"no hint for {wrong!r}"


@pytest.mark.parametrize("ex_id", sorted(WRONG_ANSWERS))
def test_unanswered_is_reported_not_raised(ex_id, capsys):
    for blank in (..., None):
        assert evaluate(ex_id, blank).status == UNANSWERED
        exercises.check(ex_id, blank)
        assert "not answered yet" in capsys.readouterr().out


@pytest.fixture
def recorded_machine(tmp_path, monkeypatch):
    """A machine record of 12 GB/s and 60 GFLOP/s for this host, in a cache of its own."""
    import platform

    from labkit.costs import roofline
    from labkit.machine.runenv import usable_cores
    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    m = roofline.Machine(12e9, 60e9, "test", "test", platform.node(), usable_cores())
    roofline._save_record(m)
    return m, roofline.model_cost()


def test_5_1_is_checked_against_the_latest_measured_bandwidth(recorded_machine):
    m, c = recorded_machine
    right = m.bandwidth / c.weight_bytes                 # 12e9 / 96,576,768 B = 124 tok/s
    assert evaluate("5.1", right).status == CORRECT
    assert "12.00 GB/s" in evaluate("5.1", right).message
    assert evaluate("5.1", right * 1.0737).status == CORRECT     # GB read as GiB: inside 10 %
    assert evaluate("5.1", f"{right:.0f} tok/s").status == CORRECT
    tokens = evaluate("5.1", f"{right:.0f} tokens")        # a count, not a rate
    assert tokens.status == WRONG and "a number of tokens" in tokens.message
    assert "a rate in tokens per second" in tokens.message
    for wrong, hint in [(right * 1.15, "within 10%"),
                        (m.bandwidth / c.matrix_params, "parameter count"),
                        (m.flops / c.flops_per_token, "arithmetic ceiling"),
                        (right / 1e9, "units")]:
        result = evaluate("5.1", wrong)
        assert result.status == WRONG and hint in result.message, (wrong, result)


def test_5_2_shows_the_model_answer_and_rubric_once_answered():
    result = evaluate("5.2", "More bandwidth makes one stream faster on my machine (31 tok/s "
                             "against 124 by the formula); more memory only lets me run a bigger "
                             "model or more streams at once.")
    assert result.status == ANSWERED
    assert "recorded, not graded" in result.message
    assert "Model answer:" in result.message and "Rubric:" in result.message
    assert "Model answer" not in evaluate("5.2", "bandwidth").message


def test_a_wrong_answer_is_printed_with_its_hint(capsys):
    exercises.check("3.1", 131072)
    out = capsys.readouterr().out
    assert "not yet" in out and "f16" in out
    assert exercises.results()["3.1"].status == WRONG


def test_unknown_exercise_is_a_clear_error():
    with pytest.raises(KeyError, match="no exercise"):
        evaluate("9.9", 1)


def _exercise_cells(nb):
    return [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]


@pytest.mark.parametrize("nb_key", sorted(NOTEBOOKS))
def test_notebook_exercise_cells_match_the_registry(nb_key):
    found = []
    cells = [c for stem in NOTEBOOKS[nb_key]
             for c in nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4).cells]
    for cell in _exercise_cells(nbformat.v4.new_notebook(cells=cells)):
        found += [f"{a}.{b}" for _, a, b in ANSWER_LINE.findall(cell.source)]
        assert 'check("' in cell.source
    assert found == exercises.ids(f"{nb_key}.")
    assert set(solutions(nb_key)) == {f"answer_{i.replace('.', '_')}" for i in found}


def _answer_source(name: str, answer) -> str:
    """The line that puts a worked answer in place of ``name = ...``: its value, or, for a code
    exercise, the solution function's own source (a ``def name(...)``, imports inside it)."""
    if callable(answer):
        return textwrap.dedent(inspect.getsource(answer)).rstrip()
    return f"{name} = {answer!r}"


class Kernel:
    """One Jupyter kernel that runs cells one after another, as a notebook's would."""

    def __init__(self, cwd: Path):
        from jupyter_client.manager import start_new_kernel
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd))

    def run(self, source: str, timeout_s: float = 120) -> str:
        """Run one cell; what it printed. A cell that raises fails with its traceback."""
        printed, errors = [], []

        def output(msg):
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                errors.append(re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(msg["content"]["traceback"])))
        reply = self.client.execute_interactive(source, timeout=timeout_s, output_hook=output,
                                                allow_stdin=False)
        if reply["content"]["status"] != "ok":
            raise AssertionError(f"the cell\n{textwrap.indent(source, '    ')}\nraised:\n"
                                 + "\n".join(errors or [str(reply["content"])]))
        return "".join(printed)

    def stop(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """``kernels(edition)``: one kernel per edition, started when first asked for, in a folder
    of its own; all are stopped after the module."""
    started: dict[str, Kernel] = {}

    def kernel(edition: str) -> Kernel:
        if edition not in started:
            started[edition] = Kernel(tmp_path_factory.mktemp(f"solutions-{edition}"))
        return started[edition]
    try:
        yield kernel
    finally:
        for k in started.values():
            k.stop()


def _solved_cells(nb_key: str, edition: str) -> list[str]:
    """The notebook's setup and exercise cells, the worked answers in place of the ``...``."""
    folder = ROOT / "notebooks" / ("" if edition == "en" else edition)
    answers = solutions(nb_key)
    cells = []
    for cell in (c for stem in NOTEBOOKS[nb_key]
                 for c in nbformat.read(folder / f"{stem}.ipynb", as_version=4).cells):
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or not ({"setup", "exercise"} & tags):
            continue
        if "exercise" in tags:
            cells.append(ANSWER_LINE.sub(
                lambda m: _answer_source(m.group(1), answers[m.group(1)]), cell.source))
        else:
            cells.append(cell.source)
    return cells


@pytest.mark.slow
@pytest.mark.parametrize("edition, nb_key", [
    pytest.param(edition, key, id=f"{edition}-{key}",
                 marks=pytest.mark.long if edition == "zh-TW" else ())
    for edition in ("en", "zh-TW") for key in sorted(NOTEBOOKS)])
def test_solutions_pass_inside_the_notebook(edition, nb_key, kernels):
    """Run the notebook's setup and exercise cells with the worked answers in place of the
    ``...``, then require every check of this notebook to have said "correct" (an open
    question: "answered", recorded and not graded), in either
    edition (the Chinese one's language line makes the checks speak Chinese). The notebooks
    of an edition share one kernel, one after another, as a learner's session could; the
    verdicts are told apart by their exercise ids."""
    kernel = kernels(edition)
    for source in _solved_cells(nb_key, edition):
        kernel.run(source)
    ids = exercises.ids(f"{nb_key}.")
    printed = kernel.run(
        "from labkit import exercises as _ex\n"
        f"_r = {{i: r for i, r in _ex.results().items() if i.startswith('{nb_key}.')}}\n"
        f"assert sorted(_r) == {sorted(ids)!r}, sorted(_r)\n"
        "_fair = {i: r.status == ('answered' if r.kind == 'open' else 'correct')\n"
        "         for i, r in _r.items()}\n"
        "assert all(_fair.values()), [str(_r[i]) for i, ok in _fair.items() if not ok]\n"
        "print('all correct')")
    assert printed.strip().endswith("all correct"), printed


def test_open_question_hides_its_model_answer_until_answered(monkeypatch):
    monkeypatch.setattr(exercises, "REGISTRY", dict(exercises.REGISTRY))
    exercises.open_question("99.1", "Why?", "Because the pool is shared.", ["names the pool"],
                            min_words=5, needs_number=True)
    long_en = "my four slots shared 2048 cells so one request starved"
    assert evaluate("99.1", long_en).status == ANSWERED
    assert "Model answer: Because" in evaluate("99.1", long_en).message
    assert "✎ answered" in str(evaluate("99.1", long_en))
    assert "✔" not in str(evaluate("99.1", long_en))
    short = evaluate("99.1", "shared pool")
    assert short.status == WRONG and "Model answer" not in short.message
    no_figure = evaluate("99.1", "the slots shared one pool so one request starved")
    assert no_figure.status == WRONG and "figures" in no_figure.message
    assert evaluate("99.1", "四個窗口共用 2048 格，一個請求用完了整個池子").status == ANSWERED
    assert evaluate("99.1", "   ").status == UNANSWERED


def test_a_learners_function_that_raises_is_a_wrong_answer_not_a_traceback(monkeypatch):
    monkeypatch.setattr(exercises, "REGISTRY", dict(exercises.REGISTRY))

    @exercises.exercise("99.2", "Write double(x).", kind=exercises.CODE)
    def _judge(fn):
        return exercises.call(fn, 2) == 4, "double(2) should be 4"

    assert evaluate("99.2", lambda x: 2 * x).status == CORRECT
    assert evaluate("99.2", lambda x: x).status == WRONG
    raised = evaluate("99.2", lambda x: 1 / 0)
    assert raised.status == WRONG and "ZeroDivisionError" in raised.message
    assert evaluate("99.2", 4).status == WRONG                        # not a function


def test_choice_reads_english_and_traditional_chinese():
    options = {"refused": ("rejected", "拒絕"), "accepted": ("接受",)}
    assert exercises.choice("「拒絕」。", options) == "refused"
    assert exercises.choice(" Rejected ", options) == "refused"
    assert exercises.choice("接受", options) == "accepted"
    with pytest.raises(ValueError, match="answer one of"):
        exercises.choice("maybe", options)


# ---------------------------------------------------------------------------- in Chinese

def _chinese_problems(message: str) -> list[str]:
    """Why ``message`` is not a Chinese message: no Chinese character, or an English
    sentence (five words in a row outside code) left in it."""
    from authoring import editions
    if not editions.CJK.search(message):
        return ["no Chinese"]
    return [f"English left: {run!r}" for run in editions.english_runs(message)]


def _fast(ex_ids):
    return [i for i in ex_ids if not exercises.REGISTRY[i].needs_model]


@pytest.mark.parametrize("ex_id", sorted(WRONG_ANSWERS))
def test_every_question_is_asked_in_chinese(ex_id, monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    assert not _chinese_problems(exercises.question(ex_id)), exercises.question(ex_id)


@pytest.mark.parametrize("ex_id", _fast(sorted(WRONG_ANSWERS)))
def test_wrong_answers_get_a_chinese_hint_in_the_chinese_edition(ex_id, monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    for wrong in WRONG_ANSWERS[ex_id]:
        result = evaluate(ex_id, wrong)
        assert result.status == WRONG, (wrong, result)
        problems = _chinese_problems(result.message)
        assert not problems, f"{wrong!r}: {problems}: {result.message}"
        assert str(result).startswith(f"練習 {ex_id}：✘ 還不對：")


@pytest.mark.parametrize("ex_id", _fast(sorted(WRONG_ANSWERS)))
def test_solutions_pass_in_the_chinese_edition_too(ex_id, monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    result = evaluate(ex_id, solution_for(ex_id))
    assert result.status == right_status(ex_id), result
    if result.message:          # an open question's model answer and rubric, a note
        assert not _chinese_problems(result.message), result.message


def test_a_blank_answer_is_reported_in_chinese(monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    exercises.check("3.1", ...)
    assert capsys.readouterr().out.startswith("練習 3.1：… 尚未作答：把 ... 換成你的答案")


@pytest.mark.parametrize("written, value", [
    ("131,072", 131072), ("約 60 個", 60), ("兩個", 2), ("沒有", 0), ("10 次", 10),
    ("大約 5 左右", 5), ("-0.17", -0.17), ("兩百零三", 203), ("１２", 12)])
def test_a_number_is_read_as_a_learner_writes_it(written, value):
    assert quantities.as_number(written) == value


@pytest.mark.parametrize("written", ["a lot", "x5", "16.67%", "it will not fit", "90 MiB"])
def test_what_is_not_a_number_says_so_in_the_learners_language(written, monkeypatch):
    with pytest.raises(ValueError, match="expected a number"):
        quantities.as_number(written)
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    with pytest.raises(ValueError, match="這裡要的是數字"):
        quantities.as_number(written)


# A number no float holds, or one that is not finite, is an answer like any other: `evaluate`
# gives a verdict (never a traceback) for every exercise, in the learner's language.
OUT_OF_RANGE = [10**400, -10**400, float("inf"), float("-inf"), float("nan"), "1e400", "-inf",
                "nan", "inf tokens", "1" * 5000]


@pytest.mark.parametrize("answer", OUT_OF_RANGE, ids=lambda a: repr(a)[:12])
def test_a_number_beyond_float_is_wrong_not_raised(answer):
    # (the exercises that load the model first are code exercises: a number is not a function)
    for ex_id in [i for i in exercises.ids() if not exercises.REGISTRY[i].needs_model]:
        result = evaluate(ex_id, answer)
        assert result.status == WRONG, (ex_id, result)


@pytest.mark.parametrize("answer", [10**400, float("inf"), "1e400"], ids=repr)
def test_a_number_beyond_float_is_named_in_chinese(answer, monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    with pytest.raises(ValueError, match="有限的數字"):
        quantities.as_number(answer)


def test_an_answer_no_check_foresaw_is_still_a_verdict(monkeypatch):
    """Whatever a judge raises (here ZeroDivisionError) comes back as a wrong answer."""
    ex = exercises.REGISTRY["0.2"]
    def broken(answer):
        raise ZeroDivisionError("division by zero")
    import dataclasses
    monkeypatch.setitem(exercises.REGISTRY, "0.2", dataclasses.replace(ex, judge=broken))
    result = evaluate("0.2", 3)
    assert result.status == WRONG and "ZeroDivisionError" in result.message
