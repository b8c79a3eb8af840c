import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from labkit.server.launch import (ServerConfig, ServerFailedToStart, launch, parse_startup_log,
                          stop_all)



def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie still answers kill(0); ask ps for its state.
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                               text=True).stdout.strip()
        if not state or state.startswith("Z"):
            return True
        time.sleep(0.1)
    return False


def test_parse_startup_log_reads_llama_server_lines():
    log = textwrap.dedent("""\
        llama_context: n_ctx         = 16384
        llama_context: n_ctx_seq     = 4096
        srv    load_model: initializing, n_slots = 4, n_ctx_slot = 4096, kv_unified = 'false'
        """)
    assert parse_startup_log(log) == {"n_ctx": 16384, "n_ctx_seq": 4096, "n_slots": 4,
                                      "n_ctx_slot": 4096, "kv_unified": False}
    assert parse_startup_log("nothing here") == {}


def test_flags_follow_llama_server_names():
    cfg = ServerConfig(n_ctx=16384, n_slots=4, kv_unified=False, n_batch=512, n_ubatch=128,
                       cont_batching=False, kv_unified_per_slot=4096)
    a = cfg.args("/m.gguf", 8080)
    for flag in ["-c", "16384", "-np", "4", "--no-kv-unified", "-b", "512", "-ub", "128",
                 "--no-cont-batching", "--kv-unified-per-slot", "--metrics", "--slots"]:
        assert flag in a
    with pytest.raises(ValueError, match="unknown server kind"):
        ServerConfig(kind="vllm")


@pytest.mark.slow
def test_bad_model_fails_fast_with_the_log_tail(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)
    with pytest.raises(ServerFailedToStart) as err:
        with launch(ServerConfig(kind="llama_cpp.server", model=str(bogus), startup_timeout_s=60)):
            pass
    assert "exited with code" in str(err.value)
    assert str(bogus) in str(err.value)  # the log tail shows the command line


def test_missing_llama_server_binary_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(FileNotFoundError, match="llama-server"):
        with launch(ServerConfig(kind="llama-server")):
            pass


@pytest.mark.slow
def test_serial_baseline_starts_answers_and_stops():
    with launch(ServerConfig(kind="llama_cpp.server", n_ctx=1024, alias="local")) as srv:
        pid = srv.pid
        assert srv.get("/v1/models").json()["data"][0]["id"] == "local"
        assert srv.log_path.exists()
    assert _gone(pid)


@pytest.mark.slow
def test_reference_llama_server_reports_per_slot_context():
    pytest.importorskip("xllamacpp")
    with launch(ServerConfig(kind="xllamacpp", n_ctx=16384, n_slots=4, kv_unified=False)) as srv:
        assert srv.facts == {"n_slots": 4, "n_ctx_slot": 4096, "kv_unified": False}
        props = srv.props()
        assert props["total_slots"] == 4
        assert props["default_generation_settings"]["n_ctx"] == 4096
        pid = srv.pid
    assert _gone(pid)


@pytest.mark.slow
def test_server_is_stopped_when_the_block_raises():
    with pytest.raises(RuntimeError, match="boom"):
        with launch(ServerConfig(kind="llama_cpp.server", n_ctx=1024)) as srv:
            pid = srv.pid
            raise RuntimeError("boom")
    assert _gone(pid)


# The parent starts the server from its main thread, or from a worker thread that then exits:
# either way the server must die with the parent process (and only then).
STARTERS = {
    "main thread": "srv = start(ServerConfig(kind='llama_cpp.server', n_ctx=1024))",
    "exited worker thread": (
        "box = {}\n"
        "t = threading.Thread(target=lambda: box.update(srv=start(ServerConfig(kind='llama_cpp.server', n_ctx=1024))))\n"
        "t.start(); t.join()\n"
        "srv = box['srv']"),
}


@pytest.mark.slow
@pytest.mark.parametrize("started_from", STARTERS)
def test_no_orphan_when_the_parent_is_killed(tmp_path, started_from):
    """SIGKILL skips atexit; the server still stops, because it watches the parent process."""
    pidfile = tmp_path / "pid"
    script = "import threading, time\nfrom labkit.server.launch import ServerConfig, start\n" + \
        STARTERS[started_from] + f"\nopen({str(pidfile)!r}, 'w').write(str(srv.pid))\n" + \
        "time.sleep(600)\n"
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline, "server never started"
            assert parent.poll() is None, "parent exited early"
            time.sleep(0.2)
        child = int(pidfile.read_text())
        assert not _gone(child, within_s=1.0), "the server died before its parent"
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert _gone(child, within_s=20), "the server outlived the process that started it"
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.slow
def test_stop_all_stops_every_live_server():
    from labkit.server.launch import start
    srv = start(ServerConfig(kind="llama_cpp.server", n_ctx=1024))
    stop_all()
    assert _gone(srv.pid)


def test_startup_facts_wait_for_a_slots_line_written_late():
    # llama-server logs from its own thread: the slots line can land after /health is ok.
    from types import SimpleNamespace

    from labkit.server.launch import startup_facts
    line = "srv    load_model: initializing, n_slots = 2, n_ctx_slot = 1024, kv_unified = 'false'\n"
    reads = iter(["llama_context: n_ctx = 2048\n"] * 3 + ["llama_context: n_ctx = 2048\n" + line] * 9)
    server = SimpleNamespace(config=SimpleNamespace(kind="llama-server"), log_text=lambda: next(reads))
    assert startup_facts(server) == {"n_ctx": 2048, "n_slots": 2, "n_ctx_slot": 1024,
                                     "kv_unified": False}
    never = SimpleNamespace(config=SimpleNamespace(kind="llama-server"), log_text=lambda: "")
    assert startup_facts(never, wait_s=0.1) == {}
    quiet = SimpleNamespace(config=SimpleNamespace(kind="llama_cpp.server"), log_text=lambda: "")
    assert startup_facts(quiet) == {}          # writes no slots line: no wait
