"""What llama-server does with a request that finds every slot busy: it defers it.

llama-server has no queue bound (``--max-queue`` is labkit's own setting): a request that
arrives while every slot is busy waits in the server's deferred queue until a slot frees up,
and ``/metrics`` counts the waiting ones in the gauge ``llamacpp:requests_deferred``. Nothing
is refused. A limit on waiting, if you want one, lives in front of the server (a reverse proxy
with a connection limit).

:func:`llama_server_burst` shows it on the real server: it starts llama.cpp's llama-server
(the ``xllamacpp`` wheel of the ``ref`` extra), sends a burst at once and reads the gauges
while the burst waits.
"""

from __future__ import annotations

import importlib.util
import re
import threading
import time

GAUGES = ("requests_processing", "requests_deferred")


def metric(text: str, name: str) -> float | None:
    """The value of ``llamacpp:<name>`` in a Prometheus text from ``/metrics`` (None if absent)."""
    m = re.search(rf"^llamacpp:{re.escape(name)}\s+(\S+)\s*$", text, re.M)
    return float(m.group(1)) if m else None


def have_llama_server() -> bool:
    """Whether llama.cpp's llama-server can run here (the ``xllamacpp`` wheel)."""
    return importlib.util.find_spec("xllamacpp") is not None


def llama_server_burst(n: int = 4, max_tokens: int = 4, n_slots: int = 1, n_ctx: int = 512,
                       prompt: str = "Name three soups.", every_s: float = 0.05):
    """Start llama-server with ``n_slots`` slots, send ``n`` completions at once and sample its
    ``/metrics`` gauges every ``every_s`` s until all are answered.

    Returns ``(samples, answers)``: ``samples`` one row per reading (``t`` seconds after the
    burst, ``requests_processing``, ``requests_deferred``), ``answers`` one row per request
    (``status``: the HTTP status, ``answer_s``). None when llama-server is not installed."""
    if not have_llama_server():
        return None
    import httpx
    import pandas as pd

    from .launch import ServerConfig, launch
    answers, samples = [], []
    with launch(ServerConfig(kind="xllamacpp", n_ctx=n_ctx, n_slots=n_slots, n_threads=1)) as srv:
        url = srv.base_url + "/completion"
        body = {"prompt": prompt, "n_predict": max_tokens, "temperature": 0.0,
                "ignore_eos": True, "cache_prompt": False}

        def send(i):
            r = httpx.post(url, json=body, timeout=300)
            answers.append({"request": i, "status": r.status_code,
                            "answer_s": time.perf_counter() - t0})

        threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(n)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        while any(th.is_alive() for th in threads):
            text = srv.get("/metrics").text
            samples.append({"t": time.perf_counter() - t0,
                            **{g: metric(text, g) for g in GAUGES}})
            time.sleep(every_s)
        for th in threads:
            th.join()
    return (pd.DataFrame(samples),
            pd.DataFrame(answers).sort_values("request").set_index("request"))
