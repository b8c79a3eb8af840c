"""EngineConfig: the knobs of one slot engine, named after llama-server's flags.

Every field maps to a llama-server command-line flag, so a learner can read a
server command line and build the same engine in a notebook:

==========================  ==========================================
EngineConfig field          llama-server flag
==========================  ==========================================
n_ctx                       ``-c, --ctx-size``
n_slots                     ``-np, --parallel`` ("auto" = 4 slots + unified KV)
kv_unified                  ``--kv-unified`` / ``--no-kv-unified``
kv_unified_per_slot         ``--kv-unified-per-slot``
n_batch / n_ubatch          ``-b`` / ``-ub``
type_k / type_v             ``-ctk`` / ``-ctv``  (f16, q8_0, q4_0, ...)
flash_attn                  ``-fa on|off|auto``
n_gpu_layers                ``-ngl``
n_threads                   ``-t``
cont_batching               ``--cont-batching`` / ``--no-cont-batching``
==========================  ==========================================

Two fields are labkit's own: ``reserve`` (admit a request only when its whole
prompt + max_tokens fits in the free KV cells) and ``max_queue`` (refuse new
requests at once when that many already wait for a slot).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .native import FLASH_ATTN, GGML_CACHE_TYPES

# llama-server's "-np auto": this many slots, sharing one unified KV pool.
AUTO_SLOTS = 4


def default_threads() -> int:
    """CPU threads llama.cpp should use: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class EngineConfig:
    """How to build an :class:`~labkit.engine.Engine`.

    ``n_slots`` is the number of requests served at once (llama.cpp sequences).
    ``kv_unified=None`` follows llama-server: unified KV only when
    ``n_slots="auto"``; an explicit slot count keeps one KV stripe per slot
    (split KV) unless ``kv_unified=True`` is given.

    ``reserve=False`` (the default) is llama-server's behaviour: admit a request
    as soon as a slot is free, and if the shared (unified) KV pool later runs
    out, retry the step with smaller batches and finally fail the request that
    cannot fit. ``reserve=True`` admits a request only when
    ``prompt + max_tokens`` cells are free, so the pool can never run out.
    """

    model_path: str
    n_ctx: int = 4096
    n_slots: int | str = 1
    kv_unified: bool | None = None
    kv_unified_per_slot: int | None = None
    n_batch: int = 2048
    n_ubatch: int = 512
    type_k: str = "f16"
    type_v: str = "f16"
    flash_attn: str = "auto"
    n_gpu_layers: int = 0
    n_threads: int | None = None
    cont_batching: bool = True
    reserve: bool = False
    max_queue: int | None = None

    def __post_init__(self):
        self.model_path = str(self.model_path)
        if isinstance(self.n_slots, str):
            if self.n_slots != "auto":
                raise ValueError(f"n_slots must be a positive int or 'auto', got {self.n_slots!r}")
        elif self.n_slots < 1:
            raise ValueError(f"n_slots must be at least 1, got {self.n_slots}")
        if self.n_ctx < 1:
            raise ValueError(f"n_ctx must be positive, got {self.n_ctx}")
        if self.n_batch < 1 or self.n_ubatch < 1:
            raise ValueError("n_batch and n_ubatch must be positive")
        for name in ("type_k", "type_v"):
            if getattr(self, name) not in GGML_CACHE_TYPES:
                raise ValueError(f"{name}={getattr(self, name)!r}: choose one of "
                                 f"{', '.join(GGML_CACHE_TYPES)}")
        if isinstance(self.flash_attn, bool):
            self.flash_attn = "on" if self.flash_attn else "off"
        if self.flash_attn not in FLASH_ATTN:
            raise ValueError(f"flash_attn must be on, off or auto, got {self.flash_attn!r}")
        if self.max_queue is not None and self.max_queue < 0:
            raise ValueError(f"max_queue must be >= 0, got {self.max_queue}")

    @property
    def slots(self) -> int:
        """The number of slots after resolving "auto"."""
        return AUTO_SLOTS if self.n_slots == "auto" else int(self.n_slots)

    @property
    def unified(self) -> bool:
        """Whether the KV cache is one shared pool (llama-server's rule for None)."""
        if self.kv_unified is None:
            return self.n_slots == "auto"
        return bool(self.kv_unified)

    @property
    def threads(self) -> int:
        return self.n_threads or default_threads()
