"""Every picture labkit draws speaks the notebook's language: under LABKIT_LANG=zh-TW (with a
CJK font installed) titles, axis labels and legends are Chinese and every glyph renders; in
English they stay as they were. Small synthetic data, no model, no process."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from labkit.lang import fonts
from labkit.lang import choice
from roofline_frames import sweep_frame

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")

needs_font = pytest.mark.skipif(
    fonts.find() is None,
    reason="no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    fonts.setup(quiet=True)
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def _texts(ax) -> dict:
    legend = ax.get_legend()
    return {"title": ax.get_title() or ax.get_title(loc="left"), "x": ax.get_xlabel(),
            "y": ax.get_ylabel(),
            "legend": [t.get_text() for t in legend.get_texts()] if legend else []}


def _draw_without_missing_glyphs(fig):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*(missing from font|Glyph).*")
        fig.canvas.draw()


def _chinese(ax, *parts):
    """Draw the figure (a missing glyph is an error) and check the named parts are Chinese."""
    _draw_without_missing_glyphs(ax.figure)
    got = _texts(ax)
    for part in parts:
        value = got[part]
        text = " ".join(value) if isinstance(value, list) else value
        assert CJK.search(text), f"{part} is not Chinese: {text!r}"
    return got


# ------------------------------------------------------------------ synthetic data

def _sim_runs():
    from labkit import sim
    from labkit.sim import UnifiedKV
    reqs = sim.poisson(10, 4.0, prompt=(5, 60), output=(2, 12), seed=1)
    a = sim.simulate(reqs, slots=2, kv=UnifiedKV(120, on_full="preempt"))
    b = sim.simulate(reqs, slots=2, batching="static")
    return a, b


def _bench_rows():
    out = []
    for slots in (1, 2):
        for i in range(3):
            out.append({
                "run_id": f"split-{slots}-r0", "round": 0, "server": "labkit", "model_sha256": "x",
                "kv_mode": "split", "pool_n_ctx": 4096, "slots": slots, "n_ctx_slot": 2048,
                "in_flight": slots, "load": "closed", "workload": "short", "cache_prompt": False,
                "wall_s": 10.0, "peak_memory_bytes": 2**20, "memory_label": "rss", "index": i,
                "doc_id": f"D{i}", "scheduled_s": 0.0, "send_s": 0.0, "first_chunk_s": i + 1.0,
                "first_token_s": i + 1.0, "end_s": 2.0 * (i + 1), "error": None, "answer": "",
                "finish_reason": "stop", "prompt_tokens": 100, "completion_tokens": 10 * (i + 1),
                "ttft_s": i + 1.0, "completion_s": 2.0 * (i + 1), "correct": True,
                "prompt_ms": 500.0, "predicted_ms": 1000.0 * (i + 1)})
    return pd.DataFrame(out)


# ------------------------------------------------------------------ labkit.lessons.plots

@needs_font
def test_labkit_plots_in_chinese(zh):
    from labkit.costs import capacity
    from labkit.models import kv
    from labkit.lessons import plots
    _chinese(plots.table_tops(kv.slot_context(4096, 4, False)), "title", "x")
    _chinese(plots.table_tops(kv.slot_context(4096, 4, True)), "title", "x")
    _chinese(plots.memory_bar(capacity.plan(24, "llama-3.1-8b-q4", n_ctx=16384, slots=4)),
             "title", "legend")
    table = pd.DataFrame({"KV type": ["f16", "q8_0"], "cells (padded)": [2048, 2048],
                          "formula MiB": [60.0, 31.9], "llama.cpp MiB": [60.0, 31.9]})
    _chinese(plots.kv_bars(table), "y", "legend")
    summary = pd.DataFrame({"throughput_tok_s": [10.0, 30.0], "e2e_mean": [2.0, 1.0]},
                           index=["static", "continuous"])
    _chinese(plots.mode_bars(summary), "title", "y")
    a, _ = _sim_runs()
    got = _chinese(plots.gantt(a, title="連續批次"), "x", "legend")
    ax = plots.gantt(a)
    assert all(t.get_text().startswith("槽位") for t in ax.get_yticklabels())


# ------------------------------------------------------------------ labkit.sim.plots

@needs_font
def test_sim_plots_in_chinese(zh):
    from labkit import sim
    from labkit.sim import plots
    a, b = _sim_runs()
    _chinese(plots.gantt(a), "x", "legend")
    _chinese(plots.gantt(a.slot_table(), x="step"), "x")
    _chinese(plots.ttft_cdf({"continuous": a, "static": b}), "x", "y")
    top, bottom = plots.queue_and_kv(a)
    _chinese(top, "y")
    _chinese(bottom, "x", "y", "legend")
    sweep = pd.DataFrame({"label": ["c", "c"], "rate": [1.0, 2.0],
                          "throughput_tok_s": [10.0, 18.0], "ttft_p99": [0.2, 0.9]})
    _chinese(plots.throughput_latency(sweep), "x", "y")
    steps = sim.simulate(sim.poisson(10, 4.0, prompt=(5, 60), output=(2, 12), seed=1),
                         slots=2, max_jump=1).steps
    _chinese(plots.fit_check(sim.fit(steps), steps), "x", "y")


# ------------------------------------------------------------------ labkit.bench.plots

@needs_font
def test_bench_plots_in_chinese(zh):
    from labkit.bench import plots
    rows = _bench_rows()
    _chinese(plots.throughput_vs_slots(rows), "title", "x", "y")
    _chinese(plots.ttft_per_request(rows), "title", "x", "y")
    _chinese(plots.timeline(rows), "x", "legend")
    memory = pd.DataFrame({"run_id": ["split-1-r0"] * 3, "kind": ["rss"] * 3,
                           "t_s": [0.0, 0.2, 0.4], "bytes": [2**20, 2**21, 2**21]})
    _chinese(plots.memory_over_time(memory, rows), "title", "x")
    empty = plots.memory_over_time(pd.DataFrame())
    _draw_without_missing_glyphs(empty.figure)
    assert CJK.search(empty.texts[0].get_text())


# ------------------------------------------------------------------ policies, waste, roofline, classroom

@needs_font
def test_policy_waste_roofline_and_classroom_plots_in_chinese(zh):
    from labkit.costs import roofline as rl
    from labkit import sim
    from labkit.sim import policy_plots, waste
    from labkit.sim.experiments import LONG_TOKENS
    reqs = [sim.Request(id=i, arrival=0.1 * i, prompt_tokens=20,
                        output_tokens=LONG_TOKENS if i % 3 == 0 else 8) for i in range(12)]
    runs = {"fifo": sim.simulate(reqs, slots=2), "sjf": sim.simulate(reqs, slots=2, policy="sjf")}
    _chinese(policy_plots.long_waits(runs), "x", "y", "legend")

    table = pd.DataFrame({"tokens": [100.0, 80.0], "reserved_unused": [20.0, 50.0],
                          "free": [5.0, 0.0], "waste": [0.17, 0.38]},
                         index=["split, 4 slots x 2048", "paged, 16 slots, blocks of 16"])
    ax = waste.plot(table)
    _chinese(ax, "x", "legend")
    assert all(CJK.search(t.get_text()) for t in ax.get_yticklabels())

    df = sweep_frame()
    df.attrs.update(machine=rl.Machine(bandwidth=100.0, flops=1000.0, bandwidth_source="t",
                                       flops_source="t"),
                    cost=rl.ModelCost("toy", weight_bytes=1000, file_tensor_bytes=1000,
                                      matrix_params=100, output_params=10,
                                      kv_bytes_per_cell=10.0, attention_flops_per_cell=2))
    fig = rl.plot(df)
    for ax in fig.axes:
        _chinese(ax, "x", "legend")
        assert CJK.search(ax.get_title(loc="left"))

    from labkit.lessons import classroom
    merged = pd.DataFrame({"learner": ["a", "a", "b"], "config": ["np1", "np2", "np1"],
                           "output_tok_s": [10.0, 18.0, 30.0],
                           "verdict": ["pass", "pass", "fail: fits context"]})
    _chinese(classroom.plot(merged), "title", "y")


# ------------------------------------------------------------------ English stays as it was

def test_english_labels_unchanged(monkeypatch):
    import matplotlib.pyplot as plt
    from labkit.models import kv
    from labkit.lessons import plots
    from labkit.bench import plots as bplots
    from labkit.sim import plots as splots
    monkeypatch.delenv(choice.ENV_LANG, raising=False)
    a, b = _sim_runs()
    ax = splots.gantt(a)
    assert ax.get_xlabel() == "time (s)"
    assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == "decode"
    assert splots.ttft_cdf([a, b]).get_ylabel() == "fraction of requests"
    sweep = pd.DataFrame({"label": ["c"], "rate": [1.0], "throughput_tok_s": [10.0],
                          "ttft_p99": [0.2]})
    tl = splots.throughput_latency(sweep)
    assert (tl.get_xlabel(), tl.get_ylabel()) == ("throughput tok s", "ttft p99 (s)")
    tt = plots.table_tops(kv.slot_context(4096, 4, False))
    assert tt.get_title(loc="left") == ("split KV: n_ctx=4096, n_ctx_seq=1024, n_ctx_slot=1024, "
                                        "4 slot(s)")
    assert bplots.throughput_vs_slots(_bench_rows()).get_ylabel() == "total output tok/s"
    assert not any(CJK.search(t.get_text()) for t in tt.texts)
    plt.close("all")


def test_without_a_cjk_font_chinese_plots_keep_english(monkeypatch):
    import matplotlib.pyplot as plt
    from labkit.sim import plots
    monkeypatch.setattr(fonts, "_state", {"family": None, "told": True})
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")
    a, _ = _sim_runs()
    ax = plots.gantt(a)
    assert ax.get_xlabel() == "time (s)" and ax.get_yticklabels()[0].get_text() == "slot 0"
    plt.close("all")
    assert np.isfinite(1.0)
