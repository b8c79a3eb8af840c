"""The GPU llama.cpp will use, from ggml's device registry (labkit.engine.devices), read by
doctor, the banner, the recipe and the notebooks' compute path. Every device here is made
up: no model is loaded and no GPU is needed."""

import sys

import pytest

from labkit import notebook
from labkit.engine import devices
from labkit.tools import doctor

GiB = 2**30
CPU = {"name": "CPU", "description": "Intel Xeon", "type": 0, "backend": "CPU",
       "free": 60 * GiB, "total": 64 * GiB}
LLVMPIPE = {"name": "Vulkan0", "description": "llvmpipe (LLVM 15.0.6, 256 bits)", "type": 1,
            "backend": "Vulkan", "free": 7 * GiB, "total": 8 * GiB}
METAL = {"name": "Metal", "description": "Apple M2", "type": 2, "backend": "Metal",
         "free": 10 * GiB, "total": 16 * GiB}
H200 = {"name": "CUDA0", "description": "NVIDIA H200", "type": 1, "backend": "CUDA",
        "free": 140 * GiB, "total": 141 * GiB}
BLAS = {"name": "BLAS", "description": "OpenBLAS", "type": 3, "backend": "BLAS",
        "free": 0, "total": 0}


def test_registry_types_and_software_devices():
    found = devices.devices([CPU, LLVMPIPE, METAL, BLAS])
    assert [d.type for d in found] == ["cpu", "gpu", "igpu", "accel"]
    assert [d.name for d in devices.gpu_devices([CPU, LLVMPIPE, METAL, BLAS])] == \
        ["Vulkan0", "Metal"]
    vk = found[1]
    assert vk.software and not found[2].software
    assert vk.memory_used_bytes == 1 * GiB
    assert vk.to_dict()["is_gpu"] and vk.to_dict()["backend"] == "Vulkan"
    assert devices.gpu_devices([CPU, BLAS]) == []


def test_the_real_registry_lists_the_cpu():
    pytest.importorskip("llama_cpp")
    found = devices.devices()
    assert any(d.type == "cpu" for d in found), found


def test_built_backends_from_library_names(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "registered_backends", lambda: ["CPU"])
    for name in ("libggml-base.so", "libggml-cpu.so", "libggml-vulkan.so.0"):
        (tmp_path / name).write_bytes(b"")
    assert devices.built_backends([tmp_path]) == ["Vulkan"]
    (tmp_path / "libggml-vulkan.so.0").unlink()
    assert devices.built_backends([tmp_path]) == []


@pytest.mark.parametrize("ngl, n_layer, fraction", [(-1, 30, 1.0), (999, 30, 1.0), (30, 30, 1.0),
                                                   (15, 30, 0.5), (0, 30, 0.0)])
def test_offloaded_fraction(ngl, n_layer, fraction):
    assert devices.offloaded_fraction(ngl, n_layer) == fraction


def test_fit_names_both_sizes_or_lets_it_load():
    gpu = devices.gpu_devices([LLVMPIPE])        # 7 GiB free
    assert devices.fit(6 * GiB, -1, 30, gpu) is None
    big = devices.fit(9 * GiB, -1, 30, gpu)
    assert (big.need_bytes, big.free_bytes, big.devices) == (9 * GiB, 7 * GiB, ("Vulkan0",))
    assert devices.fit(9 * GiB, 15, 30, gpu) is None           # half the layers: 4.5 GiB
    assert devices.fit(9 * GiB, 0, 30, gpu) is None            # the CPU
    assert devices.fit(9 * GiB, -1, 30, []) is None            # no GPU device: the CPU


def test_a_model_larger_than_the_device_is_refused_before_loading(model_path):
    tiny = devices.gpu_devices([{**LLVMPIPE, "free": 10 * 2**20, "total": 16 * 2**20}])
    with pytest.raises(devices.ModelTooLarge) as err:
        devices.refuse_if_too_large(model_path, -1, tiny)
    text = str(err.value)
    assert "10 MiB" in text and "Vulkan0" in text and model_path in text
    assert f"{err.value.fit.need_bytes / 2**20:,.0f} MiB" in text
    devices.refuse_if_too_large(model_path, 0, tiny)            # -ngl 0: nothing offloaded
    devices.refuse_if_too_large(model_path, -1, devices.gpu_devices([LLVMPIPE]))


def _build(*raw, offload=True, backends=("Vulkan",)):
    found = devices.devices(list(raw))
    return {"ok": True, "version": "0.3.36", "gpu_offload": offload,
            "devices": [f"{d.name} ({d.description})" for d in found],
            "gpu_devices": [d.to_dict() for d in found if d.is_gpu],
            "gpu_backends": list(backends), "llama_cpp_source": None, "system_info": ""}


def _report(monkeypatch, build, nvidia=(), nvml_note="the nvidia-ml-py package is not "
            "installed (pip install nvidia-ml-py)"):
    from labkit.machine import gpu as nvml
    monkeypatch.setattr(doctor, "llama_build", lambda: build)
    monkeypatch.setattr(doctor, "list_gpus",
                        lambda: (list(nvidia), None if nvidia else nvml_note))
    return doctor.collect(generate=False)


def test_no_nvml_and_a_ggml_gpu_device_take_the_gpu_path(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)       # NVML absent
    r = _report(monkeypatch, _build(CPU, LLVMPIPE))
    assert r["path"] == "gpu" and r["gpu_note"] is None
    (g,) = r["gpus"]
    assert (g["device"], g["backend"], g["memory_total_bytes"], g["memory_source"]) == \
        ("Vulkan0", "Vulkan", 8 * GiB, "ggml")
    path = notebook.compute_path(r)
    assert path["path"] == "gpu" and path["n_gpu_layers"] == 999 and "Vulkan0" in path["why"]
    text = doctor.render(r)
    assert "Vulkan0 llvmpipe" in text and "8,192 MiB" in text and "software device" in text
    assert "gpu: llama.cpp offloads every layer to Vulkan0" in text
    banner = notebook.banner_text(r)
    assert "Vulkan0 llvmpipe" in banner and "software device" in banner
    rec = notebook.recipe(report=r)
    assert rec["compute_path"] == "gpu" and rec["gpus"][0].startswith("Vulkan0 llvmpipe")


def test_metal_counts_as_a_gpu(monkeypatch):
    r = _report(monkeypatch, _build(METAL, CPU, backends=("Metal",)))
    assert notebook.compute_path(r)["path"] == "gpu"


def test_an_offloading_build_that_sees_no_device_says_what_to_do(monkeypatch):
    r = _report(monkeypatch, _build(CPU))
    path = notebook.compute_path(r)
    assert path["path"] == "cpu" and path["n_gpu_layers"] == 0
    assert "sees no GPU device" in path["why"] and "GGML_VK_VISIBLE_DEVICES=0" in path["why"]
    assert "Traceback" not in doctor.render(r)
    r = _report(monkeypatch, _build(CPU, backends=("CUDA",)))
    assert "nvidia-smi" in notebook.compute_path(r)["why"]
    # llama_supports_gpu_offload() is false without a device: the built backend says it can
    r = _report(monkeypatch, _build(CPU, offload=False))
    assert "sees no GPU device" in notebook.compute_path(r)["why"]


def test_a_device_too_small_for_the_model_means_the_cpu_naming_both_sizes(monkeypatch):
    small = {**LLVMPIPE, "free": 20 * 2**20, "total": 32 * 2**20}
    r = _report(monkeypatch, _build(CPU, small))
    path = notebook.compute_path(r)
    assert path["path"] == "cpu"
    assert "20 MiB" in path["why"] and "Vulkan0" in path["why"]
    assert f"{r['model']['size_bytes'] / 2**20:,.0f} MiB" in path["why"]


def test_nvml_adds_name_driver_and_memory_to_a_cuda_device(monkeypatch):
    from labkit.machine.gpu import GPU
    card = GPU(0, "NVIDIA H200", 141 * GiB, 3 * GiB, "570.1")
    r = _report(monkeypatch, _build(CPU, H200, backends=("CUDA",)), nvidia=[card])
    (g,) = r["gpus"]
    assert (g["driver"], g["memory_used_bytes"], g["memory_source"]) == \
        ("570.1", 3 * GiB, "nvml")
    assert "nvml_note" not in r


def test_nvml_missing_on_an_nvidia_machine_is_one_line_and_keeps_the_gpu(monkeypatch):
    r = _report(monkeypatch, _build(CPU, H200, backends=("CUDA",)))
    assert r["path"] == "gpu" and "nvidia-ml-py" in r["nvml_note"]
    assert r["gpus"][0]["memory_source"] == "ggml"
    nvml_lines = [ln for ln in doctor.render(r).splitlines() if "pip install nvidia-ml-py" in ln]
    assert len(nvml_lines) == 1 and nvml_lines[0].startswith("NVML ")


def test_a_cpu_build_beside_an_nvidia_gpu_says_how_to_rebuild(monkeypatch):
    from labkit.machine.gpu import GPU
    card = GPU(0, "NVIDIA H200", 141 * GiB, 3 * GiB, "570.1")
    r = _report(monkeypatch, _build(CPU, offload=False, backends=()), nvidia=[card])
    path = notebook.compute_path(r)
    assert path["path"] == "cpu" and "DGGML_CUDA=on" in path["why"]


def test_skip_without_gpu_says_why_or_fails_in_the_gpu_lane(monkeypatch, capsys):
    monkeypatch.setattr(notebook, "compute_path",
                        lambda report=None: {"path": "cpu", "why": "a CPU build"})
    monkeypatch.delenv("LABKIT_REQUIRE_GPU", raising=False)
    assert notebook.skip_without_gpu("the GPU sweep") is False
    out = capsys.readouterr().out
    assert "skipped: the GPU sweep" in out and "a CPU build" in out
    monkeypatch.setenv("LABKIT_REQUIRE_GPU", "1")
    with pytest.raises(RuntimeError, match="LABKIT_REQUIRE_GPU.*the GPU sweep.*a CPU build"):
        notebook.skip_without_gpu("the GPU sweep")
    monkeypatch.setattr(notebook, "compute_path", lambda report=None: {"path": "gpu", "why": ""})
    assert notebook.skip_without_gpu("the GPU sweep") is True


def test_a_software_gpus_bandwidth_is_the_cpus(monkeypatch):
    from labkit.costs import roofline

    def no_nvml(index=0):
        raise RuntimeError("no NVIDIA GPU found (NVML: not found)")
    monkeypatch.setattr(roofline, "nvml_peak_bandwidth", no_nvml)
    monkeypatch.setattr(roofline, "measure_bandwidth", lambda nbytes, repeats, threads: 12e9)
    monkeypatch.setattr(roofline, "_software_gpu", lambda: "Vulkan0 (llvmpipe)")
    m = roofline.measure_machine(gpu=True, keep=False)
    assert m.bandwidth == 12e9 and m.bandwidth_source["kind"] == "software-device"
    assert "software device" in roofline.source_text(m.bandwidth_source)
    monkeypatch.setattr(roofline, "_software_gpu", lambda: None)     # a real GPU without NVML
    with pytest.raises(RuntimeError, match="NVML"):
        roofline.measure_machine(gpu=True, keep=False)


@pytest.mark.parametrize("gpus, expected", [
    ([dict(device="Vulkan0", name="llvmpipe (LLVM 15.0.6, 256 bits)", software=True)], "small"),
    ([dict(device="CUDA0", name="NVIDIA H200", software=False)], "usual"),
    ([], "usual"),
])
def test_a_gpu_cell_runs_a_smaller_size_on_a_software_device_and_says_so(gpus, expected,
                                                                         monkeypatch, capsys):
    monkeypatch.setattr(notebook, "compute_path", lambda: {"path": "gpu" if gpus else "cpu",
                                                           "gpus": gpus})
    assert notebook.gpu_size("small", "usual") == expected
    said = capsys.readouterr().out
    if expected == "small":
        assert "Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) is a software device" in said
        assert "not a GPU's" in said
    else:
        assert said == ""


def test_software_device_is_the_first_gpu_device_when_it_is_a_software_one():
    assert devices.software_device(devices.gpu_devices([CPU, LLVMPIPE])).name == "Vulkan0"
    assert devices.software_device(devices.gpu_devices([CPU, H200, LLVMPIPE])) is None
    assert devices.software_device([]) is None
