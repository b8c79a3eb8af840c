"""The benchmark harness's pure parts: naming a target, reading /proc arithmetic, deciding
when the machine is quiet and when a run is kept. No server, no subprocess: the network
and the clock are stand-ins."""

import argparse
import math
from pathlib import Path
from types import SimpleNamespace

import httpx
import pandas as pd
import pytest

from labkit.bench import harness
from labkit.bench.client import Sampling
from labkit.bench.harness import QuietMachine, Target


# ------------------------------------------------------------------ the target

def test_target_of_a_running_server_keeps_what_it_reported():
    facts = {"n_slots": 2, "n_ctx_slot": 2048}
    srv = SimpleNamespace(base_url="http://127.0.0.1:8080", pid=4321, config="cfg",
                          facts=facts, command=("python", "-m", "labkit.server"),
                          log_path=Path("/tmp/x.log"), model_path="/m.gguf")
    t = harness.target_of(srv)
    assert t == Target("http://127.0.0.1:8080", 4321, "cfg", facts,
                       ["python", "-m", "labkit.server"], "/tmp/x.log", "/m.gguf")
    facts["n_slots"] = 99                              # a copy: the run keeps what it saw
    assert t.facts["n_slots"] == 2


def test_target_of_a_url_or_a_target():
    t = harness.target_of("http://10.0.0.5:8000")
    assert t == Target("http://10.0.0.5:8000") and t.pid is None and t.facts == {}
    assert harness.target_of(t) is t


# ------------------------------------------------------------------ /proc arithmetic

def test_busy_ticks_leave_out_idle_and_iowait():
    #            user nice system idle iowait irq softirq steal
    line = "cpu  100 5 50 1000 20 3 2 7 0 0"
    assert harness.busy_ticks(line) == 100 + 5 + 50 + 3 + 2 + 7
    assert harness.busy_ticks("cpu 1 2 3 4") == 6       # old kernels: no iowait column


def test_descendants_follow_the_tree_only():
    parent_of = {2: 1, 3: 2, 4: 1, 5: 99, 6: 5, 7: 3}
    assert harness.descendants(parent_of, 1) == {1, 2, 3, 4, 7}
    assert harness.descendants(parent_of, 3) == {3, 7}
    assert harness.descendants({}, 1) == {1}


def test_foreign_ticks_subtract_our_own_work():
    # The machine was busy 100 ticks; we spent 30 in pid 10 and 15 in pid 11, which
    # started during the interval: the other 55 were someone else's.
    assert harness.foreign_ticks(1000, 1100, {10: 20}, {10: 50, 11: 15}) == 55
    # We cannot have used more than the machine did: never negative.
    assert harness.foreign_ticks(0, 10, {}, {10: 50}) == 0


def test_foreign_cpu_averages_over_the_watched_time(monkeypatch):
    # Every sample, the machine has done 50 more busy ticks and we 10 of them: 40 foreign.
    samples = []
    monkeypatch.setattr(harness, "_machine_busy_ticks", lambda: 50 * len(samples))
    monkeypatch.setattr(harness, "_own_ticks", lambda: samples.append(1) or {1: 10 * len(samples)})
    m = harness.ForeignCPU(interval_s=0.02)
    assert math.isnan(m.cores) and not m.started
    with m:
        harness.time.sleep(0.1)
    intervals = len(samples) - 1                       # the last one is taken at the end
    assert m.started and intervals >= 1 and m.foreign_ticks == 40 * intervals
    assert m.cores == pytest.approx(m.foreign_ticks / harness.CLOCK_TICKS_PER_S / m.seconds)


# ------------------------------------------------------------------ waiting for quiet

def scripted(monkeypatch, loads, foreign=()):
    """Stand-ins for the load average, the foreign-CPU probe and sleep; returns the sleeps."""
    loads, foreign, slept = iter(loads), iter(foreign), []
    monkeypatch.setattr(harness, "load1", lambda: next(loads))
    monkeypatch.setattr(harness, "foreign_now", lambda: next(foreign))
    monkeypatch.setattr(harness.time, "sleep", slept.append)
    return slept


def test_wait_sleeps_until_load_and_others_are_low(monkeypatch, capsys):
    # load too high; load fine but others busy; both fine (then the load is read again)
    slept = scripted(monkeypatch, [3.0, 1.0, 0.8, 0.7], [0.9, 0.1])
    q = QuietMachine(max_load=1.5, max_foreign=0.25, poll_s=7)
    assert q.wait() == 0.7
    assert slept == [7, 7]
    err = capsys.readouterr().err
    assert "waiting for load < 1.5 (now 3.00)" in err
    assert "load 1.00, but others use 0.90 cores: waiting" in err


def test_wait_gives_up_after_max_wait(monkeypatch, capsys):
    slept = scripted(monkeypatch, [4.0])
    assert QuietMachine(max_wait_s=-1).wait() == 4.0
    assert slept == [] and "gave up waiting: load 4.00" in capsys.readouterr().err


def test_max_load_zero_does_not_wait(monkeypatch):
    slept = scripted(monkeypatch, [9.0])                 # no foreign probe either
    assert QuietMachine(max_load=0).wait() == 9.0 and slept == []


@pytest.mark.parametrize("q,foreign,disturbed", [
    (QuietMachine(max_foreign=0.25), 0.25, False),
    (QuietMachine(max_foreign=0.25), 0.26, True),
    (QuietMachine(max_foreign=0.25), float("nan"), True),
    (QuietMachine(max_load=0, max_foreign=0.25), 1.5, False),
])
def test_disturbed(q, foreign, disturbed):
    assert q.disturbed(foreign) is disturbed


# ------------------------------------------------------------------ keeping or repeating a run

class FakeMonitor:
    """Stands in for ForeignCPU: reports the next scripted core count."""
    script: list = []

    def __init__(self):
        self.started = False
        self.cores = FakeMonitor.script.pop(0)

    def __enter__(self):
        self.started = True
        return self

    def __exit__(self, *exc):
        pass


def measured(tries: list):
    def measure(monitor):
        with monitor:
            tries.append(len(tries))
        return f"run {len(tries)}"
    return measure


@pytest.fixture
def quiet_now(monkeypatch):
    monkeypatch.setattr(QuietMachine, "wait", lambda self: 0.5)
    monkeypatch.setattr(harness, "ForeignCPU", FakeMonitor)


def test_a_disturbed_run_is_repeated(quiet_now, capsys):
    FakeMonitor.script = [0.9, 0.4, 0.1]
    tries = []
    run = QuietMachine(max_foreign=0.25).run(measured(tries), "short at 2 slots")
    assert (run.result, run.load1, run.foreign_cores, run.discarded) == ("run 3", 0.5, 0.1, 2)
    err = capsys.readouterr().err
    assert "discarded short at 2 slots: other processes used 0.90 cores" in err
    assert err.count("discarded") == 2


def test_retries_are_bounded(quiet_now):
    FakeMonitor.script = [0.9, 0.8, 0.7]
    run = QuietMachine(max_retries=1).run(measured([]))
    assert (run.result, run.foreign_cores, run.discarded) == ("run 2", 0.8, 1)


def test_without_max_load_every_run_is_kept(quiet_now):
    FakeMonitor.script = [1.7]
    run = QuietMachine(max_load=0).run(measured([]))
    assert (run.result, run.discarded) == ("run 1", 0)


def test_a_run_that_never_watched_is_an_error(quiet_now):
    FakeMonitor.script = [0.0]
    with pytest.raises(RuntimeError, match="never entered its monitor"):
        QuietMachine().run(lambda monitor: None, "unwatched")


def test_command_line_options():
    p = argparse.ArgumentParser()
    QuietMachine.add_arguments(p)
    assert QuietMachine.from_args(p.parse_args([])) == QuietMachine()
    q = QuietMachine.from_args(p.parse_args(["--max-load", "0", "--max-foreign", "0.5",
                                             "--max-retries", "2"]))
    assert (q.max_load, q.max_foreign, q.max_retries, q.enabled) == (0, 0.5, 2, False)


# ------------------------------------------------------------------ warm-up and trace

def test_warm_up_sends_the_worked_example(monkeypatch):
    sent = []

    def fake_stream_one(client, url, body, spec, t0, require_usage=True):
        sent.append((url, body, spec.doc_id, require_usage))
        return {"error": None}
    monkeypatch.setattr(harness, "stream_one", fake_stream_one)
    example = [{"role": "user", "content": "worked example"}]
    wl = SimpleNamespace(prompt=SimpleNamespace(warmup_messages=lambda: example))
    sampling = Sampling(max_tokens=5, require_usage=False)
    harness.warm_up("http://h:1/", wl, sampling, times=3)
    assert len(sent) == 3
    url, body, doc, usage = sent[0]
    assert url == "http://h:1/v1/chat/completions" and doc == "warmup" and usage is False
    assert body == sampling.body(example)


def test_a_failed_warm_up_stops_the_run(monkeypatch):
    monkeypatch.setattr(harness, "stream_one", lambda *a, **k: {"error": "HTTP 500"})
    wl = SimpleNamespace(prompt=SimpleNamespace(warmup_messages=lambda: []))
    with pytest.raises(RuntimeError, match="warm-up request to http://h:1 failed: HTTP 500"):
        harness.warm_up("http://h:1", wl, Sampling(max_tokens=1))


def test_fetch_trace_and_mark(monkeypatch):
    steps = [{"step": s, "n_tokens": 1} for s in (3, 4, 7)]
    asked = []

    def fake_get(url, params, timeout):
        asked.append((url, params))
        rows = [r for r in steps if r["step"] >= params["since"]]
        return httpx.Response(200, json=rows, request=httpx.Request("GET", url))
    monkeypatch.setattr(httpx, "get", fake_get)
    assert harness.trace_mark("http://h:1/") == 8
    assert harness.fetch_trace("http://h:1", since=4)["step"].tolist() == [4, 7]
    harness.fetch_trace("http://h:1", kind="slots")
    assert asked == [("http://h:1/trace", {"since": 0, "kind": "steps"}),
                     ("http://h:1/trace", {"since": 4, "kind": "steps"}),
                     ("http://h:1/trace", {"since": 0, "kind": "slots"})]
    assert harness.next_step(pd.DataFrame()) == 0


def test_fetch_trace_refuses_a_run_the_trace_no_longer_holds(monkeypatch):
    monkeypatch.setattr(httpx, "get", lambda url, params, timeout: httpx.Response(
        200, json=[{"step": s} for s in (20_500, 20_501) if s >= params["since"]],
        request=httpx.Request("GET", url)))
    assert harness.fetch_trace("http://h:1", since=20_500)["step"].tolist() == [20_500, 20_501]
    assert len(harness.fetch_trace("http://h:1")) == 2         # all it holds, from a mark of 0
    assert harness.fetch_trace("http://h:1", since=30_000).empty   # nothing since: no steps
    with pytest.raises(RuntimeError, match="no longer holds step 500 .*starts at step 20500"):
        harness.fetch_trace("http://h:1", since=500)


def test_fetch_trace_raises_on_an_error_status(monkeypatch):
    monkeypatch.setattr(httpx, "get", lambda url, **kw: httpx.Response(
        400, json={"error": {}}, request=httpx.Request("GET", url)))
    with pytest.raises(httpx.HTTPStatusError):
        harness.fetch_trace("http://h:1", kind="nope")
