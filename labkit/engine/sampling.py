"""Turning logits into text: the sampler chain, stop strings, UTF-8 streaming.

Three small pieces, one per concern:

- :class:`Sampler` wraps a llama.cpp sampler chain (``llama_sampler_chain_*``)
  built from :class:`SamplingParams`, in llama-server's order: logit biases,
  repetition penalties, then top_k -> top_p -> min_p -> temperature -> a
  seeded random draw; at temperature 0 the last five are one greedy pick
  (argmax). An optional grammar only lets through tokens that keep the output
  valid: GBNF (JSON mode too) through llama.cpp's grammar sampler, a grammar
  that starts with ``%llguidance`` through llguidance (:mod:`.guidance`), as
  llama-server built with llguidance does. :meth:`Sampler.probs` reads the
  probabilities of the model's raw distribution (``n_probs``, OpenAI's
  ``logprobs``).
- :class:`TextStream` joins the byte pieces of tokens and releases only whole
  UTF-8 characters (an emoji can span several tokens); the bytes of a
  character cut off by the end of generation are never released.
- :class:`StopMatcher` watches the released text for stop strings and holds back
  any tail that might still become one, so a client never sees half of "</s>".
"""

from __future__ import annotations

import codecs
import ctypes
import json
import math
from dataclasses import dataclass, field

import llama_cpp
import numpy as np

from .guidance import Guide, is_llguidance
from .native import tokenize
from .request import BadRequest
from .response_format import chat_grammar


@dataclass
class SamplingParams:
    """What one request asks for; the defaults are llama-server's.

    ``max_tokens=None`` means "until end-of-generation, a stop string, or the
    slot is full" (llama-server's n_predict = -1). ``seed=None`` draws a random
    seed. ``grammar`` is GBNF text, or an llguidance grammar when it starts with
    ``%llguidance`` (as in llama-server built with llguidance); ``json_schema``
    (a dict) and ``json_object=True`` are turned into GBNF with llama-cpp-python's
    converters; with ``chat_json=True`` (``response_format`` on the chat endpoint) into
    the grammar of llama-server's chat answer, the JSON optionally in a Markdown
    fence (:func:`.response_format.chat_grammar`). ``cache_prompt`` keeps the slot's
    KV after the request so a later prompt with the same prefix only computes the rest.

    ``logit_bias`` adds a bias to a token's logit before sampling: pairs of a
    token id (ids outside the vocabulary are skipped) or a text (each of its
    tokens is biased) and the bias (``-inf`` bans it). The penalties look at the
    last ``repeat_last_n`` tokens of the prompt and the answer: ``repeat_penalty``
    divides a positive logit of a token seen there (multiplies a negative one),
    ``frequency_penalty`` subtracts that much per time it was seen,
    ``presence_penalty`` that much once. ``n_probs > 0`` reports, with every
    token, its log-probability and the ``n_probs`` most likely tokens.
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
    chat_json: bool = False
    ignore_eos: bool = False
    logit_bias: list[tuple[int | str, float]] = field(default_factory=list)
    repeat_last_n: int = 64
    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    n_probs: int = 0

    @property
    def penalized(self) -> bool:
        """Whether any repetition penalty is on (off, the sampler chain has no penalty stage)."""
        return self.repeat_last_n != 0 and (self.repeat_penalty != 1.0 or
                                            self.frequency_penalty != 0.0 or
                                            self.presence_penalty != 0.0)

    def gbnf(self) -> str | None:
        """The grammar that constrains the output, or None (a ``grammar`` field as it is:
        GBNF, or llguidance's when it starts with ``%llguidance``)."""
        if self.grammar:
            return self.grammar
        if self.chat_json and (self.json_schema is not None or self.json_object):
            return chat_grammar(self.json_schema)
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
    An llguidance grammar (:class:`.guidance.Guide`) works the same way: its
    mask of allowed tokens is computed once per step, and read for one token
    or for all.
    """

    def __init__(self, vocab, params: SamplingParams, eog: list[int] = ()):
        cp = llama_cpp.llama_sampler_chain_default_params()
        cp.no_perf = True
        self.ptr = llama_cpp.llama_sampler_chain_init(cp)
        self.grammar = None
        self.guide = None
        self.params = params
        self.n_vocab = n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        add = lambda s: llama_cpp.llama_sampler_chain_add(self.ptr, s)  # noqa: E731
        grammar = params.gbnf()
        if is_llguidance(grammar):
            try:
                self.guide = Guide(vocab, grammar)
            except ValueError as exc:
                self.close()
                raise BadRequest(f"llguidance could not compile the grammar: {exc}") from None
        elif grammar is not None:
            self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            if not self.grammar:
                self.close()
                raise BadRequest("llama.cpp could not parse the grammar")
        if grammar is not None:
            self._ids = np.arange(n_vocab, dtype=np.int32)
            self._cur = np.zeros(n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
            self._cur_arr = llama_cpp.llama_token_data_array(
                data=ctypes.cast(self._cur.ctypes.data, ctypes.POINTER(llama_cpp.llama_token_data)),
                size=n_vocab, selected=-1, sorted=False)
            self._one = (llama_cpp.llama_token_data * 1)()
            self._one_arr = llama_cpp.llama_token_data_array(
                data=self._one, size=1, selected=-1, sorted=False)
        biases = self._biases(vocab, params.logit_bias)
        if params.ignore_eos:
            biases += [(t, float("-inf")) for t in eog]
        # A chain of nothing but biases and a greedy pick (temperature 0, no penalties, no
        # grammar) picks the first largest biased logit and keeps no state: the engine picks it
        # for all such slots from the logits with numpy (argmax_of), not through the chain.
        self.argmax_only = (params.temperature <= 0 and grammar is None
                            and not params.penalized)
        self._bias_ids = np.array([t for t, _ in biases], dtype=np.intp)
        self._bias = np.array([b for _, b in biases], dtype=np.float32)
        self._banned = frozenset(t for t, b in biases if b <= 0)
        self._bans_only = len(self._banned) == len(biases)
        if biases:
            arr = (llama_cpp.llama_logit_bias * len(biases))()
            for i, (t, b) in enumerate(biases):
                arr[i].token, arr[i].bias = t, b
            add(llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(biases), arr))
        if params.penalized:
            add(llama_cpp.llama_sampler_init_penalties(
                n_vocab, params.repeat_last_n, params.repeat_penalty, params.frequency_penalty,
                params.presence_penalty))
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

    def _biases(self, vocab, logit_bias) -> list[tuple[int, float]]:
        """(token id, bias) pairs, as llama-server reads them: ids outside the vocabulary are
        skipped; a text biases each of its tokens."""
        out = []
        for key, bias in logit_bias:
            if isinstance(key, str):
                out += [(t, bias) for t in tokenize(vocab, key, False, False)]
            elif 0 <= key < self.n_vocab:
                out.append((key, bias))
        return out

    def accept_prompt(self, prompt: list[int]) -> None:
        """Let the penalties see the prompt, as llama-server does: its last
        ``repeat_last_n`` tokens count as already said."""
        if self.params.penalized:
            for tok in prompt[-self.params.repeat_last_n:]:
                llama_cpp.llama_sampler_accept(self.ptr, tok)

    def sample(self, ctx, idx: int) -> int:
        """Pick (and accept) the next token from output ``idx`` of the last decode."""
        if self.guide is not None:
            tok = self._pick(ctx, idx, with_grammar=False)
            if not self.guide.allows(tok):
                tok = self._pick(ctx, idx, with_grammar=True)
            self.guide.accept(tok)
            llama_cpp.llama_sampler_accept(self.ptr, tok)
            return tok
        if self.grammar is None:
            return self._sample(self.ptr, ctx, idx)   # applies the chain, accepts the token
        tok = self._pick(ctx, idx, with_grammar=False)
        one = self._one[0]
        one.id, one.logit, one.p = tok, 1.0, 0.0
        self._one_arr.size, self._one_arr.selected = 1, -1
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(self._one_arr))
        if one.logit == float("-inf"):
            tok = self._pick(ctx, idx, with_grammar=True)
        llama_cpp.llama_sampler_accept(self.grammar, tok)
        llama_cpp.llama_sampler_accept(self.ptr, tok)
        return tok

    def argmax_of(self, logits: np.ndarray) -> int:
        """The token this chain picks from ``logits`` (one output's row) when it is
        :attr:`argmax_only`: llama.cpp's greedy sampler takes the first largest logit after the
        biases, and so does ``argmax``. When every bias lowers (ignore_eos bans the
        end-of-generation tokens) the unbiased argmax stands unless it is a lowered token."""
        tok = int(logits.argmax())
        if not len(self._bias) or (self._bans_only and tok not in self._banned):
            return tok
        biased = logits.copy()
        np.add.at(biased, self._bias_ids, self._bias)
        return int(biased.argmax())

    def _pick(self, ctx, idx: int, with_grammar: bool) -> int:
        """Run the chain (after the grammar, if asked) over the logits; accept nothing."""
        cur, arr = self._cur, self._cur_arr
        cur["id"] = self._ids
        cur["logit"] = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, idx),
                                             shape=(self.n_vocab,))
        cur["p"] = 0.0
        arr.size, arr.selected, arr.sorted = self.n_vocab, -1, False
        if with_grammar and self.guide is not None:
            self.guide.mask(cur["logit"])
        elif with_grammar:
            llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(arr))
        llama_cpp.llama_sampler_apply(self.ptr, ctypes.byref(arr))
        return arr.data[arr.selected].id

    def probs(self, ctx, idx: int, tok: int) -> tuple[float, list[tuple[int, float]]]:
        """The log-probability of ``tok`` and the ``n_probs`` most likely tokens with theirs,
        in the model's raw distribution at output ``idx`` (a softmax over every logit, before
        biases, penalties or temperature), as llama-server reports them."""
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, idx),
                                       shape=(self.n_vocab,))
        top_logit = float(logits.max())
        log_total = top_logit + math.log(float(np.exp(logits - top_logit).sum(dtype=np.float64)))
        n = min(self.params.n_probs, self.n_vocab)
        if n == 1:
            top = [int(logits.argmax())]
        else:
            top = np.argpartition(logits, -n)[-n:]
            top = top[np.argsort(-logits[top], kind="stable")]
        return (float(logits[tok]) - log_total,
                [(int(t), float(logits[t]) - log_total) for t in top])

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_sampler_free(self.ptr)
            self.ptr = None
        if self.grammar:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None
        self.guide = None


def complete_utf8(raw: bytes) -> int:
    """How many leading bytes of ``raw`` hold no character cut off at the end (llama-server's
    validate_utf8: only the last character is checked)."""
    for back in range(1, min(4, len(raw)) + 1):
        c = raw[-back]
        need = 2 if c & 0xE0 == 0xC0 else 3 if c & 0xF0 == 0xE0 else 4 if c & 0xF8 == 0xF0 else 0
        if need and back < need:
            return len(raw) - back
    return len(raw)


class TextStream:
    """Bytes of token pieces in, whole UTF-8 characters out.

    :attr:`pending` says whether bytes of an unfinished character are held;
    :meth:`flush` hands them back at the end, to be dropped, never shown.
    """

    def __init__(self):
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, piece: bytes) -> str:
        return self._dec.decode(piece)

    @property
    def pending(self) -> bool:
        return bool(self._dec.getstate()[0])

    def flush(self) -> bytes:
        """The bytes of a character the generation ended in the middle of (usually none)."""
        held = self._dec.getstate()[0]
        self._dec.reset()
        return held


class StopMatcher:
    """Finds stop strings in generated text; holds back what might start one.

    ``push(text)`` returns ``(release, stopped)``: the text that is now safe to
    send, and whether a stop string was found (the stop string itself and
    anything after it are never released; :attr:`matched` is the one found).
    ``flush()`` releases the held tail when generation ends for another reason.
    """

    def __init__(self, stops: list[str]):
        self.stops = [s for s in stops if s]
        self.longest = max((len(s) for s in self.stops), default=0)
        self.held = ""
        self.matched = ""

    def push(self, text: str) -> tuple[str, bool]:
        if not self.stops:
            return text, False
        buf = self.held + text
        first = -1
        for s in self.stops:
            pos = buf.find(s)
            if pos >= 0 and (first < 0 or pos < first):
                first, self.matched = pos, s
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
