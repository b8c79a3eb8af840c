"""What `labkit bench` settles before it measures: a results folder of its own for each run,
even when two start in the same second (or the same millisecond); and one line, with nothing
written, for a results folder that cannot be made or a model it cannot use."""

import pytest

from labkit.bench.report import new_run_folder


def test_two_runs_started_at_the_same_moment_get_two_folders(tmp_path):
    now = 1_796_000_000.123
    first, second = new_run_folder(tmp_path, now), new_run_folder(tmp_path, now)
    assert first != second and first.is_dir() and second.is_dir()
    assert first.name.endswith("-123") and second.name == first.name + "-2"


def test_runs_a_millisecond_apart_are_named_apart(tmp_path):
    a = new_run_folder(tmp_path, 1_796_000_000.001)
    b = new_run_folder(tmp_path, 1_796_000_000.002)
    assert a.name[:-4] == b.name[:-4] and a.name != b.name and not b.name.endswith("-2")


def test_a_folder_already_there_is_never_reused(tmp_path):
    now = 1_796_000_000.5
    taken = new_run_folder(tmp_path, now)
    (taken / "worksheet.csv").write_text("a learner's run")
    again = new_run_folder(tmp_path, now)
    assert again != taken and (taken / "worksheet.csv").read_text() == "a learner's run"


@pytest.mark.parametrize("lang,words", [("en", "cannot create a results folder in"),
                                        ("zh-TW", "無法在")])
def test_a_results_folder_that_cannot_be_made_is_one_line(tmp_path, monkeypatch, capsys,
                                                          lang, words):
    from labkit.bench.cli import main
    monkeypatch.setenv("LABKIT_LANG", lang)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["--out", str(blocker), "--rounds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert words in err[-1] and str(blocker) in err[-1] and "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("model,said", [
    ("{tmp}", "is a directory, not a GGUF file"),
    ("{tmp}/missing.gguf", "no such model file"),
    ("{tmp}/notes.txt", "not a GGUF file"),
    ("synthetic:nope", "unknown model 'nope'"),
])
def test_a_model_bench_cannot_use_is_one_line_and_nothing_is_written(tmp_path, monkeypatch,
                                                                     capsys, model, said):
    from labkit.bench.cli import main
    (tmp_path / "notes.txt").write_text("not a model")
    out = tmp_path / "results"
    assert main(["--model", model.format(tmp=tmp_path), "--out", str(out), "--rounds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("labkit bench: the model cannot be used: ") and said in err[-1]
    assert not any("Traceback" in line for line in err)
    assert not out.exists() or not any(out.iterdir())
