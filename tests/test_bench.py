"""labkit.bench without a server: grading, the workload files, arrivals, the worksheet's
arithmetic on hand-made rows, error rows, Markdown, plots."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from labkit import bench
from labkit.bench import grade
from labkit.bench.client import Sampling, poisson_arrivals, send_all, RequestSpec
from labkit.bench.runner import finish_rows, grade_rows
from labkit.bench.workload import answer_key, load_workload

KEY = {"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"}


# ------------------------------------------------------------------ grading

def test_grade_right():
    assert grade('{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"}', KEY) == (True, "correct")
    assert grade('\n {"deadline":"2026-12-01","owner":"Lin","id":"DEMO-01"}  ', KEY).ok


@pytest.mark.parametrize("answer,reason", [
    ('{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-02"}',
     'wrong deadline: got "2026-12-02", expected "2026-12-01"'),
    ('{"id": "DEMO-01", "owner": " Lin", "deadline": "2026-12-01"}', "wrong owner"),
    ('{"id": "demo-01", "owner": "Lin", "deadline": "2026-12-01"}', "wrong id"),
    ('{"id": "DEMO-01", "owner": "Lin", "deadline": 20261201}', "wrong deadline"),
    ('{"id": "DEMO-01", "owner": "Lin"}', "missing deadline"),
    ('{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01", "note": "x"}', "extra note"),
    ('{"id": "DEMO-01", "owner": "Lin", "due": "2026-12-01"}', "missing deadline; extra due"),
    ('```json\n{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"}\n```', "not JSON"),
    ('{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"', "not JSON"),
    ('{"id": "DEMO-01"} trailing words', "not JSON"),
    ('[1, 2]', "not a JSON object: got list"),
    ('"DEMO-01"', "not a JSON object: got str"),
    ("", "empty answer"),
    ("   \n", "empty answer"),
    (None, "empty answer"),
])
def test_grade_wrong_malformed_and_extra(answer, reason):
    g = grade(answer, KEY)
    assert not g.ok and g.reason.startswith(reason), g


def test_grade_failed_request_is_a_fail_with_the_error():
    g = grade('{"id": "DEMO-01", "owner": "Lin", "deadline": "2026-12-01"}', KEY,
              error="HTTP 400: too long")
    assert not g.ok and g.reason == "request failed: HTTP 400: too long"


# ------------------------------------------------------------------ the committed data

def test_committed_workloads_match_the_answer_key():
    key = answer_key()
    assert len({a["id"] for a in key}) == len({a["owner"] for a in key}) == \
        len({a["deadline"] for a in key}) == 12
    short, long_ = load_workload("short"), load_workload("long")
    shared = load_workload("shared_prefix")
    assert [d.answer for d in short.documents] == key == [d.answer for d in long_.documents]
    assert [d.text for d in shared.documents] == [d.text for d in short.documents]
    for d in short.documents + long_.documents:
        for k, v in d.answer.items():
            assert f"{k}: {v}\n" in d.text      # the answer stays findable, verbatim
    target = long_.meta["target_prompt_tokens"]
    assert all(target - 8 <= d.prompt_tokens <= target for d in long_.documents)
    assert all(d.prompt_tokens < 300 for d in short.documents)
    over = load_workload("overlong")
    assert len(over) == 1 and over.documents[0].prompt_tokens > 4096
    assert shared.system_preamble and all(d.prompt_tokens > 600 for d in shared.documents)


def test_messages_are_system_example_then_document():
    wl = load_workload("short")
    m = wl.messages(wl.documents[0])
    assert [x["role"] for x in m] == ["system", "user", "assistant", "user"]
    assert json.loads(m[2]["content"]) == wl.prompt.example_answer
    assert m[3]["content"] == wl.documents[0].text
    assert wl.prompt.example_answer not in [d.answer for d in wl.documents]
    shared = load_workload("shared_prefix")
    ms = shared.messages(shared.documents[0])
    assert ms[0]["content"].startswith(shared.system_preamble)
    assert ms[0]["content"].endswith(wl.prompt.system)
    assert len(wl.head(3)) == 3


def test_generation_is_deterministic_for_a_given_tokenizer(tmp_path):
    """Same seed and tokenizer, same files (a fake tokenizer stands in for the model's)."""
    from labkit.bench import workload as W
    import random
    count = lambda text: len(text.split())  # noqa: E731
    a = W.long_text("id: X-1", random.Random(5), count, 300)
    b = W.long_text("id: X-1", random.Random(5), count, 300)
    assert a == b and count(a) <= 300 and count(a) >= 290
    assert W.answer_key(1) == W.answer_key(1) != W.answer_key(2)


# ------------------------------------------------------------------ arrivals and client

def test_poisson_arrivals():
    t = poisson_arrivals(2000, rate=4.0, seed=1)
    assert t[0] == 0 and t == sorted(t) and t == poisson_arrivals(2000, 4.0, seed=1)
    assert abs(len(t) / t[-1] - 4.0) < 0.4
    b = poisson_arrivals(9, rate=2.0, burst=3, seed=1)
    assert b[0] == b[1] == b[2] < b[3] == b[4] == b[5]
    with pytest.raises(ValueError):
        poisson_arrivals(3, 0)


def test_sampling_body_follows_the_seed():
    b = Sampling().body([{"role": "user", "content": "x"}])
    assert b["stream"] and b["stream_options"] == {"include_usage": True}
    assert b["temperature"] == 0 and b["seed"] == 42 and b["cache_prompt"] is False


def test_a_dead_server_gives_error_rows_not_exceptions():
    from labkit.server.launch import free_port
    url = f"http://127.0.0.1:{free_port()}"
    specs = [RequestSpec(i, f"D{i}", [{"role": "user", "content": "x"}], KEY) for i in range(3)]
    raw, wall = send_all(url, specs, Sampling(), in_flight=2)
    rows = grade_rows(finish_rows(raw), {s.index: s.answer for s in specs})
    assert len(rows) == 3 and rows["error"].str.contains("ConnectError").all()
    assert not rows["correct"].any() and rows["grade_reason"].str.startswith("request failed").all()
    assert rows["ttft_s"].isna().all() and (rows["completion_s"] >= 0).all()


# ------------------------------------------------------------------ worksheet arithmetic

def fake_rows(rounds, kv="split", slots=2, errors=(), wrong=(), refused=(), wall=None):
    """Hand-made rows: 4 requests per round; request i has ttft i+1 s, completion 2(i+1) s,
    10(i+1) completion tokens; wall 10 s (or per round)."""
    out = []
    for r in range(rounds):
        for i in range(4):
            err = None
            if (r, i) in errors:
                err = "HTTP 500: boom"
            if (r, i) in refused:
                err = ("HTTP 400: request (5000 tokens) exceeds the available context size "
                       "(2048 tokens), try increasing it (exceed_context_size_error)")
            out.append({
                "run_id": f"{kv}-{slots}-r{r}", "round": r, "server": "labkit 0.1.0",
                "model_sha256": "abc", "kv_mode": kv, "pool_n_ctx": 4096, "slots": slots,
                "n_ctx_slot": 2048, "in_flight": slots, "load": "closed", "workload": "short",
                "cache_prompt": False, "wall_s": (wall or [10.0] * rounds)[r],
                "peak_memory_bytes": 100 * 2**20 * (r + 1), "memory_label": "rss",
                "index": i, "doc_id": f"D{i}", "scheduled_s": 0.0, "send_s": 0.0,
                "first_chunk_s": None if err else i + 1.0,
                "first_token_s": None if err else i + 1.0, "end_s": 2.0 * (i + 1),
                "error": err, "answer": "", "finish_reason": None if err else "stop",
                "prompt_tokens": None if err else 100,
                "completion_tokens": None if err else 10 * (i + 1),
                "ttft_s": None if err else i + 1.0, "completion_s": 2.0 * (i + 1),
                "correct": not err and (r, i) not in wrong,
                "prompt_ms": 500.0, "predicted_ms": 1000.0 * (i + 1),
            })
    return pd.DataFrame(out)


def test_worksheet_arithmetic_on_known_inputs():
    rows = fake_rows(3, wall=[10.0, 8.0, 20.0])
    runs = bench.run_summary(rows)
    assert list(runs["output_tok_s"]) == [10.0, 12.5, 5.0]     # (10+20+30+40) / wall
    r0 = runs.iloc[0]
    assert r0["ttft_p50_s"] == 2.5 and r0["ttft_max_s"] == 4.0
    assert r0["ttft_p90_s"] == pytest.approx(np.percentile([1, 2, 3, 4], 90)) == 3.7
    assert r0["completion_p50_s"] == 5.0 and r0["completion_max_s"] == 8.0
    assert r0["errors"] == 0 and r0["correct"] == 4 and r0["sampled_peak_mib"] == 100
    ws = bench.worksheet(rows, ttft_threshold_s=5)
    assert len(ws) == 1
    line = ws.iloc[0]
    assert line["rounds"] == 3 and line["wall_s"] == 10.0 and line["output_tok_s"] == 10.0
    assert line["sampled_peak_mib"] == 200.0
    assert line["output_tok_s_rounds"] == "10.0 / 12.5 / 5.0"
    assert line["fits_context"] and line["ttft_ok"] and line["all_correct"]
    assert line["verdict"] == "pass"
    assert bench.worksheet(rows, ttft_threshold_s=3.5).iloc[0]["verdict"] == "fail: TTFT ok"


def test_errors_blank_the_throughput_and_fail_the_gates():
    rows = fake_rows(2, errors={(0, 3)}, wrong={(1, 0)})
    runs = bench.run_summary(rows)
    assert math.isnan(runs.iloc[0]["output_tok_s"]) and runs.iloc[1]["output_tok_s"] == 10.0
    assert list(runs["errors"]) == [1, 0] and list(runs["correct"]) == [3, 3]
    assert runs.iloc[0]["ttft_max_s"] == 3.0 and not runs.iloc[0]["ttft_ok"]
    line = bench.worksheet(rows).iloc[0]
    assert line["output_tok_s"] == 10.0          # the median of the rounds that have one
    assert line["output_tok_s_rounds"] == "- / 10.0"
    assert line["errors"] == 0.5 and not line["all_correct"] and line["fits_context"]
    assert line["verdict"] == "fail: TTFT ok, all correct"


def test_a_refused_prompt_fails_the_context_gate():
    line = bench.worksheet(fake_rows(1, refused={(0, 2)})).iloc[0]
    assert not line["fits_context"] and line["verdict"].startswith("fail: fits context")


def test_a_pool_run_dry_mid_generation_fails_the_context_gate():
    """llama-server ends every request in flight with "Context size has been exceeded." when a
    unified pool runs dry: the document did not fit, whatever the error's HTTP code."""
    rows = fake_rows(1)
    line = bench.worksheet(rows).iloc[0]
    assert line["fits_context"]                  # the same run with no such error passes
    rows.loc[2, "error"] = ('RuntimeError: {"code": 500, "message": "Context size has been '
                            'exceeded.", "type": "server_error"}')
    line = bench.worksheet(rows).iloc[0]
    assert not line["fits_context"] and line["verdict"].startswith("fail: fits context")
    # ...and any other server error is not one of room
    rows.loc[2, "error"] = "HTTP 500: boom"
    assert bench.worksheet(rows).iloc[0]["fits_context"]


def test_one_line_per_config_in_first_seen_order():
    rows = pd.concat([fake_rows(2, "split", 1), fake_rows(2, "split", 2),
                      fake_rows(2, "unified", 2)], ignore_index=True)
    ws = bench.worksheet(rows)
    assert list(zip(ws["kv_mode"], ws["slots"])) == [("split", 1), ("split", 2), ("unified", 2)]


def test_markdown_and_timing_agreement():
    rows = fake_rows(1)
    md = bench.to_markdown(bench.worksheet(rows))
    lines = md.strip().splitlines()
    assert lines[0].startswith("| server / version | model sha256 | KV mode")
    assert len(lines) == 3 and "| pass |" in lines[2]
    ta = bench.timing_agreement(rows)
    # client generation = end - first chunk = (i+1) s; server predicted_ms = (i+1) s
    assert np.allclose(ta["gen_rel"], 0.0)
    assert np.allclose(ta["busy_server_s"], [1.5, 2.5, 3.5, 4.5])


def test_plots_draw_from_rows(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from labkit.bench import plots
    rows = pd.concat([fake_rows(2, "split", 1), fake_rows(2, "unified", 2)], ignore_index=True)
    mem = pd.DataFrame({"t_s": [0, 0.2, 0.4], "kind": "rss", "device": -1,
                        "bytes": [1e8, 2e8, 1.5e8], "run_id": "split-1-r0"})
    result = bench.BenchResult(rows, mem, runs=[], env={"x": 1})
    figs = result.plots
    assert set(figs) == {"throughput_vs_slots", "ttft_per_request", "timeline",
                         "memory_over_time"}
    ph = plots.phases(rows[rows["run_id"] == "split-1-r0"])
    assert ph.iloc[1]["prefill"] == (1.5, 0.5) and ph.iloc[1]["generating"] == (2.0, 2.0)
    out = result.save(tmp_path / "res")
    for name in ("worksheet.csv", "worksheet.md", "rounds.csv", "requests.csv", "requests.json",
                 "memory.csv", "runs.json", "environment.json", "timing_agreement.csv",
                 "plots/timeline.png"):
        assert (out / name).exists(), name


def test_default_grid_and_cli_options():
    from labkit.bench.cli import build_parser, default_configs
    cfgs = default_configs()
    assert [(c.n_slots, c.kv_unified, c.n_ctx) for c in cfgs] == \
        [(1, False, 4096), (2, False, 4096), (4, False, 4096),
         (1, True, 4096), (2, True, 4096), (4, True, 4096)]
    a = build_parser().parse_args(["--rounds", "1", "-w", "short", "long", "--json-schema",
                                   "--server", "xllamacpp"])
    assert a.rounds == 1 and a.workload == ["short", "long"] and a.json_schema
    assert a.server == "xllamacpp" and a.threads is None


def test_labkit_quick_off_means_full_size(monkeypatch):
    """`labkit bench` takes quick mode from labkit.machine.runenv: "off" is the full-size run."""
    from labkit.machine import runenv
    monkeypatch.setenv("LABKIT_QUICK", "off")
    assert runenv.quick() is False and runenv.pick("quick", "full") == "full"
