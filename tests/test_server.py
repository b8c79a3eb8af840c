"""labkit's HTTP server, started as a real subprocess on the embedded model.

Request validation itself is unit-tested in tests/test_validate.py; here, once, that the
server answers with the validator's errors, and the checks that need the HTTP stack."""

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from labkit.server.launch import ServerConfig, launch
from labkit.server import validate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv():
    with launch(ServerConfig(n_ctx=4096, n_slots=2, kv_unified=False, alias="local")) as s:
        yield s


def chat(srv, body, **kw):
    return httpx.post(srv.base_url + "/v1/chat/completions", json=body,
                      timeout=kw.pop("timeout", 120), **kw)


def user(text):
    return [{"role": "user", "content": text}]


def healthy(srv):
    return httpx.get(srv.base_url + "/health", timeout=10).status_code == 200


def sse_chunks(resp):
    out = []
    for line in resp.iter_lines():
        if line.startswith("data: "):
            data = line[6:]
            if data == "[DONE]":
                break
            out.append(json.loads(data))
    return out


# ------------------------------------------------------------------ the API surface

def test_props_slots_models_and_startup_log(srv):
    props = srv.props()
    assert props["total_slots"] == 2
    assert props["default_generation_settings"]["n_ctx"] == 2048
    assert srv.facts == {"n_ctx": 4096, "n_ctx_seq": 2048, "n_slots": 2, "n_ctx_slot": 2048,
                         "kv_unified": False}
    slots = srv.slots()
    assert [s["id"] for s in slots] == [0, 1]
    assert httpx.get(srv.base_url + "/v1/models").json()["data"][0]["id"] == "local"


def test_chat_completion_with_usage_and_timings(srv):
    r = chat(srv, {"model": "local", "messages": user("Say hello."), "max_tokens": 8,
                   "temperature": 0})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["choices"][0]["message"]["content"]
    assert d["usage"]["completion_tokens"] <= 8
    assert d["usage"]["total_tokens"] == d["usage"]["prompt_tokens"] + d["usage"]["completion_tokens"]
    for key in ("prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms",
                "predicted_per_second", "cache_n"):
        assert key in d["timings"]


def test_streaming_with_include_usage(srv):
    body = {"messages": user("Count to five."), "max_completion_tokens": 12, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", srv.base_url + "/v1/chat/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        chunks = sse_chunks(r)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    # as in llama-server, the timings go with the usage chunk, not the finish chunk
    assert text and len(finals) == 1 and "timings" not in finals[0]
    assert chunks[-1]["usage"]["completion_tokens"] == chunks[-1]["timings"]["predicted_n"]
    assert chunks[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == \
        chunks[-1]["timings"]["cache_n"]


def test_streaming_and_plain_agree_at_temperature_zero(srv):
    body = {"messages": user("Name a colour."), "max_tokens": 10, "temperature": 0, "seed": 1}
    plain = chat(srv, body).json()["choices"][0]["message"]["content"]
    with httpx.stream("POST", srv.base_url + "/v1/chat/completions",
                      json={**body, "stream": True}, timeout=60) as r:
        chunks = sse_chunks(r)
    streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert streamed == plain


def test_tokenize_detokenize_apply_template(srv):
    toks = httpx.post(srv.base_url + "/tokenize", json={"content": "Hello world"}).json()["tokens"]
    assert toks and all(isinstance(t, int) for t in toks)
    text = httpx.post(srv.base_url + "/detokenize", json={"tokens": toks}).json()["content"]
    assert text.strip() == "Hello world"
    prompt = httpx.post(srv.base_url + "/apply-template",
                        json={"messages": user("hi")}).json()["prompt"]
    assert "<|im_start|>user\nhi<|im_end|>" in prompt
    assert prompt.rstrip().endswith("<|im_start|>assistant")


def test_native_completion_endpoint(srv):
    r = httpx.post(srv.base_url + "/completion",
                   json={"prompt": "The capital of France is", "n_predict": 4, "temperature": 0},
                   timeout=60)
    d = r.json()
    assert r.status_code == 200 and d["stop"] is True and d["tokens_predicted"] == 4
    assert "timings" in d and d["content"]


def test_json_schema_response_format(srv):
    schema = {"type": "object", "additionalProperties": False, "required": ["id", "owner"],
              "properties": {"id": {"type": "string", "maxLength": 12},
                             "owner": {"type": "string", "maxLength": 12}}}
    r = chat(srv, {"messages": user("id=DEMO-01; owner=Lin. Reply with JSON."),
                   "response_format": {"type": "json_schema",
                                       "json_schema": {"name": "doc", "schema": schema}},
                   "max_tokens": 64, "temperature": 0})
    d = r.json()
    assert d["choices"][0]["finish_reason"] == "stop"
    assert set(json.loads(d["choices"][0]["message"]["content"])) == {"id", "owner"}


def test_metrics_use_llama_server_names(srv):
    chat(srv, {"messages": user("hi"), "max_tokens": 2})
    text = httpx.get(srv.base_url + "/metrics").text
    for name in ("prompt_tokens_total", "prompt_seconds_total", "tokens_predicted_total",
                 "tokens_predicted_seconds_total", "n_decode_total", "n_busy_slots_per_decode",
                 "prompt_tokens_seconds", "predicted_tokens_seconds", "requests_processing",
                 "requests_deferred"):
        assert f"\nllamacpp:{name} " in "\n" + text
    values = dict(ln.split() for ln in text.splitlines() if not ln.startswith("#"))
    assert float(values["llamacpp:n_decode_total"]) > 0


def test_trace_endpoint(srv):
    chat(srv, {"messages": user("hi"), "max_tokens": 3})
    steps = httpx.get(srv.base_url + "/trace").json()
    assert steps and {"step", "t_start", "t_end", "n_tokens", "kv_used"} <= set(steps[0])
    slots = httpx.get(srv.base_url + "/trace?kind=slots").json()
    assert {r["action"] for r in slots} <= {"prefill", "decode", "idle"}
    last = steps[-1]["step"]
    assert httpx.get(srv.base_url + f"/trace?since={last}").json()[0]["step"] == last
    assert httpx.get(srv.base_url + "/trace?kind=nope").status_code == 400


def test_openai_client_works(srv):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="unused")
    r = client.chat.completions.create(model="local", messages=user("Say hi."), max_tokens=6,
                                       temperature=0)
    assert r.choices[0].message.content and r.usage.completion_tokens <= 6
    pieces = [c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="local", messages=user("Say hi."), max_tokens=6, temperature=0, stream=True)
        if c.choices]
    assert "".join(pieces) == r.choices[0].message.content


# ------------------------------------------------------------------ limits

def test_over_long_prompt_is_refused_like_llama_server(srv):
    r = chat(srv, {"messages": user("word " * 3000), "max_tokens": 4})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "exceed_context_size_error"
    assert err["n_ctx"] == 2048 and err["n_prompt_tokens"] > 2048
    assert err["message"] == (f"request ({err['n_prompt_tokens']} tokens) exceeds the available "
                              "context size (2048 tokens), try increasing it")
    assert healthy(srv)


def test_a_bad_body_gets_the_validators_error(srv):
    body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": -5}
    with pytest.raises(validate.ApiError) as expected:
        validate.chat_request(body)
    r = chat(srv, body, timeout=30)
    assert (r.status_code, r.json()) == (expected.value.status, expected.value.body())
    assert healthy(srv)


@pytest.mark.parametrize("raw,needle", [
    (b"", "request body is empty"),
    (b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', "not valid UTF-8"),
])
def test_bodies_only_http_can_send_get_a_400(srv, raw, needle):
    r = httpx.post(srv.base_url + "/v1/chat/completions", content=raw,
                   headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]["message"]
    assert healthy(srv)


def test_any_model_name_is_served_as_llama_server_does(srv):
    r = chat(srv, {"model": "gpt-17", "messages": user("x"), "max_tokens": 2})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["role"] == "assistant"


def test_oversized_body_is_413(srv):
    r = httpx.post(srv.base_url + "/v1/chat/completions", content=b"x" * (9 * 2**20),
                   headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 413
    assert healthy(srv)


def test_out_of_range_token_ids_are_refused(srv):
    r = httpx.post(srv.base_url + "/completion", json={"prompt": [1, 10**9], "n_predict": 2})
    assert r.status_code == 400 and "out of range" in r.json()["error"]["message"]
    assert healthy(srv)


# ------------------------------------------------------------------ load and faults

def test_64_concurrent_streams_on_2_slots_all_complete(srv):
    body = {"messages": user("Tell me a fact."), "max_tokens": 6, "temperature": 0,
            "stream": True}

    def one(i):
        with httpx.stream("POST", srv.base_url + "/v1/chat/completions", json=body,
                          timeout=300) as r:
            chunks = sse_chunks(r)
        return r.status_code, [c["choices"][0]["finish_reason"] for c in chunks
                               if c["choices"] and c["choices"][0]["finish_reason"]]

    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(one, range(64)))
    assert all(status == 200 and len(fin) == 1 for status, fin in results)
    deadline = time.monotonic() + 10
    while any(s["is_processing"] for s in srv.slots()):
        assert time.monotonic() < deadline, "the queue did not drain"
        time.sleep(0.1)
    assert "llamacpp:requests_deferred 0" in httpx.get(srv.base_url + "/metrics").text


def test_client_disconnect_frees_the_slot(srv):
    body = {"messages": user("Write a very long story."), "max_tokens": 4000, "temperature": 0,
            "ignore_eos": True, "stream": True}
    with httpx.stream("POST", srv.base_url + "/v1/chat/completions", json=body,
                      timeout=60) as r:
        lines = r.iter_lines()  # keep the iterator: dropping it would close the connection
        n = 0
        while n < 4:
            n += next(lines).startswith("data: ")
        busy = [s for s in srv.slots() if s["is_processing"]]
        assert len(busy) == 1
        task = busy[0]["id_task"]
    # Left alone, the request would fill its 2048-token slot (tens of seconds on a CPU).
    # Cancelled, the slot frees at the engine's next step (about 0.1 s on an idle machine).
    deadline = time.monotonic() + 30
    while any(s["is_processing"] for s in srv.slots()):
        assert time.monotonic() < deadline, "the slot stayed busy after the client left"
        time.sleep(0.05)
    rows = httpx.get(srv.base_url + "/trace?kind=slots").json()
    decoded = sum(r["n_tokens"] for r in rows if r["request_id"] == task and r["action"] == "decode")
    assert decoded < 1000, f"request {task} kept decoding ({decoded} tokens) after the disconnect"


def test_max_queue_fails_fast():
    long = {"messages": user("Write a long story."), "max_tokens": 200, "ignore_eos": True,
            "temperature": 0}
    with launch(ServerConfig(n_ctx=2048, n_slots=1, max_queue=1)) as s:
        results = {}

        def send(key):
            try:
                results[key] = chat(s, long, timeout=600)
            except httpx.HTTPError as exc:
                results[key] = exc
        t1 = threading.Thread(target=send, args=("running",))
        t1.start()
        _wait_for(lambda: any(x["is_processing"] for x in s.slots()))
        t2 = threading.Thread(target=send, args=("waiting",))
        t2.start()
        _wait_for(lambda: "llamacpp:requests_deferred 1" in httpx.get(s.base_url + "/metrics").text)
        r = chat(s, long)       # how fast it comes back: benchmarks/server_latency.py
        assert r.status_code == 503
        assert "wait for a slot" in r.json()["error"]["message"]
        t1.join()
        t2.join()
        for key in ("running", "waiting"):
            assert getattr(results[key], "status_code", results[key]) == 200


def test_sigterm_with_requests_in_flight_stops_cleanly():
    body = {"messages": user("Write a long story."), "max_tokens": 3000, "ignore_eos": True,
            "temperature": 0, "stream": True}
    with launch(ServerConfig(n_ctx=4096, n_slots=2)) as s:
        errors, got = [], []

        def stream():
            try:
                with httpx.stream("POST", s.base_url + "/v1/chat/completions", json=body,
                                  timeout=60) as r:
                    for line in r.iter_lines():
                        got.append(line)
            except httpx.HTTPError as exc:
                errors.append(exc)
        threads = [threading.Thread(target=stream) for _ in range(2)]
        for t in threads:
            t.start()
        _wait_for(lambda: all(x["is_processing"] for x in s.slots()))
        os.kill(s.pid, signal.SIGTERM)
        assert s.process.wait(30) == 0
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a client hung after the server stopped"
        assert got  # the streams had started before the stop
        assert "Traceback" not in s.log_text()


def test_api_key_is_enforced():
    with launch(ServerConfig(n_ctx=1024, n_slots=1, extra_args=("--api-key", "sesame"))) as s:
        assert httpx.get(s.base_url + "/health").status_code == 200
        assert httpx.get(s.base_url + "/props").status_code == 401
        ok = httpx.get(s.base_url + "/props", headers={"Authorization": "Bearer sesame"})
        assert ok.status_code == 200


def _wait_for(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)
