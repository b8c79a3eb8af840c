"""labkit.bench.reading: the sentences under a worksheet are computed from its numbers, and a
reading that does not fit them is refused by these checks."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from labkit.bench import reading
from labkit.lang.choice import use_language


def _ws(lines):
    """A worksheet of (workload, slots, tok/s, ttft p50, completion p50, errors) lines."""
    return pd.DataFrame([{
        "server": "labkit 0.1.0", "workload": w, "load": "closed", "cache_prompt": False,
        "kv_mode": "split", "slots": n, "output_tok_s": tok, "ttft_p50_s": ttft,
        "completion_p50_s": done, "errors": err,
        "verdict": "pass" if not err else "fail: fits context"}
        for w, n, tok, ttft, done, err in lines])


def _rows(timings):
    """Request rows whose server clock is (workload, slots, prompt_ms, predicted_ms, predicted_n),
    one request each."""
    return pd.DataFrame([{
        "server": "labkit 0.1.0", "workload": w, "load": "closed", "cache_prompt": False,
        "kv_mode": "split", "slots": n, "error": None, "prompt_ms": p, "predicted_ms": d,
        "predicted_n": k} for w, n, p, d, k in timings])


@pytest.fixture(autouse=True)
def english():
    use_language("en")
    yield
    use_language("en")


def test_prompt_heavy_workload_reads_as_flat_with_its_ceiling():
    ws = _ws([("short", 1, 25.2, 1.0, 1.5, 0), ("short", 4, 26.4, 2.9, 5.8, 0)])
    rows = _rows([("short", 1, 700, 300, 30), ("short", 4, 700, 1800, 30)])
    r = reading.read(ws, rows)
    four = r[r["slots"] == 4].iloc[0]
    assert four["tok_s_vs_1"] == pytest.approx(26.4 / 25.2)
    assert four["ttft_p50_vs_1"] == pytest.approx(2.9)
    assert four["prompt_share_1"] == pytest.approx(0.7)
    assert four["ceiling"] == pytest.approx(1 / (0.7 + 0.3 / 4))
    text = "\n".join(reading.sentences(r))
    assert "x1.05 the tokens/s of 1 slot (+5 %), TTFT p50 x2.90 (1.00 s -> 2.90 s)" in text
    assert "70% of the server's time went to reading prompts" in text
    assert "at most x1.29" in text
    assert "slots barely change the total tokens/s (+5 % at 4 slots)" in text
    assert "slots pay" not in text


def test_decode_heavy_workload_that_pays_says_so_and_why():
    ws = _ws([("stories", 1, 60.0, 0.3, 3.0, 0), ("stories", 4, 150.0, 0.9, 4.8, 0)])
    # 10 % prompts at 1 slot; a token every 10 ms alone, every 13 ms beside three others.
    rows = _rows([("stories", 1, 100, 900, 90), ("stories", 4, 100, 1170, 90)])
    r = reading.read(ws, rows)
    four = r[r["slots"] == 4].iloc[0]
    assert four["token_interval_vs_1"] == pytest.approx(1.3)
    assert four["explained"] == pytest.approx(1 / (0.1 + 0.9 * 1.3 / 4))
    assert reading.pace_of(four["token_interval_vs_1"], 4) == "bandwidth"
    text = "\n".join(reading.sentences(r))
    assert "slots pay: 4 slots raised the total tokens/s by 150 %" in text
    assert "reading the weights sets the pace" in text
    assert f"explain x{four['explained']:.2f}; measured x2.50" in text


def test_compute_bound_decode_is_named_as_such():
    ws = _ws([("stories", 1, 60.0, 0.3, 3.0, 0), ("stories", 4, 70.0, 1.0, 10.0, 0)])
    rows = _rows([("stories", 1, 100, 900, 90), ("stories", 4, 100, 3300, 90)])
    text = "\n".join(reading.sentences(reading.read(ws, rows)))
    assert "arithmetic, not memory bandwidth, sets a decode step's pace" in text
    assert "reading the weights sets the pace" not in text
    assert "slots pay: 4 slots raised the total tokens/s by 17 %" in text


@pytest.mark.parametrize("gain, word", [(1.15, "pays"), (1.149, "flat"), (0.951, "flat"),
                                        (0.95, "lowers"), (math.nan, "unknown")])
def test_thresholds(gain, word):
    assert reading.verdict_of(gain) == word


def test_a_failed_configuration_has_no_throughput_reading():
    ws = _ws([("long", 1, 20.0, 3.0, 5.0, 0), ("long", 4, math.nan, 6.0, 9.0, 12)])
    text = "\n".join(reading.sentences(reading.read(ws, _rows([]))))
    assert "long, 4 slots (split): 12 request(s) failed, so its tokens/s is not a result" in text
    assert "x" not in text.split("failed")[0].split(":")[-1]
    assert "This run" not in text and "Why" not in text


def test_a_failure_without_a_one_slot_run_is_still_said():
    ws = _ws([("long", 4, math.nan, 6.0, 9.0, 1)])
    assert reading.sentences(reading.read(ws))[0].startswith(
        "labkit 0.1.0, long, 4 slots (split): 1 request(s) failed")


def test_a_server_without_timings_gets_no_reason_but_its_figures():
    ws = _ws([("short", 1, 20.0, 1.0, 2.0, 0), ("short", 2, 30.0, 1.5, 2.5, 0)])
    text = "\n".join(reading.sentences(reading.read(ws, None)))
    assert "Why" not in text
    assert "slots pay: 2 slots raised the total tokens/s by 50 %" in text


def test_every_ratio_printed_is_the_tables():
    """Each 'xN.NN' in a configuration's sentence is one of that line's ratios, rounded: a
    sentence with a figure the table does not hold fails here."""
    ws = _ws([("short", 1, 25.2, 1.0, 1.5, 0), ("short", 2, 25.5, 1.2, 2.7, 0),
              ("short", 4, 26.4, 2.9, 5.8, 0)])
    rows = _rows([("short", 1, 700, 300, 30), ("short", 2, 700, 700, 30),
                  ("short", 4, 700, 1800, 30)])
    r = reading.read(ws, rows)
    lines = reading.sentences(r)
    for _, row in r[r["slots"] > 1].iterrows():
        line = next(x for x in lines if f"{row['slots']} slots (split):" in x)
        printed = [float(v) for v in re.findall(r"x(\d+\.\d\d)", line)]
        held = [round(row[k], 2) for k in ("tok_s_vs_1", "ttft_p50_vs_1", "completion_p50_vs_1")]
        assert printed == held
    # and the check can say no: a line with a made-up figure is caught
    forged = lines[0].replace("x1.01", "x1.50")
    assert [float(v) for v in re.findall(r"x(\d+\.\d\d)", forged)][0] != round(
        r.iloc[1]["tok_s_vs_1"], 2)


def test_chinese_reading_has_no_english_words():
    ws = _ws([("short", 1, 25.2, 1.0, 1.5, 0), ("short", 4, 26.4, 2.9, 5.8, 0)])
    rows = _rows([("short", 1, 700, 300, 30), ("short", 4, 700, 1800, 30)])
    use_language("zh-TW")
    text = reading.reading_markdown(ws, rows)
    assert "這次的結果說明了什麼" in text and "槽位幾乎沒有改變總 tokens/s" in text
    words = set(re.findall(r"[A-Za-z]{3,}", text.replace("decode_heavy", ""))) - {
        "labkit", "short", "tokens", "token", "roofline", "TTFT"}
    assert not words


def test_markdown_is_empty_without_a_baseline_or_more_slots():
    assert reading.reading_markdown(_ws([("short", 1, 25.2, 1.0, 1.5, 0)])) == ""


def test_a_table_without_the_benchs_columns_reads_as_nothing():
    ws = pd.DataFrame({"server": ["labkit"], "errors": [0]})
    assert reading.read(ws).empty and reading.reading_markdown(ws) == ""
    # ...and one that has them is read (the guard is not what makes the case above pass)
    full = _ws([("short", 1, 25.2, 1.0, 1.5, 0), ("short", 4, 26.4, 2.9, 5.8, 0)])
    assert len(reading.read(full)) == 2


def test_the_seeds_remedy_follows_the_gate_that_failed():
    ws = _ws([("long", 1, 20.0, 1.0, 2.0, 0), ("long", 4, float("nan"), 1.0, 2.0, 3)])
    ws["fits_context"] = [True, False]
    ws["ttft_ok"] = [True, True]
    text = "\n".join(reading.sentences(reading.read(ws)))
    assert "fewer requests in flight" in text and "long prompts" not in text
    unified = ws.assign(kv_mode="unified")
    text = "\n".join(reading.sentences(reading.read(unified)))
    assert "the pool is already shared" in text and "or unified KV" not in text
    ws["fits_context"] = [True, True]
    ws["ttft_ok"] = [True, False]
    ws["errors"] = [0, 0]
    ws["output_tok_s"] = [20.0, 22.0]
    ws["verdict"] = ["pass", "fail: TTFT ok"]
    text = "\n".join(reading.sentences(reading.read(ws)))
    assert "long prompts" in text and "fewer requests in flight" not in text
    ws["ttft_ok"] = [True, True]
    ws["all_correct"] = ["not graded", "not graded"]
    text = "\n".join(reading.sentences(reading.read(ws)))
    assert "What to try" not in text          # every gate passed: no advice


def test_gains_plot_draws_each_line_and_its_ceiling():
    import matplotlib
    matplotlib.use("Agg")
    ws = _ws([("short", 1, 20.0, 1.0, 2.0, 0), ("short", 2, 24.0, 1.3, 2.6, 0),
              ("short", 4, 26.0, 2.0, 4.0, 0)])
    rows = _rows([("short", 1, 600, 400, 20), ("short", 2, 600, 700, 20), ("short", 4, 600, 1500, 20)])
    from labkit.bench import plots
    ax = plots.gains(reading.read(ws, rows))
    solid, dotted = ax.lines[0], ax.lines[1]
    assert list(solid.get_ydata()) == pytest.approx([1.0, 1.2, 1.3])
    assert list(dotted.get_ydata()) == pytest.approx([1.0, 1 / (0.6 + 0.4 / 2), 1 / (0.6 + 0.4 / 4)])


def _rates(one, many, slowest):
    rows = [{"workload": "short", "kv_mode": "split", "slots": 1, "round": 0,
             "server_decode_tok_s": one}] * 2
    rows += [{"workload": "short", "kv_mode": "split", "slots": 4, "round": 0,
              "server_decode_tok_s": v} for v in (slowest, many, many, many)]
    return pd.DataFrame(rows)


def test_decode_speeds_read_the_step_total_and_the_outlier():
    lines = reading.decode_speeds(_rates(100.0, 36.8, 12.9))
    assert lines[0] == ("short, split: a request decoded at 36.8 tok/s with 4 slots against 100.0 "
                        "alone (x0.37); 4 decoding at once make 147.2 tok/s in all, x1.47 of one "
                        "alone.")
    assert "x0.35 of the median" in lines[1] and "overlapped" in lines[1]
    calm = reading.decode_speeds(_rates(100.0, 36.8, 35.0))
    assert "No request" in calm[1] and "overlapped" not in calm[1]


def test_a_failure_says_the_servers_words():
    ws = _ws([("long", 1, 20.0, 3.0, 5.0, 0), ("long", 2, math.nan, 6.0, 9.0, 3)])
    err = ('RuntimeError: {"code": 500, "message": "Context size has been exceeded.", '
           '"type": "server_error"}')
    rows = _rows([("long", 1, 900, 100, 10)] + [("long", 2, 900, 100, 10)] * 3)
    rows.loc[1:, "error"] = [err, err, "HTTP 500: boom"]
    text = "\n".join(reading.sentences(reading.read(ws, rows)))
    assert ("long, 2 slots (split): 3 request(s) failed (2 of them: 'HTTP 500 Context size has "
            "been exceeded.')") in text
    rows.loc[3, "error"] = err
    text = "\n".join(reading.sentences(reading.read(ws, rows)))
    assert "failed ('HTTP 500 Context size has been exceeded.')" in text


def test_a_baseline_that_fails_its_gates_is_said():
    ws = _ws([("long", 1, 20.0, 3.0, 5.0, 0), ("long", 2, 22.0, 6.0, 9.0, 0)])
    ws["verdict"] = ["fail: TTFT ok, all correct", "pass"]
    ws["ttft_ok"], ws["all_correct"] = [False, True], [False, True]
    ws["ttft_max_s"], ws["correct"], ws["n_requests"] = [10.9, 4.0], [0, 12], [12, 12]
    text = "\n".join(reading.sentences(reading.read(ws)))
    assert ("long, 1 slot (split): the baseline itself fails (its slowest first token came after "
            "10.9 s; 0 of 12 answers graded correct): fail: TTFT ok, all correct.") in text
    ws["verdict"], ws["ttft_ok"], ws["all_correct"] = ["pass"] * 2, [True] * 2, [True] * 2
    assert "baseline itself" not in "\n".join(reading.sentences(reading.read(ws)))


def test_one_token_requests_have_no_token_interval():
    ws = _ws([("long", 1, 20.0, 3.0, 5.0, 0), ("long", 2, 21.0, 6.0, 9.0, 0)])
    # at 2 slots every request made one token: 0.001 ms "between" tokens is no interval
    r = reading.read(ws, _rows([("long", 1, 900, 100, 10), ("long", 2, 900, 0.001, 1)]))
    assert math.isnan(r.iloc[1]["token_interval_vs_1"])


def test_the_why_line_reads_the_same_kv_mode_whatever_the_order():
    lines = [("short", 1, 25.0, 1.0, 1.5, 0), ("short", 4, 26.0, 2.9, 5.8, 0)]
    ws = pd.concat([_ws(lines), _ws(lines).assign(kv_mode="unified")], ignore_index=True)
    ws.loc[3, "output_tok_s"] = 27.0                          # unified gains more
    for order in (ws, ws.iloc[::-1].reset_index(drop=True)):
        text = "\n".join(reading.sentences(reading.read(order)))
        assert "This run (labkit 0.1.0, short, unified KV): slots barely change the total " \
               "tokens/s (+8 % at 4 slots)" in text
    ws.loc[1, "output_tok_s"] = 27.0                          # a tie: the first mode by name
    text = "\n".join(reading.sentences(reading.read(ws.iloc[::-1].reset_index(drop=True))))
    assert "This run (labkit 0.1.0, short, split KV)" in text


def test_decode_rates_below_one_alone_say_what_the_span_holds():
    low = reading.decode_speeds(_rates(100.0, 18.0, 17.0))
    assert "x0.72 of one alone. Fewer than one alone" in low[0] and "neighbours' prompts" in low[0]
    assert "Fewer than one" not in reading.decode_speeds(_rates(100.0, 36.8, 35.0))[0]


def test_the_failures_table_gives_each_configurations_count_and_most_said_error():
    err = ('RuntimeError: {"code": 500, "message": "Context size has been exceeded.", '
           '"type": "server_error"}')
    rows = _rows([("long", 2, 900, 100, 10)] * 4)
    rows["error"] = [err, err, "HTTP 500: boom", None]
    assert reading.failures(rows).to_dict("records") == [{
        "server": "labkit 0.1.0", "workload": "long", "kv_mode": "split", "slots": 2,
        "failed": 3, "error": "HTTP 500 Context size has been exceeded."}]
    rows["error"] = None                                  # nothing failed: no line
    assert reading.failures(rows).empty
