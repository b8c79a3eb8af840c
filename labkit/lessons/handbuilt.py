"""Companions of a batcher built by hand (notebook 02): the same prompts through labkit's
engine, and the two step tables side by side.

A hand-built batcher and the engine describe each ``llama_decode`` the same way, as a *step*::

    (ms, [(slot, request, action, n_tokens), ...])

``ms`` is how long the call took; the list holds, in batch order, what each busy slot put
into the batch: ``"prefill"`` and how many prompt tokens, or ``"decode"`` and 1. ``request``
is the prompt's index in the list given to the batcher. The functions here:

- :func:`chat_tokens`: questions to token lists through the model's own chat template, as the
  engine renders and tokenizes them;
- :func:`context`: a llama.cpp context made exactly as :class:`labkit.engine.Engine` makes its
  own (same context size, sequences, batch sizes, threads), so that the same batches give the
  same numbers;
- :func:`engine_run`: the prompts through the engine at temperature 0, all queued before its
  first step, with its texts and its step table;
- :func:`schedule`: the steps the engine's rules give for prompt and answer lengths, without
  a model (what the exercises count);
- :func:`step_table`, :func:`side_by_side`, :func:`first_difference`: reading step lists.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace

Work = tuple[int, int, str, int]          # (slot, request, action, n_tokens)
Step = tuple[float, list[Work]]           # (ms, work in batch order)

N_CTX = 1024                              # two slots of 512 tokens: room for short chats


@dataclass
class Run:
    """What a batcher returned: each request's text and one entry per llama_decode."""

    texts: list[str]
    steps: list[Step]
    finish_reasons: list[str] | None = None
    config: object = None                 # the engine's config, for a run of the engine


def chat_tokens(model, vocab, questions: list[str]) -> list[list[int]]:
    """Each question as one user message, rendered with the model's own chat template and
    tokenized, exactly as :meth:`labkit.engine.Engine.apply_template` and
    :meth:`~labkit.engine.Engine.tokenize` do. ``model`` and ``vocab``: llama.cpp handles
    (``llama_model_load_from_file`` and ``llama_model_get_vocab``)."""
    from ..engine.native import chat_template, tokenize
    template = chat_template(SimpleNamespace(ptr=model, vocab=vocab))
    return [tokenize(vocab, template.render([{"role": "user", "content": q}], True))
            for q in questions]


def engine_config(n_slots: int, *, n_ctx: int = N_CTX, n_batch: int = 2048, model_path=None):
    """The :class:`~labkit.engine.EngineConfig` both sides use (split KV, one stripe a slot),
    with the prefix match off (``slot_prompt_similarity=0``, llama-server's ``-sps 0``): the
    engine, like llama-server, would otherwise seat a request in the free slot holding the
    most of its prompt, caching or not; the batcher seats it in the slot free longest."""
    from ..engine import EngineConfig
    from ..models.files import resolve_model
    return EngineConfig(str(resolve_model(model_path)), n_ctx=n_ctx, n_slots=n_slots,
                        n_batch=n_batch, slot_prompt_similarity=0)


@contextmanager
def context(n_slots: int, *, n_ctx: int = N_CTX, n_batch: int = 2048, model_path=None):
    """A fresh llama.cpp context made as the engine makes its own for the same settings, but
    with llama.cpp's default room for logits (any token may ask: the engine asks one per slot,
    and a batcher written by hand may ask more, which a context sized as the engine's would
    refuse by stopping the process).

    Yields a namespace with ``ctx`` and ``vocab`` (the raw handles a batcher takes) and
    ``n_batch``; everything is freed when the block ends."""
    from ..engine.native import LlamaContext, LlamaModel, quiet_llama
    cfg = engine_config(n_slots, n_ctx=n_ctx, n_batch=n_batch, model_path=model_path)
    with quiet_llama():
        model = LlamaModel(cfg.model_path, cfg.n_gpu_layers)
        try:
            ctx = LlamaContext(model, n_ctx=cfg.n_ctx, n_seq_max=cfg.slots,
                               kv_unified=cfg.unified, n_batch=cfg.n_batch,
                               n_ubatch=cfg.n_ubatch, type_k=cfg.type_k, type_v=cfg.type_v,
                               flash_attn=cfg.flash_attn, n_threads=cfg.threads)
        except Exception:
            model.close()
            raise
    try:
        yield SimpleNamespace(ctx=ctx.ptr, vocab=model.vocab, model=model.ptr,
                              n_batch=ctx.n_batch)
    finally:
        ctx.close()
        model.close()


def engine_run(prompts: list[list[int]], n_slots: int, max_tokens: int, *,
               n_ctx: int = N_CTX, n_batch: int = 2048, model_path=None) -> Run:
    """The prompts (token lists) through :class:`labkit.engine.Engine` at temperature 0, with
    ``max_tokens`` each and no prompt caching (a finished request's cells are dropped, as a
    hand-built batcher drops them), every prompt queued before the engine's first step.
    Returns the texts and the engine's step table in the hand-built batcher's form."""
    from ..engine import Engine, SamplingParams
    from ..machine.runenv import log_to_file
    log_to_file()
    params = SamplingParams(max_tokens=max_tokens, temperature=0, cache_prompt=False)
    config = engine_config(n_slots, n_ctx=n_ctx, n_batch=n_batch, model_path=model_path)
    with Engine(config) as eng:
        # Queued together, so the first step sees all of them, as a batcher given the whole
        # list does.
        handles = eng.submit_many((p, params) for p in prompts)
        finals = [h.result() for h in handles]
        records = eng.trace.records()
    index = {h.id: i for i, h in enumerate(handles)}
    steps = [((r[2] - r[1]) * 1e3, [(slot, index[req], action, n)
                                     for slot, action, n, req in r[10]])
             for r in records]
    return Run([f.text for f in finals], steps, [f.finish_reason for f in finals], config)


def schedule(prompt_lens: list[int], n_slots: int, answer_lens: list[int] | int,
             n_batch: int = 2048) -> list[list[Work]]:
    """The work of each step under the engine's rules, for prompts that all arrive at once
    and answers of known lengths (no model: what the exercises count).

    The rules: a free slot takes the next waiting prompt at the start of a step (the slot
    free longest first); each step carries one decode token for every generating slot (in
    slot order), then prompt chunks in arrival order in the room left of ``n_batch``; a
    request's first token comes from the step that reads its prompt's last token; a request
    leaves its slot in the step that samples its last token."""
    if isinstance(answer_lens, int):
        answer_lens = [answer_lens] * len(prompt_lens)
    if n_batch < n_slots:
        raise ValueError(f"n_batch ({n_batch}) must hold one token per slot ({n_slots})")
    waiting = list(range(len(prompt_lens)))
    free = list(range(n_slots))
    seated: dict[int, dict] = {}           # slot -> {"r", "done" (prompt tokens), "made"}
    order: list[int] = []                  # slots reading prompts, by arrival
    steps = []
    while waiting or seated:
        while waiting and free:
            s = free.pop(0)
            seated[s] = {"r": waiting.pop(0), "done": 0, "made": 0}
            order.append(s)
        work = [(s, seated[s]["r"], "decode", 1) for s in sorted(seated)
                if seated[s]["done"] == prompt_lens[seated[s]["r"]]]
        room = n_batch - len(work)
        for s in order:
            left = prompt_lens[seated[s]["r"]] - seated[s]["done"]
            if room > 0 and left > 0:
                n = min(room, left)
                work.append((s, seated[s]["r"], "prefill", n))
                seated[s]["done"] += n
                room -= n
        steps.append(work)
        for s, r, action, _ in work:
            seat = seated[s]
            if seat["done"] < prompt_lens[r]:
                continue                   # a chunk that is not the prompt's last
            if action == "prefill":
                order.remove(s)
            seat["made"] += 1
            if seat["made"] >= answer_lens[r]:
                del seated[s]
                free.append(s)
    return steps


def _cell(work: Work) -> str:
    slot, request, action, n = work
    return f"prefill {n} · #{request}" if action == "prefill" else f"decode · #{request}"


def describe(work: list[Work]) -> str:
    """One step's work in words: ``slot 0 decode #0, slot 1 prefill 34 #2`` (槽位 0 decode #0、
    … under LABKIT_LANG=zh-TW; the actions keep their names, as in the step table)."""
    from ..lang.i18n import pick
    if not work:
        return pick("nothing", "什麼都沒做")
    return pick(", ", "、").join(f"{pick('slot', '槽位')} {s} {a}{f' {n}' if a == 'prefill' else ''}"
                                f" #{r}" for s, r, a, n in work)


def _work(step) -> list[Work]:
    """A step's work list, whether the step carries its time ``(ms, work)`` or not."""
    if isinstance(step, tuple) and len(step) == 2 and isinstance(step[1], list):
        step = step[1]
    work = [tuple(w) for w in step]
    if any(len(w) != 4 for w in work):
        raise ValueError("each entry of a step is (slot, request, action, n_tokens)")
    return work


def pattern(steps) -> list[frozenset]:
    """What each step did, without its time and regardless of batch order."""
    return [frozenset(_work(step)) for step in steps]


def step_table(steps, n_slots: int):
    """One row per llama_decode: its time (ms) and what each slot did (blank: idle)."""
    import pandas as pd
    rows = []
    for step in steps:
        ms = step[0] if isinstance(step, tuple) and len(step) == 2 else float("nan")
        row = {"ms": ms} | {f"slot {s}": "" for s in range(n_slots)}
        for w in _work(step):
            row[f"slot {w[0]}"] = _cell(w)
        rows.append(row)
    df = pd.DataFrame(rows, columns=["ms"] + [f"slot {s}" for s in range(n_slots)])
    df.index.name = "step"
    return df.round({"ms": 1})


def side_by_side(mine, theirs, n_slots: int, names=None):
    """Two step tables next to each other, step by step, and whether each step did the same
    work (``same``); a run with fewer steps has blank rows at the end. ``names``: the two
    tables' titles (default: yours, engine; 你的, 引擎 under LABKIT_LANG=zh-TW)."""
    import pandas as pd

    from ..lang.i18n import pick
    names = names or pick(("yours", "engine"), ("你的", "引擎"))
    a, b = step_table(mine, n_slots), step_table(theirs, n_slots)
    n = max(len(a), len(b))
    a, b = a.reindex(range(n)), b.reindex(range(n))
    pa, pb = pattern(mine), pattern(theirs)
    same = [i < len(pa) and i < len(pb) and pa[i] == pb[i] for i in range(n)]
    df = pd.concat({names[0]: a, names[1]: b}, axis=1)
    df[("", "same")] = same
    df.index.name = "step"
    return df.astype(object).where(df.notna(), "")


def first_difference(mine, theirs, names=None) -> str | None:
    """Where two step lists first part ways, in words (in the language in use), or None when
    every step matches. ``names``: who made each list (default: yours, the engine's)."""
    from ..lang.i18n import pick
    names = names or pick(("yours", "the engine's"), ("你的排程", "引擎"))
    pa, pb = pattern(mine), pattern(theirs)
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y:
            return pick(f"step {i}: {names[0]} did {describe(sorted(x))}; "
                        f"{names[1]} did {describe(sorted(y))}",
                        f"第 {i} 步：{names[0]}做了 {describe(sorted(x))}；"
                        f"{names[1]}做了 {describe(sorted(y))}")
    if len(pa) != len(pb):
        return pick(f"{names[0]} made {len(pa)} llama_decode calls, {names[1]} {len(pb)}",
                    f"{names[0]}呼叫了 {len(pa)} 次 llama_decode，{names[1]} {len(pb)} 次")
    return None


_guard = {"depth": 0, "real": None}
_guard_lock = threading.Lock()


@contextmanager
def guarded_decode():
    """While the block runs, ``llama_cpp.llama_decode`` refuses a batch larger than its
    context's ``n_batch`` with a ValueError. llama.cpp itself answers such a batch with a
    failed assertion that ends the whole process (a notebook's kernel with it), so a check
    that runs a learner's batcher wraps it in this. Blocks may overlap, in several threads (a
    batcher stopped at its time limit may still be running when the next check starts): the
    guard stays until the last of them ends."""
    import llama_cpp
    with _guard_lock:
        if _guard["depth"] == 0:
            real = _guard["real"] = llama_cpp.llama_decode

            def decode(ctx, batch):
                n_max = llama_cpp.llama_n_batch(ctx)
                if batch.n_tokens > n_max:
                    raise ValueError(f"a batch of {batch.n_tokens} tokens went to llama_decode, "
                                     f"but this context takes at most n_batch = {n_max} per call")
                return real(ctx, batch)

            llama_cpp.llama_decode = decode
        _guard["depth"] += 1
    try:
        yield
    finally:
        with _guard_lock:
            _guard["depth"] -= 1
            if _guard["depth"] == 0:
                llama_cpp.llama_decode = _guard["real"]
