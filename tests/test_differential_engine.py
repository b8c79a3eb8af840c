"""The engine's answers against llama-server's, request by request: chat templates, token
probabilities, several choices and prompts, logit bias, penalties, seeds, characters cut by
max_tokens, the full unified pool, a client that leaves, the metrics.

Both servers (labkit's and llama.cpp's llama-server from the xllamacpp wheel) run with the
differential table's base flags on the same model: the session's server pool
(tests/conftest.py) hands on the pair tests/test_differential.py ran its base cases on, and
stops it after the last test here that talks to it. The two
builds of llama.cpp compute slightly different logits, so log-probabilities are compared to
0.2 and sampled text (temperature > 0) only within each server. The deliberate differences
(docs/ENGINE.md, "Differences from llama-server") are held to what each server does.
Skipped when xllamacpp is not installed.
"""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest
from differential_cases import FLAGS, builds_differ

from labkit.server.launch import ServerConfig, launch

pytestmark = pytest.mark.slow

KINDS = ("labkit", "xllamacpp")
CHAT, NATIVE, V1 = "/v1/chat/completions", "/completion", "/v1/completions"
SYSTEM = [{"role": "system", "content": "You are terse."},
          {"role": "user", "content": "Name a colour."}]
YES = [{"role": "user", "content": "Say only the word yes."}]
EMOJI = [{"role": "user", "content": "Reply with three emoji."}]


@pytest.fixture
def servers(server_pool):
    """{kind: server}: both servers started with the table's base flags."""
    pytest.importorskip("xllamacpp")
    return server_pool.get(KINDS, **FLAGS["base"])


def post(srv, path, body, timeout=300):
    r = httpx.post(srv.base_url + path, json=body, timeout=timeout)
    return r.status_code, r.json()


def both(servers, path, body):
    """{kind: (status, body)} for the same request to each server."""
    return {kind: post(srv, path, body) for kind, srv in servers.items()}


def stream(srv, path, body) -> list:
    """The parsed chunks of a streamed answer (``[DONE]`` kept as the string)."""
    with httpx.stream("POST", srv.base_url + path, json={**body, "stream": True},
                      timeout=300) as r:
        return [json.loads(line[6:]) if line != "data: [DONE]" else "[DONE]"
                for line in r.iter_lines() if line.startswith("data: ")]


def text(answer: dict) -> str:
    choice = answer["choices"][0] if "choices" in answer else answer
    return choice.get("message", {}).get("content", choice.get("text", choice.get("content")))


def streamed_text(chunks) -> str:
    out = ""
    for c in chunks:
        if isinstance(c, dict):
            if c.get("choices"):
                out += c["choices"][0].get("delta", {}).get("content") or \
                    c["choices"][0].get("text") or ""
            else:
                out += c.get("content") or ""
    return out


def same_probs(a: list, b: list, tol=0.2):
    """Two token-probability lists agree: the same tokens, logprobs within ``tol``."""
    assert [e["id"] for e in a] == [e["id"] for e in b]
    assert [e["token"] for e in a] == [e["token"] for e in b]
    for x, y in zip(a, b):
        assert x["logprob"] == pytest.approx(y["logprob"], abs=tol)
        assert len(x["top_logprobs"]) == len(y["top_logprobs"])
        assert x["top_logprobs"][0]["id"] == y["top_logprobs"][0]["id"]


# ------------------------------------------------------------------ prompts

@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": "Say hi"}],
    [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi!"},
     {"role": "user", "content": "Again"}],
    pytest.param([{"role": "user", "content": [{"type": "text", "text": "Say "},
                                               {"type": "text", "text": "hi"}]}],
                 marks=builds_differ("the same template and prompt tokens; the answer's third "
                                     "token is '!' on labkit ('Hello there!') and ',' on "
                                     "llama-server ('Hello there,')")),
    [{"role": "user", "content": "Say hi"}, {"role": "system", "content": "Be brief."}],
    [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi"}],
], ids=["no-system", "multi-turn", "text-parts", "system-later", "prefill"])
def test_prompts_are_rendered_token_for_token(servers, messages):
    got = both(servers, "/apply-template", {"messages": messages})
    assert got["labkit"] == got["xllamacpp"]
    got = both(servers, CHAT, {"messages": messages, "max_tokens": 3, "temperature": 0})
    (s1, a), (s2, b) = got["labkit"], got["xllamacpp"]
    assert s1 == s2 == 200
    assert a["usage"]["prompt_tokens"] == b["usage"]["prompt_tokens"]
    assert a["timings"]["prompt_n"] + a["timings"]["cache_n"] == a["usage"]["prompt_tokens"]
    assert text(a) == text(b)       # a prefilled answer starts with the prefill on both


def test_two_assistant_messages_at_the_end_are_refused_alike(servers):
    body = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant",
            "content": "a"}, {"role": "assistant", "content": "b"}], "max_tokens": 2}
    got = both(servers, CHAT, body)
    assert got["labkit"] == got["xllamacpp"]
    assert got["labkit"][0] == 400


# ------------------------------------------------------------------ token probabilities

def test_chat_logprobs(servers):
    body = {"messages": SYSTEM, "max_tokens": 3, "temperature": 0, "logprobs": True,
            "top_logprobs": 2}
    got = both(servers, CHAT, body)
    a, b = got["labkit"][1]["choices"][0], got["xllamacpp"][1]["choices"][0]
    same_probs(a["logprobs"]["content"], b["logprobs"]["content"])
    chunks = {kind: stream(srv, CHAT, body) for kind, srv in servers.items()}
    per_chunk = {kind: [c["choices"][0]["logprobs"]["content"][0] for c in cs
                        if isinstance(c, dict) and c.get("choices")
                        and "logprobs" in c["choices"][0]]
                 for kind, cs in chunks.items()}
    same_probs(per_chunk["labkit"], per_chunk["xllamacpp"])
    same_probs(per_chunk["labkit"], a["logprobs"]["content"], tol=1e-6)


def test_chat_logprobs_rules(servers):
    default = both(servers, CHAT, {"messages": SYSTEM, "max_tokens": 1, "temperature": 0,
                                   "logprobs": True})
    for status, answer in default.values():
        assert len(answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == 20
    refused = both(servers, CHAT, {"messages": SYSTEM, "max_tokens": 1, "top_logprobs": 2})
    assert refused["labkit"][1]["error"]["message"] == \
        refused["xllamacpp"][1]["error"]["message"] == \
        "top_logprobs requires logprobs to be set to true"
    none = both(servers, CHAT, {"messages": SYSTEM, "max_tokens": 1, "temperature": 0,
                                "logprobs": True, "top_logprobs": -1})
    assert all("logprobs" not in answer["choices"][0] for _, answer in none.values())


@builds_differ("the second token is ',' (logprob -0.93) on labkit and '.' (-1.36) on "
               "llama-server, so the two answers differ from there")
def test_native_probabilities_with_the_end_token_and_a_stop_string(servers):
    prompt = "<|im_start|>user\nSay only the word yes.<|im_end|>\n<|im_start|>assistant\n"
    body = {"prompt": prompt, "n_predict": 30, "temperature": 0, "n_probs": 1}
    got = both(servers, NATIVE, body)
    a, b = got["labkit"][1], got["xllamacpp"][1]
    same_probs(a["completion_probabilities"], b["completion_probabilities"])
    assert a["completion_probabilities"][-1]["token"] == ""      # the end token has its entry
    chunks = {kind: stream(srv, NATIVE, body) for kind, srv in servers.items()}
    assert [c["content"] for c in chunks["labkit"]] == [c["content"] for c in chunks["xllamacpp"]]
    stop = both(servers, NATIVE, {"prompt": "The capital of France is", "n_predict": 8,
                                  "temperature": 0, "n_probs": 1, "stop": [" Paris."]})
    for status, answer in stop.values():   # the stop string's tokens are left out: none left
        assert (answer["content"], answer["stop_type"], answer["stopping_word"]) == \
            ("", "word", " Paris.")
        assert "completion_probabilities" not in answer


def test_v1_completions_logprobs(servers):
    for logprobs, n in ((2, 2), (True, 1)):
        got = both(servers, V1, {"prompt": "Hello", "max_tokens": 2, "temperature": 0,
                                 "logprobs": logprobs})
        a, b = (got[k][1]["choices"][0]["logprobs"]["content"] for k in KINDS)
        same_probs(a, b)
        assert len(a[0]["top_logprobs"]) == n


# ------------------------------------------------------------------ choices and prompts

def test_n_choices(servers):
    got = both(servers, CHAT, {"messages": SYSTEM, "max_tokens": 3, "temperature": 0, "n": 2})
    a, b = got["labkit"][1], got["xllamacpp"][1]
    assert [c["index"] for c in a["choices"]] == [c["index"] for c in b["choices"]] == [0, 1]
    assert [text({"choices": [c]}) for c in a["choices"]] == \
        [text({"choices": [c]}) for c in b["choices"]]
    for n in (0, 3):
        refused = both(servers, CHAT, {"messages": SYSTEM, "max_tokens": 3, "n": n})
        assert refused["labkit"] == refused["xllamacpp"]
        assert refused["labkit"][0] == 400
    native = both(servers, NATIVE, {"prompt": "Hello", "n_predict": 3, "temperature": 0,
                                    "n": 2})
    assert [x["content"] for x in native["labkit"][1]] == \
        [x["content"] for x in native["xllamacpp"][1]]


@pytest.mark.parametrize("kind", KINDS)
def test_choice_k_is_seeded_seed_plus_k(servers, kind):
    srv = servers[kind]
    body = {"messages": YES, "max_tokens": 6, "temperature": 1.0}
    pair = [c["message"]["content"] for c in post(srv, CHAT, {**body, "seed": 42, "n": 2})[1]
            ["choices"]]
    alone = [text(post(srv, CHAT, {**body, "seed": s})[1]) for s in (42, 43)]
    assert pair == alone


@pytest.mark.parametrize("prompt", [
    ["Hello", "The sky is"], [[19556], [504, 6056]], ["Hello", 504, 6056],
    [[19556, " world"], "Hi"], ["Hello"],
], ids=["texts", "token-lists", "mixed", "nested-mixed", "one"])
def test_prompt_lists(servers, prompt):
    body = {"prompt": prompt, "max_tokens": 3, "temperature": 0}
    got = both(servers, V1, body)
    a, b = got["labkit"][1], got["xllamacpp"][1]
    assert [(c["index"], c["text"]) for c in a["choices"]] == \
        [(c["index"], c["text"]) for c in b["choices"]]
    assert a["usage"] == {k: v for k, v in b["usage"].items() if k in a["usage"]}


def test_a_bad_prompt_element_is_refused_alike(servers):
    got = both(servers, V1, {"prompt": ["Hello", 5.5], "max_tokens": 2})
    assert got["labkit"] == got["xllamacpp"] and got["labkit"][0] == 400


def test_prompt_list_streamed(servers):
    """Deliberate: llama-server starts the stream with a ``data: null`` chunk."""
    body = {"prompt": ["Hello", "The sky is"], "max_tokens": 2, "temperature": 0}
    chunks = {kind: stream(srv, V1, body) for kind, srv in servers.items()}
    assert chunks["xllamacpp"][0] is None
    assert all(isinstance(c, dict) for c in chunks["labkit"][:-1])
    for kind, cs in chunks.items():
        texts = {}
        for c in cs:
            if isinstance(c, dict):
                ch = c["choices"][0]
                texts[ch["index"]] = texts.get(ch["index"], "") + ch["text"]
        assert texts == {0: "-by", 1: " a canvas"}, kind


# ------------------------------------------------------------------ sampling fields

@pytest.mark.parametrize("prompt,extra", [
    ("Hello", {"logit_bias": {"29": -100}}), ("Hello", {"logit_bias": [[29, False]]}),
    ("Hello", {"logit_bias": [["-", -100]]}), ("Hello", {"logit_bias": {"-": -100}}),
    ("Hello", {"logit_bias": {"abc": "x", "99999999": 5}}),
    ("one one one one one", {"repeat_penalty": 1.5}),
    ("one one one one one", {"frequency_penalty": 1.5}),
    ("one one one one one", {"presence_penalty": 1.5}),
    ("one one one one one two three four five six", {"repeat_penalty": 2.0, "repeat_last_n": 4}),
], ids=["bias-object", "bias-false", "bias-text", "bias-text-key", "bias-skipped",
        "repeat", "frequency", "presence", "repeat-last-4"])
def test_bias_and_penalties(servers, prompt, extra):
    """(Prompts whose answers have no near tie, which the two builds' logits could break
    differently.)"""
    body = {"prompt": prompt, "n_predict": 4 if prompt == "Hello" else 8, "temperature": 0,
            **extra}
    got = both(servers, NATIVE, body)
    assert got["labkit"][0] == got["xllamacpp"][0] == 200
    assert text(got["labkit"][1]) == text(got["xllamacpp"][1])


def test_penalty_limits_are_refused_alike(servers):
    for extra in ({"repeat_last_n": -1}, {"repeat_penalty": -1}):
        got = both(servers, NATIVE, {"prompt": "x", "n_predict": 2, **extra})
        assert got["labkit"] == got["xllamacpp"] and got["labkit"][0] == 400


@pytest.mark.parametrize("kind", KINDS)
def test_seeds_keep_their_low_32_bits(servers, kind):
    def answer(seed):
        return text(post(servers[kind], NATIVE, {"prompt": "Hello", "n_predict": 4,
                                                 "seed": seed})[1])
    assert answer(5) == answer(5.7) == answer(2**32 + 5)
    assert answer(-5) == answer(4294967291)


def test_unsupported_sampler_refused(servers):
    """Deliberate: labkit refuses a sampler its engine lacks; llama-server applies it."""
    got = both(servers, CHAT, {"messages": SYSTEM, "max_tokens": 2, "mirostat": 2})
    assert got["labkit"][0] == 400 and "'mirostat'" in got["labkit"][1]["error"]["message"]
    assert got["xllamacpp"][0] == 200


# ------------------------------------------------------------------ characters cut by max_tokens

@pytest.mark.parametrize("n", [1, 2, 4])
def test_a_cut_character(servers, n):
    """A chat answer drops it unless it is all there is; a plain completion shows U+FFFD; no
    stream ever sends it (nor the opening chunk, when the first token is the cut one)."""
    body = {"messages": EMOJI, "max_tokens": n, "temperature": 0}
    got = both(servers, CHAT, body)
    assert got["labkit"][1]["choices"][0]["message"] == got["xllamacpp"][1]["choices"][0]["message"]
    chunks = {kind: stream(srv, CHAT, body) for kind, srv in servers.items()}
    assert [c["choices"][0]["delta"] if isinstance(c, dict) else c
            for c in chunks["labkit"]] == \
        [c["choices"][0]["delta"] if isinstance(c, dict) else c for c in chunks["xllamacpp"]]
    native = {"prompt": "我爱", "n_predict": n, "temperature": 0}
    got = both(servers, NATIVE, native)
    assert text(got["labkit"][1]) == text(got["xllamacpp"][1])
    streamed = {kind: streamed_text(stream(srv, NATIVE, native)) for kind, srv in servers.items()}
    assert streamed["labkit"] == streamed["xllamacpp"]
    assert "\ufffd" not in streamed["labkit"]


# ------------------------------------------------------------------ slots and metrics

def test_a_non_streaming_client_that_leaves_frees_its_slot(servers):
    """labkit frees the slot within a second on both routes. (llama-server's
    /v1/chat/completions freed it within 0.3 to 2.5 s in most measurements, not always; its
    /completion keeps generating: the differential table's non-streaming-client-leaves.)"""
    srv = servers["labkit"]
    for path, body in ((CHAT, {"messages": YES, "max_tokens": 2000}),
                       (NATIVE, {"prompt": "Write a long story.", "n_predict": 2000})):
        with pytest.raises(httpx.TimeoutException):
            httpx.post(srv.base_url + path, json={**body, "ignore_eos": True,
                                                  "temperature": 0}, timeout=2)
        t0 = time.monotonic()
        while any(s["is_processing"] for s in srv.slots()):
            assert time.monotonic() - t0 < 1.0, path
            time.sleep(0.02)


def test_cancelled_tokens_count_in_the_metrics(servers):
    for kind, srv in servers.items():
        def predicted():
            for line in srv.get("/metrics").text.splitlines():
                if line.startswith("llamacpp:tokens_predicted_total "):
                    return float(line.split()[1])
        before = predicted()
        with httpx.stream("POST", srv.base_url + NATIVE, json={
                "prompt": "Count to one thousand:", "n_predict": 500, "ignore_eos": True,
                "temperature": 0, "stream": True}, timeout=60) as r:
            lines, seen = r.iter_lines(), 0
            while seen < 6:
                seen += next(lines).startswith("data: ")
        t0 = time.monotonic()
        while any(s["is_processing"] for s in srv.slots()):
            assert time.monotonic() - t0 < 10, kind
            time.sleep(0.05)
        assert predicted() - before >= 6, kind


def test_a_full_unified_pool_fails_every_request_alike():
    """-c 512 -np 2 --kv-unified, two growing requests: both servers end both with HTTP 500
    'Context size has been exceeded.', plain and streamed (the error as the last chunk)."""
    pytest.importorskip("xllamacpp")
    words = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet " * 15).split()
    bodies = [{"prompt": " ".join(w), "n_predict": 400, "ignore_eos": True, "temperature": 0}
              for w in (words, words[::-1])]
    error = {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}
    for kind in KINDS:
        with launch(ServerConfig(kind=kind, n_ctx=512, n_slots=2, kv_unified=True)) as srv:
            for streamed in (False, True):
                results: list = [None, None]

                def one(i):
                    if streamed:
                        results[i] = (200, stream(srv, NATIVE, bodies[i])[-1])
                    else:
                        results[i] = post(srv, NATIVE, bodies[i])
                threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                want = (200, {"error": error}) if streamed else (500, {"error": error})
                assert results == [want, want], (kind, streamed)



def _reservation(log: str) -> tuple:
    """What a startup log says llama.cpp reserved for outputs: n_outputs_max, per sequence."""
    return (re.findall(r"n_outputs_max\s*=\s*(\d+)", log),
            re.findall(r"n_outputs_max_per_seq\s*=\s*(\d+)", log))


def _compute_buffer(log: str) -> list[float]:
    return [float(x) for x in re.findall(r"CPU compute buffer size =\s*([\d.]+) MiB", log)]


def test_the_context_reserves_what_llama_servers_does(servers):
    """llama-server asks llama.cpp for one output per sequence and n_parallel in all
    (server_output_limits), so llama.cpp sizes its compute buffer for that many rows of
    logits, not for a micro-batch of them; labkit's engine asks the same. The reference is
    xllamacpp's llama-server in a process of its own, at verbosity 4 (``-lv 4``), the level
    from which it prints llama.cpp's context lines."""
    pytest.importorskip("xllamacpp")
    import subprocess
    import sys

    from labkit.engine.native import LlamaContext, LlamaModel, quiet_llama
    from labkit.models.files import resolve_model
    from labkit.server.launch import free_port
    base = FLAGS["base"]
    model = str(resolve_model(servers["labkit"].config.model))
    code = ("import sys, time, xllamacpp as xlc\n"
            "from labkit.server import reference\n"
            "from labkit.server.args import parse_args\n"
            "p = reference.params_from_args(parse_args(sys.argv[1:], 'reference', "
            "llama_server=True))\n"
            "p.verbosity = 4\n"
            "server = xlc.Server(p)\n"
            "time.sleep(3)\n"
            "del server\n")
    theirs = subprocess.run(
        [sys.executable, "-c", code, "-m", model, "-c", str(base["n_ctx"]), "-np",
         str(base["n_slots"]), "--no-kv-unified", "--port", str(free_port())],
        capture_output=True, text=True, timeout=120).stderr
    ours = servers["labkit"].log_text()
    assert _reservation(ours) == _reservation(theirs) == (
        [str(base["n_slots"])], ["1"]), (_reservation(ours), _reservation(theirs))
    # the check can say no: llama.cpp's default, on the same model and sizes, reserves logits
    # for a whole batch and a larger compute buffer
    with quiet_llama() as cap, LlamaModel(model) as m, \
            LlamaContext(m, n_ctx=base["n_ctx"], n_seq_max=base["n_slots"], kv_unified=False):
        pass
    assert _reservation(cap.text) != _reservation(theirs)
    assert _compute_buffer(cap.text)[0] > _compute_buffer(ours)[0]
