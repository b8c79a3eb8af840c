"""Snapshots of where a labkit server's Python memory goes, for ``benchmarks/soak.py --tracemalloc``.

soak.py puts this folder first on the server's ``PYTHONPATH``, so Python imports this module as
``sitecustomize`` when the server process starts. With ``PYTHONTRACEMALLOC`` set (Python traces
its allocations) and ``LABKIT_TRACEMALLOC_DIR`` naming a folder, each SIGUSR1 the process receives
writes a tracemalloc snapshot there: ``snapshot-000.pickle``, ``snapshot-001.pickle``, ... Without
both, it does nothing, and the signal keeps its default action. The server itself knows nothing of
this: it is a measuring tool's, not the product's.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import threading


def snapshots_on_sigusr1(folder: str | None) -> bool:
    """Where Python traces its allocations and ``folder`` is given, write a tracemalloc snapshot
    into ``folder`` on each SIGUSR1, numbered from 000 (taken on a thread of its own: the signal
    arrives on the thread that runs the event loop). Returns whether it is on."""
    import tracemalloc
    if not folder or not tracemalloc.is_tracing() or not hasattr(signal, "SIGUSR1"):
        return False
    os.makedirs(folder, exist_ok=True)
    numbers, lock = itertools.count(), threading.Lock()
    log = logging.getLogger("labkit.tracemalloc")

    def take(n: int) -> None:
        with lock:
            path = os.path.join(folder, f"snapshot-{n:03d}.pickle")
            tracemalloc.take_snapshot().dump(path + ".part")
            os.replace(path + ".part", path)
            log.info("tracemalloc snapshot written: %s", path)

    signal.signal(signal.SIGUSR1, lambda signum, frame: threading.Thread(
        target=take, args=(next(numbers),), name="labkit-tracemalloc", daemon=True).start())
    return True


snapshots_on_sigusr1(os.environ.get("LABKIT_TRACEMALLOC_DIR"))
