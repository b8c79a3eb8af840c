"""The small faults of round three (issue 27): the API key kept out of logs and records, the
warning for a server others can reach with no key, the key compared in constant time, one
usage chunk per choice, ``truncated`` as llama-server sets it, and an unreadable
``LABKIT_LANG`` or ``LABKIT_QUICK`` in a notebook's kernel."""

from __future__ import annotations

import io
import json
import os
import signal
import time
from types import SimpleNamespace

import pytest

from labkit import settings
from labkit.engine import FinalEvent
from labkit.server import shapes

KEY = "sekrit-4242"


# ------------------------------------------------------------------ the key out of logs

def test_a_command_line_shows_the_api_key_masked():
    argv = ["python", "-m", "labkit.server", "-m", "m.gguf", "--api-key", KEY, "--port", "1"]
    assert settings.masked_argv(argv) == argv[:6] + ["***", "--port", "1"]
    assert settings.masked_argv(["x", f"--api-key={KEY}"]) == ["x", "--api-key=***"]
    assert settings.masked_argv(["x", "--port", "8080"]) == ["x", "--port", "8080"]


def test_the_launcher_logs_the_command_without_the_key_and_runs_it_with_the_key(
        monkeypatch, tmp_path):
    from labkit.server import launch
    started = []

    def popen(cmd, **kwargs):          # no process: the log's first line is written by now
        started.append(cmd)
        raise RuntimeError("not started")
    from labkit.engine import devices
    monkeypatch.setattr(devices, "resolve_to_load", lambda *a, **k: "/models/m.gguf")
    monkeypatch.setattr(launch._spawner, "popen", popen)
    with pytest.raises(RuntimeError, match="not started"):
        launch.start(launch.ServerConfig(api_key=KEY, log_dir=str(tmp_path)))
    (log,) = tmp_path.glob("*.log")
    first = log.read_text().splitlines()[0]
    assert KEY not in first and "--api-key ***" in first
    assert started[0][started[0].index("--api-key") + 1] == KEY   # the server gets the key


def test_a_bench_run_records_the_command_without_the_key():
    from labkit.bench.harness import target_of
    server = SimpleNamespace(base_url="http://127.0.0.1:1", pid=1, config=None, facts={},
                             command=["labkit.server", "--api-key", KEY], log_path="s.log",
                             model_path="m.gguf")
    target = target_of(server)
    assert target.command == ["labkit.server", "--api-key", "***"]
    assert KEY not in json.dumps(target.__dict__, default=str)   # runs.json is built from it


def test_a_bench_environment_records_the_configs_without_the_key(monkeypatch):
    from labkit.bench.runner import environment
    from labkit.server.launch import ServerConfig
    from labkit.tools import doctor
    monkeypatch.setattr(doctor, "collect", lambda **kw: {})   # no model read: the configs only
    cfgs = [ServerConfig(api_key=KEY), ServerConfig(extra_args=("--api-key", KEY)),
            ServerConfig()]
    (a, b, c) = environment(cfgs)["configs"]
    assert KEY not in json.dumps([a, b, c])                    # environment.json
    assert (a["api_key"], b["extra_args"], c["api_key"]) == ("***", ["--api-key", "***"], None)
    assert a["n_ctx"] == cfgs[0].n_ctx                         # the rest as it was


# ------------------------------------------------------------------ reachable with no key

@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.168.1.20", "fe80::1%eth0"])
def test_a_server_others_can_reach_with_no_key_warns(address):
    from labkit.server.__main__ import exposure_warning
    line = exposure_warning(address, 8080, None)
    assert line.startswith("security: no API key is set") and address in line
    assert "8080" in line and "--api-key" in line and "\n" not in line
    assert exposure_warning(address, 8080, KEY) is None


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"])
def test_a_loopback_server_does_not_warn(address):
    from labkit.server.__main__ import exposure_warning
    assert exposure_warning(address, 8080, None) is None


def test_the_warning_in_chinese(monkeypatch):
    from labkit.server.__main__ import exposure_warning
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    line = exposure_warning("0.0.0.0", 8080, None)
    assert line.startswith("安全：沒有設定 API 金鑰") and "--api-key" in line


@pytest.mark.slow
def test_serve_on_every_interface_with_no_key_logs_the_warning():
    from labkit.server.launch import ServerConfig, launch
    with launch(ServerConfig(n_ctx=512, n_slots=1, extra_args=("--host", "0.0.0.0"))) as srv:
        log = srv.log_text()
    warnings = [ln for ln in log.splitlines() if " W labkit.server: security:" in ln]
    assert len(warnings) == 1 and "0.0.0.0" in warnings[0], log.splitlines()[:3]


# ------------------------------------------------------------------ the key, compared

def _guarded(key: str):
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from labkit.server.app import RequireApiKey
    inner = Starlette(routes=[Route("/props", lambda request: PlainTextResponse("ok"))])
    return TestClient(RequireApiKey(inner, api_key=key))


@pytest.mark.parametrize("key", ["sesame", "clé-金鑰"])
def test_the_key_lets_in_the_right_one_only(key):
    client = _guarded(key)
    sent = key.encode()                # as a client sends a header: its UTF-8 bytes
    assert client.get("/props", headers={"Authorization": b"Bearer " + sent}).status_code == 200
    assert client.get("/props", headers={"X-Api-Key": sent}).status_code == 200
    same_length = bytes([sent[0] ^ 1]) + sent[1:]
    for wrong in (b"nope", same_length, sent + b"x", sent[:-1], b""):
        r = client.get("/props", headers={"Authorization": b"Bearer " + wrong})
        assert r.status_code == 401, wrong
        assert r.json()["error"]["type"] == "authentication_error"
    assert client.get("/props").status_code == 401


def test_the_key_is_compared_in_constant_time(monkeypatch):
    import hmac

    from labkit.server import app
    seen = []
    real = hmac.compare_digest

    def spy(a, b):
        seen.append((a, b))
        return real(a, b)
    monkeypatch.setattr(app.hmac, "compare_digest", spy)
    assert _guarded("sesame").get("/props", headers={"X-Api-Key": "nope"}).status_code == 401
    assert seen == [(b"nope", b"sesame")]


# ------------------------------------------------------------------ usage per choice

TIMINGS = [{"cache_n": 0, "prompt_n": 5, "prompt_ms": 1.0, "predicted_n": n, "predicted_ms": n}
           for n in (2, 3, 4)]


def _final(n: int, t: dict, **kw) -> FinalEvent:
    return FinalEvent("length", {"prompt_tokens": 5, "completion_tokens": n,
                                 "total_tokens": 5 + n}, t, text="x", **kw)


def test_a_streamed_answer_sends_a_usage_chunk_after_each_choice():
    """llama-server streams each task's final result as it comes: its finish chunk, then
    (with include_usage) a chunk of its own usage and timings; n=3 sends three."""
    head = {"id": "chatcmpl-x", "created": 1, "model": "local", "system_fingerprint": "labkit"}
    shape = shapes.ChatShape(head, include_usage=True)
    for index in (2, 0, 1):            # in the order the choices end
        n, t = index + 2, TIMINGS[index]
        finish, usage = shape.final(index, _final(n, t))
        assert finish["choices"] == [{"index": index, "delta": {}, "finish_reason": "length"}]
        assert usage == {**head, "object": "chat.completion.chunk", "choices": [],
                         "usage": {"prompt_tokens": 5, "completion_tokens": n,
                                   "total_tokens": 5 + n,
                                   "prompt_tokens_details": {"cached_tokens": 0}},
                         "timings": t}
        assert list(usage["usage"]) == ["completion_tokens", "prompt_tokens", "total_tokens",
                                        "prompt_tokens_details"]   # llama-server's key order


@pytest.fixture(scope="module")
def tiny(model_path):
    """The HTTP app on the embedded model, in process: one unified pool of 512 cells that
    any of its three slots may fill (``n`` may be at most the slots)."""
    from starlette.testclient import TestClient

    from labkit.engine import EngineConfig
    from labkit.server.app import create_app
    from labkit.server.state import ServerState
    state = ServerState(EngineConfig(model_path, n_ctx=512, n_slots=3, kv_unified=True),
                        alias="local")
    with TestClient(create_app(state, load_in_background=False)) as client:
        yield client, state.engine


@pytest.mark.slow
def test_a_streamed_n3_answer_sends_three_usage_chunks(tiny):
    client, _ = tiny
    body = {"messages": [{"role": "user", "content": "Say hi."}], "n": 3, "max_tokens": 3,
            "temperature": 0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    text = client.post("/v1/chat/completions", json=body).text
    events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    usage = [i for i, c in enumerate(chunks) if "usage" in c]
    assert len(usage) == 3
    for i in usage:      # each right after its choice's finish chunk, with that choice's count
        assert chunks[i]["choices"] == [] and "timings" in chunks[i]
        assert chunks[i - 1]["choices"][0]["finish_reason"] == "length"
        assert chunks[i]["usage"]["completion_tokens"] == 3
    assert sorted(chunks[i - 1]["choices"][0]["index"] for i in usage) == [0, 1, 2]


# ------------------------------------------------------------------ truncated

def test_completion_says_truncated_when_the_slot_filled():
    shape = shapes.CompletionShape("local", ["p"], [5], [{}])
    assert shape.answer([_final(2, TIMINGS[0], truncated=True)])["truncated"] is True
    assert shape.answer([_final(2, TIMINGS[0])])["truncated"] is False


@pytest.mark.slow
def test_an_answer_that_fills_its_slot_is_truncated(tiny):
    client, engine = tiny
    prompt = engine.tokenize("The quick brown fox jumps over the lazy dog. " * 60)[:490]
    d = client.post("/completion", json={"prompt": prompt, "ignore_eos": True,
                                         "temperature": 0}).json()
    assert (d["stop_type"], d["truncated"]) == ("limit", True)
    assert d["tokens_evaluated"] + d["tokens_predicted"] == 512
    short = client.post("/completion", json={"prompt": "Hi", "n_predict": 3,
                                             "temperature": 0}).json()
    assert (short["stop_type"], short["truncated"]) == ("limit", False)


# ------------------------------------------------------------------ unreadable settings in a kernel

def _banner_in(monkeypatch):
    from labkit import notebook as nb
    from labkit.lang.i18n import pick
    monkeypatch.setattr(nb, "banner_text", lambda: pick("the banner", "橫幅"))
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    nb.banner()
    return out.getvalue(), err.getvalue()


def test_the_banner_names_an_unknown_language_and_goes_on_in_english(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "fr")
    out, err = _banner_in(monkeypatch)
    assert out == "the banner\n"
    (line,) = err.splitlines()
    assert "LABKIT_LANG='fr'" in line and "en or zh-TW" in line and "going on in en" in line
    assert "LABKIT_LANG" not in os.environ       # the default, for later cells and servers


def test_the_banner_names_a_bad_quick_value_in_chinese_and_goes_on_not_quick(monkeypatch):
    from labkit.machine.runenv import quick
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    monkeypatch.setenv("LABKIT_QUICK", "maybe")
    out, err = _banner_in(monkeypatch)
    assert out == "橫幅\n"
    (line,) = err.splitlines()
    assert "LABKIT_QUICK='maybe' 不是開關的值" in line and "快速模式關閉" in line
    assert "is not" not in line and quick() is False


def test_check_names_both_bad_settings_and_still_gives_its_verdict(monkeypatch, capsys):
    from labkit.exercises import check
    monkeypatch.setenv("LABKIT_LANG", "klingon")
    monkeypatch.setenv("LABKIT_QUICK", "perhaps")
    check("3.1", ...)
    captured = capsys.readouterr()
    lang_line, quick_line = captured.err.splitlines()
    assert "LABKIT_LANG='klingon'" in lang_line and "LABKIT_QUICK='perhaps'" in quick_line
    assert "going on with quick mode off" in quick_line   # the language is English by then
    assert "3.1" in captured.out and "Traceback" not in captured.err


@pytest.mark.parametrize("variable,value", [("LABKIT_LANG", "fr"), ("LABKIT_QUICK", "maybe")])
def test_the_server_run_directly_stops_on_an_unreadable_setting(monkeypatch, capsys, variable,
                                                                 value):
    from labkit.server.__main__ import main
    monkeypatch.setenv(variable, value)
    assert main(["--host", "0.0.0.0"]) == 2      # before its warning, or anything, could raise
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{variable}={value!r}" in line


def test_check_says_nothing_more_when_the_settings_read(monkeypatch, capsys):
    from labkit.exercises import check
    monkeypatch.setenv("LABKIT_LANG", "en")
    monkeypatch.setenv("LABKIT_QUICK", "1")
    check("3.1", ...)
    assert capsys.readouterr().err == ""


def test_sigusr1_writes_a_tracemalloc_snapshot_only_while_tracing(tmp_path):
    """benchmarks/soak.py --tracemalloc asks the server for snapshots with SIGUSR1, answered by
    the hook it puts on the server's PYTHONPATH; an untraced process must not take the signal
    over (its default action would stop a traced-less run)."""
    import importlib.util
    import tracemalloc
    from pathlib import Path

    hook = Path(__file__).resolve().parents[1] / "benchmarks" / "tracemalloc_hook" / "sitecustomize.py"
    spec = importlib.util.spec_from_file_location("soak_tracemalloc_hook", hook)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)           # not tracing, no folder named: it does nothing
    snapshots_on_sigusr1 = module.snapshots_on_sigusr1
    before = signal.getsignal(signal.SIGUSR1)
    try:
        assert not snapshots_on_sigusr1(str(tmp_path))        # not tracing: off
        assert signal.getsignal(signal.SIGUSR1) == before
        tracemalloc.start(2)
        assert not snapshots_on_sigusr1(None)                  # tracing, no folder: off
        assert snapshots_on_sigusr1(str(tmp_path / "snaps"))
        os.kill(os.getpid(), signal.SIGUSR1)
        path = tmp_path / "snaps" / "snapshot-000.pickle"
        for _ in range(100):
            if path.exists():
                break
            time.sleep(0.05)
        assert tracemalloc.Snapshot.load(str(path)).traces    # a whole snapshot, renamed in
        assert not list((tmp_path / "snaps").glob("*.part"))
    finally:
        tracemalloc.stop()
        signal.signal(signal.SIGUSR1, before)
