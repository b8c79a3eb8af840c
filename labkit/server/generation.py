"""Generation requests between the engine's thread and the event loop.

:func:`submit` starts the requests of one HTTP request (``n`` choices per prompt); their
events cross into asyncio through the loop's :class:`Mailbox` (one ``call_soon_threadsafe``
for all the events of an engine step, not one per token). :func:`collect` waits for a
plain answer's final events, :func:`stream` sends a streamed one as server-sent events in
the chunks a :class:`~.shapes.StreamShape` builds. Either cancels the requests when the
client goes away, so their slots free at the engine's next step.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque

from starlette.requests import Request
from starlette.responses import StreamingResponse

from ..engine import BadRequest, ContextExceeded, Engine, FinalEvent, QueueFull, SamplingParams
from .errors import ApiError, unexpected
from .shapes import DONE, StreamShape, sse
from .validate import choice_params


class Mailbox:
    """Events posted from the engine's thread, handed to the event loop in bursts.

    The engine streams a token for every slot at every step; waking the loop for each
    (``call_soon_threadsafe`` writes to its wake-up pipe) costs the engine's thread a system
    call per token and the loop a wake-up per token. A mailbox wakes the loop once for all that
    is posted until it drains: the first post schedules the drain, later ones only append.
    """

    _of_loop: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    _made = threading.Lock()

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._items: deque = deque()
        self._lock = threading.Lock()
        self._scheduled = False

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> "Mailbox":
        """The one mailbox of ``loop``."""
        with cls._made:
            box = cls._of_loop.get(loop)
            if box is None:
                box = cls._of_loop[loop] = cls(loop)
            return box

    def post(self, q: asyncio.Queue, item) -> None:
        """From any thread: ``q.put_nowait(item)`` on the loop, in posting order."""
        with self._lock:
            self._items.append((q, item))
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the event loop closed while we were generating
            with self._lock:
                self._items.clear()
                self._scheduled = False

    def _drain(self) -> None:
        with self._lock:
            items, self._items = self._items, deque()
            self._scheduled = False
        for q, item in items:
            q.put_nowait(item)


def submit(eng: Engine, prompts: list[list[int]], params: SamplingParams, n: int, loop,
           streamed: bool, ids: list[list[int]] | None = None) -> tuple[list, asyncio.Queue]:
    """Start ``n`` requests (choices) per prompt, choice k seeded ``seed + k`` as in
    llama-server; their events arrive on one asyncio queue as ``(index, event)``, index
    ``prompt * n + k``: every event of a streamed answer, the final one of a plain one.
    With ``ids`` (a list per index), each answer's token ids are gathered there. A request
    the engine refuses is llama-server's error for it."""
    q: asyncio.Queue = asyncio.Queue()
    post = Mailbox.of(loop).post

    def forward(index):
        def on_event(ev):
            if ids is not None and type(ev) is not FinalEvent and ev.token >= 0:
                ids[index].append(ev.token)
            if streamed or type(ev) is FinalEvent:
                post(q, (index, ev))
        return on_event
    handles = []
    try:
        for tokens in prompts:
            for k in range(n):
                handles.append(eng.submit(tokens, choice_params(params, k),
                                          on_event=forward(len(handles))))
    except (BadRequest, QueueFull) as exc:      # the client's doing; anything else is a 500
        for h in handles:
            h.cancel()
        if isinstance(exc, ContextExceeded):
            raise ApiError(400, str(exc), "exceed_context_size_error",
                           n_prompt_tokens=exc.n_prompt_tokens, n_ctx=exc.n_ctx) from None
        if isinstance(exc, QueueFull):
            raise ApiError(503, str(exc), "unavailable_error") from None
        raise ApiError(400, str(exc)) from None   # empty prompt, a grammar llama.cpp rejects
    return handles, q


async def client_left(request: Request) -> None:
    """Returns when the client closes its connection (the server's next receive says so)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def collect(request: Request, handles, q) -> list[FinalEvent]:
    """Every answer's final event, in order; if the client goes away first, cancel them
    all (their slots free at the engine's next step). An answer that failed is its error."""
    finals: list = [None] * len(handles)
    left = asyncio.ensure_future(client_left(request))
    try:
        for _ in handles:
            got = asyncio.ensure_future(q.get())
            await asyncio.wait({got, left}, return_when=asyncio.FIRST_COMPLETED)
            if not got.done():
                got.cancel()
                for h in handles:
                    h.cancel()
                raise ApiError(499, "client disconnected")
            index, ev = got.result()
            finals[index] = ev
    finally:
        left.cancel()
    err = final_error(finals)
    if err is not None:
        raise err
    return finals


def final_error(finals: list[FinalEvent]) -> ApiError | None:
    """The error of the first answer that failed or was cancelled, None if none did."""
    for ev in finals:
        if ev.finish_reason == "error":
            return ApiError(500, ev.error or "generation failed", "server_error")
        if ev.finish_reason == "cancelled":
            return ApiError(503, ev.error or "the request was cancelled", "unavailable_error")
    return None


def stream(request: Request, handles, q, shape: StreamShape) -> StreamingResponse:
    """An SSE response: for each answer (index), ``shape.opening(index)`` with the event of
    its first token (none when that token ends inside a character, as in llama-server),
    ``shape.piece(index, event)`` per token (None: nothing to send), ``shape.final(index,
    final)`` at its end; once all have ended, ``data: [DONE]`` where ``shape.done_marker``
    says so (the OpenAI-style routes; llama-server's native /completion ends with its final
    chunk). An error ends the stream with its error chunk,
    as in llama-server."""
    async def events():
        finished = False
        finals = [None] * len(handles)
        try:
            while not finished:
                index, ev = await q.get()
                if isinstance(ev, FinalEvent):
                    err = final_error([ev])
                    if err is not None:
                        finished = True
                        for h in handles:
                            h.cancel()
                        yield sse(err.body())
                        return
                    finals[index] = ev
                    for chunk in shape.final(index, ev):
                        yield sse(chunk)
                    finished = all(f is not None for f in finals)
                    continue
                if ev.n_decoded == 1 and ev.token >= 0:
                    opening = shape.opening(index)
                    if opening is not None:
                        yield sse(opening)
                chunk = shape.piece(index, ev)
                if chunk is not None:
                    yield sse(chunk)
            if shape.done_marker:
                yield DONE
        except Exception as exc:   # the status is sent already: end with an error chunk
            finished = True
            for h in handles:
                h.cancel()
            yield sse(unexpected(request, exc).body())
        finally:
            if not finished:  # the client went away mid-stream: free the slots
                for h in handles:
                    h.cancel()
    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})
