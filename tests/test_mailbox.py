"""The engine's events reach the event loop through a mailbox: in order, and with one wake-up
for a burst of them rather than one per token (labkit.server.generation.Mailbox)."""

import asyncio
import threading

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
