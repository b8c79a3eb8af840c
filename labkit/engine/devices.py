"""The compute devices llama.cpp will use, asked of llama.cpp itself.

ggml keeps one registry of devices for every backend it was built with (CUDA, Metal, HIP,
Vulkan, SYCL, the CPU): ``ggml_backend_dev_count/get/name/description/type/memory``. This
module reads that registry through the library llama-cpp-python loaded, so it answers the
same on a Mac (Metal), an NVIDIA card (CUDA), an AMD card (HIP or Vulkan) or a software
Vulkan driver (Mesa's lavapipe, which names itself ``llvmpipe``). NVML, where there is one,
only adds what it knows about NVIDIA devices (:mod:`labkit.machine.gpu`); the question
"which GPU will llama.cpp use" is answered here.

Everything here is data: :mod:`labkit.tools.doctor` and :mod:`labkit.notebook` choose the
words. The C calls are made in :func:`registry` alone, so tests replace it with made-up
devices.

ggml's Vulkan backend leaves out devices whose Vulkan type is "CPU" (a software driver)
unless ``GGML_VK_VISIBLE_DEVICES`` names them; with ``GGML_VK_VISIBLE_DEVICES=0`` lavapipe
is device ``Vulkan0``.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import asdict, dataclass
from pathlib import Path

#: ggml_backend_dev_type, in the order of ggml-backend.h.
TYPES = ("cpu", "gpu", "igpu", "accel", "meta")
#: The types llama.cpp offloads layers to.
GPU_TYPES = ("gpu", "igpu")
#: Names in a device's description that mark a driver running on the CPU (Mesa's lavapipe,
#: Google's SwiftShader): a working GPU device, not a fast one.
SOFTWARE_NAMES = ("llvmpipe", "lavapipe", "swiftshader", "softpipe")
#: The GPU backends llama.cpp can be built with, as their libraries are named
#: (``libggml-vulkan.so``) and as ggml's registry names them.
GPU_BACKENDS = {"cuda": "CUDA", "metal": "Metal", "hip": "ROCm", "vulkan": "Vulkan",
                "sycl": "SYCL", "opencl": "OpenCL", "musa": "MUSA", "cann": "CANN",
                "webgpu": "WebGPU"}
#: Where labkit offloads "every layer" (llama.cpp: any negative -ngl, or more than the model has).
ALL_LAYERS = -1


@dataclass(frozen=True)
class Device:
    """One device of ggml's registry."""

    index: int                  # its place in ggml's registry (over all backends)
    name: str                   # ggml's name: CUDA0, Metal, Vulkan0, CPU
    description: str            # what the backend says it is: "NVIDIA H200", "llvmpipe (...)"
    type: str                   # one of TYPES
    backend: str                # the registry holding it: CUDA, Metal, Vulkan, ROCm, SYCL, CPU
    memory_total_bytes: int
    memory_free_bytes: int

    @property
    def is_gpu(self) -> bool:
        return self.type in GPU_TYPES

    @property
    def software(self) -> bool:
        """A driver that runs on the CPU (lavapipe, SwiftShader): its figures are not a GPU's."""
        return any(s in self.description.lower() for s in SOFTWARE_NAMES)

    @property
    def memory_used_bytes(self) -> int:
        return max(0, self.memory_total_bytes - self.memory_free_bytes)

    def to_dict(self) -> dict:
        return {**asdict(self), "is_gpu": self.is_gpu, "software": self.software,
                "memory_used_bytes": self.memory_used_bytes}


def _lib():
    import llama_cpp
    return llama_cpp.llama_cpp._lib     # the loaded libllama, linked to libggml


def _bind(g) -> None:
    g.ggml_backend_dev_count.restype = ctypes.c_size_t
    g.ggml_backend_dev_get.restype = ctypes.c_void_p
    g.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    for f in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(g, f).restype = ctypes.c_char_p
        getattr(g, f).argtypes = [ctypes.c_void_p]
    g.ggml_backend_dev_type.restype = ctypes.c_int
    g.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    g.ggml_backend_dev_memory.restype = None
    g.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                          ctypes.POINTER(ctypes.c_size_t)]
    g.ggml_backend_dev_backend_reg.restype = ctypes.c_void_p
    g.ggml_backend_dev_backend_reg.argtypes = [ctypes.c_void_p]
    g.ggml_backend_reg_name.restype = ctypes.c_char_p
    g.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    g.ggml_backend_reg_count.restype = ctypes.c_size_t
    g.ggml_backend_reg_get.restype = ctypes.c_void_p
    g.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]


def _text(b) -> str:
    return b.decode(errors="replace") if b else ""


def registry() -> list[dict]:
    """ggml's devices as plain dicts (name, description, type code, backend, free, total),
    read now (free memory changes). [] when the library does not export the registry."""
    try:
        g = _lib()
        _bind(g)
        out = []
        for i in range(g.ggml_backend_dev_count()):
            d = g.ggml_backend_dev_get(i)
            free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
            g.ggml_backend_dev_memory(d, ctypes.byref(free), ctypes.byref(total))
            out.append({"name": _text(g.ggml_backend_dev_name(d)),
                        "description": _text(g.ggml_backend_dev_description(d)),
                        "type": int(g.ggml_backend_dev_type(d)),
                        "backend": _text(g.ggml_backend_reg_name(g.ggml_backend_dev_backend_reg(d))),
                        "free": int(free.value), "total": int(total.value)})
        return out
    except (AttributeError, OSError, ImportError):
        return []


def registered_backends() -> list[str]:
    """The backends ggml registered (``CPU``, ``Vulkan``...): one that failed to start (a
    Vulkan driver that did not initialise) is missing here though it was built."""
    try:
        g = _lib()
        _bind(g)
        return [_text(g.ggml_backend_reg_name(g.ggml_backend_reg_get(i)))
                for i in range(g.ggml_backend_reg_count())]
    except (AttributeError, OSError, ImportError):
        return []


def library_folders() -> list[Path]:
    """Where llama-cpp-python's libraries are ($LLAMA_CPP_LIB_PATH, or beside the package)."""
    try:
        import llama_cpp
    except ImportError:
        return []
    here = Path(llama_cpp.__file__).parent
    own = os.environ.get("LLAMA_CPP_LIB_PATH")
    return ([Path(own)] if own else []) + [here / "lib", here.parent / "lib"]


def built_backends(folders: list[Path] | None = None) -> list[str]:
    """The GPU backends this llama.cpp was built with, from its libraries'
    names (``libggml-vulkan.so`` -> ``Vulkan``) and ggml's registry."""
    found = set()
    for folder in library_folders() if folders is None else folders:
        for lib in folder.glob("*ggml-*"):
            key = lib.name.split("ggml-", 1)[1].split(".", 1)[0].lower()
            if key in GPU_BACKENDS:
                found.add(GPU_BACKENDS[key])
    found |= {b for b in registered_backends() if b in GPU_BACKENDS.values()}
    return sorted(found)


def devices(raw: list[dict] | None = None) -> list[Device]:
    """Every device ggml registered (:func:`registry`, or ``raw`` in its shape)."""
    raw = registry() if raw is None else raw
    return [Device(i, r["name"], r["description"],
                   TYPES[r["type"]] if 0 <= r["type"] < len(TYPES) else f"type{r['type']}",
                   r["backend"], r["total"], r["free"])
            for i, r in enumerate(raw)]


def gpu_devices(raw: list[dict] | None = None) -> list[Device]:
    """The devices llama.cpp offloads layers to (type gpu or igpu)."""
    return [d for d in devices(raw) if d.is_gpu]


def software_device(gpus: list[Device] | None = None) -> Device | None:
    """The GPU device llama.cpp uses first, when it is a software one (Mesa's lavapipe, shown as
    ``llvmpipe``): a GPU to llama.cpp that computes on the CPU. None for a real GPU or none."""
    gpus = gpu_devices() if gpus is None else gpus
    return gpus[0] if gpus and gpus[0].software else None


def memory(names: tuple[str, ...] | None = None) -> list[tuple[str, int, int]]:
    """(name, used bytes, total bytes) of each GPU device, or of those named: ggml's total
    minus free. On a device shared with other programs this is the whole device's use."""
    return [(d.name, d.memory_used_bytes, d.memory_total_bytes) for d in gpu_devices()
            if names is None or d.name in names]


def free_bytes(gpus: list[Device] | None = None) -> int | None:
    """The GPU devices' free memory summed, as llama.cpp sees it; None without a GPU device
    that reports its memory."""
    gpus = [d for d in (gpu_devices() if gpus is None else gpus) if d.memory_total_bytes > 0]
    return sum(d.memory_free_bytes for d in gpus) if gpus else None


def resolve_to_load(model, n_gpu_layers=0) -> Path:
    """The file of ``model`` (:func:`labkit.models.files.resolve_model`) for a caller about to
    load it with ``n_gpu_layers`` offloaded: a synthetic model is first checked against the
    GPU devices' free memory as llama.cpp sees them (CUDA, Metal, HIP, Vulkan alike), or the
    RAM when nothing is offloaded, before its file is written."""
    from ..models.files import ENV_MODEL, SYNTHETIC_PREFIX, resolve_model
    offloads = n_gpu_layers not in (0, "0", None)
    synthetic = str(model or os.environ.get(ENV_MODEL) or "").startswith(SYNTHETIC_PREFIX)
    free = free_bytes() if offloads and synthetic else None
    return resolve_model(model, load=True, n_gpu_layers=n_gpu_layers, gpu_free_bytes=free)


def offloaded_fraction(n_gpu_layers, n_layer: int) -> float:
    """Which part of a model's layers ``-ngl`` puts on the GPU: negative means all (llama.cpp's
    rule); llama.cpp also puts the output layer there once every block is, counted as whole."""
    n = int(n_gpu_layers)
    if n < 0 or n >= n_layer:
        return 1.0
    return max(0, n) / max(1, n_layer)


@dataclass(frozen=True)
class DoesNotFit:
    """A model too large for the GPU devices' free memory (sizes in bytes)."""

    model: str
    need_bytes: int
    free_bytes: int
    devices: tuple[str, ...]


def fit(model_bytes: int, n_gpu_layers, n_layer: int,
        gpus: list[Device] | None = None) -> DoesNotFit | None:
    """Does the offloaded part of a model's weights fit in the GPU devices' free memory?
    None when it does, or when nothing is offloaded or no GPU device is there (llama.cpp
    then keeps the layers on the CPU); else what does not fit."""
    if n_gpu_layers in (0, "0", None):
        return None
    gpus = gpu_devices() if gpus is None else gpus
    gpus = [d for d in gpus if d.memory_total_bytes > 0]
    if not gpus:
        return None
    need = int(model_bytes * offloaded_fraction(n_gpu_layers, n_layer))
    free = sum(d.memory_free_bytes for d in gpus)
    return DoesNotFit("", need, free, tuple(d.name for d in gpus)) if need > free else None


class ModelTooLarge(RuntimeError):
    """The offloaded part of a model does not fit in the GPU devices' free memory; raised
    before llama.cpp is asked to load it. ``fit`` holds both sizes."""

    def __init__(self, fit: DoesNotFit):
        from ..lang.i18n import t
        self.fit = fit
        super().__init__(t("gpu.refused", model=fit.model, need=_mib(fit.need_bytes),
                           free=_mib(fit.free_bytes), devices=", ".join(fit.devices)))


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def refuse_if_too_large(path, n_gpu_layers, gpus: list[Device] | None = None) -> None:
    """Raise :class:`ModelTooLarge` when the layers ``n_gpu_layers`` sends to the GPU need
    more than its free memory (the file's bytes in proportion to the layers offloaded)."""
    if n_gpu_layers in (0, "0", None):
        return
    gpus = gpu_devices() if gpus is None else gpus
    if not gpus:
        return
    from ..models.files import describe
    try:
        info = describe(path, with_hash=False)
    except Exception:   # not a GGUF labkit can read: llama.cpp says what is wrong with it
        return
    too_large = fit(info.size_bytes, n_gpu_layers, info.n_layer, gpus)
    if too_large:
        raise ModelTooLarge(DoesNotFit(str(path), too_large.need_bytes, too_large.free_bytes,
                                       too_large.devices))
