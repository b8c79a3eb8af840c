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
from dataclasses import dataclass, field


class ContextExceeded(ValueError):
    """The prompt does not fit in one slot (llama-server: HTTP 400 exceed_context_size_error)."""

    def __init__(self, n_prompt_tokens: int, n_ctx: int):
        self.n_prompt_tokens = n_prompt_tokens
        self.n_ctx = n_ctx
        super().__init__(f"request ({n_prompt_tokens} tokens) exceeds the available context "
                         f"size ({n_ctx} tokens), try increasing it")


class QueueFull(RuntimeError):
    """max_queue requests already wait for a slot (the server answers 503)."""

    def __init__(self, n_waiting: int):
        self.n_waiting = n_waiting
        super().__init__(f"{n_waiting} requests already wait for a slot; try again later")


@dataclass(slots=True)
class TokenEvent:
    """New text for the client. ``token`` is the sampled token id; -1 marks text
    released at the end of generation that belongs to no new token (a held-back
    possible stop-string prefix, or the last bytes of a character)."""

    text: str
    token: int


@dataclass(slots=True)
class FinalEvent:
    """The end of a request. ``finish_reason`` is 'stop' (end-of-generation token or
    stop string), 'length' (max_tokens reached or the slot is full), 'error' (see
    ``error``) or 'cancelled'. ``text`` is the whole completion."""

    finish_reason: str
    usage: dict
    timings: dict
    error: str | None = None
    text: str = ""


_ids = itertools.count()


@dataclass(eq=False)
class Request:
    """What the engine keeps about one submitted request."""

    prompt: list[int]
    params: object  # SamplingParams
    on_event: object = None
    id: int = field(default_factory=lambda: next(_ids))
    cancelled: bool = False
    t_submit: float = 0.0


class RequestHandle:
    """The caller's side of a request: iterate it, wait on it, or cancel it."""

    def __init__(self, request: Request):
        self._request = request
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Event()
        self._final: FinalEvent | None = None

    @property
    def id(self) -> int:
        return self._request.id

    def cancel(self) -> None:
        """Stop this request (e.g. the client went away); its slot frees at the next step."""
        self._request.cancelled = True
        wake = getattr(self, "_wake", None)
        if wake is not None:
            wake()

    # called on the engine thread
    def _emit(self, ev) -> None:
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

    def __iter__(self):
        if self._request.on_event is not None:
            raise TypeError("this request delivers its events to on_event; use result()")
        while True:
            ev = self._events.get()
            yield ev
            if type(ev) is FinalEvent:
                return
