"""Benchmark: how fast does the simulator run, and does its cost grow linearly?

Simulates 25,000, 50,000 and 100,000 requests with continuous batching, 64 slots,
exponentially distributed outputs (mean 256 tokens), prompts of 64..1024 tokens,
Poisson arrivals at about 90% of the configuration's decode capacity (so queues
form and drain, and most steps are decode-only), and prints the wall time of
each run. Run it with:

    python benchmarks/sim_bench.py            # the three sizes
    python benchmarks/sim_bench.py --n 100000 # one size

Workload generation is timed separately from simulation; building the result
tables (requests, steps, summary) is included in the simulation time.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from labkit import sim


def run(n: int, slots: int = 64, mean_output: int = 256, load: float = 0.9, seed: int = 0) -> dict:
    cost = sim.preset("rtx4090", "8b-q4")         # five terms: e > 0 charges prompt attention
    mean_prompt = (64 + 1024) / 2
    # Machine time one request needs when the batch is full: its prompt tokens, plus
    # its output tokens, each taking a 1/slots share of a full decode step at a
    # typical context (prompt + half the output).
    per_token = cost.step_time(0, slots, slots * (mean_prompt + mean_output / 2)) / slots
    service = mean_prompt * cost.b + mean_output * per_token
    rate = load / service
    t0 = time.perf_counter()
    reqs = sim.poisson(n, rate, prompt=(64, 1024), output=sim.Exponential(mean_output), seed=seed)
    t1 = time.perf_counter()
    res = sim.simulate(reqs, slots=slots, batching="continuous", cost=cost)
    s = res.summary()
    t2 = time.perf_counter()
    return {"n": n, "rate": rate, "gen_s": t1 - t0, "sim_s": t2 - t1, "steps": res.n_steps,
            "segments": len(res.record.segments), "tok_s": s["throughput_tok_s"],
            "ttft_p50": s["ttft_p50"], "ok": s["ok"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[25_000, 50_000, 100_000])
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--budget", type=float, default=5.0,
                    help="seconds 100,000 requests may take (the figure is checked and printed)")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu'}")
    print(f"{'requests':>9} {'gen s':>7} {'sim s':>7} {'us/req':>7} {'steps':>9} {'bulk moves':>10} "
          f"{'sim tok/s':>10} {'TTFT p50':>9}")
    for n in args.n:
        r = run(n, slots=args.slots)
        print(f"{r['n']:>9} {r['gen_s']:>7.2f} {r['sim_s']:>7.2f} {r['sim_s'] / n * 1e6:>7.1f} "
              f"{r['steps']:>9} {r['segments']:>10} {r['tok_s']:>10.0f} {r['ttft_p50']:>9.3f}")
        assert r["ok"] == n
        if n == 100_000:
            verdict = "within" if r["sim_s"] <= args.budget else "OVER"
            print(f"  100,000 requests in {r['sim_s']:.2f} s: {verdict} the {args.budget:g} s budget")
    print(f"1-minute load average at the start: {load:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
