import json
import re
import subprocess
import sys

import pytest

from authoring import editions
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


def fake_report(**changes) -> dict:
    """A report as collect() makes it, every row of render() in it: a GPU, advice, a synthetic
    model, a generation, and a problem."""
    report = {
        "labkit": "0.1.0", "python": "3.11.7", "platform": "Linux-6.1-x86_64", "machine": "x86_64",
        "cpu_count": 2, "packages": {name: "1.0" for name in doctor.PACKAGES} | {"nbval": None},
        "llama_cpp": {"ok": True, "version": "0.3.36", "gpu_offload": False,
                      "devices": ["CPU (Intel(R) Xeon(R) Processor)"],
                      "llama_cpp_source": {"commit": "0c1e570", "compiler": "GNU 12.2.0",
                                           "target": "Linux x86_64"},
                      "system_info": "CPU : AVX2 = 1 | OPENMP = 1 |"},
        "gpus": [{"index": 0, "device": "CUDA0", "name": "NVIDIA H200", "backend": "CUDA",
                  "memory_used_bytes": 2**30, "memory_total_bytes": 140 * 2**30,
                  "memory_source": "nvml", "software": False, "driver": "570.1"}],
        "path": "gpu", "nvml_note": "",
        "gpu_note": "", "advice": doctor.t("doctor.advice_cpu_build"),
        "model": {"path": "/models/m.gguf", "name": "SmolLM2 135M", "architecture": "llama",
                  "n_layer": 30, "n_head": 9, "n_head_kv": 3, "head_dim": 64, "n_embd": 576,
                  "n_ctx_train": 8192, "file_type": "Q4_1", "n_params": 134515008,
                  "size_bytes": 98362432, "sha256": "b1" * 32, "synthetic": "llama-3.1-8b"},
        "generation": {"ok": True, "completion_tokens": 24, "wall_s": 0.5, "tokens_per_s": 48.0,
                       "load_s": 0.3, "n_gpu_layers": 0, "text": "red, green, blue"},
        "cjk_font": "Noto Sans CJK TC", "problems": ["llama-cpp-python: boom -> pip install"],
        "ok": False,
    }
    return report | changes


def _columns(text: str) -> int:
    """How many columns of a terminal ``text`` takes (a Chinese character takes two)."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def misaligned(screen: str) -> list[str]:
    """The lines of doctor's screen whose value does not start 18 columns in: every
    line but the blank ones, the title, the verdict and the problems under it is a row."""
    lines = screen.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith(("READY", "NOT READY")))
    bad = []
    for line in lines[1:verdict]:
        if not line:
            continue
        label = re.match(r"\S+(?: \d+)?", line).group(0)       # a name, or "GPU 0"
        rest = line[len(label):]
        value_at = _columns(label) + len(rest) - len(rest.lstrip(" "))
        if value_at != 18 or not rest.startswith(" "):
            bad.append(line)
    return bad


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_every_row_of_doctor_starts_its_value_in_one_column(monkeypatch, lang):
    monkeypatch.setenv("LABKIT_LANG", lang)
    for report in (fake_report(), fake_report(gpus=[], path="cpu", advice=None, ok=True, problems=[],
                                              generation={"ok": None, "skipped": "--no-generate"},
                                              cjk_font=None)):
        screen = doctor.render(report)
        assert len(screen.splitlines()) > 20 and misaligned(screen) == [], screen


def test_a_row_padded_by_characters_not_columns_is_found(monkeypatch):
    """The check can say no: labels padded by their count of characters leave the Chinese
    rows two columns to the right per character."""
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    monkeypatch.setattr(doctor, "_pad", lambda label, width: label.ljust(width))
    bad = misaligned(doctor.render(fake_report()))
    assert bad and all(editions.CJK.search(line.split()[0]) for line in bad), bad
    assert any(line.startswith("建置") for line in bad)
