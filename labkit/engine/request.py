"""A request's life outside the engine: its events, its handle, the refusals.

``Engine.submit`` returns a :class:`RequestHandle`. The engine thread pushes
events to it: zero or more :class:`TokenEvent`, then exactly one
:class:`FinalEvent`. Read them by iterating the handle (blocking), by waiting
for :meth:`RequestHandle.result`, or by passing ``on_event`` to ``submit``
(called on the engine thread; keep it quick).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sampling import SamplingParams


class BadRequest(ValueError):
    """What a client asked for cannot be served as asked: an empty prompt, a grammar llama.cpp
    or llguidance cannot compile, a conversation the chat template refuses, a prompt that does
    not fit (:class:`ContextExceeded`). The HTTP front answers 400, as llama-server does; any
    other exception out of the engine is the server's own fault, and the front answers 500."""


class ContextExceeded(BadRequest):
    """The prompt does not fit in one slot (llama-server: HTTP 400 exceed_context_size_error)."""

    def __init__(self, n_prompt_tokens: int, n_ctx: int):
        self.n_prompt_tokens = n_prompt_tokens
        self.n_ctx = n_ctx
        super().__init__(f"request ({n_prompt_tokens} tokens) exceeds the available context "
                         f"size ({n_ctx} tokens), try increasing it")


# Every request in flight ends with this error when the unified KV pool runs out (llama-server's
# words; its server answers HTTP 500 server_error).
CONTEXT_EXCEEDED = "Context size has been exceeded."


class QueueFull(RuntimeError):
    """max_queue requests already wait for a slot (the server answers 503)."""

    def __init__(self, n_waiting: int):
        self.n_waiting = n_waiting
        super().__init__(f"{n_waiting} requests already wait for a slot; try again later")


@dataclass(slots=True)
class TokenEvent:
    """New text for the client: one event per sampled token, as llama-server sends one
    partial result per token, except that a token ending inside a character sends none
    (the token that completes the character carries all of it). Its text may be empty:
    an end-of-generation token, text held back as a possible stop-string prefix.
    ``token`` is the sampled token id; -1 marks text released at the end of generation
    that belongs to no new token (a held-back possible stop-string prefix). ``probs``
    (with ``n_probs``) is the token's entry of llama-server's ``completion_probabilities``:
    ``{"id", "token", "bytes", "logprob", "top_logprobs": [{"id", "token", "bytes",
    "logprob"}, ...]}``, where ``token`` is the text this event carries. ``n_decoded``
    counts the tokens generated so far, this one included. ``timings`` (:meth:`Timings.as_dict`
    so far) is set on the event of a token that completes a stop string: llama-server's
    chunk for that token carries them."""

    text: str
    token: int
    probs: dict | None = None
    n_decoded: int = 0
    timings: dict | None = None
    id_slot: int = -1               # the slot that generated it (llama-server's id_slot)


@dataclass(frozen=True, slots=True)
class Timings:
    """How long a request took, in llama-server's ``timings`` terms.

    ``prompt_ms`` runs from the first step that worked on the request to its
    first sampled token; ``predicted_ms`` from the first sampled token to the
    last. :meth:`as_dict` is the ``timings`` object of a :class:`FinalEvent`.
    """

    cache_n: int = 0          # prompt tokens reused from the cache
    prompt_n: int = 0         # prompt tokens computed
    prompt_ms: float = 0.0
    predicted_n: int = 0      # tokens generated
    predicted_ms: float = 0.0

    def as_dict(self) -> dict:
        """The fields plus the per-token times and the speeds (0.0 where undefined)."""
        prompt_n, prompt_ms = self.prompt_n, self.prompt_ms
        predicted_n, predicted_ms = self.predicted_n, self.predicted_ms
        return {
            "cache_n": self.cache_n,
            "prompt_n": prompt_n,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
            "prompt_per_second": 1e3 * prompt_n / prompt_ms if prompt_ms > 0 else 0.0,
            "predicted_n": predicted_n,
            "predicted_ms": predicted_ms,
            "predicted_per_token_ms": predicted_ms / predicted_n if predicted_n else 0.0,
            "predicted_per_second": 1e3 * predicted_n / predicted_ms if predicted_ms > 0 else 0.0,
        }


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    """The OpenAI ``usage`` object of a :class:`FinalEvent`."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


@dataclass(slots=True)
class FinalEvent:
    """The end of a request. ``finish_reason`` is 'stop' (end-of-generation token or
    stop string), 'length' (max_tokens reached or the slot is full), 'error' (see
    ``error``) or 'cancelled'. ``usage`` is :func:`usage`'s dict and ``timings``
    :meth:`Timings.as_dict`'s (plain dicts, ready for JSON). ``text`` is the
    whole completion: every whole character generated. ``partial`` holds the bytes
    of a character the generation ended in the middle of (max_tokens can cut one),
    which no event carried. ``stop_word`` is the stop string that ended the text
    ('' if none did). ``probs`` lists the TokenEvents' ``probs`` entries, less as many as
    the stop string has tokens (llama-server's whole answer leaves those out). ``truncated``
    is llama-server's flag: the slot filled (no room for another token) by the last one."""

    finish_reason: str
    usage: dict
    timings: dict
    error: str | None = None
    text: str = ""
    partial: bytes = b""
    stop_word: str = ""
    probs: list[dict] = field(default_factory=list)
    id_slot: int = -1               # the slot that served the request; -1 if none did
    truncated: bool = False         # the slot was full when the answer ended


Event = TokenEvent | FinalEvent

_ids = itertools.count()


@dataclass(eq=False)
class Request:
    """What the engine keeps about one submitted request."""

    prompt: list[int]
    params: SamplingParams
    on_event: Callable[[Event], None] | None = None
    id: int = field(default_factory=lambda: next(_ids))
    cancelled: bool = False
    t_submit: float = 0.0


class RequestHandle:
    """The caller's side of a request: iterate it, wait on it, or cancel it.

    ``wake`` is called after :meth:`cancel`, so that an engine waiting for work
    notices the cancellation at once.
    """

    def __init__(self, request: Request, wake: Callable[[], None]):
        self._request = request
        self._wake = wake
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Event()
        self._final: FinalEvent | None = None

    @property
    def id(self) -> int:
        return self._request.id

    def cancel(self) -> None:
        """Stop this request (e.g. the client went away); its slot frees at the next step."""
        self._request.cancelled = True
        self._wake()

    # called on the engine thread
    def _emit(self, ev: Event) -> None:
        cb = self._request.on_event
        if cb is not None:
            cb(ev)
        else:
            self._events.put(ev)
        if type(ev) is FinalEvent:
            self._final = ev
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> FinalEvent:
        """Block until the request ends and return its FinalEvent."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"request {self.id} still running after {timeout} s")
        return self._final

    def __iter__(self) -> Iterator[Event]:
        if self._request.on_event is not None:
            raise TypeError("this request delivers its events to on_event; use result()")
        while True:
            ev = self._events.get()
            yield ev
            if type(ev) is FinalEvent:
                return
