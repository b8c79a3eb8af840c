"""What NVIDIA GPUs this machine has, through NVML (the `nvidia-ml-py` package).

Every function here works on a machine without a GPU, without a driver and
without the package: it says so instead of raising, in the language in use (LABKIT_LANG).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..lang.i18n import pick


@dataclass(frozen=True)
class GPU:
    index: int
    name: str
    memory_total_bytes: int
    memory_used_bytes: int
    driver: str

    def to_dict(self) -> dict:
        return asdict(self)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def list_gpus() -> tuple[list[GPU], str | None]:
    """(the GPUs NVML sees, None) or ([], why none could be listed)."""
    try:
        import pynvml
    except ImportError:
        return [], pick("the nvidia-ml-py package is not installed (pip install nvidia-ml-py)",
                        "沒有安裝 nvidia-ml-py 套件（pip install nvidia-ml-py）")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        why = _text(exc) or type(exc).__name__
        return [], pick(f"no NVIDIA GPU found (NVML: {why})", f"找不到 NVIDIA GPU（NVML：{why}）")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            gpus.append(GPU(i, _text(pynvml.nvmlDeviceGetName(h)), int(mem.total),
                            int(mem.used), driver))
        return gpus, (None if gpus else pick("NVML is present but reports no NVIDIA GPU",
                                             "有 NVML，但它回報沒有 NVIDIA GPU"))
    except Exception as exc:
        return [], pick(f"NVML failed while listing GPUs: {_text(exc)}",
                        f"NVML 列出 GPU 時失敗：{_text(exc)}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
