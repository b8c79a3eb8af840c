"""Request validation (labkit.server.validate) on its own: request bodies in, engine arguments
or a 4xx that says what is wrong out. No server and no model: tests/test_server.py checks
once that the server answers a bad body with exactly these errors."""

import json
import math

import pytest

from labkit.server import shapes, strict_json, validate
from labkit.server.validate import (MAX_BODY_BYTES, ApiError, chat_request, completion_request,
                                    max_tokens, parse_json_body, prompt_field, sampling_params)

USER = [{"role": "user", "content": "x"}]


def refusal(call, *args) -> ApiError:
    with pytest.raises(ApiError) as err:
        call(*args)
    return err.value


def chat_body(**fields) -> bytes:
    return json.dumps({"messages": USER, **fields}).encode()


# ------------------------------------------------------------------ the body as bytes

@pytest.mark.parametrize("raw,needle", [
    (b"{not json", "request body is not valid JSON: Expecting property name"),
    (b"", "request body is empty"),
    (b" \n\t", "request body is empty"),
    (b"[1, 2]", "request body must be a JSON object, got list"),
    (b'"hi"', "request body must be a JSON object, got str"),
    (b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',
     "request body is not valid UTF-8 (byte 43)"),
])
def test_unreadable_bodies_are_400_with_the_reason(raw, needle):
    err = refusal(parse_json_body, raw)
    assert err.status == 400 and needle in err.message


# Strict JSON, as llama-server's parser reads it: what Python's json reads beyond JSON is a 400
# naming the place, never a value that reaches a reader (or a 500 from Python's limits).
DEEP = 5000
STRICT_JSON_REFUSALS = [
    (b'{"presence_penalty": NaN}', "'presence_penalty' is NaN, which JSON does not have"),
    (b'{"a": [1, {"b": -Infinity}]}', "'a[1].b' is -Infinity, which JSON does not have"),
    (b'{"n_probs": Infinity}', "'n_probs' is Infinity, which JSON does not have"),
    (b'{"max_tokens": 1e400}', "'max_tokens': number overflow (a JSON number must be within"),
    (b'{"x": -1e400}', "'x': number overflow"),
    (b'{"max_tokens": 1' + b"0" * 400 + b"}",
     "'max_tokens': number overflow parsing '10000000000000000000... (401 digits)'"),
    (b'{"seed": ' + b"7" * 5000 + b"}", "'seed': number overflow parsing '77777777777777777777"
                                        "... (5000 digits)'"),
    (b'{"tokens": [1, 2, -' + b"9" * 309 + b"]}", "'tokens[2]': number overflow parsing"),
    (b'{"messages": [{"role": "user", "content": "a\\ud800b"}]}',
     "'messages[0].content': invalid string: surrogate U+D800..U+DBFF must be followed by "
     "U+DC00..U+DFFF"),
    (b'{"stop": ["\\udc00"]}',
     "'stop[0]': invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF"),
    (b'{"logit_bias": {"\\ud800": 1}}', "'logit_bias.\\ud800': invalid string"),
    (b"[" * DEEP + b"]" * DEEP, f"arrays and objects nest more than {strict_json.MAX_DEPTH} "
                                "levels deep"),
    (b'{"a": ' + b"[" * 64 + b"]" * 64 + b"}", "arrays and objects nest more than 64 levels "
                                               "deep (at 'a[0][0]"),
]


@pytest.mark.parametrize("raw,needle", STRICT_JSON_REFUSALS)
def test_what_strict_json_lacks_is_a_400_naming_the_place(raw, needle):
    err = refusal(parse_json_body, raw)
    assert (err.status, err.type) == (400, "invalid_request_error")
    assert err.message.startswith("request body is not valid JSON: ")
    assert needle in err.message, err.message
    json.dumps(err.body(), ensure_ascii=False).encode()   # the answer itself is valid UTF-8


def test_strict_json_keeps_what_json_has():
    assert parse_json_body(b'{"a": "\\ud83d\\ude00", "b": 1e-400, "c": -0.0, "d": 1e308}') == \
        {"a": "\U0001F600", "b": 0.0, "c": -0.0, "d": 1e308}
    nested = b'{"a": ' + b"[" * 63 + b"]" * 63 + b"}"
    assert parse_json_body(nested)["a"] == eval("[" * 63 + "]" * 63)
    ids = list(range(100_000))
    assert parse_json_body(json.dumps({"tokens": ids}).encode()) == {"tokens": ids}


def test_answers_are_strict_json_too():
    with pytest.raises(ValueError):
        shapes.sse({"bias": math.inf})
    with pytest.raises(ValueError):
        strict_json.dumps({"logprob": math.nan})
    assert shapes.sse({"content": "é"}) == 'data: {"content": "é"}\n\n'.encode()


# Numbers JSON holds but llama.cpp does not: each refused, naming its field, before it reaches
# the engine (a C float beyond 3.4e38 is inf; an int32 beyond 2**31 - 1 wraps).
@pytest.mark.parametrize("fields,message", [
    ({"presence_penalty": 1e300}, "'presence_penalty' must be <= 3.4028234663852886e+38"),
    ({"frequency_penalty": -1e39}, "'frequency_penalty' must be >= -3.4028234663852886e+38"),
    ({"repeat_penalty": 1e39}, "'repeat_penalty' must be <= 3.4028234663852886e+38"),
    ({"top_k": 2**31}, "'top_k' must be <= 2147483647, got 2147483648"),
    ({"n_probs": 10**300}, "'n_probs' must be <= 2147483647"),
    ({"logprobs": 1e300}, "'logprobs' must be <= 2147483647"),
    ({"n_probs": -2**31 - 1}, "'n_probs' must be >= -2147483648"),
    ({"max_tokens": 10**300}, "'max_tokens' must be <= 2147483647"),
    ({"logit_bias": {"15043": 1e39}}, "'logit_bias' of \"15043\": the bias 1e+39 is beyond a "
                                      "32-bit float's range"),
    ({"logit_bias": [["Hello", -1e300]]}, "'logit_bias' of \"Hello\": the bias -1e+300"),
])
def test_numbers_beyond_llama_cpps_types_are_400_naming_the_field(fields, message):
    for read in (lambda b: completion_request({"prompt": "x", **b}, 1),
                 lambda b: chat_request({"messages": USER, **b})):
        err = refusal(read, fields)
        assert err.status == 400 and err.message.startswith(message), err.message


def test_a_logit_bias_id_too_long_for_strtol_is_skipped_like_any_unknown_id():
    assert validate.logit_bias({"1" * 5000: 1.0, "1" * 19: 2.0, " 7": 3.0}) == [(7, 3.0)]
    p = sampling_params({"logit_bias": {"1" * 5000: 1.0}, "presence_penalty": 3.4e38,
                         "top_k": 2**31 - 1, "n_probs": 2**31 - 1})
    assert (p.logit_bias, p.presence_penalty, p.top_k, p.n_probs) == \
        ([], 3.4e38, 2**31 - 1, 2**31 - 1)


def test_json_error_says_where():
    err = refusal(parse_json_body, b'{"a": 1,\n "b": }')
    assert err.message.endswith("at line 2 column 7")


def test_oversized_body_is_413_before_parsing():
    assert parse_json_body(b"{}" + b" " * (MAX_BODY_BYTES - 2)) == {}
    err = refusal(parse_json_body, b"x" * (MAX_BODY_BYTES + 1))
    assert err.status == 413
    assert err.message == (f"request body is {MAX_BODY_BYTES + 1} bytes; "
                           f"the limit is {MAX_BODY_BYTES}")


def test_error_body_has_llama_servers_shape():
    err = refusal(parse_json_body, b"[]")
    assert err.body() == {"error": {"code": 400, "type": "invalid_request_error",
                                    "message": "request body must be a JSON object, got list"}}
    extra = ApiError(400, "too long", "exceed_context_size_error", n_ctx=2048)
    assert extra.body()["error"] == {"code": 400, "message": "too long",
                                     "type": "exceed_context_size_error", "n_ctx": 2048}


# ------------------------------------------------------------------ chat requests

@pytest.mark.parametrize("raw,message", [
    (b'{"messages": "hi"}',
     "'messages' must be a non-empty list of {\"role\", \"content\"}"),
    (b'{"max_tokens": 4}', "'messages' is required: a non-empty list of {\"role\", \"content\"}"),
    (b'{"messages": []}', "'messages' must be a non-empty list of {\"role\", \"content\"}"),
    (b'{"messages": ["hi"]}', "messages[0] must be an object with 'role' and 'content'"),
    (b'{"messages": [{"role": "user", "content": 5}]}', "messages[0].content must be a string"),
    (b'{"messages": [{"role": "user", "content": "a"}, {"role": "wizard", "content": "x"}]}',
     'messages[1].role must be system, user, assistant or tool, got "wizard"'),
    (b'{"messages": [{"content": "x"}]}',
     "messages[0].role must be system, user, assistant or tool, got null"),
    (b'{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
     "messages[0].content: only text parts are supported"),
    (chat_body(max_tokens=-5), "'max_tokens' must be >= -1, got -5"),
    (chat_body(max_tokens=1e30), "'max_tokens' must be <= 2147483647, got 1000000000000000019884624838656"),
    (chat_body(max_tokens="ten"), "'max_tokens' must be a number, got \"ten\""),
    (chat_body(max_tokens=True), "'max_tokens' must be a number, got true"),
    (chat_body(max_tokens=2.5), "'max_tokens' must be an integer, got 2.5"),
    (b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
     "request body is not valid JSON: 'temperature' is NaN, which JSON does not have"),
    (b'{"messages": [{"role": "user", "content": "x"}], "top_p": Infinity}',
     "request body is not valid JSON: 'top_p' is Infinity, which JSON does not have"),
    (chat_body(temperature=-0.5), "'temperature' must be >= 0.0, got -0.5"),
    (chat_body(top_p=1.5), "'top_p' must be <= 1.0, got 1.5"),
    (chat_body(stream="yes"), "'stream' must be true or false, got \"yes\""),
    (chat_body(cache_prompt=1), "'cache_prompt' must be true or false, got 1"),
    (chat_body(stop=[1, 2]), "'stop' must be a string or a list of strings"),
    (chat_body(model=3), "'model' must be a string"),
    (chat_body(stream_options="usage"), "'stream_options' must be an object"),
    (chat_body(response_format={"type": "xml"}), "'response_format' must be"),
    (chat_body(response_format={"type": "json_schema", "json_schema": {"name": "x"}}),
     "'response_format.json_schema.schema' must be a JSON schema object"),
    (chat_body(grammar=5), "'grammar' must be a GBNF string"),
])
def test_bad_chat_requests_say_which_field_and_why(raw, message):
    err = refusal(lambda: chat_request(parse_json_body(raw)))
    assert err.status == 400
    assert err.message.startswith(message), err.message


def test_a_good_chat_request_becomes_engine_arguments():
    req = chat_request({
        "model": "local", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "developer", "content": "Be brief."},
                     {"role": "user", "content": [{"type": "text", "text": "Hello, "},
                                                  {"type": "text", "text": "world"}]},
                     {"role": "assistant", "content": None}],
        "max_completion_tokens": 7, "max_tokens": 99, "temperature": 0, "top_k": 5,
        "seed": 42, "stop": "END", "cache_prompt": False, "ignore_eos": True})
    assert req.messages == [{"role": "system", "content": "Be brief."},
                            {"role": "user", "content": [{"type": "text", "text": "Hello, "},
                                                         {"type": "text", "text": "world"}]},
                            {"role": "assistant", "content": ""}]
    assert (req.model, req.stream, req.include_usage) == ("local", True, True)
    p = req.params
    assert p.max_tokens == 7                          # max_completion_tokens comes first
    assert (p.temperature, p.top_k, p.seed, p.stop) == (0, 5, 42, ["END"])
    assert p.cache_prompt is False and p.ignore_eos is True


def test_defaults_follow_llama_server():
    p = chat_request({"messages": USER}).params
    assert p.max_tokens is None and p.seed is None and p.stop == []
    assert (p.temperature, p.top_k, p.top_p, p.min_p) == (0.8, 40, 0.95, 0.05)
    assert p.cache_prompt is True and p.ignore_eos is False


@pytest.mark.parametrize("body,want", [
    ({}, None), ({"max_tokens": -1}, None), ({"max_tokens": None, "n_predict": 3}, 3),
    ({"max_tokens": 0}, 0), ({"max_tokens": 4.0}, 4), ({"n_predict": 2**31 - 1}, 2**31 - 1),
])
def test_max_tokens_aliases_and_no_limit(body, want):
    assert max_tokens(body) == want


@pytest.mark.parametrize("seed,want", [(None, None), (-1, None), (0xFFFFFFFF, None),
                                       (0, 0), (7, 7)])
def test_seed_minus_one_and_all_ones_mean_random(seed, want):
    assert sampling_params({"seed": seed}).seed == want


def test_response_formats_set_the_constraint():
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    p = sampling_params({"response_format": {"type": "json_schema",
                                             "json_schema": {"name": "doc", "schema": schema}}})
    assert p.json_schema == schema
    assert sampling_params({"response_format": {"type": "json_object"}}).json_object is True
    p = sampling_params({"response_format": {"type": "json_object", "schema": schema}})
    assert p.json_schema == schema and not p.json_object
    assert sampling_params({"grammar": 'root ::= "a"'}).grammar == 'root ::= "a"'
    assert sampling_params({"stop": ["", "x"]}).stop == ["x"]


# ------------------------------------------------------------------ /completion's prompt

def test_prompt_is_text_or_token_ids():
    assert prompt_field({"prompt": "Once"}) == "Once"
    assert prompt_field({"content": "Once"}) == "Once"
    assert prompt_field({"prompt": [1, 2, 3]}) == [1, 2, 3]
    assert refusal(prompt_field, {"prompt": ""}).message == "'prompt' is empty"
    for bad in (None, [], [1, True], [1.5], {"a": 1}):
        assert refusal(prompt_field, {"prompt": bad}).message == \
            "'prompt' must be a non-empty string or a list of token ids"


def test_nan_is_refused_wherever_a_number_goes():
    for key in ("temperature", "top_p", "min_p", "top_k", "max_tokens", "seed"):
        err = refusal(sampling_params, {key: math.nan})
        assert err.message == f"'{key}' must be a finite number, got nan"
