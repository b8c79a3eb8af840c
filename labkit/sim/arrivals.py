"""Workloads: when guests arrive, and what they ask for.

Open loop (arrival times fixed in advance, whatever the server does):

- :func:`poisson`: independent arrivals at a mean rate (requests/s).
- :func:`gamma`: the same mean rate but burstier (``cv`` > 1 clumps arrivals).
- :func:`burst`: everyone at once (the classic "batch of documents").
- :func:`from_trace`: replay a list of dicts or a DataFrame.

Closed loop (arrivals depend on the server):

- :func:`closed_loop`: N clients, each sending its next request when the previous
  one finishes (plus an optional think time). This is how the benchmark's
  "fixed in-flight" client behaves, and it can never overload the server: it
  slows down when the server does.

All of these are deterministic for a given ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from .requests import LengthLike, Request, as_lengths


@dataclass(frozen=True)
class SharedPrefix:
    """A share of requests start with one of ``groups`` common prefixes of ``tokens`` tokens.

    The prefix is added in front of the drawn prompt, so ``prompt_tokens`` =
    ``tokens`` + the drawn (unique) part for requests that carry it.
    """

    tokens: int
    groups: int = 1
    share: float = 1.0


def _pick(rng, spec, n, default):
    """Draw n labels: None -> default; int k -> k labels; mapping -> weighted labels."""
    if spec is None:
        return [default] * n
    if isinstance(spec, (int, np.integer)):
        return list(rng.integers(0, int(spec), size=n))
    if isinstance(spec, Mapping):
        keys = list(spec)
        w = np.asarray([spec[k] for k in keys], dtype=float)
        idx = rng.choice(len(keys), size=n, p=w / w.sum())
        return [keys[i] for i in idx]
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        keys = list(spec)
        idx = rng.integers(0, len(keys), size=n)
        return [keys[i] for i in idx]
    raise TypeError(f"cannot draw labels from {spec!r}")


def _build(times, rng, *, prompt, output, users, priority, prefix, first_id=0) -> list[Request]:
    n = len(times)
    prompts = as_lengths(prompt)(rng, n)
    outputs = as_lengths(output)(rng, n)
    if isinstance(users, (int, np.integer)):
        user_labels = [f"u{u}" for u in _pick(rng, int(users), n, 0)]
    else:
        user_labels = _pick(rng, users, n, "u0")
    prios = _pick(rng, priority, n, 0)
    if prefix is not None:
        has = rng.random(n) < prefix.share
        group = rng.integers(0, prefix.groups, size=n)
    out = []
    for i in range(n):
        p = int(prompts[i])
        pid, ptok = None, 0
        if prefix is not None and has[i]:
            pid, ptok = f"p{int(group[i])}", int(prefix.tokens)
            p += ptok
        out.append(Request(
            id=first_id + i, arrival=float(times[i]), prompt_tokens=p,
            output_tokens=int(outputs[i]), priority=int(prios[i]), user=user_labels[i],
            prefix_id=pid, prefix_tokens=ptok,
        ))
    return out


def poisson(n: int, rate: float, *, prompt: LengthLike = 256, output: LengthLike = 256,
            users=1, priority=None, prefix: SharedPrefix | None = None, seed: int = 0,
            start: float = 0.0) -> list[Request]:
    """``n`` requests arriving as a Poisson process at ``rate`` requests per second.

    ``users``: an int k (users ``u0..u{k-1}``, equally likely) or a mapping
    ``{name: weight}``. ``priority``: None (all 0), an int k (0..k-1 uniformly) or
    a mapping ``{priority: weight}``. ``prompt`` and ``output``: see
    :func:`labkit.sim.requests.as_lengths`.
    """
    if rate <= 0:
        raise ValueError("rate must be positive")
    rng = np.random.default_rng(seed)
    times = start + np.cumsum(rng.exponential(1.0 / rate, size=n))
    return _build(times, rng, prompt=prompt, output=output, users=users,
                  priority=priority, prefix=prefix)


def gamma(n: int, rate: float, *, cv: float = 2.0, prompt: LengthLike = 256,
          output: LengthLike = 256, users=1, priority=None,
          prefix: SharedPrefix | None = None, seed: int = 0, start: float = 0.0) -> list[Request]:
    """Bursty arrivals: gamma-distributed gaps with mean ``1/rate`` and coefficient of variation ``cv``.

    ``cv = 1`` is Poisson; ``cv = 3`` sends clumps of requests separated by long lulls
    at the same average rate, which is what makes queues (and TTFT) spike.
    """
    if rate <= 0 or cv <= 0:
        raise ValueError("rate and cv must be positive")
    rng = np.random.default_rng(seed)
    shape = 1.0 / cv ** 2
    times = start + np.cumsum(rng.gamma(shape, 1.0 / (rate * shape), size=n))
    return _build(times, rng, prompt=prompt, output=output, users=users,
                  priority=priority, prefix=prefix)


def burst(n: int, *, at: float = 0.0, prompt: LengthLike = 256, output: LengthLike = 256,
          users=1, priority=None, prefix: SharedPrefix | None = None, seed: int = 0) -> list[Request]:
    """``n`` requests that all arrive at time ``at`` (ids keep their order)."""
    rng = np.random.default_rng(seed)
    return _build(np.full(n, float(at)), rng, prompt=prompt, output=output, users=users,
                  priority=priority, prefix=prefix)


_TRACE_FIELDS = ("id", "arrival", "prompt_tokens", "output_tokens", "priority", "user",
                 "prefix_id", "prefix_tokens", "expected_output")


def from_trace(trace) -> list[Request]:
    """Replay recorded requests: a DataFrame or an iterable of dicts.

    Needs ``arrival``, ``prompt_tokens`` and ``output_tokens``; ``id`` defaults to
    the row number; ``priority``, ``user``, ``prefix_id``, ``prefix_tokens`` and
    ``expected_output`` are used when present. Other columns are ignored.
    """
    if hasattr(trace, "to_dict"):
        rows = trace.to_dict("records")
    else:
        rows = list(trace)
    out = []
    for i, row in enumerate(rows):
        kw = {k: row[k] for k in _TRACE_FIELDS if k in row and not _missing(row[k])}
        kw.setdefault("id", i)
        for k in ("prompt_tokens", "output_tokens", "priority", "prefix_tokens", "expected_output"):
            if k in kw:
                kw[k] = int(kw[k])
        kw["arrival"] = float(kw["arrival"])
        if isinstance(kw["id"], np.integer):
            kw["id"] = int(kw["id"])
        out.append(Request(**kw))
    out.sort(key=lambda r: r.arrival)
    return out


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


class ClosedLoop:
    """``clients`` users who each keep exactly one request in flight.

    Client ``i`` (user ``c{i}``) sends its first request at ``i * stagger`` seconds;
    whenever one of its requests finishes (or is refused or fails), it thinks for
    ``think_time`` seconds (exponentially distributed around that mean if
    ``random_think``) and sends the next. The run stops issuing after
    ``requests`` requests in total.

    The simulator calls :meth:`start` once per run, then :meth:`on_done` for each
    finished request; both are deterministic for the seed.
    """

    def __init__(self, clients: int, requests: int, *, think_time: float = 0.0,
                 random_think: bool = False, stagger: float = 0.0,
                 prompt: LengthLike = 256, output: LengthLike = 256, priority=None,
                 prefix: SharedPrefix | None = None, seed: int = 0):
        if clients < 1 or requests < 1:
            raise ValueError("need at least one client and one request")
        self.clients, self.requests = int(clients), int(requests)
        self.think_time, self.random_think, self.stagger = float(think_time), random_think, float(stagger)
        self.prompt, self.output, self.priority, self.prefix = prompt, output, priority, prefix
        self.seed = seed

    def __repr__(self):
        return (f"ClosedLoop(clients={self.clients}, requests={self.requests}, "
                f"think_time={self.think_time:g})")

    def _new(self, client: int, t: float) -> Request:
        r = _build([t], self._rng, prompt=self.prompt, output=self.output,
                   users={f"c{client}": 1.0}, priority=self.priority, prefix=self.prefix,
                   first_id=self._issued)[0]
        self._issued += 1
        self._owner[r.id] = client
        return r

    def start(self) -> list[Request]:
        self._rng = np.random.default_rng(self.seed)
        self._issued = 0
        self._owner: dict = {}
        n = min(self.clients, self.requests)
        return [self._new(i, i * self.stagger) for i in range(n)]

    def on_done(self, request: Request, t: float) -> Request | None:
        if self._issued >= self.requests:
            return None
        client = self._owner.pop(request.id)
        think = self.think_time
        if self.random_think and think > 0:
            think = float(self._rng.exponential(think))
        return self._new(client, t + think)


def closed_loop(clients: int, requests: int, **kw) -> ClosedLoop:
    """Shorthand for :class:`ClosedLoop` (see there for the keyword arguments)."""
    return ClosedLoop(clients, requests, **kw)


def offered_load(requests: Iterable[Request]) -> dict:
    """Mean arrival rate and token demand of an open-loop workload."""
    reqs = list(requests)
    if len(reqs) < 2:
        return {"n": len(reqs), "rate": float("nan")}
    t = np.array([r.arrival for r in reqs])
    span = t.max() - t.min()
    return {
        "n": len(reqs),
        "rate": (len(reqs) - 1) / span if span > 0 else float("inf"),
        "mean_prompt": float(np.mean([r.prompt_tokens for r in reqs])),
        "mean_output": float(np.mean([r.output_tokens for r in reqs])),
    }
