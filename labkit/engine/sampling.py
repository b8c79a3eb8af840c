"""Turning logits into text: the sampler chain, stop strings, UTF-8 streaming.

Three small pieces, one per concern:

- :class:`Sampler` wraps a llama.cpp sampler chain (``llama_sampler_chain_*``)
  built from :class:`SamplingParams`, exactly as llama-server does per slot:
  optional grammar first (so JSON mode can only produce valid JSON), then
  top_k -> top_p -> min_p -> temperature -> a seeded random draw; at
  temperature 0 it is plain greedy (argmax).
- :class:`TextStream` joins the byte pieces of tokens and releases only whole
  UTF-8 characters (an emoji can span several tokens).
- :class:`StopMatcher` watches the released text for stop strings and holds back
  any tail that might still become one, so a client never sees half of "</s>".
"""

from __future__ import annotations

import codecs
import ctypes
import json
from dataclasses import dataclass, field

import llama_cpp


@dataclass
class SamplingParams:
    """What one request asks for; the defaults are llama-server's.

    ``max_tokens=None`` means "until end-of-generation, a stop string, or the
    slot is full" (llama-server's n_predict = -1). ``seed=None`` draws a random
    seed. ``grammar`` is GBNF text; ``json_schema`` (a dict) and
    ``json_object=True`` are turned into GBNF with llama-cpp-python's
    converters. ``cache_prompt`` keeps the slot's KV after the request so a
    later prompt with the same prefix only computes the rest.
    """

    max_tokens: int | None = None
    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    cache_prompt: bool = True
    grammar: str | None = None
    json_schema: dict | None = None
    json_object: bool = False
    ignore_eos: bool = False

    def gbnf(self) -> str | None:
        """The grammar that constrains the output, or None."""
        if self.grammar:
            return self.grammar
        from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf
        if self.json_schema is not None:
            return json_schema_to_gbnf(json.dumps(self.json_schema))
        if self.json_object:
            return JSON_GBNF
        return None


class Sampler:
    """One request's llama.cpp sampler chain. Free it with :meth:`close`.

    With a grammar, the chain first picks a token as if there were none and
    the grammar only checks that one token; only when it is rejected does the
    grammar filter the whole vocabulary and the chain pick again. That is
    llama.cpp's own trick (common_sampler_sample): checking ~50k tokens
    against a grammar takes milliseconds, checking one takes microseconds.
    """

    def __init__(self, vocab, params: SamplingParams, eog: list[int] = ()):
        cp = llama_cpp.llama_sampler_chain_default_params()
        cp.no_perf = True
        self.ptr = llama_cpp.llama_sampler_chain_init(cp)
        self.grammar = None
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        add = lambda s: llama_cpp.llama_sampler_chain_add(self.ptr, s)  # noqa: E731
        grammar = params.gbnf()
        if grammar is not None:
            self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            if not self.grammar:
                self.close()
                raise ValueError("llama.cpp could not parse the grammar")
            self._one = (llama_cpp.llama_token_data * 1)()
            self._one_arr = llama_cpp.llama_token_data_array(
                data=self._one, size=1, selected=-1, sorted=False)
            self._all = None
        if params.ignore_eos and eog:
            bias = (llama_cpp.llama_logit_bias * len(eog))()
            for i, t in enumerate(eog):
                bias[i].token, bias[i].bias = t, float("-inf")
            add(llama_cpp.llama_sampler_init_logit_bias(self.n_vocab, len(eog), bias))
        if params.temperature <= 0:
            add(llama_cpp.llama_sampler_init_greedy())
        else:
            if params.top_k > 0:
                add(llama_cpp.llama_sampler_init_top_k(params.top_k))
            if params.top_p < 1.0:
                add(llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
            if params.min_p > 0.0:
                add(llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
            add(llama_cpp.llama_sampler_init_temp(params.temperature))
            seed = llama_cpp.LLAMA_DEFAULT_SEED if params.seed is None else params.seed & 0xFFFFFFFF
            add(llama_cpp.llama_sampler_init_dist(seed))
        self._sample = llama_cpp.llama_sampler_sample

    def sample(self, ctx, idx: int) -> int:
        """Pick (and accept) the next token from output ``idx`` of the last decode."""
        tok = self._sample(self.ptr, ctx, idx)
        if self.grammar is None:
            return tok
        one = self._one[0]
        one.id, one.logit, one.p = tok, 1.0, 0.0
        self._one_arr.size, self._one_arr.selected = 1, -1
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(self._one_arr))
        if one.logit == float("-inf"):
            tok = self._sample_with_grammar(ctx, idx)
        llama_cpp.llama_sampler_accept(self.grammar, tok)
        return tok

    def _sample_with_grammar(self, ctx, idx: int) -> int:
        import numpy as np
        if self._all is None:
            self._all = np.zeros(self.n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
        data = self._all
        logits = llama_cpp.llama_get_logits_ith(ctx, idx)
        data["id"] = np.arange(self.n_vocab, dtype=np.int32)
        data["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        data["p"] = 0.0
        cur = llama_cpp.llama_token_data_array(
            data=ctypes.cast(data.ctypes.data, ctypes.POINTER(llama_cpp.llama_token_data)),
            size=self.n_vocab, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(cur))
        llama_cpp.llama_sampler_apply(self.ptr, ctypes.byref(cur))
        return cur.data[cur.selected].id

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_sampler_free(self.ptr)
            self.ptr = None
        if self.grammar:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None


class TextStream:
    """Bytes of token pieces in, whole UTF-8 characters out."""

    def __init__(self):
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, piece: bytes) -> str:
        return self._dec.decode(piece)

    def flush(self) -> str:
        return self._dec.decode(b"", final=True)


class StopMatcher:
    """Finds stop strings in generated text; holds back what might start one.

    ``push(text)`` returns ``(release, stopped)``: the text that is now safe to
    send, and whether a stop string was found (the stop string itself and
    anything after it are never released). ``flush()`` releases the held tail
    when generation ends for another reason.
    """

    def __init__(self, stops: list[str]):
        self.stops = [s for s in stops if s]
        self.longest = max((len(s) for s in self.stops), default=0)
        self.held = ""

    def push(self, text: str) -> tuple[str, bool]:
        if not self.stops:
            return text, False
        buf = self.held + text
        first = -1
        for s in self.stops:
            pos = buf.find(s)
            if pos >= 0 and (first < 0 or pos < first):
                first = pos
        if first >= 0:
            self.held = ""
            return buf[:first], True
        keep = self._partial_tail(buf)
        self.held = buf[len(buf) - keep:] if keep else ""
        return buf[:len(buf) - keep], False

    def _partial_tail(self, buf: str) -> int:
        """Length of the longest tail of buf that is a proper prefix of a stop string."""
        for n in range(min(len(buf), self.longest - 1), 0, -1):
            tail = buf[-n:]
            if any(s.startswith(tail) for s in self.stops):
                return n
        return 0

    def flush(self) -> str:
        held, self.held = self.held, ""
        return held
