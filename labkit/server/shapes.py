"""The JSON bodies and SSE chunks llama-server answers with, built from the engine's events.

Every function and method here is pure: it takes plain data (the engine's facts and
counters, a :class:`~labkit.engine.TokenEvent`, a :class:`~labkit.engine.FinalEvent`, the
request's settings) and returns what llama-server would send, key for key and in its key
order, so that the JSON text is the same too. Nothing here needs a server or a model.

A generation route answers in one of three shapes: :class:`ChatShape`
(/v1/chat/completions), :class:`CompletionShape` (llama-server's native /completion) and
:class:`OaiCompletionShape` (/v1/completions). Each builds the whole answer
(``answer``) and, for a streamed one, the chunks: ``opening(index)`` before an answer's first
token, ``piece(index, event)`` per token and ``final(index, final)`` at its end (each
answer ends on its own, as each of llama-server's tasks does); ``done_marker`` says whether
``data: [DONE]`` closes the stream. ``index`` numbers the answers: choice k of prompt p is
``p * n + k``.
"""

from __future__ import annotations

import struct

from ..engine import FinalEvent, SamplingParams, TokenEvent
from ..engine import response_format
from . import strict_json
from .validate import DEFAULT_SAMPLERS

# The OpenAI answers' ``system_fingerprint``: llama-server writes its build ("b<number>-<commit>").
FINGERPRINT = "labkit"
# llama-server's ``build_info``, in /props.
BUILD_INFO = "labkit slot engine"
# What closes a stream of the OpenAI-style routes.
DONE = b"data: [DONE]\n\n"

METRIC_HELP = {
    "prompt_tokens_total": ("counter", "Number of prompt tokens processed."),
    "prompt_seconds_total": ("counter", "Prompt process time."),
    "tokens_predicted_total": ("counter", "Number of generation tokens processed."),
    "tokens_predicted_seconds_total": ("counter", "Predict process time."),
    "n_decode_total": ("counter", "Total number of llama_decode() calls."),
    "n_busy_slots_per_decode": ("gauge", "Average number of busy slots per llama_decode() call."),
    "prompt_tokens_seconds": ("gauge", "Average prompt throughput in tokens/s."),
    "predicted_tokens_seconds": ("gauge", "Average generation throughput in tokens/s."),
    "requests_processing": ("gauge", "Number of requests processing."),
    "requests_deferred": ("gauge", "Number of requests deferred."),
}


def sse(obj) -> bytes:
    """One server-sent event carrying ``obj`` as strict JSON (non-ASCII characters as they
    are; a value JSON cannot hold, such as inf, raises rather than go out as ``Infinity``)."""
    return b"data: " + strict_json.dumps(obj).encode() + b"\n\n"


def usage(ev: FinalEvent) -> dict:
    """An answer's OpenAI ``usage`` in llama-server's key order, with its count of the prompt
    tokens its slot already held (``prompt_tokens_details.cached_tokens``, the timings'
    ``cache_n``)."""
    u = ev.usage
    return {"completion_tokens": u["completion_tokens"], "prompt_tokens": u["prompt_tokens"],
            "total_tokens": u["total_tokens"],
            "prompt_tokens_details": {"cached_tokens": ev.timings.get("cache_n", 0)}}


def whole_text(ev: FinalEvent) -> str:
    """A plain answer's text as llama-server gives it: a character cut off at the end shows
    as U+FFFD."""
    return ev.text + ev.partial.decode("utf-8", errors="replace")


def n_predict(p: SamplingParams) -> int:
    """llama-server's ``n_predict`` of these parameters: -1 for no limit."""
    return -1 if p.max_tokens is None else p.max_tokens


# ------------------------------------------------------------------------ plain GETs

def default_params(defaults: SamplingParams) -> dict:
    """/props' ``default_generation_settings.params``: what a request that sets nothing gets."""
    return {"temperature": defaults.temperature, "top_k": defaults.top_k,
            "top_p": defaults.top_p, "min_p": defaults.min_p,
            "n_predict": n_predict(defaults), "cache_prompt": defaults.cache_prompt}


def props(facts: dict, alias: str, chat_template: str,
          defaults: SamplingParams | None = None) -> dict:
    """/props, from the engine's ``facts``, the model's alias and chat template text, and the
    sampling defaults (:class:`~labkit.engine.SamplingParams`' own unless given)."""
    return {
        "default_generation_settings": {
            "n_ctx": facts["n_ctx_slot"], "id_slot": -1,
            "params": default_params(SamplingParams() if defaults is None else defaults),
        },
        "total_slots": facts["n_slots"],
        "model_alias": alias,
        "model_path": facts["model_path"],
        "chat_template": chat_template,
        "build_info": BUILD_INFO,
        "labkit": {k: v for k, v in facts.items() if k != "model_path"},
    }


def models(alias: str, created: int, n_ctx_train: int, n_vocab: int) -> dict:
    """/v1/models: the one model this server serves."""
    return {"object": "list", "data": [{
        "id": alias, "object": "model", "created": created, "owned_by": "labkit",
        "meta": {"n_ctx_train": n_ctx_train, "n_vocab": n_vocab},
    }]}


def metrics(values: dict) -> str:
    """/metrics in Prometheus' text format: every metric of :data:`METRIC_HELP`, in its
    order, with its help and type lines (0 for one ``values`` lacks)."""
    lines = []
    for name, (kind, help_) in METRIC_HELP.items():
        lines += [f"# HELP llamacpp:{name} {help_}", f"# TYPE llamacpp:{name} {kind}",
                  f"llamacpp:{name} {values.get(name, 0)}"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------ tokens

def piece_text(raw: bytes) -> str | list[int]:
    """A token's piece as /tokenize shows it: its text, or its bytes (a list of ints) when the
    piece alone is not valid UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return list(raw)


def tokens(ids: list[int], pieces=None) -> dict:
    """/tokenize: the token ids, or with ``pieces`` (token id -> its bytes, such as the
    engine's :meth:`~labkit.engine.Engine.token_pieces`) each id with its piece."""
    if pieces is None:
        return {"tokens": ids}
    return {"tokens": [{"id": t, "piece": piece_text(pieces[t])} for t in ids]}


# ------------------------------------------------------------------------ generation

class StreamShape:
    """The chunks a streamed answer sends; by default none but each token's and each end's."""

    done_marker = True

    def opening(self, index: int) -> dict | None:
        return None

    def piece(self, index: int, ev: TokenEvent) -> dict | None:
        raise NotImplementedError

    def final(self, index: int, ev: FinalEvent) -> list[dict]:
        raise NotImplementedError


def head(cid: str, created: int, alias: str) -> dict:
    """The fields every chat answer and chunk starts with."""
    return {"id": cid, "created": created, "model": alias, "system_fingerprint": FINGERPRINT}


class ChatShape(StreamShape):
    """/v1/chat/completions. ``json_content``: under ``response_format`` the answer is the
    JSON alone, out of the Markdown fence the model may write around it. ``include_usage``
    (``stream_options``) follows each answer's finish chunk with a chunk of that answer's
    usage and timings: one per choice, as llama-server sends them (each of its tasks ends
    with its own pair). ``prefilled`` is the text of a closing assistant message, which the
    whole answer starts with."""

    def __init__(self, head: dict, include_usage: bool = False, json_content: bool = False,
                 prefilled: str = ""):
        self.head, self.include_usage = head, include_usage
        self.json_content, self.prefilled = json_content, prefilled
        self._fenced: dict[int, response_format.ContentStream] = {}

    def _chunk(self, choices: list[dict], **more) -> dict:
        return {**self.head, "object": "chat.completion.chunk", "choices": choices, **more}

    def opening(self, index):
        return self._chunk([{"index": index, "delta": {"role": "assistant", "content": None},
                             "finish_reason": None}])

    def piece(self, index, ev):
        text = ev.text
        if self.json_content:
            text = self._fenced.setdefault(index, response_format.ContentStream()).push(text)
        if not text:
            return None
        choice = {"index": index, "delta": {"content": text}, "finish_reason": None}
        if ev.probs is not None:
            choice["logprobs"] = {"content": [ev.probs]}
        return self._chunk([choice])

    def final(self, index, ev):
        out = []
        rest = self._fenced[index].finish() if index in self._fenced else ""
        if rest:
            out.append(self._chunk([{"index": index, "delta": {"content": rest},
                                     "finish_reason": None}]))
        # the timings go with the usage chunk when there is one, as in llama-server
        chunk = self._chunk([{"index": index, "delta": {}, "finish_reason": ev.finish_reason}])
        if not self.include_usage:
            return out + [{**chunk, "timings": ev.timings}]
        return out + [chunk, self._chunk([], usage=usage(ev), timings=ev.timings)]

    def answer(self, finals: list[FinalEvent]) -> dict:
        """The whole answer: it starts with the prefilled assistant text, and drops a
        character cut off at the end unless that is all there is (as llama-server's)."""
        choices = []
        for index, ev in enumerate(finals):
            text = ev.text or whole_text(ev)
            if self.json_content:
                text = response_format.content(text)
            choice = {"index": index,
                      "message": {"role": "assistant", "content": self.prefilled + text},
                      "finish_reason": ev.finish_reason}
            if ev.probs:
                choice["logprobs"] = {"content": ev.probs}
            choices.append(choice)
        return {**self.head, "object": "chat.completion", "choices": choices,
                "usage": usage(finals[0]), "timings": finals[0].timings}


def stop_type(ev: FinalEvent) -> str:
    """llama-server's ``stop_type``: word (a stop string), eos, limit, or the reason itself."""
    if ev.stop_word:
        return "word"
    return {"stop": "eos", "length": "limit"}.get(ev.finish_reason, ev.finish_reason)


class CompletionShape(StreamShape):
    """llama-server's native /completion. Per answer (``index``): ``prompts`` its prompt's
    text, ``n_prompt`` its prompt's token count; ``settings`` holds choice k's
    ``generation_settings`` (:func:`generation_settings`). A stream ends with the last
    answer's final chunk, no ``[DONE]``."""

    done_marker = False

    def __init__(self, alias: str, prompts: list[str], n_prompt: list[int],
                 settings: list[dict]):
        self.alias, self.prompts, self.n_prompt, self.settings = alias, prompts, n_prompt, settings

    def piece(self, index, ev):
        """A token's chunk: every token sends one, even with no text, and it has no model and
        none of the final fields."""
        d = {"index": index, "content": ev.text, "tokens": [ev.token] if ev.token >= 0 else [],
             "stop": False, "id_slot": ev.id_slot, "tokens_predicted": ev.n_decoded,
             "tokens_evaluated": self.n_prompt[index]}
        if ev.probs:
            d["completion_probabilities"] = [ev.probs]
        if ev.timings is not None:   # the token that completed a stop string
            d["timings"] = ev.timings
        return d

    def final(self, index, ev):
        return [self._last(index, "", ev)]

    def _last(self, index: int, text: str, ev: FinalEvent, probs=None,
              token_ids: list[int] = ()) -> dict:
        """The whole answer or a stream's last chunk (its text and tokens sent already)."""
        u = ev.usage
        prompt_tokens, completion_tokens = u.get("prompt_tokens", 0), u.get("completion_tokens", 0)
        d = {"index": index, "content": text, "tokens": list(token_ids), "stop": True,
             "id_slot": ev.id_slot, "model": self.alias,
             "tokens_predicted": completion_tokens, "tokens_evaluated": prompt_tokens,
             "generation_settings": self.settings[index % len(self.settings)],
             "prompt": self.prompts[index],
             "has_new_line": "\n" in ev.text,
             "stop_type": stop_type(ev), "stopping_word": ev.stop_word, "truncated": ev.truncated,
             # the slot's KV holds the prompt and every token but the last sampled one
             "tokens_cached": max(0, prompt_tokens + completion_tokens - 1),
             "timings": ev.timings}
        if probs:
            d["completion_probabilities"] = probs
        return d

    def answer(self, finals: list[FinalEvent], token_ids: list[list[int]] | None = None):
        """The whole answer: one object for one answer, else a list of them. ``token_ids``
        (``return_tokens``) lists each answer's generated token ids."""
        answers = [self._last(i, whole_text(ev), ev, ev.probs,
                              token_ids[i] if token_ids is not None else ())
                   for i, ev in enumerate(finals)]
        return answers[0] if len(answers) == 1 else answers


class OaiCompletionShape(StreamShape):
    """/v1/completions, OpenAI's text completions: every answer is a choice of one object."""

    def __init__(self, cid: str, created: int, alias: str):
        self.cid, self.created, self.alias = cid, created, alias

    def _object(self, index: int, text: str, ev: FinalEvent | None = None, probs=None) -> dict:
        d = {"id": self.cid, "object": "text_completion", "created": self.created,
             "model": self.alias, "system_fingerprint": FINGERPRINT, "choices": [{
                 "index": index, "text": text,
                 "logprobs": {"content": probs} if probs else None,
                 "finish_reason": ev.finish_reason if ev is not None else None}]}
        if ev is not None:
            d.update(usage=usage(ev), timings=ev.timings)
        return d

    def piece(self, index, ev):
        """A token's chunk: every token sends one, even with no text."""
        d = self._object(index, ev.text, probs=[ev.probs] if ev.probs else None)
        return d if ev.timings is None else {**d, "timings": ev.timings}

    def final(self, index, ev):
        return [self._object(index, "", ev)]

    def answer(self, finals: list[FinalEvent]) -> dict:
        """The whole answer: the first answer's object, holding every answer's choice."""
        answers = [self._object(i, whole_text(ev), ev, ev.probs) for i, ev in enumerate(finals)]
        return {**answers[0], "choices": [a["choices"][0] for a in answers]}


def _f32(x: float) -> float:
    """A number as llama-server stores it (a C float) and writes it back."""
    return struct.unpack("f", struct.pack("f", x))[0]


def generation_settings(p: SamplingParams, stream: bool, tokenize, eog: list[int] = ()) -> dict:
    """The ``generation_settings`` object of llama-server's final /completion answer: the
    request's sampling settings, llama-server's defaults for the samplers labkit's engine
    leaves off (:data:`.validate.UNSUPPORTED`, which labkit accepts only at those values).
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
        "stop": list(p.stop), "max_tokens": n_predict(p), "n_predict": n_predict(p),
        "n_keep": 0, "n_discard": 0, "ignore_eos": p.ignore_eos, "stream": stream,
        "logit_bias": biases, "n_probs": p.n_probs, "min_keep": 0, "grammar": p.gbnf() or "",
        "grammar_lazy": False, "grammar_triggers": [], "preserved_tokens": [],
        "chat_format": "Content-only", "reasoning_format": "deepseek",
        "reasoning_in_content": False, "generation_prompt": "", "samplers": DEFAULT_SAMPLERS,
        "speculative.types": "none", "timings_per_token": False, "post_sampling_probs": False,
        "backend_sampling": False, "lora": [],
    }
