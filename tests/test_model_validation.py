"""A model file with impossible numbers is refused by labkit's reader before llama.cpp sees it.

llama.cpp trusts a GGUF's hyperparameters: 0 layers, more than LLAMA_MAX_LAYERS, or a NaN norm
epsilon make it abort the whole process (GGML_ASSERT, SIGABRT), and 0 heads divides by zero.
:func:`labkit.models.hparams.hyperparameters` checks each number first and raises a GGUFError
naming the key and its value. The fast tests check the rules on metadata alone and on small
files; the slow ones run damaged files through `labkit doctor`, `labkit serve` and
`labkit bench` as a learner would, and require one line and an ordinary exit, never a signal.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.models import synthetic
from labkit.models.files import describe
from labkit.models import gguf
from labkit.models.gguf import GGUFError, GGUFHeader, read_header
from labkit.models.hparams import LLAMA_MAX_LAYERS, hyperparameters, read_model

REPO = Path(__file__).resolve().parents[1]

GOOD = {    # the embedded model's shape (SmolLM2-135M)
    "general.architecture": "llama",
    "llama.block_count": 30,
    "llama.context_length": 8192,
    "llama.embedding_length": 576,
    "llama.attention.head_count": 9,
    "llama.attention.head_count_kv": 3,
    "llama.attention.layer_norm_rms_epsilon": 1e-5,
}


def header(**changes) -> GGUFHeader:
    """GOOD with ``changes`` (key without the "llama." prefix; None removes it)."""
    md = dict(GOOD)
    for name, value in changes.items():
        key = f"llama.{name.replace('__', '.')}"
        if value is None:
            md.pop(key, None)
        else:
            md[key] = value
    return GGUFHeader("m.gguf", 3, md, [], 0, 0)


def test_the_good_shape_passes():
    hp = hyperparameters(header())
    assert (hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_embd, hp.n_ctx_train) == \
        (30, 9, 3, 64, 576, 8192)


def test_the_embedded_model_passes(model_path):
    header_, hp = read_model(model_path)
    assert hp.architecture == "llama" and hp.n_layer == 30 and header_.tensors


@pytest.mark.parametrize("changes", [
    {"block_count": 1}, {"block_count": LLAMA_MAX_LAYERS},
    {"attention__head_count_kv": None},                 # defaults to head_count
    {"attention__head_count_kv": 9}, {"attention__head_count_kv": 1},
    {"embedding_length": 577, "attention__key_length": 64, "attention__value_length": 64},
    {"attention__layer_norm_rms_epsilon": None},
    {"attention__layer_norm_epsilon": 1e-6},
    {"expert_count": 8, "expert_used_count": 2},
    # per layer (a hybrid model: some layers have no attention)
    {"block_count": 4, "attention__head_count": [9, 9, 9, 9],
     "attention__head_count_kv": [3, 0, 3, 0]},
])
def test_shapes_llama_cpp_loads_pass(changes):
    hyperparameters(header(**changes))


@pytest.mark.parametrize("changes, key, shown", [
    ({"block_count": 0}, "llama.block_count", "= 0"),
    ({"block_count": 100000}, "llama.block_count", "= 100000"),
    ({"block_count": LLAMA_MAX_LAYERS + 1}, "llama.block_count", f"= {LLAMA_MAX_LAYERS + 1}"),
    ({"block_count": -1}, "llama.block_count", "= -1"),
    ({"block_count": 30.0}, "llama.block_count", "= 30.0"),
    ({"block_count": "30"}, "llama.block_count", "= '30'"),
    ({"block_count": None}, "llama.block_count", "lacks"),
    ({"attention__head_count": 0}, "llama.attention.head_count", "= 0"),
    ({"attention__head_count_kv": 0}, "llama.attention.head_count_kv", "= 0"),
    ({"attention__head_count_kv": 2}, "llama.attention.head_count_kv", "= 2"),
    ({"embedding_length": 0}, "llama.embedding_length", "= 0"),
    ({"embedding_length": 577}, "llama.embedding_length", "= 577"),
    ({"attention__key_length": 0}, "llama.attention.key_length", "= 0"),
    ({"attention__value_length": 0}, "llama.attention.value_length", "= 0"),
    ({"context_length": 0}, "llama.context_length", "= 0"),
    ({"attention__layer_norm_rms_epsilon": math.nan}, "layer_norm_rms_epsilon", "= nan"),
    ({"attention__layer_norm_rms_epsilon": math.inf}, "layer_norm_rms_epsilon", "= inf"),
    ({"attention__layer_norm_rms_epsilon": 0.0}, "layer_norm_rms_epsilon", "= 0.0"),
    ({"attention__layer_norm_rms_epsilon": -1e-5}, "layer_norm_rms_epsilon", "= -1e-05"),
    ({"attention__layer_norm_epsilon": math.nan}, "llama.attention.layer_norm_epsilon", "= nan"),
    ({"expert_count": 100000, "expert_used_count": 2}, "llama.expert_count", "= 100000"),
    ({"expert_count": 8, "expert_used_count": 9}, "llama.expert_used_count", "= 9"),
    ({"expert_count": 8, "expert_used_count": 0}, "llama.expert_used_count", "= 0"),
    ({"expert_used_count": 2}, "llama.expert_used_count", "= 2"),
    ({"block_count": 4, "attention__head_count": [0, 0, 0, 0]},
     "llama.attention.head_count", "= [0, 0, 0, 0]"),
    ({"block_count": 4, "attention__head_count": [9, 9, 9]},
     "llama.attention.head_count", "= [9, 9, 9]"),
    ({"block_count": 4, "attention__head_count": [9, 9, 8, 9]},
     "llama.attention.head_count_kv", "layer 2"),
])
def test_impossible_numbers_are_refused_naming_the_key_and_the_value(changes, key, shown):
    with pytest.raises(GGUFError) as e:
        hyperparameters(header(**changes))
    said = str(e.value)
    assert said.startswith("m.gguf: ") and key in said and shown in said
    assert "\n" not in said


def test_per_layer_arrays_are_read_whole_up_to_llama_cpps_layer_limit():
    assert gguf._KEEP_ARRAY_MAX >= LLAMA_MAX_LAYERS


def test_the_refusal_is_in_chinese_under_zh_tw(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    said = r"m\.gguf：llama\.block_count = 0 不可能成立：llama\.cpp 需要 1 到 512"
    with pytest.raises(GGUFError, match=said):
        hyperparameters(header(block_count=0))


# ---------------------------------------------------------------------------- damaged files

@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    """A tiny llama-shaped GGUF (4 layers, random weights, the embedded model's tokenizer)."""
    from test_synthetic import toy_spec
    return synthetic.write(toy_spec(), tmp_path_factory.mktemp("toy") / "toy.gguf")


def damaged(toy: Path, folder: Path, case: str) -> Path:
    """A copy of ``toy`` damaged as ``case`` says: a hyperparameter changed in place (the file
    stays well-formed GGUF) or the file cut short."""
    out = folder / f"{case}.gguf"
    shutil.copy(toy, out)
    if case.startswith("cut-"):
        keep = {"cut-header": 2_000, "cut-data": toy.stat().st_size - 1_000}[case]
        with open(out, "r+b") as f:
            f.truncate(keep)
        return out
    key, value = CHANGES[case]
    set_in_place(out, key, value)
    return out


def set_in_place(path: Path, key: str, value) -> None:
    """Overwrite a scalar metadata value in the file, in its own type (a u32 stays a u32)."""
    import struct
    from labkit.models.gguf import _SCALARS
    with open(path, "r+b") as f:
        head = f.read(1 << 16)          # the shape keys come first, before the tokenizer
        at = head.index(struct.pack("<Q", len(key)) + key.encode()) + 8 + len(key)
        fmt = _SCALARS[struct.unpack_from("<I", head, at)[0]]
        f.seek(at + 4)
        f.write(struct.pack(fmt, value))


CHANGES = {
    "block_count-0": ("llama.block_count", 0),
    "block_count-100000": ("llama.block_count", 100000),
    "head_count-0": ("llama.attention.head_count", 0),
    "epsilon-nan": ("llama.attention.layer_norm_rms_epsilon", math.nan),
}
CASES = {   # case -> what the one line names
    "block_count-0": "llama.block_count = 0",
    "block_count-100000": "llama.block_count = 100000",
    "head_count-0": "llama.attention.head_count = 0",
    "epsilon-nan": "llama.attention.layer_norm_rms_epsilon = nan",
    "cut-header": "truncated",
    "cut-data": "truncated",
}


def test_the_toy_file_passes(toy):
    assert describe(toy, with_hash=False).n_layer == 4


@pytest.mark.parametrize("case", CASES)
def test_damaged_files_are_refused_by_the_reader(toy, tmp_path, case):
    bad = damaged(toy, tmp_path, case)
    if not case.startswith("cut-"):     # still well-formed GGUF: only the numbers are wrong
        assert read_header(bad).tensors
    with pytest.raises(GGUFError) as e:
        describe(bad)
    assert str(bad) in str(e.value) and CASES[case] in str(e.value)


@pytest.mark.parametrize("case", ["block_count-0", "epsilon-nan"])
def test_the_engine_refuses_before_llama_cpp_loads(toy, tmp_path, case):
    from labkit.engine import Engine, EngineConfig
    from labkit.engine import native
    bad = damaged(toy, tmp_path, case)
    # Patched and restored inside the test's call: conftest's fast-lane guard patches the same
    # loader for the call, and a fixture's undo (after the call) would put the guard back.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native.llama_cpp, "llama_model_load_from_file",
                   lambda *a: pytest.fail("llama.cpp was handed the damaged file"))
        with pytest.raises(GGUFError, match=re.escape(CASES[case])):
            Engine(EngineConfig(str(bad), n_ctx=256, n_slots=1))


# ---------------------------------------------------------------------------- through each tool

def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TOOLS = {
    "doctor": lambda f, out: ["doctor", "--model", str(f)],
    "serve": lambda f, out: ["serve", "-m", str(f), "--port", str(_free_port())],
    "bench": lambda f, out: ["bench", "-m", str(f), "--out", str(out), "--rounds", "1"],
}


@pytest.fixture(scope="module")
def damaged_files(toy, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("damaged")
    return {case: damaged(toy, folder, case) for case in CASES}


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("case", CASES)
def test_each_tool_refuses_a_damaged_model_in_one_line(damaged_files, tmp_path, tool, case):
    env = {**os.environ, "LABKIT_LANG": "en",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "labkit", *TOOLS[tool](damaged_files[case], tmp_path / "out")]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    said = run.stdout + run.stderr
    assert 0 < run.returncode < 128, f"exit {run.returncode} (a signal?):\n{said[-3000:]}"
    assert "Traceback" not in said and "GGML_ASSERT" not in said, said[-3000:]
    if tool == "doctor":    # its report, NOT READY and one problem line: the model's
        problems = run.stdout.split("\n\n")[-1].splitlines()[1:]
        assert len(problems) == 1 and CASES[case] in problems[0], run.stdout
    else:
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and CASES[case] in lines[0], run.stderr
        assert str(damaged_files[case]) in lines[0]
    if tool == "bench":
        assert lines[0].startswith("labkit bench: the model cannot be used: ")
        assert not (tmp_path / "out").exists()
