"""Request validation (labkit.server.validate) on its own: request bodies in, engine arguments
or a 4xx that says what is wrong out. No server and no model: tests/test_server.py checks
once that the server answers a bad body with exactly these errors."""

import json
import math

import pytest

from labkit.server.validate import (MAX_BODY_BYTES, ApiError, chat_request, max_tokens,
                                    parse_json_body, prompt_field, sampling_params)

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
     "'temperature' must be a finite number, got nan"),
    (b'{"messages": [{"role": "user", "content": "x"}], "top_p": Infinity}',
     "'top_p' must be a finite number, got inf"),
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
