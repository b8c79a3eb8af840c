"""Timing-only runs on synthetic models: fixed-length workloads, no grading, two gates."""

import math

import pandas as pd
import pytest

from labkit.bench import load_workload, timing
from labkit.bench.timing import NOT_GRADED
from labkit.bench.runner import default_sampling, grade_rows
from labkit.bench.worksheet import run_summary, worksheet


def test_fixed_length_repeats_the_documents_up_to_the_slots_and_drops_the_answers():
    wl = load_workload("short").head(3)
    fixed = timing.fixed_length(wl, n_requests=8, max_tokens=35)
    assert len(fixed) == 8
    assert [d.id for d in fixed.documents][:5] == ["DEMO-01", "DEMO-02", "DEMO-03",
                                                   "DEMO-01#2", "DEMO-02#2"]
    assert [d.text for d in fixed.documents][3:6] == [d.text for d in wl.documents]
    assert all(d.answer is None for d in fixed.documents)
    assert fixed.meta["not_graded"] == NOT_GRADED and fixed.meta["max_tokens"] == 35
    assert len(timing.fixed_length(load_workload("short"), 4, 35)) == 12   # never fewer


def test_timing_workloads_are_sent_with_their_answer_length_and_ignore_eos():
    fixed = timing.fixed_length(load_workload("short"), 16, 35)
    body = default_sampling(fixed).body([{"role": "user", "content": "x"}])
    assert body["max_tokens"] == 35 and body["ignore_eos"] is True
    assert body["temperature"] == 0 and body["cache_prompt"] is False
    plain = default_sampling(load_workload("short")).body([])
    assert plain["max_tokens"] == 64 and "ignore_eos" not in plain


def _rows(graded: bool, ttft=(0.5, 0.7), reason=NOT_GRADED) -> pd.DataFrame:
    n = len(ttft)
    df = pd.DataFrame({
        "run_id": "r", "round": 0, "server": "labkit", "model_sha256": "x", "kv_mode": "split",
        "pool_n_ctx": 4096, "slots": 2, "n_ctx_slot": 2048, "in_flight": 2, "load": "closed",
        "workload": "short", "cache_prompt": False, "wall_s": 2.0, "peak_memory_bytes": 2**20,
        "memory_label": "rss", "index": range(n), "answer": "zq wv", "error": None,
        "completion_tokens": 35, "prompt_tokens": 180, "finish_reason": "length",
        "ttft_s": list(ttft), "completion_s": 1.5})
    answers = {i: {"id": "DEMO-01"} for i in range(n)} if graded else {}
    return grade_rows(df, answers, "no answer key" if graded else reason)


@pytest.mark.parametrize("reason", [NOT_GRADED, "not graded (timing only)"])
def test_ungraded_runs_say_why_and_pass_on_context_and_ttft(reason):
    line = worksheet(_rows(graded=False, reason=reason)).iloc[0]
    assert line["correct"] == reason and line["all_correct"] == reason
    assert line["verdict"] == "pass (fits context and TTFT only: answers not graded)"
    assert line["output_tok_s"] == 35.0 and line["fits_context"] and line["ttft_ok"]
    slow = worksheet(_rows(graded=False, ttft=(0.5, 12.0)), ttft_threshold_s=10).iloc[0]
    assert slow["verdict"] == "fail: TTFT ok (fits context and TTFT only: answers not graded)"
    assert run_summary(_rows(graded=False))["correct"].tolist() == [NOT_GRADED]


def test_graded_runs_keep_their_three_gates():
    line = worksheet(_rows(graded=True)).iloc[0]
    assert line["correct"] == 0 and not line["all_correct"]
    assert line["verdict"] == "fail: all correct"
    assert not math.isnan(line["ttft_p50_s"])


@pytest.mark.slow
def test_bench_on_a_synthetic_1b_is_timing_only_end_to_end(tmp_path, capsys):
    from labkit.bench.cli import main
    code = main(["--model", "synthetic:llama-3.2-1b", "--slots", "1", "4", "--rounds", "1",
                 "--threads", "1", "--no-progress", "--out", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert "timing only, 4 requests per run, answers of 35 tokens, not graded" in out.err
    folder = next(tmp_path.iterdir())
    ws = pd.read_csv(folder / "worksheet.csv")
    assert ws["slots"].tolist() == [1, 4]
    assert (ws["correct"] == NOT_GRADED).all() and (ws["all_correct"] == NOT_GRADED).all()
    assert ws["verdict"].str.endswith("(fits context and TTFT only: answers not graded)").all()
    assert (ws["n_requests"] == 4).all() and (ws["errors"] == 0).all()
    rows = pd.read_csv(folder / "requests.csv")
    assert (rows["completion_tokens"] == 35).all() and (rows["grade_reason"] == NOT_GRADED).all()
    assert rows["prompt_tokens"].between(170, 190).all()     # the short set's real prompts
    assert rows["doc_id"].tolist()[:4] == ["DEMO-01", "DEMO-02", "DEMO-01#2", "DEMO-02#2"]
    print("\n" + (folder / "worksheet.md").read_text())
