"""Where the notes live: simulator-side models of the KV cache.

Every token a request has read or written leaves notes (its keys and values, the
KV cache, 已讀筆記) on the table top (the context, 桌面). How that table space
is shared between the tables (slots, 窗口) changes what happens under load:

- :class:`SplitKV`: llama.cpp's default with an explicit ``-np N``. Each slot owns
  a fixed stripe of ``slot_cap`` cells. A prompt with ``prompt_tokens >= slot_cap``
  is refused at once (llama-server answers HTTP 400 ``exceed_context_size_error``);
  a request whose stripe fills while it generates stops early with status
  ``length``. Slots never disturb each other.
- :class:`UnifiedKV`: llama.cpp's ``--kv-unified`` (and ``-np auto``). One shared
  pool of cells. With ``admission="optimistic"`` a request is admitted when its
  prompt fits *now*; if the pool later runs dry while sequences generate, every
  request in flight fails (``on_full="fail_all"``, the default: status ``failed``,
  reason ``kv_full``; llama.cpp's decode returns 1 and llama-server sends the error to
  every slot that is processing and releases them all, server_context::update_slots),
  or only the youngest sequence (most recently admitted) fails (``on_full="fail"``),
  or it is preempted (``on_full="preempt"``, what vLLM does: its cells are freed and
  it rejoins the front of the queue, to recompute later). With
  ``admission="reserve"`` a request is admitted only when prompt + every token it
  may generate fits, so the pool never runs dry, at the price of idle reserved room.
  Attention in a unified pool runs over the whole pool: llama.cpp views the one
  stream's used cells (``n_kv``, from ``llama_kv_cache::get_n_kv``) for every
  sequence and masks the other sequences' cells out (``set_input_kq_mask``), so
  a step in which some sequence decodes is charged every used cell of the pool,
  read once for the whole batch, idle slots' kept caches included; a prompt pays
  its own attention pairs only, since llama.cpp's flash attention skips a tile of
  masked cells (``pool_attention=True``, the default;
  ``pool_attention=False`` is the earlier charging, each sequence its own cells).
- :class:`PagedKV`: vLLM-style blocks of ``block_size`` cells, allocated as
  sequences grow; when none is left, the youngest sequence is preempted and
  later recomputed. Memory is counted in whole blocks (including the unused tail
  of each sequence's last block).

How much of the pool each model leaves reserved but unused, at equal memory and
on the same workload (split: whole stripes; unified: nothing ahead; paged: the
tail of each last block), is measured by :mod:`labkit.sim.waste`.

Prefix caching (``prefix_cache=True`` in :func:`labkit.sim.simulate`): requests
with the same ``prefix_id`` can skip prefilling the shared prefix when the cells
that hold it are still there. Split and unified caches work per slot, like
llama-server: a slot remembers the prefix of its last request, and a new request
with the same prefix prefers that slot. Paged caching is global, like vLLM's
automatic prefix caching: full blocks of a prefix are shared by every sequence
that uses it and stay cached (evictable) after the last user leaves. At least
one prompt token is always recomputed, so the first output token has fresh logits.

Conventions used by the engine: a sequence's *cells* are the tokens it holds
(prompt tokens processed plus one per decode step). A prompt of P tokens and a
per-sequence cap C allow at most C - P + 1 generated tokens: the prefill yields
the first one, and each further token needs one more cell.

The engine talks to a model through a handful of methods (``bind``,
``refuse_reason``, ``choose_slot``, ``admit``, ``on_prefill``, ``decode_room``,
``grow``, ``release``); learners can subclass :class:`KVModel` to try a policy
of their own.
"""

from __future__ import annotations

import math

from ..models.kv import slot_context

INF = math.inf


class KVModel:
    """Interface shared by the KV models. Counts are in cells (tokens)."""

    kind = "base"
    #: What to do when a generating sequence finds no room: "fail_all" (every request in
    #: flight fails, as llama-server does), "fail" (the youngest fails) or "preempt".
    on_full = "fail"
    #: Whether every querying sequence's attention runs over every used cell of the pool
    #: (llama.cpp's unified KV: one stream, n_kv = the pool's used cells) rather than over
    #: its own cells only (split KV: one stream per sequence; paged: its own blocks).
    pool_attention = False

    def bind(self, n_slots: int, prefix_cache: bool) -> None:
        """Reset all state for a new run with ``n_slots`` slots."""
        self.n_slots = n_slots
        self.prefix_cache = prefix_cache
        self.used = 0

    def _prefix_to_keep(self, job) -> int:
        """Cells of a finished job's shared prefix to keep for a later request (0: none)."""
        req = job.req
        if self.prefix_cache and req.prefix_id is not None and req.prefix_tokens > 0:
            return min(req.prefix_tokens, job.cells)
        return 0

    # -- static limits ---------------------------------------------------------
    @property
    def capacity(self) -> float:
        """Total cells (``inf`` when unbounded)."""
        return INF

    @property
    def max_cells(self) -> float:
        """Most cells one sequence may hold (its table top)."""
        return INF

    def refuse_reason(self, req) -> str | None:
        """Why ``req`` can never be served (checked on arrival), or None."""
        cap = self.max_cells
        if req.prompt_tokens >= cap:
            return (f"exceed_context_size: request ({req.prompt_tokens} tokens) exceeds "
                    f"the available context size ({int(cap)} tokens)")
        return None

    # -- admission -------------------------------------------------------------
    def choose_slot(self, req, free_slots: list) -> int:
        """Index into ``free_slots`` (ordered least recently used first)."""
        return 0

    def admit(self, job) -> bool:
        """Commit memory for ``job`` (set ``job.cached``); False if it does not fit now."""
        job.cached = 0
        return True

    # -- growth ----------------------------------------------------------------
    def on_prefill(self, job, n: int) -> None:
        """``n`` prompt tokens of ``job`` were written."""
        self.used += n

    def decode_room(self, gen_jobs, G: int, k_max: float) -> float:
        """How many decode steps (at most ``k_max``) the generating sequences can take."""
        return k_max

    def grow(self, gen_jobs, G: int, k: int):
        """Apply ``k`` decode steps for every generating job.

        Returns ``(used_before, per_step, slacks)``: after step j (1-based) the
        pool holds ``used_before + per_step * j`` cells, or, when ``slacks`` is not
        None (paged), ``used_before + block_size * sum(ceil((j - s) / block_size))``
        over the slacks that are below j.
        """
        before = self.used
        n = len(gen_jobs)
        self.used += n * k
        return before, n, None

    def release(self, job) -> None:
        """``job`` leaves its slot (finished, failed or preempted)."""
        self.used -= job.cells

    def cells_used(self) -> int:
        """Cells the pool holds now (paged: whole blocks, so partly filled blocks count in full)."""
        return self.used

    def blocks_used(self) -> int | None:
        return None


class SplitKV(KVModel):
    """Each slot owns ``slot_cap`` cells (llama.cpp split KV). ``slot_cap=None``: unlimited."""

    kind = "split"

    def __init__(self, slot_cap: int | None = None):
        if slot_cap is not None and slot_cap < 2:
            raise ValueError("slot_cap must be at least 2 cells")
        self.slot_cap = slot_cap

    @classmethod
    def from_n_ctx(cls, n_ctx: int, n_slots: int, n_ctx_train: int | None = None) -> "SplitKV":
        """The per-slot cap llama.cpp gives ``-c n_ctx -np n_slots`` (split KV).

        n_ctx is padded to a multiple of 256, each slot gets
        pad256(n_ctx / n_slots) cells, capped by the model's training context
        (:func:`labkit.models.kv.slot_context`, the same rule the capacity calculator uses).
        ``-c 16384 -np 4`` gives 4096 cells per slot.
        """
        return cls(slot_context(n_ctx, n_slots, False, n_ctx_train=n_ctx_train).n_ctx_slot)

    def __repr__(self):
        return f"SplitKV(slot_cap={self.slot_cap})"

    def bind(self, n_slots, prefix_cache):
        super().bind(n_slots, prefix_cache)
        self.slot_prefix = [None] * n_slots   # (prefix_id, tokens) kept by each slot

    @property
    def capacity(self):
        return INF if self.slot_cap is None else self.slot_cap * self.n_slots

    @property
    def max_cells(self):
        return INF if self.slot_cap is None else self.slot_cap

    def choose_slot(self, req, free_slots):
        if self.prefix_cache and req.prefix_id is not None:
            for i, s in enumerate(free_slots):
                kept = self.slot_prefix[s]
                if kept is not None and kept[0] == req.prefix_id:
                    return i
        return 0

    def admit(self, job):
        kept = self.slot_prefix[job.slot]
        self.slot_prefix[job.slot] = None
        job.cached = 0
        if kept is not None:
            if kept[0] == job.req.prefix_id:
                job.cached = min(kept[1], job.prompt - 1)
            self.used -= kept[1] - job.cached      # the rest of the stripe is overwritten
        return True

    def release(self, job):
        self.used -= job.cells
        self._keep_prefix(job)

    def _keep_prefix(self, job):
        keep = self._prefix_to_keep(job)
        if keep > 0:
            self.slot_prefix[job.slot] = (job.req.prefix_id, keep)
            self.used += keep


class UnifiedKV(KVModel):
    """One pool of ``n_cells`` cells shared by all slots (llama.cpp ``--kv-unified``).

    Args:
        n_cells: pool size (llama.cpp's n_ctx).
        slot_cap: most cells one sequence may use; defaults to ``n_cells``
            (llama.cpp: n_ctx_seq = n_ctx when unified; pass the model's training
            context to mirror llama-server's cap).
        admission: ``"optimistic"`` (the prompt must fit now) or ``"reserve"``
            (prompt plus all future tokens must fit).
        on_full: when the pool runs dry during generation (only reachable with
            optimistic admission): ``"fail_all"`` (every request in flight fails, as
            llama-server does), or ``"fail"`` or ``"preempt"`` the youngest sequence.
        pool_attention: charge a step's attention over every used cell of the pool,
            as llama.cpp views it (True, the default), or over the sequences' own cells
            only (False: the earlier charging, kept to compare).
    """

    kind = "unified"

    def __init__(self, n_cells: int, *, slot_cap: int | None = None,
                 admission: str = "optimistic", on_full: str = "fail_all",
                 pool_attention: bool = True):
        if admission not in ("optimistic", "reserve"):
            raise ValueError("admission must be 'optimistic' or 'reserve'")
        if on_full not in ("fail_all", "fail", "preempt"):
            raise ValueError("on_full must be 'fail_all', 'fail' or 'preempt'")
        self.n_cells = int(n_cells)
        self.slot_cap = int(min(slot_cap or n_cells, n_cells))
        self.admission, self.on_full = admission, on_full
        self.pool_attention = bool(pool_attention)

    def __repr__(self):
        extra = "" if self.pool_attention else ", pool_attention=False"
        return (f"UnifiedKV({self.n_cells}, slot_cap={self.slot_cap}, "
                f"admission={self.admission!r}, on_full={self.on_full!r}{extra})")

    def bind(self, n_slots, prefix_cache):
        super().bind(n_slots, prefix_cache)
        self.pending = 0        # prompt cells promised to admitted jobs, not yet written
        self.reserved = 0       # future decode cells promised (reserve admission only)
        self.kept: dict = {}    # slot -> (prefix_id, cells): prefixes left by finished jobs

    @property
    def capacity(self):
        return self.n_cells

    @property
    def max_cells(self):
        return self.slot_cap

    def _free(self) -> int:
        return self.n_cells - self.used - self.pending - self.reserved

    def _reclaimable(self, except_slot=None) -> int:
        return sum(c for s, (_, c) in self.kept.items() if s != except_slot)

    def _reclaim(self, need: int, except_slot=None) -> None:
        """Drop kept prefixes, oldest first, until ``need`` more cells are free."""
        for s in list(self.kept):
            if self._free() >= need:
                return
            if s != except_slot:
                self.used -= self.kept.pop(s)[1]

    def choose_slot(self, req, free_slots):
        if self.prefix_cache and req.prefix_id is not None:
            for i, s in enumerate(free_slots):
                kept = self.kept.get(s)
                if kept is not None and kept[0] == req.prefix_id:
                    return i
        return 0

    def admit(self, job):
        kept = self.kept.get(job.slot)
        cached = 0
        if kept is not None and kept[0] == job.req.prefix_id:
            cached = min(kept[1], job.prompt - 1)
        own_kept = kept[1] if kept is not None else 0
        need = job.prompt - cached
        reserve = job.future_decode if self.admission == "reserve" else 0
        # Cells this slot already holds but will not reuse come back to the pool.
        if need + reserve > self._free() + (own_kept - cached) + self._reclaimable(job.slot):
            return False
        if kept is not None:
            del self.kept[job.slot]
            self.used -= own_kept - cached
        self._reclaim(need + reserve, except_slot=job.slot)
        job.cached = cached
        job.kv_reserved = reserve
        self.pending += need
        self.reserved += reserve
        return True

    def on_prefill(self, job, n):
        self.pending -= n
        self.used += n

    def decode_room(self, gen_jobs, G, k_max):
        if self.admission == "reserve" or not gen_jobs:
            return k_max
        n = len(gen_jobs)
        k = self._free() // n
        if k >= 1:
            return min(k_max, k)
        # Kept prefixes are given back only when needed, one step at a time, so a
        # bulk move and single steps reclaim at the same moment.
        return 1 if self._free() + self._reclaimable() >= n else 0

    def grow(self, gen_jobs, G, k):
        n = len(gen_jobs)
        need = n * k
        if self.admission == "reserve":
            self.reserved -= need
            for j in gen_jobs:
                j.kv_reserved -= k
        elif self._free() < need:
            self._reclaim(need)
        before = self.used
        self.used += need
        return before, n, None

    def release(self, job):
        self.used -= job.cells
        self.pending -= job.prefill_left
        self.reserved -= job.kv_reserved
        job.kv_reserved = 0
        keep = self._prefix_to_keep(job)
        if keep > 0:
            self.kept[job.slot] = (job.req.prefix_id, keep)
            self.used += keep


class _Prefix:
    """A cached prefix: ``blocks`` full blocks, and how many of them each current user shares."""

    __slots__ = ("blocks", "holds", "ready", "tick")

    def __init__(self, blocks, tick):
        self.blocks, self.holds, self.ready, self.tick = blocks, [], False, tick

    def spare(self, floor: int = 0) -> int:
        """Blocks no current user needs (they can be evicted, tail first)."""
        return self.blocks - max(floor, max(self.holds, default=0))


class PagedKV(KVModel):
    """vLLM-style paged KV: ``n_blocks`` blocks of ``block_size`` cells.

    A sequence holds ceil(cells / block_size) blocks (minus the prefix blocks it
    shares). Prompt blocks are taken at admission; decode takes a new block each
    time a sequence crosses a block boundary. When a block is needed and none is
    free (after evicting cached prefix blocks nobody uses, least recently used
    prefix first, from its tail), the youngest sequence is preempted and later
    recomputed from scratch (its prompt plus what it had generated), which is
    vLLM's default "recompute" preemption.

    Args:
        n_blocks: pool size in blocks.
        block_size: cells per block (vLLM's default is 16).
        max_cells: per-sequence cap (vLLM's max_model_len); default: the pool.
        on_full: ``"preempt"`` (default) or ``"fail"``.
    """

    kind = "paged"

    def __init__(self, n_blocks: int, block_size: int = 16, *, max_cells: int | None = None,
                 on_full: str = "preempt"):
        if on_full not in ("fail", "preempt"):
            raise ValueError("on_full must be 'fail' or 'preempt'")
        self.n_blocks, self.block_size = int(n_blocks), int(block_size)
        self._max = int(min(max_cells or n_blocks * block_size, n_blocks * block_size))
        self.on_full = on_full

    def __repr__(self):
        return f"PagedKV({self.n_blocks}, block_size={self.block_size}, on_full={self.on_full!r})"

    def bind(self, n_slots, prefix_cache):
        super().bind(n_slots, prefix_cache)
        self.n_used = 0          # blocks held by sequences and by the prefix table
        self.prefixes: dict = {}
        self._tick = 0

    @property
    def capacity(self):
        return self.n_blocks * self.block_size

    @property
    def max_cells(self):
        return self._max

    def blocks_used(self):
        return self.n_used

    def cells_used(self):
        return self.n_used * self.block_size

    def refuse_reason(self, req):
        why = super().refuse_reason(req)
        if why is None and -(-req.prompt_tokens // self.block_size) > self.n_blocks:
            why = f"exceeds_kv_pool: prompt needs more than {self.n_blocks} blocks"
        return why

    def _evictable(self, keep=None, floor: int = 0) -> int:
        return sum(e.spare(floor if p == keep else 0) for p, e in self.prefixes.items())

    def _evict(self, need: int, keep=None, floor: int = 0) -> None:
        """Trim cached prefix blocks nobody uses, least recently used first, until ``need`` are free."""
        for p in sorted(self.prefixes, key=lambda p: self.prefixes[p].tick):
            short = need - (self.n_blocks - self.n_used)
            if short <= 0:
                return
            e = self.prefixes[p]
            take = min(e.spare(floor if p == keep else 0), short)
            if take > 0:
                e.blocks -= take
                self.n_used -= take
                if e.blocks == 0:
                    del self.prefixes[p]

    def admit(self, job):
        B = self.block_size
        req = job.req
        total = -(-job.prompt // B)
        entry, shared, create = None, 0, 0
        if self.prefix_cache and req.prefix_id is not None:
            full = min(req.prefix_tokens, job.prompt - 1) // B
            entry = self.prefixes.get(req.prefix_id)
            if entry is not None and entry.ready:
                shared = min(entry.blocks, full)
            elif entry is None and full > 0:
                create = full
        own = total - shared - create
        need = own + create
        keep = req.prefix_id if shared else None       # the blocks we reuse are not evicted
        if need > self.n_blocks - self.n_used + self._evictable(keep, shared):
            return False
        self._evict(need, keep, shared)
        self._tick += 1
        job.kv_entry = None
        job.cached = 0
        if create:
            entry = self.prefixes[req.prefix_id] = _Prefix(create, self._tick)
            shared = create
            job.kv_entry = req.prefix_id
        elif shared:
            entry.tick = self._tick
            job.cached = shared * B
            job.kv_entry = req.prefix_id
        if job.kv_entry is not None:
            entry.holds.append(shared)
        self.n_used += need
        job.kv_own, job.kv_shared = own, shared
        return True

    def on_prefill(self, job, n):
        if job.kv_entry is not None:
            e = self.prefixes[job.kv_entry]
            if not e.ready and job.cells >= e.blocks * self.block_size:
                e.ready = True

    def _slack(self, job, G) -> int:
        return (job.kv_own + job.kv_shared) * self.block_size - (job.base + G)

    def _demand(self, slacks, k) -> int:
        B = self.block_size
        return sum(-(-(k - s) // B) for s in slacks if k > s)

    def decode_room(self, gen_jobs, G, k_max):
        free = self.n_blocks - self.n_used
        slacks = [self._slack(j, G) for j in gen_jobs]
        if k_max is INF:
            k_max = max(slacks) + free * self.block_size + 1
        if self._demand(slacks, k_max) <= free:
            return k_max
        lo, hi = 0, k_max            # demand(lo) <= free < demand(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._demand(slacks, mid) <= free:
                lo = mid
            else:
                hi = mid
        if lo >= 1:
            return lo
        # Cached prefix blocks are evicted only when needed, one step at a time.
        return 1 if self._demand(slacks, 1) <= free + self._evictable() else 0

    def grow(self, gen_jobs, G, k):
        B = self.block_size
        slacks = [self._slack(j, G) for j in gen_jobs]
        need = self._demand(slacks, k)
        if self.n_blocks - self.n_used < need:
            self._evict(need)
        before = self.n_used * B
        for j, s in zip(gen_jobs, slacks):
            if k > s:
                add = -(-(k - s) // B)
                j.kv_own += add
                self.n_used += add
        return before, 0, slacks

    def release(self, job):
        self.n_used -= job.kv_own
        job.kv_own = 0
        if job.kv_entry is not None:
            e = self.prefixes[job.kv_entry]
            e.holds.remove(job.kv_shared)
            self._tick += 1
            e.tick = self._tick
            if not e.ready and not e.holds:          # its creator left before computing it
                self.n_used -= self.prefixes.pop(job.kv_entry).blocks
            job.kv_entry = None
        job.kv_shared = 0


def make_kv(kv) -> KVModel:
    """A fresh KV model: None (unlimited), or a copy of the given model."""
    import copy
    if kv is None:
        return SplitKV(None)
    if isinstance(kv, KVModel):
        return copy.deepcopy(kv)
    raise TypeError(f"expected a KVModel, got {kv!r}")
