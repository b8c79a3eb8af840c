"""Thin, safe handles on llama.cpp's C API (through llama-cpp-python's ctypes layer).

The slot engine talks to llama.cpp directly rather than through
``llama_cpp.Llama``, because it needs what that class hides: several
sequences in one context (n_seq_max), the unified/split KV switch, one
llama_decode per step for all slots, and the per-sequence memory calls.

llama.cpp logs through one process-wide callback. labkit installs its own
once and routes each line to whoever is listening (a server's log file, a
test that wants to read the KV buffer size); with nobody listening, lines
are dropped so that notebooks stay clean.
"""

from __future__ import annotations

import ctypes
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import llama_cpp

# -ctk / -ctv names -> ggml type ids.
GGML_CACHE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7,
                    "q8_0": 8, "iq4_nl": 20, "bf16": 30}
# -fa on|off|auto -> llama_flash_attn_type.
FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}

_sinks: list = []
_sinks_lock = threading.Lock()
_installed = False


def _route(level, text, _user):
    line = text.decode("utf-8", errors="replace") if text else ""
    with _sinks_lock:
        sinks = list(_sinks)
    for sink in sinks:
        sink(line)


_CALLBACK = llama_cpp.llama_log_callback(_route)  # kept alive for the process lifetime


def install_log_router() -> None:
    """Route llama.cpp's log lines through labkit (idempotent)."""
    global _installed
    if not _installed:
        llama_cpp.llama_log_set(_CALLBACK, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        _installed = True


def add_log_sink(sink) -> None:
    install_log_router()
    with _sinks_lock:
        _sinks.append(sink)


def remove_log_sink(sink) -> None:
    with _sinks_lock:
        if sink in _sinks:
            _sinks.remove(sink)


@dataclass
class LogCapture:
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def kv_bytes(self) -> float:
        """KV buffer bytes llama.cpp reported allocating ("KV buffer size = X MiB"), summed
        over devices. llama.cpp prints MiB with two decimals, so this is exact to +-0.005 MiB."""
        sizes = re.findall(r"KV buffer size =\s*([0-9.]+) MiB", self.text)
        if not sizes:
            raise LookupError("llama.cpp logged no KV buffer size")
        return sum(float(s) for s in sizes) * 2**20


@contextmanager
def quiet_llama():
    """Capture llama.cpp's log lines while the block runs (and keep them off the screen)."""
    cap = LogCapture()
    add_log_sink(cap.lines.append)
    try:
        yield cap
    finally:
        remove_log_sink(cap.lines.append)


class LlamaModel:
    """A loaded GGUF model (weights only; contexts are made from it)."""

    def __init__(self, path: str, n_gpu_layers: int = 0, use_mmap: bool = True):
        install_log_router()
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = n_gpu_layers
        params.use_mmap = use_mmap
        self.path = str(path)
        self.ptr = llama_cpp.llama_model_load_from_file(self.path.encode(), params)
        if not self.ptr:
            raise RuntimeError(f"{path}: llama.cpp could not load this model")
        self.vocab = llama_cpp.llama_model_get_vocab(self.ptr)
        self.n_ctx_train = llama_cpp.llama_model_n_ctx_train(self.ptr)

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_model_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load_model(path, n_gpu_layers: int = 0) -> LlamaModel:
    return LlamaModel(str(path), n_gpu_layers)


class LlamaContext:
    """One llama_context: the KV cache plus the compute buffers, for n_seq_max sequences."""

    def __init__(self, model: LlamaModel, *, n_ctx: int, n_seq_max: int = 1,
                 kv_unified: bool = False, n_batch: int = 2048, n_ubatch: int = 512,
                 type_k: str = "f16", type_v: str = "f16", flash_attn: bool | str = "auto",
                 n_threads: int | None = None):
        p = llama_cpp.llama_context_default_params()
        p.n_ctx = n_ctx
        p.n_seq_max = n_seq_max
        p.kv_unified = kv_unified
        p.n_batch = n_batch
        p.n_ubatch = n_ubatch
        p.type_k = GGML_CACHE_TYPES[type_k]
        p.type_v = GGML_CACHE_TYPES[type_v]
        if isinstance(flash_attn, bool):
            flash_attn = "on" if flash_attn else "off"
        p.flash_attn_type = FLASH_ATTN[flash_attn]
        if n_threads:
            p.n_threads = p.n_threads_batch = n_threads
        p.no_perf = True
        self.model = model
        self.ptr = llama_cpp.llama_init_from_model(model.ptr, p)
        if not self.ptr:
            raise RuntimeError(
                f"llama.cpp could not create a context (n_ctx={n_ctx}, n_seq_max={n_seq_max}, "
                f"kv_unified={kv_unified}, cache {type_k}/{type_v}); the log says why")
        self.n_ctx = llama_cpp.llama_n_ctx(self.ptr)
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(self.ptr)
        self.n_seq_max = llama_cpp.llama_n_seq_max(self.ptr)
        self.n_batch = llama_cpp.llama_n_batch(self.ptr)
        self.n_ubatch = llama_cpp.llama_n_ubatch(self.ptr)
        self.memory = llama_cpp.llama_get_memory(self.ptr)

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def new_context(model: LlamaModel, **kwargs) -> LlamaContext:
    """Create a context; use it as ``with new_context(model, n_ctx=...) as ctx:``."""
    return LlamaContext(model, **kwargs)
