"""The GPU path, run on a GPU device llama.cpp sees: a real GPU, or the software GPU lane
(.ci/gpu-lane: llama.cpp's Vulkan backend on Mesa's lavapipe, which runs on the CPU, about
2 tokens/s: the workloads here are tiny). Marked `gpu`: skipped, saying why, where llama.cpp
sees no GPU device (tests/conftest.py)."""

import json
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def _labkit(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def device():
    from labkit.engine.devices import gpu_devices
    return gpu_devices()[0]


def test_doctor_lists_the_device_with_its_memory_and_takes_the_gpu_path(device):
    from labkit.tools import doctor
    proc = _labkit("doctor", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads(proc.stdout)
    g = r["gpus"][0]
    assert g["device"] == device.name and g["backend"] == device.backend
    assert g["memory_total_bytes"] > 0 and g["memory_used_bytes"] >= 0
    assert r["path"] == "gpu" and r["gpu_note"] is None
    gen = r["generation"]
    assert gen["ok"] and gen["n_gpu_layers"] == -1 and gen["completion_tokens"] > 0
    text = doctor.render(r)
    assert f"{device.name} {device.description}" in text
    assert f"gpu: llama.cpp offloads every layer to {device.name}" in text
    if device.software:
        assert "software device" in text
    from labkit import notebook
    assert notebook.compute_path(r)["path"] == "gpu"


def test_the_engine_loads_every_layer_onto_the_device(model_path, caplog):
    import logging

    from labkit.engine import Engine, EngineConfig
    from labkit.models.files import describe
    n_layer = describe(model_path, with_hash=False).n_layer
    with caplog.at_level(logging.INFO, logger="labkit.engine.llama"):
        with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1, n_gpu_layers=-1)) as eng:
            facts = dict(eng.facts)
    # llama.cpp counts the output layer as one more
    assert facts["gpu_layers"] == n_layer + 1, caplog.text[-2000:]
    assert f"offloaded {n_layer + 1}/{n_layer + 1} layers to GPU" in caplog.text



def _prompt_graph_splits(model_path, caplog, **engine) -> int:
    """How many pieces llama.cpp's scheduler cuts a prompt-sized graph into, from its own log
    line "graph (pp bs=..., tg bs=...): nodes = ..., splits = PP / TG" (or "splits = N" when
    both are equal): 1 means the whole prompt runs on one backend."""
    import logging
    import re

    from labkit.engine import Engine, EngineConfig
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="labkit.engine.llama"):
        with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1, n_gpu_layers=0, **engine)):
            pass
    m = re.search(r"graph.*: nodes = [0-9 /]+, splits = (\d+)", caplog.text)
    assert m, caplog.text[-2000:]
    return int(m[1])


def test_ngl_0_keeps_prompts_on_the_cpu_unless_op_offload_is_asked_for(model_path, caplog):
    """With every layer on the CPU (-ngl 0), llama.cpp still runs a batch of 32 tokens or more
    on the GPU device it sees when op offload is on (llama-server's default): the prompt graph
    is cut between the device and the CPU. labkit's default (--no-op-offload) keeps it whole on
    the CPU."""
    assert _prompt_graph_splits(model_path, caplog) == 1
    assert _prompt_graph_splits(model_path, caplog, op_offload=True) > 1


def test_labkit_serve_says_how_many_layers_went_to_the_device(model_path, tmp_path):
    from labkit.server.launch import ServerConfig, launch
    with launch(ServerConfig(n_ctx=512, n_slots=1, n_gpu_layers="all",
                             log_dir=str(tmp_path))) as srv:
        facts = dict(srv.offload)
        log = srv.log_text()
    assert facts["gpu_layers"] == facts["n_layers_offloadable"] > 0, log[-2000:]
    assert "layers to GPU" in log


def tiny_workload(folder) -> str:
    """Two one-line documents, a one-line prompt and 8-token answers (end-of-generation
    ignored, timing only): a software GPU decodes a few tokens a second."""
    path = folder / "tiny.json"
    path.write_text(json.dumps({
        "name": "tiny", "description": "two one-line documents, 8-token answers",
        "max_tokens": 8, "ignore_eos": True, "not_graded": "not graded (timing only)",
        "prompt": {"system": "Reply with the id.", "example_document": "id: DEMO-00",
                   "example_answer": {"id": "DEMO-00"}, "max_tokens": 8,
                   "response_format": None},
        "documents": [{"id": f"DEMO-0{i}", "text": f"id: DEMO-0{i}", "answer": None}
                      for i in (1, 2)]}))
    return str(path)


def test_bench_offloads_every_layer_unasked_and_records_the_device(device, tmp_path):
    proc = _labkit("bench", "--rounds", "1", "--slots", "1", "2", "--kv", "split",
                   "-w", tiny_workload(tmp_path), "-c", "1024", "--no-progress",
                   "--ttft-threshold", "600",
                   "--out", str(tmp_path / "out"), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # llama.cpp's Vulkan backend prints its device list on stderr itself as it starts
    first = next(ln for ln in proc.stderr.splitlines() if not ln.startswith("ggml_vulkan:"))
    assert first.startswith("labkit bench: every layer (-ngl all) on " + device.name), first
    (out,) = (tmp_path / "out").iterdir()
    ws = pd.read_csv(out / "worksheet.csv")
    assert list(ws["slots"]) == [1, 2] and (ws["errors"] == 0).all()
    assert ws["device"].str.startswith(device.name).all(), ws["device"]
    assert (ws["backend"] == device.backend).all() and (ws["n_gpu_layers"] == -1).all()
    memory = "(NVML)" if device.backend == "CUDA" else "(ggml_backend_dev_memory)"
    if device.software and (ws["sampled_peak_mib"] == 0).all():
        memory = "this driver reports none in use"       # lavapipe: its heap is always free
    else:
        assert (ws["sampled_peak_mib"] > 0).all()
    assert ws["memory"].str.endswith(memory).all(), ws["memory"]
    mem = pd.read_csv(out / "memory.csv")
    assert {"gpu_device_used_ggml", "gpu_device_used"} & set(mem["kind"])
    env = json.loads((out / "environment.json").read_text())
    assert env["bench"]["device"].startswith(device.name)
    assert env["bench"]["n_gpu_layers"] == -1 and env["bench"]["n_gpu_layers_asked"] is False
    assert env["path"] == "gpu" and env["gpus"][0]["device"] == device.name
    if device.software:
        assert "software device" in first and "[software device]" in ws["device"].iloc[0]



@pytest.mark.parametrize("fault, env", [
    ("lavapipe left out", {"GGML_VK_VISIBLE_DEVICES": None}),
    ("no Vulkan driver", {"VK_ICD_FILENAMES": "/nonexistent/icd.json",
                          "VK_DRIVER_FILES": "/nonexistent/icd.json"}),
])
def test_a_vulkan_build_without_its_device_says_so_and_takes_the_cpu(device, fault, env):
    """ggml skips CPU-type Vulkan devices unless GGML_VK_VISIBLE_DEVICES names them, and a
    Vulkan driver that fails to start registers none: doctor says so in one line, what to do,
    and the CPU path follows, without a traceback."""
    import os
    if device.backend != "Vulkan" or not device.software:
        pytest.skip("these faults are made on a software Vulkan device")
    child = {k: v for k, v in os.environ.items() if k not in env}
    child.update({k: v for k, v in env.items() if v is not None})
    proc = subprocess.run([sys.executable, "-m", "labkit", "doctor", "--json", "--no-generate"],
                          capture_output=True, text=True, timeout=300, env=child)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    r = json.loads(proc.stdout)
    assert r["path"] == "cpu" and r["gpus"] == [], fault
    assert "sees no GPU device" in r["gpu_note"] and "GGML_VK_VISIBLE_DEVICES=0" in r["gpu_note"]
