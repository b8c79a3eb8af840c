"""Reading a request body: llama-server's fields into engine arguments, or a clear 4xx.

Every check here answers the question a client would ask when its request is refused: which
field, what was wrong, what is allowed. The error bodies follow llama-server's shape:
``{"error": {"code", "message", "type"}}``. The fields, read as llama-server reads them:

- the sampling basics, into :class:`~labkit.engine.SamplingParams`: ``max_tokens`` (or
  ``max_completion_tokens``, ``n_predict``), the numbers of :data:`NUMBERS`, ``seed``,
  ``stop``, ``cache_prompt``, ``ignore_eos``, ``response_format``, ``grammar`` and
  /completion's ``json_schema``. A field left out takes SamplingParams' default, which is
  llama-server's (:data:`DEFAULTS`).
- ``logit_bias``: ``{"15043": -1.5}``, ``[[15043, -1.5]]`` or ``[["Hello", -1.5]]`` (a text
  biases each of its tokens; ``false`` as the bias bans the token). Entries llama-server
  skips (a token id outside the vocabulary, a bias that is not a number) are skipped.
- ``repeat_last_n`` (64), ``repeat_penalty`` (1.0), ``frequency_penalty`` (0.0),
  ``presence_penalty`` (0.0): llama-server's defaults, which change nothing.
- token probabilities: ``n_probs`` (/completion), OpenAI's ``logprobs`` + ``top_logprobs``
  (/v1/chat/completions: 20 top tokens when ``top_logprobs`` is left out), ``logprobs`` as a
  number (/v1/completions; ``true`` means 1).
- ``seed``: any number, taken as llama-server takes it: its low 32 bits (``-1`` and
  4294967295 draw a random seed).
- ``n``: how many answers to generate for one prompt, from 1 to the number of slots (the
  k-th seeded ``seed + k``).
- ``prompt`` (/completion, /v1/completions): one prompt (a string, a list of token ids, or a
  list mixing strings and token ids) or a list of prompts, one answer each.
- a chat request's ``messages``, ``stream``, ``stream_options`` and ``model``, and its
  ``tools`` and ``tool_choice`` (:mod:`.tools`).
- /tokenize's ``content``, ``add_special`` and ``with_pieces``; /detokenize's ``tokens``.

llama-server also reads sampling fields that labkit's engine does not implement
(:data:`UNSUPPORTED`); given a value that would change the answer, each is refused with a 400
naming it, rather than ignored.

A body arrives here as strict JSON (:mod:`.strict_json`): every number in it is finite and
within a double's range, every string valid Unicode. What llama.cpp holds in a C type is
then checked against that type (a penalty or a bias within a C float's range, ``top_k`` and
``n_probs`` within an int32), so nothing a client sends becomes inf or wraps in the engine.
Every number field is read by :func:`number`, but for ``logit_bias``' entries and
``logprobs``, which llama-server reads leniently (see above). The readers of whole bodies raise
:class:`~.errors.ApiError`; the readers of single fields that mirror llama-server's own
checks (:func:`n_probs`, :func:`n_choices`, :func:`completion_prompts`) raise ValueError with
the message the client sees, which the readers that call them turn into a 400.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace

from ..engine import SamplingParams, guidance
from . import strict_json
from .errors import ApiError
from .tools import read as read_tools

# A request body larger than this is refused with 413 before it is parsed.
MAX_BODY_BYTES = 8 * 2**20
# max_tokens must fit llama.cpp's int32 n_predict; anything larger is a client bug.
MAX_TOKENS_LIMIT = INT32_MAX = 2**31 - 1
# llama.cpp holds the penalties and logit biases as C floats: beyond this a value is inf.
FLOAT32_MAX = 3.4028234663852886e38
# What a request that sets nothing gets: SamplingParams' defaults, llama-server's. Never changed.
DEFAULTS = SamplingParams()
# The sampling fields that are plain numbers: body key (a SamplingParams field) -> (lowest,
# highest, whole number).
NUMBERS = {
    "temperature": (0.0, 100.0, False),
    "top_k": (0, INT32_MAX, True),
    "top_p": (0.0, 1.0, False),
    "min_p": (0.0, 1.0, False),
}
# /v1/chat/completions' top_logprobs when logprobs is true and top_logprobs is left out.
DEFAULT_TOP_LOGPROBS = 20

# llama-server's sampling fields that labkit's engine does not implement: the value that turns
# each one off (which labkit accepts), and a test of "this value would change the answer".
UNSUPPORTED = {
    "mirostat": (0, lambda v: v != 0),
    "typical_p": (1.0, lambda v: v < 1.0),
    "dynatemp_range": (0.0, lambda v: v > 0.0),
    "top_n_sigma": (-1.0, lambda v: v > 0.0),
    "xtc_probability": (0.0, lambda v: v > 0.0),
    "dry_multiplier": (0.0, lambda v: v > 0.0),
    "min_keep": (0, lambda v: v > 1),
    "adaptive_target": (-1.0, lambda v: v >= 0.0),
    "n_indent": (0, lambda v: v > 0),
    "t_max_predict_ms": (0, lambda v: v > 0),
    "post_sampling_probs": (False, lambda v: v is True),
}
DEFAULT_SAMPLERS = ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc",
                    "temperature"]
BAD_PROMPT_ELEMENT = ('"prompt" elements must be a string, a list of tokens, a JSON object '
                      'containing a prompt string, or a list of mixed strings & tokens.')


def bad(message: str) -> ApiError:
    return ApiError(400, message)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_json_body(raw: bytes) -> dict:
    """Bytes -> a JSON object, refusing oversize, non-UTF-8, malformed and non-object bodies,
    and what strict JSON does not allow (:mod:`.strict_json`: NaN and Infinity, numbers beyond
    a double, lone surrogates, nesting deeper than its limit)."""
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(413, f"request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(f"request body is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise bad("request body is empty; send a JSON object")
    body = strict_json.loads(text)
    if not isinstance(body, dict):
        raise bad(f"request body must be a JSON object, got {type(body).__name__}")
    return body


# ------------------------------------------------------------------ single fields

def number(body: dict, key: str, default, lo=None, hi=None, integer: bool = False,
           cut: bool = False):
    """``body[key]`` as a finite number (``default`` when it is absent or null), within ``lo``
    and ``hi``. ``integer``: a whole number, a fraction refused; ``cut``: a whole number, a
    fraction cut toward zero, as llama-server's JSON reader does."""
    v = body.get(key)
    if v is None:
        return default
    if not _is_number(v):
        raise bad(f"'{key}' must be a number, got {json.dumps(v)[:40]}")
    if not math.isfinite(v):
        raise bad(f"'{key}' must be a finite number, got {v}")
    if integer and v != int(v):
        raise bad(f"'{key}' must be an integer, got {v}")
    if integer or cut:
        v = int(v)
    if lo is not None and v < lo:
        raise bad(f"'{key}' must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise bad(f"'{key}' must be <= {hi}, got {v}")
    return v


def flag(body: dict, key: str, default: bool) -> bool:
    v = body.get(key, default)
    if not isinstance(v, bool):
        raise bad(f"'{key}' must be true or false, got {json.dumps(v)[:40]}")
    return v


def seed(value: int | float | None) -> int | None:
    """A request's seed as llama-server reads it into its 32-bit seed: a fraction is cut
    toward zero, a negative or larger number keeps its low 32 bits (beyond 2**63 it reads 0).
    None (a random seed) for None, -1 and 4294967295."""
    if value is None:
        return None
    if isinstance(value, float) or not -2**63 <= value < 2**64:   # read as floating point
        value = int(value) if abs(value) < 2**63 else 0
    value &= 0xFFFFFFFF
    return None if value == 0xFFFFFFFF else value


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
            n = number(body, key, None, lo=-1, hi=MAX_TOKENS_LIMIT, integer=True)
            return None if n == -1 else n
    return None


def logit_bias(value) -> list[tuple[int | str, float]]:
    """(token id or text, bias) pairs, read as llama-server reads ``logit_bias``: an object
    {key: bias} (a key that is a whole number is a token id, any other a text) or a list of
    [token id or text, bias] pairs; ``false`` as the bias bans; anything else is skipped.
    A bias beyond a C float's range (which llama.cpp would hold as inf) is refused with a
    ValueError naming its token."""
    def bias_of(key, b):
        if _is_number(b):
            if abs(b) > FLOAT32_MAX:
                raise ValueError(f"'logit_bias' of {json.dumps(key)[:40]}: the bias {b:g} is "
                                 f"beyond a 32-bit float's range (±{FLOAT32_MAX:.4g})")
            return float(b)
        return float("-inf") if b is False else None

    out: list[tuple[int | str, float]] = []
    if isinstance(value, dict):
        for key, b in value.items():
            b = bias_of(key, b)
            if b is not None:   # strtol's reading: "" is 0, "12" is 12, "Hello" is a text
                numeric = key == "" or re.fullmatch(r"\s*[+-]?\d+", key)
                if not numeric:
                    out.append((key, b))
                elif len(key.strip().lstrip("+-")) <= 18:   # more digits: strtol's LONG_MAX,
                    out.append((int(key or 0), b))          # no token's id, so skipped
    elif isinstance(value, list):
        for el in value:
            if (isinstance(el, list) and len(el) == 2
                    and (_is_int(el[0]) or isinstance(el[0], str))):
                b = bias_of(el[0], el[1])
                if b is not None:
                    out.append((el[0], b))
    return out


def n_probs(body: dict, chat: bool) -> int:
    """How many top tokens to report with each token (0: no probabilities)."""
    def count(key, default):   # llama-server's int32 n_probs
        return number(body, key, default, lo=-INT32_MAX - 1, hi=INT32_MAX, cut=True)
    if chat:
        if body.get("logprobs") is True:
            return count("top_logprobs", DEFAULT_TOP_LOGPROBS)
        if body.get("top_logprobs") is not None:
            raise ValueError("top_logprobs requires logprobs to be set to true")
    n = count("n_probs", 0)
    if n == 0:
        lp = body.get("logprobs")
        n = count("logprobs", 0) if _is_number(lp) else int(lp is True and not chat)
    return n


def refuse_unsupported(body: dict) -> None:
    for key, (off, changes) in UNSUPPORTED.items():
        v = body.get(key)
        if v is not None and (_is_number(v) or isinstance(v, bool)) and changes(v):
            raise ValueError(f"'{key}' is not supported by labkit's engine; leave it out "
                             f"(or at {str(off).lower()})")
    samplers = body.get("samplers")
    if samplers is not None and samplers != DEFAULT_SAMPLERS:
        raise ValueError("'samplers' is not supported by labkit's engine: its order is fixed "
                         f"({', '.join(DEFAULT_SAMPLERS)}); leave it out")


def n_choices(body: dict, n_slots: int) -> int:
    """``n``: how many answers for one prompt, 1 to the number of slots, as llama-server allows."""
    n = number(body, "n", 1, cut=True)
    if not 1 <= n <= n_slots:
        raise ValueError(f"Field 'n': Value must be between 1 <= value <= {n_slots}, "
                         f"but got {n}")
    return n


def choices(body: dict, n_slots: int) -> int:
    """:func:`n_choices`, a value out of range refused with a 400."""
    try:
        return n_choices(body, n_slots)
    except ValueError as exc:
        raise bad(str(exc)) from None


def choice_params(p: SamplingParams, k: int) -> SamplingParams:
    """Choice k's parameters: llama-server seeds the k-th answer to one prompt with seed + k
    (a random seed stays random)."""
    return p if k == 0 or p.seed is None else replace(p, seed=seed(p.seed + k))


# ------------------------------------------------------------------ the sampling parameters

def sampling_params(body: dict, chat: bool = False) -> SamplingParams:
    """The sampling fields of /v1/chat/completions and /completion (``chat``: OpenAI's chat
    rules for ``logprobs``)."""
    p = SamplingParams(
        max_tokens=max_tokens(body),
        **{key: number(body, key, getattr(DEFAULTS, key), lo=lo, hi=hi, integer=whole)
           for key, (lo, hi, whole) in NUMBERS.items()},
        seed=seed(number(body, "seed", None)),
        stop=_stop(body),
        cache_prompt=flag(body, "cache_prompt", DEFAULTS.cache_prompt),
        ignore_eos=flag(body, "ignore_eos", DEFAULTS.ignore_eos),
    )
    _response_format(body, p, chat)
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
        _penalties_and_probs(body, p, chat)
    except ValueError as exc:
        raise bad(str(exc)) from None
    return p


def _response_format(body: dict, p: SamplingParams, chat: bool) -> None:
    rf = body.get("response_format")
    if rf is None:
        return
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


def _penalties_and_probs(body: dict, p: SamplingParams, chat: bool) -> None:
    """logit_bias, the repetition penalties, the token probabilities, and the refusal of the
    samplers labkit lacks, with llama-server's own messages."""
    p.logit_bias = logit_bias(body.get("logit_bias"))
    p.repeat_last_n = number(body, "repeat_last_n", p.repeat_last_n, cut=True)
    if not 0 <= p.repeat_last_n <= INT32_MAX:
        raise ValueError(f"Field 'repeat_last_n': Value must be between 0 <= value <= "
                         f"{INT32_MAX}, but got {p.repeat_last_n}")
    p.repeat_penalty = float(number(body, "repeat_penalty", p.repeat_penalty, hi=FLOAT32_MAX))
    if not p.repeat_penalty > 0.0:
        raise ValueError("Failed to initialize samplers: penalty_repeat must be finite and "
                         "greater than 0")
    for key in ("frequency_penalty", "presence_penalty"):
        setattr(p, key, float(number(body, key, getattr(p, key), lo=-FLOAT32_MAX,
                                     hi=FLOAT32_MAX)))
    p.n_probs = n_probs(body, chat)
    refuse_unsupported(body)


# ------------------------------------------------------------------ /tokenize, /detokenize

def tokenize_request(body: dict) -> tuple[str, bool, bool]:
    """/tokenize's ``content``, ``add_special`` (false unless given) and ``with_pieces``."""
    content = body.get("content")
    if not isinstance(content, str):
        raise bad("'content' must be a string")
    add_special = body.get("add_special", False)
    if not isinstance(add_special, bool):
        raise bad("'add_special' must be true or false")
    return content, add_special, bool(body.get("with_pieces"))


def token_ids(body: dict) -> list[int]:
    """/detokenize's ``tokens``: a list of token ids."""
    tokens = body.get("tokens")
    if not isinstance(tokens, list) or not all(_is_int(t) for t in tokens):
        raise bad("'tokens' must be a list of token ids")
    return tokens


# ------------------------------------------------------------------ chat requests

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
    clean = [_message(i, m) for i, m in enumerate(msgs)]
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("'model' must be a string")
    stream = flag(body, "stream", False)
    so = body.get("stream_options") or {}
    if not isinstance(so, dict):
        raise bad("'stream_options' must be an object")
    tools, tool_choice = read_tools(body)
    return ChatRequest(clean, stream, bool(so.get("include_usage", False)),
                       sampling_params(body, chat=True), model, tools, tool_choice)


def _message(i: int, m) -> dict:
    """messages[i], checked, as the chat template gets it."""
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
    return msg


# ------------------------------------------------------------------ /completion requests

@dataclass
class CompletionRequest:
    prompts: list               # :func:`completion_prompts`' list
    params: SamplingParams
    n: int                      # answers per prompt
    stream: bool
    return_tokens: bool         # the whole answer lists its token ids


def completion_request(body: dict, n_slots: int) -> CompletionRequest:
    """A body of /completion or /v1/completions."""
    try:
        prompts = completion_prompts(body)
    except ValueError as exc:
        raise bad(str(exc)) from None
    params, n = sampling_params(body), choices(body, n_slots)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad("'stream' must be true or false")
    return CompletionRequest(prompts, params, n, stream, body.get("return_tokens") is True)


def prompt_field(body: dict):
    """/completion's 'prompt': a string, or a list of token ids."""
    prompt = body.get("prompt", body.get("content"))
    if isinstance(prompt, str):
        if not prompt:
            raise bad("'prompt' is empty")
        return prompt
    if isinstance(prompt, list) and prompt and all(_is_int(t) for t in prompt):
        return prompt
    raise bad("'prompt' must be a non-empty string or a list of token ids")


def completion_prompts(body: dict, one_prompt=prompt_field) -> list:
    """The prompts of /completion or /v1/completions: a list of one or more, each a string, a
    list of token ids or a list mixing strings and token ids. ``one_prompt`` checks a string or
    token list (labkit refuses an empty one) and returns it."""
    raw = body.get("prompt", body.get("content"))
    if isinstance(raw, list) and raw and not _one_prompt_list(raw):
        out = []
        for p in raw:
            if isinstance(p, str) or (isinstance(p, list) and p and _one_prompt_list(p)):
                out.append(p if _mixed(p) else one_prompt({"prompt": p}))
            else:
                raise ValueError(BAD_PROMPT_ELEMENT)
        return out
    return [raw if isinstance(raw, list) and _mixed(raw) else one_prompt(body)]


def _mixed(p) -> bool:
    """A list of strings and token ids with at least one of each: one prompt, pieced together."""
    return (isinstance(p, list) and any(isinstance(x, str) for x in p)
            and any(_is_int(x) for x in p) and all(isinstance(x, str) or _is_int(x) for x in p))


def _one_prompt_list(p: list) -> bool:
    """A list that is one prompt: token ids only, or token ids mixed with strings."""
    return all(_is_int(x) for x in p) or _mixed(p)


def prompt_tokens(prompt, tokenize) -> list[int]:
    """A prompt's tokens. ``tokenize(text, add_special)`` tokenizes text; in a mixed list only
    the first piece gets the tokenizer's special tokens (BOS), as in llama-server."""
    if isinstance(prompt, str):
        return tokenize(prompt, True)
    out: list[int] = []
    for i, piece in enumerate(prompt):
        out += tokenize(piece, i == 0) if isinstance(piece, str) else [piece]
    return out
