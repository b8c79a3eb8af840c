"""The answers of labkit's server (labkit/server/shapes.py) built from plain events: no server
and no model. Each shape is asserted whole, key order included (the JSON text is compared
with llama-server's in tests/test_differential.py)."""

import json

import pytest

from labkit.engine import FinalEvent, SamplingParams, TokenEvent
from labkit.server import shapes, validate

TIMINGS = {"cache_n": 3, "prompt_n": 5, "prompt_ms": 10.0, "predicted_n": 2, "predicted_ms": 4.0}
USAGE = {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10}
HEAD = {"id": "chatcmpl-x", "created": 100, "model": "local", "system_fingerprint": "labkit"}


def final(text="Hi!", reason="stop", **kw) -> FinalEvent:
    return FinalEvent(reason, dict(USAGE), dict(TIMINGS), text=text, **kw)


def token(text, tok=7, n=1, **kw) -> TokenEvent:
    return TokenEvent(text, tok, n_decoded=n, id_slot=1, **kw)


# ------------------------------------------------------------------ small pieces

def test_sse_writes_one_event_with_its_text_unescaped():
    assert shapes.sse({"content": "é"}) == 'data: {"content": "é"}\n\n'.encode()


def test_usage_counts_the_cached_prompt_tokens():
    assert shapes.usage(final()) == {**USAGE, "prompt_tokens_details": {"cached_tokens": 3}}


def test_a_character_cut_off_at_the_end_shows_as_a_replacement_character():
    assert shapes.whole_text(final("ab", partial=b"\xe2\x82")) == "ab\ufffd"
    assert shapes.whole_text(final("ab")) == "ab"


@pytest.mark.parametrize("ev,want", [
    (final(stop_word="</s>"), "word"), (final(), "eos"), (final(reason="length"), "limit"),
    (final(reason="cancelled"), "cancelled"),
])
def test_stop_type(ev, want):
    assert shapes.stop_type(ev) == want


# ------------------------------------------------------------------ plain GETs

FACTS = {"n_ctx": 4096, "n_ctx_seq": 2048, "n_slots": 2, "n_ctx_slot": 2048,
         "model_path": "/m.gguf", "n_ctx_train": 8192}


def test_props_shape():
    assert shapes.props(FACTS, "local", "{{ x }}") == {
        "default_generation_settings": {"n_ctx": 2048, "id_slot": -1, "params": {
            "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "n_predict": -1,
            "cache_prompt": True}},
        "total_slots": 2, "model_alias": "local", "model_path": "/m.gguf",
        "chat_template": "{{ x }}", "build_info": "labkit slot engine",
        "labkit": {"n_ctx": 4096, "n_ctx_seq": 2048, "n_slots": 2, "n_ctx_slot": 2048,
                   "n_ctx_train": 8192},
    }


def test_props_reads_the_sampling_defaults_from_sampling_params():
    d = SamplingParams()
    params = shapes.props(FACTS, "local", "")["default_generation_settings"]["params"]
    assert params == {"temperature": d.temperature, "top_k": d.top_k, "top_p": d.top_p,
                      "min_p": d.min_p, "n_predict": -1, "cache_prompt": d.cache_prompt}
    other = SamplingParams(temperature=0.3, top_k=7, top_p=0.5, min_p=0.0, max_tokens=9,
                           cache_prompt=False)
    assert shapes.props(FACTS, "local", "", other)["default_generation_settings"]["params"] == {
        "temperature": 0.3, "top_k": 7, "top_p": 0.5, "min_p": 0.0, "n_predict": 9,
        "cache_prompt": False}


def test_a_request_that_sets_nothing_gets_the_defaults_props_shows():
    assert validate.sampling_params({}) == SamplingParams() == validate.DEFAULTS


def test_models_shape():
    assert shapes.models("local", 100, 8192, 49152) == {"object": "list", "data": [{
        "id": "local", "object": "model", "created": 100, "owned_by": "labkit",
        "meta": {"n_ctx_train": 8192, "n_vocab": 49152}}]}


def test_metrics_text_lists_every_metric_in_order_with_zero_for_a_missing_one():
    lines = shapes.metrics({"prompt_tokens_total": 12, "requests_deferred": 1}).split("\n")
    assert lines[:3] == ["# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.",
                         "# TYPE llamacpp:prompt_tokens_total counter",
                         "llamacpp:prompt_tokens_total 12"]
    assert lines[5] == "llamacpp:prompt_seconds_total 0"
    assert lines[-4:] == ["# HELP llamacpp:requests_deferred Number of requests deferred.",
                          "# TYPE llamacpp:requests_deferred gauge",
                          "llamacpp:requests_deferred 1", ""]
    assert len(lines) == 3 * len(shapes.METRIC_HELP) + 1


# ------------------------------------------------------------------ tokens

def test_tokenize_shapes():
    assert shapes.tokens([1, 2]) == {"tokens": [1, 2]}
    pieces = {1: b"Hi", 2: b"\xf0\x9f", 3: b"<|im_end|>"}
    assert shapes.tokens([1, 2, 3], pieces) == {"tokens": [
        {"id": 1, "piece": "Hi"}, {"id": 2, "piece": [240, 159]},
        {"id": 3, "piece": "<|im_end|>"}]}


# ------------------------------------------------------------------ chat

def test_chat_stream_chunks():
    shape = shapes.ChatShape(HEAD)
    chunk = {**HEAD, "object": "chat.completion.chunk"}
    assert shape.done_marker is True
    assert shape.opening(0) == {**chunk, "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}
    assert shape.piece(1, token("Hi")) == {**chunk, "choices": [
        {"index": 1, "delta": {"content": "Hi"}, "finish_reason": None}]}
    assert shape.piece(0, token("")) is None          # no text, no chunk
    probs = {"id": 7, "token": "Hi", "bytes": [72, 105], "logprob": -0.1, "top_logprobs": []}
    assert shape.piece(0, token("Hi", probs=probs))["choices"][0]["logprobs"] == \
        {"content": [probs]}
    assert shape.final(0, final()) == [{**chunk, "choices": [
        {"index": 0, "delta": {}, "finish_reason": "stop"}], "timings": TIMINGS}]


def test_chat_stream_with_usage_moves_the_timings_to_the_usage_chunk():
    shape = shapes.ChatShape(HEAD, include_usage=True)
    last, usage = shape.final(0, final())
    assert "timings" not in last and "usage" not in last
    assert usage == {**HEAD, "object": "chat.completion.chunk", "choices": [],
                     "usage": shapes.usage(final()), "timings": TIMINGS}


def test_chat_stream_under_response_format_sends_the_json_out_of_its_fence():
    shape = shapes.ChatShape(HEAD, json_content=True)
    sent = [shape.piece(0, token(t)) for t in ("```json\n", '{"a": ', "1}", "\n```")]
    assert [c and c["choices"][0]["delta"]["content"] for c in sent] == \
        [None, '{"a":', " 1}", None]          # a trailing space may be the fence's: held
    assert [c["choices"][0]["delta"] for c in shape.final(0, final())] == [{}]


def test_chat_answer():
    shape = shapes.ChatShape(HEAD, prefilled="Sure: ")
    assert shape.answer([final("yes"), final("", reason="length", partial=b"\xe2")]) == {
        **HEAD, "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Sure: yes"},
             "finish_reason": "stop"},
            {"index": 1, "message": {"role": "assistant", "content": "Sure: \ufffd"},
             "finish_reason": "length"}],
        "usage": shapes.usage(final()), "timings": TIMINGS}


def test_chat_answer_json_and_logprobs():
    probs = [{"id": 1, "token": "{", "bytes": [123], "logprob": 0.0, "top_logprobs": []}]
    (choice,) = shapes.ChatShape(HEAD, json_content=True).answer(
        [final('```json\n{"a": 1}\n```', probs=probs)])["choices"]
    assert choice["message"]["content"] == '{"a": 1}'
    assert choice["logprobs"] == {"content": probs}
    (choice,) = shapes.ChatShape(HEAD).answer([final()])["choices"]
    assert "logprobs" not in choice


# ------------------------------------------------------------------ /completion

def completion_shape():
    return shapes.CompletionShape("local", ["Once", "Once"], [4, 4],
                                  [{"seed": 42}, {"seed": 43}])


def test_completion_stream_chunks():
    shape = completion_shape()
    assert shape.done_marker is False and shape.opening(0) is None
    assert shape.piece(1, token(" upon", n=2)) == {
        "index": 1, "content": " upon", "tokens": [7], "stop": False, "id_slot": 1,
        "tokens_predicted": 2, "tokens_evaluated": 4}
    held = shape.piece(0, token("</", tok=-1, timings=TIMINGS))
    assert held["tokens"] == [] and held["timings"] == TIMINGS
    assert "completion_probabilities" not in held and "model" not in held


def test_completion_last_chunk_and_whole_answer():
    shape = completion_shape()
    last = {"index": 1, "content": "", "tokens": [], "stop": True, "id_slot": -1,
            "model": "local", "tokens_predicted": 2, "tokens_evaluated": 8,
            "generation_settings": {"seed": 43}, "prompt": "Once", "has_new_line": True,
            "stop_type": "word", "stopping_word": "\n\n", "truncated": False,
            "tokens_cached": 9, "timings": TIMINGS}
    ev = final("a\nb", stop_word="\n\n")
    assert shape.final(1, ev) == [last]
    assert shape.answer([ev], [[5, 6]]) == {**last, "index": 0, "content": "a\nb",
                                            "tokens": [5, 6], "generation_settings": {"seed": 42}}
    both = shape.answer([final("x"), final("y", probs=[{"id": 1}])])
    assert [a["content"] for a in both] == ["x", "y"] and [a["tokens"] for a in both] == [[], []]
    assert "completion_probabilities" not in both[0]
    assert both[1]["completion_probabilities"] == [{"id": 1}]


def test_openai_completion_shapes():
    shape = shapes.OaiCompletionShape("cmpl-x", 100, "local")
    top = {"id": "cmpl-x", "object": "text_completion", "created": 100, "model": "local",
           "system_fingerprint": "labkit"}
    assert shape.done_marker is True
    piece = shape.piece(0, token("Hi"))
    assert piece == {**top, "choices": [{"index": 0, "text": "Hi", "logprobs": None,
                                         "finish_reason": None}]}
    assert "usage" not in piece and "timings" not in piece
    assert shape.final(0, final()) == [{**top, "choices": [
        {"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}],
        "usage": shapes.usage(final()), "timings": TIMINGS}]
    answer = shape.answer([final("a"), final("b", reason="length", probs=[{"id": 1}])])
    assert answer["choices"] == [
        {"index": 0, "text": "a", "logprobs": None, "finish_reason": "stop"},
        {"index": 1, "text": "b", "logprobs": {"content": [{"id": 1}]},
         "finish_reason": "length"}]


def test_generation_settings():
    p = SamplingParams(logit_bias=[(5, float("-inf")), ("ab", 1.5)], ignore_eos=True,
                       max_tokens=3)
    s = shapes.generation_settings(p, True, lambda text: [ord(c) for c in text], eog=[2])
    assert s["logit_bias"] == [{"bias": None, "token": 5}, {"bias": 1.5, "token": 97},
                               {"bias": 1.5, "token": 98}, {"bias": None, "token": 2}]
    assert (s["seed"], s["n_predict"], s["max_tokens"], s["stream"]) == (0xFFFFFFFF, 3, 3, True)
    assert s["top_p"] == 0.949999988079071 and s["top_k"] == 40   # a C float, written back
    assert s["samplers"] == validate.DEFAULT_SAMPLERS and s["grammar"] == ""
    assert json.dumps(s)   # plain JSON
