"""Generated request bodies against every POST route of labkit's server, on a real model.

One boundary reads every body (labkit.server.strict_json, then labkit.server.validate): a
body it refuses is a 4xx in llama-server's error shape naming the field, and a body it
accepts reaches the engine with values llama.cpp can hold. So whatever a client sends, the
answer is never a 5xx and is always strict JSON (no ``NaN`` or ``Infinity``, which a browser's
``JSON.parse`` refuses). The property test sends bodies Hypothesis generates: bodies built
from the fields llama-server reads, with wild values in them (NaN, Infinity, numbers past a
double or a C float, lone surrogates, deep nesting, wrong types) and some that are garbage
outright; the explicit cases of issue #27 are its examples, and are checked once more below
for the field their 400 names.

Two 5xx are llama-server's own answers to a request, not faults, and are allowed: POST /props
is 501 ``not_supported_error`` (changing global properties is not supported), and a malformed
``tools`` is llama-server's 500 "Failed to parse tools: ..." (docs/ENGINE.md, held to
llama-server by tests/differential_cases.py). They are counted apart and printed.

The model is a synthetic toy (four layers, 128 wide, the embedded model's tokenizer and chat
template), written once per run: real llama.cpp generation, at a few milliseconds a token.
An accepted body generates at most 4 tokens: the strategies only give the token limits small
values, or values the server must refuse.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from labkit.server.app import ROUTES

pytestmark = pytest.mark.slow

POST_ROUTES = sorted({path for path, _, methods in ROUTES if "POST" in methods})
EXAMPLES = 250
MAX_NEW_TOKENS = 4
TALLY: Counter = Counter()


# ------------------------------------------------------------------ the server

@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from starlette.testclient import TestClient

    from labkit.engine import EngineConfig
    from labkit.models import catalog, synthetic
    from labkit.server.app import ServerState, create_app

    shape = dataclasses.replace(catalog.get("llama-3.1-8b"), key="toy", name="Toy", n_layer=4,
                                n_head=4, n_head_kv=2, head_dim=32, n_embd=128, n_ff=256,
                                n_vocab=0, n_params=0)
    spec = SimpleNamespace(key="toy", quant="q4_0", shape=shape, name="synthetic:toy:q4_0")
    path = synthetic.write(spec, tmp_path_factory.mktemp("toy") / "toy.gguf")
    state = ServerState(EngineConfig(str(path), n_ctx=1024, n_slots=2, kv_unified=False,
                                     n_threads=2), alias="toy")
    with TestClient(create_app(state, load_in_background=False),
                    raise_server_exceptions=False) as c:
        yield c
    print(f"\ngenerated bodies sent: {sum(TALLY.values())} (issue #27's {len(ISSUE_CASES)} among "
          f"them); answers: {dict(TALLY)}")


# ------------------------------------------------------------------ a body as raw JSON text

@dataclasses.dataclass(frozen=True)
class Raw:
    """A piece of body text written as it is: what Python's json would write or accept but
    JSON does not have (NaN, 1e400, a 5,000-digit integer, 5,000 levels of nesting)."""
    text: str


def text_of(value) -> str:
    """``value`` as the body's text: strings escaped (a lone surrogate as ``\\ud800``),
    floats as Python writes them (``NaN``, ``Infinity``), :class:`Raw` as it is."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {text_of(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(text_of, value)) + "]"
    return json.dumps(value)


# ------------------------------------------------------------------ strategies

SPECIAL_NUMBERS = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-1e400"),
                   Raw("9" * 5000), Raw("1" + "0" * 400), Raw("2e308")]
numbers = st.one_of(
    st.integers(-5, 5), st.sampled_from([2**31 - 1, 2**31, -2**31 - 1, 2**63, 2**64, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, -0.0, 1e-400, 3.4e38, 3.5e38, -1e39, 1e300, 1.7e308]),
    st.sampled_from(SPECIAL_NUMBERS))
LONE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
texts = st.one_of(st.text(max_size=12), st.sampled_from(["", "Hello", "12", " 7", "-1", "true"]),
                  st.builds(lambda a, s, b: a + s + b, st.text(max_size=4), LONE,
                            st.text(max_size=4)))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
DEEP = [Raw("[" * n + "]" * n) for n in (64, 65, 5000)] + [Raw('{"a":' * 5000 + "1" +
                                                               "}" * 5000)]
wild = st.recursive(
    st.one_of(scalars, st.sampled_from(DEEP)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(texts, inner, max_size=4)),
    max_leaves=10)

# small enough to generate quickly, or something the server must refuse
token_limits = st.one_of(st.integers(0, MAX_NEW_TOKENS), st.sampled_from(
    [-2, -5, 2.5, 2**31, 10**30, 1e300, "4", True, [4]] + SPECIAL_NUMBERS))
counts = st.one_of(st.integers(-1, 3), st.sampled_from(
    [2**31, -2**31 - 1, 1e300, 0.5, "2", False] + SPECIAL_NUMBERS))
message = st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["system", "user", "assistant", "developer", "tool"]),
                       wild),
     "content": st.one_of(texts, st.lists(st.fixed_dictionaries(
         {"type": st.sampled_from(["text", "image_url"]), "text": texts}), max_size=2), wild)},
    optional={"tool_calls": wild, "name": wild, "tool_call_id": wild})
messages = st.one_of(st.lists(message, min_size=1, max_size=3), wild)
prompts = st.one_of(texts.filter(bool), st.lists(st.integers(-2, 60000), min_size=1, max_size=4),
                    st.lists(st.one_of(texts, st.integers(0, 5000)), min_size=1, max_size=3),
                    wild)
logit_biases = st.one_of(
    st.dictionaries(st.one_of(texts, st.integers(-1, 60000).map(str)),
                    st.one_of(numbers, st.booleans(), texts), max_size=3),
    st.lists(st.tuples(st.one_of(st.integers(-1, 60000), texts),
                       st.one_of(numbers, st.booleans())).map(list), max_size=3),
    wild)
schemas = st.one_of(st.just({"type": "object", "properties": {"a": {"type": "integer"}}}),
                    st.dictionaries(st.sampled_from(["type", "properties", "minLength",
                                                     "maxItems", "enum", "items"]), wild,
                                    max_size=3),
                    wild)
response_formats = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "json_object", "json_schema",
                                                     "xml"])},
                          optional={"schema": schemas,
                                    "json_schema": st.fixed_dictionaries({"schema": schemas})}),
    wild)
tools = st.one_of(st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "fn"]),
     "function": st.fixed_dictionaries({"name": texts}, optional={"parameters": schemas})}),
    max_size=2), wild)

FIELDS = {
    "max_tokens": token_limits, "max_completion_tokens": token_limits, "n_predict": token_limits,
    "temperature": numbers, "top_k": numbers, "top_p": numbers, "min_p": numbers,
    "seed": numbers, "repeat_penalty": numbers, "presence_penalty": numbers,
    "frequency_penalty": numbers, "repeat_last_n": numbers,
    "n_probs": counts, "logprobs": st.one_of(st.booleans(), counts), "top_logprobs": counts,
    "n": counts, "logit_bias": logit_biases, "stop": st.one_of(texts, st.lists(texts), wild),
    "stream": st.one_of(st.booleans(), wild), "stream_options": st.one_of(st.fixed_dictionaries(
        {"include_usage": st.one_of(st.booleans(), wild)}), wild),
    "cache_prompt": st.one_of(st.booleans(), wild), "ignore_eos": st.one_of(st.booleans(), wild),
    "return_tokens": st.one_of(st.booleans(), wild),
    "response_format": response_formats, "json_schema": schemas,
    "grammar": st.one_of(st.sampled_from(['root ::= "a"', "root ::= [", "%llguidance {}\nstart: "
                                          '"a"']), texts, wild),
    "tools": tools, "tool_choice": st.one_of(st.sampled_from(["auto", "none", "required", "x"]),
                                             wild),
    "model": st.one_of(texts, wild), "mirostat": numbers, "typical_p": numbers,
    "min_keep": numbers, "samplers": wild, "post_sampling_probs": st.one_of(st.booleans(), wild),
    "messages": messages, "prompt": prompts, "content": st.one_of(texts, wild),
    "tokens": st.one_of(st.lists(st.integers(-2, 60000), max_size=4), wild),
    "add_special": st.one_of(st.booleans(), wild), "with_pieces": st.one_of(st.booleans(), wild),
}
LIMITS = {"max_tokens", "max_completion_tokens", "n_predict"}
BASE = {"messages": [{"role": "user", "content": "Hi"}], "prompt": "Once upon",
        "content": "Hello", "tokens": [1, 2, 3], "max_tokens": 2}


@st.composite
def bodies(draw):
    """A body's text: a valid request with some fields changed (most often), a body of
    fields all generated, or anything at all."""
    kind = draw(st.sampled_from(["changed", "changed", "changed", "fields", "anything"]))
    if kind == "anything":
        return text_of(draw(wild))
    body = dict(BASE, stream=draw(st.booleans())) if kind == "changed" else {}
    for key in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=4, unique=True)):
        body[key] = draw(FIELDS[key])
    if kind == "fields" and draw(st.booleans()):   # an unknown field or two
        body.update(draw(st.dictionaries(texts, wild, max_size=2)))
    if not LIMITS & body.keys():   # no limit would generate until the context is full
        body["n_predict"] = draw(st.integers(0, MAX_NEW_TOKENS))
    return text_of(body)


# ------------------------------------------------------------------ what every answer must be

def strict(text: str):
    """``text`` parsed as strict JSON: NaN or Infinity in it fails the test."""
    def refuse(literal):
        raise AssertionError(f"the answer holds {literal}, which JSON does not have: "
                             f"{text[:300]}")
    return json.loads(text, parse_constant=refuse)


def allowed_5xx(status: int, error: dict) -> str | None:
    """The name of a 5xx that is llama-server's own answer to the request, else None."""
    if status == 501 and error.get("type") == "not_supported_error":
        return "501 not supported"
    if status == 500 and error.get("message", "").startswith("Failed to parse tools:"):
        return "500 llama-server's bad-tools answer"
    return None


def check_answer(r, route: str) -> tuple[dict | None, str]:
    """Hold an answer to the rules: strict JSON throughout (every event of a stream), an
    error in llama-server's shape with its status as its code, and no 5xx but the allowed
    ones. The parsed body (None for a stream) and the outcome's name."""
    assert r.headers["content-type"].startswith(("application/json", "text/event-stream")), \
        (route, r.status_code, r.text[:300])
    if r.headers["content-type"].startswith("text/event-stream"):
        assert r.status_code == 200
        events = [ln[6:] for ln in r.text.splitlines() if ln.startswith("data: ")]
        assert events, r.text[:300]
        for data in events:
            chunk = strict(data) if data != "[DONE]" else {}
            assert "error" not in chunk or chunk["error"]["code"] < 500, (route, data[:300])
        return None, "200 stream"
    body = strict(r.text)
    if r.status_code >= 400:
        err = body["error"]
        assert set(err) >= {"code", "message", "type"} and err["code"] == r.status_code, body
        assert isinstance(err["message"], str) and err["message"]
        if r.status_code >= 500:
            why = allowed_5xx(r.status_code, err)
            assert why is not None, (route, r.status_code, err)
            return body, why
    return body, str(r.status_code)


def post(client, route: str, text: str):
    return client.post(route, content=text.encode("utf-8", "surrogatepass"),
                       headers={"Content-Type": "application/json"})


# ------------------------------------------------------------------ issue #27's cases

CHAT = '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, %s}'
PROMPT = '{"prompt": "Once", "n_predict": 2, %s}'
ISSUE_CASES = [   # (route, body, the field the 400 must name)
    ("/completion", PROMPT % '"presence_penalty": NaN', "presence_penalty"),
    ("/completion", PROMPT % '"presence_penalty": NaN, "stream": true', "presence_penalty"),
    ("/completion", PROMPT % '"frequency_penalty": -Infinity', "frequency_penalty"),
    ("/completion", PROMPT % '"logit_bias": {"15043": Infinity}, "stream": true',
     "logit_bias.15043"),
    ("/completion", PROMPT % '"logit_bias": [[15043, 1e400]]', "logit_bias[0][1]"),
    ("/completion", PROMPT % '"logit_bias": {"15043": 1e39}', "logit_bias"),
    ("/v1/chat/completions", CHAT % '"n_probs": Infinity', "n_probs"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "Hi"}], '
                             '"max_tokens": 1e400}', "max_tokens"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "Hi"}], '
                             '"max_tokens": 1' + "0" * 400 + "}", "max_tokens"),
    ("/v1/completions", PROMPT % ('"seed": ' + "7" * 5000), "seed"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "\\ud800"}]}',
     "messages[0].content"),
    ("/tokenize", '{"content": "a\\udfffb"}', "content"),
    ("/completion", '{"prompt": ' + "[" * 5000 + "]" * 5000 + "}", "nest more than 64 levels"),
    ("/apply-template", "[" * 5000 + "]" * 5000, "nest more than 64 levels"),
    ("/v1/chat/completions", CHAT % '"presence_penalty": 1e300', "presence_penalty"),
    ("/completion", PROMPT % '"top_k": 4294967296', "top_k"),
]


def with_issue_cases(test):
    for route, text, _ in ISSUE_CASES:
        test = example(route=route, text=text)(test)
    return test


@with_issue_cases
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(POST_ROUTES), text=bodies())
def test_no_generated_body_gets_a_5xx_or_an_answer_that_is_not_json(client, route, text):
    TALLY[check_answer(post(client, route, text), route)[1]] += 1


@pytest.mark.parametrize("route,text,field", ISSUE_CASES,
                         ids=[f"{r}-{f}" for r, _, f in ISSUE_CASES])
def test_issue_27s_bodies_are_400s_naming_the_field(client, route, text, field):
    r = post(client, route, text)
    err = check_answer(r, route)[0]["error"]
    assert (r.status_code, err["type"]) == (400, "invalid_request_error"), err
    assert field in err["message"], err["message"]


def test_a_finite_logit_bias_streams_strict_json(client):
    """The issue's stream ended with ``"bias": Infinity``; a bias JSON can hold is echoed as
    itself, and a ban (``false``) as null, as llama-server writes it."""
    text = PROMPT % '"logit_bias": {"15043": 3.0e38, "28": false}, "stream": true'
    r = post(client, "/completion", text)
    assert r.status_code == 200
    last = strict([ln for ln in r.text.splitlines() if ln.startswith("data: ")][-1][6:])
    assert {"bias": 3.0e38, "token": 15043} in last["generation_settings"]["logit_bias"]
    assert {"bias": None, "token": 28} in last["generation_settings"]["logit_bias"]
