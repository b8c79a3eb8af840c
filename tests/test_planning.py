"""What a solo assistant and a 30-user chat need (labkit.costs.planning, notebook 08); rent or
buy is tests/test_rentbuy.py."""

import pandas as pd
import pytest

from labkit.costs import planning


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


# ---------------------------------------------------------------------------- shared vs per sequence (issue #44)

def test_one_month_length_everywhere():
    """Notebook 08's rent or buy, the planner and the exercises' "months" share one month: 730 h."""
    from labkit.costs import rentbuy
    from labkit.exercises.quantities import UNITS
    month = next(u for u in UNITS if u.symbol == "months")
    assert planning.HOURS_PER_MONTH == rentbuy.HOURS_PER_MONTH == 730
    assert month.scale == pytest.approx(730 * 3600)


def test_slot_gain_is_one_without_a_shared_part():
    assert planning.slot_gain(0.0, 0.01, 4) == pytest.approx(1.0)
    assert planning.slot_gain(0.01, 0.0, 4) == pytest.approx(4.0)
    assert planning.slot_gain(0.01, 0.01, 4) == pytest.approx(4 * 0.02 / 0.05)


def test_decode_split_reads_only_decode_steps():
    steps = pd.DataFrame({"n_prefill_tokens": [0, 0, 0, 0, 300],
                          "n_decode": [1, 2, 4, 4, 1],
                          "dur_s": [0.013, 0.016, 0.022, 0.022, 0.9]})
    a, c = planning.decode_split(steps)
    assert a == pytest.approx(0.010, rel=0.02) and c == pytest.approx(0.003, rel=0.05)


def test_a_near_zero_shared_part_says_slots_do_not_raise_throughput():
    t = planning.split_table({"fit": (5e-6, 8.27e-3), "lockstep": (9.8e-3, 3.37e-3)})
    (fit_line, _), (lock_line, _), (vs, _) = planning.split_reading(t)
    assert "slots do not raise throughput" in fit_line and "1.00x" in fit_line
    assert "do not raise" not in lock_line and "2.26x" in lock_line
    assert "8.28 vs 13.17 ms" in vs and "differ" in vs          # both shown, the gap computed


def test_agreeing_splits_say_so():
    t = planning.split_table({"a": (0.010, 0.003), "b": (0.011, 0.0031)})
    assert "agree within 25 %" in planning.split_reading(t)[-1][0]


def test_faq_2_says_why_two_totals_are_equal():
    t = planning.split_table({"fit": (5e-6, 8.27e-3)})
    rows = pd.DataFrame({"label": ["1 slots", "4 slots"], "throughput_tok_s": [39.87, 39.88],
                         "e2e_p50": [5.7, 7.0]})
    en, zh = planning.faq_total(rows, "1 slots", "4 slots", t)
    assert "equal because" in en and "0.1% of a one-sequence step" in en
    assert "總量相同" in zh
    rows["throughput_tok_s"] = [30.0, 60.0]
    en, _ = planning.faq_total(rows, "1 slots", "4 slots", planning.split_table({"x": (0.01, 0.003)}))
    assert "equal because" not in en and "+100%" in en and "slowed" in en
