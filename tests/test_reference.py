"""The learner's numbers beside the reference run's (labkit.lessons.reference): the table names
the reference machine and gives the ratio; a figure no notebook reports, a missing reference and a
reference at another size are said; a run records itself only when asked, from one edition."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import nbformat
import pytest

from labkit.lang.choice import use_language
from labkit.lessons import reference

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def english_quick(monkeypatch):
    monkeypatch.delenv(reference.RECORD_ENV, raising=False)
    monkeypatch.setenv("LABKIT_QUICK", "1")
    use_language("en")
    yield
    use_language("en")


def _write(folder, label, notebook, values, *, size="quick", device="CPU", machine="Box, 2 CPUs, Linux"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{label}.json").write_text(json.dumps({
        "label": label, "machine": machine, "notebooks": {notebook: {
            "date": "2026-12-04", "size": size, "device": device, "values": values}}}))


def test_your_figure_beside_the_reference_with_the_machine_named_and_the_ratio(tmp_path):
    _write(tmp_path, "cpu", "00_setup", {"prefill_tok_s": 200.0, "decode_tok_s": 50.0})
    table, notes = reference.beside("00_setup", {"prefill_tok_s": 100.0, "decode_tok_s": 100.0}, tmp_path)
    assert list(table.columns) == ["figure", "unit", "yours", "reference cpu", "yours ÷ cpu"]
    assert list(table["yours"]) == [100.0, 100.0]
    assert list(table["reference cpu"]) == [200.0, 50.0]
    assert list(table["yours ÷ cpu"]) == [0.5, 2.0]
    assert notes[0] == "reference cpu: measured on CPU, Box, 2 CPUs, Linux; 2026-12-04, quick size"
    assert any("above 1" in n for n in notes)


def test_a_gpu_reference_is_a_column_of_its_own_labelled_with_its_device(tmp_path):
    _write(tmp_path, "cpu", "00_setup", {"decode_tok_s": 50.0})
    _write(tmp_path, "gpu", "00_setup", {"decode_tok_s": 500.0}, device="CUDA0 (NVIDIA H200)",
           machine="Xeon, 16 CPUs, Linux")
    table, notes = reference.beside("00_setup", {"decode_tok_s": 100.0}, tmp_path)
    assert list(table.columns[3:]) == ["reference cpu", "yours ÷ cpu", "reference gpu", "yours ÷ gpu"]
    assert table["yours ÷ gpu"].iloc[0] == 0.2
    assert notes[1].startswith("reference gpu: measured on CUDA0 (NVIDIA H200), Xeon, 16 CPUs")


def test_no_reference_yet_is_said_and_only_your_figures_shown(tmp_path):
    table, notes = reference.beside("02_build_a_batcher", {"decode_step_ms": 12.0}, tmp_path)
    assert list(table.columns) == ["figure", "unit", "yours"]
    assert notes == ["no reference run has recorded this notebook yet"]


def test_a_reference_at_another_size_is_said(tmp_path):
    _write(tmp_path, "cpu", "02_build_a_batcher", {"decode_step_ms": 12.0}, size="full")
    _, notes = reference.beside("02_build_a_batcher", {"decode_step_ms": 12.0}, tmp_path)
    assert any("full size" in n and "quick size" in n and "the workloads differ" in n for n in notes)
    _write(tmp_path, "cpu", "02_build_a_batcher", {"decode_step_ms": 12.0}, size="quick")
    _, notes = reference.beside("02_build_a_batcher", {"decode_step_ms": 12.0}, tmp_path)
    assert not any("the workloads differ" in n for n in notes)


def test_a_figure_the_notebook_does_not_report_is_refused_by_name(tmp_path):
    with pytest.raises(reference.UnknownQuantity, match="tok_per_s"):
        reference.beside("00_setup", {"tok_per_s": 1.0}, tmp_path)
    with pytest.raises(reference.UnknownQuantity, match="03_kv_bytes"):
        reference.beside("03_kv_bytes", {"x": 1.0}, tmp_path)


def test_a_run_records_itself_only_when_asked_and_only_in_english(tmp_path, monkeypatch):
    reference.beside("00_setup", {"decode_tok_s": 40.0}, tmp_path)
    assert not (tmp_path / "cpu.json").exists()                          # not asked
    monkeypatch.setenv(reference.RECORD_ENV, "cpu")
    use_language("zh-TW")
    reference.beside("00_setup", {"decode_tok_s": 40.0}, tmp_path)
    assert not (tmp_path / "cpu.json").exists()                          # the Chinese twin
    use_language("en")
    table, notes = reference.beside("00_setup", {"decode_tok_s": 40.0}, tmp_path)
    run = json.loads((tmp_path / "cpu.json").read_text())
    entry = run["notebooks"]["00_setup"]
    assert entry["values"] == {"decode_tok_s": 40.0} and entry["size"] == "quick"
    assert entry["date"] == dt.date.today().isoformat() and run["machine"]
    assert entry["device"] == reference.this_device()          # 00 measures on the compute path
    assert notes[0].startswith("this run is reference run 'cpu'")
    assert notes[1].startswith(f"reference cpu: measured on {reference.this_device()}, ")
    assert table.iloc[0, -1] == 1.0                                       # itself


def test_a_notebook_that_measures_on_the_cpu_records_the_cpu_whatever_the_machine_has(
        tmp_path, monkeypatch):
    monkeypatch.setattr(reference, "this_device", lambda: "CUDA0 (NVIDIA H200)")
    monkeypatch.setenv(reference.RECORD_ENV, "gpu")
    reference.beside("05_slots_live", {"tok_s_1_slot": 50.0}, tmp_path)
    reference.beside("00_setup", {"decode_tok_s": 400.0}, tmp_path)
    run = json.loads((tmp_path / "gpu.json").read_text())
    assert run["notebooks"]["05_slots_live"]["device"] == "CPU"
    assert run["notebooks"]["00_setup"]["device"] == "CUDA0 (NVIDIA H200)"
    _, notes = reference.beside("05_slots_live", {"tok_s_1_slot": 50.0}, tmp_path)
    assert notes[1].startswith("reference gpu: measured on CPU, ")


def test_the_chinese_table_is_in_chinese_and_prints_no_english_sentence(tmp_path):
    from authoring.editions import printed_english
    _write(tmp_path, "cpu", "05_slots_live", {"ttft_p50_4_slots": 2.0}, size="full",
           machine="Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz, 2 CPUs, Linux")
    use_language("zh-TW")
    table, notes = reference.beside("05_slots_live", {"ttft_p50_4_slots": 1.0}, tmp_path)
    assert list(table.columns) == ["數字", "單位", "你的", "參考 cpu", "你的 ÷ cpu"]
    assert table.iloc[0, 0] == "首字等待 p50，4 個槽位（短文件組）"
    outputs = [nbformat.v4.new_output("execute_result", data={"text/html": table.to_html()}),
               nbformat.v4.new_output("stream", name="stdout", text="\n".join(notes))]
    assert printed_english(outputs) == []
    # the allowance covers the machine's name in a reference heading, and nothing else
    outputs[1]["text"] += "\nthe workloads differ here"
    assert printed_english(outputs) == ["the workloads differ here"]


def test_every_figure_a_notebook_passes_is_one_it_reports():
    """The measuring cells name only keys of QUANTITIES, and every notebook of QUANTITIES
    has a cell that passes it."""
    for name, rows in reference.QUANTITIES.items():
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        calls = [c.source for c in nb.cells if c.cell_type == "code"
                 and f'nb.beside_reference("{name}"' in c.source]
        assert len(calls) == 1, f"{name}: one cell shows the reference, found {len(calls)}"
        keys = set(re.findall(r'"(\w+)":', calls[0]))
        assert keys == {k for k, *_ in rows}, name
