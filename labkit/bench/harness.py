"""What every benchmark script does around a run: name the server, warm it up, keep the
machine quiet, read the engine's trace.

The scripts in ``benchmarks/`` measure one server at a time on a machine other people may be
using. Around :func:`~labkit.bench.runner.measure_target` they all need the same four things:

- :func:`target_of`: the server under test as a :class:`Target` (its URL, its process, the
  config it was started with and what it reported at startup);
- :func:`warm_up`: the workload's worked example, sent unscored before the measured run;
- :class:`QuietMachine`: wait until the machine is quiet before a run, watch the CPU that
  other processes use during it (:class:`ForeignCPU`), and throw the run away and repeat it
  when they used too much;
- :func:`fetch_trace`, :func:`trace_mark`: the engine's step trace (``GET /trace``), all of
  it or only the steps after a mark.

A run on a fresh server, measured only while nothing else runs::

    from labkit.bench import harness, measure_target
    from labkit.server.launch import launch

    quiet = harness.QuietMachine(max_load=1.5, max_foreign=0.25)

    def measure(monitor):
        with launch(cfg) as srv:
            harness.warm_up(srv.base_url, workload, sampling)
            with monitor:                          # only the measured requests
                rows, _, info = measure_target(harness.target_of(srv), workload, 2,
                                               sampling=sampling, warmup=False)
        return rows

    run = quiet.run(measure, "short at 2 slots")
    run.result, run.load1, run.foreign_cores, run.discarded

Why the machine must be quiet: llama.cpp's worker threads spin while they wait for each
other, so a thread that loses its core to another job stalls every step; on a shared 2-core
machine that changes the numbers by far more than the differences being measured.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

import pandas as pd

from ..settings import masked_argv
from .client import RequestSpec, Sampling, stream_one

T = TypeVar("T")


# ---------------------------------------------------------------------------- the target

@dataclass
class Target:
    """What a run talks to: a URL, plus what is known about the server behind it."""
    base_url: str
    pid: int | None = None
    config: object | None = None      # the ServerConfig, when labkit started it
    facts: dict = field(default_factory=dict)
    command: list[str] | None = None
    log_path: str | None = None
    model_path: str | None = None


def target_of(server) -> Target:
    """The :class:`Target` for ``server``: a running server from
    :func:`labkit.server.launch.launch` (URL, pid, config, the facts its startup log reported,
    command line with its API key masked, log file, model), a base URL (a server someone else started: nothing is
    known but where it is), or a Target, returned as it is."""
    if isinstance(server, Target):
        return server
    if isinstance(server, str):
        return Target(server)
    return Target(server.base_url, server.pid, server.config,
                  {**server.facts, **getattr(server, "offload", {})},
                  masked_argv(server.command), str(server.log_path), server.model_path)


# ---------------------------------------------------------------------------- warm-up

def warm_up(base_url: str, workload, sampling: Sampling, times: int = 2) -> None:
    """Send ``workload``'s worked example (its prompt's warm-up messages) ``times`` times,
    one after the other, unscored: the first requests on a fresh server pay for page faults
    and cold caches. Raises RuntimeError if one fails: a server that cannot answer the
    warm-up would only produce error rows."""
    import httpx
    spec = RequestSpec(-1, "warmup", workload.prompt.warmup_messages())
    url = base_url.rstrip("/") + "/v1/chat/completions"
    with httpx.Client(timeout=600) as client:
        for _ in range(times):
            row = stream_one(client, url, sampling.body(spec.messages), spec,
                             time.perf_counter(), require_usage=sampling.require_usage)
            if row["error"]:
                raise RuntimeError(f"warm-up request to {base_url} failed: {row['error']}")


# ---------------------------------------------------------------------------- the trace

def fetch_trace(base_url: str, since: int = 0, kind: str = "steps") -> pd.DataFrame:
    """The server's trace (``GET /trace``): one row per engine step (``kind="steps"``) or per
    slot and step (``kind="slots"``), from step ``since`` on. Raises RuntimeError when the
    server no longer holds step ``since`` (its trace keeps the last 20 000 steps, fewer with
    many busy slots: ``labkit.engine.trace.MAX_STEPS``), rather than return part of a run."""
    import httpx
    r = httpx.get(base_url.rstrip("/") + "/trace", params={"since": since, "kind": kind},
                  timeout=60)
    r.raise_for_status()
    df = pd.DataFrame(r.json())
    if since > 0 and len(df) and int(df["step"].min()) > since:
        raise RuntimeError(f"the server's trace no longer holds step {since} (it starts at "
                           f"step {int(df['step'].min())}): the run was longer than the trace "
                           "keeps")
    return df


def next_step(steps: pd.DataFrame) -> int:
    """The ``since`` that skips every step in ``steps`` (0 for an empty trace)."""
    return int(steps["step"].max()) + 1 if len(steps) else 0


def trace_mark(base_url: str) -> int:
    """A mark for :func:`fetch_trace`: ``fetch_trace(url, since=trace_mark(url))`` later
    returns only the steps taken after this call (the warm-up's steps stay out)."""
    return next_step(fetch_trace(base_url))


# ---------------------------------------------------------------------------- other load
#
# The load average says whether the machine was quiet when a run started; ForeignCPU says
# whether it stayed quiet. It counts the CPU time the whole machine spent (/proc/stat)
# minus what this process and its descendants (the server) spent: the rest is other
# people's work.

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def load1() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def busy_ticks(stat_line: str) -> int:
    """Clock ticks the machine's CPUs spent busy, from the first line of /proc/stat
    (``cpu user nice system idle iowait irq softirq ...``): all but idle and iowait."""
    v = [int(x) for x in stat_line.split()[1:]]
    return sum(v) - v[3] - (v[4] if len(v) > 4 else 0)


def descendants(parent_of: dict[int, int], root: int) -> set[int]:
    """``root`` and every process below it, given each process's parent pid."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    tree, frontier = {root}, [root]
    while frontier:
        for c in children.get(frontier.pop(), []):
            if c not in tree:
                tree.add(c)
                frontier.append(c)
    return tree


def foreign_ticks(busy_before: int, busy_after: int, own_before: dict[int, int],
                  own_after: dict[int, int]) -> int:
    """Busy ticks of an interval that this process tree did not spend. ``own_*``: CPU ticks
    by pid at either end; a process that started inside the interval counts whole. (One that
    ended inside it has left no record, so its last ticks count as foreign: watch only while
    the server runs.)"""
    mine = sum(t - own_before.get(pid, 0) for pid, t in own_after.items())
    return max(0, (busy_after - busy_before) - mine)


def _machine_busy_ticks() -> int:
    with open("/proc/stat") as f:
        return busy_ticks(f.readline())


def _own_ticks() -> dict[int, int]:
    """utime + stime of this process and every descendant, by pid."""
    stats: dict[int, tuple[int, int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
                stats[int(d)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
            except (OSError, IndexError, ValueError):
                pass
    mine = descendants({pid: ppid for pid, (ppid, _) in stats.items()}, os.getpid())
    return {pid: stats[pid][1] for pid in mine if pid in stats}


class ForeignCPU:
    """Cores used by processes other than this one and its descendants, averaged over the
    time between entering and leaving the ``with`` block (sampled every ``interval_s``, and
    once more at the end). Single use."""

    def __init__(self, interval_s: float = 0.5):
        self.interval_s = interval_s
        self.foreign_ticks = 0
        self.seconds = 0.0
        self.started = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        busy, own, t = _machine_busy_ticks(), _own_ticks(), time.monotonic()
        while True:
            stopping = self._stop.wait(self.interval_s)
            busy2, own2, t2 = _machine_busy_ticks(), _own_ticks(), time.monotonic()
            self.foreign_ticks += foreign_ticks(busy, busy2, own, own2)
            self.seconds += t2 - t
            busy, own, t = busy2, own2, t2
            if stopping:
                return

    def __enter__(self) -> "ForeignCPU":
        self.started = True
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def cores(self) -> float:
        """Average cores other processes used (NaN before any interval was measured)."""
        if not self.seconds:
            return float("nan")
        return self.foreign_ticks / CLOCK_TICKS_PER_S / self.seconds


def foreign_now(window_s: float = 3.0) -> float:
    """Cores other processes use, averaged over the next ``window_s`` seconds."""
    with ForeignCPU() as m:
        time.sleep(window_s)
    return m.cores


def _say(text: str) -> None:
    print(text, file=sys.stderr)


@dataclass
class QuietRun(Generic[T]):
    """A measurement kept by :meth:`QuietMachine.run`, with the state of the machine: the
    1-minute load average when it started, the cores other processes used during it, and
    how many earlier tries were thrown away because others were busy."""
    result: T
    load1: float
    foreign_cores: float
    discarded: int


@dataclass
class QuietMachine:
    """Measure only while the machine is quiet.

    Before every run, wait until the 1-minute load average is below ``max_load`` and other
    processes use under ``max_foreign`` cores (checked every ``poll_s``, for at most
    ``max_wait_s``); after it, throw it away and repeat it (up to ``max_retries`` times)
    when other processes used more than ``max_foreign`` cores on average during it.
    ``max_load=0`` turns both off: runs start at once and are always kept.
    """
    max_load: float = 1.5
    max_foreign: float = 0.25
    max_retries: int = 5
    poll_s: float = 10.0
    max_wait_s: float = 3600.0

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """--max-load, --max-foreign and --max-retries, as every benchmark script spells them."""
        d = QuietMachine()
        parser.add_argument("--max-load", type=float, default=d.max_load,
                            help="wait before each run until the 1-minute load average is below "
                                 "this (0: do not wait, keep every run)")
        parser.add_argument("--max-foreign", type=float, default=d.max_foreign,
                            help="most CPU cores other processes may use, on average, during a "
                                 "run before it is thrown away and repeated")
        parser.add_argument("--max-retries", type=int, default=d.max_retries,
                            help="most times one run is repeated because others were busy")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "QuietMachine":
        return cls(max_load=args.max_load, max_foreign=args.max_foreign,
                   max_retries=args.max_retries)

    @property
    def enabled(self) -> bool:
        return bool(self.max_load)

    def disturbed(self, foreign_cores: float) -> bool:
        """Whether a run during which others used ``foreign_cores`` cores must be repeated
        (an unmeasured NaN counts as disturbed)."""
        return self.enabled and not foreign_cores <= self.max_foreign

    def wait(self) -> float:
        """Sleep until the machine is quiet (or ``max_wait_s`` has passed); the 1-minute
        load average at the end."""
        t0 = time.monotonic()
        while True:
            la = load1()
            if not self.enabled:
                return la
            if la < self.max_load:
                fc = foreign_now()
                if fc < self.max_foreign:
                    return load1()
                _say(f"  load {la:.2f}, but others use {fc:.2f} cores: waiting")
            else:
                _say(f"  waiting for load < {self.max_load} (now {la:.2f})")
            if time.monotonic() - t0 > self.max_wait_s:
                _say(f"  (gave up waiting: load {la:.2f})")
                return la
            time.sleep(self.poll_s)

    def run(self, measure: Callable[[ForeignCPU], T], what: str = "a run") -> QuietRun[T]:
        """Wait for a quiet machine, call ``measure(monitor)``, and keep its result unless
        others were busy while it ran; otherwise say so and repeat. ``measure`` wraps the
        part to watch in ``with monitor:`` (the measured requests, not the server's start or
        stop)."""
        discarded = 0
        while True:
            la = self.wait()
            monitor = ForeignCPU()
            result = measure(monitor)
            if not monitor.started:
                raise RuntimeError(f"{what}: measure() never entered its monitor "
                                   "(wrap the measured requests in `with monitor:`)")
            foreign = monitor.cores
            if not self.disturbed(foreign) or discarded >= self.max_retries:
                return QuietRun(result, la, foreign, discarded)
            discarded += 1
            _say(f"  discarded {what}: other processes used {foreign:.2f} cores during it")
