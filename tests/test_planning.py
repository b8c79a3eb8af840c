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
