"""Notebook 04 (split vs unified): padding, the training cap, -np auto, reservations."""

from __future__ import annotations

from .. import catalog, kv
from . import as_number, exercise

# The embedded model's training context, from the catalogue (its file says the same).
SMOLLM2_N_CTX_TRAIN = catalog.get("smollm2-135m").n_ctx_train


def _tuple(answer, n):
    if not isinstance(answer, (tuple, list)) or len(answer) != n:
        raise ValueError(f"expected a tuple of {n} values")
    return tuple(answer)


@exercise("4.1", "SmolLM2 was trained on 8192 tokens. With -c 16384 -np 1 (split KV), what "
                 "n_ctx_slot does the server report?")
def _train_cap(answer):
    want = kv.slot_context(16384, 1, False, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    v = as_number(answer)
    if v == want:
        return True, ""
    if v == 16384:
        return False, "llama.cpp allocates 16384 cells, but the per-slot cap is also limited by n_ctx_train"
    return False, "n_ctx_slot = min(n_ctx_seq, n_ctx_train)"


@exercise("4.2", "-c 1000 -np 3, split KV: what are n_ctx and n_ctx_seq after llama.cpp's "
                 "padding? Answer (n_ctx, n_ctx_seq).")
def _padding(answer):
    sc = kv.slot_context(1000, 3, False)
    got = tuple(int(as_number(x)) for x in _tuple(answer, 2))
    if got == (sc.n_ctx, sc.n_ctx_seq):
        return True, ""
    if got[1] == 333 or got[1] == 341:
        return False, "each stripe is rounded up to a multiple of 256 cells"
    if got[0] == 1024:
        return False, ("1000 is first padded to 1024, then n_ctx becomes n_ctx_seq x n_slots "
                       "once each stripe is padded")
    return False, "pad256(1000) = 1024; n_ctx_seq = pad256(1024 // 3); n_ctx = n_ctx_seq x 3"


@exercise("4.3", "You start llama-server with -c 8192 and no -np. Answer (n_slots, kv_unified, "
                 "n_ctx_slot) for SmolLM2.")
def _auto(answer):
    n, unified, slot = _tuple(answer, 3)
    n, slot = int(as_number(n)), int(as_number(slot))
    if isinstance(unified, str):
        unified = unified.strip().lower() in ("true", "unified", "yes")
    want = kv.slot_context(8192, 4, True, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    if (n, unified is True, slot) == (4, True, want):
        return True, ""
    if n == 1:
        return False, "-np defaults to auto, and auto means 4 slots"
    if unified is not True or slot == 2048:
        return False, "auto also turns on unified KV: each slot may use the whole pool"
    return False, "auto = 4 slots + unified KV; n_ctx_slot = min(n_ctx, n_ctx_train)"


def reserved_at_once(pool: int = 4096, prompt: int = 900, max_tokens: int = 500,
                     requests: int = 4) -> int:
    return min(requests, pool // (prompt + max_tokens))


@exercise("4.4", "A unified pool of 4096 cells, reserve=True, four requests each with a "
                 "900-token prompt and max_tokens=500. How many run at the same time?")
def _reserve(answer):
    v = as_number(answer)
    want = reserved_at_once()
    if v == want:
        return True, ""
    if v == 4:
        return False, "4 x (900 + 500) cells is more than the pool; reserve admits only what surely fits"
    if v == 3:
        return False, "count the prompt and every token it may generate: 900 + 500 per request"
    return False, "reserve=True admits a request only when prompt + max_tokens cells are free"
