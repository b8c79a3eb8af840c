"""The streaming client: send requests in one of two load shapes and time every one of them.

Load shapes
-----------
- **closed loop** (``in_flight=N``): N workers; each sends its next request as soon as its
  previous one has finished, so at most N requests are in flight. Every request is
  *scheduled* at time 0, so ``client_wait_s`` is the time it spent waiting for a free worker.
- **open loop** (``rate=R``): requests *arrive* at scheduled times, a Poisson process of R
  requests per second (``burst=k`` makes every arrival a group of k at once, same mean
  rate), and each is sent at its arrival time whatever is still running. Nothing bounds the
  number in flight; the server's queue absorbs the excess.

What is recorded per request (times in seconds from the start of the run)
---------------------------------------------------------------------------
``scheduled_s``, ``send_s``, ``first_chunk_s`` (first content of any kind),
``first_token_s`` (first non-whitespace visible content; reasoning fields never count),
``end_s`` (stream finished or failed); derived ``client_wait_s = send - scheduled``,
``ttft_s = first_token - send``, ``completion_s = end - send``; the answer text,
``finish_reason``, ``usage``, the server's ``timings``, the HTTP status and the error text.
A failed request is kept as a row with its error; nothing is retried or repaired.
"""

from __future__ import annotations

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import httpx


@dataclass
class RequestSpec:
    """One request to send: its position, the document it is about, the chat body."""
    index: int
    doc_id: str
    messages: list[dict]
    answer: dict | None = None
    scheduled_s: float = 0.0


@dataclass
class Sampling:
    """The request body's fixed fields (the seed's: temperature 0, seed 42, no prompt cache)."""
    max_tokens: int = 64
    temperature: float = 0.0
    seed: int = 42
    cache_prompt: bool = False
    model: str | None = "local"
    response_format: dict | None = None
    extra: dict = field(default_factory=dict)
    # A stream without a final usage is an error (the seed's rule). Servers that never send
    # one (llama_cpp.server) can be measured with require_usage=False: completion_tokens is
    # then the number of content chunks, and ``usage_source`` says so.
    require_usage: bool = True

    def body(self, messages: list[dict]) -> dict:
        b = {"messages": messages, "stream": True, "stream_options": {"include_usage": True},
             "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
             "cache_prompt": self.cache_prompt}
        if self.model:
            b["model"] = self.model
        if self.response_format:
            b["response_format"] = self.response_format
        return {**b, **self.extra}


def poisson_arrivals(n: int, rate: float, burst: int = 1, seed: int = 0) -> list[float]:
    """n arrival times (s) of a Poisson process with mean ``rate`` requests/s, starting at 0.

    With ``burst=k`` the process delivers groups of k simultaneous requests at rate/k groups
    per second: the same mean load, much burstier.
    """
    if rate <= 0:
        raise ValueError("rate must be positive")
    if burst < 1:
        raise ValueError("burst must be >= 1")
    rng = random.Random(seed)
    times, t = [], 0.0
    while len(times) < n:
        times += [t] * min(burst, n - len(times))
        t += rng.expovariate(rate / burst)
    return times


def _empty_row(spec: RequestSpec) -> dict:
    return {"index": spec.index, "doc_id": spec.doc_id, "scheduled_s": spec.scheduled_s,
            "send_s": None, "first_chunk_s": None, "first_token_s": None, "end_s": None,
            "status": None, "error": None, "answer": "", "finish_reason": None,
            "prompt_tokens": None, "completion_tokens": None, "usage": None, "timings": None,
            "usage_source": None}


def stream_one(client: httpx.Client, url: str, body: dict, spec: RequestSpec,
               t0: float, timeout_s: float = 600.0, require_usage: bool = True) -> dict:
    """Send one streaming chat request and time it. Never raises: failures become the row's
    ``error``."""
    row = _empty_row(spec)
    now = lambda: time.perf_counter() - t0  # noqa: E731
    parts: list[str] = []
    usage = timings = None
    row["send_s"] = now()
    try:
        with client.stream("POST", url, json=body, timeout=timeout_s) as r:
            row["status"] = r.status_code
            if r.status_code != 200:
                text = r.read().decode("utf-8", errors="replace")
                row["error"] = f"HTTP {r.status_code}: {_error_message(text)}"
                return row
            for line in r.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if chunk.get("error"):
                    raise RuntimeError(json.dumps(chunk["error"]))
                if chunk.get("usage"):
                    usage = chunk["usage"]
                if chunk.get("timings"):
                    timings = chunk["timings"]
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") or ""
                    if piece:
                        if row["first_chunk_s"] is None:
                            row["first_chunk_s"] = now()
                        if row["first_token_s"] is None and piece.strip():
                            row["first_token_s"] = now()
                        parts.append(piece)
                    if choice.get("finish_reason"):
                        row["finish_reason"] = choice["finish_reason"]
        if usage is None or usage.get("completion_tokens") is None:
            if require_usage:
                raise ValueError("the stream ended without a final usage (completion_tokens)")
            usage = {"completion_tokens": len(parts), "source": "client: content chunks"}
    except Exception as exc:  # kept as data: the worksheet counts it
        row["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        row["end_s"] = now()
        row["answer"] = "".join(parts)
        row["usage"], row["timings"] = usage, timings
        if usage:
            row["prompt_tokens"] = usage.get("prompt_tokens")
            row["completion_tokens"] = usage.get("completion_tokens")
            row["usage_source"] = usage.get("source", "server")
    return row


def _error_message(text: str) -> str:
    """The server's error message from a JSON error body, else the raw text (truncated)."""
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict):
            kind = err.get("type")
            return f"{err.get('message')}" + (f" ({kind})" if kind else "")
        if err:
            return str(err)
    except (json.JSONDecodeError, AttributeError):
        pass
    return text[:500]


def send_all(base_url: str, specs: list[RequestSpec], sampling: Sampling, *,
             in_flight: int | None = None, open_loop: bool = False,
             on_done: Callable[[dict], None] | None = None,
             timeout_s: float = 600.0) -> tuple[list[dict], float]:
    """Send every request; return (rows in spec order, wall seconds).

    Closed loop: ``in_flight`` workers take the specs in order. Open loop (``open_loop=True``):
    each spec is sent at its ``scheduled_s``. Wall time runs from the start to the last end.
    """
    url = base_url.rstrip("/") + "/v1/chat/completions"
    n_workers = len(specs) if open_loop else (in_flight or 1)
    limits = httpx.Limits(max_connections=max(n_workers, 1) + 2,
                          max_keepalive_connections=max(n_workers, 1) + 2)
    rows: list[dict | None] = [None] * len(specs)
    lock = threading.Lock()
    with httpx.Client(limits=limits, timeout=timeout_s) as client:
        t0 = time.perf_counter()

        def run(i: int) -> None:
            spec = specs[i]
            if open_loop:
                delay = spec.scheduled_s - (time.perf_counter() - t0)
                if delay > 0:
                    time.sleep(delay)
            row = stream_one(client, url, sampling.body(spec.messages), spec, t0, timeout_s,
                             sampling.require_usage)
            with lock:
                rows[i] = row
            if on_done is not None:
                on_done(row)

        pool = ThreadPoolExecutor(max_workers=max(n_workers, 1))
        try:
            list(pool.map(run, range(len(specs))))
        finally:   # on Ctrl-C send nothing more; closing the client ends the streams in flight
            pool.shutdown(wait=False, cancel_futures=True)
        wall = time.perf_counter() - t0
    return [r for r in rows if r is not None], wall
