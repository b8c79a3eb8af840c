"""labkit.models.kv's llama-server sizing (-c 0, --kv-unified-per-slot) and the lessons run on llama.cpp's own server
(labkit.lessons.llama_server). The pool sizes below were read from llama-server's log (the xllamacpp wheel,
2026-11-30): "sizing KV pool to n_parallel * kv_unified_per_slot = 2 * 1024 = 2048",
"capping per-slot context (3072) to --kv-unified-per-slot (1000)" and so on."""

from pathlib import Path

import pytest

from labkit.models import kv
from labkit.lessons import llama_server
from labkit.server.launch import ServerConfig

# (-c, -np, unified, per_slot, n_ctx_train) -> (pool, n_ctx_slot), as llama-server logged them.
MEASURED = [
    ((0, 2, True, 1024, 8192), (2048, 1024)),
    ((4096, 2, True, 1024, 8192), (4096, 1024)),
    ((2048, 2, True, 4096, 8192), (2048, 2048)),       # the cap above the pool: no effect
    ((0, 2, False, 1024, 8192), (2048, 1024)),
    ((4096, 2, False, 1024, 8192), (4096, 1024)),
    ((0, 3, True, 1000, 8192), (3072, 1000)),          # 3 x 1000 = 3000, padded to 3072
    ((0, 3, False, 1000, 8192), (3072, 1000)),
    ((1000, 3, False, 300, 8192), (1536, 300)),
    ((0, 2, False, None, 8192), (8192, 4096)),         # -c 0 alone: the training context
    ((0, 2, True, None, 8192), (8192, 8192)),
    ((0, 4, True, 1024, 8192), (4096, 1024)),          # -np auto -c 0 --kv-unified-per-slot 1024
]


@pytest.mark.parametrize("flags,want", MEASURED)
def test_server_slot_context_matches_what_llama_server_logged(flags, want):
    c, n, unified, per_slot, train = flags
    sc = kv.server_slot_context(c, n, unified, n_ctx_train=train, per_slot=per_slot)
    assert (sc.n_ctx, sc.n_ctx_slot) == want


def test_server_pool_keeps_a_written_c():
    assert kv.server_pool(4096, 4, per_slot=1536) == 4096
    assert kv.server_pool(0, 4, per_slot=1536) == 6144
    assert kv.server_pool(0, 4, n_ctx_train=8192) == 8192
    with pytest.raises(ValueError, match="n_ctx_train"):
        kv.server_pool(0, 4)
    with pytest.raises(ValueError):
        kv.server_pool(-1, 4)


def test_predict_follows_np_auto():
    p = llama_server.predict(ServerConfig(n_ctx=4096, n_slots="auto", kv_unified=False), 8192)
    assert p == {"n_slots": 4, "kv_unified": True, "pool": 4096, "n_ctx_slot": 4096}


def test_flags_and_pool_lines():
    cfg = ServerConfig(n_ctx=0, n_slots=2, kv_unified=True, kv_unified_per_slot=1024)
    assert llama_server.flags(cfg) == "-c 0 -np 2 --kv-unified --kv-unified-per-slot 1024"
    log = ("0.00.001.874 I srv          init: --kv-unified-per-slot: sizing KV pool to n_parallel"
           " * kv_unified_per_slot = 2 * 1024 = 2048\n"
           "0.00.002.592 W srv          init: security: no API key is set\n"
           "2026-11-30 17:45:36,327 I labkit.engine: srv    load_model: initializing, n_slots = 2,"
           " n_ctx_slot = 1024, kv_unified = 'true'\n")
    assert llama_server.pool_lines(log) == [
        "srv          init: --kv-unified-per-slot: sizing KV pool to n_parallel * "
        "kv_unified_per_slot = 2 * 1024 = 2048",
        "srv    load_model: initializing, n_slots = 2, n_ctx_slot = 1024, kv_unified = 'true'"]


def _platform(monkeypatch, system, machine):
    monkeypatch.setattr(llama_server.sys, "platform", system)
    monkeypatch.setattr(llama_server.platform, "machine", lambda: machine)


def test_skip_note_on_a_platform_with_a_wheel_names_the_wheel_and_pip(monkeypatch):
    _platform(monkeypatch, "linux", "x86_64")
    note = llama_server.skip_note("x")
    assert note.startswith("skipped: x. llama.cpp's llama-server is missing: the xllamacpp wheel")
    assert "pip install -e ." in note and "\n" not in note


def test_skip_note_on_a_platform_without_a_wheel_names_it_and_the_build_script(monkeypatch):
    _platform(monkeypatch, "win32", "ARM64")
    note = llama_server.skip_note("x")
    assert "PyPI has no xllamacpp wheel for win32 ARM64" in note and "\n" not in note
    assert f"bash {llama_server.BUILD_SCRIPT}" in note and "PATH" in note
    assert (Path(__file__).resolve().parents[1] / llama_server.BUILD_SCRIPT).is_file()


def test_the_dependency_marker_names_the_platforms_with_a_wheel():
    """pyproject.toml installs xllamacpp exactly where WHEEL_PLATFORMS says PyPI has a wheel."""
    tomllib = pytest.importorskip("tomllib")      # Python 3.11+
    from packaging.requirements import Requirement
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    req = next(Requirement(d) for d in project["project"]["dependencies"]
               if d.startswith("xllamacpp"))
    assert "xllamacpp" not in " ".join(project["project"]["optional-dependencies"]["ref"])
    others = [("linux", "ppc64le"), ("linux", "s390x"), ("linux", "armv7l"), ("win32", "ARM64"),
              ("win32", "x86"), ("freebsd14", "amd64")]
    for pair in llama_server.WHEEL_PLATFORMS + tuple(others):
        env = {"sys_platform": pair[0], "platform_machine": pair[1]}
        assert req.marker.evaluate(env) == (pair in llama_server.WHEEL_PLATFORMS), pair


def test_a_llama_server_binary_on_path_stands_in_for_the_wheel(monkeypatch):
    monkeypatch.setattr(llama_server.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(llama_server.shutil, "which", lambda name: "/opt/llama/bin/llama-server")
    assert llama_server.reference_kind() == "llama-server" and llama_server.reference_installed()
    assert llama_server.describe() == "/opt/llama/bin/llama-server"
    assert llama_server._resolve(llama_server.REFERENCE) == "llama-server"
    monkeypatch.setattr(llama_server.shutil, "which", lambda name: None)
    assert llama_server.reference_kind() is None and not llama_server.reference_installed()
    assert llama_server.llama_server_burst() is None


@pytest.mark.slow
def test_fill_pool_on_labkit_fails_every_request_and_reserve_makes_them_wait():
    text = "Summarise this order: " + "soup, bread, tea. " * 12
    tight = ServerConfig(n_ctx=256, n_slots=2, kv_unified=True)
    run = llama_server.fill_pool(tight, text, 2, 40)
    assert (run.requests["status"] == 500).all()
    assert run.outcome() == "2 x HTTP 500 (Context size has been exceeded.)"
    waited = llama_server.fill_pool(tight.with_(reserve=True), text, 2, 40)
    assert (waited.requests["status"] == 200).all()
    assert (waited.requests["completion_tokens"] == 40).all()
    assert waited.steps["n_busy"].max() == 1


@pytest.mark.slow
@pytest.mark.skipif(not llama_server.reference_installed(), reason="llama-server (xllamacpp) not installed")
def test_compare_holds_labkit_np_auto_rule_against_llama_server():
    df = llama_server.compare([ServerConfig(n_ctx=2048, n_slots="auto", kv_unified=False)])
    assert list(df["server"]) == ["labkit server", "llama-server (xllamacpp)"]
    assert df["match"].all(), df.T


# ---------------------------------------------------------------- a request that finds every slot busy

METRICS = """# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 3
"""


def test_metric_reads_a_gauge_and_not_its_help_line():
    assert llama_server.metric(METRICS, "requests_deferred") == 3.0
    assert llama_server.metric(METRICS, "requests_processing") == 1.0
    assert llama_server.metric(METRICS, "n_decode_total") is None


@pytest.mark.slow
def test_llama_server_defers_a_burst_and_refuses_none():
    if not llama_server.reference_installed():
        pytest.skip("no llama-server here (neither the xllamacpp wheel nor a binary on PATH)")
    gauges, answers = llama_server.llama_server_burst(n=4, max_tokens=4, n_slots=1)
    assert gauges["requests_deferred"].max() >= 1
    assert (answers["status"] == 200).all() and len(answers) == 4


@pytest.mark.slow
def test_prompt_estimate_is_the_count_the_server_uses_and_a_full_slot_is_refused():
    from labkit.server.launch import ServerConfig
    short = [{"role": "user", "content": "Name three soups."}]
    full = [{"role": "user", "content": "soup " * 400}]          # more than a 256-cell slot holds
    kinds = ("labkit", "xllamacpp") if llama_server.reference_installed() else ("labkit",)
    got = llama_server.prompt_estimate(ServerConfig(n_ctx=256, n_slots=1, n_threads=1),
                                       {"short": short, "full": full}, kinds=kinds)
    ok = got[got["prompt"] == "short"]
    assert (ok["status"] == 200).all() and (ok["estimated tokens"] == ok["prompt_tokens"]).all()
    assert 0 < ok["estimated tokens"].iloc[0] < 40 and (ok["n_ctx_slot"] == 256).all()
    # the case that must fail: a prompt past the slot is refused, and its room is not positive
    big = got[got["prompt"] == "full"]
    assert (big["status"] == 400).all() and (big["room for the answer"] <= 0).all()
    assert big["prompt_tokens"].isna().all()
    assert got.groupby("prompt")["estimated tokens"].nunique().eq(1).all()


def test_seed_server_carries_the_seeds_flags_and_typed_writes_them_as_typed(monkeypatch):
    from types import SimpleNamespace
    monkeypatch.setattr(llama_server, "reference_kind", lambda: "xllamacpp")
    mine = ServerConfig(n_ctx=2048, n_slots=1, kv_unified=False)
    seed = llama_server.seed_server(mine)
    text = llama_server.typed(SimpleNamespace(config=seed, model_path="/m/x.gguf", port=8080))
    assert text.startswith("llama-server -m /m/x.gguf -c 2048 -np 1 --no-kv-unified -b 512 -ub 128 ")
    for flag in ("-sm none", "-mg 0", "--cont-batching", "-a local", "--no-context-shift",
                 "--fit off", "-ctk f16", "-ctv f16", "--metrics", "--slots"):
        assert f" {flag}" in text
    assert "labkit.server" not in text
    # its failing case: labkit's own config has neither the seed's batch sizes nor its alias
    plain = llama_server.typed(SimpleNamespace(config=mine, model_path="/m/x.gguf", port=8080))
    assert "-b 512" not in plain and "-a local" not in plain and "-sm none" not in plain
    monkeypatch.setattr(llama_server, "reference_kind", lambda: None)
    assert llama_server.seed_server(mine) is None
