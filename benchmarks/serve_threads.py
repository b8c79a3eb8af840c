#!/usr/bin/env python
"""Where a serving run's time goes: labkit's server and llama-server, thread by thread.

serve_bench.py reports each server's aggregate tokens/s; when the two differ, this script
says whether they did different work or the same work at a different speed. It runs the
same workload as serve_bench (the short set, temperature 0, cache_prompt false, as many
requests in flight as slots) on a fresh server per run, alternating the servers, and reads:

- from /metrics, before and after the run: llama_decode calls, prompt and predicted tokens
  (the work: equal counts mean the same batches were built);
- from /proc, per thread of the server process: CPU seconds during the run (llama.cpp's two
  compute threads, the engine or HTTP threads, the event loop);
- the client's own CPU seconds (this process), which competes for the same cores.

    python benchmarks/serve_threads.py                    # 4 slots, 3 alternations
    python benchmarks/serve_threads.py --slots 4 --alternations 5 --out results/serve_threads

Waits for a quiet machine before each run, as serve_bench does.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_bench  # noqa: E402  (same server flags and reference build)

from labkit import bench  # noqa: E402
from labkit.bench import harness  # noqa: E402
from labkit.bench.client import Sampling  # noqa: E402
from labkit.bench.harness import CLOCK_TICKS_PER_S, QuietMachine  # noqa: E402
from labkit.bench.runner import measure_target  # noqa: E402
from labkit.bench.worksheet import run_summary  # noqa: E402
from labkit.lessons.llama_server import metric  # noqa: E402
from labkit.server.launch import launch  # noqa: E402

COUNTERS = ("n_decode_total", "prompt_tokens_total", "tokens_predicted_total")


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of every thread of ``pid``, by thread id."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S
    return out


def counters(srv) -> dict[str, float]:
    text = srv.get("/metrics").text
    return {c: metric(text, c) for c in COUNTERS}


def one_run(kind: str, slots: int, a, bin_dir: Path, wl, quiet: QuietMachine) -> dict:
    cfg = serve_bench.server_config(kind, slots, a, bin_dir)
    sampling = Sampling(max_tokens=wl.prompt.max_tokens, cache_prompt=False,
                        response_format=wl.prompt.response_format, require_usage=True)

    def measure(monitor):
        with launch(cfg) as srv:
            harness.warm_up(srv.base_url, wl, sampling)
            c0, m0, t0, o0 = thread_cpu(srv.pid), counters(srv), time.time(), os.times()
            with monitor:
                rows, _, _ = measure_target(harness.target_of(srv), wl, slots, sampling=sampling,
                                            warmup=False, round_=0, sample_memory=False)
            wall, o1 = time.time() - t0, os.times()
            c1, m1 = thread_cpu(srv.pid), counters(srv)
        busy = sorted((c1[t] - c0.get(t, 0.0) for t in c1), reverse=True)
        r = run_summary(rows).iloc[0]
        return {"server": kind, "slots": slots, "tok_s": float(r.output_tok_s),
                "ttft_p50_ms": float(r.ttft_p50_s) * 1e3, "wall_s": wall,
                **{c: m1[c] - m0[c] for c in COUNTERS},
                "compute_threads_cpu_s": sum(busy[:2]), "other_threads_cpu_s": sum(busy[2:]),
                "busiest_other_thread_cpu_s": busy[2] if len(busy) > 2 else 0.0,
                "client_cpu_s": (o1.user - o0.user) + (o1.system - o0.system)}

    run = quiet.run(measure, f"{kind} at {slots} slots")
    return {**run.result, "load1": run.load1, "foreign_cores": run.foreign_cores}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slots", type=int, default=4)
    p.add_argument("--alternations", type=int, default=3,
                   help="pairs of runs; the order flips every pair (A B, B A, ...)")
    p.add_argument("--threads", "-t", type=int, default=2)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--batch", "-b", type=int, default=2048)
    p.add_argument("--ubatch", "-ub", type=int, default=512)
    p.add_argument("--bin-dir", default=None)
    QuietMachine.add_arguments(p)
    p.add_argument("--out", default=None, help="folder for runs.csv")
    a = p.parse_args(argv)
    bin_dir = Path(a.bin_dir) if a.bin_dir else serve_bench.reference_bin()
    if not (bin_dir / "llama-server").exists():
        sys.exit(f"no llama-server in {bin_dir}: run bash benchmarks/build_llama_server.sh")
    quiet, wl = QuietMachine.from_args(a), bench.load_workload("short")
    print(time.strftime("%Y-%m-%d %H:%M %Z"), "load", os.getloadavg()[0], file=sys.stderr)
    runs = []
    for i in range(a.alternations):
        pair = ["labkit", "llama-server"] if i % 2 == 0 else ["llama-server", "labkit"]
        for kind in pair:
            r = one_run(kind, a.slots, a, bin_dir, wl, quiet)
            runs.append(r)
            print(f"{kind:13s} {r['tok_s']:5.1f} tok/s  wall {r['wall_s']:5.2f} s  decodes "
                  f"{r['n_decode_total']:.0f}  compute threads {r['compute_threads_cpu_s']:5.2f} s  "
                  f"other threads {r['other_threads_cpu_s']:4.2f} s  client "
                  f"{r['client_cpu_s']:4.2f} s", file=sys.stderr)
    df = pd.DataFrame(runs)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        df.to_csv(Path(a.out) / "runs.csv", index=False)
    df["compute_s_per_decode_ms"] = df["compute_threads_cpu_s"] / df["n_decode_total"] * 1e3
    cols = ["tok_s", "wall_s", "n_decode_total", "prompt_tokens_total", "tokens_predicted_total",
            "compute_threads_cpu_s", "compute_s_per_decode_ms", "other_threads_cpu_s",
            "client_cpu_s"]
    print(df.groupby("server")[cols].median().round(2).T.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
