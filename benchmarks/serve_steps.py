#!/usr/bin/env python
"""Where a serving run's time goes, call by call: labkit's step trace beside llama-server's log.

serve_bench.py says how fast each server is; serve_threads.py says whether they did the same
number of llama_decode calls. This script lays the two servers' runs side by side one
llama_decode call at a time: what each batch held (decode tokens, prompt tokens, how many
prompts, how many micro-batches llama.cpp cut it into), how long the call took, and how long
the server spent between calls.

Same workload and flags as serve_bench.py (the short set, temperature 0, cache_prompt false,
as many requests in flight as slots, ``-c 16384 --no-kv-unified -t 2``), a fresh server per
run, the two servers alternated in pairs (the order flips every pair), waiting for a quiet
machine before each run.

- labkit: its own step trace (``GET /trace``, steps and slots).
- llama-server: its own verbose log (``-v --log-timestamps``). Each call is the span from its
  ``decode: n_batch (effective) = ...`` line, written just before ``llama_decode``, to the
  ``yield_to_queue: done yielding to queue`` line written just after it returns (with
  ``llama_synchronize``). Its decode tokens are the ``slot decode token`` lines before it; its
  prompt tokens are the ``new prompt, ... task.n_tokens = N`` lines less their ``cached
  n_tokens``. That reading holds while every prompt fits in one call (n_batch 2048: the short
  set's prompts are 173-182 tokens); the script checks it against the server's /metrics
  prompt-token counter and stops if they disagree.

Micro-batches are not in either log: they are counted from each batch's order of sequences
with llama.cpp's own split rule (``labkit.engine.scheduler.micro_batches``, checked against
llama.cpp's graph count in tests/test_micro_batches.py).

    python benchmarks/serve_steps.py                           # 4 and 8 slots, 3 pairs
    python benchmarks/serve_steps.py --slots 4 --pairs 5 --out results/serve_steps

The verbose log costs llama-server a little (a log thread writing ~2 lines per token), so
its tokens/s here is a floor; compare speeds with serve_bench.py, plans and call times here.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_bench  # noqa: E402  (same server flags and reference build)

from labkit import bench  # noqa: E402
from labkit.bench import harness  # noqa: E402
from labkit.bench.harness import QuietMachine  # noqa: E402
from labkit.bench.runner import default_sampling, measure_target  # noqa: E402
from labkit.bench.worksheet import run_summary  # noqa: E402
from labkit.engine.scheduler import micro_batches  # noqa: E402
from labkit.lessons.llama_server import metric  # noqa: E402
from labkit.models.files import resolve_model  # noqa: E402
from labkit.server.launch import launch  # noqa: E402

VERBOSE = ("-v", "--log-timestamps")


# ------------------------------------------------------------------ llama-server's log

_TS = re.compile(r"^(\d+)\.(\d+)\.(\d+)\.(\d+) ")


def _seconds(line: str) -> float | None:
    m = _TS.match(line)
    if not m:
        return None
    minutes, s, ms, us = map(int, m.groups())
    return minutes * 60 + s + ms / 1e3 + us / 1e6


def _slot_of(line: str) -> int:
    m = re.search(r"\bid +(\d+) \| task", line)
    if not m:
        raise ValueError(f"no slot id in {line!r}")
    return int(m.group(1))


def llama_server_calls(log: str) -> list[dict]:
    """One dict per llama_decode call in a llama-server ``-v --log-timestamps`` log: t_start,
    t_end (seconds since the server started) and ``batch``, its ``(slot, kind, tokens)`` in
    batch order (decode tokens, then prompts, as the server fills them)."""
    calls, batch, cached, current = [], [], {}, None
    for line in log.splitlines():
        if "slot decode token" in line:
            batch.append((_slot_of(line), "decode", 1))
        elif "cached n_tokens = " in line:
            cached[_slot_of(line)] = int(re.search(r"cached n_tokens = (\d+)", line).group(1))
        elif "new prompt, n_ctx_slot" in line:
            slot = _slot_of(line)
            n = int(re.search(r"task\.n_tokens = (\d+)", line).group(1))
            batch.append((slot, "prefill", n))
        elif "n_batch (effective)" in line:
            # the cached prefix (logged after "new prompt") is not decoded
            batch = [(s, k, n - cached.pop(s, 0) if k == "prefill" else n) for s, k, n in batch]
            current, batch = {"t_start": _seconds(line), "batch": batch}, []
        elif "done yielding to queue" in line and current is not None:
            current["t_end"] = _seconds(line)
            calls.append(current)
            current = None
    return calls


# ------------------------------------------------------------------ labkit's trace

def labkit_calls(steps: pd.DataFrame, slots: pd.DataFrame) -> list[dict]:
    """The same dicts from labkit's trace. Its batch order: a decode token per generating slot
    in slot order, then prompt chunks in the order the requests arrived (request ids rise
    with arrival)."""
    busy = slots[slots.action != "idle"].assign(
        prompt=lambda d: d.action != "decode",
        key=lambda d: d.slot.where(d.action == "decode", d.request_id))
    batch = {step: [(int(x.slot), x.action, int(x.n_tokens)) for x in g.itertuples()]
             for step, g in busy.sort_values(["step", "prompt", "key"]).groupby("step")}
    return [{"t_start": r.t_start, "t_end": r.t_end, "batch": batch.get(r.step, [])}
            for r in steps.itertuples()]


def call_table(calls: list[dict], n_ubatch: int, unified: bool = False) -> pd.DataFrame:
    """One row per call: its batch in numbers, its time and the time to the next call."""
    rows = []
    for c in calls:
        b = c["batch"]
        pre = [n for _, k, n in b if k == "prefill"]
        n_dec = sum(1 for _, k, _ in b if k == "decode")
        sizes = micro_batches([(s, n) for s, _, n in b], n_ubatch, unified) if b else []
        rows.append({"t_start": c["t_start"], "t_end": c["t_end"],
                     "dur_ms": (c["t_end"] - c["t_start"]) * 1e3,
                     "n_tokens": n_dec + sum(pre), "n_decode": n_dec,
                     "n_prefill_tokens": sum(pre), "n_prefill_seqs": len(pre),
                     "n_ubatch": len(sizes), "ubatches": "+".join(map(str, sizes)),
                     "order": " ".join(f"{s}{'d' if k == 'decode' else 'p'}" for s, k, _ in b)})
    df = pd.DataFrame(rows)
    df["gap_ms"] = (df["t_start"].shift(-1) - df["t_end"]) * 1e3
    df["kind"] = [f"prefill x{p} + {d} decode" if p else f"decode x{d}"
                  for p, d in zip(df.n_prefill_seqs, df.n_decode)]
    return df


# ------------------------------------------------------------------ one run

def _log_settled(srv, wait_s: float = 3.0) -> int:
    """The log's length once llama-server's log thread has written everything so far."""
    size, deadline = -1, time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = srv.log_path.stat().st_size
        if now == size:
            return now
        size = now
    return size


def one_run(kind: str, slots: int, a, bin_dir: Path, wl, quiet: QuietMachine, pair: int):
    cfg = serve_bench.server_config(kind, slots, a, bin_dir)
    if kind == "llama-server":
        cfg = cfg.with_(extra_args=VERBOSE)
    sampling = default_sampling(wl)

    def measure(monitor):
        with launch(cfg) as srv:
            harness.warm_up(srv.base_url, wl, sampling)
            mark = (harness.trace_mark(srv.base_url) if kind == "labkit" else _log_settled(srv))
            prompt0 = metric(srv.get("/metrics").text, "prompt_tokens_total")
            with monitor:
                rows, _, _ = measure_target(harness.target_of(srv), wl, slots,
                                            sampling=sampling, warmup=False, round_=pair,
                                            sample_memory=False)
            prompt_tokens = metric(srv.get("/metrics").text, "prompt_tokens_total") - prompt0
            if kind == "labkit":
                calls = labkit_calls(harness.fetch_trace(srv.base_url, since=mark),
                                     harness.fetch_trace(srv.base_url, since=mark, kind="slots"))
            else:
                _log_settled(srv)
                with open(srv.log_path, "rb") as f:
                    f.seek(mark)
                    calls = llama_server_calls(f.read().decode("utf-8", errors="replace"))
        return rows, calls, prompt_tokens

    run = quiet.run(measure, f"{kind} at {slots} slots")
    rows, calls, prompt_tokens = run.result
    table = call_table(calls, a.ubatch)
    if table.n_prefill_tokens.sum() != prompt_tokens:
        sys.exit(f"{kind} at {slots} slots: the calls read hold {table.n_prefill_tokens.sum()} "
                 f"prompt tokens, the server counted {prompt_tokens:.0f}: the log reading's "
                 "assumption (whole prompts in one call) does not hold for this run")
    s = run_summary(rows).iloc[0]
    table.insert(0, "server", kind)
    table.insert(1, "slots", slots)
    table.insert(2, "pair", pair)
    return table, {"server": kind, "slots": slots, "pair": pair, "load1": run.load1,
                   "tok_s": float(s.output_tok_s), "ttft_p50_ms": float(s.ttft_p50_s) * 1e3}


# ------------------------------------------------------------------ the report

def run_figures(t: pd.DataFrame) -> dict:
    """One run's calls in a few numbers."""
    pre, dec = t[t.n_prefill_tokens > 0], t[t.n_prefill_tokens == 0]
    full = dec[dec.n_decode == dec.n_decode.max()] if len(dec) else dec
    return {"calls": len(t), "ubatches": int(t.n_ubatch.sum()),
            "prompt_tok": int(t.n_prefill_tokens.sum()), "decode_tok": int(t.n_decode.sum()),
            "prefill_calls": len(pre), "decode_tok_in_prefill_calls": int(pre.n_decode.sum()),
            "prefill_call_s": pre.dur_ms.sum() / 1e3,
            "prefill_ms_per_tok": pre.dur_ms.sum() / max(1, pre.n_tokens.sum()),
            "decode_calls": len(dec), "decode_call_s": dec.dur_ms.sum() / 1e3,
            "full_decode_ms_p50": full.dur_ms.median() if len(full) else float("nan"),
            "between_calls_s": t.gap_ms.sum() / 1e3,
            "gap_ms_p50": t.gap_ms.median(),
            "span_s": (t.t_end.iloc[-1] - t.t_start.iloc[0])}


def report(calls: pd.DataFrame, runs: pd.DataFrame) -> str:
    figs = []
    for (kind, slots, pair), t in calls.groupby(["server", "slots", "pair"], sort=False):
        figs.append({"server": kind, "slots": slots, "pair": pair, **run_figures(t)})
    figs = pd.DataFrame(figs).merge(runs, on=["server", "slots", "pair"])
    out = []
    for slots, g in figs.groupby("slots"):
        out.append(f"\n## {slots} slots: medians over {g.pair.nunique()} pairs "
                   "(labkit / llama-server)\n")
        med = g.groupby("server").median(numeric_only=True).drop(columns=["slots", "pair"])
        med = med.T[["labkit", "llama-server"]]
        med["ratio"] = med["labkit"] / med["llama-server"]
        out.append(med.to_string(float_format=lambda x: f"{x:.3f}"))
        out.append("\nper run: " + "; ".join(
            f"{r.server} p{r.pair} {r.tok_s:.1f} tok/s, {r.calls} calls, {r.ubatches} ubatches, "
            f"prefill {r.prefill_ms_per_tok:.2f} ms/tok, full decode {r.full_decode_ms_p50:.1f} ms"
            for r in g.itertuples()))
        kinds = (calls[calls.slots == slots].groupby(["server", "kind"])
                 .agg(calls=("dur_ms", "size"), ms_p50=("dur_ms", "median"),
                      ubatches=("n_ubatch", "sum"), tokens=("n_tokens", "sum"))
                 .unstack("server"))
        out.append("\ncalls by kind, all pairs together:\n" + kinds.to_string())
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slots", type=int, nargs="+", default=[4, 8])
    p.add_argument("--pairs", type=int, default=3,
                   help="alternated pairs per slot count; the order flips every pair")
    p.add_argument("--threads", "-t", type=int, default=2)
    p.add_argument("--n-ctx", type=int, default=serve_bench.PARITY_N_CTX)
    p.add_argument("--batch", "-b", type=int, default=2048)
    p.add_argument("--ubatch", "-ub", type=int, default=512)
    p.add_argument("--bin-dir", default=None)
    QuietMachine.add_arguments(p)
    p.add_argument("--out", default=None, help="folder for calls.csv, runs.csv, report.txt")
    a = p.parse_args(argv)
    a.model = str(resolve_model(None))
    bin_dir = Path(a.bin_dir) if a.bin_dir else serve_bench.reference_bin()
    if not (bin_dir / "llama-server").exists():
        sys.exit(f"no llama-server in {bin_dir}: run bash benchmarks/build_llama_server.sh")
    quiet, wl = QuietMachine.from_args(a), bench.load_workload("short")
    print(time.strftime("%Y-%m-%d %H:%M %Z"), "load", os.getloadavg()[0], file=sys.stderr)
    tables, runs = [], []
    for slots in a.slots:
        for pair in range(a.pairs):
            order = ["labkit", "llama-server"][::1 if pair % 2 == 0 else -1]
            for kind in order:
                table, info = one_run(kind, slots, a, bin_dir, wl, quiet, pair)
                tables.append(table)
                runs.append(info)
                f = run_figures(table)
                print(f"{kind:13s} {slots} slots pair {pair}: {info['tok_s']:5.1f} tok/s, "
                      f"{f['calls']} calls, {f['ubatches']} ubatches, prefill "
                      f"{f['prefill_ms_per_tok']:.2f} ms/tok, full decode "
                      f"{f['full_decode_ms_p50']:.1f} ms, between calls "
                      f"{f['between_calls_s']:.3f} s", file=sys.stderr)
    calls, runs = pd.concat(tables, ignore_index=True), pd.DataFrame(runs)
    text = report(calls, runs)
    print(text)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        calls.to_csv(out / "calls.csv", index=False)
        runs.to_csv(out / "runs.csv", index=False)
        (out / "report.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
