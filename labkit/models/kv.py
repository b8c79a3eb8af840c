"""KV-cache arithmetic: bytes per token, and how llama.cpp splits a context among slots.

Restaurant version: every guest at a table leaves notes (the KV cache, 已讀筆記)
so the cook need not reread the whole order at each step. The notes take room on
the table top (the context, 桌面). This module says how many bytes one token's
notes take, and how much table top each slot (窗口) gets.

Engineer version: for every layer, attention keeps one key and one value vector
per KV head per token, so

    bytes per token = 2 x n_layer x n_head_kv x head_dim x bytes per value

and llama.cpp sizes the per-sequence context (n_ctx_seq) and llama-server's
per-slot cap (n_ctx_slot) with the rules in :func:`slot_context`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

# Bytes per stored value for llama.cpp's KV cache types (-ctk / -ctv). Quantized
# types store blocks of 32 values: q8_0 is 32 int8 + one f16 scale = 34 bytes,
# q4_0 is 32 nibbles + one f16 scale = 18 bytes.
BYTES_PER_VALUE: dict[str, Fraction] = {
    "f32": Fraction(4),
    "f16": Fraction(2),
    "bf16": Fraction(2),
    "q8_0": Fraction(34, 32),
    "q5_1": Fraction(24, 32),
    "q5_0": Fraction(22, 32),
    "q4_1": Fraction(20, 32),
    "q4_0": Fraction(18, 32),
    "iq4_nl": Fraction(18, 32),
}

# llama.cpp rounds context sizes up to a multiple of this many cells.
N_CTX_PAD = 256


def bytes_per_value(cache_type: str) -> Fraction:
    try:
        return BYTES_PER_VALUE[cache_type.lower()]
    except KeyError:
        raise ValueError(
            f"unknown KV cache type {cache_type!r}; choose one of {', '.join(BYTES_PER_VALUE)}"
        ) from None


def bytes_per_token(n_layer: int, n_head_kv: int, head_dim: int,
                    type_k: str = "f16", type_v: str | None = None) -> float:
    """KV bytes one token occupies across all layers (keys plus values).

    >>> bytes_per_token(32, 8, 128)          # the seeds' 8B example, f16
    131072.0
    """
    type_v = type_k if type_v is None else type_v
    per_layer = n_head_kv * head_dim * (bytes_per_value(type_k) + bytes_per_value(type_v))
    return float(n_layer * per_layer)


def model_bytes_per_token(info, type_k: str = "f16", type_v: str | None = None) -> float:
    """:func:`bytes_per_token` for a :class:`labkit.models.files.ModelInfo`."""
    return bytes_per_token(info.n_layer, info.n_head_kv, info.head_dim, type_k, type_v)


def pad(n: int, multiple: int = N_CTX_PAD) -> int:
    """Round n up to a multiple (llama.cpp's GGML_PAD)."""
    return -(-n // multiple) * multiple


@dataclass(frozen=True)
class SlotContext:
    """How a context of n_ctx cells is shared among n_slots sequences."""

    n_ctx: int          # total KV cells llama.cpp allocates (after padding)
    n_ctx_seq: int      # the most cells one sequence may use
    n_ctx_slot: int     # llama-server's per-slot cap: what a request may fill
    n_slots: int
    kv_unified: bool

    @property
    def mode(self) -> str:
        return "unified" if self.kv_unified else "split"


def slot_context(n_ctx: int, n_slots: int, kv_unified: bool, *,
                 n_ctx_train: int | None = None, per_slot: int | None = None) -> SlotContext:
    """Mirror llama.cpp's context sizing for n_slots parallel sequences.

    - n_ctx is rounded up to a multiple of 256.
    - Split KV: each sequence gets its own stripe, n_ctx_seq = pad256(n_ctx / n_slots),
      and the total becomes n_ctx_seq x n_slots.
    - Unified KV: all sequences share one pool, so n_ctx_seq = n_ctx.
    - llama-server's per-slot cap: n_ctx_slot = min(n_ctx_seq, --kv-unified-per-slot
      if given, the model's training context).

    >>> slot_context(16384, 4, False)
    SlotContext(n_ctx=16384, n_ctx_seq=4096, n_ctx_slot=4096, n_slots=4, kv_unified=False)
    """
    if n_slots < 1:
        raise ValueError(f"n_slots must be at least 1, got {n_slots}")
    if n_ctx < 1:
        raise ValueError(f"n_ctx must be positive, got {n_ctx}")
    n_ctx = pad(n_ctx)
    if kv_unified:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = pad(n_ctx // n_slots)
        n_ctx = n_ctx_seq * n_slots
    cap = n_ctx_seq
    if per_slot is not None:
        cap = min(cap, per_slot)
    if n_ctx_train:
        cap = min(cap, n_ctx_train)
    return SlotContext(n_ctx, n_ctx_seq, cap, n_slots, kv_unified)


def server_pool(n_ctx: int, n_slots: int, *, n_ctx_train: int | None = None,
                per_slot: int | None = None) -> int:
    """The context size llama-server asks llama.cpp for, before padding.

    - ``-c N`` (N > 0): N, whatever ``--kv-unified-per-slot`` says (the cap then only limits
      each slot; a cap above the slot's stripe or pool has no effect, and the log warns).
    - ``-c 0`` (or no ``-c``) with ``--kv-unified-per-slot N``: ``n_slots x N`` (the log says
      "sizing KV pool to n_parallel * kv_unified_per_slot").
    - ``-c 0`` otherwise: the model's training context.

    Measured on llama-server (the xllamacpp wheel, 2026-11-30): ``-c 0 -np 2
    --kv-unified-per-slot 1024`` sizes a pool of 2048 cells, ``-c 4096`` with the same cap
    keeps 4096, split or unified alike.

    >>> server_pool(0, 2, per_slot=1024), server_pool(4096, 2, per_slot=1024)
    (2048, 4096)
    """
    if n_ctx < 0:
        raise ValueError(f"n_ctx must be >= 0, got {n_ctx}")
    if n_ctx:
        return n_ctx
    if per_slot:
        return n_slots * per_slot
    if not n_ctx_train:
        raise ValueError("-c 0 takes the model's training context: pass n_ctx_train")
    return n_ctx_train


def server_slot_context(n_ctx: int, n_slots: int, kv_unified: bool, *,
                        n_ctx_train: int | None = None,
                        per_slot: int | None = None) -> SlotContext:
    """:func:`slot_context` for llama-server's flags as given, ``-c 0`` included: the pool is
    :func:`server_pool`, then padded and shared as llama.cpp does.

    >>> server_slot_context(0, 3, True, per_slot=1000, n_ctx_train=8192)
    SlotContext(n_ctx=3072, n_ctx_seq=3072, n_ctx_slot=1000, n_slots=3, kv_unified=True)
    """
    pool = server_pool(n_ctx, n_slots, n_ctx_train=n_ctx_train, per_slot=per_slot)
    return slot_context(pool, n_slots, kv_unified, n_ctx_train=n_ctx_train, per_slot=per_slot)


def kv_cache_bytes(info, n_ctx: int, type_k: str = "f16", type_v: str | None = None) -> float:
    """Bytes llama.cpp's KV cache should take for n_ctx cells of this model."""
    return model_bytes_per_token(info, type_k, type_v) * n_ctx
