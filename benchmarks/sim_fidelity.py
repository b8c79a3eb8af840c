#!/usr/bin/env python
"""Simulator fidelity: fit the cost model on some live runs, predict held-out ones.

Live runs: labkit's server (started by the launcher) and labkit.bench's client, closed
loop with as many requests in flight as slots, temperature 0, cache_prompt false. Each run
keeps the client's per-request rows (prompt and completion tokens, TTFT, wall) and the
engine's step trace (GET /trace).

Fit: the cost model on the step traces of the *fit* configurations (default: the short set
at 1 and 4 slots). Predict: every configuration, fit and held out (default held out: the
short set at 2 slots, the long set at 1, 2 and 4 slots), by replaying the very requests of
the live run (exact prompt and completion token counts, in the order the client sent
them, closed loop, in flight = slots) in labkit.sim with the fitted cost, then comparing
aggregate throughput (completion tokens / wall) and median TTFT with the live run.

Three cost models, each adding one effect, show what matters:

  decode   a + b*prefill + c*decode + d*attended fitted on llama_decode's own duration
           (the trace's dur_s), as `labkit.sim.fit(engine.trace_df())` does;
  +host    the same terms fitted on the step *period* (llama_decode plus the host work up
           to the next step: sampling, streaming, planning), labkit.sim.calibrate.step_periods;
  +client  +host, plus a fixed per-request time outside the engine (HTTP, chat template,
           tokenization, first chunk's delivery), estimated on the 1-slot fit run only
           (labkit.sim.calibrate.client_overhead). This is the headline model.

    python benchmarks/sim_fidelity.py                     # about 6 minutes on 2 cores
    python benchmarks/sim_fidelity.py --long-docs 12 --out results/sim_fidelity   # ~15 min

Before every run it waits until the 1-minute load average is below --max-load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from labkit import bench, sim
from labkit.bench import harness
from labkit.bench.client import Sampling
from labkit.bench.harness import QuietMachine
from labkit.bench.runner import measure_target
from labkit.bench.worksheet import run_summary
from labkit.launch import ServerConfig, launch
from labkit.sim.calibrate import client_overhead, host_share, replay, step_periods, turnaround

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 0.10


def parse_config(text: str) -> tuple[str, int]:
    wl, n = text.split(":")
    return wl, int(n)


def live_run(wl, slots: int, a, round_: int, quiet: QuietMachine) -> dict:
    """One run on a fresh labkit server: the client's rows and the steps the engine took
    for them (the warm-up's left out), kept only if the machine stayed quiet."""
    cfg = ServerConfig(kind="labkit", n_ctx=a.n_ctx, n_slots=slots, kv_unified=False,
                       n_batch=a.batch, n_ubatch=a.ubatch, n_threads=a.threads)
    sampling = Sampling(max_tokens=wl.prompt.max_tokens, cache_prompt=False,
                        response_format=wl.prompt.response_format)

    def measure(monitor):
        with launch(cfg) as srv:
            harness.warm_up(srv.base_url, wl, sampling)
            since = harness.trace_mark(srv.base_url)
            with monitor:
                rows, _, _ = measure_target(harness.target_of(srv), wl, slots,
                                            sampling=sampling, warmup=False, round_=round_,
                                            sample_memory=False)
            steps = harness.fetch_trace(srv.base_url, since)
        return rows, steps, shlex.join(srv.command)

    run = quiet.run(measure, f"{wl.name}:{slots}")
    rows, steps, command = run.result
    s = run_summary(rows).iloc[0]
    return {"workload": wl.name, "slots": slots, "round": round_, "rows": rows,
            "steps": steps, "load1": run.load1, "command": command,
            "foreign": run.foreign_cores, "discarded": run.discarded,
            "tok_s": float(s.output_tok_s), "ttft_p50": float(s.ttft_p50_s),
            "errors": int(s.errors), "wall_s": float(s.wall_s)}


def rel(pred: float, live: float) -> float:
    return (pred - live) / live if live else float("nan")


def pct(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:+.1%}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fit", nargs="+", default=["short:1", "short:4"],
                   help="configurations to fit on, WORKLOAD:SLOTS (default short:1 short:4)")
    p.add_argument("--held-out", nargs="+", default=["short:2", "long:1", "long:2", "long:4"],
                   help="configurations to predict (default short:2 long:1 long:2 long:4)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", "-t", type=int, default=2)
    p.add_argument("--n-ctx", type=int, default=16384,
                   help="KV pool (split; 16384 leaves each of 4 slots room for a long prompt)")
    p.add_argument("--batch", "-b", type=int, default=2048)
    p.add_argument("--ubatch", "-ub", type=int, default=512)
    p.add_argument("--docs", type=int, default=None, help="first N documents of each workload")
    p.add_argument("--long-docs", type=int, default=4,
                   help="first N documents of the long set (default 4, about 40 s a run on 2 "
                        "cores; 12 for the whole set, about 2 min a run)")
    QuietMachine.add_arguments(p)
    p.add_argument("--out", default=None)
    p.add_argument("--report-from", default=None, metavar="DIR",
                   help="measure nothing: fit and predict again from a run saved with --out")
    a = p.parse_args(argv)

    fit_cfgs = [parse_config(c) for c in a.fit]
    held = [parse_config(c) for c in a.held_out if parse_config(c) not in fit_cfgs]
    one_slot_fit = [c for c in fit_cfgs if c[1] == 1]
    if not one_slot_fit:
        sys.exit("the fit set needs a 1-slot configuration (it sets the per-request overhead)")
    workloads = {}
    for name, _ in fit_cfgs + held:
        if name not in workloads:
            wl = bench.load_workload(name)
            n_docs = a.long_docs if name == "long" and a.long_docs else a.docs
            workloads[name] = wl.head(n_docs) if n_docs else wl
    if a.report_from:
        return report_from(Path(a.report_from), fit_cfgs, held, a)
    started = dt.datetime.now().astimezone()
    cmdline = "python " + " ".join(shlex.quote(x) for x in [os.path.relpath(__file__, ROOT)]
                                   + (argv if argv is not None else sys.argv[1:]))

    quiet = QuietMachine.from_args(a)
    runs = []
    for r in range(a.rounds):
        order = fit_cfgs + held
        order = order if r % 2 == 0 else order[::-1]
        for name, n in order:
            t0 = time.perf_counter()
            run = live_run(workloads[name], n, a, r, quiet)
            runs.append(run)
            print(f"round {r + 1}/{a.rounds} {name}:{n}  {run['tok_s']:6.1f} tok/s  "
                  f"TTFT p50 {run['ttft_p50'] * 1e3:6.0f} ms  {len(run['steps'])} steps  "
                  f"errors {run['errors']}  load {run['load1']:.2f}  "
                  f"others {run['foreign']:.2f} cores  "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    ended = dt.datetime.now().astimezone()
    head = [f"Command: `{cmdline}`",
            f"Date: {started:%Y-%m-%d %H:%M}-{ended:%H:%M %Z}; 1-minute load average at the "
            f"start of each run: {min(x['load1'] for x in runs):.2f}-"
            f"{max(x['load1'] for x in runs):.2f} (waited for < {a.max_load}); other "
            f"processes' CPU during the kept runs: {max(x['foreign'] for x in runs):.2f} cores "
            f"at most; runs repeated because others were busy: "
            f"{sum(x['discarded'] for x in runs)}",
            f"labkit server: -c {a.n_ctx} split KV, -t {a.threads} -b {a.batch} -ub {a.ubatch}; "
            f"{a.rounds} round(s) per configuration, fresh server per run, closed loop, "
            f"in flight = slots, temperature 0, cache_prompt false; documents: " + ", ".join(
                f"{w.name} {len(w)}" for w in workloads.values())]
    out, t = analyze(runs, fit_cfgs, held, one_slot_fit, a)
    print("\n".join(head + [""] + out))
    if a.out:
        d = Path(a.out)
        d.mkdir(parents=True, exist_ok=True)
        t.to_csv(d / "fidelity.csv", index=False)
        pd.concat([x["rows"].assign(config=f"{x['workload']}:{x['slots']}")
                   .drop(columns=["usage", "timings"], errors="ignore") for x in runs]
                  ).to_csv(d / "rows.csv", index=False)
        pd.concat([x["steps"].assign(config=f"{x['workload']}:{x['slots']}", round=x["round"])
                   for x in runs]).to_csv(d / "steps.csv", index=False)
        pd.DataFrame([{k: x[k] for k in ("workload", "slots", "round", "load1", "foreign",
                                         "discarded", "command")} for x in runs]
                     ).to_csv(d / "runs.csv", index=False)
        (d / "header.txt").write_text("\n".join(head) + "\n")
        (d / "report.md").write_text("\n".join(head + [""] + out) + "\n")
    return 0


def report_from(d: Path, fit_cfgs, held, a) -> int:
    """Fit and predict again from saved live runs; the header lines are kept as they were."""
    rows = pd.read_csv(d / "rows.csv")
    steps = pd.read_csv(d / "steps.csv")
    meta = pd.read_csv(d / "runs.csv") if (d / "runs.csv").exists() else None
    runs = []
    for (cfg, rnd), g in rows.groupby(["config", "round"], sort=False):
        name, n = parse_config(cfg)
        st = steps[(steps["config"] == cfg) & (steps["round"] == rnd)] \
            .drop(columns=["config", "round"]).reset_index(drop=True)
        summ = run_summary(g).iloc[0]
        m = {}
        if meta is not None:
            mm = meta[(meta["workload"] == name) & (meta["slots"] == n) & (meta["round"] == rnd)]
            m = mm.iloc[0].to_dict() if len(mm) else {}
        runs.append({"workload": name, "slots": n, "round": rnd, "rows": g, "steps": st,
                     "load1": m.get("load1", float("nan")),
                     "foreign": m.get("foreign", float("nan")),
                     "tok_s": float(summ.output_tok_s), "ttft_p50": float(summ.ttft_p50_s),
                     "errors": int(summ.errors)})
    header = d / "header.txt" if (d / "header.txt").exists() else d / "report.md"
    head = header.read_text().split("\n\n")[0].strip()
    one_slot_fit = [c for c in fit_cfgs if c[1] == 1]
    out, _ = analyze(runs, fit_cfgs, held, one_slot_fit, a)
    print(head + "\n\n" + "\n".join(out))
    return 0


def analyze(runs, fit_cfgs, held, one_slot_fit, a):
    """Fit on the fit runs, replay every run; the report lines and the table."""
    # ------------------------------------------------------------ fit
    fit_runs = [x for x in runs if (x["workload"], x["slots"]) in fit_cfgs]
    one_runs = [x for x in fit_runs if (x["workload"], x["slots"]) in one_slot_fit]
    decode_fit = sim.fit(pd.concat([x["steps"] for x in fit_runs], ignore_index=True),
                         name="decode")
    host_fit = sim.fit(pd.concat([step_periods(x["steps"]) for x in fit_runs],
                                 ignore_index=True), name="decode+host")
    resid = [client_overhead(x["rows"], host_fit.cost, n_batch=a.batch) for x in one_runs]
    rtt_resid = float(np.median(resid))
    turns = [turnaround(x["steps"]) for x in one_runs]
    rtt = float(np.median(turns))
    # In-sample reference (no configuration held out): can the model's form fit them all?
    all_fit = sim.fit(pd.concat([step_periods(x["steps"]) for x in runs], ignore_index=True),
                      name="all")
    # name: (cost, per-request time outside the engine, serial ingress)
    models = {"decode": (decode_fit.cost, 0.0, False),
              "+host": (host_fit.cost, 0.0, False),
              "+client": (host_fit.cost, rtt_resid, False),
              "+front": (host_fit.cost, rtt, True),
              "all": (all_fit.cost, rtt, True)}
    head_model = "+front"

    # ------------------------------------------------------------ predict
    table = []
    for name, n in fit_cfgs + held:
        rs = [x for x in runs if x["workload"] == name and x["slots"] == n]
        line = {"config": f"{name}, {n} slot{'s' if n > 1 else ''}",
                "role": "fit" if (name, n) in fit_cfgs else "held out",
                "live_tok_s": float(np.median([x["tok_s"] for x in rs])),
                "live_ttft": float(np.median([x["ttft_p50"] for x in rs])),
                "live_ttft_mean": float(np.median([pd.to_numeric(x["rows"]["ttft_s"]).mean()
                                                   for x in rs])),
                "live_steps": float(np.median([len(x["steps"]) for x in rs])),
                "errors": sum(x["errors"] for x in rs)}
        tr = pd.concat([x["steps"] for x in rs], ignore_index=True)
        pred = decode_fit.cost.predict(tr)
        line["step_err_med"] = float(((pred - tr["dur_s"]) / tr["dur_s"]).abs().median())
        line["decode_time_err"] = rel(float(pred.sum()), float(tr["dur_s"].sum()))
        line["host_frac"] = float(np.median([host_share(x["steps"])["host_frac"] for x in rs]))
        for key, (cost, rt, serial) in models.items():
            preds = [replay(x["rows"], slots=n, cost=cost, rtt_s=rt, serial_ingress=serial,
                            n_batch=a.batch) for x in rs]
            line[f"{key}_tok_s"] = float(np.median([q.throughput_tok_s for q in preds]))
            line[f"{key}_ttft"] = float(np.median([q.ttft_p50_s for q in preds]))
            line[f"{key}_ttft_mean"] = float(np.median([q.requests["client_ttft"].mean()
                                                        for q in preds]))
            line[f"{key}_ttft_mean_err"] = rel(line[f"{key}_ttft_mean"], line["live_ttft_mean"])
            line[f"{key}_steps"] = float(np.median([q.result.n_steps for q in preds]))
            line[f"{key}_tok_err"] = rel(line[f"{key}_tok_s"], line["live_tok_s"])
            line[f"{key}_ttft_err"] = rel(line[f"{key}_ttft"], line["live_ttft"])
        table.append(line)
    t = pd.DataFrame(table)

    # ------------------------------------------------------------ report
    def coefs(f):
        c = f.cost
        return (f"a={c.a * 1e3:.3f} ms/step, b={c.b * 1e6:.1f} us/prompt token, "
                f"c={c.c * 1e6:.1f} us/decoding seq, d={c.d * 1e9:.2f} ns/attended cell "
                f"({f.n_steps} steps, R^2 {f.r2:.4f})")
    out = [f"Fit on: {', '.join(f'{w}:{n}' for w, n in fit_cfgs)}; held out: "
           f"{', '.join(f'{w}:{n}' for w, n in held)}",
           "",
           f"decode fit (llama_decode's own time): {coefs(decode_fit)}",
           f"+host fit (step period: llama_decode + host work to the next step): "
           f"{coefs(host_fit)}",
           f"+client: per-request time outside the engine as median(live TTFT - simulated "
           f"TTFT) on the 1-slot fit run(s): {rtt_resid * 1e3:.1f} ms "
           f"({', '.join(f'{x * 1e3:.1f}' for x in resid)})",
           f"+front: the same time read off the 1-slot fit trace(s) (engine idle between two "
           f"requests, less the host gap): {rtt * 1e3:.2f} ms "
           f"({', '.join(f'{x * 1e3:.2f}' for x in turns)}), with one request entering "
           f"the engine at a time",
           f"all (in-sample reference, every configuration fitted): {coefs(all_fit)}",
           "",
           f"Live vs predicted ({head_model} model; error = predicted / live - 1; "
           f"target within {TOLERANCE:.0%} on held-out configurations):",
           "",
           "| configuration | role | live tok/s | predicted | error | live TTFT p50 ms | "
           "predicted | error | within 10% | live TTFT mean ms | predicted | error |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for _, r in t.iterrows():
        ok = (abs(r[f"{head_model}_tok_err"]) <= TOLERANCE
              and abs(r[f"{head_model}_ttft_err"]) <= TOLERANCE)
        out.append(f"| {r.config} | {r.role} | {r.live_tok_s:.1f} | "
                   f"{r[f'{head_model}_tok_s']:.1f} | {pct(r[f'{head_model}_tok_err'])} | "
                   f"{r.live_ttft * 1e3:.0f} | {r[f'{head_model}_ttft'] * 1e3:.0f} | "
                   f"{pct(r[f'{head_model}_ttft_err'])} | {'yes' if ok else 'NO'} | "
                   f"{r.live_ttft_mean * 1e3:.0f} | {r[f'{head_model}_ttft_mean'] * 1e3:.0f} | "
                   f"{pct(r[f'{head_model}_ttft_mean_err'])} |")
    out += ["", "Errors of throughput / TTFT p50 under each model, and how well llama_decode's "
            "own time extrapolates:", "",
            "| configuration | decode | +host | +client | +front | all (in-sample) | "
            "host share of step period | steps live / sim | decode-fit step error "
            "(median abs) | decode-fit total decode time |",
            "|---|---|---|---|---|---|---:|---:|---:|---:|"]
    for _, r in t.iterrows():
        cells = " | ".join(f"{pct(r[f'{k}_tok_err'])} / {pct(r[f'{k}_ttft_err'])}"
                           for k in models)
        out.append(f"| {r.config} | {cells} | {r.host_frac:.1%} | "
                   f"{r.live_steps:.0f} / {r[f'{head_model}_steps']:.0f} | "
                   f"{r.step_err_med:.1%} | {pct(r.decode_time_err)} |")
    errs = int(t["errors"].sum())
    if errs:
        out += ["", f"WARNING: {errs} request(s) failed in the live runs"]
    return out, t


if __name__ == "__main__":
    raise SystemExit(main())
