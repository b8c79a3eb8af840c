import json
import re
import subprocess
import sys

import pytest

from labkit.tools import doctor
from labkit.machine import gpu


def run_doctor(*args):
    return subprocess.run([sys.executable, "-m", "labkit", "doctor", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_doctor_json_reads_the_embedded_model_and_generates():
    proc = run_doctor("--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads(proc.stdout)
    m = r["model"]
    assert (m["n_layer"], m["n_head_kv"], m["head_dim"], m["n_ctx_train"]) == (30, 3, 64, 8192)
    assert re.fullmatch(r"[0-9a-f]{64}", m["sha256"])
    assert r["generation"]["ok"] and r["generation"]["completion_tokens"] > 0
    assert r["generation"]["tokens_per_s"] > 0
    assert r["llama_cpp"]["version"] and isinstance(r["llama_cpp"]["gpu_offload"], bool)
    assert r["ok"] is True and r["problems"] == []


@pytest.mark.slow
def test_doctor_text_says_ready():
    proc = run_doctor("--no-generate")
    assert proc.returncode == 0
    assert "READY" in proc.stdout and "sha256" in proc.stdout


@pytest.mark.slow
def test_doctor_fails_with_reason_for_missing_model(tmp_path):
    missing = tmp_path / "missing.gguf"
    proc = run_doctor("--model", str(missing))
    assert proc.returncode == 1
    assert "NOT READY" in proc.stdout and str(missing) in proc.stdout


@pytest.mark.slow
def test_doctor_fails_for_a_file_that_is_not_a_model(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"PK\x03\x04 definitely a zip")
    proc = run_doctor("--json", "--model", str(bogus))
    assert proc.returncode == 1
    r = json.loads(proc.stdout)
    assert "not a GGUF file" in r["model"]["error"]
    assert r["ok"] is False


def test_no_nvml_means_no_gpu_not_a_crash(monkeypatch):
    import pynvml

    def boom():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setattr(pynvml, "nvmlInit", boom)
    gpus, why = gpu.list_gpus()
    assert gpus == [] and why.startswith("no NVIDIA GPU found")


def test_missing_pynvml_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    gpus, why = gpu.list_gpus()
    assert gpus == [] and "nvidia-ml-py" in why


def test_broken_llama_cpp_is_reported_with_a_fix(monkeypatch):
    monkeypatch.setattr(doctor, "llama_build",
                        lambda: {"ok": False, "error": "cannot import llama_cpp: boom",
                                 "fix": "pip install llama-cpp-python"})
    r = doctor.collect(generate=True)
    assert r["ok"] is False
    assert any("llama-cpp-python" in p and "pip install" in p for p in r["problems"])
    assert "NOT READY" in doctor.render(r)


def test_cli_unknown_command_and_help(capsys):
    from labkit.cli import main
    assert main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "doctor" in capsys.readouterr().out
