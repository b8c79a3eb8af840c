#!/usr/bin/env python
"""Two timings of labkit's server that the tests check only for behaviour.

1. Refusal: with its one slot busy and its queue full (``--max-queue 1``), the server must
   refuse the next request at once with 503, not after the running request. Measured: how
   long each refusal takes, against how long the request holding the slot takes.
2. Clocks: the client's and the server's clocks must agree on how long generation took.
   Measured on ``labkit bench``'s short set: per request, the client's time from the first
   content chunk to the end against the server's ``timings.predicted_ms``.

    python benchmarks/server_latency.py                  # about 1 min on 2 cores
    python benchmarks/server_latency.py --slots 1 2 4 --docs 12

The targets checked (performance targets live here, never in timed tests): every refusal
within 2 s, and every request's generation time within 10% on both clocks.

Before every run it waits until the 1-minute load average is below --max-load (the machine
is shared) and repeats a run during which other processes were busy.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import httpx

from labkit import bench
from labkit.bench import harness
from labkit.bench.client import Sampling
from labkit.bench.harness import QuietMachine
from labkit.bench.runner import measure_target
from labkit.bench.worksheet import run_summary, timing_agreement
from labkit.server.launch import ServerConfig, launch

TARGET_REFUSAL_S = 2.0
TARGET_CLOCKS_REL = 0.10


def _until(cond, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("the server never reached the expected state")
        time.sleep(0.05)


def refusals(n: int, max_tokens: int, quiet: QuietMachine) -> dict:
    """Fill the one slot and the one queue place, then time ``n`` refused requests."""
    cfg = ServerConfig(n_ctx=2048, n_slots=1, max_queue=1)
    body = {"messages": [{"role": "user", "content": "Write a long story."}],
            "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0}

    def measure(monitor):
        with launch(cfg) as srv:
            url = srv.base_url + "/v1/chat/completions"
            held = {}

            def hold(key):
                t0 = time.perf_counter()
                held[key] = (httpx.post(url, json=body, timeout=600).status_code,
                             time.perf_counter() - t0)
            running = threading.Thread(target=hold, args=("running",))
            running.start()
            _until(lambda: any(s["is_processing"] for s in srv.slots()))
            waiting = threading.Thread(target=hold, args=("waiting",))
            waiting.start()
            _until(lambda: "llamacpp:requests_deferred 1" in srv.get("/metrics").text)
            times, statuses = [], []
            with monitor:
                for _ in range(n):
                    t0 = time.perf_counter()
                    r = httpx.post(url, json=body, timeout=600)
                    times.append(time.perf_counter() - t0)
                    statuses.append(r.status_code)
            running.join()
            waiting.join()
        return {"refusal_s": times, "statuses": statuses, "held": held}

    run = quiet.run(measure, "the refusal run")
    return {**run.result, "load1": run.load1, "foreign": run.foreign_cores}


def clocks(slots: int, wl, quiet: QuietMachine):
    """One closed-loop run of ``wl`` at ``slots`` slots: the per-request timing agreement."""
    cfg = ServerConfig(n_ctx=4096, n_slots=slots, kv_unified=False)
    sampling = Sampling(max_tokens=wl.prompt.max_tokens, cache_prompt=False,
                        response_format=wl.prompt.response_format)

    def measure(monitor):
        with launch(cfg) as srv:
            harness.warm_up(srv.base_url, wl, sampling)
            with monitor:
                rows, _, _ = measure_target(harness.target_of(srv), wl, slots,
                                            sampling=sampling, warmup=False,
                                            sample_memory=False)
        return rows

    run = quiet.run(measure, f"the {slots}-slot clock run")
    return run.result, run.load1, run.foreign_cores


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refusals", type=int, default=5, help="refused requests to time")
    p.add_argument("--hold-tokens", type=int, default=200,
                   help="tokens the request holding the slot generates")
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2])
    p.add_argument("--docs", type=int, default=4, help="first N documents of the short set")
    QuietMachine.add_arguments(p)
    a = p.parse_args(argv)
    quiet = QuietMachine.from_args(a)

    ref = refusals(a.refusals, a.hold_tokens, quiet)
    worst = max(ref["refusal_s"])
    held_s = ref["held"]["running"][1]
    print(f"Refusal with the slot busy and the queue full (load {ref['load1']:.2f}, "
          f"others {ref['foreign']:.2f} cores):")
    print(f"  statuses {sorted(set(ref['statuses']))}; refusal median "
          f"{statistics.median(ref['refusal_s']) * 1e3:.0f} ms, max {worst * 1e3:.0f} ms; "
          f"the request holding the slot took {held_s:.1f} s "
          f"(max refusal / that: {worst / held_s:.3f})")
    ok = worst <= TARGET_REFUSAL_S and set(ref["statuses"]) == {503}
    print(f"  target: every refusal a 503 within {TARGET_REFUSAL_S:g} s: "
          f"{'yes' if ok else 'NO'}")
    print(f"  the running and the waiting request then answered "
          f"{ref['held']['running'][0]} and {ref['held']['waiting'][0]}")

    wl = bench.load_workload("short").head(a.docs)
    print(f"\nClient vs server clock on generation time ({wl.name}, {len(wl)} documents; "
          "gen_rel = client / server - 1):")
    print("| slots | requests compared | gen_rel median | gen_rel max abs | within 10% | "
          "output tok/s | load | others (cores) |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|")
    for n in a.slots:
        rows, la, foreign = clocks(n, wl, quiet)
        ta = timing_agreement(rows)
        worst_rel = float(ta["gen_rel"].abs().max())
        tok_s = float(run_summary(rows).iloc[0].output_tok_s)
        print(f"| {n} | {len(ta)}/{len(rows)} | {ta['gen_rel'].median():+.1%} | "
              f"{worst_rel:.1%} | {'yes' if worst_rel < TARGET_CLOCKS_REL else 'NO'} | "
              f"{tok_s:.1f} | {la:.2f} | {foreign:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
