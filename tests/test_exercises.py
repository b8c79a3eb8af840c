"""Every exercise check says right to a right answer, wrong (with a hint) to a wrong one, and
"not answered yet" without raising to ``...`` or None; the worked solutions in
notebooks/solutions/ pass when put into the notebooks' own exercise cells."""

import re
import runpy
from pathlib import Path

import nbformat
import pytest

from labkit import exercises
from labkit.exercises import CORRECT, UNANSWERED, WRONG, evaluate

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {"0": "00_setup", "1": "01_restaurant", "2": "02_kv_bytes", "3": "03_split_vs_unified",
             "4": "04_slots_live", "5": "05_counterexamples",
             "6": "06_scheduling", "7": "07_capacity_planning"}
ANSWER_LINE = re.compile(r"^(answer_(\d+)_(\d+)) = \.\.\.\s*$", re.M)

# Plausible mistakes, one (or more) per exercise.
WRONG_ANSWERS = {
    "0.1": ["file name", "size_bytes"],
    "0.2": ["accepted"],
    "0.3": [2048, 1000],
    "1.1": [{"guest's order": "request", "table": "context", "table top": "slot",
             "notes": "KV cache", "refilling tables at every step": "continuous batching"},
            {"table": "slot"}, "slot"],
    "1.2": [400, 10],
    "1.3": [1, 8],
    "1.4": [200, 3],
    "2.1": [131072, 65536, "a lot"],
    "2.2": [180, 90 * 2**20],
    "2.3": [18, 0],
    "2.4": [0.25, 2],
    "3.1": [16384, 4096],
    "3.2": [(1024, 341), (1000, 333), 1536],
    "3.3": [(1, False, 8192), (4, False, 2048), (4, True, 2048)],
    "3.4": [4, 3],
    "4.1": [8, 768, "12"],
    "4.2": [True, "yes"],
    "4.3": ["ttft", "correct"],
    "4.4": ["faster"],
    "4.5": [0, 1e9, "fast"],
    "4.6": ["bandwidth", "a bigger GPU", 3],
    "5.1": ["slots", "kv_unified"],
    "5.2": ["finish_reason"],
    "5.3": [8, 9, 5],
    "5.4": [760, 780, 700],
    "6.1": ["fifo", "fair", "FIFO"],
    "6.2": ["priority", "fifo", "sjf"],
    "6.3": [6, 8, 0],
    "6.4": ["up", "higher"],
    "7.1": [2 / 12, -0.2, -16.67],
    "7.2": [0.016, 0.096],
    "7.3": [10000 / 600, 100],
    "7.4": ["bursts"],
}


def solutions(nb_key: str) -> dict:
    path = ROOT / "notebooks" / "solutions" / f"{NOTEBOOKS[nb_key]}.py"
    ns = runpy.run_path(str(path))
    return {k: v for k, v in ns.items() if k.startswith("answer_")}


def solution_for(ex_id: str):
    nb_key, n = ex_id.split(".")
    return solutions(nb_key)[f"answer_{nb_key}_{n}"]


def test_every_exercise_has_a_wrong_answer_case():
    assert set(WRONG_ANSWERS) == set(exercises.ids())


@pytest.mark.parametrize("ex_id", sorted(WRONG_ANSWERS))
def test_right_answer_passes(ex_id):
    result = evaluate(ex_id, solution_for(ex_id))
    assert result.status == CORRECT, result


@pytest.mark.parametrize("ex_id", sorted(WRONG_ANSWERS))
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

    from labkit import roofline
    from labkit.runenv import usable_cores
    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    m = roofline.Machine(12e9, 60e9, "test", "test", platform.node(), usable_cores())
    roofline._save_record(m)
    return m, roofline.model_cost()


def test_4_5_is_checked_against_the_latest_measured_bandwidth(recorded_machine):
    m, c = recorded_machine
    right = m.bandwidth / c.weight_bytes                 # 12e9 / 96,576,768 B = 124 tok/s
    assert evaluate("4.5", right).status == CORRECT
    assert "12.00 GB/s" in evaluate("4.5", right).message
    assert evaluate("4.5", right * 1.0737).status == CORRECT     # GB read as GiB: inside 10 %
    assert evaluate("4.5", f"{right:.0f} tokens").status == CORRECT
    for wrong, hint in [(right * 1.15, "within 10%"),
                        (m.bandwidth / c.matrix_params, "parameter count"),
                        (m.flops / c.flops_per_token, "arithmetic ceiling"),
                        (right / 1e9, "units")]:
        result = evaluate("4.5", wrong)
        assert result.status == WRONG and hint in result.message, (wrong, result)


def test_4_6_shows_the_model_answer_and_rubric_once_answered():
    result = evaluate("4.6", "More bandwidth makes one stream faster on my machine; more memory "
                             "only lets me run a bigger model or more streams at once.")
    assert result.status == CORRECT
    assert "Model answer:" in result.message and "Rubric:" in result.message
    assert "Model answer" not in evaluate("4.6", "bandwidth").message


def test_a_wrong_answer_is_printed_with_its_hint(capsys):
    exercises.check("2.1", 131072)
    out = capsys.readouterr().out
    assert "not yet" in out and "f16" in out
    assert exercises.results()["2.1"].status == WRONG


def test_unknown_exercise_is_a_clear_error():
    with pytest.raises(KeyError, match="no exercise"):
        evaluate("9.9", 1)


def _exercise_cells(nb):
    return [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]


@pytest.mark.parametrize("nb_key", sorted(NOTEBOOKS))
def test_notebook_exercise_cells_match_the_registry(nb_key):
    nb = nbformat.read(ROOT / "notebooks" / f"{NOTEBOOKS[nb_key]}.ipynb", as_version=4)
    found = []
    for cell in _exercise_cells(nb):
        found += [f"{a}.{b}" for _, a, b in ANSWER_LINE.findall(cell.source)]
        assert 'check("' in cell.source
    assert found == exercises.ids(f"{nb_key}.")
    assert set(solutions(nb_key)) == {f"answer_{i.replace('.', '_')}" for i in found}


@pytest.mark.slow
@pytest.mark.parametrize("nb_key", sorted(NOTEBOOKS))
def test_solutions_pass_inside_the_notebook(nb_key, tmp_path):
    """Run the notebook's setup and exercise cells in a real kernel with the worked answers in
    place of the ``...``, then require every check in it to have said "correct"."""
    from nbclient import NotebookClient
    nb = nbformat.read(ROOT / "notebooks" / f"{NOTEBOOKS[nb_key]}.ipynb", as_version=4)
    answers = solutions(nb_key)
    keep = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or not ({"setup", "exercise"} & set(tags)):
            continue
        if "exercise" in tags:
            cell.source = ANSWER_LINE.sub(lambda m: f"{m.group(1)} = {answers[m.group(1)]!r}",
                                          cell.source)
        keep.append(cell)
    ids = exercises.ids(f"{nb_key}.")
    keep.append(nbformat.v4.new_code_cell(
        "from labkit import exercises as _ex\n"
        f"_r = _ex.results()\n"
        f"assert sorted(_r) == {ids!r}, sorted(_r)\n"
        "assert all(r.ok for r in _r.values()), [str(r) for r in _r.values() if not r.ok]\n"
        "print('all correct')"))
    nb.cells = keep
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert "all correct" in nb.cells[-1].outputs[0]["text"]
