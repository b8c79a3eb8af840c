"""What the Chinese edition prints has no English sentence in it: the helpers behind the
notebooks' printing cells (tables, findings, skip notes, the speeds' source, the step cost,
`labkit bench --help`, doctor's screen) are run under LABKIT_LANG=zh-TW and what they print is
read for English phrases of three words or more (authoring.editions.printed_english), as
conftest.py reads what the Chinese notebooks print under nbval. The same helpers in English
print English phrases, which the same reading finds."""

import nbformat
import pandas as pd
import pytest

from authoring import editions
from labkit.lang import choice, i18n
from test_doctor import fake_report
from test_plots_zh import _bench_rows


def english(*shown) -> list[str]:
    """The English phrases in what a cell would print: lines, or tables as a notebook shows
    them (their HTML)."""
    outputs = [nbformat.v4.new_output("execute_result", data={"text/html": x.to_html()})
               if hasattr(x, "to_html") else
               nbformat.v4.new_output("stream", name="stdout", text=f"{x}\n") for x in shown]
    return editions.printed_english(outputs)


@pytest.fixture(params=["zh-TW", "en"])
def edition(request, monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, request.param)
    return request.param


def _says(edition, found):
    """No English phrase in Chinese; some in English (the reading can say no)."""
    if edition == "zh-TW":
        assert found == [], found
    else:
        assert found, "the English edition printed no English phrase the check would find"


def test_seed_tables_the_step_cost_and_the_kv_schemes(edition):
    from labkit import sim
    from labkit.costs import roofline as rl
    from labkit.lessons import seed_tables
    from labkit.sim import waste
    m = rl.Machine(bandwidth=1e11, flops=1e12, bandwidth_source="t", flops_source="t")
    pays = seed_tables.why_batching_pays(machine=m)
    assert pays.index.get_level_values(0).str.startswith("simulator").sum() == 2   # the data stays
    schemes = pd.DataFrame({"waste": 0.5}, index=pd.Index(list(waste.schemes()), name="scheme"))
    _says(edition, english(i18n.show(pays.round(3)), sim.preset("rtx4090", "8b-q4"),
                           i18n.show(schemes)))


def test_readings_speeds_services_and_the_prediction_error(edition):
    from labkit.bench import reading
    from labkit.costs import planning
    from labkit.sim import experiments
    from test_bench_reading import _rows, _ws
    ws = _ws([("short", 1, 20.0, 1.0, 2.0, 0), ("short", 2, 24.6, 1.3, 2.6, 0),
              ("short", 4, 18.0, 2.0, 1.6, 0)])
    timed = _rows([("short", 1, 500, 500, 20), ("short", 2, 500, 900, 20),
                   ("short", 4, 500, 1900, 20)])
    speeds = planning.learner_speeds(None, _bench_rows())
    needs = planning.service_needs(speeds, 1e5, 1e9, n_ctx_train=8192)
    services = experiments.service_runs(slots=(1, 2))
    check = planning.prediction_error({"tok/s": 10.0, "TTFT p50 s": 1.0, "TTFT mean s": 1.2},
                                      {"tok/s": 11.0, "TTFT p50 s": 0.8, "TTFT mean s": 1.0})
    source = i18n.value("source", speeds["source"].iloc[0])
    _says(edition, english(*reading.sentences(reading.read(ws, timed)), i18n.show(speeds), source,
                           i18n.show(needs), i18n.show(services.round(2)), i18n.show(check),
                           i18n.value("quantity", check["error"].abs().idxmax())))
    assert "solo assistant" in needs.index and "30-user chat" in set(services["service"])


def test_the_classroom_samples(edition):
    from labkit.lessons import classroom
    merged = classroom.merge(classroom.submissions(classroom.samples_dir()))
    _says(edition, english(i18n.show(classroom.recipes(merged)),
                           i18n.show(classroom.comparison(merged, "output_tok_s")),
                           i18n.show(classroom.gates(merged))))


def test_skip_notes(edition, monkeypatch, capsys):
    from labkit import notebook as nb
    from labkit.lessons import llama_server
    from labkit.machine import gpu
    no_gpu = ([], gpu.list_gpus()[1])
    monkeypatch.setattr(gpu, "list_gpus", lambda: no_gpu)
    assert nb.skip_without_gpu(nb.tr("the same sweep on the GPU", "GPU 上的同一組量測")) is False
    note = llama_server.skip_note(nb.tr("the same two requests on llama-server itself",
                                        "在 llama-server 上送出同樣兩個請求"))
    monkeypatch.setattr(llama_server.sys, "platform", "win32")      # a platform with no wheel
    monkeypatch.setattr(llama_server.platform, "machine", lambda: "ARM64")
    elsewhere = llama_server.skip_note(nb.tr("the burst on llama-server itself",
                                             "在 llama-server 本身送出這一波請求"))
    _says(edition, english(capsys.readouterr().out, note))
    _says(edition, english(elsewhere))


def test_bench_help_and_doctor(edition):
    from labkit.bench.cli import build_parser
    from labkit.tools import doctor
    _says(edition, english(build_parser().format_help(), doctor.render(fake_report())))


def test_the_made_up_skip_note_of_the_issue_is_found():
    assert english("已略過：reading -np auto from llama-server itself。") \
        == ["auto from llama-server itself"]
