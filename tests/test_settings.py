"""The settings table: one declaration per knob, and every form derived from it."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from labkit import settings
from labkit.engine.config import EngineConfig
from labkit.server.launch import ServerConfig
from labkit.server.args import build_parser, parse_args
from labkit.settings import ENGINE, PROCESS, SERVER, SettingError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_process(monkeypatch):
    """Fail the test if anything tries to start a process."""
    def refuse(*a, **k):
        raise AssertionError("a process was started")
    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.mark.parametrize("changes, setting, allowed", [
    ({"type_k": "q9"}, "type_k", "q8_0"),
    ({"n_slots": 0}, "n_slots", "'auto'"),
    ({"n_ctx": -1}, "n_ctx", ">= 0"),
    ({"flash_attn": "maybe"}, "flash_attn", "on, off or auto"),
    ({"n_gpu_layers": "most"}, "n_gpu_layers", "'all'"),
    ({"n_batch": 0}, "n_batch", ">= 1"),
    ({"max_queue": -1}, "max_queue", ">= 0"),
    ({"context_shift": True}, "context_shift", "never shifts context"),
    ({"kv_unified_per_slot": "big"}, "kv_unified_per_slot", ">= 1"),
])
def test_a_wrong_value_fails_at_construction_naming_setting_value_and_allowed(
        no_process, changes, setting, allowed):
    for make in (lambda: ServerConfig(**changes), lambda: EngineConfig("m.gguf", **changes)):
        try:
            make()
        except SettingError as exc:
            msg = str(exc)
            assert msg.startswith(f"{setting}={list(changes.values())[0]!r}"), msg
            assert allowed in msg, msg
        except TypeError:   # a server-only setting is not a field of EngineConfig
            assert settings.get(setting).scope != ENGINE
        else:
            pytest.fail(f"{changes} was accepted")


def test_the_dataclasses_hold_exactly_their_scopes():
    engine = {f for f in EngineConfig.__dataclass_fields__} - {"model_path"}
    server = set(ServerConfig.__dataclass_fields__) - {"kind", "binary", "extra_args", "log_dir",
                                                       "startup_timeout_s"}
    assert engine == {s.name for s in settings.table(ENGINE)}
    assert server == {s.name for s in settings.table(ENGINE, SERVER)}


def test_defaults_are_one_and_the_same_everywhere():
    args = build_parser().parse_args([])
    e, s = EngineConfig("m.gguf"), ServerConfig()
    for row in settings.TABLE:
        assert getattr(args, row.name) == row.default, row.name
        if row.scope == ENGINE:
            assert getattr(e, row.name) == row.default, row.name
        if row.scope in (ENGINE, SERVER):
            assert getattr(s, row.name) == row.default, row.name
    assert e.n_slots == "auto" and (e.slots, e.unified) == (settings.AUTO_SLOTS, True)


def test_values_are_normalised_once():
    assert ServerConfig(n_gpu_layers="all").n_gpu_layers == -1
    assert EngineConfig("m", n_gpu_layers="auto").n_gpu_layers == -1
    assert EngineConfig("m", flash_attn=True).flash_attn == "on"
    assert EngineConfig("m", n_slots="4").n_slots == 4
    assert parse_args(["-ngl", "all", "-np", "auto", "-c", "16384"]).n_gpu_layers == -1


def test_the_np_auto_rule():
    assert settings.resolve_slots("auto", None) == (4, True)
    assert settings.resolve_slots("auto", False) == (4, True)   # as llama-server does
    assert settings.resolve_slots(4, None) == (4, False)
    assert settings.resolve_slots(2, True) == (2, True)
    assert ServerConfig(n_slots=2, kv_unified=True).label.endswith("np2-unified")


def test_cache_types_are_the_kv_modules_types():
    from labkit.models import kv
    assert settings.CACHE_TYPES == tuple(kv.BYTES_PER_VALUE)


def test_the_command_line_refuses_bad_values_in_one_line(capsys):
    for argv in (["-ctk", "q9"], ["-np", "0"], ["--port", "70000"], ["--context-shift"]):
        with pytest.raises(SystemExit) as exc:
            parse_args(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "allowed" in err and "Traceback" not in err, err


def test_llama_server_gets_no_labkit_only_setting():
    a = ServerConfig(kind="xllamacpp").args("/m.gguf", 1234)
    assert "--reserve" not in a and "--max-queue" not in a
    with pytest.raises(SettingError, match="reserve=True .*labkit's own"):
        ServerConfig(kind="xllamacpp", reserve=True)
    with pytest.raises(SettingError, match="max_queue=2"):
        ServerConfig(kind="llama-server", max_queue=2)
    b = ServerConfig(reserve=True, max_queue=3).args("/m.gguf", 1234)
    assert "--reserve" in b and b[b.index("--max-queue") + 1] == "3"


def test_the_seed_tutorials_command_line_parses():
    line = ("-m /absolute/path/model.gguf --alias local --host 127.0.0.1 --port 8080 "
            "--split-mode none --main-gpu 0 -ngl all --fit off -c 16384 -np 1 --no-kv-unified "
            "--cont-batching --no-context-shift -b 512 -ub 128 -ctk f16 -ctv f16 --metrics "
            "--slots --log-file split-p1.log")
    a = parse_args(line.split())
    assert (a.n_ctx, a.n_slots, a.kv_unified, a.n_batch, a.n_ubatch) == (16384, 1, False, 512, 128)
    assert (a.split_mode, a.n_gpu_layers, a.alias, a.metrics) == ("none", -1, "local", True)


_values = {
    "n_ctx": st.integers(0, 1 << 20),
    "n_slots": st.one_of(st.just("auto"), st.integers(1, 64)),
    "kv_unified": st.sampled_from([None, True, False]),
    "kv_unified_per_slot": st.one_of(st.none(), st.integers(1, 1 << 16)),
    "n_batch": st.integers(1, 8192),
    "n_ubatch": st.integers(1, 8192),
    "type_k": st.sampled_from(settings.CACHE_TYPES),
    "type_v": st.sampled_from(settings.CACHE_TYPES),
    "flash_attn": st.sampled_from(settings.FLASH_ATTN_MODES),
    "n_gpu_layers": st.integers(-1, 200),
    "op_offload": st.booleans(),
    "split_mode": st.sampled_from(settings.SPLIT_MODES),
    "main_gpu": st.integers(0, 7),
    "n_threads": st.one_of(st.none(), st.integers(1, 256)),
    "cont_batching": st.booleans(),
    "reserve": st.booleans(),
    "max_queue": st.one_of(st.none(), st.integers(0, 100)),
    "alias": st.one_of(st.none(), st.sampled_from(["local", "my-model"])),
    "api_key": st.one_of(st.none(), st.just("sesame")),
    "slot_prompt_similarity": st.sampled_from([0.0, 0.1, 0.5, 0.95, 1.0]),
}


def test_every_setting_of_the_configs_has_a_generator():
    assert set(_values) | {"model", "context_shift", "fit", "cache_ram"} == \
        {s.name for s in settings.table(ENGINE, SERVER)}


@hsettings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries(_values))
def test_a_config_survives_its_own_command_line(values):
    """ServerConfig -> argv -> labkit's parser gives back every value: the launcher and the
    server read the same table."""
    cfg = ServerConfig(**values)
    parsed = parse_args(cfg.args("/m.gguf", 4321))
    for name, value in values.items():
        assert getattr(parsed, name) == value, name
    assert (parsed.port, parsed.metrics, parsed.model) == (4321, True, "/m.gguf")


def test_labkit_refuses_llama_servers_prompt_cache_in_ram():
    """--cache-ram is llama-server's own: passed to it, refused by labkit's server (config and
    command line alike), never dropped in silence."""
    a = ServerConfig(kind="xllamacpp", cache_ram=0, slot_prompt_similarity=0.0).args("/m", 1)
    assert a[a.index("-cram") + 1] == "0" and a[a.index("-sps") + 1] == "0.0"
    assert "-cram" not in ServerConfig(kind="xllamacpp").args("/m", 1)
    with pytest.raises(SettingError, match="cache_ram=0 .*llama-server's own"):
        ServerConfig(cache_ram=0)
    with pytest.raises(SystemExit):
        parse_args(["--cache-ram", "8192"])
    assert parse_args(["--cache-ram", "0"], "ref", llama_server=True).cache_ram == 0
    with pytest.raises(SettingError, match="slot_prompt_similarity"):
        ServerConfig(kind="xllamacpp", slot_prompt_similarity=1.5)
    assert ServerConfig(slot_prompt_similarity="0.5").slot_prompt_similarity == 0.5


def test_differences_from_llama_server_say_why():
    rows = settings.differences()
    assert {r["setting"] for r in rows} >= {"n_ctx", "n_gpu_layers", "fit"}
    assert all(len(r["why"]) > 20 for r in rows)
    assert all(not s.why_different for s in settings.TABLE
               if s.llama_server_default is settings.SAME)


def test_the_reference_server_applies_every_llama_server_setting():
    from labkit.server import reference
    needed = {s.name for s in settings.TABLE if not s.labkit_only} - set(reference.JOINT)
    assert needed == set(reference.APPLY)


@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None,
                    reason="xllamacpp (the 'ref' extra) is not installed")
def test_shared_defaults_equal_llama_servers_own():
    """For each setting the table says labkit shares with llama-server, the default is the
    one llama-server's parameter struct (xllamacpp's CommonParams) starts with."""
    import xllamacpp as xlc
    p = xlc.CommonParams()
    fresh = xlc.CommonParams()
    args = build_parser().parse_args([])
    from labkit.server import reference
    for s in settings.TABLE:
        if s.labkit_only or s.llama_server_default is not settings.SAME or s.name in (
                "model", "alias", "api_key", "log_file", "host", "port", "n_slots", "kv_unified"):
            continue
        reference.APPLY[s.name](p, getattr(args, s.name), xlc)
    for attr in ("n_batch", "n_ubatch", "cache_type_k", "cache_type_v", "flash_attn_type",
                 "cont_batching", "ctx_shift", "endpoint_metrics", "endpoint_slots",
                 "main_gpu", "split_mode", "kv_unified_per_slot" if hasattr(p, "kv_unified_per_slot") else "n_batch"):
        assert str(getattr(p, attr)) == str(getattr(fresh, attr)), attr
    assert fresh.n_parallel in (-1, settings.AUTO_SLOTS) or fresh.n_parallel == 1


def test_the_settings_module_imports_nothing_heavy():
    """labkit.settings and what it imports from labkit use the standard library only."""
    heavy = {"llama_cpp", "numpy", "pandas", "matplotlib", "xllamacpp", "httpx", "starlette"}
    todo, seen = ["labkit.settings"], set()
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        path = ROOT / (mod.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.col_offset == 0:
                name = node.module or ""
                if node.level:
                    name = "labkit." + name if name else "labkit"
                roots = [name]
            elif isinstance(node, ast.Import) and node.col_offset == 0:
                roots = [a.name for a in node.names]
            else:
                continue
            for r in roots:
                assert r.split(".")[0] not in heavy, f"{mod} imports {r}"
                if r.startswith("labkit.") and (ROOT / (r.replace(".", "/") + ".py")).exists():
                    todo.append(r)
    assert "labkit.models.kv" in seen


def test_docs_settings_is_generated_from_the_table():
    doc = ROOT / "docs" / "SETTINGS.md"
    assert doc.read_text() == settings.markdown(), \
        "regenerate: python -m labkit.settings > docs/SETTINGS.md"


def test_the_engines_llama_cpp_ids_cover_the_tables_choices():
    from labkit.engine import native
    assert set(native.GGML_CACHE_TYPES) == set(settings.CACHE_TYPES)
    assert set(native.FLASH_ATTN) == set(settings.FLASH_ATTN_MODES)
    assert set(native.SPLIT_MODES) == set(settings.SPLIT_MODES)


def test_both_servers_keep_a_cpu_run_on_the_cpu_unless_op_offload_is_asked_for():
    """llama.cpp sends every batch of 32 tokens or more to a GPU device even at -ngl 0 (ggml's
    op offload, on by default in llama-server): labkit's default is off, and the launcher says
    so to llama-server too, so both measure the same place."""
    for kind in ("labkit", "llama-server", "xllamacpp"):
        argv = ServerConfig(kind=kind, binary="/bin/llama-server").args("/m.gguf", 1234)
        assert "--no-op-offload" in argv and "--op-offload" not in argv, (kind, argv)
    assert "--op-offload" in ServerConfig(op_offload=True).args("/m.gguf", 1234)
    assert parse_args(["--op-offload"]).op_offload is True
    assert parse_args([]).op_offload is False
    (row,) = [d for d in settings.differences() if d["setting"] == "op_offload"]
    assert row["labkit"] is False and row["llama-server"] is True and "-ngl 0" in row["why"]
