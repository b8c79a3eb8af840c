"""Calibrate the simulator on a live run and replay a live run in it.

The step-cost model of :mod:`labkit.sim.cost` charges each step for its ``llama_decode``. A
live server also spends time between two decodes (sampling, detokenizing, streaming the
tokens, building the next batch) and before a request reaches the engine at all (HTTP,
chat template, tokenization, the client's own turnaround). This module measures both from
what a live run records, so a simulation can be compared with the measurement on equal
terms:

    periods = step_periods(trace)          # decode time + host time up to the next decode
    cost = fit(periods).cost               # the cost model, host time folded in
    rtt = turnaround(trace_1slot)          # per-request time outside the engine
    pred = replay(rows, slots=2, cost=cost, rtt_s=rtt)   # the same requests, simulated
    pred = replay_open(rows, slots=2, cost=cost, rtt_s=rtt)   # an open-loop run, simulated

:func:`replay` plays the requests of a bench run (their exact prompt and completion token
counts, in the order the client sent them) through the simulator in a closed loop with as
many clients as the run had requests in flight, which is what :func:`labkit.bench.send_all`
does, and reports what the client would have measured: aggregate output tokens/s
(completion tokens over wall time) and the time to first token (median, mean, 90th
percentile). :func:`replay_open` does the same for an open-loop run, each request sent
when the live client sent it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .cost import StepCost
from .requests import Request


def step_periods(trace: pd.DataFrame) -> pd.DataFrame:
    """The step trace with ``dur_s`` replaced by the step's *period*: from the start of this
    ``llama_decode`` to the start of the next one, so it includes the host work in between
    (sampling, streaming, planning the next batch).

    Only steps whose next step holds decode tokens and no prompt tokens keep a period: such
    a step always follows at once (a generating slot never waits), so the gap is pure host
    time. Before a step with prompt tokens the engine may have sat idle waiting for a
    request, so those periods (and the last step's) are NaN, which :func:`~labkit.sim.fit`
    drops. The original duration stays in ``decode_s``.
    """
    df = trace.sort_values("step").reset_index(drop=True).copy()
    nxt_start = df["t_start"].shift(-1)
    nxt_step = df["step"].shift(-1)
    clean = ((df["n_prefill_tokens"].shift(-1) == 0) & (df["n_decode"].shift(-1) > 0)
             & (nxt_step == df["step"] + 1))
    df["decode_s"] = df["dur_s"]
    df["dur_s"] = np.where(clean, nxt_start - df["t_start"], np.nan)
    return df


def host_share(trace: pd.DataFrame) -> dict:
    """How much of the clean step periods is spent outside ``llama_decode``."""
    p = step_periods(trace)
    ok = p["dur_s"].notna()
    period = float(p.loc[ok, "dur_s"].sum())
    decode = float(p.loc[ok, "decode_s"].sum())
    gaps = p.loc[ok, "dur_s"] - p.loc[ok, "decode_s"]
    return {"steps": int(ok.sum()), "period_s": period, "decode_s": decode,
            "host_s": period - decode,
            "host_frac": (period - decode) / period if period > 0 else float("nan"),
            "gap_median_ms": float(gaps.median() * 1e3) if len(gaps) else float("nan")}


def turnaround(trace: pd.DataFrame) -> float:
    """Per-request time outside the engine, read off a step trace of a closed-loop run with
    ONE request in flight: the engine sits idle from the end of one request's last step to
    the start of the next request's prompt step while the answer's end travels to the
    client, the client sends the next request, and the server parses it, applies the chat
    template and tokenizes it. Returns the median of those idle gaps minus the median
    host gap between two decode steps (which the step periods already charge), in seconds.
    """
    df = trace.sort_values("step").reset_index(drop=True)
    gap = df["t_start"].shift(-1) - df["t_end"]
    nxt_prompt_only = (df["n_prefill_tokens"].shift(-1) > 0) & (df["n_decode"].shift(-1) == 0)
    nxt_decode_only = (df["n_prefill_tokens"].shift(-1) == 0) & (df["n_decode"].shift(-1) > 0)
    idle = gap[nxt_prompt_only].dropna()
    if idle.empty:
        raise ValueError("the trace has no idle gap before a prompt step")
    host = gap[nxt_decode_only].dropna()
    return max(0.0, float(idle.median() - (host.median() if len(host) else 0.0)))


class ReplayClosedLoop:
    """A closed-loop workload of fixed requests: ``clients`` workers take them in order.

    Each worker sends the next request of the list as soon as its previous one ends, as
    :func:`labkit.bench.send_all` does. ``requests`` is a sequence of
    ``(prompt_tokens, output_tokens)``. A request reaches the simulated engine ``rtt_s``
    after the client sends it (HTTP, template, tokenization), and the client sends the
    next one the moment the engine finishes the previous one.

    ``serial_ingress=True`` models a server front that handles one incoming request at a
    time (labkit's: one event loop parses, templates and tokenizes): requests sent together
    reach the engine ``rtt_s`` apart, not all at once.
    """

    def __init__(self, requests, clients: int, rtt_s: float = 0.0,
                 serial_ingress: bool = False):
        self.requests = [(int(p), int(o)) for p, o in requests]
        if clients < 1:
            raise ValueError("need at least one client")
        if rtt_s < 0:
            raise ValueError("rtt_s must be >= 0")
        self.clients, self.rtt_s = int(clients), float(rtt_s)
        self.serial_ingress = serial_ingress

    def _new(self, i: int, sent: float) -> Request:
        p, o = self.requests[i]
        self.sent[i] = sent
        start = max(sent, self._front_free) if self.serial_ingress else sent
        arrival = start + self.rtt_s
        self._front_free = arrival
        return Request(id=i, arrival=arrival, prompt_tokens=p, output_tokens=o)

    def start(self) -> list[Request]:
        self._next = min(self.clients, len(self.requests))
        self._front_free = 0.0
        self.sent: dict[int, float] = {}       # request id -> when the client sent it
        return [self._new(i, 0.0) for i in range(self._next)]

    def on_done(self, request: Request, t: float) -> Request | None:
        if self._next >= len(self.requests):
            return None
        i, self._next = self._next, self._next + 1
        return self._new(i, t)


class ReplayOpenLoop:
    """An open-loop workload of fixed requests sent at fixed times: ``requests`` is a
    sequence of ``(sent_s, prompt_tokens, output_tokens)``. A request reaches the engine
    ``rtt_s`` after it is sent; with ``serial_ingress`` the front handles one at a time, so
    a request sent while the front is busy with the one before waits for it."""

    def __init__(self, requests, rtt_s: float = 0.0, serial_ingress: bool = False):
        if rtt_s < 0:
            raise ValueError("rtt_s must be >= 0")
        self.requests = sorted(((float(t), int(p), int(o)) for t, p, o in requests),
                               key=lambda r: r[0])
        self.rtt_s, self.serial_ingress = float(rtt_s), serial_ingress

    def start(self) -> list[Request]:
        self.sent: dict[int, float] = {}
        out, front_free = [], 0.0
        for i, (t, p, o) in enumerate(self.requests):
            self.sent[i] = t
            begin = max(t, front_free) if self.serial_ingress else t
            arrival = begin + self.rtt_s
            front_free = arrival
            out.append(Request(id=i, arrival=arrival, prompt_tokens=p, output_tokens=o))
        return out

    def on_done(self, request: Request, t: float) -> None:
        return None


@dataclass
class Replay:
    """What the client would have measured in a simulated replay of a bench run."""

    throughput_tok_s: float      # completion tokens / wall
    ttft_p50_s: float            # median client-visible time to first token
    wall_s: float
    requests: pd.DataFrame       # the simulator's request table, plus ``client_ttft``
    result: object               # the SimResult
    ttft_mean_s: float = float("nan")
    ttft_p90_s: float = float("nan")


def replay(requests, slots: int, cost: StepCost, *, in_flight: int | None = None,
           rtt_s: float = 0.0, serial_ingress: bool = False, n_batch: int = 2048,
           kv=None) -> Replay:
    """Simulate a closed-loop bench run of ``requests`` (``(prompt_tokens, output_tokens)``
    pairs, or a bench rows DataFrame with ``prompt_tokens`` and ``completion_tokens``, in
    the order sent) on ``slots`` slots with ``in_flight`` clients (default: ``slots``).

    Client-visible TTFT runs from the client's send to the first token (plus nothing for
    the way back); the wall time runs from the first send (time 0) to the last finish, as
    the bench client's does. ``serial_ingress``: see :class:`ReplayClosedLoop`.
    """
    if isinstance(requests, pd.DataFrame):
        df = requests.sort_values("index") if "index" in requests.columns else requests
        requests = list(zip(df["prompt_tokens"], df["completion_tokens"]))
    wl = ReplayClosedLoop(requests, in_flight or slots, rtt_s, serial_ingress)
    return _play(wl, slots, cost, n_batch, kv)


def _play(wl, slots, cost, n_batch, kv) -> Replay:
    from .engine import simulate
    res = simulate(wl, slots=slots, cost=cost, n_batch=n_batch, kv=kv)
    req = res.requests.copy()
    req["sent"] = req["id"].map(wl.sent)
    req["client_ttft"] = req["first_token"] - req["sent"]
    wall = float(req["finish"].max())
    tokens = float(req["generated"].sum())
    ttft = req["client_ttft"]
    return Replay(tokens / wall if wall > 0 else float("nan"), float(ttft.median()), wall,
                  req, res, float(ttft.mean()), float(ttft.quantile(0.9)))


def replay_open(rows, slots: int, cost: StepCost, *, rtt_s: float = 0.0,
                serial_ingress: bool = False, n_batch: int = 2048, kv=None) -> Replay:
    """Simulate an open-loop bench run: each request of ``rows`` (a bench rows DataFrame
    with ``send_s``, ``prompt_tokens`` and ``completion_tokens``, or
    ``(sent_s, prompt_tokens, output_tokens)`` triples) is sent when the live client sent
    it. Times run from the client's start (time 0), as the bench client's wall does."""
    if isinstance(rows, pd.DataFrame):
        rows = list(zip(pd.to_numeric(rows["send_s"]), rows["prompt_tokens"],
                        rows["completion_tokens"]))
    return _play(ReplayOpenLoop(rows, rtt_s, serial_ingress), slots, cost, n_batch, kv)


def client_overhead(rows: pd.DataFrame, cost: StepCost, *, n_batch: int = 2048) -> float:
    """Per-request time the engine does not see, from a run with ONE request in flight:
    the median of (measured TTFT - simulated TTFT) over its requests. With one request in
    flight nothing queues, so the simulated TTFT is the prefill step alone and the
    difference is HTTP, chat template, tokenization and streaming the first token.
    Returns 0 when the simulation is already slower than the measurement."""
    df = rows.sort_values("index") if "index" in rows.columns else rows
    sim = replay(df, slots=1, cost=cost, in_flight=1, n_batch=n_batch)
    live = df["ttft_s"].to_numpy(dtype=float)
    simulated = sim.requests.sort_values("id")["ttft"].to_numpy(dtype=float)
    return max(0.0, float(np.nanmedian(live - simulated)))
