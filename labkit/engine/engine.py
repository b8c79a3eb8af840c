"""The slot engine: one llama context, one thread, one llama_decode per step.

This is continuous batching in about one screen of code. The engine thread
repeats :meth:`Engine._step`, five steps in this order:

1. **Admit.** Waiting requests take free slots, first come first served. With
   prompt caching a request goes to the free slot that already holds the
   longest piece of its prompt, and only the rest is computed.
2. **Plan.** A decode token for every generating slot, then prompt chunks of
   the slots still reading their prompts, up to ``n_batch`` tokens (chunked
   prefill).
3. **Fill.** Write the plan into the one reusable llama_batch. Logits are
   requested only where a token will be sampled.
4. **Decode.** One ``llama_decode`` runs the model over the whole batch;
   every slot advances together.
5. **Sample.** Each slot with fresh logits samples its next token with its own
   sampler chain (a greedy one by numpy's argmax of its logits row: the same token);
   text goes out to the client at once. A slot that is done
   (end-of-generation, stop string, max_tokens, slot full) frees its seat for
   the next waiting request *at the next step*, not at the end of some batch:
   that is the "continuous" in continuous batching.

Every llama_decode is recorded in :attr:`Engine.trace` (see :mod:`.trace`).

The KV pool can run out when slots share one (unified) cache. Then
llama_decode returns 1 and the engine does what llama-server does: drop the
cache of an idle slot if there is one, else retry with half the batch, and
when even one token cannot be placed, fail every request in flight with
"Context size has been exceeded." and clear their caches. A batch decoded in
parts is also sampled in parts, each right after its llama_decode, because
llama.cpp keeps only the logits of the latest call. ``EngineConfig(reserve=True)``
prevents all this by admitting a request only when its worst case fits.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

import llama_cpp
import numpy as np

from ..models import kv
from .config import EngineConfig
from .native import (Batch, LlamaContext, LlamaModel, LogCapture, PieceTable,
                     add_log_sink, chat_template, detokenize, eog_tokens,
                     remove_log_sink, template_source, tokenize)
from .request import (CONTEXT_EXCEEDED, BadRequest, ContextExceeded, Event, FinalEvent, QueueFull, Request,
                      RequestHandle, Timings, TokenEvent, usage)
from .sampling import Sampler, SamplingParams, complete_utf8
from .scheduler import (Work, choose_slot, plan_step, reservation, reserve_room,
                        reused_prefix)
from .slot import Slot
from .trace import Metrics, Trace

log = logging.getLogger("labkit.engine")


def _gpu_layers(load_log: str) -> int:
    """The layers llama.cpp put on the GPU, from its load log ("offloaded 31/31 layers to
    GPU"; a CPU build prints no such line: 0)."""
    m = re.search(r"offloaded (\d+)/\d+ layers to GPU", load_log)
    return int(m.group(1)) if m else 0


class Engine:
    """A llama.cpp slot server without the HTTP: submit token prompts, stream tokens back.

    >>> from labkit.models.files import default_model_path
    >>> with Engine(EngineConfig(default_model_path(), n_ctx=2048, n_slots=2)) as eng:
    ...     h = eng.submit(eng.tokenize("Hello"), SamplingParams(max_tokens=4, temperature=0))
    ...     h.result().usage["completion_tokens"]
    4
    """

    def __init__(self, config: EngineConfig):
        self.config = cfg = config
        n_slots, unified = cfg.slots, cfg.unified
        if cfg.n_batch < n_slots:
            raise ValueError(f"n_batch ({cfg.n_batch}) must hold one token per slot ({n_slots})")

        load_log = LogCapture()
        add_log_sink(load_log.lines.append)
        try:
            self.model = LlamaModel(cfg.model_path, cfg.n_gpu_layers,
                                    split_mode=cfg.split_mode, main_gpu=cfg.main_gpu)
            # -c 0, as in llama-server: slots x --kv-unified-per-slot when that is given,
            # else the model's training context.
            n_ctx = kv.server_pool(cfg.n_ctx, n_slots, n_ctx_train=self.model.n_ctx_train,
                                   per_slot=cfg.kv_unified_per_slot)
            try:
                self.ctx = LlamaContext(
                    self.model, n_ctx=n_ctx, n_seq_max=n_slots, kv_unified=unified,
                    n_batch=cfg.n_batch, n_ubatch=cfg.n_ubatch, type_k=cfg.type_k,
                    type_v=cfg.type_v, flash_attn=cfg.flash_attn, n_threads=cfg.threads,
                    op_offload=cfg.op_offload, n_outputs_max=n_slots)
            except Exception:
                self.model.close()
                raise
        finally:
            remove_log_sink(load_log.lines.append)
            llama_log = logging.getLogger("labkit.engine.llama")
            for line in load_log.text.splitlines():
                if line.strip():
                    llama_log.info("%s", line)

        planned = kv.slot_context(n_ctx, n_slots, unified, n_ctx_train=self.model.n_ctx_train,
                                  per_slot=cfg.kv_unified_per_slot)
        if (planned.n_ctx, planned.n_ctx_seq) != (self.ctx.n_ctx, self.ctx.n_ctx_seq):
            log.warning("llama.cpp sized the context n_ctx=%d n_ctx_seq=%d, labkit.models.kv predicted "
                        "%d/%d; using llama.cpp's", self.ctx.n_ctx, self.ctx.n_ctx_seq,
                        planned.n_ctx, planned.n_ctx_seq)
        n_ctx_slot = min(self.ctx.n_ctx_seq, self.model.n_ctx_train or self.ctx.n_ctx_seq,
                         cfg.kv_unified_per_slot or self.ctx.n_ctx_seq)
        self.n_ctx_slot = n_ctx_slot
        self.n_batch = self.ctx.n_batch
        self.facts = {
            "n_ctx": self.ctx.n_ctx, "n_ctx_seq": self.ctx.n_ctx_seq, "n_slots": n_slots,
            "n_ctx_slot": n_ctx_slot, "kv_unified": unified,
            "n_ctx_train": self.model.n_ctx_train, "n_batch": self.ctx.n_batch,
            "n_ubatch": self.ctx.n_ubatch, "model_path": cfg.model_path,
            "type_k": cfg.type_k, "type_v": cfg.type_v, "flash_attn": cfg.flash_attn,
            "n_threads": cfg.threads, "cont_batching": cfg.cont_batching,
            "reserve": cfg.reserve, "max_queue": cfg.max_queue,
            "n_gpu_layers": cfg.n_gpu_layers, "gpu_layers": _gpu_layers(load_log.text),
            "op_offload": cfg.op_offload,
        }
        if self.facts["gpu_layers"]:
            from .devices import gpu_devices
            found = [f"{d.name} ({d.description})" for d in gpu_devices()]
            log.info("load_model: %d layers on the GPU device %s", self.facts["gpu_layers"],
                     found[cfg.main_gpu] if cfg.main_gpu < len(found) else "?")
        # The lines llama.cpp and llama-server print at startup, so that the
        # same log parser reads both servers.
        log.info("llama_context: n_ctx         = %d", self.ctx.n_ctx)
        log.info("llama_context: n_ctx_seq     = %d", self.ctx.n_ctx_seq)
        log.info("srv    load_model: initializing, n_slots = %d, n_ctx_slot = %d, "
                 "kv_unified = '%s'", n_slots, n_ctx_slot, "true" if unified else "false")

        self._mem = self.ctx.memory
        self._vocab = self.model.vocab
        self.n_vocab = self.model.n_vocab
        self._pieces = PieceTable(self._vocab)
        self.eog = eog_tokens(self._vocab)    # the end-of-generation tokens (ignore_eos bans them)
        self._eog = frozenset(self.eog)
        self._template = None    # the chat template, read on first use
        self._batch = Batch(self.n_batch, n_slots)
        self._warmup()
        self._slots = [Slot(i, n_ctx_slot) for i in range(n_slots)]
        self._prefill_order: list[Slot] = []     # slots reading prompts, by arrival
        self._waiting: deque[tuple[Request, RequestHandle, Sampler]] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self.trace = Trace(n_slots)
        self._metrics = Metrics()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="labkit-engine", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ public API

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
        return tokenize(self._vocab, text, add_special, parse_special)

    def detokenize(self, tokens: list[int]) -> str:
        return detokenize(self._vocab, list(tokens))

    def token_pieces(self) -> PieceTable:
        """A new table of the tokens' pieces with special tokens written out (``<|im_end|>``),
        as llama-server's /tokenize shows them. One per thread: a table reuses one buffer."""
        return PieceTable(self._vocab, special=True)

    @property
    def template_source(self) -> str:
        """The chat template text of the model's GGUF metadata ("" when it has none)."""
        return template_source(self.model)

    @property
    def template(self):
        """The model's own chat template (:class:`labkit.engine.chat.ChatTemplate`), read once."""
        if self._template is None:
            self._template = chat_template(self.model)
        return self._template

    def apply_template(self, messages: list[dict], add_generation_prompt: bool = True,
                       tools: list[dict] | None = None) -> str:
        """The prompt text for chat ``messages`` (and ``tools``, which the template decides how
        to show), rendered from the model's own chat template as llama-server renders it (see
        :mod:`labkit.engine.chat`). A message's ``content`` is a string or a list of OpenAI
        text parts."""
        return self.template.render(messages, add_generation_prompt, tools=tools)

    def _check_prompt(self, prompt: list[int]) -> None:
        """Refuse a prompt no slot can take: empty (:class:`BadRequest`) or too long for one
        slot (:class:`ContextExceeded`, ``len(prompt) >= n_ctx_slot``)."""
        if not prompt:
            raise BadRequest("the prompt is empty")
        if len(prompt) >= self.n_ctx_slot:
            raise ContextExceeded(len(prompt), self.n_ctx_slot)

    def submit(self, prompt: list[int], params: SamplingParams | None = None,
               on_event: Callable[[Event], None] | None = None) -> RequestHandle:
        """Queue a request; returns at once with its handle.

        Raises :class:`ContextExceeded` if the prompt cannot fit in a slot
        (``len(prompt) >= n_ctx_slot``), :class:`QueueFull` if ``max_queue``
        requests already wait, :class:`BadRequest` for an empty prompt or a grammar
        llama.cpp cannot parse.
        """
        params = params or SamplingParams()
        prompt = list(prompt)
        self._check_prompt(prompt)
        sampler = Sampler(self._vocab, params, self.eog)
        req = Request(prompt, params, on_event, t_submit=self._now())
        handle = RequestHandle(req, self._wake)
        with self._cond:
            if self._closing:
                sampler.close()
                raise RuntimeError("the engine is closed")
            max_queue = self.config.max_queue
            if max_queue is not None:
                n_free = sum(1 for s in self._slots if not s.busy)
                if len(self._waiting) - n_free >= max_queue:
                    sampler.close()
                    raise QueueFull(len(self._waiting))
            self._waiting.append((req, handle, sampler))
            self._cond.notify()
        return handle

    def submit_many(self, requests, on_event: Callable[[Event], None] | None = None
                    ) -> list[RequestHandle]:
        """Queue several ``(prompt, params)`` requests at once: the next step sees all of them,
        as llama-server's loop sees every request that arrived while it was decoding. Each is
        checked as :meth:`submit` checks it before any is queued, so a bad one queues none."""
        requests = [(list(p), params) for p, params in requests]
        for prompt, _ in requests:
            self._check_prompt(prompt)
        with self._cond:                  # an RLock: submit() below takes it again
            max_queue = self.config.max_queue
            if max_queue is not None:
                n_free = sum(1 for s in self._slots if not s.busy)
                if len(self._waiting) + len(requests) - n_free > max_queue:
                    raise QueueFull(len(self._waiting))
            return [self.submit(prompt, params, on_event) for prompt, params in requests]

    def metrics(self) -> dict:
        """llama-server's /metrics values (without the ``llamacpp:`` prefix)."""
        busy = sum(1 for s in self._slots if s.busy)
        return self._metrics.snapshot(busy, len(self._waiting))

    def slots(self) -> list[dict]:
        """One dict per slot, in the spirit of llama-server's /slots."""
        out = []
        for s in self._slots:
            req = s.request
            out.append({
                "id": s.id, "n_ctx": s.n_ctx, "is_processing": s.busy, "state": s.state,
                "id_task": req.id if req is not None else -1,
                "n_tokens": len(s.tokens),   # tokens held in the KV cache (cached prompt)
                "n_prompt_tokens": len(req.prompt) if req is not None else 0,
                "n_cached": s.n_cached, "n_decoded": s.n_decoded,
                "t_last_used": s.t_last_used,
            })
        return out

    def trace_df(self):
        """One row per llama_decode; see :meth:`labkit.engine.trace.Trace.steps_df`."""
        return self.trace.steps_df()

    def slot_trace_df(self):
        """One row per (llama_decode, slot); see :meth:`labkit.engine.trace.Trace.slots_df`."""
        return self.trace.slots_df()

    def clear_trace(self) -> None:
        self.trace.clear()

    def close(self) -> None:
        """Stop the engine thread, end pending requests ('cancelled'), free llama.cpp memory."""
        with self._cond:
            if self._closing and self._thread is None:
                return
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        now = self._now()
        for req, handle, sampler in self._waiting:
            sampler.close()
            self._emit(handle, self._final_for_unstarted(req, "cancelled", "the engine closed"))
        self._waiting.clear()
        for s in self._slots:
            if s.busy:
                self._finish(s, "cancelled", now, error="the engine closed")
        self._batch.close()
        self.ctx.close()
        self.model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ the thread

    def _warmup(self) -> None:
        """Run one throwaway decode, as llama-server does at startup, so that the
        first request does not pay for paging in the weights and building graphs."""
        bos = llama_cpp.llama_vocab_bos(self._vocab)
        tok = bos if bos >= 0 else 0
        self._batch.clear()
        for seq in range(self.facts["n_slots"]):
            self._batch.add(tok, 0, seq, True)
        llama_cpp.llama_decode(self.ctx.ptr, self._batch.view(0, self._batch.n))
        llama_cpp.llama_synchronize(self.ctx.ptr)
        llama_cpp.llama_memory_clear(self._mem, True)
        self._batch.clear()

    def _now(self) -> float:
        return time.perf_counter() - self._t0

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closing and not self._waiting and not any(
                        s.busy for s in self._slots):
                    self._cond.wait()
                if self._closing:
                    return
            try:
                self._step()
            except Exception as exc:  # keep serving: fail the requests in flight
                log.exception("engine step failed")
                now = self._now()
                for s in self._slots:
                    if s.busy:
                        self._clear_kv(s)
                        self._finish(s, "error", now, error=f"engine error: {exc}")

    def _step(self) -> None:
        """One iteration: admit, plan, fill, decode, sample (see the module docstring)."""
        now = self._now()
        self._admit(now)
        work = self._plan()
        if not work:
            if self._waiting and not any(s.busy for s in self._slots):
                time.sleep(0.001)  # cannot happen with a sane config; avoid spinning
            return
        self._fill(work, now)
        for start, n in self._decode(work):  # one part, unless the KV pool is full
            self._sample(work, start, n)

    # ------------------------------------------------------------------ 1. admit

    def _admit(self, now: float) -> None:
        """End cancelled requests, then move waiting requests into free slots in arrival order."""
        self._drop_cancelled(now)
        reserve = self.config.reserve and self.config.unified
        while self._waiting:
            req, handle, sampler = self._waiting[0]
            slot = choose_slot(self._slots, req.prompt, self.config.slot_prompt_similarity)
            if slot is None:
                return
            need = reservation(len(req.prompt), req.params.max_tokens, self.n_ctx_slot)
            if reserve:
                ok, purge = reserve_room(self._slots, slot, need, self.ctx.n_ctx)
                if not ok:
                    return  # the head of the queue waits; nobody overtakes it
                for other in purge:
                    self._clear_kv(other)
            with self._cond:
                self._waiting.popleft()
            self._start(slot, req, handle, sampler, need if reserve else 0)

    def _start(self, slot: Slot, req: Request, handle: RequestHandle, sampler: Sampler,
               reserved: int) -> None:
        """Seat a request: keep the cached prefix of its prompt, drop the rest of the slot's KV."""
        keep = reused_prefix(slot.tokens, req.prompt, req.params.cache_prompt)
        if keep < len(slot.tokens):
            llama_cpp.llama_memory_seq_rm(self._mem, slot.id, keep, -1)
            del slot.tokens[keep:]
        slot.start(req, handle, sampler, n_cached=keep, reserved=reserved)
        sampler.accept_prompt(req.prompt)
        self._prefill_order.append(slot)

    def _drop_cancelled(self, now: float) -> None:
        """Free the slots of cancelled requests; end cancelled requests still waiting."""
        for s in self._slots:
            if s.busy and s.request.cancelled:
                self._finish(s, "cancelled", now)
        if any(r.cancelled for r, _, _ in self._waiting):
            with self._cond:
                keep = deque()
                for item in self._waiting:
                    req, handle, sampler = item
                    if req.cancelled:
                        sampler.close()
                        self._emit(handle, self._final_for_unstarted(req, "cancelled"))
                    else:
                        keep.append(item)
                self._waiting = keep

    # ------------------------------------------------------------------ 2. plan

    def _plan(self) -> list[Work]:
        """Choose this step's work: a decode token per generating slot, then prompt chunks."""
        return plan_step(self._slots, self._prefill_order, self.n_batch,
                         self.config.cont_batching)

    # ------------------------------------------------------------------ 3. fill

    def _fill(self, work: list[Work], now: float) -> None:
        """Write the planned tokens into the batch and into the slots' KV mirrors."""
        batch = self._batch
        batch.clear()
        for w in work:
            s = w.slot
            w.start, w.pos0 = batch.n, len(s.tokens)
            if w.action == "decode":
                s.i_batch = batch.add(s.sampled, w.pos0, s.id, True)
                s.tokens.append(s.sampled)
            else:
                if not s.t_start:
                    s.t_start = now
                prompt = s.request.prompt
                chunk = prompt[w.pos0:w.pos0 + w.n]
                last = w.pos0 + w.n == len(prompt)
                batch.add_chunk(chunk, w.pos0, s.id, last)
                s.i_batch = batch.n - 1 if last else -1
                s.tokens.extend(chunk)
                s.n_prompt_done += w.n

    # ------------------------------------------------------------------ 4. decode

    def _decode(self, work: list[Work]) -> Iterator[tuple[int, int]]:
        """llama_decode the batch, yielding each decoded part (start, n) for sampling."""
        # The whole batch in one call, unless the KV pool is full: then purge an
        # idle slot's cache, else retry with half as many tokens, else (not even
        # one token fits) fail every request in flight. The caller samples each
        # part before the next call overwrites its logits.
        batch, ctx = self._batch, self.ctx.ptr
        i, n_try = 0, self.n_batch
        while i < batch.n:
            m = min(n_try, batch.n - i)
            t0 = self._now()
            ret = llama_cpp.llama_decode(ctx, batch.view(i, m))
            if ret == 0:
                llama_cpp.llama_synchronize(ctx)
                t1 = self._now()
                self._record(work, i, m, t0, t1)
                yield i, m
                i += m
                n_try = self.n_batch
            elif ret == 1:
                self._metrics.n_decode_failed_total += 1
                if self._purge_idle_slot():
                    log.warning("KV cache full: purged an idle slot's cache, retrying")
                elif m > 1:
                    n_try = m // 2
                    log.warning("failed to find free space in the KV cache, retrying with "
                                "smaller batch size, i = %d, n_batch = %d, ret = %d", i, n_try, ret)
                else:
                    self._fail_all(CONTEXT_EXCEEDED, i, m, ret)
                    return
            else:
                err = "Invalid input batch." if ret == -1 else f"Compute error (llama_decode returned {ret})."
                self._fail_all(err, i, m, ret)
                return

    def _purge_idle_slot(self) -> bool:
        """Free the cache of one idle slot (unified KV only: split stripes are not shared)."""
        if not self.config.unified:
            return False
        for s in self._slots:
            if not s.busy and s.tokens:
                log.warning("purging slot %d with %d tokens", s.id, len(s.tokens))
                self._clear_kv(s)
                return True
        return False

    def _fail_all(self, err: str, i: int, n: int, ret: int) -> None:
        """llama_decode failed for good: end every request in flight with ``err`` and clear
        their caches (how much of the batch went in is not tracked), as llama-server does."""
        log.error("%s i = %d, n_batch = %d, ret = %d", err, i, n, ret)
        now = self._now()
        for s in self._slots:
            if s.busy:
                self._clear_kv(s)
                self._finish(s, "error", now, error=err)

    def _clear_kv(self, slot: Slot) -> None:
        """Drop everything the KV cache holds for ``slot``."""
        llama_cpp.llama_memory_seq_rm(self._mem, slot.id, -1, -1)
        slot.tokens.clear()

    def _record(self, work: list[Work], i: int, m: int, t0: float, t1: float) -> None:
        """Add the llama_decode of batch[i:i+m] to the trace and the metrics."""
        end = i + m
        n_prefill = n_prefill_seqs = n_decode = attended = 0
        actions = []
        for w in work:
            a, b = max(w.start, i), min(w.start + w.n, end)
            if a >= b:
                continue
            if w.action == "decode":
                n_decode += 1
            else:
                n_prefill += b - a
                n_prefill_seqs += 1
            attended += w.pos0 + (b - w.start)
            actions.append((w.slot.id, w.action, b - a, w.slot.request.id))
        kv_used = sum(len(s.tokens) for s in self._slots) - (self._batch.n - end)
        n_busy = sum(1 for s in self._slots if s.busy)
        self._metrics.on_decode(n_busy)
        self.trace.add(t0, t1, m, n_prefill, n_prefill_seqs, n_decode, attended, kv_used,
                       n_busy, tuple(actions))

    # ------------------------------------------------------------------ 5. sample

    def _sample(self, work: list[Work], i: int, m: int) -> None:
        """Sample a token for every slot whose logits are in batch[i:i+m], and stream it.

        A slot whose chain is a greedy pick and biases (:attr:`Sampler.argmax_only`) takes the
        argmax of its row of the logits, which llama.cpp keeps for the call's outputs in batch
        order; the others run their llama.cpp sampler chain."""
        ctx, end = self.ctx.ptr, i + m
        logits = None
        for w in work:
            s = w.slot
            if i <= s.i_batch < end and s.busy:
                idx = s.i_batch - i
                if s.sampler.argmax_only:
                    if logits is None:
                        rows = np.flatnonzero(self._batch.logits[i:end])
                        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx),
                                                       shape=(len(rows), self.n_vocab))
                    # a decode-only step asks logits of every token: row idx is output idx
                    row = idx if len(rows) == m else int(rows.searchsorted(idx))
                    tok = s.sampler.argmax_of(logits[row])
                else:
                    tok = s.sampler.sample(ctx, idx)
                probs = s.sampler.probs(ctx, idx, tok) if s.request.params.n_probs > 0 else None
                s.i_batch = -1
                self._on_token(s, tok, self._now(), probs)

    def _on_token(self, s: Slot, tok: int, now: float, probs=None) -> None:
        """Take slot ``s``'s new token: stream its text, and finish the request if it is done.
        ``probs``: the token's log-probability and the top ones (:meth:`Sampler.probs`)."""
        s.n_decoded += 1
        s.sampled = tok
        s.t_last = now
        if s.n_decoded == 1:  # the prompt is done; this slot now generates
            s.prompt_done(now)
            self._prefill_order.remove(s)
            self._metrics.on_prompt_done(s.n_prompt_done, now - s.t_start)
        eog = tok in self._eog
        text, hit = ("", False) if eog else s.push_text(self._pieces[tok])
        if not s.text_pending:   # a token that ends inside a character waits for the next
            entry = None
            if probs is not None:
                entry = self._probs_entry(tok, text, *probs)
                s.probs.append(entry)
            # llama-server's chunk for the token that completes a stop string carries the timings
            timings = s.timings(now).as_dict() if hit else None
            self._emit(s.handle, TokenEvent(text, tok, entry, s.n_decoded, timings, s.id))
        params = s.request.params
        # llama-server: no room for the next token; the answer is truncated, whatever else
        # ended it on this token
        full = len(s.tokens) + 1 >= s.n_ctx
        if eog or hit:
            self._finish(s, "stop", now, truncated=full)
        elif params.max_tokens is not None and s.n_decoded >= params.max_tokens:
            self._finish(s, "length", now, truncated=full)
        elif full:
            self._finish(s, "length", now, truncated=True)

    def _probs_entry(self, tok: int, text: str, logprob: float,
                     top: list[tuple[int, float]]) -> dict:
        """A token's entry of llama-server's ``completion_probabilities``: the text sent with
        it, its log-probability, and the top tokens with their pieces (``token`` shows a
        piece's whole characters, ``bytes`` all its bytes)."""
        def piece(t):
            raw = self._pieces[t]
            return raw[:complete_utf8(raw)].decode("utf-8", errors="replace"), list(raw)
        top_entries = []
        for t, lp in top:
            shown, raw = piece(t)
            top_entries.append({"id": t, "token": shown, "bytes": raw, "logprob": lp})
        return {"id": tok, "token": text, "bytes": list(text.encode()), "logprob": logprob,
                "top_logprobs": top_entries}

    def _finish(self, s: Slot, reason: str, now: float, error: str | None = None,
                truncated: bool = False) -> None:
        """Send the held-back text and the FinalEvent; free the slot (its cache kept if asked).
        The bytes of a character cut off at the end are not sent, as in llama-server.
        ``truncated``: the slot had no room for another token."""
        tail, partial = s.flush_text()
        if tail:
            self._emit(s.handle, TokenEvent(tail, -1, None, s.n_decoded, id_slot=s.id))
        req = s.request
        timings = s.timings(now)
        # llama-server counts every request's tokens when its slot is released, whatever ended it.
        self._metrics.on_finished(s.n_decoded, timings.predicted_ms / 1e3,
                                  completed=reason in ("stop", "length"))
        if not req.params.cache_prompt:
            self._clear_kv(s)
        if s in self._prefill_order:
            self._prefill_order.remove(s)
        probs = s.probs
        if s.stop_word and probs:  # llama-server's answer leaves out the stop string's tokens
            n_stop = len(tokenize(self._vocab, s.stop_word, False, False))
            probs = probs[:max(0, len(probs) - n_stop)]
        handle = s.handle
        final = FinalEvent(reason, usage(len(req.prompt), s.n_decoded), timings.as_dict(),
                           error, s.completion(), partial, s.stop_word, probs, s.id, truncated)
        s.free(now)
        self._emit(handle, final)

    @staticmethod
    def _final_for_unstarted(req: Request, reason: str, error: str | None = None) -> FinalEvent:
        return FinalEvent(reason, usage(len(req.prompt), 0), Timings().as_dict(), error, "")

    @staticmethod
    def _emit(handle: RequestHandle, ev: Event) -> None:
        try:
            handle._emit(ev)
        except Exception:  # a client's callback must not stop the engine
            log.exception("on_event callback failed")
