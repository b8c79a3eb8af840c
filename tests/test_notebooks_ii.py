"""The helpers notebooks 05-08 call: saturation signals, the load panel, the bounded-queue burst."""

from dataclasses import replace

import pandas as pd
import pytest

from labkit import notebook
from labkit.lessons import widgets


def _sweep():
    # Hand-made sweep rows: TTFT flat, then climbing with a queue.
    return pd.DataFrame({
        "label": ["x"] * 4, "rate": [1.0, 2.0, 3.0, 4.0],
        "throughput_tok_s": [100, 190, 240, 250], "ttft_p50": [0.1, 0.15, 0.5, 3.0],
        "ttft_p99": [0.2, 0.3, 2.0, 9.0], "peak_queue": [0, 1, 5, 30],
        "tpot_p50": [0.01, 0.011, 0.0125, 0.0125], "preemptions": [0, 0, 0, 2]})


def test_saturation_signals_flag_the_knee():
    s = notebook.saturation_signals(_sweep())
    assert s["saturated"].tolist() == [False, False, True, True]
    assert s["per_stream_tok_s"].iloc[0] == pytest.approx(100)
    assert notebook.first_saturated_rate(s) == 3.0
    flat = _sweep().assign(ttft_p50=0.1)
    assert notebook.first_saturated_rate(notebook.saturation_signals(flat)) is None


def test_saturation_signals_carry_the_batch_and_the_kv_use():
    rows = _sweep().assign(mean_decode_batch=[1.5, 3.0, 3.9, 4.0], peak_kv=[500, 1500, 3072, 3072],
                           kv_capacity=[3072, 3072, 3072, float("inf")])
    s = notebook.saturation_signals(rows)
    assert s["mean_decode_batch"].tolist() == [1.5, 3.0, 3.9, 4.0]
    assert s["kv_use"].iloc[2] == pytest.approx(1.0) and s["kv_use"].iloc[0] == pytest.approx(500 / 3072)
    assert pd.isna(s["kv_use"].iloc[3])                       # an unlimited pool has no share in use
    # a sweep without them keeps the columns, empty: the table never claims a figure it lacks
    assert notebook.saturation_signals(_sweep())[["mean_decode_batch", "kv_use"]].isna().all().all()


def test_load_panel_updates_without_a_browser():
    p = widgets.load_panel(rate=0.5, slots=4)
    quiet = p.result["summary"]
    assert p.figure.axes[0].get_title().startswith("0.5 req/s, 4 slots, fifo: ")
    p.update(rate=4.0)
    busy = p.result["summary"]
    assert busy["ttft_p50"] > quiet["ttft_p50"] and busy["peak_queue"] > quiet["peak_queue"]
    # The figure is redrawn from the new run: its title quotes the run's numbers, the queue
    # panel peaks at the run's peak queue, the KV panel has one point per engine step.
    queue_ax, kv_ax = p.figure.axes
    title = queue_ax.get_title()
    assert title.startswith("4 req/s, 4 slots, fifo: ")
    assert f"TTFT p50 {busy['ttft_p50']:.2f} s" in title
    assert title.endswith(f"peak queue {busy['peak_queue']}")
    assert max(queue_ax.lines[0].get_ydata()) == busy["peak_queue"]
    assert len(kv_ax.lines[0].get_xdata()) == len(p.result["run"].steps)
    with pytest.raises(ValueError):
        p.update(policy="random")


@pytest.mark.slow
def test_queue_burst_refuses_past_the_bound():
    from labkit.engine import EngineConfig
    from labkit.models.files import default_model_path
    cfg = EngineConfig(default_model_path(), n_ctx=512, n_slots=1)
    bounded = notebook.queue_burst(replace(cfg, max_queue=2), "Hi.", 6, 4)
    assert (bounded["outcome"] == "refused").sum() == 6 - 1 - 2
    assert (bounded.loc[bounded.outcome == "served", "generated"] == 4).all()
    deep = notebook.queue_burst(cfg, "Hi.", 4, 4)
    assert (deep["outcome"] == "served").all()
    assert deep["answer_s"].is_monotonic_increasing


def test_gates_panel_follows_the_threshold():
    rows = pd.DataFrame({
        "run_id": ["a"] * 2, "round": [0, 0], "server": ["labkit"] * 2, "model_sha256": ["x"] * 2,
        "kv_mode": ["split"] * 2, "pool_n_ctx": [4096] * 2, "slots": [1] * 2,
        "n_ctx_slot": [4096] * 2, "in_flight": [1] * 2, "load": ["closed"] * 2,
        "workload": ["short"] * 2, "cache_prompt": [False] * 2, "wall_s": [4.0] * 2,
        "peak_memory_bytes": [2**28] * 2, "memory_label": ["rss"] * 2,
        "error": [None, None], "finish_reason": ["stop"] * 2, "prompt_tokens": [100, 100],
        "completion_tokens": [20, 20], "ttft_s": [0.5, 1.5], "completion_s": [1.0, 2.0],
        "correct": [True, True]})
    p = widgets.gates_panel(rows, ttft_threshold_s=10)
    assert p.result["verdict"].tolist() == ["pass"]
    p.update(ttft_threshold_s=1.0)
    assert p.result["verdict"].tolist() == ["fail: TTFT ok"]


def test_rent_buy_panel_crossover():
    from labkit.costs import rentbuy
    own, rent = rentbuy.seed_case(card_price=600, rent_per_hour=2.0)    # the seed's card alone
    p = widgets.rent_buy_panel(own, rent, busy_hours=10)
    assert p.result.loc["stopped when idle", "crossover h/month"] == pytest.approx(600 / 36 / 2)
    p.update(years=1.0)
    assert p.result.loc["stopped when idle", "crossover h/month"] == pytest.approx(600 / 12 / 2)
    assert p.result.loc["always on", "USD/month at your hours"] == pytest.approx(2 * 730)


def test_day_of_traffic_follows_the_profile():
    from labkit import sim
    day = notebook.day_of_traffic(0.5, profile=(0.0, 1.0, 0.2), prompt=50, output=10)
    hours = pd.Series([int(r.arrival // 3600) for r in day]).value_counts()
    # n = rate x 3600 arrivals are drawn per hour; those past the hour's end are dropped
    assert 0 not in hours.index and 1700 <= hours[1] <= 1800 and 320 <= hours[2] <= 360
    res = sim.simulate(day, slots=2, cost=sim.StepCost(0.01, 0.0, 0.001, 0.0))
    h = notebook.hourly(res)
    assert h["requests"].to_dict() == hours.sort_index().to_dict()


def test_hourly_reports_the_deepest_queue_of_each_hour():
    from labkit import sim

    def burst(hour, n):               # n requests at ten seconds past the hour
        return [sim.Request(f"{hour}-{i}", hour * 3600 + 10.0, 20, 5) for i in range(n)]
    res = sim.simulate(burst(0, 5) + burst(1, 1) + burst(3, 3), slots=1,
                       cost=sim.StepCost(0.01, 0.0, 0.001, 0.0))
    h = notebook.hourly(res)
    # One slot: a burst of n leaves n - 1 waiting; a request alone waits for nothing; an
    # hour without requests has no row.
    assert h.index.tolist() == [0, 1, 3]
    assert h["requests"].tolist() == [5, 1, 3]
    assert h["max_queue"].tolist() == [4, 0, 2]


def test_replay_and_prediction_error():
    from labkit import sim
    rows = pd.DataFrame({"error": [None, None, "HTTP 400"], "prompt_tokens": [100, 100, 5000],
                         "completion_tokens": [10, 10, 0]})
    res = notebook.replay(rows, sim.StepCost(0.01, 0.0, 0.0, 0.0), slots=2)
    assert len(res.requests) == 2                      # the refused request is not replayed
    # one prefill step for both, then 9 decode steps: 10 steps of 0.01 s
    assert res.steps["dur_s"].sum() == pytest.approx(0.1)
    e = notebook.prediction_error({"x": 12.0}, {"x": 10.0})
    assert e.loc["x", "error"] == pytest.approx(-1 / 6)
