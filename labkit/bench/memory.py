"""Sample memory in the background while a run is going on.

Every ``interval_s`` (default 0.2 s, as the seed's ``nvidia-smi --loop-ms=200``) the sampler
records, when it can:

- ``gpu_device_used``: NVML ``memory.used`` of each GPU, the whole device, other processes
  included;
- ``gpu_process_used``: the server process's own GPU memory, when NVML lists it;
- ``gpu_device_used_ggml``: for a GPU device NVML does not cover (Metal, HIP, Vulkan, SYCL,
  or an NVIDIA card without NVML), ggml's ``ggml_backend_dev_memory``, total minus free, as
  this process's llama.cpp sees it (:mod:`labkit.engine.devices`): the whole device on CUDA,
  HIP and Vulkan; on Metal only what this process allocated;
- ``rss``: the resident memory of the server process and its children (psutil).

The peak of such samples is a **sampled peak**: a spike shorter than the interval can be
missed. Which kind the worksheet shows is said next to the number (:func:`peak`).
"""

from __future__ import annotations

import threading
import time

import pandas as pd

KINDS_PREFERRED = ("gpu_process_used", "gpu_device_used", "gpu_device_used_ggml", "rss")
GPU_KINDS = KINDS_PREFERRED[:3]
LABELS = {
    "gpu_process_used": "sampled peak GPU memory of the server process (NVML)",
    "gpu_device_used": "sampled peak GPU memory.used, whole device (NVML)",
    "gpu_device_used_ggml": "sampled peak GPU memory in use, total - free "
                            "(ggml_backend_dev_memory)",
    "rss": "sampled peak RSS of the server process (no GPU in use; psutil)",
}


NO_USE_REPORTED = ("GPU memory in use, total - free (ggml_backend_dev_memory): 0 in every "
                   "sample, this driver reports none in use")


class MemorySampler:
    """``with MemorySampler(pid) as m: ...`` then ``m.frame()``: one row per sample.

    ``pid`` may be None (an external server): then only GPU device memory is sampled.
    ``gpu=False`` skips the GPU (a CPU-only run); ``devices`` names the ggml devices to
    read through ggml (default: every GPU device NVML does not cover).
    """

    def __init__(self, pid: int | None, interval_s: float = 0.2, gpu: bool = True,
                 devices: tuple[str, ...] | None = None):
        self.pid, self.interval_s = pid, interval_s
        self.samples: list[tuple[float, str, int, int]] = []   # (t, kind, device, bytes)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml = None
        self._handles: list = []
        self._proc = None
        self.t0 = time.perf_counter()
        self._ggml: tuple[str, ...] = ()
        self._ggml_memory = None
        if gpu:
            self._init_nvml()
            self._init_ggml(devices)
        if pid is not None:
            try:
                import psutil
                self._proc = psutil.Process(pid)
            except Exception:
                self._proc = None

    def _init_nvml(self) -> None:
        try:
            import pynvml
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                             for i in range(pynvml.nvmlDeviceGetCount())]
            self._nvml = pynvml
        except Exception:
            self._nvml, self._handles = None, []

    def _init_ggml(self, names: tuple[str, ...] | None) -> None:
        try:
            from ..engine.devices import gpu_devices, memory
            found = gpu_devices()
        except Exception:   # no llama.cpp in this process: NVML and RSS only
            return
        nvml_covers = self._nvml is not None and self._handles
        self._ggml = tuple(d.name for d in found
                           if (names is None and not (nvml_covers and d.backend == "CUDA"))
                           or (names is not None and d.name in names))
        self._ggml_memory = memory

    def sample(self) -> None:
        t = time.perf_counter() - self.t0
        if self._ggml:
            try:
                for i, (_, used, _total) in enumerate(self._ggml_memory(self._ggml)):
                    self.samples.append((t, "gpu_device_used_ggml", i, int(used)))
            except Exception:
                pass
        if self._nvml is not None:
            for i, h in enumerate(self._handles):
                try:
                    self.samples.append((t, "gpu_device_used", i,
                                         int(self._nvml.nvmlDeviceGetMemoryInfo(h).used)))
                    if self.pid is not None:
                        pids = self._pids()
                        for p in self._nvml.nvmlDeviceGetComputeRunningProcesses(h):
                            if p.pid in pids and p.usedGpuMemory is not None:
                                self.samples.append((t, "gpu_process_used", i,
                                                     int(p.usedGpuMemory)))
                except Exception:
                    pass
        if self._proc is not None:
            try:
                rss = self._proc.memory_info().rss
                for c in self._proc.children(recursive=True):
                    try:
                        rss += c.memory_info().rss
                    except Exception:
                        pass
                self.samples.append((t, "rss", -1, int(rss)))
            except Exception:
                pass

    def _pids(self) -> set[int]:
        pids = {self.pid}
        if self._proc is not None:
            try:
                pids |= {c.pid for c in self._proc.children(recursive=True)}
            except Exception:
                pass
        return pids

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def start(self) -> "MemorySampler":
        self.t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, name="labkit-memory", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.sample()
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.samples, columns=["t_s", "kind", "device", "bytes"])


def peak(samples: pd.DataFrame, prefer_gpu: bool = True) -> tuple[float | None, str]:
    """(peak bytes, label) of the preferred kind present in ``samples``.

    With ``prefer_gpu`` the server's own GPU memory wins, then the device's (summed over
    devices per sample time), then RSS; without it, RSS only.
    """
    if samples is None or samples.empty:
        return None, "not measured"
    kinds = KINDS_PREFERRED if prefer_gpu else ("rss",)
    # ggml's figure is preferred to RSS only: NVML's, where there is one, comes first.
    for kind in kinds:
        s = samples[samples["kind"] == kind]
        if not s.empty:
            per_time = s.groupby("t_s")["bytes"].sum()
            if kind == "gpu_device_used_ggml" and per_time.max() == 0:
                # Some drivers (lavapipe) report their whole heap free whatever is allocated.
                return 0.0, NO_USE_REPORTED
            return float(per_time.max()), LABELS[kind]
    return None, "not measured"
