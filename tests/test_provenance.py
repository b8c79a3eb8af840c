"""Every live table and plot says which server produced it (labkit.bench.provenance): the label's
form, the bench plots and the lessons' side-by-side table held to it, and the cases that must fail:
a row without its server, a figure that does not name it."""

import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")

from labkit.bench import provenance  # noqa: E402
from labkit.server.launch import ServerConfig  # noqa: E402
from test_bench import fake_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def two_servers() -> pd.DataFrame:
    """Hand-made rows of two runs each on labkit's server and on llama-server (1 and 2 slots)."""
    parts = []
    for server in ("labkit 0.1.0", "xllamacpp 2026.10.11549"):
        for n in (1, 2):
            r = fake_rows(1, slots=n)
            r["server"] = server
            r["flags"] = f"-c 4096 -np {n} --no-kv-unified"
            r["run_id"] = f"{server}-{n}"
            parts.append(r)
    return pd.concat(parts, ignore_index=True)


def test_label_names_server_version_and_flags():
    cfg = ServerConfig(n_ctx=4096, n_slots=2, kv_unified=False)
    assert provenance.label(cfg).startswith("labkit server ")
    assert provenance.label(cfg).endswith(" · -c 4096 -np 2 --no-kv-unified")
    ref = provenance.label(cfg.with_(kind="xllamacpp"))
    assert ref.startswith("llama-server (xllamacpp ") and "?" not in ref
    assert provenance.flags(cfg.with_(n_gpu_layers=999)).endswith("-ngl 999")
    assert provenance.server_name("xllamacpp", "1.2") == "llama-server (xllamacpp 1.2)"


def test_row_label_reads_bench_rows_and_refuses_a_row_without_server():
    row = {"server": "xllamacpp 2026.10.11549", "flags": "-c 4096 -np 4 --kv-unified"}
    assert provenance.row_label(row) == ("llama-server (xllamacpp 2026.10.11549) · "
                                         "-c 4096 -np 4 --kv-unified")
    old = {"server": "labkit 0.1.0", "pool_n_ctx": 4096, "slots": 2, "kv_mode": "split"}
    assert provenance.row_label(old) == "labkit server 0.1.0 · -c 4096 -np 2 --no-kv-unified"
    for bad in ({"flags": "-np 1"}, {"server": None}, {"server": float("nan")}, {"server": " "}):
        with pytest.raises(ValueError):
            provenance.row_label(bad)


def test_caption_merges_slot_counts_per_server_in_both_languages(monkeypatch):
    rows = two_servers()
    monkeypatch.setenv("LABKIT_LANG", "en")
    en = provenance.caption(rows)
    assert en == ("measured on: labkit server 0.1.0 · -c 4096 -np 1/2 --no-kv-unified; "
                  "llama-server (xllamacpp 2026.10.11549) · -c 4096 -np 1/2 --no-kv-unified")
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    assert provenance.caption(rows).startswith("量測於：labkit server 0.1.0")
    with pytest.raises(ValueError):
        provenance.caption(rows.iloc[:0])


def test_every_bench_plot_names_every_server_of_its_rows():
    import matplotlib.pyplot as plt
    from labkit.bench import plots
    rows = two_servers()
    for name, draw in (("throughput_vs_slots", plots.throughput_vs_slots),
                       ("ttft_per_request", lambda r, ax: plots.ttft_per_request(r, ax)),
                       ("memory_over_time", lambda r, ax: plots.memory_over_time(None, r, ax))):
        fig, ax = plt.subplots()
        draw(rows, ax)
        assert provenance.missing(fig, rows) == [], name
        plt.close(fig)
    for rid in rows["run_id"].unique():
        fig, ax = plt.subplots()
        plots.timeline(rows, rid, ax)
        server = rid.split("-")[0]
        assert provenance.servers(rows[rows["run_id"] == rid])[0] in provenance.figure_text(fig)
        assert "llama-server" in provenance.figure_text(fig) or server.startswith("labkit")
        plt.close(fig)


def test_missing_finds_a_plot_that_does_not_name_its_server():
    import matplotlib.pyplot as plt
    rows = two_servers()
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label="split")
    ax.set_title("Throughput vs slots")
    ax.legend()
    assert provenance.missing(fig, rows) == ["labkit server 0.1.0",
                                             "llama-server (xllamacpp 2026.10.11549)"]
    ax.set_title("Throughput\n" + provenance.caption(rows))
    assert provenance.missing(fig, rows) == []
    plt.close(fig)


def test_labelled_table_carries_the_label_or_is_refused():
    from labkit import bench
    from labkit.lessons import llama_server
    rows = two_servers()
    ws = provenance.labelled(bench.worksheet(rows))
    assert list(ws.columns)[0] == "server"
    assert set(ws["server"]) == {"labkit server 0.1.0 · -c 4096 -np 1 --no-kv-unified",
                                 "labkit server 0.1.0 · -c 4096 -np 2 --no-kv-unified",
                                 "llama-server (xllamacpp 2026.10.11549) · -c 4096 -np 1 "
                                 "--no-kv-unified",
                                 "llama-server (xllamacpp 2026.10.11549) · -c 4096 -np 2 "
                                 "--no-kv-unified"}
    with pytest.raises(ValueError):
        provenance.labelled(pd.DataFrame({"tok/s": [1.0]}))
    assert provenance.labelled(pd.DataFrame({"tok/s": [1.0]}), rows)["server"][0].startswith(
        "labkit server 0.1.0")

    class Result:
        def worksheet(self, t):
            return bench.worksheet(rows, t)
    side = llama_server.side_by_side(Result())
    assert side["server"].str.contains(" · -c 4096 -np ").all()
    assert side["tok_s_vs_1_slot"].tolist() == [1.0, 1.0, 1.0, 1.0]   # same fake walls
    assert side["server"].iloc[0].startswith("labkit") and side["server"].iloc[-1].startswith(
        "llama-server")


def test_llama_server_flags_is_the_one_form():
    from labkit.lessons import llama_server
    cfg = ServerConfig(n_ctx=0, n_slots=2, kv_unified=True, kv_unified_per_slot=1024)
    assert llama_server.flags(cfg) == provenance.flags(cfg)


def test_slot_gains_reads_each_server_against_its_own_one_slot():
    from labkit.lessons import llama_server
    side = pd.DataFrame({"server": ["labkit server 0.1.0 · -c 4096 -np 1 --no-kv-unified",
                                    "labkit server 0.1.0 · -c 4096 -np 2 --no-kv-unified",
                                    "llama-server (xllamacpp 1.2) · -c 4096 -np 1 --no-kv-unified",
                                    "llama-server (xllamacpp 1.2) · -c 4096 -np 2 --no-kv-unified"],
                         "slots": [1, 2, 1, 2], "tok_s_vs_1_slot": [1.0, 1.5, 1.0, 1.8]})
    (lab_en, lab_zh), (ref_en, _) = llama_server.slot_gains(side)
    assert lab_en == "labkit server 0.1.0: total tok/s against its own 1 slot: 1 slot 1.00x, 2 slots 1.50x"
    assert ref_en.startswith("llama-server (xllamacpp 1.2):") and ref_en.endswith("2 slots 1.80x")
    assert "1.80" not in lab_en and lab_zh.endswith("2 槽 1.50 倍")


# ------------------------------------------------------------------------------ the notebooks

# A call that runs a server or labkit's engine, or reads llama.cpp's library, in a notebook cell:
# what it produces is a live result, and says where it came from. The simulator's compare
# (sim.experiments.compare) is not one.
LIVE_CALL = re.compile(r"\b(launch|run_requests|engine_run|run_config|bench\.measure|roofline\.sweep|"
                       r"kv_match_table|llama_server_burst|llama_server\.compare|prompt_cache\.compare|"
                       r"seed_slots|kv_attention\.measure)\(")


def unlabelled_live_cells(nb) -> list[str]:
    """The code cells of ``nb`` that run something live with no ``caption(`` in them or in the
    two code cells after them (where the table or plot of the result is shown)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [c.get("id", f"cell {i}") for i, c in enumerate(code)
            if LIVE_CALL.search(c.source) and not any("caption(" in d.source for d in code[i:i + 3])]


def test_every_live_cell_of_every_notebook_prints_where_its_result_came_from():
    import nbformat
    from authoring.editions import english_notebooks, twin
    found = {}
    for path in english_notebooks():
        for p in (path, twin(path)):
            if bad := unlabelled_live_cells(nbformat.read(p, as_version=4)):
                found[str(p.relative_to(ROOT))] = bad
    assert found == {}


def test_the_notebook_rule_finds_a_live_cell_without_its_label():
    import nbformat
    v4 = nbformat.v4
    sources = ["with launch(cfg) as srv:\n    rows = bench.run_config(srv, wl)",
               "x = 1", "x = 2", "x = 3",
               "ran = sim.experiments.compare(burst, {})",            # simulated: no label
               "gauges, answers = llama_server.llama_server_burst(n=4)", "x = 4",
               "print(caption(gauges))"]
    nb = v4.new_notebook(cells=[v4.new_code_cell(s, id=f"c{i}") for i, s in enumerate(sources)])
    assert unlabelled_live_cells(nb) == ["c0"]
    nb.cells[1] = v4.new_code_cell("print(caption(rows))", id="c1")
    assert unlabelled_live_cells(nb) == []


def test_caption_reads_engine_runs_libllama_results_and_refuses_what_names_no_server(monkeypatch):
    from labkit.engine import EngineConfig
    from labkit.lessons.live import EngineRun
    monkeypatch.setenv("LABKIT_LANG", "en")
    cfg = EngineConfig("model.gguf", n_ctx=2048, n_slots=4, cont_batching=False)
    run = EngineRun(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {"n_slots": 4}, cfg)
    text = provenance.caption(run)
    assert text.startswith("measured on: labkit engine ") and "(llama-cpp-python " in text
    assert text.endswith(" · -c 2048 -np 4 --no-cont-batching")
    table = pd.DataFrame({"MiB": [1.0]})
    table.attrs["measured_on"] = [provenance.libllama_name() + " · x.gguf, -c 512 -np 1"]
    assert provenance.caption(table).startswith("measured on: llama.cpp (llama-cpp-python ")
    for nameless in (pd.DataFrame({"MiB": [1.0]}), object(), 3.0, [""]):
        with pytest.raises(ValueError):
            provenance.caption(nameless)
