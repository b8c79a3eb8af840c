"""The decode-heavy set: its committed file is what labkit.bench.stories writes, its requests carry
their own prompt and a fixed answer length, and the worksheet labels it timing only instead of
counting its answers wrong."""

import json

import pandas as pd

from labkit.bench import load_workload, stories
from labkit.bench.grading import NOT_GRADED
from labkit.bench.runner import default_sampling, grade_rows
from labkit.bench.workload import WORKLOADS, data_dir
from labkit.bench.worksheet import worksheet


def test_the_committed_file_is_what_the_generator_writes():
    committed = json.loads((data_dir() / "workloads" / "decode_heavy.json").read_text())
    counts = {d["text"]: d["prompt_tokens"] for d in committed["documents"]}
    common = {k: committed[k] for k in ("seed", "generator", "tokenizer_model",
                                        "tokenizer_model_sha256")}
    body = stories.workload_body(lambda messages: counts[messages[-1]["content"]], common)
    assert body == committed
    assert "decode_heavy" in WORKLOADS


def test_short_prompts_long_fixed_answers_no_answer_key():
    wl = load_workload("decode_heavy")
    assert len(wl) == 12 and all(d.answer is None for d in wl.documents)
    assert all(d.prompt_tokens < 60 for d in wl.documents)
    assert wl.meta == {**wl.meta, "not_graded": NOT_GRADED, "max_tokens": stories.ANSWER_TOKENS,
                       "ignore_eos": True}
    assert "prompt" not in wl.meta
    body = default_sampling(wl).body([])
    assert body["max_tokens"] == stories.ANSWER_TOKENS and body["ignore_eos"] is True


def test_its_own_prompt_has_no_worked_example():
    wl = load_workload("decode_heavy")
    m = wl.messages(wl.documents[0])
    assert [x["role"] for x in m] == ["system", "user"]
    assert m[0]["content"] == stories.SYSTEM and m[1]["content"] == wl.documents[0].text
    assert wl.prompt.warmup_messages()[1]["content"] == stories.REQUEST.format(
        topic=stories.WARMUP_TOPIC)
    # The extraction sets keep theirs.
    assert len(load_workload("short").messages(load_workload("short").documents[0])) == 4


def test_the_worksheet_says_timing_only_not_zero_correct():
    wl = load_workload("decode_heavy").head(2)
    rows = pd.DataFrame({
        "run_id": ["r"] * 2, "round": [0] * 2, "index": [0, 1], "answer": ["Once upon", "A"],
        "error": [None, None], "completion_tokens": [200, 200], "prompt_tokens": [43, 43],
        "finish_reason": ["length"] * 2, "ttft_s": [0.2, 0.3], "completion_s": [2.0, 2.1],
        "wall_s": [4.0] * 2, "n_ctx_slot": [1024] * 2, "server": ["labkit"] * 2,
        "model_sha256": ["x"] * 2, "kv_mode": ["split"] * 2, "pool_n_ctx": [4096] * 2,
        "slots": [4] * 2, "in_flight": [4] * 2, "load": ["closed"] * 2,
        "workload": ["decode_heavy"] * 2, "cache_prompt": [False] * 2})
    rows = grade_rows(rows, {i: d.answer for i, d in enumerate(wl.documents)},
                      wl.meta["not_graded"])
    line = worksheet(rows).iloc[0]
    assert line["correct"] == NOT_GRADED == "not graded (timing only)"
    assert line["verdict"].startswith("pass (fits context and TTFT only")
