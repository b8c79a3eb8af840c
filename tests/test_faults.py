"""Faults a client or a bad setting can cause, handled as llama-server handles them or better.

Startup: a server that cannot serve exits at once with status 1 and one error line naming the
cause, and the launcher reports it as soon as the process exits (timings are printed, not
asserted: timing targets belong in benchmarks); llama-server (the xllamacpp wheel, a
dependency of labkit) started the same way fails alike. Requests: every error is llama-server's JSON shape,
an unexpected exception included. Processes: a server dies with the process that started it,
not with the thread. ``labkit bench`` stopped with Ctrl-C keeps its finished runs.

What llama-server does with each request fault is checked side by side in
tests/test_differential.py.
"""

import importlib.util
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pandas as pd
import pytest

from labkit.server import launch as launcher
from labkit.engine import EngineConfig
from labkit.server.launch import ServerConfig, ServerFailedToStart, failure_reason, launch, start
from labkit.models.files import default_model_path

# Far below the launcher's startup timeout (180 s): a failing server must not be waited for.
FAST_ENOUGH_S = 60


# ------------------------------------------------------------------ startup failures

def _not_gguf(tmp_path):
    path = tmp_path / "notes.gguf"
    path.write_text("these are notes, not a model\n" * 50)
    return {"model": str(path)}


def _truncated(tmp_path):
    data = default_model_path().read_bytes()
    path = tmp_path / "half.gguf"
    path.write_bytes(data[: len(data) // 2])
    return {"model": str(path)}


def _too_many_slots(tmp_path):
    return {"n_slots": 1000}


STARTUP_FAILURES = [
    # (name, settings, what labkit's one error line must say, what both servers' reasons match)
    ("not-gguf", _not_gguf, "not a GGUF file", r"GGUF"),
    ("truncated", _truncated, "truncated GGUF file", r"truncated|corrupted or incomplete"),
    ("np-1000", _too_many_slots, "n_seq_max must be <= 256", r"n_seq_max must be <= 256"),
]


def _fails_to_start(cfg: ServerConfig) -> tuple[ServerFailedToStart, float]:
    """Start a server that must not start: what the launcher raised, and after how many seconds."""
    t0 = time.perf_counter()
    with pytest.raises(ServerFailedToStart) as failed:
        start(cfg)
    return failed.value, time.perf_counter() - t0


def _llama_server_fails_alike(settings: dict, reason: str):
    """llama-server started with the same settings exits as labkit's server does: status 1,
    soon, for a reason matching ``reason``. Not compared (and said so) without xllamacpp."""
    if importlib.util.find_spec("xllamacpp") is None:
        print("llama-server: not compared, xllamacpp is not installed")
        return
    failed, took = _fails_to_start(ServerConfig(kind="xllamacpp", **settings))
    print(f"llama-server: exit {failed.returncode} after {took:.2f} s: {failed.reason}")
    assert failed.returncode == 1
    assert re.search(reason, failed.reason), f"llama-server's reason: {failed.reason!r}"
    assert took < FAST_ENOUGH_S


@pytest.mark.slow
@pytest.mark.parametrize("name,make,says,both_say", STARTUP_FAILURES,
                         ids=[c[0] for c in STARTUP_FAILURES])
def test_a_server_that_cannot_load_exits_at_once_saying_why(tmp_path, name, make, says,
                                                            both_say):
    settings = dict(n_ctx=1024, **make(tmp_path))
    failed, took = _fails_to_start(ServerConfig(**settings))
    print(f"\n{name}: launcher reported exit {failed.returncode} after {took:.2f} s: "
          f"{failed.reason}")
    assert failed.returncode == 1
    assert says in failed.reason and says in str(failed).splitlines()[0]
    assert took < FAST_ENOUGH_S
    log = failed.log_path.read_text()
    assert len([ln for ln in log.splitlines() if " E labkit.server: " in ln]) == 1
    assert "listening" not in log or name == "np-1000"   # loading starts after the bind
    _llama_server_fails_alike(settings, both_say)


@pytest.mark.slow
def test_a_port_in_use_is_an_error_before_listening(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(launcher, "free_port", lambda: port)
        failed, took = _fails_to_start(ServerConfig(n_ctx=1024))
        print(f"\nport in use: launcher reported exit {failed.returncode} after {took:.2f} s: "
              f"{failed.reason}")
        assert failed.returncode == 1
        assert f"couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {port}" in \
            failed.reason
        assert "listening" not in failed.log_path.read_text()
        assert took < FAST_ENOUGH_S
        _llama_server_fails_alike({"n_ctx": 1024}, r"couldn't bind HTTP server socket")


@pytest.mark.slow
def test_a_port_out_of_range_is_refused_by_the_settings_table():
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "labkit.server", "--port", "70000"],
                          capture_output=True, text=True, timeout=FAST_ENOUGH_S)
    print(f"\n--port 70000: exit {done.returncode} after {time.perf_counter() - t0:.2f} s")
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "port='70000'" in last and "allowed: an integer from 1 to 65535" in last


def test_failure_reason_reads_each_servers_log():
    labkit_log = ("python -m labkit.server -m x.gguf\n"
                  "2026-01-01 12:00:00,000 I labkit.server: listening on http://127.0.0.1:1\n"
                  "2026-01-01 12:00:01,000 E labkit.server: cannot load the model: x.gguf: "
                  "not a GGUF file\n")
    assert failure_reason(labkit_log) == "cannot load the model: x.gguf: not a GGUF file"
    llama_server_log = ("python -m labkit.server.reference -m x.gguf\n"
                        "0.00.019.406 I srv    load_model: loading model 'x.gguf'\n"
                        "0.00.019.540 E gguf_init_from_reader: invalid magic characters\n"
                        "0.00.069.137 E srv          init: exiting due to model loading error\n"
                        "RuntimeError: Failed to init server, please check the input params.\n")
    assert failure_reason(llama_server_log) == "gguf_init_from_reader: invalid magic characters"
    traceback_log = ("python -m llama_cpp.server --model x.gguf\nTraceback (most recent call "
                     "last):\n  File \"x.py\"\nValueError: Failed to load model from file: x\n")
    assert failure_reason(traceback_log) == "ValueError: Failed to load model from file: x"
    assert failure_reason("python -m labkit.server\nall good\n") is None


# ------------------------------------------------------------------ request faults

class _Engine:
    """Stands in for the engine in the app: no model, a tokenizer that breaks."""

    facts = {"n_ctx_slot": 512, "n_slots": 1, "n_ctx_train": 8192, "model_path": "x.gguf"}

    def tokenize(self, text, **kw):
        raise RuntimeError("the tokenizer broke")


class _Broken:
    """An event none of whose fields can be read: the stream breaks on it."""

    def __getattr__(self, name):
        raise RuntimeError("the event broke")


class _StreamingEngine(_Engine):
    cancelled = False

    def tokenize(self, text, **kw):
        return [1, 2, 3]

    def apply_template(self, messages):
        return "prompt"

    def submit(self, tokens, params, on_event):
        on_event(_Broken())
        engine = self

        class Handle:
            def cancel(self):
                engine.cancelled = True
        return Handle()


def _app(api_key=None, engine=None):
    from starlette.testclient import TestClient

    from labkit.server.app import ServerState, create_app
    state = ServerState(EngineConfig("x.gguf"), alias="local", api_key=api_key)
    state.engine, state.n_vocab = engine or _Engine(), 100
    state.loaded.set()
    return TestClient(create_app(state), raise_server_exceptions=False)


def test_an_unexpected_exception_is_a_json_500_its_text_in_the_log_only(caplog):
    client = _app()
    with caplog.at_level(logging.ERROR, logger="labkit.server"):
        r = client.post("/tokenize", json={"content": "hello"})
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    err = r.json()["error"]
    assert (err["code"], err["type"]) == (500, "server_error")
    # the client is told it is the server's fault; what broke goes to the log only
    assert err["message"] == "internal server error (the server's log has the details)"
    assert any(rec.exc_info and "POST /tokenize" in rec.getMessage()
               and "the tokenizer broke" in str(rec.exc_info[1]) for rec in caplog.records)


def test_an_exception_mid_stream_ends_the_stream_with_a_json_error(caplog):
    engine = _StreamingEngine()
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    with caplog.at_level(logging.ERROR, logger="labkit.server"):
        r = _app(engine=engine).post("/v1/chat/completions", json=body)
    assert r.status_code == 200
    events = [ln[6:] for ln in r.text.splitlines() if ln.startswith("data: ")]
    err = json.loads(events[-1])["error"]   # the stream ends with its error, as llama-server's
    assert (err["code"], err["type"]) == (500, "server_error")
    assert "the event broke" not in err["message"]
    assert engine.cancelled
    assert any(rec.exc_info and "the event broke" in str(rec.exc_info[1])
               for rec in caplog.records)


def test_an_unknown_path_is_llama_servers_404():
    r = _app().get("/no/such/path")
    assert r.status_code == 404
    assert r.json() == {"error": {"code": 404, "message": "File Not Found",
                                  "type": "not_found_error"}}


def test_the_api_key_guards_every_path_but_health():
    client = _app(api_key="sesame")
    assert client.get("/health").status_code == 200
    assert client.get("/v1/health").status_code == 200
    for path in ("/models", "/v1/models", "/props", "/slots", "/metrics", "/no/such/path"):
        r = client.get(path)
        assert r.status_code == 401, path
        assert r.json()["error"]["type"] == "authentication_error"
    ok = client.get("/v1/models", headers={"Authorization": "Bearer sesame"})
    assert ok.status_code == 200
    assert client.get("/no/such/path", headers={"X-Api-Key": "sesame"}).status_code == 404


@pytest.mark.slow
def test_a_7mb_body_is_answered_while_a_stream_keeps_going():
    """Tokenizing a huge body runs off the event loop (how long others wait, before and after:
    benchmarks/event_loop_stall.py). Here: both requests get their whole answer."""
    with launch(ServerConfig(n_ctx=2048, n_slots=2, kv_unified=False)) as srv:
        chunks, first = [], threading.Event()

        def stream():
            body = {"messages": [{"role": "user", "content": "Write a story."}],
                    "max_tokens": 48, "ignore_eos": True, "temperature": 0, "stream": True}
            with httpx.stream("POST", srv.base_url + "/v1/chat/completions", json=body,
                              timeout=300) as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        chunks.append((time.perf_counter(), line[6:]))
                        first.set()
        streamer = threading.Thread(target=stream)
        streamer.start()
        assert first.wait(120)
        big = {"messages": [{"role": "user", "content": "word " * 1_400_000}], "max_tokens": 4}
        t0 = time.perf_counter()
        r = httpx.post(srv.base_url + "/v1/chat/completions", json=big, timeout=300)
        took = time.perf_counter() - t0
        streamer.join(300)
    gaps = [b[0] - a[0] for a, b in zip(chunks, chunks[1:])]
    print(f"\n7 MB body answered in {took:.1f} s; the stream's longest gap {max(gaps):.2f} s, "
          f"median {sorted(gaps)[len(gaps) // 2]:.2f} s")
    assert r.status_code == 400 and r.json()["error"]["type"] == "exceed_context_size_error"
    assert r.json()["error"]["n_prompt_tokens"] > 1_000_000
    assert chunks[-1][1] == "[DONE]"
    finals = [json.loads(c)["choices"][0]["finish_reason"] for _, c in chunks[:-1]
              if json.loads(c)["choices"][0]["finish_reason"]]
    assert finals == ["length"]


# ------------------------------------------------------------------ processes

@pytest.mark.slow
def test_a_server_started_from_a_short_lived_thread_outlives_the_thread():
    """The kernel's parent-death signal follows the thread that forked the child: the launcher
    forks from one thread that lives as long as the process."""
    box = {}
    worker = threading.Thread(target=lambda: box.update(srv=start(ServerConfig(n_ctx=1024))))
    worker.start()
    worker.join(300)
    srv = box["srv"]
    try:
        assert not worker.is_alive()
        time.sleep(1.0)   # the signal, were it sent, arrives at once
        assert srv.alive(), f"the server died with the thread that started it:\n{srv.log_tail()}"
        assert srv.get("/health").status_code == 200
    finally:
        srv.stop()


@pytest.mark.slow
def test_labkit_bench_interrupted_saves_the_finished_runs(tmp_path):
    """Quick mode runs two configs (1 and 2 slots); Ctrl-C arrives once the second server is
    starting, so the first run has finished."""
    env = {**os.environ, "LABKIT_QUICK": "1"}
    # A child inherits an ignored or blocked SIGINT across exec (and Python then installs no
    # Ctrl-C handler): whatever this test process was left with by earlier tests, the learner's
    # shell gives bench the default, so the child starts with it.
    def as_from_a_shell():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    bench = subprocess.Popen([sys.executable, "-m", "labkit", "bench", "--out", str(tmp_path),
                              "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, preexec_fn=as_from_a_shell)
    try:
        deadline = time.monotonic() + 900
        while len(list(tmp_path.glob("*/logs/*.log"))) < 2:
            assert bench.poll() is None, bench.communicate()
            assert time.monotonic() < deadline, "the first run never finished"
            time.sleep(0.2)
        second_log = max(tmp_path.glob("*/logs/*.log"), key=lambda p: p.stat().st_mtime)
        bench.send_signal(signal.SIGINT)
        t0 = time.perf_counter()
        out, err = bench.communicate(timeout=300)
        print(f"\nlabkit bench exited {time.perf_counter() - t0:.1f} s after Ctrl-C")
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode == 130, err
    assert "Traceback" not in err
    (folder,) = tmp_path.iterdir()
    assert f"saved the 1 finished run(s) in {folder}/" in err
    ws = pd.read_csv(folder / "worksheet.csv")
    assert list(ws["slots"]) == [1]
    assert len(pd.read_csv(folder / "requests.csv")) == 2
    assert json.loads((folder / "environment.json").read_text())["bench"]["interrupted"] is True
    port = int(second_log.stem.rsplit("-", 1)[1])
    with socket.socket() as s:   # the server of the interrupted run is stopped
        assert s.connect_ex(("127.0.0.1", port)) != 0
