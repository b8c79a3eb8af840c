"""Grammars for llguidance, as llama-server built with llguidance reads them.

llama-server (and the ``xllamacpp`` wheel the workbook compares with) is built with
llguidance, a grammar engine that reads Lark-style grammars and JSON schemas. Any
``grammar`` that starts with ``%llguidance`` goes to llguidance (llama.cpp's
common_sampler_init; any other stays GBNF), and llama.cpp's ``json_schema_to_grammar``
wraps a schema in such a two-line grammar, ``%llguidance {}`` / ``start: %json {...}``
(:func:`schema_grammar`). (A chat answer under ``response_format`` is not built that way:
see :mod:`.response_format`.) This module samples through the ``llguidance`` package,
following llama.cpp's own sampler (common/llguidance.cpp):

- one :class:`~llguidance.LLTokenizer` per vocabulary (:func:`tokenizer`): every
  token's bytes as ``llama_detokenize`` writes them; a token that writes nothing
  (a control token such as ``<|im_end|>``) is marked special with a ``0xff`` byte;
  the end token is ``llama_vocab_eot``, else ``llama_vocab_eos``;
- one :class:`Guide` per request: an ``LLMatcher`` that computes, at each step, the
  set of tokens that keep the output valid (a bit mask over the vocabulary), and
  consumes each token the sampler picks. The end token is allowed only where the
  grammar may stop.
"""

from __future__ import annotations

import ctypes
import json
import threading

import llama_cpp
import numpy as np

PREFIX = "%llguidance"


def schema_grammar(schema: dict) -> str:
    """The grammar llama-server builds for a JSON schema (common/json-schema-to-grammar.cpp
    with llguidance): the schema as compact JSON, keys in the order given."""
    return f"{PREFIX} {{}}\nstart: %json " + json.dumps(schema, ensure_ascii=False,
                                                         separators=(",", ":"))


def is_llguidance(grammar: str | None) -> bool:
    """Whether llama-server hands this grammar to llguidance (it starts with ``%llguidance``)."""
    return bool(grammar) and grammar.startswith(PREFIX)


def check(grammar: str) -> str:
    """llguidance's error message for a grammar it cannot compile, or "" (no model needed)."""
    import llguidance
    return llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(grammar))


_lock = threading.Lock()
_tokenizers: dict[int, object] = {}


def _address(vocab) -> int:
    return ctypes.cast(vocab, ctypes.c_void_p).value or 0


def tokenizer(vocab):
    """The llguidance tokenizer of a vocabulary, built once (about half a second for 49k
    tokens) and kept for the life of the process."""
    key = _address(vocab)
    with _lock:
        tok = _tokenizers.get(key)
        if tok is None:
            tok = _tokenizers[key] = _build_tokenizer(vocab)
        return tok


def _build_tokenizer(vocab):
    import llguidance
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    eos = llama_cpp.llama_vocab_eot(vocab)
    if eos == llama_cpp.LLAMA_TOKEN_NULL:
        eos = llama_cpp.llama_vocab_eos(vocab)
    buf = ctypes.create_string_buffer(1024)
    one = (llama_cpp.llama_token * 1)()
    pieces = []
    for t in range(n):
        one[0] = t
        k = llama_cpp.llama_detokenize(vocab, one, 1, buf, 1024, False, False)
        if k < 0:
            raise ValueError(f"llama_detokenize failed for token {t}")
        if k == 0:   # a control token: its text, marked special
            k = llama_cpp.llama_detokenize(vocab, one, 1, buf, 1023, False, True)
            pieces.append(b"\xff" + buf.raw[:k] if k > 0 else b"")
        else:
            pieces.append(buf.raw[:k])
    fptr = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    return llguidance.LLTokenizer.from_llamacpp(tokens=pieces, vocab_ptr=vocab,
                                                tokenize_fptr=fptr, eos_token=eos, slices=None)


class Guide:
    """One request's llguidance matcher.

    :meth:`allows` and :meth:`mask` read the mask of the current step (computed once per
    step, only when asked); :meth:`accept` moves the matcher on by the picked token. As in
    llama.cpp, a matcher that fails (a token it cannot consume) stops constraining.
    """

    def __init__(self, vocab, grammar: str):
        import llguidance
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        self.matcher = llguidance.LLMatcher(tokenizer(vocab),
                                            llguidance.LLMatcher.grammar_from_lark(grammar),
                                            log_level=0)
        if self.matcher.is_error():
            raise ValueError(self.matcher.get_error())
        self._words = np.zeros((self.n_vocab + 31) // 32, dtype=np.int32)
        self._fresh = False

    def _mask(self) -> np.ndarray | None:
        if self.matcher is None:
            return None
        if not self._fresh:
            self.matcher.unsafe_compute_mask_ptr(self._words.ctypes.data, self._words.nbytes)
            if self.matcher.is_error():
                self.matcher = None
                return None
            self._fresh = True
        return self._words

    def allows(self, tok: int) -> bool:
        words = self._mask()
        return words is None or bool((int(words[tok >> 5]) >> (tok & 31)) & 1)

    def mask(self, logits: np.ndarray) -> None:
        """Set the logit of every token the grammar forbids now to -inf (in place)."""
        words = self._mask()
        if words is None:
            return
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:self.n_vocab]
        logits[bits == 0] = -np.inf

    def accept(self, tok: int) -> None:
        if self.matcher is not None:
            self._fresh = False
            if not self.matcher.consume_token(tok):
                self.matcher = None

    @property
    def accepting(self) -> bool:
        """Whether the output so far is complete (the grammar may stop here)."""
        return self.matcher is None or self.matcher.is_accepting()
