"""Turning an HTTP request body into engine arguments, or into a clear 4xx.

Every check here answers the question a client would ask when its request is
refused: which field, what was wrong, what is allowed. The error bodies follow
llama-server's shape: ``{"error": {"code", "message", "type"}}``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from ..engine import SamplingParams, guidance
from . import fields
from .errors import ApiError

# A request body larger than this is refused with 413 before it is parsed.
MAX_BODY_BYTES = 8 * 2**20
# max_tokens must fit llama.cpp's int32 n_predict; anything larger is a client bug.
MAX_TOKENS_LIMIT = 2**31 - 1


def bad(message: str) -> ApiError:
    return ApiError(400, message)


def parse_json_body(raw: bytes) -> dict:
    """Bytes -> a JSON object, refusing oversize, non-UTF-8, malformed and non-object bodies."""
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(413, f"request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(f"request body is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise bad("request body is empty; send a JSON object")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"request body is not valid JSON: {exc.msg} at line {exc.lineno} "
                  f"column {exc.colno}") from None
    if not isinstance(body, dict):
        raise bad(f"request body must be a JSON object, got {type(body).__name__}")
    return body


def _number(body: dict, key: str, default, lo=None, hi=None, integer=False):
    v = body.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise bad(f"'{key}' must be a number, got {json.dumps(v)[:40]}")
    if not math.isfinite(v):
        raise bad(f"'{key}' must be a finite number, got {v}")
    if integer:
        if v != int(v):
            raise bad(f"'{key}' must be an integer, got {v}")
        v = int(v)
    if lo is not None and v < lo:
        raise bad(f"'{key}' must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise bad(f"'{key}' must be <= {hi}, got {v}")
    return v


def _bool(body: dict, key: str, default: bool) -> bool:
    v = body.get(key, default)
    if not isinstance(v, bool):
        raise bad(f"'{key}' must be true or false, got {json.dumps(v)[:40]}")
    return v


def _stop(body: dict) -> list[str]:
    v = body.get("stop")
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, list) and all(isinstance(s, str) for s in v):
        return [s for s in v if s]
    raise bad("'stop' must be a string or a list of strings")


def max_tokens(body: dict) -> int | None:
    """max_completion_tokens, max_tokens or n_predict; -1 or absent means no limit."""
    for key in ("max_completion_tokens", "max_tokens", "n_predict"):
        if body.get(key) is not None:
            n = _number(body, key, None, lo=-1, hi=MAX_TOKENS_LIMIT, integer=True)
            return None if n == -1 else n
    return None


def sampling_params(body: dict, chat: bool = False) -> SamplingParams:
    """The sampling fields shared by /v1/chat/completions and /completion (``chat``: OpenAI's
    chat rules for ``logprobs``); llama-server's further fields are read by :mod:`.fields`."""
    p = SamplingParams(
        max_tokens=max_tokens(body),
        temperature=_number(body, "temperature", 0.8, lo=0.0, hi=100.0),
        top_k=_number(body, "top_k", 40, lo=0, integer=True),
        top_p=_number(body, "top_p", 0.95, lo=0.0, hi=1.0),
        min_p=_number(body, "min_p", 0.05, lo=0.0, hi=1.0),
        seed=_seed(body),
        stop=_stop(body),
        cache_prompt=_bool(body, "cache_prompt", True),
        ignore_eos=_bool(body, "ignore_eos", False),
    )
    rf = body.get("response_format")
    if rf is not None:
        if not isinstance(rf, dict) or rf.get("type") not in ("text", "json_object", "json_schema"):
            raise bad("'response_format' must be {\"type\": \"text\" | \"json_object\" | "
                      "\"json_schema\"}")
        if rf["type"] == "json_object":
            schema = rf.get("schema")
            if schema is not None:
                p.json_schema = schema
            else:
                p.json_object = True
        elif rf["type"] == "json_schema":
            js = rf.get("json_schema")
            schema = js.get("schema") if isinstance(js, dict) else None
            if not isinstance(schema, dict):
                raise bad("'response_format.json_schema.schema' must be a JSON schema object")
            p.json_schema = schema
        # on the chat endpoint, llama-server's chat parser builds the grammar of the whole
        # answer (the JSON, optionally in a ```json fence)
        p.chat_json = chat and rf["type"] != "text"
        if p.json_schema is not None:
            try:   # the engine's own conversion, so a bad schema is a 400 here, not a 500 later
                p.gbnf()
            except Exception as exc:
                raise bad(f"JSON schema error: {exc}") from None
    grammar = body.get("grammar")
    if grammar is not None:
        if not isinstance(grammar, str):
            raise bad("'grammar' must be a GBNF string")
        p.grammar = grammar
    elif not chat and body.get("json_schema") is not None:
        # /completion's json_schema: llama.cpp's json_schema_to_grammar, which (llama-server
        # being built with llguidance) hands the schema to llguidance
        schema = body["json_schema"]
        if not isinstance(schema, dict):
            raise bad("'json_schema' must be a JSON schema object")
        p.grammar = guidance.schema_grammar(schema)
        error = guidance.check(p.grammar)
        if error:   # llama-server would generate unconstrained; labkit refuses
            raise bad(f"JSON schema error: {error.splitlines()[0]}")
    try:
        fields.apply(body, p, chat)
    except ValueError as exc:
        raise bad(str(exc)) from None
    return p


def _seed(body: dict) -> int | None:
    return fields.seed(_number(body, "seed", None))


@dataclass
class ChatRequest:
    messages: list[dict]
    stream: bool
    include_usage: bool
    params: SamplingParams
    model: str | None
    tools: list = field(default_factory=list)   # :func:`.tools.parse_tools`'s list
    tool_choice: str = "auto"


def chat_request(body: dict) -> ChatRequest:
    msgs = body.get("messages")
    if msgs is None:
        raise bad("'messages' is required: a non-empty list of {\"role\", \"content\"}")
    if not isinstance(msgs, list) or not msgs:
        raise bad("'messages' must be a non-empty list of {\"role\", \"content\"}")
    clean = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise bad(f"messages[{i}] must be an object with 'role' and 'content'")
        role, content = m.get("role"), m.get("content")
        if role not in ("system", "user", "assistant", "developer", "tool"):
            raise bad(f"messages[{i}].role must be system, user, assistant or tool, "
                      f"got {json.dumps(role)[:40]}")
        if isinstance(content, list):  # OpenAI content parts: text parts only (the engine joins them)
            texts = [p.get("text") for p in content if isinstance(p, dict)
                     and p.get("type") == "text" and isinstance(p.get("text"), str)]
            if len(texts) != len(content):
                raise bad(f"messages[{i}].content: only text parts are supported")
            content = [{"type": "text", "text": t} for t in texts]
        if content is None and role == "assistant":
            content = ""
        if not isinstance(content, (str, list)):
            raise bad(f"messages[{i}].content must be a string")
        msg = {"role": "system" if role == "developer" else role, "content": content}
        # what a template may render: an assistant's tool calls, a tool result's call id
        msg.update({k: m[k] for k in ("tool_calls", "tool_call_id", "name") if k in m})
        clean.append(msg)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("'model' must be a string")
    stream = _bool(body, "stream", False)
    so = body.get("stream_options") or {}
    if not isinstance(so, dict):
        raise bad("'stream_options' must be an object")
    from .tools import read as read_tools
    tools, tool_choice = read_tools(body)
    return ChatRequest(clean, stream, bool(so.get("include_usage", False)),
                       sampling_params(body, chat=True), model, tools, tool_choice)


def prompt_field(body: dict):
    """/completion's 'prompt': a string, or a list of token ids."""
    prompt = body.get("prompt", body.get("content"))
    if isinstance(prompt, str):
        if not prompt:
            raise bad("'prompt' is empty")
        return prompt
    if isinstance(prompt, list) and prompt and all(
            isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return prompt
    raise bad("'prompt' must be a non-empty string or a list of token ids")
