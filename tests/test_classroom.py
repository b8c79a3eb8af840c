"""labkit.lessons.classroom merges learners' worksheets; each submission is checked first
(labkit.lessons.submission_check) and a bad one is left out with its folder and the reason;
the recipe check names the odd one out only where there is a majority; the bundled samples
are labelled as samples; the classroom notebook keeps the workbook's shape."""

import json
import os
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from labkit.lessons import classroom, widgets

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "classroom" / "sample-1-split-2docs"
ENV = {"labkit": "0.1.0", "cpu_count": 8, "gpus": [],
       "llama_cpp": {"version": "0.3.36", "llama_cpp_source": {"commit": "abc"}}}


def _line(**values) -> dict:
    """A worksheet line as labkit bench wrote it (the first line of a bundled sample, which
    bench wrote), with ``values`` in place of its own."""
    base = pd.read_csv(SAMPLE / "worksheet.csv").iloc[0].to_dict()
    base.update({"model_sha256": "ab" * 32, "errors": 0, "ttft_p50_s": 1.0,
                 "completion_p50_s": 2.0})
    base.update(values)
    if "slots" in values and "in_flight" not in values:
        base["in_flight"] = values["slots"]
    return base


def _write(folder: Path, rows: list[dict], env: dict | None = ENV, about: dict | None = None):
    folder.mkdir(parents=True)
    pd.DataFrame([_line(**r) for r in rows]).to_csv(folder / "worksheet.csv", index=False)
    if env is not None:
        (folder / "environment.json").write_text(json.dumps(env))
    if about is not None:
        (folder / "about.json").write_text(json.dumps(about))
    return folder


@pytest.fixture
def three(tmp_path):
    a = _write(tmp_path / "alice", [
        {"kv_mode": "split", "slots": 1, "output_tok_s": 10.0, "verdict": "pass"},
        {"kv_mode": "split", "slots": 2, "output_tok_s": 18.0, "verdict": "pass"}])
    b = _write(tmp_path / "bob", [
        {"kv_mode": "split", "slots": 1, "output_tok_s": 30.0, "verdict": "pass"},
        {"kv_mode": "split", "slots": 2, "output_tok_s": float("nan"), "errors": 1,
         "fits_context": False, "verdict": "fail: fits context"}],
        {"cpu_count": 16, "gpus": [{"name": "RTX 4090"}], "llama_cpp": {"version": "0.3.36"}},
        {"label": "bob (GPU)", "note": "lab machine 3"})
    c = _write(tmp_path / "carol", [
        {"kv_mode": "unified", "slots": 2, "output_tok_s": 12.0, "verdict": "pass",
         "model_sha256": "cd" * 32}], {"labkit": "0.1.0"})
    return [a, b, c]


def test_merge_reads_folders_and_labels(three):
    m = classroom.merge(three)
    assert list(dict.fromkeys(m["learner"])) == ["alice", "bob (GPU)", "carol"]
    assert set(m["config"]) == {"short split np1", "short split np2", "short unified np2"}
    row = m[m["learner"] == "bob (GPU)"].iloc[0]
    assert row["machine"] == "16 CPUs, RTX 4090" and row["note"] == "lab machine 3"
    assert m[m["learner"] == "alice"].iloc[0]["llama_cpp"] == "0.3.36 (abc)"
    assert m[m["learner"] == "carol"].iloc[0]["machine"].startswith("unknown machine")
    assert classroom.refused(m).empty


def test_merge_accepts_a_csv_file_and_refuses_bad_input(three, tmp_path):
    m = classroom.merge([three[0] / "worksheet.csv", three[1]])
    assert "alice" in set(m["learner"])                 # worksheet.csv: named by its folder
    with pytest.raises(ValueError, match="share the name"):
        classroom.merge([three[0], three[1]], labels=["x", "x"])
    with pytest.raises(ValueError, match="no submissions"):
        classroom.merge([])
    with pytest.raises(ValueError, match="labels for"):
        classroom.merge(three, labels=["x"])
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"(?s)no submission can be merged.*bad\.csv.*not a labkit "
                                         r"worksheet.*nobody.*no such folder"):
        classroom.merge([bad, tmp_path / "nobody"])
    with pytest.raises(classroom.SubmissionRefused, match="nobody"):
        classroom.read_submission(tmp_path / "nobody")


# ---------------------------------------------------------------------------- refusals

def _text(folder: Path) -> str:
    return (folder / "worksheet.csv").read_text()


def _set(folder: Path, text: str | bytes, name: str = "worksheet.csv"):
    p = folder / name
    p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)


def _cut_inside_a_number(f):           # 20.8 tok/s cut to "2": the case
    text = _text(f)
    _set(f, text[:text.rindex("18.0") + 1])


def _cut_line_with_newline(f):          # a line that lost its fields, newline kept
    text = _text(f)
    _set(f, text[:text.rindex("18.0") + 1] + "\n")


def _header_only(f):
    _set(f, _text(f).splitlines(keepends=True)[0])


def _replace(old, new, count=1):
    def change(f):
        text = _text(f)
        assert old in text
        _set(f, text.replace(old, new, count))
    return change


def _column(transform):
    def change(f):
        ws = pd.read_csv(f / "worksheet.csv", dtype=str, keep_default_na=False)
        transform(ws).to_csv(f / "worksheet.csv", index=False)
    return change


def _cell(column, value, line=0):
    def transform(ws):
        ws.loc[line, column] = value
        return ws
    return _column(transform)


def _many_lines(f):
    lines = [_line(slots=n) for n in range(1, classroom.MAX_LINES + 2)]
    pd.DataFrame(lines).to_csv(f / "worksheet.csv", index=False)


def _huge(f):                           # 200 MB (sparse: no disk used), as in the issue
    with open(f / "worksheet.csv", "r+b") as fh:
        fh.truncate(200_000_000)


def _symlinked_file(f):
    other = f.parent / "other"
    _write(other, [{"kv_mode": "split", "slots": 4, "verdict": "pass"}])
    os.remove(f / "environment.json")
    os.symlink(other / "environment.json", f / "environment.json")


def _many_files(f):
    for i in range(classroom.MAX_ENTRIES + 1):
        (f / f"{i}.txt").touch()


def _env(value):
    return lambda f: _set(f, value, "environment.json")


REFUSALS = {
    "no_worksheet": lambda f: os.remove(f / "worksheet.csv"),
    "no_environment": lambda f: os.remove(f / "environment.json"),
    "not_a_file": lambda f: (os.remove(f / "worksheet.csv"), (f / "worksheet.csv").mkdir()),
    "symlink": _symlinked_file,
    "too_many_files": _many_files,
    "too_large": _huge,
    "not_utf8": lambda f: _set(f, _text(f).replace("labkit 0.1.0", "labkit\xe9").encode("latin-1")),
    "empty": lambda f: _set(f, ""),
    "no_lines": _header_only,
    "cut": _cut_inside_a_number,
    "fields": _cut_line_with_newline,
    "too_many_lines": _many_lines,
    "not_csv": _replace(",closed,", ',"clo"sed,'),
    "columns_twice": _column(lambda ws: pd.concat([ws[["server"]], ws], axis=1)),
    "missing_columns": _column(lambda ws: ws.drop(columns=["verdict"])),
    "unknown_columns": _column(lambda ws: ws.assign(grade="A")),
    "empty_cell": _cell("workload", ""),
    "not_number": _cell("output_tok_s", "20.8x"),
    "not_flag": _cell("fits_context", "yes"),
    "bad_slots": _cell("slots", "two"),
    "bad_verdict": _cell("verdict", "ok"),
    "duplicate_line": _column(lambda ws: pd.concat([ws, ws.iloc[[0]]], ignore_index=True)),
    "same_config": _column(lambda ws: pd.concat([ws, ws.iloc[[0]].assign(pool_n_ctx="8192")],
                                                ignore_index=True)),
    "bad_json": _env('{"labkit": "0.1'),
    "not_an_object": _env("[1, 2]"),
    "bad_field": _env(json.dumps({**ENV, "gpus": "RTX 4090"})),
}


@pytest.mark.parametrize("why", sorted(REFUSALS))
def test_a_bad_submission_is_left_out_with_its_folder_and_reason(three, why):
    bad = three[0]
    REFUSALS[why](bad)
    m = classroom.merge(three)
    assert "alice" not in set(m["learner"])               # never merged as numbers
    assert list(dict.fromkeys(m["learner"])) == ["bob (GPU)", "carol"]
    (r,) = m.attrs["refused"]
    assert (r.submission, r.why) == (str(bad), why)
    table = classroom.refused(m)
    assert table["submission"].tolist() == [str(bad)] and table["reason"].iloc[0] == r.reason
    assert "{" not in r.reason and r.reason                # every placeholder filled
    assert str(bad) in str(r)
    with pytest.raises(classroom.SubmissionRefused) as caught:
        classroom.read_submission(bad)
    assert caught.value.refused.why == why and str(bad) in str(caught.value)


def test_a_file_that_cannot_be_read_is_refused(three, monkeypatch):
    from labkit.lessons import submission_check

    def denied(path, *args, **kwargs):           # what a chmod 000 file gives a non-root user
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(submission_check, "open", denied, raising=False)
    with pytest.raises(classroom.SubmissionRefused) as caught:
        classroom.read_submission(three[0])
    assert caught.value.refused.why == "unreadable"
    assert "worksheet.csv cannot be read (Permission denied)" in str(caught.value)
    with pytest.raises(ValueError, match=r"(?s)no submission can be merged.*alice: .*cannot be read"):
        classroom.merge(three)


def test_refusals_read_in_chinese(three, monkeypatch):
    REFUSALS["cut"](three[0])
    (r,) = classroom.merge(three).attrs["refused"]
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    assert "截斷" in r.reason and str(three[0]) in str(r)
    monkeypatch.setenv("LABKIT_LANG", "en")
    assert "cut" in r.reason


def test_a_symlinked_folder_or_a_copy_is_not_a_second_learner(three, tmp_path):
    link = tmp_path / "mallory"
    os.symlink(three[0], link)
    copy = tmp_path / "trent"
    copy.mkdir()
    for name in ("worksheet.csv", "environment.json"):
        (copy / name).write_bytes((three[0] / name).read_bytes())
    m = classroom.merge([three[0], link, copy, three[0]])
    assert set(m["learner"]) == {"alice"} and len(m) == 2
    whys = [(r.submission, r.why) for r in m.attrs["refused"]]
    assert whys == [(str(link), "symlink"), (str(copy), "same_worksheet"),
                    (str(three[0]), "same_worksheet")]
    assert str(three[0]) in m.attrs["refused"][1].reason


def test_a_submission_bench_writes_today_is_accepted(tmp_path):
    """A worksheet from labkit bench's own writer (with the device columns the bundled
    samples predate), a timing-only one ("not graded" in its correctness columns), and
    notebook 05's export are all merged."""
    from labkit import bench
    from labkit.bench.worksheet import DEVICE_KEYS
    names = [c.name for c in classroom.bench_columns()]
    assert [n for n in names if n not in DEVICE_KEYS] == list(pd.read_csv(SAMPLE / "worksheet.csv").columns)

    def rows(graded: bool, in_flight: int):
        return pd.DataFrame([{
            "run_id": f"r{in_flight}", "round": 0, "server": "labkit 0.1.0", "model_sha256": "ab" * 32,
            "kv_mode": "split", "pool_n_ctx": 4096, "slots": 2, "n_ctx_slot": 2048,
            "in_flight": in_flight, "load": "closed", "workload": "short", "cache_prompt": False,
            "device": "CPU", "backend": "CPU", "n_gpu_layers": 0, "wall_s": 2.0,
            "peak_memory_bytes": 2.0 ** 27, "memory_label": "not measured", "error": None,
            "finish_reason": "stop", "prompt_tokens": 10, "completion_tokens": 20, "ttft_s": 0.5,
            "completion_s": 1.5, "correct": True,
            "grade_reason": None if graded else "not graded (timing only)"} for _ in range(3)])
    folders = []
    for name, graded in (("graded", True), ("timing", False)):
        f = tmp_path / name
        f.mkdir()
        ws = bench.worksheet(pd.concat([rows(graded, 2), rows(graded, 4)], ignore_index=True))
        ws.to_csv(f / "worksheet.csv", index=False)             # as labkit.bench.report writes it
        (f / "environment.json").write_text(json.dumps(ENV))
        folders.append(f)
    m = classroom.merge(folders)
    assert classroom.refused(m).empty and len(m) == 4
    timing = m[m["learner"] == "timing"]
    assert timing["correct"].str.startswith("not graded").all()
    # two in-flight counts on two slots are two configurations, and the tables keep both
    assert set(m["config"]) == {"short split np2", "short split np2 in-flight 4"}
    assert classroom.gates(m).shape == (2, 2)


# ---------------------------------------------------------------------------- recipes

def _recipes(tmp_path, shas: dict[str, str]):
    folders = [_write(tmp_path / who, [{"kv_mode": "split", "slots": 1, "verdict": "pass",
                                       "model_sha256": sha, "output_tok_s": 10.0 + i}])
               for i, (who, sha) in enumerate(shas.items())]
    return classroom.recipes(classroom.merge(folders))


def test_two_learners_who_differ_have_no_odd_one_out(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "en")
    r = _recipes(tmp_path, {"alice": "cd" * 32, "bob": "ab" * 32})
    assert r["same_model"].tolist() == [False, False]          # neither is singled out
    said = classroom.agreement(r)
    assert "none is the odd one out" in said and "alice: cdcd" in said and "bob: abab" in said
    assert "another model file" not in said


def test_with_three_learners_the_majority_is_the_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "en")
    r = _recipes(tmp_path, {"alice": "cd" * 32, "bob": "ab" * 32, "carol": "cd" * 32})
    assert r["same_model"].to_dict() == {"alice": True, "bob": False, "carol": True}
    said = classroom.agreement(r)
    assert said.startswith("bob: another model file than the other 2 submissions (cdcdcdcdcdcd…)")
    assert "every submission used the same server: labkit 0.1.0" in said


def test_a_tie_has_no_majority(tmp_path):
    r = _recipes(tmp_path, {"a": "ab" * 32, "b": "ab" * 32, "c": "cd" * 32, "d": "cd" * 32})
    assert not r["same_model"].any()
    assert "none is the odd one out" in classroom.agreement(r)


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
    assert classroom.refused(m).empty                            # every sample passes its checks
    assert m["note"].str.contains("SAMPLE").all()
    assert classroom.recipes(m)["same_model"].all()
    assert len(classroom.comparison(m)) == len(folders)


def test_a_folder_without_a_worksheet_is_listed_not_skipped(three, tmp_path):
    (tmp_path / "dave").mkdir()
    (tmp_path / ".ipynb_checkpoints").mkdir()
    found = classroom.submissions(tmp_path)
    assert [f.name for f in found] == ["alice", "bob", "carol", "dave"]
    (r,) = classroom.merge(found).attrs["refused"]
    assert (r.submission, r.why) == (str(tmp_path / "dave"), "no_worksheet")


def test_classroom_notebook_shape():
    nb = nbformat.read(ROOT / "notebooks" / "classroom.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert nb.metadata.get("labkit", {}).get("reference_run") or all(
        not c.outputs and c.execution_count is None for c in code)
    assert "After this notebook you will be able to" in nb.cells[0].source
    assert re.search(r"\*\*Machine time:\*\*.*CPU.*GPU", nb.cells[0].source, re.S)
    assert "samples" in nb.cells[0].source.lower()
    assert "nb.banner()" in code[0].source
    assert "## Summary" in md and "kitchen" in md and "llama.cpp" in md
    src = "\n".join(c.source for c in code)
    assert "os.environ" not in src and "LABKIT_QUICK" not in src
    assert "classroom.refused(merged)" in src and "classroom.agreement(" in src
