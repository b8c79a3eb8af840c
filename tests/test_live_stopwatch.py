"""The stopwatch of notebook 05: the scripted streaming server behind exercise 5.7 keeps its
timetable and speaks llama-server's stream; the helpers that compare timings, decode speeds and
texts read a bench result as documented. Fast lane: threads and sockets only, no process, no
model."""

import json
import time
import urllib.error
import urllib.request

import pandas as pd
import pytest

from labkit.lessons import live
from labkit.lessons.scripted_server import CHAT_PATH, Script, ScriptedServer


def _post(url: str, body: dict):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=10)


def test_the_default_script_has_its_traps_before_the_first_visible_token():
    s = Script.default()
    assert s.ttft_s == 0.40 and s.last_token_s == 0.60 and s.end_s == 0.70
    assert s.n_tokens == 7 and s.text == "\nTable 4 ordered tea."
    early = [t for t, f, text in s.tokens if t < s.ttft_s]
    assert len(early) == 2          # a reasoning token and a whitespace-only token


def test_the_stream_keeps_the_timetable_and_ends_with_usage():
    with ScriptedServer() as srv:
        sent = time.perf_counter()
        seen = []
        with _post(srv.base_url + CHAT_PATH, {"stream": True, "messages": [
                {"role": "user", "content": "hi"}]}) as r:
            assert r.headers["Content-Type"] == "text/event-stream"
            for raw in r:
                if raw.startswith(b"data:"):
                    seen.append((time.perf_counter() - sent, raw[5:].strip()))
        end = time.perf_counter() - sent
    assert seen[-1][1] == b"[DONE]"
    chunks = [json.loads(d) for _, d in seen[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    first_visible = next(t for (t, _), c in zip(seen, chunks)
                         if (c["choices"][0]["delta"].get("content") or "").strip())
    assert 0.38 <= first_visible <= 0.40 + 0.15
    assert 0.68 <= end <= 0.70 + 0.2
    assert chunks[-1]["usage"]["completion_tokens"] == 7
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert srv.requests[0]["messages"][0]["content"] == "hi"


def test_without_stream_the_answer_comes_whole_at_the_end():
    with ScriptedServer() as srv:
        sent = time.perf_counter()
        with _post(srv.base_url + CHAT_PATH, {"messages": []}) as r:
            data = json.loads(r.read())
        assert time.perf_counter() - sent >= 0.68
    assert data["choices"][0]["message"]["content"] == Script.default().text
    assert data["usage"]["completion_tokens"] == 7


def test_a_wrong_path_is_a_404_and_remembered():
    with ScriptedServer() as srv:
        with pytest.raises(urllib.error.HTTPError) as err:
            _post(srv.base_url + "/completion", {"prompt": "hi"})
        assert err.value.code == 404
        assert srv.misses == [("POST", "/completion")] and srv.requests == []


def test_times_agree_uses_the_looser_of_two_tolerances():
    assert live.times_agree(0.50, 0.58)                  # 0.08 s apart: inside 0.1 s
    assert live.times_agree(2.0, 2.4)                    # 17 % apart
    assert not live.times_agree(1.0, 1.5)                # 33 % and 0.5 s apart
    assert not live.times_agree(0.1, 0.25, abs_s=0.1)


def test_source_lines_numbers_the_lines_as_in_the_file():
    import inspect
    out = live.source_lines(live.times_agree, "return abs")
    line_no = int(out.split()[0])
    lines, first = inspect.getsourcelines(live.times_agree)
    assert lines[line_no - first].strip().startswith("return abs")
    assert out.count("\n") == 0


def _rows():
    def row(slots, kv, doc, answer, tokens, send, first, end, pps, rnd=0):
        return {"workload": "short", "kv_mode": kv, "slots": slots, "round": rnd, "doc_id": doc,
                "answer": answer, "error": None, "completion_tokens": tokens, "send_s": send,
                "first_chunk_s": first, "first_token_s": first, "end_s": end,
                "ttft_s": first - send, "completion_s": end - send,
                "timings": {"predicted_per_second": pps}}
    return pd.DataFrame([
        row(1, "split", "A", '{"id": "A"}', 11, 0.0, 0.5, 1.0, 20.0),
        row(1, "split", "B", '{"id": "B"}', 11, 1.0, 1.5, 2.0, 20.0),
        row(4, "split", "A", '{"id": "A"}', 11, 0.0, 2.0, 3.0, 10.0),
        row(4, "split", "B", '{"id": "X"}', 11, 0.0, 2.0, 3.0, 10.0),
    ])


def test_decode_rates_keeps_the_servers_rate_apart_from_the_clients():
    r = live.decode_rates(_rows())
    one = r[r["slots"] == 1].iloc[0]
    assert one["server_decode_tok_s"] == 20.0
    assert one["client_decode_tok_s"] == pytest.approx(10 / 0.5)
    assert one["client_tok_s"] == pytest.approx(11 / 1.0)
    assert one["prefill_and_wait_share"] == pytest.approx(0.5)
    four = r[r["slots"] == 4].iloc[0]
    assert four["client_tok_s"] == pytest.approx(11 / 3.0)


def test_a_one_token_request_has_no_decode_rate():
    rows = _rows()
    rows.loc[0, "completion_tokens"] = 1
    rows.at[0, "timings"] = {"predicted_per_second": 1_000_000.0}   # 1 token in 1 microsecond
    r = live.decode_rates(rows)
    assert r.loc[0, ["server_decode_tok_s", "client_decode_tok_s"]].isna().all()
    assert r.loc[1, "server_decode_tok_s"] == 20.0        # its neighbour keeps its rate


def test_text_agreement_compares_each_document_with_the_one_slot_answer():
    t = live.text_agreement(_rows()).set_index("slots")
    assert t.loc[1, "identical"] == 2 and pd.isna(t.loc[1, "first difference"])
    assert t.loc[4, "compared"] == 2 and t.loc[4, "identical"] == 1
    assert t.loc[4, "first difference"].startswith("B: from character 8: 'X\"}' vs 'B\"}'")
