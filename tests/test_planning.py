"""Rent or buy with an instance that bills every hour it is up, and what a solo assistant and a
30-user chat need (labkit.costs.planning, notebook 08)."""

import pandas as pd
import pytest

from labkit.costs import planning


def test_an_always_on_instance_bills_every_hour():
    r = planning.rent_buy_compare(600, 1.0, 4, power_w=350, kwh_price=0.15)
    assert r["hours"] == {"busy per month": 120, "billed always on": 720}
    running = 120 * 0.35 * 0.15                                      # 6.30 a month of power
    assert r["monthly"] == pytest.approx({"buy": running, "rent, always on": 720,
                                          "rent, busy hours only": 120})
    even = r["break_even_months"]
    assert even["always on"] == pytest.approx(600 / (720 - running))
    assert even["busy hours only"] == pytest.approx(600 / (120 - running))
    t = r["table"]
    assert list(t.columns) == ["buy", "rent, always on", "rent, busy hours only"]
    assert t.loc[0].tolist() == [600, 0, 0] and len(t) == 25
    m = even["busy hours only"]
    lo, hi = int(m), int(m) + 1                # buying is dearer before, cheaper after
    assert t.loc[lo, "buy"] > t.loc[lo, "rent, busy hours only"]
    assert t.loc[hi, "buy"] < t.loc[hi, "rent, busy hours only"]


def test_buying_never_catches_up_when_running_costs_more_than_renting():
    r = planning.rent_buy_compare(600, 0.01, 1, power_w=350, kwh_price=0.5,
                                  serverless_per_hour=0.05)
    assert r["break_even_months"]["busy hours only"] is None
    assert r["break_even_months"]["always on"] is not None          # 7.2 a month beats 5.25


def test_break_even_range_covers_the_seeds_rents():
    t = planning.break_even_range(600, 4, power_w=0)
    assert t["rent per hour"].tolist() == [0.5, 1.0, 2.0]
    assert t["vs always on (months)"].tolist() == pytest.approx([600 / 360, 600 / 720, 600 / 1440])
    # the seed's break-even in hours of generation: 600 / 2 = 300 hours at its top rent
    assert t["vs busy hours only (months)"].iloc[-1] * 120 == pytest.approx(300)


def test_every_default_says_where_it_came_from():
    for name, (value, source) in planning.RENT_BUY_DEFAULTS.items():
        assert value > 0 and source, name
    assert planning.defaults_table()["source"].str.len().min() > 20
    f = planning.seed_factors()
    assert {"rent", "buy (run it yourself)"} <= set(f["favours"])


def _worksheet():
    return pd.DataFrame({"workload": ["short"] * 3, "kv_mode": ["split", "split", "unified"],
                         "slots": [1, 4, 4], "in_flight": [1, 4, 4],
                         "output_tok_s": [10.0, 24.0, 30.0], "errors": [0, 0, 0]})


def test_learner_speeds_from_the_worksheet_prefer_split():
    s = planning.learner_speeds(_worksheet())
    assert s.index.tolist() == [1, 4]
    assert s.loc[4, "total_tok_s"] == 24.0 and s.loc[4, "per_stream_tok_s"] == 6.0
    assert set(s["source"]) == {"notebook 05's worksheet"}


def test_learner_speeds_from_bench_rows():
    rows = pd.DataFrame({"error": [None, None], "completion_tokens": [30, 50], "wall_s": [8.0, 8.0],
                         "in_flight": [2, 2]})
    s = planning.learner_speeds(None, rows)
    assert s.loc[2, "total_tok_s"] == 10.0 and s.loc[2, "per_stream_tok_s"] == 5.0


def test_service_needs_little_law_and_memory():
    s = planning.learner_speeds(_worksheet())                  # 6 tok/s per stream at 4 slots
    needs = planning.service_needs(s, 1000, 2**20, n_ctx_train=8192)
    solo, chat = needs.loc["solo assistant"], needs.loc["30-user chat"]
    assert solo["slots"] == 2 and solo["context per slot"] == 8192
    answer = 200 / 6                                           # 33.3 s per answer
    assert chat["slots"] == -(-30 * answer // (answer + 30))   # 16 generating at once
    assert chat["kv_mib"] == pytest.approx(16 * 2048 * 1000 / 2**20)
    assert chat["memory_mib"] == pytest.approx(chat["kv_mib"] + 1)
    assert chat["machines"] == pytest.approx(16 * 6 / 24)
