"""Synthetic models: names, the block writer, the file's header, and llama.cpp loading it.

Fast tests write only tiny files (a four-layer toy shape) into a temporary cache. The slow
ones write the catalogue's real shapes into the normal cache (~/.cache/labkit/synthetic, or
$LABKIT_CACHE), where later runs find them, and load them with llama.cpp on the CPU.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from labkit.models import catalog, synthetic
from labkit.models.gguf import read_header
from labkit.models.files import describe, resolve_model

TOY = dataclasses.replace(catalog.get("llama-3.1-8b"), key="toy", name="Toy", n_layer=4,
                          n_head=4, n_head_kv=2, head_dim=32, n_embd=128, n_ff=256,
                          n_vocab=0, n_params=0)


def toy_spec(quant="q4_0", arch="llama", tied=False):
    shape = dataclasses.replace(TOY, arch=arch, tied_embeddings=tied)
    return SimpleNamespace(key="toy", quant=quant, shape=shape, name=f"synthetic:toy:{quant}")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE", str(tmp_path))
    return tmp_path / "synthetic"


# ---------------------------------------------------------------------------- names

def test_names_parse_with_q4_0_by_default():
    assert synthetic.parse("synthetic:llama-3.1-8b") == synthetic.Spec("llama-3.1-8b", "q4_0")
    assert synthetic.parse("synthetic:Qwen2.5-7B:F16") == synthetic.Spec("qwen2.5-7b", "f16")
    assert synthetic.parse("synthetic:llama-3.2-1b:q8_0").name == "synthetic:llama-3.2-1b:q8_0"
    assert synthetic.is_synthetic("synthetic:x") and not synthetic.is_synthetic("model.gguf")
    assert not synthetic.is_synthetic(None)


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(synthetic.SyntheticError) as e:
        synthetic.parse("synthetic:llama-9")
    for key in catalog.names():
        assert key in str(e.value)


@pytest.mark.parametrize("name, says", [
    ("synthetic:llama-3.1-8b:q3_k", "unknown quantization 'q3_k'; choose one of f16, q8_0, q4_0"),
    ("synthetic:", "expected synthetic:NAME[:QUANT]"),
    ("synthetic:llama-3.1-8b:q4_0:x", "expected synthetic:NAME[:QUANT]"),
])
def test_malformed_names_say_what_is_expected(name, says):
    with pytest.raises(synthetic.SyntheticError, match=re.escape(says)):
        synthetic.parse(name)


def test_resolve_model_and_describe_pass_synthetic_errors_on(cache):
    with pytest.raises(synthetic.SyntheticError, match="unknown model 'nope'"):
        resolve_model("synthetic:nope")
    with pytest.raises(synthetic.SyntheticError, match="unknown model 'nope'"):
        describe("synthetic:nope")
    assert not cache.exists()


# ---------------------------------------------------------------------------- the tensors

@pytest.mark.parametrize("key", catalog.names(stand_ins=True))
def test_tensors_hold_exactly_the_catalogue_parameter_count(key):
    """With the real vocabulary, the writer's tensors are the real model's, weight for weight."""
    shape = catalog.get(key)
    plan = synthetic.tensors(shape, "q4_0", shape.n_vocab)
    assert sum(t.n_elements for t in plan) == shape.n_params
    names = {t.name for t in plan}
    assert ("output.weight" in names) is (not shape.tied_embeddings)
    assert sum(n.endswith("attn_q.bias") for n in names) == (shape.n_layer if shape.arch == "qwen2"
                                                              else 0)


def test_the_8b_vocabulary_gap_is_what_the_docs_say():
    gap = synthetic.vocabulary_gap("synthetic:llama-3.1-8b", n_vocab=49152)
    assert gap["weights_missing"] == 2 * (128256 - 49152) * 4096 == 648_019_968
    assert round(gap["weights_missing_pct"], 2) == 8.07
    assert round(gap["output_cost_ratio"], 2) == 0.38
    assert synthetic.vocabulary_gap("synthetic:smollm2-135m", 49152)["weights_missing"] == 0


@pytest.mark.parametrize("quant", ["q4_0", "q8_0", "f16"])
def test_random_blocks_decode_to_weights_of_the_intended_scale(quant):
    import gguf
    raw = synthetic.random_period(quant)
    gtype = gguf.GGMLQuantizationType(synthetic.QUANTS[quant][0])
    _, block, size, _ = synthetic.QUANTS[quant]
    assert len(raw) == synthetic.PERIOD * size
    values = gguf.quants.dequantize(raw.reshape(-1, size), gtype).reshape(-1)
    assert values.size == synthetic.PERIOD * block
    assert np.isfinite(values).all()
    assert abs(values.std() / synthetic.WEIGHT_STD - 1) < 0.05
    assert abs(values.mean()) < 0.02 * synthetic.WEIGHT_STD


def test_tiler_continues_the_pattern_from_any_phase(tmp_path):
    period = np.arange(7 * 3, dtype=np.uint8)           # 7 units of 3 bytes
    tiler = synthetic._Tiler(period, unit=3, chunk=50)
    out = tmp_path / "t.bin"
    with open(out, "wb") as f:
        tiler.write(f, 100, phase=5)
    expected = np.tile(period, 10)[15:115]
    assert out.read_bytes() == expected.tobytes()


@pytest.mark.parametrize("quant, arch, tied", [("q4_0", "llama", False), ("q8_0", "qwen2", True),
                                               ("f16", "llama", True)])
def test_written_file_has_the_shape_and_the_tokenizer(tmp_path, quant, arch, tied):
    spec = toy_spec(quant, arch, tied)
    path = synthetic.write(spec, tmp_path / "toy.gguf")
    h = read_header(path)
    md = h.metadata
    assert md["general.architecture"] == arch
    assert md[f"{arch}.block_count"] == 4 and md[f"{arch}.attention.head_count_kv"] == 2
    assert md[f"{arch}.attention.key_length"] == 32
    assert md["labkit.synthetic"] == f"toy:{quant}"
    assert md["tokenizer.ggml.tokens"].length == 49152 == md[f"{arch}.vocab_size"]
    assert md["tokenizer.chat_template"].startswith("{%")
    assert h.data_end <= h.file_size < h.data_end + 32
    types = {t.name: t.ggml_type for t in h.tensors}
    assert types["blk.0.attn_norm.weight"] == 0
    assert types["blk.3.ffn_down.weight"] == synthetic.QUANTS[quant][0]
    assert ("output.weight" in types) is (not tied)
    # The bytes llama.cpp reads: norms are ones, weights have the intended scale.
    import gguf
    tensors = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}
    assert np.all(np.asarray(tensors["output_norm.weight"].data) == 1.0)
    w = tensors["blk.1.attn_q.weight"]
    values = gguf.quants.dequantize(np.asarray(w.data), w.tensor_type)
    assert abs(values.std() / synthetic.WEIGHT_STD - 1) < 0.1
    assert not list(tmp_path.glob(".*partial"))


def test_the_same_name_gives_the_same_bytes(tmp_path):
    """Seeded: worksheets from two machines name the same model by the same sha256."""
    a = synthetic.write(toy_spec(), tmp_path / "a.gguf").read_bytes()
    b = synthetic.write(toy_spec(), tmp_path / "b.gguf").read_bytes()
    assert a == b


def test_tokenizer_only_file_stands_in_for_the_embedded_model(tmp_path, monkeypatch):
    tok = synthetic.write_tokenizer(tmp_path / "tokenizer.gguf")
    assert tok.stat().st_size < 4 * 2**20
    assert synthetic.tokenizer_fields(tok) == synthetic.tokenizer_fields()
    monkeypatch.setenv(synthetic.ENV_TOKENIZER, str(tok))
    assert synthetic.tokenizer_source() == tok
    monkeypatch.setenv(synthetic.ENV_TOKENIZER, str(tmp_path / "missing.gguf"))
    with pytest.raises(synthetic.SyntheticError, match="no such file"):
        synthetic.tokenizer_source()


# ---------------------------------------------------------------------------- impossible sizes

def test_too_little_disk_is_refused_before_writing(cache, monkeypatch):
    monkeypatch.setattr(synthetic.shutil, "disk_usage", lambda p: SimpleNamespace(free=2**30))
    with pytest.raises(synthetic.SyntheticError,
                       match=r"synthetic:llama-3.1-8b:q4_0 needs 3.9 GiB of disk .* 1.0 GiB free"):
        resolve_model("synthetic:llama-3.1-8b")
    assert not list(cache.glob("*.gguf"))


def test_too_little_memory_is_refused_before_writing(cache, monkeypatch):
    import psutil
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=8 * 2**30))
    with pytest.raises(synthetic.SyntheticError,
                       match=r"synthetic:llama-3.1-70b:q4_0 needs about 37.\d GiB of memory to "
                             r"load on the CPU .* 8.0 GiB available"):
        resolve_model("synthetic:llama-3.1-70b", load=True)
    assert not cache.exists() or not list(cache.glob("*.gguf"))


def test_gpu_offload_checks_the_gpus_free_memory(cache):
    spec = synthetic.parse("synthetic:llama-3.1-70b")
    with pytest.raises(synthetic.SyntheticError, match=r"needs about 37.\d GiB of GPU "
                                                       r"memory .* 22.0 GiB free"):
        synthetic.check_memory(spec, n_gpu_layers=-1, gpu_free_bytes=22 * 2**30)
    synthetic.check_memory(synthetic.parse("synthetic:llama-3.1-8b"), n_gpu_layers=-1,
                           gpu_free_bytes=22 * 2**30)


def test_any_backends_gpu_memory_is_asked_of_llama_cpp_not_nvml(cache, monkeypatch):
    """A Metal or Vulkan device with NVML absent: the model about to be offloaded is refused
    before its file is written, from ggml's free memory."""
    from labkit.engine import devices
    from labkit.machine import gpu
    monkeypatch.setattr(gpu, "list_gpus", lambda: ([], "NVML: library not found"))
    metal = {"name": "Metal", "description": "Apple M2", "type": 2, "backend": "Metal",
             "free": 10 * 2**30, "total": 16 * 2**30}
    monkeypatch.setattr(devices, "registry", lambda: [metal])
    with pytest.raises(synthetic.SyntheticError, match=r"synthetic:llama-3.1-70b:q4_0 needs about "
                                                       r"37.\d GiB of GPU memory .* 10.0 GiB free"):
        devices.resolve_to_load("synthetic:llama-3.1-70b", n_gpu_layers=-1)
    assert not cache.exists() or not list(cache.glob("*.gguf"))
    # On the CPU (-ngl 0) the same device's memory is not the limit: RAM is.
    import psutil
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=8 * 2**30))
    with pytest.raises(synthetic.SyntheticError, match=r"to load on the CPU .* 8.0 GiB available"):
        devices.resolve_to_load("synthetic:llama-3.1-70b", n_gpu_layers=0)


# ---------------------------------------------------------------------------- llama.cpp

@pytest.mark.slow
@pytest.mark.parametrize("name", ["synthetic:smollm2-135m", "synthetic:llama-3.2-1b"])
def test_llama_cpp_loads_it_and_generates_finite_logits(name):
    from llama_cpp import Llama
    t0 = time.perf_counter()
    path = resolve_model(name, load=True)
    written = time.perf_counter() - t0
    llm = Llama(model_path=str(path), n_ctx=256, n_threads=2, logits_all=True, verbose=False)
    try:
        t1 = time.perf_counter()
        out = llm.create_completion("The quick brown fox", max_tokens=8, temperature=0)
        gen = time.perf_counter() - t1
        assert out["usage"]["completion_tokens"] == 8
        tokens = llm.tokenize(b"The quick brown fox jumps")
        llm.reset()
        llm.eval(tokens)
        logits = np.asarray(llm.scores[:len(tokens)])
        assert np.isfinite(logits).all() and logits.std() > 0
    finally:
        llm.close()
    print(f"\n{name}: {path.stat().st_size / 1e6:.0f} MB, ready in {written:.1f} s, "
          f"8 tokens (prompt included) in {gen:.2f} s")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["synthetic:smollm2-135m", "synthetic:llama-3.2-1b"])
def test_kv_bytes_per_token_match_what_llama_cpp_allocates(name):
    from labkit.models import kv
    from labkit.costs.capacity import kv_match_table
    table = kv_match_table(name, n_ctxs=(512, 1000), kv_types=("f16", "q8_0"))
    assert table["match"].all(), table
    info = describe(name, with_hash=False)
    shape = catalog.get(synthetic.parse(name).key)
    assert kv.model_bytes_per_token(info) == shape.kv_bytes_per_token()


@pytest.mark.slow
def test_the_engine_takes_a_synthetic_name():
    from labkit.engine import Engine, EngineConfig, SamplingParams
    cfg = EngineConfig("synthetic:smollm2-135m", n_ctx=512, n_slots=2)
    assert cfg.model_path == str(resolve_model("synthetic:smollm2-135m"))
    with Engine(cfg) as eng:
        params = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
        handles = [eng.submit(eng.tokenize(t), params) for t in ("Hello", "Count to ten")]
        assert [h.result(timeout=120).usage["completion_tokens"] for h in handles] == [6, 6]


@pytest.mark.slow
def test_8b_q4_0_is_written_in_seconds_and_doctor_reads_its_shape():
    import psutil
    name = "synthetic:llama-3.1-8b:q4_0"
    spec = synthetic.parse(name)
    path = synthetic.path_for(spec)
    if not path.exists():
        try:
            synthetic.check_disk(spec, synthetic.cache_dir().parent, 49152)
        except synthetic.SyntheticError as exc:
            pytest.skip(str(exc))
    t0 = time.perf_counter()
    resolve_model(name)
    took = time.perf_counter() - t0
    h = read_header(path)
    md = h.metadata
    assert (md["llama.block_count"], md["llama.attention.head_count_kv"],
            md["llama.attention.key_length"]) == (32, 8, 128)
    assert h.file_size == pytest.approx(4.155e9, rel=0.01)
    loadable = psutil.virtual_memory().available > path.stat().st_size + synthetic.LOAD_HEADROOM
    cmd = [sys.executable, "-m", "labkit", "doctor", "--json", "--model", name]
    if not loadable:
        cmd.append("--no-generate")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200,
                       env={**os.environ, "LLAMA_LOG_LEVEL": "error"})
    report = json.loads(r.stdout)
    m = report["model"]
    assert (m["n_layer"], m["n_head"], m["n_head_kv"], m["head_dim"], m["n_embd"]) == \
        (32, 32, 8, 128, 4096)
    assert m["synthetic"] == "llama-3.1-8b:q4_0" and m["path"] == str(path)
    gen = report["generation"]
    if loadable:
        assert gen["ok"], gen
    print(f"\n{name}: {h.file_size / 1e9:.2f} GB, {'found' if took < 1 else 'written'} in "
          f"{took:.1f} s; doctor: {gen}")
