"""The event loop: guests arrive, tables fill, the kitchen runs one step at a time.

:func:`simulate` plays a workload through one configuration and returns a
:class:`labkit.sim.metrics.SimResult`. The loop writes what happens into a
:class:`labkit.sim.record.SimRecord` (plain rows, no reference back to the loop),
and the result's tables are built from that record. The loop, in words:

1. Deliver every arrival due by now: refuse it at once if it can never fit
   (``KVModel.refuse_reason``), otherwise put it in the waiting room (the policy).
2. Admit waiting requests into free slots, in the policy's order, as long as the
   batching mode's gate is open and the KV model has room. The first request
   that does not fit blocks the rest (no skipping ahead).
3. Run the next step. A step with prompt work is simulated alone: a decode
   token for every generating sequence, then prompt chunks (slots in admission
   order) until ``n_batch`` tokens. A step with only decode tokens is run *in
   bulk*: nothing can change until the next completion, the next arrival that
   could take a free slot, or the KV pool filling up, so the loop computes how
   many steps k fit before that moment and advances time by their total cost in
   one go. This is exact (each step's cost is still a + c n + d x attended, and
   attended grows by n per step; the prefill-attention term e is zero in a
   decode-only step) and it is what lets 100,000 requests run in seconds. With a
   unified pool (``KVModel.pool_attention``) a step reads the whole pool's used cells,
   idle slots' kept caches included, so attended is the pool and grows by n per step.
4. Retire every sequence that has all its tokens, free its slot and KV, and
   (closed loop) let its client send the next request.

Batching modes differ only in two gates:

==================  ==============================  ==================================
mode                when may requests take slots    when may prompts be processed
==================  ==============================  ==================================
``continuous``      whenever a slot is free         every step, next to decode tokens
``no_cont``         whenever a slot is free         only in steps where no slot is
                                                    generating (llama.cpp
                                                    ``--no-cont-batching``)
``static``          only when every slot is empty,  every step
                    once ``batch_size`` requests
                    wait (or no more can arrive)
``dynamic``         only when every slot is empty,  every step
                    once ``batch_size`` wait or
                    the oldest waited ``max_wait``
==================  ==============================  ==================================

Token accounting: processing the last prompt chunk yields the first output
token (TTFT is the end of that step); every later token takes one decode step.
A request with ``output_tokens`` = n therefore needs its prefill plus n - 1
decode steps. Ties between events are broken by a sequence counter, so a run is
fully deterministic.
"""

from __future__ import annotations

import heapq
import math
from itertools import count

from .arrivals import ClosedLoop, from_trace
from .cost import DEFAULT_COST, StepCost
from .kv import KVModel, make_kv
from .metrics import SimResult
from .policies import make_policy
from .record import SimConfig, SimRecord, elapsed
from .requests import Request

INF = math.inf
BATCHING = ("continuous", "no_cont", "static", "dynamic")


class _Job:
    """Run-time state of one request (the guest's ticket)."""

    __slots__ = ("req", "slot", "order", "prompt", "cached", "cached_total", "prefill_left",
                 "cells", "generated", "target", "future_decode", "generating", "base", "end_g",
                 "admitted", "first_token", "preemptions", "hold_start", "span_start",
                 "kv_own", "kv_shared", "kv_entry", "kv_reserved", "arrival_no")

    def __init__(self, req: Request, target: int):
        self.req = req
        self.target = target
        self.generated = 0
        self.cached_total = 0
        self.preemptions = 0
        self.admitted = None
        self.first_token = None
        self.generating = False
        self.kv_own = self.kv_shared = self.kv_reserved = 0
        self.kv_entry = None
        self.slot = None


class _OpenLoop:
    """A fixed list of requests, sorted by arrival."""

    def __init__(self, requests):
        self.requests = sorted(requests, key=lambda r: r.arrival)

    def start(self):
        return self.requests

    def on_done(self, req, t):
        return None


def _as_workload(workload):
    if isinstance(workload, ClosedLoop) or (hasattr(workload, "start") and hasattr(workload, "on_done")):
        return workload
    if hasattr(workload, "to_dict"):                       # a DataFrame
        return _OpenLoop(from_trace(workload))
    reqs = list(workload)
    if reqs and isinstance(reqs[0], dict):
        reqs = from_trace(reqs)
    return _OpenLoop(reqs)


class _Engine:
    def __init__(self, workload, *, slots, batching, policy, kv, cost, n_batch,
                 batch_size, max_wait, prefix_cache, max_jump=None):
        if slots < 1:
            raise ValueError("slots must be at least 1")
        if batching not in BATCHING:
            raise ValueError(f"batching must be one of {', '.join(BATCHING)}")
        if n_batch < 1:
            raise ValueError("n_batch must be at least 1")
        self.workload = _as_workload(workload)
        self.n_slots = slots
        self.batching = batching
        self.policy = make_policy(policy)
        self.kv: KVModel = make_kv(kv)
        self.kv.bind(slots, prefix_cache)
        self.cost = cost or DEFAULT_COST
        self.n_batch = n_batch
        self.batch_size = min(batch_size or slots, slots)
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.max_wait = max_wait
        self.max_jump = max_jump or INF
        self.config = SimConfig(slots, batching, self.policy.name,
                                "unlimited" if kv is None else repr(self.kv), self.cost,
                                n_batch, self.batch_size, max_wait, prefix_cache)

    # ------------------------------------------------------------------ run
    def run(self) -> SimRecord:
        self.now = 0.0
        self.G = 0                 # decode steps so far: every generating job advances once per decode step
        self.step_no = 0
        self.events: list = []     # (time, seq, request): arrivals, in a heap
        self.seq = count()
        self.order = count()
        self.jobs: dict = {}       # request id -> _Job
        self.slots: list = [None] * self.n_slots
        self.free: list = list(range(self.n_slots))   # free slots, least recently used first
        self.prefilling: list = []                    # admitted jobs with prompt left, admission order
        self.gen: dict = {}                           # generating jobs (ordered)
        self.gen_heap: list = []                      # (end_g, order, job)
        self.sum_base = 0                             # sum(job.base) over generating jobs
        self.hold_admission = False
        # What the result tables are built from (row layouts: labkit.sim.record).
        self.done: list = []        # REQUEST_FIELDS rows
        self.segments: list = []    # SEGMENT_FIELDS rows: runs of identical steps
        self.prefill_rows: list = []    # PREFILL_FIELDS rows
        self.spans: list = []       # SPAN_FIELDS rows
        self.queue_events: list = []    # QUEUE_FIELDS rows

        for r in self.workload.start():
            self._schedule(r)
        a, b, c, d = self.cost.a, self.cost.b, self.cost.c, self.cost.d
        self.e = getattr(self.cost, "e", 0.0)
        policy, kv = self.policy, self.kv

        while True:
            events = self.events
            while events and events[0][0] <= self.now:
                self._arrive(heapq.heappop(events)[2])
            if len(policy) and self.free:
                self._admit()
            n_gen = len(self.gen)

            if n_gen and kv.decode_room(self.gen, self.G, 1) < 1:
                self._kv_full()
                continue

            if self.prefilling and (n_gen == 0 or self.batching != "no_cont") and n_gen < self.n_batch:
                self._prefill_step(a, b, c, d)
                continue

            if n_gen:
                self._decode_run(a, c, d)
                continue

            # Nothing can run: wait for the next arrival (or a dynamic batch's deadline).
            next_t = events[0][0] if events else INF
            if self.batching == "dynamic" and len(policy) and not self._busy():
                next_t = min(next_t, self._oldest_waiting() + self.max_wait)
            if next_t == INF:
                if len(policy) or self._busy():
                    raise RuntimeError("simulation stuck: requests wait but none can be admitted")
                break
            self.now = max(self.now, next_t)

        kv = self.kv
        return SimRecord(self.config, kv.kind, kv.capacity,
                         getattr(kv, "block_size", None) if kv.kind == "paged" else None,
                         self.now, self.step_no,
                         self.done, self.segments, self.prefill_rows, self.spans, self.queue_events)

    # ------------------------------------------------------------- arrivals
    def _schedule(self, req: Request):
        heapq.heappush(self.events, (req.arrival, next(self.seq), req))

    def _arrive(self, req: Request):
        if req.id in self.jobs:
            raise ValueError(f"duplicate request id {req.id!r}")
        why = self.kv.refuse_reason(req)
        cap = self.kv.max_cells
        target = req.output_tokens if cap == INF else min(req.output_tokens, int(cap) - req.prompt_tokens + 1)
        job = self.jobs[req.id] = _Job(req, target)
        job.arrival_no = len(self.jobs)
        if why is not None:
            self._record(job, "refused", why, req.arrival)
            self._client_done(req, req.arrival)
            return
        self.policy.push(req, req.arrival)
        self.queue_events.append((req.arrival, 1))

    def _client_done(self, req, t):
        nxt = self.workload.on_done(req, t)
        if nxt is not None:
            self._schedule(nxt)

    # ------------------------------------------------------------ admission
    def _busy(self) -> bool:
        return len(self.free) < self.n_slots

    def _oldest_waiting(self) -> float:
        return min(r.arrival for r in self.policy)

    def _gate(self) -> int:
        """How many requests may take slots now (batching mode's rule)."""
        if self.hold_admission:
            return 0
        if self.batching in ("continuous", "no_cont"):
            return len(self.free)
        if self._busy():
            return 0                                   # static / dynamic: wait for the batch to end
        waiting = len(self.policy)
        if waiting >= self.batch_size or not self.events:
            return self.batch_size
        if self.batching == "dynamic" and self.now >= self._oldest_waiting() + self.max_wait:
            return self.batch_size
        return 0

    def _admit(self):
        limit = self._gate()
        policy, kv, free = self.policy, self.kv, self.free
        policy.now = self.now                          # a policy whose order changes with time reads it
        while limit and len(policy) and free:
            req = policy.peek()
            job = self.jobs[req.id]
            i = kv.choose_slot(req, free)
            job.slot = free[i]
            job.prompt = req.prompt_tokens + job.generated    # a preempted job recomputes its output too
            job.future_decode = job.target - job.generated - 1
            if not kv.admit(job):
                break
            policy.pop()
            free.pop(i)
            limit -= 1
            job.order = next(self.order)
            job.cells = job.cached
            job.cached_total += job.cached
            job.prefill_left = job.prompt - job.cached
            job.hold_start = self.step_no
            if job.admitted is None:
                job.admitted = self.now
            self.slots[job.slot] = job
            self.prefilling.append(job)
            self.queue_events.append((self.now, -1))

    # ---------------------------------------------------------------- steps
    def _prefill_step(self, a, b, c, d):
        """One step with prompt work: decode tokens for all generating jobs, then prompt chunks."""
        n_gen = len(self.gen)
        budget = self.n_batch - n_gen
        chunks = []
        attended = self.sum_base + n_gen * (self.G + 1)     # generating jobs' cells after this step
        n_pre = 0
        pairs = 0.0                                          # prefill attention: n (h + n/2) per chunk
        for job in self.prefilling:
            if budget <= 0:
                break
            n = min(job.prefill_left, budget)
            budget -= n
            n_pre += n
            attended += job.cells + n
            pairs += n * (job.cells + n / 2)
            chunks.append((job, n))
        held = attended                                      # the sequences' own cells
        if self.kv.pool_attention and n_gen:
            # Unified KV: a decoding sequence's attention spans the whole pool after this step
            # (llama.cpp's n_kv), the other sequences' cells masked out; charged as the pool's
            # cells once for the batch. A prompt's tokens pay their own pairs only: llama.cpp's
            # flash attention skips a tile whose cells are all masked (ggml-cpu's ops.cpp).
            attended = max(held, self.kv.cells_used() + n_gen + n_pre)
        dur = a + b * n_pre + c * n_gen + d * attended + self.e * pairs
        t0 = self.now
        self.now = t0 + dur
        kv, policy = self.kv, self.policy
        if n_gen:
            kv.grow(self.gen, self.G, 1)
            self.G += 1
            if policy.tracks_service:
                for job in self.gen:
                    policy.charge(job.req.user, 0, 1)
        for job, n in chunks:
            job.cells += n
            job.prefill_left -= n
            kv.on_prefill(job, n)
            self.prefill_rows.append((self.step_no, job.slot, n, job.req.id))
            if policy.tracks_service:
                policy.charge(job.req.user, n, 0)
        self.segments.append((self.step_no, 1, t0, dur, 0.0, n_pre, len(chunks), n_gen, attended,
                              kv.cells_used(), 0, None, self.n_slots - len(self.free), pairs, 0, held))
        self.step_no += 1
        self.hold_admission = False
        self._retire()
        if any(job.prefill_left == 0 for job, _ in chunks):
            self.prefilling = [j for j in self.prefilling if j.prefill_left > 0]
            for job, _ in chunks:
                if job.prefill_left == 0:
                    self._prefill_done(job)

    @staticmethod
    def _steps_until(first: float, beta: float, delta: float) -> float:
        """Smallest k >= 1 with elapsed(first, beta, k) >= delta (inf if time never moves)."""
        if first <= 0 and beta <= 0:
            return INF
        if beta == 0:
            k = math.ceil(delta / first)
        else:
            # Solve beta/2 k^2 + (first - beta/2) k = delta for k, in a cancellation-free form.
            p = first - beta / 2
            k = math.ceil(2 * delta / (p + math.sqrt(p * p + 2 * beta * delta)))
        k = max(k, 1)
        while k > 1 and elapsed(first, beta, k - 1) >= delta:
            k -= 1
        while elapsed(first, beta, k) < delta:
            k += 1
        return k

    def _decode_run(self, a, c, d):
        """k decode-only steps in one go, up to the next moment something can change."""
        heap, G = self.gen_heap, self.G
        while heap[0][2].end_g != heap[0][0] or not heap[0][2].generating:
            heapq.heappop(heap)                       # stale entry of a preempted job
        k = heap[0][0] - G
        n = len(self.gen)
        held = self.sum_base + n * (G + 1)                 # the sequences' own cells
        if self.kv.pool_attention:
            # Unified KV: the step reads the whole pool once, idle slots' kept cells included;
            # the pool grows by n cells a step.
            attended = self.kv.cells_used() + n
        else:
            attended = held                                # cells after the first step
        growth = n                                         # each later step attends n more cells
        first = a + c * n + d * attended                   # cost of the first step
        beta = d * growth
        if self.events and self._arrival_matters():
            k = min(k, self._steps_until(first, beta, self.events[0][0] - self.now))
        if self.hold_admission and self.free and len(self.policy):
            k = 1                   # admission reopens after this one step (see _kv_full)
        kv = self.kv
        k = kv.decode_room(self.gen, G, min(k, self.max_jump))
        t0 = self.now
        self.now = t0 + elapsed(first, beta, k)
        before, inc, slacks = kv.grow(self.gen, G, k)
        self.G = G + k
        if self.policy.tracks_service:
            for job in self.gen:
                self.policy.charge(job.req.user, 0, k)
        self.segments.append((self.step_no, k, t0, first, beta, 0, 0, n, attended,
                              before, inc, slacks, self.n_slots - len(self.free), 0.0, growth, held))
        self.step_no += k
        self.hold_admission = False
        self._retire()

    def _arrival_matters(self) -> bool:
        """Must the bulk move stop at the next arrival?

        Yes if the arrival could take a free slot before the running sequences
        finish, or if the policy's bookkeeping depends on when a request joins the
        queue (fair share lifts a returning user's counter to the others' counters
        at that moment).
        """
        if self.policy.tracks_service:
            return True
        return bool(self.free) and self.batching in ("continuous", "no_cont")

    # ----------------------------------------------------------- lifecycle
    def _prefill_done(self, job: _Job):
        job.generated += 1
        if job.first_token is None:
            job.first_token = self.now
        if job.generated >= job.target:
            self._finish(job)
            return
        job.generating = True
        job.base = job.cells - self.G
        job.end_g = self.G + job.target - job.generated
        job.span_start = self.step_no
        heapq.heappush(self.gen_heap, (job.end_g, job.order, job))
        self.gen[job] = None
        self.sum_base += job.base

    def _retire(self):
        heap, G = self.gen_heap, self.G
        while heap and heap[0][0] <= G:
            end, _, job = heapq.heappop(heap)
            if job.generating and job.end_g == end:
                self._finish(job)

    def _leave(self, job: _Job):
        """Take ``job`` out of its slot, materialising its counters; free slot and KV."""
        if job.generating:
            job.cells = job.base + self.G
            job.generated = job.target - (job.end_g - self.G)
            job.generating = False
            del self.gen[job]
            self.sum_base -= job.base
            if self.step_no > job.span_start:
                self.spans.append((job.slot, job.req.id, "decode", job.span_start, self.step_no - 1))
        elif job.prefill_left > 0:
            self.prefilling.remove(job)
        self.spans.append((job.slot, job.req.id, "hold", job.hold_start, self.step_no - 1))
        self.kv.release(job)
        self.slots[job.slot] = None
        self.free.append(job.slot)

    def _finish(self, job: _Job):
        self._leave(job)
        status = "ok" if job.generated >= job.req.output_tokens else "length"
        self._record(job, status, "" if status == "ok" else "context full", self.now)
        self._client_done(job.req, self.now)

    def _kv_full(self):
        """The pool cannot hold one more token per generating sequence: fail every request in
        flight (``fail_all``, llama-server), or fail or preempt the youngest."""
        busy = [j for j in self.slots if j is not None]
        victim = max(busy, key=lambda j: j.order)
        if self.kv.on_full == "fail_all":
            # llama-server, when llama_decode finds no room (ret 1 at a batch of one): it sends
            # the error to every slot that is processing and releases them all.
            for job in sorted(busy, key=lambda j: j.order):
                self._leave(job)
                self._record(job, "failed", "kv_full: the pool ran dry; every request in flight "
                             "failed", self.now)
                self._client_done(job.req, self.now)
            return
        if self.kv.on_full == "preempt" and len(busy) > 1:
            self._leave(victim)
            victim.preemptions += 1
            self.policy.push(victim.req, self.now, front=True)
            self.queue_events.append((self.now, 1))
            self.hold_admission = True
        else:
            self._leave(victim)
            self._record(victim, "failed", "kv_full: no free KV cells for the next token", self.now)
            self._client_done(victim.req, self.now)

    def _record(self, job: _Job, status: str, reason: str, t: float):
        r = job.req
        self.done.append((r.id, r.user, r.priority, r.arrival, job.admitted, job.first_token, t,
                          job.preemptions, status, reason, r.prompt_tokens, r.output_tokens,
                          job.generated, job.cached_total, job.slot, r.prefix_id, job.arrival_no))


def simulate(workload, *, slots: int = 4, batching: str = "continuous", policy="fifo",
             kv: KVModel | None = None, cost: StepCost | None = None, n_batch: int = 2048,
             batch_size: int | None = None, max_wait: float = 0.05,
             prefix_cache: bool = True, max_jump: int | None = None):
    """Run ``workload`` through one serving configuration.

    Args:
        workload: a list of :class:`Request`, a DataFrame or list of dicts
            (replayed with :func:`from_trace`), or a :class:`ClosedLoop`.
        slots: parallel sequences (llama-server ``-np``; the number of tables).
        batching: ``"continuous"``, ``"no_cont"``, ``"static"`` or ``"dynamic"``.
        policy: ``"fifo"``, ``"sjf"``, ``"priority"``, ``"fair"`` or a Policy.
        kv: a KV model (:class:`SplitKV`, :class:`UnifiedKV`, :class:`PagedKV`);
            None means unlimited room.
        cost: the step-cost model; default: an 8B Q4 model on an RTX 4090.
        n_batch: most tokens in one step (llama.cpp ``-b``); prompts are chunked to fit.
        batch_size: static/dynamic batch size (default: ``slots``).
        max_wait: dynamic batching's longest wait for a batch to fill (seconds).
        prefix_cache: reuse cached shared prefixes (see :mod:`labkit.sim.kv`).
        max_jump: most decode steps advanced in one bulk move (None: no limit;
            1: strictly one step at a time, the slow reference the fast path must match).

    Returns:
        :class:`labkit.sim.metrics.SimResult` with ``requests``, ``steps``,
        ``slot_table()``, ``summary()`` and friends.
    """
    record = _Engine(workload, slots=slots, batching=batching, policy=policy, kv=kv, cost=cost,
                     n_batch=n_batch, batch_size=batch_size, max_wait=max_wait,
                     prefix_cache=prefix_cache, max_jump=max_jump).run()
    return SimResult(record)
