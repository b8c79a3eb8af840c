"""Scheduling decisions, as pure functions (no llama.cpp here).

Each engine step asks three questions, answered here (the admit step asks
the first two, the plan step the third):

1. *Which free slot gets the next waiting request?* (:func:`choose_slot`)
   The free slot whose cached tokens share the longest prefix with the new
   prompt (so the least work is repeated), provided the shared part is more
   than ``SLOT_PROMPT_SIMILARITY`` of the prompt; otherwise the least recently
   used free slot (the first in slot order among equals). This is llama-server's
   rule (``--slot-prompt-similarity``, default 0.1; 0 turns the match off, so
   every request goes to the least recently used free slot), and like
   llama-server it does not look at ``cache_prompt``; only the tie is labkit's
   (llama-server takes the last of equals).
2. *May it start now?* (:func:`reserve_room`, only with ``reserve=True`` on a
   unified pool) Only if the cells it could ever need fit in what is free.
3. *What goes into this step's batch?* (:func:`plan_step`) One decode token
   for every generating slot, then prompt chunks (chunked prefill) until the
   batch holds ``n_batch`` tokens. Without continuous batching, prompts are
   only processed when no slot is generating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .slot import GENERATING, PREFILL, Slot

SLOT_PROMPT_SIMILARITY = 0.1


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens a and b share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def choose_slot(slots: Sequence[Slot], prompt: list[int],
                similarity: float = SLOT_PROMPT_SIMILARITY) -> Slot | None:
    """The free slot for ``prompt`` (see the module docstring), or None if all are busy.

    As llama-server's ``get_available_slot`` does, the match looks at what each free slot
    holds whatever the request's ``cache_prompt`` says (that flag decides only whether the
    shared prefix is kept once the slot is chosen). One difference, labkit's: among slots
    used equally long ago (at start, all of them) labkit takes the first in slot order,
    llama-server the last (docs/ENGINE.md says why)."""
    free = [s for s in slots if not s.busy]
    if not free:
        return None
    if prompt and similarity > 0:  # 0: llama-server skips the match
        best, best_n = None, 0
        for s in free:
            n = common_prefix(s.tokens, prompt)
            if n > best_n:
                best, best_n = s, n
        if best is not None and best_n / len(prompt) > similarity:
            return best
    return min(free, key=lambda s: s.t_last_used)


def reused_prefix(cached: list[int], prompt: list[int], cache_prompt: bool) -> int:
    """How many prompt tokens a slot may keep from its cache.

    At least one prompt token is always computed, because the logits of the
    last prompt token are needed to sample the first new token.
    """
    if not cache_prompt:
        return 0
    return min(common_prefix(cached, prompt), len(prompt) - 1)


def reservation(n_prompt: int, max_tokens: int | None, n_ctx_slot: int) -> int:
    """KV cells a request may come to occupy: its prompt plus everything it may generate."""
    if max_tokens is None:
        return n_ctx_slot
    return min(n_prompt + max_tokens, n_ctx_slot)


def reserve_room(slots: Sequence[Slot], chosen: Slot, need: int,
                 n_cells: int) -> tuple[bool, list[Slot]]:
    """Can ``chosen`` take a request that needs ``need`` cells of a shared pool of ``n_cells``?

    Busy slots hold their reservations; idle slots hold their cached tokens,
    which may be dropped (least recently used first) to make room. Returns
    ``(ok, to_purge)``: whether the request fits, and the idle slots whose
    caches must be cleared first.
    """
    held = sum(s.reserved for s in slots if s.busy)
    idle = sorted((s for s in slots if not s.busy and s is not chosen and s.tokens),
                  key=lambda s: s.t_last_used)
    free = n_cells - held - sum(len(s.tokens) for s in idle)
    to_purge = []
    for s in idle:
        if free >= need:
            break
        to_purge.append(s)
        free += len(s.tokens)
    return free >= need, to_purge if free >= need else []


@dataclass(slots=True)
class Work:
    """One slot's share of a batch: 'decode' one token, or 'prefill' n prompt tokens."""

    slot: Slot
    action: Literal["decode", "prefill"]
    n: int
    start: int = 0   # index of its first token in the batch (set when the batch is filled)
    pos0: int = 0    # KV position of its first token


def plan_step(slots: Sequence[Slot], prefill_order: Sequence[Slot], n_batch: int,
              cont_batching: bool = True) -> list[Work]:
    """The batch for one step.

    ``slots`` in slot order (their decode tokens go first); ``prefill_order``:
    the slots still reading their prompts, in the order their requests arrived.
    """
    work = [Work(s, "decode", 1) for s in slots if s.state == GENERATING]
    if work and not cont_batching:
        return work
    room = n_batch - len(work)
    for s in prefill_order:
        if room <= 0:
            break
        if s.state != PREFILL:
            continue
        n = min(room, s.prompt_left())
        if n > 0:
            work.append(Work(s, "prefill", n))
            room -= n
    return work


def micro_batches(batch: Sequence[tuple[int, int]], n_ubatch: int, unified: bool = False
                  ) -> list[int]:
    """The micro-batches llama.cpp cuts one ``llama_decode`` batch into, by token count.

    ``batch``: ``(sequence id, tokens)`` in batch order, each sequence's tokens together (as
    :func:`plan_step` and llama-server lay them out). Every micro-batch is one run of the
    model's graph, one pass through its weights: the same tokens cut into more micro-batches
    cost more passes.

    This is llama.cpp's rule (``llama_kv_cache::init_batch`` and ``llama_batch_allocr`` in its
    src/llama-batch.cpp), not labkit's. A unified pool takes the tokens in order, ``n_ubatch``
    at a time (``split_simple``). Split KV, one stream per sequence, uses ``split_equal`` with
    ``sequential``: a micro-batch holds the sequences whose ids rise by one in the order they
    first appear in what is left of the batch, and the same number of tokens from each (the
    fewest any of them has left, at most ``n_ubatch`` in all); what is left goes into the next
    micro-batch. So four decoding slots 0-3 are one micro-batch, slots 0, 1 and 3 are two.
    """
    if unified:
        n = sum(k for _, k in batch)
        return [min(n_ubatch, n - i) for i in range(0, n, n_ubatch)]
    left = dict(batch)
    if len(left) != len(batch):
        raise ValueError("each sequence's tokens must be together in the batch")
    order = [seq for seq, _ in batch]
    sizes = []
    while any(left[s] > 0 for s in order):
        chosen: list[int] = []
        for s in order:
            if left[s] > 0 and (not chosen or s == chosen[-1] + 1):
                chosen.append(s)
        per_seq = max(1, min(min(left[s] for s in chosen), n_ubatch // len(chosen)))
        for s in chosen:
            left[s] -= per_seq
        sizes.append(per_seq * len(chosen))
    return sizes
