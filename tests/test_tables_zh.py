"""Tables and lines shown to people, in the notebook's language: tables built only to be read
come with Chinese headings under LABKIT_LANG=zh-TW; the tables code keeps reading keep the
program's names and get Chinese headings through labkit.lang.i18n.show; printed findings and notes
are Chinese. In English nothing changes."""

import re

import pandas as pd
import pytest

from labkit.lang import i18n
from labkit.lang import choice
from roofline_frames import sweep_frame

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv(choice.ENV_LANG, "zh-TW")


def _all_chinese(columns, allowed=("GPU (GiB)",)):
    """Every heading has Chinese, except names that stay as they are."""
    return [c for c in columns if not CJK.search(str(c)) and c not in allowed]


def test_display_tables_have_chinese_headings(zh):
    import dataclasses

    from labkit.costs import capacity, rentbuy
    seed = capacity.seed_comparison()
    assert _all_chinese(seed.columns, allowed=()) == []
    lev = capacity.levers()
    assert _all_chinese(lev.columns, allowed=("KV type",)) == [] or "KV 型別" in lev.columns
    assert lev.iloc[0, 0].startswith("GQA（")
    f = rentbuy.seed_factors()
    assert list(f.columns[:2]) == ["因素", "有利於"] and "租" in set(f["有利於"])
    d = rentbuy.inputs_table()
    assert list(d.columns) == ["輸入", "值", "單位", "類別", "來源"]
    assert all(CJK.search(s) for s in d["來源"]) and set(d["類別"]) == {"種子文章", "規格", "假設"}
    fields = [f.name for cls in (rentbuy.Owning, rentbuy.Renting) for f in dataclasses.fields(cls)]
    assert list(d["輸入"]) == fields                               # the field names stay


def test_roofline_table_in_chinese(zh):
    from labkit.costs import roofline as rl
    df = sweep_frame(batches=(1, 2), decode=1.0, predicted=1.1, no_overlap=0.9)
    t = rl.table(df)
    assert _all_chinese(t.columns) == [] and t.index.name == "批次中的序列數"
    assert t.loc[2, "解碼 每條串流實測 tok/s"] == pytest.approx(1.0)


def test_text_agreement_in_chinese(zh):
    rows = pd.DataFrame({"error": [None] * 4, "workload": ["short"] * 4, "round": [0] * 4,
                         "kv_mode": ["split"] * 4, "slots": [1, 1, 2, 2],
                         "doc_id": ["a", "b", "a", "b"], "answer": ["xy", "z", "xq", "z"]})
    from labkit.lessons import live
    t = live.text_agreement(rows)
    assert "第一個差異" in t.columns and "完全相同" in t.columns
    assert t["第一個差異"].iloc[1].startswith("a：從第 1 個字元起：")


def test_readings_and_notes_in_chinese(zh):
    from labkit.bench import reading
    from labkit.lessons import llama_server
    from test_bench_reading import _rows, _ws
    ws = _ws([("short", 1, 20.0, 1.0, 2.0, 0), ("short", 2, 30.0, 1.3, 2.6, 0),
              ("short", 4, float("nan"), 2.0, 4.0, 3)])
    lines = reading.sentences(reading.read(ws, _rows([("short", 1, 500, 500, 20)])))
    assert lines[0] == ("labkit 0.1.0，short，2 個槽位（分割 KV）：tokens/s 是 1 個槽位的 1.50 倍"
                        "（+50 %），首字等待 p50 是 1.30 倍（1.00 秒 → 1.30 秒），"
                        "請求完成時間的中位數是 1.30 倍；通過。")
    assert "3 個請求失敗" in lines[1]
    note = llama_server.skip_note(i18n.Both("the same two requests", "同樣兩個請求"))
    assert note.startswith("已略過：同樣兩個請求。缺少 llama.cpp 的 llama-server：")


def test_show_renames_patterns_and_levels(zh):
    from labkit.lessons import handbuilt as hb
    steps = [[(0, 0, "prefill", 4), (1, 1, "prefill", 3)], [(0, 0, "decode", 1)]]
    table = hb.step_table(steps, 2)
    shown = i18n.show(table)
    assert list(shown.columns) == ["ms", "槽位 0", "槽位 1"] and shown.index.name == "步驟"
    side = hb.side_by_side(steps, steps, 2)
    shown = i18n.show(side, {"yours": "你的", "engine": "引擎", "same": "相同"})
    assert ("你的", "槽位 0") in shown.columns and ("", "相同") in shown.columns
    assert list(table.columns) == ["ms", "slot 0", "slot 1"]              # the table is untouched
    assert i18n.heading("characters in 16,384 tokens") == "16,384 個 token 可容納的字元數"
    assert i18n.heading("no such column") == "no such column"


def test_english_tables_unchanged(monkeypatch):
    from labkit.costs import capacity, rentbuy
    monkeypatch.delenv(choice.ENV_LANG, raising=False)
    assert list(capacity.seed_comparison().columns[:4]) == ["GPU (GiB)", "model", "stand-in",
                                                           "source says"]
    assert capacity.levers().iloc[0]["attention"] == "GQA (as shipped)"
    assert list(rentbuy.inputs_table().columns) == ["input", "value", "unit", "kind", "source"]
    assert list(rentbuy.seed_factors().columns[:2]) == ["factor", "favours"]


def test_handbuilt_words_in_chinese(zh):
    from labkit.lessons import handbuilt as hb
    mine = [(20.0, [(0, 0, "prefill", 33), (1, 1, "prefill", 37)]),
            (6.0, [(0, 2, "prefill", 35), (1, 1, "decode", 1)])]
    theirs = [(21.0, [(1, 1, "prefill", 37), (0, 0, "prefill", 33)]),
              (6.5, [(0, 0, "decode", 1), (1, 2, "prefill", 35)])]
    assert hb.first_difference(mine, theirs) == (
        "第 1 步：你的排程做了 槽位 0 prefill 35 #2、槽位 1 decode #1；"
        "引擎做了 槽位 0 decode #0、槽位 1 prefill 35 #2")
    assert hb.first_difference(mine, mine[:1]) == "你的排程呼叫了 2 次 llama_decode，引擎 1 次"
    side = hb.side_by_side(mine, theirs, 2)
    assert ("引擎", "ms") in side.columns and ("", "same") in side.columns


def test_capacity_and_machine_tables_in_chinese(zh):
    from labkit.costs import capacity
    from labkit.costs import roofline as rl
    t = capacity.plan(24, "llama-3.1-8b-q4", n_ctx=16384, slots=4).table()
    assert t.loc["所需 / GPU", "值"].endswith("-> 放得下")
    assert "4,096 token 的對話數" in t.index
    m = rl.Machine(bandwidth=1e10, flops=float("nan"), bandwidth_source="test", flops_source="t")
    assert m.table().loc["運算速率", "值"] == "未知"


def test_the_tables_notebooks_keep_using_have_chinese_headings(zh):
    """Every column of the worksheet, the simulator's summary and request table, the waste
    table, the roofline's prediction and the planning tables has a Chinese heading for show."""
    from test_plots_zh import _bench_rows

    from labkit.costs import planning, rentbuy
    from labkit import sim
    from labkit.costs import roofline as rl
    from labkit.bench import worksheet
    from labkit.sim import experiments
    reqs = sim.poisson(12, 4.0, prompt=(5, 60), output=(2, 12), seed=1)
    run = sim.simulate(reqs, slots=2)
    rows = _bench_rows()
    speeds = planning.learner_speeds(None, rows)
    m = rl.Machine(bandwidth=1e11, flops=1e12, bandwidth_source="t", flops_source="t")
    tables = {
        "worksheet": worksheet(rows, 5.0), "summary": experiments.summarize({"a": run}),
        "requests": run.requests, "hourly": planning.hourly(run), "speeds": speeds,
        "needs": planning.service_needs(speeds, 1e5, 1e9, n_ctx_train=8192),
        "rent_or_buy": rentbuy.summary(busy_hours=100), "seed_range": rentbuy.seed_range(),
        "monthly_costs": rentbuy.monthly_costs(hours=[0, 100]),
        "predict": rl.predict(m, rl.model_cost()),
    }
    stay = {"id", "tok/s", "ms", "prompt_n", "cache_n", "prompt_ms", "predicted_ms", "n_ctx",
            "n_slots", "n_ctx_seq", "kv_unified", "timings", "max_tokens"}
    for name, table in tables.items():
        shown = i18n.show(table)
        left = [c for c in list(shown.columns) + list(shown.index.names)
                if isinstance(c, str) and c not in stay and not CJK.search(c)]
        assert left == [], (name, left)


def test_show_takes_a_series_too(zh):
    s = pd.Series([1.0, 2.0], index=pd.Index([1, 2], name="slots"), name="output_tok_s")
    shown = i18n.show(s)
    assert shown.name == "輸出 tok/s" and shown.index.name == "槽位數" and s.name == "output_tok_s"


def test_the_machines_sources_in_chinese(zh, monkeypatch):
    from labkit.costs import roofline as rl
    monkeypatch.setattr(rl, "measure_bandwidth", lambda *a, **k: 1e10)
    monkeypatch.setattr(rl, "measure_matmul", lambda *a, **k: 1e11)
    m = rl.measure_machine(keep=False)
    sources = m.table().loc["  來源", "值"].tolist()
    assert all(s.startswith("實測：") for s in sources), sources
    nvml = {"kind": "nvml-peak", "index": 0, "name": "X", "bits": 6144, "mhz": "2619"}
    assert rl.source_text(nvml).startswith("NVML 峰值，GPU 0（X）：6144 位元")
    assert rl.source_text("a figure from the datasheet") == "a figure from the datasheet"
