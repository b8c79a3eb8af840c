"""labkit.lessons.classroom merges learners' worksheets; the bundled samples are labelled as samples;
the classroom notebook keeps the workbook's shape."""

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from labkit.lessons import classroom, widgets

ROOT = Path(__file__).resolve().parents[1]


def _write(folder: Path, rows: list[dict], env: dict | None = None, about: dict | None = None):
    folder.mkdir(parents=True)
    base = {"server": "labkit 0.1.0", "model_sha256": "ab" * 32, "errors": 0,
            "ttft_p50_s": 1.0, "completion_p50_s": 2.0, "workload": "short"}
    pd.DataFrame([{**base, **r} for r in rows]).to_csv(folder / "worksheet.csv", index=False)
    if env is not None:
        (folder / "environment.json").write_text(json.dumps(env))
    if about is not None:
        (folder / "about.json").write_text(json.dumps(about))
    return folder


@pytest.fixture
def three(tmp_path):
    env = {"cpu_count": 8, "gpus": [], "llama_cpp": {"version": "0.3.36",
                                                     "llama_cpp_source": {"commit": "abc"}}}
    a = _write(tmp_path / "alice", [
        {"kv_mode": "split", "slots": 1, "output_tok_s": 10.0, "verdict": "pass"},
        {"kv_mode": "split", "slots": 2, "output_tok_s": 18.0, "verdict": "pass"}], env)
    b = _write(tmp_path / "bob", [
        {"kv_mode": "split", "slots": 1, "output_tok_s": 30.0, "verdict": "pass"},
        {"kv_mode": "split", "slots": 2, "output_tok_s": float("nan"), "errors": 1,
         "verdict": "fail: fits context"}],
        {"cpu_count": 16, "gpus": [{"name": "RTX 4090"}], "llama_cpp": {"version": "0.3.36"}},
        {"label": "bob (GPU)", "note": "lab machine 3"})
    c = _write(tmp_path / "carol", [
        {"kv_mode": "unified", "slots": 2, "output_tok_s": 12.0, "verdict": "pass",
         "model_sha256": "cd" * 32}])
    return [a, b, c]


def test_merge_reads_folders_and_labels(three):
    m = classroom.merge(three)
    assert list(dict.fromkeys(m["learner"])) == ["alice", "bob (GPU)", "carol"]
    assert set(m["config"]) == {"short split np1", "short split np2", "short unified np2"}
    row = m[m["learner"] == "bob (GPU)"].iloc[0]
    assert row["machine"] == "16 CPUs, RTX 4090" and row["note"] == "lab machine 3"
    assert m[m["learner"] == "alice"].iloc[0]["llama_cpp"] == "0.3.36 (abc)"
    assert m[m["learner"] == "carol"].iloc[0]["machine"].startswith("unknown machine")


def test_merge_accepts_a_csv_file_and_refuses_bad_input(three, tmp_path):
    m = classroom.merge([three[0] / "worksheet.csv", three[1]])
    assert "worksheet" in set(m["learner"])             # a bare CSV is named by its file
    with pytest.raises(ValueError, match="share the name"):
        classroom.merge([three[0], three[0]])
    with pytest.raises(ValueError, match="no submissions"):
        classroom.merge([])
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match="not a labkit worksheet"):
        classroom.merge([bad])
    with pytest.raises(FileNotFoundError):
        classroom.merge([tmp_path / "nobody"])


def test_recipes_flag_a_different_model(three):
    r = classroom.recipes(classroom.merge(three))
    assert r["same_model"].to_dict() == {"alice": True, "bob (GPU)": True, "carol": False}
    assert r["all_pass"].to_dict() == {"alice": True, "bob (GPU)": False, "carol": True}
    assert r.loc["alice", "configs"] == 2


def test_comparison_gates_best_and_plot(three):
    m = classroom.merge(three)
    t = classroom.comparison(m)
    assert t.loc["alice", "short split np2"] == 18.0
    assert pd.isna(t.loc["bob (GPU)", "short split np2"])     # failed batch: no throughput
    assert pd.isna(t.loc["alice", "short unified np2"])       # not run
    assert classroom.gates(m).loc["bob (GPU)", "short split np2"] == "fail: fits context"
    best = classroom.best_passing(m).set_index("learner")
    assert best.loc["alice", "config"] == "short split np2"
    assert best.loc["bob (GPU)", "config"] == "short split np1"    # np2 failed a gate
    with pytest.raises(KeyError):
        classroom.comparison(m, "nonsense")
    import matplotlib
    matplotlib.use("Agg")
    ax = classroom.plot(m)
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1                                     # bob's failed np2
    p = widgets.classroom_panel(m)
    p.update(metric="ttft_p50_s")
    assert p.result.loc["alice", "short split np1"] == 1.0


def test_bundled_samples_are_labelled_samples():
    folders = classroom.submissions(classroom.samples_dir())
    assert len(folders) >= 3
    readme = (classroom.samples_dir() / "README.md").read_text()
    assert "not results from learners" in readme
    for f in folders:
        about = json.loads((f / "about.json").read_text())
        assert about["sample"] is True and "SAMPLE" in about["note"] and about["command"]
        assert f.name in readme
    m = classroom.merge(folders)
    assert m["note"].str.contains("SAMPLE").all()
    assert classroom.recipes(m)["same_model"].all()
    assert len(classroom.comparison(m)) == len(folders)


def test_classroom_notebook_shape():
    nb = nbformat.read(ROOT / "notebooks" / "classroom.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert "After this notebook you will be able to" in nb.cells[0].source
    assert re.search(r"\*\*Time:\*\*.*CPU.*GPU", nb.cells[0].source, re.S)
    assert "samples" in nb.cells[0].source.lower()
    assert "nb.banner()" in code[0].source
    assert "## Summary" in md and "kitchen" in md and "llama.cpp" in md
    src = "\n".join(c.source for c in code)
    assert "os.environ" not in src and "LABKIT_QUICK" not in src
