"""`labkit bench` on the GPU llama.cpp sees: the default -ngl, the first line, the device in
the worksheet and environment.json, and GPU memory read through ggml where NVML does not
reach. Devices here are made up; nothing is started or loaded."""

import pandas as pd
import pytest

from labkit.bench import cli, memory, runner
from labkit.engine import devices
from labkit.server.launch import offloaded_layers, parse_startup_log

from test_bench import fake_rows

GiB = 2**30
VK = devices.Device(1, "Vulkan0", "llvmpipe (LLVM 15.0.6, 256 bits)", "gpu", "Vulkan",
                    8 * GiB, 7 * GiB)
ROCM = devices.Device(1, "ROCm0", "AMD Radeon RX 7900 XTX", "gpu", "ROCm", 24 * GiB, 20 * GiB)
GPU_ROW = {"index": 0, "device": "Vulkan0", "name": "llvmpipe (LLVM 15.0.6, 256 bits)",
           "backend": "Vulkan", "type": "gpu", "memory_total_bytes": 8 * GiB,
           "memory_used_bytes": GiB, "driver": None, "software": True, "memory_source": "ggml"}


def _fake_report(monkeypatch, path="gpu", note=None):
    from labkit.tools import doctor
    report = {"llama_cpp": {"gpu_offload": path == "gpu"}, "gpus": [GPU_ROW] if path == "gpu"
              else [], "gpu_fit": None, "gpu_note": note, "nvidia_gpus": []}
    monkeypatch.setattr(doctor, "collect", lambda model=None, generate=False: report)


def test_bench_offloads_every_layer_by_default_when_llama_cpp_sees_a_gpu(monkeypatch):
    _fake_report(monkeypatch, "gpu")
    where = cli.where_it_runs(None)
    assert where["n_gpu_layers"] == -1 and not where["asked"]
    line = cli.device_line(where)
    assert line.startswith("labkit bench: every layer (-ngl all) on Vulkan0 (llvmpipe")
    assert "-ngl 0 measures the CPU" in line and "software device" in line
    assert cli.where_it_runs(0)["n_gpu_layers"] == 0          # -ngl 0 still forces the CPU
    assert "as asked" in cli.device_line(cli.where_it_runs(0))
    assert "12 layers" in cli.device_line(cli.where_it_runs(12))


def test_bench_stays_on_the_cpu_and_says_why_without_a_gpu(monkeypatch):
    _fake_report(monkeypatch, "cpu", note="no NVIDIA GPU found")
    where = cli.where_it_runs(None)
    assert where["n_gpu_layers"] == 0 and where["gpu"] is None
    assert cli.device_line(where) == "labkit bench: on the CPU (-ngl 0): no NVIDIA GPU found"
    assert cli.build_parser().parse_args([]).n_gpu_layers is None
    assert cli.build_parser().parse_args(["-ngl", "all"]).n_gpu_layers == -1


def test_startup_log_says_how_many_layers_went_to_the_gpu():
    log = "load_tensors: offloading output layer to GPU\nload_tensors: offloaded 31/31 layers to GPU\n"
    assert offloaded_layers(log) == {"gpu_layers": 31, "n_layers_offloadable": 31}
    assert offloaded_layers("llama_context: n_ctx = 4096\n") == {}
    assert "gpu_layers" not in parse_startup_log(log)     # the notebooks compare those facts


def test_device_of_a_server(monkeypatch):
    monkeypatch.setattr(devices, "gpu_devices", lambda raw=None: [VK])
    on = runner.device_of(-1, {"gpu_layers": 31})
    assert on["device"].startswith("Vulkan0 (llvmpipe") and on["backend"] == "Vulkan"
    assert "[software device]" in on["device"] and on["gpu_layers"] == 31
    assert runner.device_of(0, {})["device"] == "CPU"
    assert runner.device_of(-1, {"gpu_layers": 0})["device"] == "CPU"
    assert runner.device_of(None, {})["device"] == "unknown"          # a server by URL
    monkeypatch.setattr(devices, "gpu_devices", lambda raw=None: [])
    assert runner.device_of(-1, {})["device"] == "CPU"       # nothing to offload to


def test_the_worksheet_keeps_device_backend_and_ngl():
    rows = fake_rows(2)
    rows["device"], rows["backend"], rows["n_gpu_layers"] = "Vulkan0 (llvmpipe)", "Vulkan", -1
    ws = runner.BenchResult(rows, pd.DataFrame(), []).worksheet()
    assert len(ws) == 1
    assert (ws["device"].iloc[0], ws["backend"].iloc[0], ws["n_gpu_layers"].iloc[0]) == \
        ("Vulkan0 (llvmpipe)", "Vulkan", -1)
    cpu = fake_rows(2)
    cpu["device"], cpu["backend"], cpu["n_gpu_layers"] = "CPU", "CPU", 0
    both = runner.BenchResult(pd.concat([rows, cpu.assign(run_id=cpu["run_id"] + "c")]),
                              pd.DataFrame(), []).worksheet()
    assert list(both["device"]) == ["Vulkan0 (llvmpipe)", "CPU"]     # two configs, not one


def test_memory_of_a_non_nvidia_gpu_comes_from_ggml(monkeypatch):
    monkeypatch.setattr(devices, "gpu_devices", lambda raw=None: [ROCM])
    monkeypatch.setattr(devices, "memory",
                        lambda names=None: [("ROCm0", 5 * GiB, 24 * GiB)] if "ROCm0" in names
                        else [])
    s = memory.MemorySampler(None, gpu=True)
    s._nvml, s._handles = None, []
    s.sample()
    s.sample()
    frame = s.frame()
    assert set(frame["kind"]) == {"gpu_device_used_ggml"} and len(frame) == 2
    value, label = memory.peak(frame)
    assert value == 5 * GiB and "ggml_backend_dev_memory" in label
    assert memory.peak(frame, prefer_gpu=False) == (None, "not measured")


def test_nvml_is_preferred_for_an_nvidia_device(monkeypatch):
    frame = pd.DataFrame([(0.0, "gpu_device_used_ggml", 0, 4 * GiB),
                          (0.0, "gpu_device_used", 0, 3 * GiB), (0.0, "rss", -1, GiB)],
                         columns=["t_s", "kind", "device", "bytes"])
    assert memory.peak(frame)[1].endswith("(NVML)")


def test_without_gpu_the_sampler_reads_no_device(monkeypatch):
    def boom(raw=None):
        raise AssertionError("a CPU run must not read the GPU")
    monkeypatch.setattr(devices, "gpu_devices", boom)
    s = memory.MemorySampler(None, gpu=False)
    s.sample()
    assert s.frame().empty


def test_a_driver_that_reports_no_memory_in_use_is_said_so():
    frame = pd.DataFrame([(0.0, "gpu_device_used_ggml", 0, 0), (0.2, "gpu_device_used_ggml", 0, 0),
                          (0.0, "rss", -1, GiB)], columns=["t_s", "kind", "device", "bytes"])
    assert memory.peak(frame) == (0.0, memory.NO_USE_REPORTED)


@pytest.mark.parametrize("label", [*memory.LABELS.values(), memory.NO_USE_REPORTED])
def test_every_memory_label_has_its_chinese(label):
    from labkit.lang.i18n import WORKSHEET_WORDS
    assert label in WORKSHEET_WORDS
