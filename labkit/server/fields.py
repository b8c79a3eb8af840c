"""The generation fields llama-server reads beyond the basics, read the way it reads them.

:mod:`.validate` turns the common fields (max_tokens, temperature, top_k, top_p, min_p,
stop, grammar, ...) into :class:`~labkit.engine.SamplingParams`; this module reads the rest:

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

llama-server also reads sampling fields that labkit's engine does not implement
(:data:`UNSUPPORTED`); given a value that would change the answer, each is refused with a 400
naming it, rather than ignored.

Every function raises ValueError with the message the client sees.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..engine import SamplingParams

INT32_MAX = 2**31 - 1
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


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integer(body: dict, key: str, default: int) -> int:
    """A whole number; a fractional one is cut toward zero, as llama-server's JSON reader does."""
    v = body.get(key)
    if v is None:
        return default
    if not _is_number(v):
        raise ValueError(f"'{key}' must be a number, got {v!r}"[:120])
    return int(v)


def _number(body: dict, key: str, default: float) -> float:
    v = body.get(key)
    if v is None:
        return default
    if not _is_number(v):
        raise ValueError(f"'{key}' must be a number, got {v!r}"[:120])
    return float(v)


def apply(body: dict, p: SamplingParams, chat: bool = False) -> None:
    """Read the fields above into ``p`` (``chat``: OpenAI's chat rules for ``logprobs``)."""
    p.logit_bias = logit_bias(body.get("logit_bias"))
    p.repeat_last_n = _integer(body, "repeat_last_n", p.repeat_last_n)
    if not 0 <= p.repeat_last_n <= INT32_MAX:
        raise ValueError(f"Field 'repeat_last_n': Value must be between 0 <= value <= "
                         f"{INT32_MAX}, but got {p.repeat_last_n}")
    p.repeat_penalty = _number(body, "repeat_penalty", p.repeat_penalty)
    if not p.repeat_penalty > 0.0:
        raise ValueError("Failed to initialize samplers: penalty_repeat must be finite and "
                         "greater than 0")
    p.frequency_penalty = _number(body, "frequency_penalty", p.frequency_penalty)
    p.presence_penalty = _number(body, "presence_penalty", p.presence_penalty)
    p.n_probs = n_probs(body, chat)
    refuse_unsupported(body)


def logit_bias(value) -> list[tuple[int | str, float]]:
    """(token id or text, bias) pairs, read as llama-server reads ``logit_bias``: an object
    {key: bias} (a key that is a whole number is a token id, any other a text) or a list of
    [token id or text, bias] pairs; ``false`` as the bias bans; anything else is skipped."""
    def bias_of(b):
        if _is_number(b):
            return float(b)
        return float("-inf") if b is False else None

    out: list[tuple[int | str, float]] = []
    if isinstance(value, dict):
        for key, b in value.items():
            b = bias_of(b)
            if b is not None:   # strtol's reading: "" is 0, "12" is 12, "Hello" is a text
                numeric = key == "" or re.fullmatch(r"\s*[+-]?\d+", key)
                out.append((int(key or 0), b) if numeric else (key, b))
    elif isinstance(value, list):
        for el in value:
            if isinstance(el, list) and len(el) == 2:
                key, b = el[0], bias_of(el[1])
                if b is not None and (_is_int(key) or isinstance(key, str)):
                    out.append((key, b))
    return out


def n_probs(body: dict, chat: bool) -> int:
    """How many top tokens to report with each token (0: no probabilities)."""
    if chat:
        if body.get("logprobs") is True:
            return _integer(body, "top_logprobs", DEFAULT_TOP_LOGPROBS)
        if body.get("top_logprobs") is not None:
            raise ValueError("top_logprobs requires logprobs to be set to true")
    n = _integer(body, "n_probs", 0)
    if n == 0:
        lp = body.get("logprobs")
        n = int(lp) if _is_number(lp) or (lp is True and not chat) else 0
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


def n_choices(body: dict, n_slots: int) -> int:
    """``n``: how many answers for one prompt, 1 to the number of slots, as llama-server allows."""
    n = _integer(body, "n", 1)
    if not 1 <= n <= n_slots:
        raise ValueError(f"Field 'n': Value must be between 1 <= value <= {n_slots}, "
                         f"but got {n}")
    return n


def choice_params(p: SamplingParams, k: int) -> SamplingParams:
    """Choice k's parameters: llama-server seeds the k-th answer to one prompt with seed + k
    (a random seed stays random)."""
    return p if k == 0 or p.seed is None else replace(p, seed=seed(p.seed + k))


def completion_prompts(body: dict, one_prompt) -> list:
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


def _f32(x: float) -> float:
    """A number as llama-server stores it (a C float) and writes it back."""
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def generation_settings(p: SamplingParams, stream: bool, tokenize, eog: list[int] = ()) -> dict:
    """The ``generation_settings`` object of llama-server's final /completion answer: the
    request's sampling settings, llama-server's defaults for the samplers labkit's engine
    leaves off (:data:`UNSUPPORTED`, which labkit accepts only at those values).
    ``tokenize(text)`` turns a text of ``logit_bias`` into its tokens; ``eog`` lists the
    end-of-generation tokens, which ``ignore_eos`` bans (a ban shows as a null bias)."""
    def bias(b):
        return None if b == float("-inf") else b
    biases = []
    for key, b in p.logit_bias:
        for tok in ([key] if isinstance(key, int) else tokenize(key)):
            biases.append({"bias": bias(b), "token": tok})
    if p.ignore_eos:
        biases += [{"bias": None, "token": t} for t in eog]
    n_predict = -1 if p.max_tokens is None else p.max_tokens
    return {
        "seed": 0xFFFFFFFF if p.seed is None else p.seed,
        "temperature": _f32(p.temperature), "dynatemp_range": 0.0, "dynatemp_exponent": 1.0,
        "top_k": p.top_k, "top_p": _f32(p.top_p), "min_p": _f32(p.min_p),
        "top_n_sigma": -1.0, "xtc_probability": 0.0, "xtc_threshold": _f32(0.1),
        "typical_p": 1.0, "repeat_last_n": p.repeat_last_n,
        "repeat_penalty": _f32(p.repeat_penalty), "presence_penalty": _f32(p.presence_penalty),
        "frequency_penalty": _f32(p.frequency_penalty), "dry_multiplier": 0.0,
        "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": 64,
        "dry_sequence_breakers": ["\n", ":", "\"", "*"], "mirostat": 0, "mirostat_tau": 5.0,
        "mirostat_eta": _f32(0.1), "adaptive_target": -1.0, "adaptive_decay": _f32(0.9),
        "stop": list(p.stop), "max_tokens": n_predict, "n_predict": n_predict, "n_keep": 0,
        "n_discard": 0, "ignore_eos": p.ignore_eos, "stream": stream, "logit_bias": biases,
        "n_probs": p.n_probs, "min_keep": 0, "grammar": p.gbnf() or "",
        "grammar_lazy": False, "grammar_triggers": [], "preserved_tokens": [],
        "chat_format": "Content-only", "reasoning_format": "deepseek",
        "reasoning_in_content": False, "generation_prompt": "", "samplers": DEFAULT_SAMPLERS,
        "speculative.types": "none", "timings_per_token": False, "post_sampling_probs": False,
        "backend_sampling": False, "lora": [],
    }
