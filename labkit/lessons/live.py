"""Notebook helpers that talk to a live server or an in-process engine.

Asking a running server (:func:`ask`, :func:`ask_messages`), reading its startup facts
(:func:`startup_lines`, :func:`startup_table`), running requests through the engine in
process and keeping its step trace (:func:`run_requests`), the stopwatch of notebook 05
(:func:`source_lines`, :func:`times_agree`, :func:`decode_rates`, :func:`text_agreement`), and
the live experiments of notebooks 06 and 07 (:func:`queue_burst`, :func:`prefix_cache_rows`,
:func:`get_trace`; 06's dependent tasks are written out in the notebook, their harness being the
lesson). Notebooks reach most of them as ``nb.ask`` and
so on, through :mod:`labkit.notebook`, which re-exports them, and the stopwatch helpers as
``live.source_lines`` (``from labkit.lessons import live``); this module never imports the facade.
"""

from __future__ import annotations

import time

from ..lang.i18n import pick, show
from ..machine.atomic import write_atomic
from ..machine.runenv import log_to_file

# ---------------------------------------------------------------------------- talking to a server

def ask(server, text: str, *, max_tokens: int = 32, system: str | None = None,
        temperature: float = 0.0, timeout: float = 300.0, **extra) -> dict:
    """Send one chat request to a running server and return a flat summary:
    ``status`` (HTTP), ``content``, ``finish_reason``, ``usage``, ``timings``, ``error``
    (the server's error object on a refusal), ``wall_s``."""
    messages = ([{"role": "system", "content": system}] if system else []) + \
               [{"role": "user", "content": text}]
    return ask_messages(server, messages, max_tokens=max_tokens, temperature=temperature,
                        timeout=timeout, seed=extra.pop("seed", None), **extra)


def count_tokens(server, text: str) -> int:
    """How many tokens the server's tokenizer makes of ``text`` (its /tokenize)."""
    import httpx
    r = httpx.post(server.base_url + "/tokenize", json={"content": text}, timeout=60)
    r.raise_for_status()
    return len(r.json()["tokens"])


STARTUP_KEYS = ("n_ctx", "n_ctx_seq", "n_slots", "n_ctx_slot", "kv_unified")


def startup_lines(server) -> list[str]:
    """The startup-log lines that carry n_ctx, n_ctx_seq and the slot line, as printed."""
    keep = []
    for line in server.log_text().splitlines():
        if ("n_ctx " in line or "n_ctx_seq" in line or "initializing, n_slots" in line) \
                and line.strip() not in keep:
            keep.append(line.strip())
    return keep


def document(n_tokens_at_least: int, count, *, seed: int = 0) -> str:
    """A made-up order book: numbered lines about tables and dishes, grown until ``count(text)``
    (a tokenizer, e.g. ``lambda t: nb.count_tokens(srv, t)``) reaches ``n_tokens_at_least``."""
    import random
    rng = random.Random(seed)
    dishes = ["soup", "noodles", "dumplings", "rice", "tea", "bread", "salad", "fish", "tofu"]
    lines: list[str] = []
    step = 4
    while True:
        for _ in range(step):
            i = len(lines) + 1
            lines.append(f"Order {i}: table {rng.randint(1, 12)} asks for "
                         f"{rng.choice(dishes)} and {rng.choice(dishes)}.")
        text = "\n".join(lines)
        if count(text) >= n_tokens_at_least:
            return text


def per_request(runs: dict, metric: str = "e2e"):
    """One column per simulator run, one row per request: ``metric`` (e2e, ttft, tpot...),
    plus, for two runs, whether the second served that request later than the first."""
    import pandas as pd
    df = pd.DataFrame({k: r.requests.set_index("id")[metric] for k, r in runs.items()})
    if len(runs) == 2:
        a, b = df.columns
        df[f"later with {b}"] = df[b] > df[a]
    return df


# ---------------------------------------------------------------------------- in-process engine

class EngineRun:
    """What :func:`run_requests` saw: ``requests`` (one row each), ``steps`` (the engine's
    step trace), ``slots`` (its slot trace, request ids renumbered 0..n-1), ``facts`` and the
    ``config`` it ran."""

    def __init__(self, requests, steps, slots, facts, config=None):
        self.requests, self.steps, self.slots, self.facts = requests, steps, slots, facts
        self.config = config        # what produced it (labkit.bench.provenance.caption reads it)

    def slot_table(self):
        return self.slots

    def __repr__(self):
        return (f"EngineRun({len(self.requests)} requests, {len(self.steps)} steps, "
                f"{self.facts['n_slots']} slots)")


def run_requests(config, prompts, max_tokens, *, temperature: float = 0.0,
                 ignore_eos: bool = True, cache_prompt: bool = False) -> EngineRun:
    """Submit every prompt at once to an in-process :class:`labkit.engine.Engine`, wait for
    all of them, close the engine, and return an :class:`EngineRun`.

    ``prompts``: user messages (formatted with the model's chat template) or token lists.
    ``max_tokens``: one int for all, or one per prompt. ``ignore_eos=True`` makes every
    request generate exactly max_tokens (unless its slot or the pool fills up), so runs
    are repeatable.
    """
    import pandas as pd

    from ..engine import Engine, SamplingParams
    log_to_file()  # the engine's log goes to a file, not the cell
    if isinstance(max_tokens, int):
        max_tokens = [max_tokens] * len(prompts)
    with Engine(config) as eng:
        handles, n_prompt = [], []
        for p, n in zip(prompts, max_tokens):
            toks = p if isinstance(p, list) else eng.tokenize(
                eng.apply_template([{"role": "user", "content": p}]))
            n_prompt.append(len(toks))
            handles.append(eng.submit(toks, SamplingParams(
                max_tokens=n, temperature=temperature, ignore_eos=ignore_eos,
                cache_prompt=cache_prompt, seed=0)))
        finals = [h.result() for h in handles]
        steps, slots, facts = eng.trace_df(), eng.slot_trace_df(), dict(eng.facts)
    local = {h.id: i for i, h in enumerate(handles)}
    slots = slots.assign(request_id=slots["request_id"].map(local).astype("Int64"))
    work = slots[slots["action"] != "idle"]
    g = work.groupby("request_id")
    pre = work[work["action"] == "prefill"].groupby("request_id")["t_end"].max()
    rows = []
    for i, (f, n) in enumerate(zip(finals, max_tokens)):
        rows.append({
            "request": i, "prompt_tokens": n_prompt[i], "max_tokens": n,
            "generated": (f.usage or {}).get("completion_tokens", 0),
            "finish_reason": f.finish_reason, "error": f.error,
            "slot": int(g["slot"].first().get(i, -1)) if i in g.groups else None,
            "first_token_s": pre.get(i), "finish_s": g["t_end"].max().get(i),
        })
    return EngineRun(pd.DataFrame(rows).set_index("request"), steps, slots, facts, config)


# ---------------------------------------------------------------------------- startup facts

def startup_table(configs, *, prompt: str | None = None):
    """Start each ServerConfig in turn (each stopped before the next starts) and put side by
    side what labkit.models.kv predicts, what the startup log says and what /props says."""
    import pandas as pd

    from ..models import kv
    from ..server.launch import launch
    from ..models.files import describe
    from ..settings import resolve_slots
    n_ctx_train = describe(with_hash=False).n_ctx_train
    rows = []
    for cfg in configs:
        slots, unified = resolve_slots(cfg.n_slots, cfg.kv_unified)
        want = kv.slot_context(cfg.n_ctx, slots, unified, n_ctx_train=n_ctx_train,
                               per_slot=cfg.kv_unified_per_slot)
        with launch(cfg) as srv:
            facts, props = dict(srv.facts), srv.props()
        rows.append({
            "-c": cfg.n_ctx, "-np": cfg.n_slots,
            "KV flag": {None: pick("(none)", "（無）"), True: "--kv-unified",
                        False: "--no-kv-unified"}[cfg.kv_unified],
            "predicted n_ctx_seq": want.n_ctx_seq, "log n_ctx_seq": facts.get("n_ctx_seq"),
            "predicted n_ctx_slot": want.n_ctx_slot, "log n_ctx_slot": facts.get("n_ctx_slot"),
            "/props n_ctx": props["default_generation_settings"]["n_ctx"],
            "log n_slots": facts.get("n_slots"), "log kv_unified": facts.get("kv_unified"),
            "match": (facts.get("n_ctx_seq"), facts.get("n_ctx_slot"),
                      props["default_generation_settings"]["n_ctx"], facts.get("n_slots"),
                      facts.get("kv_unified")) == (want.n_ctx_seq, want.n_ctx_slot,
                                                   want.n_ctx_slot, slots, unified),
        })
    return pd.DataFrame(rows)


def queue_burst(config, prompt: str, n: int, max_tokens: int):
    """Send ``n`` copies of ``prompt`` at once to an in-process engine built from ``config``
    (an :class:`labkit.engine.EngineConfig`; its ``max_queue`` bounds the waiting room, as
    llama-server's ``--max-queue`` does) and return one row per request: ``outcome``
    (``served`` or ``refused``, the engine's QueueFull, a 503 from the server), ``answer_s``
    (seconds from the burst until the request had its answer or its refusal) and ``generated``."""
    import pandas as pd

    from ..engine import Engine, SamplingParams
    from ..engine.request import QueueFull
    log_to_file()  # the engine's log goes to a file, not the cell
    rows = []
    with Engine(config) as eng:
        toks = eng.tokenize(eng.apply_template([{"role": "user", "content": prompt}]))
        t0 = time.perf_counter()
        handles = []
        for i in range(n):
            try:
                handles.append((i, eng.submit(toks, SamplingParams(
                    max_tokens=max_tokens, temperature=0.0, ignore_eos=True, seed=0))))
            except QueueFull:
                rows.append({"request": i, "outcome": "refused",
                             "answer_s": time.perf_counter() - t0, "generated": 0})
        for i, h in handles:
            f = h.result()
            rows.append({"request": i, "outcome": "served" if f.error is None else "failed",
                         "answer_s": time.perf_counter() - t0,
                         "generated": (f.usage or {}).get("completion_tokens", 0)})
    return pd.DataFrame(rows).sort_values("request").set_index("request")


# ---------------------------------------------------------------------------- the stopwatch (notebook 05)

def source_lines(fn, *needles: str) -> str:
    """The lines of ``fn``'s source that contain any of ``needles``, each with its line number
    in the file, so a notebook can show where a library takes a measurement."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return "\n".join(f"{first + i:4d}  {line.rstrip()}" for i, line in enumerate(lines)
                     if any(n in line for n in needles))


def times_agree(a: float, b: float, *, rel: float = 0.25, abs_s: float = 0.1) -> bool:
    """Whether two timings of the same thing agree: within ``abs_s`` seconds or ``rel`` of the
    larger, whichever is looser (a request timed twice on a shared machine is not timed twice
    alike)."""
    return abs(a - b) <= max(abs_s, rel * max(abs(a), abs(b)))


def decode_rates(rows):
    """Per successful request of a :func:`labkit.bench.measure` result: the server's own decode
    speed (``timings.predicted_per_second``: tokens over the span from its first sampled token
    to its last) next to the client's ``completion_tokens / completion_s`` (the whole time from
    sending, so it also holds the wait for a slot and the prompt's prefill), and the decode
    speed read off the client's clock, ``(tokens - 1) / (end - first token)``. A request of one
    token has no decode span: both decode speeds are left empty (NaN)."""
    import pandas as pd
    ok = rows[rows["error"].isna()].copy()
    tokens = pd.to_numeric(ok["completion_tokens"], errors="coerce")
    ok["server_decode_tok_s"] = pd.to_numeric(pd.Series(
        [(t or {}).get("predicted_per_second") if isinstance(t, dict) else None
         for t in ok["timings"]], index=ok.index, dtype=object), errors="coerce")
    ok["client_tok_s"] = tokens / ok["completion_s"]
    ok["client_decode_tok_s"] = (tokens - 1) / (ok["end_s"] - ok["first_chunk_s"])
    # One token has no decode span: its "rate" is a token over a few microseconds.
    one = ~(tokens > 1)
    ok.loc[one, ["server_decode_tok_s", "client_decode_tok_s"]] = float("nan")
    ok["prefill_and_wait_share"] = ok["ttft_s"] / ok["completion_s"]
    return ok[["workload", "kv_mode", "slots", "round", "doc_id", "completion_tokens", "ttft_s",
               "completion_s", "server_decode_tok_s", "client_decode_tok_s", "client_tok_s",
               "prefill_and_wait_share"]].reset_index(drop=True)


def text_agreement(rows, baseline_slots: int = 1):
    """Compare every answer of a :func:`labkit.bench.measure` result with the answer the
    ``baseline_slots`` configuration gave to the same document (same workload and round, the
    baseline's KV mode being the first one found). One row per configuration: documents
    compared, identical answers, and for the first that differ, where the two texts part.
    A table to read: under LABKIT_LANG=zh-TW its headings are Chinese."""
    import pandas as pd
    ok = rows[rows["error"].isna()]
    out = []
    for (wl, rnd), g in ok.groupby(["workload", "round"], sort=False):
        base = g[g["slots"] == baseline_slots]
        if base.empty:
            continue
        base = base[base["kv_mode"] == base["kv_mode"].iloc[0]].set_index("doc_id")["answer"]
        for (kv, slots), c in g.groupby(["kv_mode", "slots"], sort=False):
            same, first_diff = 0, None
            both = [(d, a) for d, a in zip(c["doc_id"], c["answer"]) if d in base.index]
            for doc, answer in both:
                if answer == base[doc]:
                    same += 1
                elif first_diff is None:
                    at = next((i for i, (x, y) in enumerate(zip(answer, base[doc])) if x != y),
                              min(len(answer), len(base[doc])))
                    first_diff = pick(f"{doc}: from character {at}: ",
                                      f"{doc}：從第 {at} 個字元起：") + \
                        f"{answer[at:at + 30]!r} vs {base[doc][at:at + 30]!r}"
            out.append({"workload": wl, "round": rnd, "kv_mode": kv, "slots": slots,
                        "compared": len(both), "identical": same, "first difference": first_diff})
    return show(pd.DataFrame(out))


# ---------------------------------------------------------------------------- counterexamples (notebook 06)

def ask_messages(server, messages: list[dict], *, max_tokens: int = 64, temperature: float = 0.0,
                 timeout: float = 600.0, seed: int | None = 42, **extra) -> dict:
    """:func:`ask` for a whole message list (system, worked example, document...)."""
    import httpx
    body = {"model": "local", "messages": messages, "max_tokens": max_tokens,
            "temperature": temperature, **({"seed": seed} if seed is not None else {}), **extra}
    t0 = time.perf_counter()
    r = httpx.post(server.base_url + "/v1/chat/completions", json=body, timeout=timeout)
    wall = time.perf_counter() - t0
    data = r.json()
    out = {"status": r.status_code, "wall_s": wall, "content": None, "finish_reason": None,
           "usage": data.get("usage"), "timings": data.get("timings"), "error": data.get("error")}
    if r.status_code == 200:
        out["content"] = data["choices"][0]["message"]["content"]
        out["finish_reason"] = data["choices"][0]["finish_reason"]
    return out


def prefix_cache_rows(server, workload, *, cache_prompt: bool, max_tokens: int = 8):
    """Send ``workload``'s documents one after another with ``cache_prompt`` on or off and
    return the server's own prompt accounting per request: ``prompt_n`` (tokens it had to
    process), ``cache_n`` (tokens reused from the slot's cache) and ``prompt_ms``."""
    import pandas as pd
    rows = []
    for doc in workload.documents:
        r = ask_messages(server, workload.messages(doc), max_tokens=max_tokens,
                         cache_prompt=cache_prompt)
        t = r["timings"] or {}
        rows.append({"doc": doc.id, "cache_prompt": cache_prompt, "status": r["status"],
                     "prompt_tokens": (r["usage"] or {}).get("prompt_tokens"),
                     "prompt_n": t.get("prompt_n"), "cache_n": t.get("cache_n", 0),
                     "prompt_ms": t.get("prompt_ms")})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- capacity planning (notebook 08)

def get_trace(server, since: int = 0, kind: str = "steps"):
    """labkit's server's step trace (``GET /trace``) as a DataFrame, from step ``since`` on."""
    import httpx
    import pandas as pd
    r = httpx.get(server.base_url + "/trace", params={"kind": kind, "since": since}, timeout=60)
    r.raise_for_status()
    return pd.DataFrame(r.json())
