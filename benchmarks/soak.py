#!/usr/bin/env python
"""Soak: a long mixed load on labkit's server and on llama.cpp's llama-server, their memory
over time.

Each server is started through labkit's launcher with the same flags (default ``-c 4096
-np 4 -t 1``, the embedded model) and driven for ``--minutes`` by ``--clients`` closed-loop
clients (default: one per slot), each sending a mix drawn from one seeded generator:

- chat (``/v1/chat/completions``) and ``/completion`` requests, streamed and plain, at
  temperature 0 or 0.8, with and without the prompt cache, a few with ``n_probs`` or a JSON
  schema;
- streams the client leaves after a few chunks (it closes the connection: a cancel);
- bad requests both servers refuse with 400 (malformed JSON, no ``messages``, a negative
  ``max_tokens``, no ``prompt``, a ``/tokenize`` content that is not a string) and an
  unknown path (404);
- ``GET /metrics``, ``/slots``, ``/props``, ``/health`` and ``POST /tokenize``.

Every ``--sample-s`` seconds it records the server's RSS (psutil, its children included) and
llama.cpp's decode count from ``/metrics``. It prints a progress line a minute, then, per
server: requests by kind and status, the 5xx and transport errors, RSS at the start, after
the warm-up, at the end and its peak, and the slope of RSS over the second half of the run
(least squares, MB per minute), also per quarter, so that growth that levels off shows, and
per 1000 llama_decode calls, so that runs at different speeds compare. A request sent on a
kept-alive connection the server had already closed fails at once with nothing answered
(httpx: "Server disconnected without sending a response"); it is counted as an error, not
retried, and the report says which request came before it.

    python benchmarks/soak.py                          # 20 min each, labkit then llama-server
    python benchmarks/soak.py --minutes 40 --servers labkit --out results/soak-labkit
    python benchmarks/soak.py --concurrent             # both at once (2 cores busy, not 1)
    python benchmarks/soak.py --report-from results/soak-...
    python benchmarks/soak.py --servers labkit --tracemalloc 5   # where Python's memory goes

The servers run one after the other by default (``--concurrent`` runs them side by side:
half the time, twice the CPU). A measurement, not a timed test: nothing here passes or
fails, and there is no quiet-machine wait (memory, unlike speed, hardly depends on other
load). Environment variables reach both servers (``MALLOC_ARENA_MAX=2 python
benchmarks/soak.py``). ``--out DIR`` (default ``results/soak-<time>``) keeps ``rss.csv``,
``requests.csv``, ``report.md`` and the servers' logs. Ctrl-C (or SIGTERM) stops the load and
every server it started, and still reports what was measured.

``--tracemalloc MIN`` (labkit's server alone) runs the server with Python's allocation tracing
(``PYTHONTRACEMALLOC``, 5 frames) and asks it for a snapshot (SIGUSR1, answered by
``benchmarks/tracemalloc_hook/sitecustomize.py``, which this script puts on the server's
``PYTHONPATH``; the server holds no code for it) after the warm-up, every MIN minutes, and at the end. The report
then adds where Python's traced memory grew between the first and the last snapshot, by source
line, and how much of the RSS growth over the same span Python's traced allocations account for
(the rest is outside Python's allocator: llama.cpp, glibc's arenas, the interpreter's own).
Tracing slows the server and adds its own memory to RSS, so a traced run's RSS slope is not the
untraced one's: run it beside an untraced soak, not instead of it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from labkit.bench.memory import MemorySampler
from labkit.server.launch import ServerConfig, launch

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20

TOPICS = ["the sea", "a lighthouse", "bread", "winter", "a train", "the moon", "a garden",
          "rain", "a library", "mountains", "a cat", "the desert", "a river", "clocks"]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"]}

# (kind, weight): what one client step sends.
MIX = [("chat", 16), ("chat-stream", 16), ("completion", 8), ("completion-stream", 8),
       ("chat-json", 3), ("completion-probs", 3), ("cancel-stream", 10), ("bad", 10),
       ("not-found", 2), ("metrics", 5), ("slots", 5), ("props", 4), ("health", 4),
       ("tokenize", 6)]
BAD = [  # (path, body): refused with 400 by both servers
    ("/v1/chat/completions", b"{not json"),
    ("/v1/chat/completions", {"max_tokens": 4}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                              "max_tokens": -5}),
    ("/completion", {"n_predict": 2}),
    ("/tokenize", {"content": 5}),
]


# ------------------------------------------------------------------------------ the load

def prompt_text(rng: random.Random) -> str:
    topic = rng.choice(TOPICS)
    n = rng.randint(1, 40)
    return f"Write {n} short sentences about {topic}, number {rng.randint(0, 10**6)}."


def one_request(client: httpx.Client, rng: random.Random, kind: str) -> tuple[int | None, str]:
    """Send one request of ``kind``; (HTTP status, outcome). Outcomes: ok, cancelled (the
    client left the stream), error: ... (the stream or the connection failed)."""
    text = prompt_text(rng)
    temp = rng.choice([0.0, 0.8])
    common = {"temperature": temp, "seed": rng.randint(0, 2**31 - 1),
              "cache_prompt": rng.random() < 0.5}
    messages = [{"role": "user", "content": text}]
    if rng.random() < 0.3:
        messages.insert(0, {"role": "system", "content": "You are a terse assistant."})
    n_tok = rng.randint(4, 48)
    if kind in ("chat", "chat-stream", "chat-json"):
        path = "/v1/chat/completions"
        body = {"messages": messages, "max_tokens": n_tok, **common}
        if kind == "chat-json":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"schema": SCHEMA}}
    elif kind in ("completion", "completion-stream", "completion-probs"):
        path = "/completion"
        body = {"prompt": text, "n_predict": n_tok, **common}
        if kind == "completion-probs":
            body["n_probs"] = 3
    elif kind == "cancel-stream":
        path = rng.choice(["/v1/chat/completions", "/completion"])
        body = ({"messages": messages, "max_tokens": 200, **common} if path.startswith("/v1")
                else {"prompt": text, "n_predict": 200, **common})
        return _stream(client, path, body, leave_after=rng.randint(1, 6))
    elif kind == "bad":
        path, body = rng.choice(BAD)
        r = (client.post(path, content=body, headers={"Content-Type": "application/json"})
             if isinstance(body, bytes) else client.post(path, json=body))
        return r.status_code, "ok"
    elif kind == "not-found":
        return client.get("/no/such/path").status_code, "ok"
    elif kind == "tokenize":
        r = client.post("/tokenize", json={"content": text, "with_pieces": rng.random() < 0.5})
        return r.status_code, "ok"
    else:   # metrics, slots, props, health
        return client.get("/" + kind).status_code, "ok"
    if kind.endswith("-stream"):
        return _stream(client, path, {**body, "stream": True})
    r = client.post(path, json=body)
    return r.status_code, "ok"


def _stream(client: httpx.Client, path: str, body: dict,
            leave_after: int | None = None) -> tuple[int | None, str]:
    """Read a stream to its end, or leave it after ``leave_after`` chunks (closing the
    connection, which is how a client cancels)."""
    with client.stream("POST", path, json={**body, "stream": True}) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, "ok"
        n = 0
        for line in r.iter_lines():
            if not line.startswith("data:"):
                continue
            if line[5:].strip() == "[DONE]":
                break
            chunk = json.loads(line[5:])
            if isinstance(chunk, dict) and chunk.get("error"):
                return r.status_code, f"error: in-stream {chunk['error']}"
            n += 1
            if leave_after is not None and n >= leave_after:
                return r.status_code, "cancelled"   # leaving the with block closes it
        return r.status_code, "ok"


# httpx's words for a request sent on a kept-alive connection the server had already closed.
STALE = "Server disconnected without sending a response"


def client_loop(base_url: str, client_id: int, seed: int, stop: threading.Event, t0: float,
                rows: list, lock: threading.Lock) -> None:
    rng = random.Random(seed)
    kinds, weights = zip(*MIX)
    prev = None
    # One connection pool per client; a cancelled stream's connection is closed, not reused.
    with httpx.Client(base_url=base_url, timeout=300) as client:
        while not stop.is_set():
            kind = rng.choices(kinds, weights)[0]
            t_send = time.perf_counter()
            try:
                status, outcome = one_request(client, rng, kind)
            except httpx.HTTPError as exc:
                if stop.is_set():
                    return     # the server is being stopped: not the server's failure
                status, outcome = None, f"error: {type(exc).__name__}: {exc}"
            t_end = time.perf_counter()
            with lock:
                rows.append({"t_s": round(t_send - t0, 3), "client": client_id, "kind": kind,
                             "status": status, "outcome": outcome,
                             "dur_s": round(t_end - t_send, 4), "after": prev})
            prev = kind


def decode_count(base_url: str) -> float:
    """llama.cpp's llama_decode calls so far, from /metrics (NaN when unreadable)."""
    try:
        for line in httpx.get(base_url + "/metrics", timeout=10).text.splitlines():
            if line.startswith("llamacpp:n_decode_total"):
                return float(line.split()[-1])
    except httpx.HTTPError:
        pass
    return float("nan")


# ------------------------------------------------------------------------------ one server

def soak_one(label: str, cfg: ServerConfig, a, seed: int, stop: threading.Event,
             results: dict, print_lock: threading.Lock) -> None:
    """Start the server, run the load for ``a.minutes``, sample its memory; the server is
    stopped whatever happens. Fills ``results[label]`` as it goes (a Ctrl-C keeps what was
    measured so far)."""
    rss, rows = [], []
    res = results[label] = {"rss": rss, "rows": rows, "command": "", "started": None}
    lock = threading.Lock()
    with launch(cfg) as srv:
        res["command"] = shlex.join(srv.command)
        res["log"] = str(srv.log_path)
        sampler = MemorySampler(srv.pid, interval_s=3600, gpu=False)   # sampled by hand below
        t0 = time.perf_counter()
        res["started"] = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        done = threading.Event()
        clients = [threading.Thread(target=client_loop, name=f"soak-{label}-{i}", daemon=True,
                                    args=(srv.base_url, i, seed * 1000 + i, done, t0, rows, lock))
                   for i in range(a.clients)]
        for c in clients:
            c.start()
        deadline, next_print = t0 + a.minutes * 60, t0 + 60
        snaps = res["snapshots"] = []
        if a.tracemalloc:
            res["tracemalloc_dir"] = os.environ["LABKIT_TRACEMALLOC_DIR"]
        next_snap = t0 + a.warmup_min * 60 if a.tracemalloc else float("inf")
        try:
            while not stop.is_set():
                now = time.perf_counter()
                sampler.sample()
                if sampler.samples:
                    rss.append({"t_s": round(now - t0, 2),
                                "rss_mb": round(sampler.samples[-1][3] / MB, 2),
                                "n_decode_total": decode_count(srv.base_url),
                                "requests": len(rows), "load1": round(os.getloadavg()[0], 2)})
                if now >= next_print:
                    next_print += 60
                    with lock:
                        n = len(rows)
                        n5 = sum(1 for r in rows if (r["status"] or 0) >= 500)
                        nerr = sum(1 for r in rows if r["outcome"].startswith("error"))
                    with print_lock:
                        print(f"{label:12s} {(now - t0) / 60:5.1f}/{a.minutes:g} min  RSS "
                              f"{rss[-1]['rss_mb']:7.1f} MB  requests {n:6d}  5xx {n5}  "
                              f"errors {nerr}  decodes {rss[-1]['n_decode_total']:.0f}  "
                              f"load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
                if now >= next_snap and now < deadline - 30:
                    next_snap += a.tracemalloc * 60
                    snaps.append(ask_for_snapshot(srv.pid, now - t0, rss))
                if now >= deadline or not srv.alive():
                    res["died"] = not srv.alive()
                    if a.tracemalloc and srv.alive():
                        snaps.append(ask_for_snapshot(srv.pid, now - t0, rss))
                        wait_for_snapshots(Path(os.environ["LABKIT_TRACEMALLOC_DIR"]), len(snaps))
                    break
                stop.wait(min(a.sample_s, max(0.0, deadline - now)))
        finally:
            res["ended"] = dt.datetime.now().astimezone().isoformat(timespec="seconds")
            done.set()
            for c in clients:
                c.join(timeout=10)


def ask_for_snapshot(pid: int, t_s: float, rss: list) -> dict:
    """Ask labkit's server for a tracemalloc snapshot; what RSS was then."""
    os.kill(pid, signal.SIGUSR1)
    return {"t_s": round(t_s, 2), "rss_mb": rss[-1]["rss_mb"] if rss else float("nan")}


def wait_for_snapshots(folder: Path, n: int, timeout_s: float = 120) -> None:
    end = time.monotonic() + timeout_s
    while len(list(folder.glob("snapshot-*.pickle"))) < n and time.monotonic() < end:
        time.sleep(1)


# ------------------------------------------------------------------------------ report

def tracemalloc_report(folder: Path, snaps: list[dict], top: int = 15) -> str:
    """Where Python's traced memory grew between the first snapshot and the last, by line,
    and its share of the RSS growth over the same span."""
    import tracemalloc
    files = sorted(folder.glob("snapshot-*.pickle"))
    if len(files) < 2 or len(snaps) < 2:
        return f"tracemalloc: {len(files)} snapshot(s) in {folder}, two are needed\n"
    n = min(len(files), len(snaps))
    keep = [tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    first, last = (tracemalloc.Snapshot.load(str(f)).filter_traces(keep)
                   for f in (files[0], files[n - 1]))
    traced = lambda snap: sum(st.size for st in snap.statistics("filename")) / MB
    minutes = (snaps[n - 1]["t_s"] - snaps[0]["t_s"]) / 60
    d_rss = snaps[n - 1]["rss_mb"] - snaps[0]["rss_mb"]
    d_traced = traced(last) - traced(first)
    out = [f"### Python's traced allocations ({n} snapshots, {minutes:.1f} min apart at the ends)\n",
           f"RSS {snaps[0]['rss_mb']:.1f} -> {snaps[n - 1]['rss_mb']:.1f} MB ({d_rss:+.1f}); "
           f"traced by Python {traced(first):.1f} -> {traced(last):.1f} MB ({d_traced:+.1f}): "
           f"Python's allocations account for {d_traced:+.1f} of {d_rss:+.1f} MB "
           f"({d_traced / minutes:+.3f} of {d_rss / minutes:+.3f} MB/min).\n",
           "| growth (KB) | blocks | where (the newest frame) |", "|---:|---:|---|"]
    for st in last.compare_to(first, "lineno")[:top]:
        frame = st.traceback[0]
        out.append(f"| {st.size_diff / 1024:+.1f} | {st.count_diff:+d} | "
                   f"`{frame.filename.split('site-packages/')[-1]}:{frame.lineno}` |")
    return "\n".join(out) + "\n"


def slope(t_s: pd.Series, mb: pd.Series) -> float:
    """MB per minute, least squares (NaN with fewer than 3 samples)."""
    if len(t_s) < 3:
        return float("nan")
    return float(np.polyfit(t_s / 60, mb, 1)[0])


def summarize_rss(rss: pd.DataFrame, warmup_min: float) -> dict:
    t_end = rss["t_s"].max()
    half = rss[rss["t_s"] >= t_end / 2]
    after = rss[rss["t_s"] >= warmup_min * 60]
    quarters = [rss[(rss["t_s"] >= q * t_end / 4) & (rss["t_s"] <= (q + 1) * t_end / 4)]
                for q in range(4)]
    steps = half["n_decode_total"].iloc[-1] - half["n_decode_total"].iloc[0]
    grew = half["rss_mb"].iloc[-1] - half["rss_mb"].iloc[0]
    return {"minutes": t_end / 60, "samples": len(rss),
            "rss_start": rss["rss_mb"].iloc[0],
            "rss_warm": after["rss_mb"].iloc[0] if len(after) else float("nan"),
            "rss_end": rss["rss_mb"].iloc[-1], "rss_max": rss["rss_mb"].max(),
            "slope_half": slope(half["t_s"], half["rss_mb"]),
            "slope_quarters": [slope(q["t_s"], q["rss_mb"]) for q in quarters],
            "decodes": rss["n_decode_total"].iloc[-1],
            "kb_per_1k_decodes_half": grew * 1024 / steps * 1000 if steps > 0 else float("nan")}


def report(results: dict, warmup_min: float) -> str:
    out = []
    for label, res in results.items():
        rss, rows = pd.DataFrame(res["rss"]), pd.DataFrame(res["rows"])
        if rss.empty:
            out.append(f"## {label}\n\nno samples\n")
            continue
        s = summarize_rss(rss, warmup_min)
        n5 = int((pd.to_numeric(rows["status"], errors="coerce") >= 500).sum()) if len(rows) else 0
        errs = rows[rows["outcome"].str.startswith("error")] if len(rows) else rows
        out.append(f"## {label}\n\n`{res['command']}`\n\n"
                   f"{res.get('started')} to {res.get('ended', '?')}: {s['minutes']:.1f} min, "
                   f"{len(rows)} requests ({len(rows) / max(s['minutes'], 1e-9):.0f}/min), "
                   f"{s['decodes']:.0f} llama_decode calls; 5xx: {n5}; transport or "
                   f"in-stream errors: {len(errs)}"
                   + ("; THE SERVER DIED" if res.get("died") else "") + "\n")
        out.append("| RSS (MB) | start | after warm-up "
                   f"({warmup_min:g} min) | end | max | slope, 2nd half (MB/min) | "
                   "slope by quarter (MB/min) | growth per 1000 decodes, 2nd half (KB) |")
        out.append("|---|---:|---:|---:|---:|---:|---|---:|")
        q = " / ".join(f"{x:+.2f}" for x in s["slope_quarters"])
        out.append(f"| {label} | {s['rss_start']:.1f} | {s['rss_warm']:.1f} | "
                   f"{s['rss_end']:.1f} | {s['rss_max']:.1f} | {s['slope_half']:+.2f} | {q} | "
                   f"{s['kb_per_1k_decodes_half']:.0f} |\n")
        if len(rows):
            rows["status"] = rows["status"].map(lambda x: "none" if pd.isna(x) else str(int(x)))
            rows["what"] = rows["status"] + rows["outcome"].map(
                lambda o: "" if o == "ok" else " cancelled" if o == "cancelled" else " error")
            table = rows.pivot_table(index="kind", columns="what", values="t_s",
                                     aggfunc="count", fill_value=0)
            table.loc["all"] = table.sum()
            out.append("Requests by kind and status (\"cancelled\": the client left the "
                       "stream):\n")
            out.append(table.to_markdown() + "\n")
            for e in errs["outcome"].value_counts().head(5).items():
                out.append(f"- {e[1]}x {e[0][:300]}")
            if res.get("snapshots") and res.get("tracemalloc_dir"):
                out.append("\n" + tracemalloc_report(Path(res["tracemalloc_dir"]), res["snapshots"]))
            stale = errs[errs["outcome"].str.contains(STALE, regex=False)]
            if len(stale):
                after = ", ".join(f"{k} {n}" for k, n in stale["after"].value_counts().items())
                out.append(f"\n{len(stale)} requests were sent on a kept-alive connection the "
                           f"server had closed (they failed in {stale['dur_s'].max() * 1e3:.1f} "
                           f"ms at most, nothing answered); the request before each from the "
                           f"same client: {after}")
    return "\n".join(out)


def write(out: Path, results: dict, head: str) -> None:
    """The measurements (written before the report, which --report-from can make again)."""
    out.mkdir(parents=True, exist_ok=True)
    pd.concat([pd.DataFrame(r["rss"]).assign(server=k) for k, r in results.items()]) \
        .to_csv(out / "rss.csv", index=False)
    pd.concat([pd.DataFrame(r["rows"]).assign(server=k) for k, r in results.items()]) \
        .to_csv(out / "requests.csv", index=False)
    meta = {k: {x: r.get(x) for x in ("command", "started", "ended", "log", "died",
                                       "snapshots", "tracemalloc_dir")}
            for k, r in results.items()}
    (out / "runs.json").write_text(json.dumps({"head": head, "servers": meta}, indent=1))


def report_from(d: Path, warmup_min: float) -> int:
    rss, rows = pd.read_csv(d / "rss.csv"), pd.read_csv(d / "requests.csv")
    meta = json.loads((d / "runs.json").read_text())
    results = {k: {**m, "rss": rss[rss.server == k].drop(columns="server").to_dict("records"),
                   "rows": rows[rows.server == k].drop(columns="server").to_dict("records")}
               for k, m in meta["servers"].items()}
    print(meta["head"] + "\n\n" + report(results, warmup_min))
    return 0


# ------------------------------------------------------------------------------ main

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=20, help="load per server (default 20)")
    p.add_argument("--servers", nargs="+", default=["labkit", "xllamacpp"],
                   choices=["labkit", "xllamacpp", "llama-server"],
                   help="xllamacpp: llama.cpp's llama-server from the xllamacpp wheel; "
                        "llama-server: a binary (--binary, or on PATH)")
    p.add_argument("--binary", help="the llama-server binary for --servers llama-server")
    p.add_argument("--concurrent", action="store_true",
                   help="run the servers side by side instead of one after the other")
    p.add_argument("-c", "--ctx", type=int, default=4096)
    p.add_argument("-np", "--slots", type=int, default=4)
    p.add_argument("-t", "--threads", type=int, default=1)
    p.add_argument("--clients", type=int, default=None, help="closed-loop clients (default: slots)")
    p.add_argument("--sample-s", type=float, default=5.0, help="seconds between RSS samples")
    p.add_argument("--warmup-min", type=float, default=2.0,
                   help="the 'after warm-up' RSS is the first sample after this")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="folder for rss.csv, requests.csv, report.md and the logs "
                                 "(default results/soak-<time>)")
    p.add_argument("--report-from", metavar="DIR", help="print the report of a saved run")
    p.add_argument("--tracemalloc", type=float, metavar="MIN", default=0,
                   help="labkit's server alone: trace Python's allocations, a snapshot every "
                        "MIN minutes after the warm-up, and say where they grew")
    a = p.parse_args(argv)
    if a.tracemalloc and a.servers != ["labkit"]:
        p.error("--tracemalloc traces labkit's server alone: add --servers labkit")
    if a.report_from:
        return report_from(Path(a.report_from), a.warmup_min)
    a.clients = a.clients or a.slots
    started = dt.datetime.now().astimezone()
    out = Path(a.out or ROOT / "results" / f"soak-{started:%Y%m%d-%H%M%S}")
    cmdline = "python " + shlex.join([os.path.relpath(__file__, ROOT)]
                                     + (argv if argv is not None else sys.argv[1:]))
    env = {k: os.environ[k] for k in ("MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_")
           if k in os.environ}
    head = (f"Command: `{cmdline}`{' with ' + str(env) if env else ''}\n"
            f"Date: {started:%Y-%m-%d %H:%M %Z}; load average at start "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs\n"
            f"Load: {a.clients} closed-loop clients per server, "
            f"{'side by side' if a.concurrent else 'one server after the other'}; "
            f"mix (kind: weight) {', '.join(f'{k}: {w}' for k, w in MIX)}")
    if a.tracemalloc:
        os.environ["PYTHONTRACEMALLOC"] = "5"
        os.environ["LABKIT_TRACEMALLOC_DIR"] = str(out / "tracemalloc")
        hook = str(Path(__file__).resolve().parent / "tracemalloc_hook")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [hook] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        head += f"\nTraced: PYTHONTRACEMALLOC=5, a snapshot every {a.tracemalloc:g} min"
    print(head, file=sys.stderr)

    results: dict = {}

    def terminated(signum, frame):    # SIGTERM: as Ctrl-C, so the report is still written
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, terminated)
    stop, print_lock = threading.Event(), threading.Lock()
    configs = {k: ServerConfig(kind=k, binary=a.binary, n_ctx=a.ctx, n_slots=a.slots,
                               n_threads=a.threads, log_dir=str(out)) for k in a.servers}
    try:
        if a.concurrent:
            threads = [threading.Thread(target=soak_one, args=(k, cfg, a, a.seed, stop,
                                                                results, print_lock))
                       for k, cfg in configs.items()]
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(0.5)
        else:
            for k, cfg in configs.items():
                soak_one(k, cfg, a, a.seed, stop, results, print_lock)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping the load and the servers", file=sys.stderr)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a second one must not cut the report
        stop.set()
        if a.concurrent:
            for t in threads:
                t.join()
    write(out, results, head)
    text = report(results, a.warmup_min)
    print(head + "\n\n" + text)
    (out / "report.md").write_text(head + "\n\n" + text + "\n")
    print(f"\nwritten: {out}/rss.csv, requests.csv, report.md, runs.json and the servers' logs",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
