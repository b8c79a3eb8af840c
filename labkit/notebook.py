"""Helpers the notebooks share: the banner, quick mode, the recipe, the compute path.

Every notebook starts with::

    from labkit import notebook as nb
    nb.banner()

which prints four lines (versions, machine, model, mode) instead of doctor's
whole report. Quick mode (``LABKIT_QUICK=1``, set by the test suite) shrinks
workloads so a notebook runs in seconds on two CPU cores; :func:`pick` chooses
between the quick and the full size of a number in one place.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

ENV_QUICK = "LABKIT_QUICK"
ENV_RESULTS = "LABKIT_RESULTS"


# ---------------------------------------------------------------------------- quick mode

def quick() -> bool:
    """True when ``LABKIT_QUICK`` is set to anything but ``""``, ``0``, ``false`` or ``no``."""
    v = os.environ.get(ENV_QUICK, "").strip().lower()
    return v not in ("", "0", "false", "no", "off")


def pick(quick_value, full_value):
    """``quick_value`` in quick mode, else ``full_value``."""
    return quick_value if quick() else full_value


# ---------------------------------------------------------------------------- files

def results_dir() -> Path:
    """Where notebooks write what they record (``$LABKIT_RESULTS``, else ``./results``).

    ``results/`` is ignored by git, so recipes and logs written while learning stay local.
    """
    p = Path(os.environ.get(ENV_RESULTS) or "results")
    p.mkdir(parents=True, exist_ok=True)
    return p


_log_handler: logging.Handler | None = None


def log_to_file(name: str = "labkit.log") -> Path:
    """Send labkit's own log (the in-process engine's startup lines, its warnings when the
    KV pool runs out) to a file under :func:`results_dir`, never into a cell. Idempotent."""
    global _log_handler
    path = (results_dir() / name).resolve()
    logger = logging.getLogger("labkit")
    if _log_handler is not None and Path(_log_handler.baseFilename) == path:
        return path
    if _log_handler is not None:
        logger.removeHandler(_log_handler)
        _log_handler.close()
    _log_handler = logging.FileHandler(path, encoding="utf-8")
    _log_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(_log_handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return path


# ---------------------------------------------------------------------------- banner

def _short_report() -> dict:
    from .doctor import collect
    return collect(generate=False)


def banner_text(report: dict | None = None) -> str:
    """The four-line banner: versions, machine, model, mode."""
    r = report or _short_report()
    b = r["llama_cpp"]
    if b.get("ok"):
        src = b.get("llama_cpp_source") or {}
        commit = f"llama.cpp {src['commit']}, " if src.get("commit") else ""
        llama = (f"llama-cpp-python {b['version']} ({commit}"
                 f"{'GPU offload build' if b['gpu_offload'] else 'CPU build'})")
    else:
        llama = f"llama-cpp-python missing: {b.get('error')}"
    if r["gpus"]:
        gpu = "; ".join(f"GPU {g['index']} {g['name']} {g['memory_total_bytes'] / 2**30:.0f} GiB"
                        for g in r["gpus"])
    else:
        gpu = f"no GPU ({r['gpu_note']})"
    m = r["model"]
    if "error" in m:
        model = f"model: {m['error']}"
    else:
        model = (f"model:   {m['name']} ({m['file_type']}, {m['size_bytes'] / 2**20:.0f} MiB), "
                 f"sha256 {m['sha256'][:16]}…")
    mode = ("quick (LABKIT_QUICK=1: workloads shrunk to run in seconds)" if quick()
            else "full (set LABKIT_QUICK=1 for the quick sizes)")
    return "\n".join([
        f"labkit {r['labkit']} · Python {r['python']} · {llama}",
        f"machine: {r['platform']}, {r['cpu_count']} CPUs, {gpu}",
        model,
        f"mode:    {mode}",
    ])


def banner() -> None:
    """Print the banner (the first cell of every notebook)."""
    print(banner_text())


# ---------------------------------------------------------------------------- CPU or GPU

def compute_path(report: dict | None = None) -> dict:
    """Which path this machine takes: ``gpu`` when llama.cpp was built with GPU offload
    *and* a GPU is visible, else ``cpu``; with the reason and the ``-ngl`` to use."""
    r = report or _short_report()
    offload = bool(r["llama_cpp"].get("gpu_offload"))
    gpus = r["gpus"]
    if offload and gpus:
        return {"path": "gpu", "n_gpu_layers": 999, "gpus": gpus,
                "why": f"llama.cpp can offload and NVML sees {len(gpus)} GPU(s)"}
    if gpus and not offload:
        why = ("a GPU is present but this llama-cpp-python is a CPU build: reinstall it with "
               "CMAKE_ARGS=\"-DGGML_CUDA=on\" to use the GPU")
    elif offload:
        why = f"this build can offload, but {r['gpu_note']}"
    else:
        why = f"CPU build of llama.cpp, and {r['gpu_note']}"
    return {"path": "cpu", "n_gpu_layers": 0, "gpus": gpus, "why": why}


def gpus():
    """The NVIDIA GPUs NVML sees (empty on a CPU-only machine)."""
    from .gpu import list_gpus
    return list_gpus()[0]


def skip_without_gpu(what: str) -> bool:
    """For GPU-only cells: True if a GPU is present; otherwise print what is skipped and why."""
    from .gpu import list_gpus
    found, why = list_gpus()
    if found:
        return True
    print(f"skipped: {what}\n  because: {why}. The CPU cells above cover the same idea.")
    return False


# ---------------------------------------------------------------------------- the recipe

def recipe(server_config=None, report: dict | None = None) -> dict:
    """Everything needed to say "same kitchen, same dish": versions, llama.cpp build,
    machine, GPU, model identity (sha256) and, given a ServerConfig, the exact flags."""
    r = report or _short_report()
    b = r["llama_cpp"]
    m = r["model"]
    out = {
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "labkit": r["labkit"],
        "python": r["python"],
        "llama_cpp_python": b.get("version"),
        "llama_cpp_commit": (b.get("llama_cpp_source") or {}).get("commit"),
        "gpu_offload_build": b.get("gpu_offload"),
        "platform": r["platform"],
        "cpu_count": r["cpu_count"],
        "gpus": [f"{g['name']} ({g['memory_total_bytes'] / 2**30:.0f} GiB, driver {g['driver']})"
                 for g in r["gpus"]],
        "model": {k: m.get(k) for k in ("name", "path", "file_type", "size_bytes", "sha256")},
    }
    if server_config is not None:
        out["server_kind"] = server_config.kind
        out["flags"] = server_config.args(m.get("path", "MODEL"), 0)
        # The port is chosen at launch; keep the flags that define the run.
        i = out["flags"].index("--port") if "--port" in out["flags"] else -1
        if i >= 0:
            del out["flags"][i:i + 2]
    return out


def save_recipe(rec: dict, name: str = "recipe.json") -> Path:
    path = results_dir() / name
    path.write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n")
    return path


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


def terms(*names: str):
    """Rows of the shared glossary (English, 中文, restaurant, llama.cpp) for these terms."""
    from .glossary import table
    t = table().set_index("english")
    return t.loc[list(names)] if names else t


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
    step trace), ``slots`` (its slot trace, request ids renumbered 0..n-1) and ``facts``."""

    def __init__(self, requests, steps, slots, facts):
        self.requests, self.steps, self.slots, self.facts = requests, steps, slots, facts

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

    from .engine import Engine, SamplingParams
    log_to_file()
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
    return EngineRun(pd.DataFrame(rows).set_index("request"), steps, slots, facts)


# ---------------------------------------------------------------------------- startup facts

def startup_table(configs, *, prompt: str | None = None):
    """Start each ServerConfig in turn (each stopped before the next starts) and put side by
    side what labkit.kv predicts, what the startup log says and what /props says."""
    import pandas as pd

    from . import kv
    from .launch import launch
    from .models import describe
    n_ctx_train = describe(with_hash=False).n_ctx_train
    rows = []
    for cfg in configs:
        slots = 4 if cfg.n_slots == "auto" else int(cfg.n_slots)
        unified = (cfg.n_slots == "auto") if cfg.kv_unified is None else cfg.kv_unified
        want = kv.slot_context(cfg.n_ctx, slots, unified, n_ctx_train=n_ctx_train,
                               per_slot=cfg.kv_unified_per_slot)
        with launch(cfg) as srv:
            facts, props = dict(srv.facts), srv.props()
        rows.append({
            "-c": cfg.n_ctx, "-np": cfg.n_slots,
            "KV flag": {None: "(none)", True: "--kv-unified", False: "--no-kv-unified"}[cfg.kv_unified],
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


# ---------------------------------------------------------------------------- scheduling (notebook 06)

SATURATION_COLUMNS = ["rate", "throughput_tok_s", "ttft_p50", "ttft_p99", "peak_queue",
                      "per_stream_tok_s", "preemptions"]


def saturation_signals(sweep, *, by: str = "label"):
    """The four saturation signals per offered rate, from :func:`labkit.sim.experiments.sweep_load`:
    TTFT (p50, p99), peak queue depth, per-stream tok/s (1 / median time per output token) and
    preemptions; plus ``saturated``: the queue stayed above zero *and* TTFT p50 is more than
    twice its value at the lowest rate of the same group."""
    import numpy as np
    import pandas as pd
    df = sweep.copy()
    df["per_stream_tok_s"] = 1.0 / df["tpot_p50"].replace(0, np.nan)
    cols = ([by] if by in df.columns else []) + SATURATION_COLUMNS
    out = []
    groups = df.groupby(by, sort=False) if by in df.columns else [("", df)]
    for _, g in groups:
        g = g.sort_values("rate")[cols].copy()
        base = float(g["ttft_p50"].iloc[0])
        g["saturated"] = (g["peak_queue"] > 0) & (g["ttft_p50"] > 2 * base)
        out.append(g)
    return pd.concat(out, ignore_index=True)


def first_saturated_rate(signals) -> float | None:
    """The lowest offered rate flagged ``saturated`` in :func:`saturation_signals` (None if none)."""
    hit = signals[signals["saturated"]]
    return float(hit["rate"].min()) if len(hit) else None


def queue_burst(config, prompt: str, n: int, max_tokens: int):
    """Send ``n`` copies of ``prompt`` at once to an in-process engine built from ``config``
    (an :class:`labkit.engine.EngineConfig`; its ``max_queue`` bounds the waiting room, as
    llama-server's ``--max-queue`` does) and return one row per request: ``outcome``
    (``served`` or ``refused``, the engine's QueueFull, a 503 from the server), ``answer_s``
    (seconds from the burst until the request had its answer or its refusal) and ``generated``."""
    import pandas as pd

    from .engine import Engine, SamplingParams
    from .engine.request import QueueFull
    log_to_file()
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


# ---------------------------------------------------------------------------- reading a worksheet (notebook 04)

def read_worksheet(ws):
    """Read a :func:`labkit.bench.worksheet` honestly: each config against the 1-slot config of
    the same workload (its baseline; the same KV mode when there is one, else the other: one slot
    holds the same cells either way). Returns one row per config with
    ``tok_s_vs_1_slot`` (ratio of output tok/s), ``completion_p50_vs_1_slot`` (ratio of the
    median single request's send-to-end time), ``single_requests_slower`` (that ratio > 1),
    ``failed`` (requests with an error) and ``verdict``. Configs without a 1-slot baseline,
    or whose throughput is undefined because a request failed, get NaN ratios."""
    import math

    import pandas as pd
    rows = []
    for _, r in ws.iterrows():
        ones = ws[(ws["workload"] == r["workload"]) & (ws["slots"] == 1)]
        same = ones[ones["kv_mode"] == r["kv_mode"]]
        # With one slot, split and unified hold the same cells; either is the baseline.
        base = same.iloc[0] if len(same) else (ones.iloc[0] if len(ones) else None)

        def ratio(col):
            if base is None or pd.isna(r[col]) or pd.isna(base[col]) or base[col] == 0:
                return math.nan
            return float(r[col]) / float(base[col])
        c = ratio("completion_p50_s")
        rows.append({"kv_mode": r["kv_mode"], "slots": int(r["slots"]), "workload": r["workload"],
                     "output_tok_s": r["output_tok_s"], "tok_s_vs_1_slot": ratio("output_tok_s"),
                     "completion_p50_s": r["completion_p50_s"], "completion_p50_vs_1_slot": c,
                     "single_requests_slower": bool(c > 1) if not math.isnan(c) else None,
                     "failed": int(r["errors"]), "verdict": r["verdict"]})
    return pd.DataFrame(rows)


def findings(reading) -> list[str]:
    """Plain sentences from :func:`read_worksheet`: where total tok/s rose, where single
    requests got slower, where requests failed. Only what the numbers say."""
    out = []
    for _, r in reading.iterrows():
        name = f"{r['workload']}, {r['kv_mode']}, {r['slots']} slot{'s' if r['slots'] != 1 else ''}"
        if r["failed"]:
            out.append(f"{name}: {r['failed']} request(s) failed, so its throughput is not a "
                       f"result ({r['verdict']}).")
            continue
        if r["slots"] == 1 or r["tok_s_vs_1_slot"] != r["tok_s_vs_1_slot"]:
            continue
        change = "rose" if r["tok_s_vs_1_slot"] > 1 else "did not rise"
        line = f"{name}: total tok/s {change} (x{r['tok_s_vs_1_slot']:.2f} of 1 slot)"
        c = r["completion_p50_vs_1_slot"]
        if c == c:
            line += (f"; the median single request took x{c:.2f} as long"
                     + (" (slower)" if c > 1 else " (not slower)"))
        out.append(line + f"; {r['verdict']}.")
    return out


# ---------------------------------------------------------------------------- counterexamples (notebook 05)

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


def extract_then_sort(server, workload, out_dir, *, in_flight: int = 2, max_tokens: int = 64):
    """The dependent-task pattern. Step A: extract owner and deadline from every document of
    ``workload``, ``in_flight`` at a time (independent tasks, run in parallel); each task writes
    only its own file ``out_dir/<task id>.json``. Step B: only after every A task has finished,
    read those files and sort the documents by deadline.

    Returns ``(tasks, ordered)``: one row per A task (task id, start/end seconds, status,
    whether its answer graded correct, the file it wrote) and B's sorted table (tasks whose
    answer could not be read are listed with ``deadline`` None at the end, never guessed)."""
    import json as _json
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path as _Path

    import pandas as pd

    from .bench.grading import grade
    out_dir = _Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def task_a(doc):
        start = time.perf_counter() - t0
        r = ask_messages(server, workload.messages(doc), max_tokens=max_tokens)
        end = time.perf_counter() - t0
        g = grade(r["content"], doc.answer) if r["content"] is not None else None
        try:
            parsed = _json.loads(r["content"]) if r["content"] else None
        except ValueError:
            parsed = None
        record = {"task_id": doc.id, "status": r["status"], "answer": parsed,
                  "raw": r["content"], "error": r["error"]}
        path = out_dir / f"{doc.id}.json"
        path.write_text(_json.dumps(record, ensure_ascii=False, indent=1))
        return {"task_id": doc.id, "start_s": start, "end_s": end, "status": r["status"],
                "correct": bool(g and g.ok), "file": str(path)}

    with ThreadPoolExecutor(max_workers=in_flight) as pool:
        tasks = list(pool.map(task_a, workload.documents))
    b_start = time.perf_counter() - t0
    rows = []
    for t in tasks:                                     # step B reads only what A wrote
        rec = _json.loads(_Path(t["file"]).read_text())
        ans = rec["answer"] if isinstance(rec["answer"], dict) else {}
        rows.append({"task_id": rec["task_id"], "owner": ans.get("owner"),
                     "deadline": ans.get("deadline") if isinstance(ans.get("deadline"), str) else None})
    ordered = pd.DataFrame(rows)
    ordered = pd.concat([ordered[ordered["deadline"].notna()].sort_values("deadline"),
                         ordered[ordered["deadline"].isna()]], ignore_index=True)
    tasks = pd.DataFrame(tasks)
    tasks.attrs["b_start_s"] = b_start
    return tasks, ordered


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


# ---------------------------------------------------------------------------- capacity planning (notebook 07)

def get_trace(server, since: int = 0, kind: str = "steps"):
    """labkit's server's step trace (``GET /trace``) as a DataFrame, from step ``since`` on."""
    import httpx
    import pandas as pd
    r = httpx.get(server.base_url + "/trace", params={"kind": kind, "since": since}, timeout=60)
    r.raise_for_status()
    return pd.DataFrame(r.json())


def replay(rows, cost, slots: int, *, kv=None):
    """Simulate the requests of a bench run (``prompt_tokens`` and ``completion_tokens`` of each
    row that was answered) all arriving at once, on ``slots`` slots with step cost ``cost``: what
    the simulator predicts for a closed-loop run with as many requests in flight as slots."""
    from . import sim
    ok = rows[rows["error"].isna()]
    reqs = [{"id": i, "arrival": 0.0, "prompt_tokens": int(p), "output_tokens": max(1, int(c))}
            for i, (p, c) in enumerate(zip(ok["prompt_tokens"], ok["completion_tokens"]))]
    return sim.simulate(reqs, slots=slots, cost=cost, kv=kv)


def prediction_error(measured: dict, predicted: dict):
    """One row per quantity: measured, predicted, and (predicted - measured) / measured."""
    import pandas as pd
    rows = []
    for k, m in measured.items():
        p = predicted[k]
        rows.append({"quantity": k, "measured": m, "predicted": p,
                     "error": (p - m) / m if m else float("nan")})
    return pd.DataFrame(rows).set_index("quantity")


# Share of the peak hour's traffic in each hour of a working day (0:00 .. 23:00): quiet at night,
# a morning ramp, a lunch dip, an afternoon peak. A shape to edit, not a measurement.
DAY_PROFILE = (0.05, 0.03, 0.02, 0.02, 0.03, 0.08, 0.2, 0.45, 0.8, 1.0, 0.95, 0.85,
               0.6, 0.85, 1.0, 0.95, 0.8, 0.6, 0.4, 0.3, 0.2, 0.15, 0.1, 0.07)


def day_of_traffic(peak_rate: float, *, profile=DAY_PROFILE, prompt=180, output=64,
                   seed: int = 0):
    """Poisson arrivals hour by hour: hour h gets ``peak_rate * profile[h]`` requests/s.
    ``prompt`` / ``output``: token lengths (an int or a labkit.sim length distribution)."""
    import dataclasses

    from . import sim
    reqs = []
    for h, share in enumerate(profile):
        rate = peak_rate * share
        n = int(round(rate * 3600))
        if n == 0:
            continue
        for r in sim.poisson(n, rate=rate, prompt=prompt, output=output, seed=seed + h):
            if r.arrival < 3600:
                reqs.append(dataclasses.replace(r, arrival=r.arrival + 3600 * h, id=len(reqs)))
    return reqs


def hourly(result):
    """Per hour of a simulated day: requests, TTFT p50/p99 and the deepest queue."""
    import numpy as np
    import pandas as pd
    req = result.requests.assign(hour=(result.requests["arrival"] // 3600).astype(int))
    q = result.queue_depth().assign(hour=lambda d: (d["t"] // 3600).astype(int))
    out = req.groupby("hour").agg(requests=("id", "size"),
                                  ttft_p50=("ttft", "median"),
                                  ttft_p99=("ttft", lambda s: float(np.nanpercentile(s, 99))))
    out["max_queue"] = q.groupby("hour")["queue_depth"].max().reindex(out.index).fillna(0).astype(int)
    return out


def rent_vs_buy(buy_price: float, buy_running_per_month: float, rent_per_hour: float,
                hours_per_month: float, months: int = 36):
    """Cumulative cost of buying (price up front + running cost each month) and renting (hours x
    hourly rate each month) over ``months``, and the break-even month (None if renting stays
    cheaper over the horizon). Every input is yours: quotes, power bills, measured hours."""
    import pandas as pd
    m = pd.RangeIndex(0, months + 1, name="month")
    buy = buy_price + buy_running_per_month * m.to_numpy()
    rent = rent_per_hour * hours_per_month * m.to_numpy()
    table = pd.DataFrame({"buy": buy, "rent": rent}, index=m)
    monthly_gap = rent_per_hour * hours_per_month - buy_running_per_month
    even = buy_price / monthly_gap if monthly_gap > 0 else None
    return {"table": table, "break_even_months": even,
            "break_even_hours": even * hours_per_month if even is not None else None}
