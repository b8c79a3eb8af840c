"""The engine's events reach the event loop through a mailbox: in order, and with one wake-up
for a burst of them rather than one per token (labkit.server.generation.Mailbox); and what the
engine refuses reaches the client as llama-server's error for it, while an engine bug does not
pass for the client's fault (labkit.server.generation.submit)."""

import asyncio
import threading

import pytest

from labkit.engine import BadRequest, ContextExceeded, QueueFull, SamplingParams
from labkit.server.generation import Mailbox


def test_a_burst_arrives_in_order_with_one_wake_up():
    async def main():
        loop = asyncio.get_running_loop()
        box = Mailbox.of(loop)
        assert Mailbox.of(loop) is box
        wakes = []
        real = loop.call_soon_threadsafe

        def counted(*args):
            wakes.append(args)
            return real(*args)
        loop.call_soon_threadsafe = counted
        q1, q2 = asyncio.Queue(), asyncio.Queue()

        def engine_step():             # one step's tokens for two requests, from a thread
            for i in range(8):
                box.post(q1 if i % 2 else q2, i)
        t = threading.Thread(target=engine_step)
        t.start()
        t.join()                       # the loop has not run: the burst waits in the box
        got1 = [await q1.get() for _ in range(4)]
        got2 = [await q2.get() for _ in range(4)]
        assert got1 == [1, 3, 5, 7] and got2 == [0, 2, 4, 6]
        assert len(wakes) == 1         # posting one call per token would make eight
        box.post(q1, "next")           # once drained, the next post wakes the loop again
        assert await q1.get() == "next" and len(wakes) == 2
    asyncio.run(main())


def test_a_post_to_a_closed_loop_is_dropped():
    loop = asyncio.new_event_loop()
    box = Mailbox.of(loop)
    loop.close()
    box.post(asyncio.Queue(), "late")   # the engine finishing after the server stopped
    box.post(asyncio.Queue(), "later")


class _Refusing:
    """An engine whose submit raises what it is given, after accepting ``ok`` requests."""

    def __init__(self, exc, ok=0):
        self.exc, self.ok, self.cancelled = exc, ok, 0

    def submit(self, tokens, params, on_event=None):
        if self.ok:
            self.ok -= 1
            engine = self

            class Handle:
                def cancel(self):
                    engine.cancelled += 1
            return Handle()
        raise self.exc


@pytest.mark.parametrize("exc, status, kind", [
    (BadRequest("the prompt is empty"), 400, "invalid_request_error"),
    (ContextExceeded(5000, 2048), 400, "exceed_context_size_error"),
    (QueueFull(3), 503, "unavailable_error"),
])
def test_what_the_client_did_is_its_error_and_the_rest_is_ours(exc, status, kind):
    """The engine's BadRequest (and ContextExceeded, one of them) is the client's 400, QueueFull
    a 503; the requests already started for the same call are cancelled."""
    import asyncio

    from labkit.server.errors import ApiError
    from labkit.server.generation import submit
    eng = _Refusing(exc, ok=1)
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ApiError) as got:
            submit(eng, [[1, 2, 3]], SamplingParams(), 2, loop, streamed=False)
    finally:
        loop.close()
    assert (got.value.status, got.value.body()["error"]["type"]) == (status, kind)
    assert eng.cancelled == 1


def test_an_engine_bug_is_not_the_clients_fault():
    """Any other exception out of the engine (a ValueError a bug raised) is not turned into a
    400: it goes on to the app's last resort, a 500 whose message says nothing of it."""
    import asyncio

    from labkit.server.generation import submit
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="an index out of step"):
            submit(_Refusing(ValueError("an index out of step")), [[1]], SamplingParams(), 1,
                   loop, streamed=False)
    finally:
        loop.close()
