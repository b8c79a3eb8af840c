#!/usr/bin/env python
"""Simulator fidelity: calibrate the cost model on one run, predict runs it never saw.

Calibration (the only run the model is fitted on): labkit.bench.calibration, prompts
log-spaced from 64 to about 2048 tokens, answers of spread fixed lengths (ignore_eos), 1, 2
and 4 requests in flight on one 4-slot labkit server. The step cost

    a + b*prefill + c*decode + d*attended + e*prefill_attn

is fitted on its step periods (llama_decode plus the host work up to the next step), with a
bootstrap over steps for each coefficient; the per-request time outside the engine is read
off its 1-in-flight phase.

Held out (none used for fitting), each on a fresh labkit server, temperature 0,
cache_prompt false, -c 16384 split KV:

  short:2              the short set (prompts of ~178 tokens), closed loop, 2 in flight
  long:1, long:2, long:4   the long set (2048-token prompts), closed loop, in flight = slots
  long:4:unified       (on request, --held-out ... long:4:unified) the long set at 4 slots
                       with --kv-unified: every sequence attends over the whole pool, and
                       the replay charges it so (UnifiedKV); its "old charging" line replays
                       it with each sequence charged its own cells (pool_attention=False)
  mixed@RATE           8 short and 4 long documents interleaved, open loop, Poisson
                       arrivals at each --rates (one below, one near saturation), 4 slots

Every held-out run is replayed in labkit.sim (the same requests: exact prompt and
completion token counts; closed loop in the client's order, or open loop at the client's
send times) and compared with the live run: aggregate tok/s (completion tokens / wall),
TTFT p50, mean and p90.

Models compared:

  new       the five-term cost fitted on the calibration run (this script's headline);
  new-abcd  the same calibration run, without the prefill-attention term e (ablation);
  new-balanced  the same five terms and run, each in-flight phase weighted equally in the
            fit (a variant tested after the held-out results of 2026-11-30 19:43-19:53);
  earlier   the four-term cost fitted on the short set at 1 and 4 slots (the model
            docs/SIMULATOR.md measured first; its fit runs, short:1 and short:4, are
            measured here again so both models face the same held-out runs);
  all (in-sample)  the five terms fitted on every run at once, nothing held out: a check
            of the model's form, not a prediction.

All three use one request entering the engine at a time (serial ingress) with their own
per-request time outside the engine.

    python benchmarks/sim_fidelity.py --out results/sim_fidelity      # ~15 min on 2 cores
    python benchmarks/sim_fidelity.py --report-from results/sim_fidelity

Before every run it waits (at most --max-wait seconds) until the 1-minute load average is
below --max-load, and repeats a run during which others used more than --max-foreign cores;
the load it saw is recorded either way.
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
from labkit.bench import calibration, harness
from labkit.bench.calibration import periods as periods_of
from labkit.bench.client import Sampling
from labkit.bench.harness import QuietMachine
from labkit.bench.runner import measure_target
from labkit.bench.workload import Workload
from labkit.bench.worksheet import run_summary
from labkit.server.launch import ServerConfig, launch
from labkit.sim.calibrate import replay, replay_open, step_periods, turnaround
from labkit.sim.features import with_prefill_attention

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 0.10
METRICS = ("tok_s", "ttft_p50", "ttft_mean", "ttft_p90")
HEAD = "new"
OWN = "own steps (in-sample)"
OLD = "new, old unified charging"


def parse_config(text: str):
    """``short:2`` -> ("short", 2, None); ``mixed@0.25`` -> ("mixed", slots, 0.25);
    ``long:4:unified`` -> ("long", "4:unified", None): 4 slots, unified KV."""
    if "@" in text:
        name, rate = text.split("@")
        return name, None, float(rate)
    wl, n = text.split(":", 1)
    if n.endswith(":unified"):
        int(n.removesuffix(":unified"))
        return wl, n, None
    return wl, int(n), None


def slots_kv(n) -> tuple[int, bool]:
    """(slots, unified) of a parsed configuration's slot field."""
    if isinstance(n, str) and n.endswith(":unified"):
        return int(n.removesuffix(":unified")), True
    return n, False


def mixed_workload(n_short: int = 8, n_long: int = 4) -> Workload:
    """Short and long documents interleaved (two short, one long, ...)."""
    short, long = bench.load_workload("short"), bench.load_workload("long")
    docs, s, lg = [], iter(short.documents[:n_short]), iter(long.documents[:n_long])
    for i in range(n_short + n_long):
        d = next(lg, None) if i % 3 == 2 else next(s, None)
        d = d or next(s, None) or next(lg)
        docs.append(d)
    return Workload("mixed", docs, short.prompt, f"{n_short} short and {n_long} long, interleaved")


def live_run(wl, slots, a, round_: int, quiet: QuietMachine, rate=None) -> dict:
    """One run on a fresh labkit server: the client's rows and the engine's step and slot
    traces for them (the warm-up's left out), kept only if the machine stayed quiet."""
    slots, unified = slots_kv(slots)
    cfg = ServerConfig(kind="labkit", n_ctx=a.n_ctx, n_slots=slots, kv_unified=unified,
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
                                            sample_memory=False, rate=rate,
                                            arrival_seed=round_)
            steps = harness.fetch_trace(srv.base_url, since)
            slot_rows = harness.fetch_trace(srv.base_url, since, kind="slots")
        return rows, steps, slot_rows

    label = f"{wl.name}:{slots}" + (":unified" if unified else "") + (f"@{rate:g}" if rate else "")
    run = quiet.run(measure, label)
    rows, steps, slot_rows = run.result
    return {"config": label, "workload": wl.name, "slots": slots, "rate": rate,
            "unified": unified,
            "round": round_, "rows": rows, "steps": with_prefill_attention(steps, slot_rows),
            "load1": run.load1, "foreign": run.foreign_cores, "discarded": run.discarded,
            **live_figures(rows)}


def live_figures(rows: pd.DataFrame) -> dict:
    s = run_summary(rows).iloc[0]
    ttft = pd.to_numeric(rows["ttft_s"], errors="coerce")
    return {"tok_s": float(s.output_tok_s), "ttft_p50": float(ttft.median()),
            "ttft_mean": float(ttft.mean()), "ttft_p90": float(ttft.quantile(0.9)),
            "errors": int(s.errors), "wall_s": float(s.wall_s)}


def rel(pred: float, live: float) -> float:
    return (pred - live) / live if live else float("nan")


def put_medians(line: dict, key: str, preds) -> None:
    """Each metric's median over the replays ``preds`` into ``line`` as ``{key}_{metric}``,
    with its error against the live run's (``{key}_{metric}_err``)."""
    vals = {"tok_s": [q.throughput_tok_s for q in preds],
            "ttft_p50": [q.ttft_p50_s for q in preds],
            "ttft_mean": [q.ttft_mean_s for q in preds],
            "ttft_p90": [q.ttft_p90_s for q in preds]}
    for m in METRICS:
        line[f"{key}_{m}"] = float(np.median(vals[m]))
        line[f"{key}_{m}_err"] = rel(line[f"{key}_{m}"], line[f"live_{m}"])


def pct(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.1%}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--held-out", nargs="+",
                   default=["short:2", "long:1", "long:2", "long:4"],
                   help="closed-loop configurations to predict, WORKLOAD:SLOTS")
    p.add_argument("--rates", type=float, nargs="*", default=[0.1, 0.25],
                   help="Poisson rates (requests/s) of the mixed open-loop runs")
    p.add_argument("--mixed-slots", type=int, default=4)
    p.add_argument("--mixed-docs", type=int, nargs=2, default=[8, 4], metavar=("SHORT", "LONG"),
                   help="short and long documents of the mixed workload (default 8 4)")
    p.add_argument("--earlier-fit", nargs="*", default=["short:1", "short:4"],
                   help="the earlier model's fit runs (measured again; empty: skip it)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--quick-calibration", action="store_true",
                   help="calibrate in quick mode (prompts up to 1024 tokens, 1 and 2 in flight)")
    p.add_argument("--cal-prompts", type=int, default=None,
                   help="prompt lengths of the calibration plan (default: the plan's 10)")
    p.add_argument("--threads", "-t", type=int, default=2)
    p.add_argument("--n-ctx", type=int, default=16384,
                   help="KV pool (split; 16384 leaves each of 4 slots room for a long prompt)")
    p.add_argument("--batch", "-b", type=int, default=2048)
    p.add_argument("--ubatch", "-ub", type=int, default=512)
    p.add_argument("--long-docs", type=int, default=4,
                   help="first N documents of the long set (default 4, about 40 s a run)")
    QuietMachine.add_arguments(p)
    p.add_argument("--max-wait", type=float, default=300.0,
                   help="most seconds to wait for a quiet machine before each run (then it "
                        "runs anyway and the load is recorded)")
    p.add_argument("--out", default=None)
    p.add_argument("--report-from", default=None, metavar="DIR",
                   help="measure nothing: fit and predict again from a run saved with --out")
    a = p.parse_args(argv)
    if a.report_from:
        return report_from(Path(a.report_from), a)

    held = [parse_config(c) for c in a.held_out] + [("mixed", a.mixed_slots, r) for r in a.rates]
    earlier = [parse_config(c) for c in a.earlier_fit]
    workloads = {"short": bench.load_workload("short"),
                 "long": bench.load_workload("long").head(a.long_docs),
                 "mixed": mixed_workload(*a.mixed_docs)}
    started = dt.datetime.now().astimezone()
    cmdline = "python " + " ".join(shlex.quote(x) for x in [os.path.relpath(__file__, ROOT)]
                                   + (argv if argv is not None else sys.argv[1:]))
    quiet = QuietMachine.from_args(a)
    quiet.max_wait_s = a.max_wait

    t0 = time.perf_counter()
    the_plan = (calibration.plan(a.quick_calibration, n_prompts=a.cal_prompts)
                if a.cal_prompts else None)
    cal = calibration.run(quick=a.quick_calibration, the_plan=the_plan, n_threads=a.threads,
                          n_batch=a.batch, n_ubatch=a.ubatch, quiet=quiet, progress=True)
    print(f"calibration: {len(cal.rows)} requests, {len(cal.steps)} steps, "
          f"loads {', '.join(f'{x:.2f}' for x in cal.load1)}, others "
          f"{', '.join(f'{x:.2f}' for x in cal.foreign)} cores "
          f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    runs = []
    for r in range(a.rounds):
        order = earlier + held
        order = order if r % 2 == 0 else order[::-1]
        for name, n, rate in order:
            t0 = time.perf_counter()
            run = live_run(workloads[name], n, a, r, quiet, rate)
            run["role"] = "held out, earlier fit" if (name, n, rate) in earlier else "held out"
            runs.append(run)
            print(f"round {r + 1}/{a.rounds} {run['config']}  {run['tok_s']:6.1f} tok/s  "
                  f"TTFT p50 {run['ttft_p50'] * 1e3:6.0f} ms  {len(run['steps'])} steps  "
                  f"errors {run['errors']}  load {run['load1']:.2f}  "
                  f"others {run['foreign']:.2f} cores  "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    ended = dt.datetime.now().astimezone()
    loads = [x["load1"] for x in runs] + list(cal.load1)
    foreign = [x["foreign"] for x in runs] + list(cal.foreign)
    head = [f"Command: `{cmdline}`",
            f"Date: {started:%Y-%m-%d %H:%M}-{ended:%H:%M %Z}; machine: {os.cpu_count()}-core "
            f"VM, shared; 1-minute load average at the start of each run: {min(loads):.2f}-"
            f"{max(loads):.2f} (waited up to {a.max_wait:.0f} s for < {a.max_load}"
            + ("; never got quiet before some runs" if max(loads) >= a.max_load else "")
            + f"); other processes' CPU during the kept runs: {max(foreign):.2f} cores at "
            f"most; runs repeated because others were busy: "
            f"{sum(x['discarded'] for x in runs)}",
            f"Calibration: {'quick' if a.quick_calibration else 'full'} plan, "
            f"{len(cal.plan.requests)} requests (prompts "
            f"{min(q for q, _ in cal.plan.requests)}-{max(q for q, _ in cal.plan.requests)} "
            f"tokens, answers {min(o for _, o in cal.plan.requests)}-"
            f"{max(o for _, o in cal.plan.requests)}) at {', '.join(map(str, cal.plan.in_flight))}"
            f" in flight, {cal.seconds:.0f} s",
            f"labkit server: -c {a.n_ctx} split KV (a :unified row: --kv-unified), -t {a.threads} -b {a.batch} -ub {a.ubatch}; "
            f"{a.rounds} round(s) per held-out configuration, fresh server per run, "
            f"temperature 0, cache_prompt false; long set: first {a.long_docs} documents; "
            f"mixed: {a.mixed_docs[0]} short + {a.mixed_docs[1]} long, Poisson at {', '.join(f'{x:g}' for x in a.rates)}/s "
            f"on {a.mixed_slots} slots"]
    if a.out:                                     # the measurements first, then the analysis
        d = Path(a.out)
        d.mkdir(parents=True, exist_ok=True)
        pd.concat([x["rows"].assign(config=x["config"])
                   .drop(columns=["usage", "timings"], errors="ignore") for x in runs]
                  ).to_csv(d / "rows.csv", index=False)
        pd.concat([x["steps"].assign(config=x["config"], round=x["round"]) for x in runs]
                  ).to_csv(d / "steps.csv", index=False)
        pd.DataFrame([{k: x[k] for k in ("config", "workload", "slots", "rate", "unified",
                                         "round", "role", "load1", "foreign", "discarded")}
                      for x in runs]
                     ).to_csv(d / "runs.csv", index=False)
        cal.steps.to_csv(d / "calibration_steps.csv", index=False)
        cal.rows.drop(columns=["usage", "timings"], errors="ignore").to_csv(
            d / "calibration_rows.csv", index=False)
        (d / "header.txt").write_text("\n".join(head) + "\n")
    out, t = analyze(runs, cal.steps, cal.rows, a)
    print("\n".join(head + [""] + out))
    if a.out:
        t.to_csv(d / "fidelity.csv", index=False)
        (d / "report.md").write_text("\n".join(head + [""] + out) + "\n")
    return 0


def report_from(d: Path, a) -> int:
    """Fit and predict again from saved live runs; the header lines are kept as they were."""
    rows = pd.read_csv(d / "rows.csv")
    steps = pd.read_csv(d / "steps.csv")
    meta = pd.read_csv(d / "runs.csv")
    runs = []
    for _, m in meta.iterrows():
        g = rows[(rows["config"] == m["config"]) & (rows["round"] == m["round"])]
        st = steps[(steps["config"] == m["config"]) & (steps["round"] == m["round"])] \
            .drop(columns=["config", "round"]).reset_index(drop=True)
        rate = None if pd.isna(m["rate"]) else float(m["rate"])
        unified = bool(m.get("unified", False)) if not pd.isna(m.get("unified", False)) else False
        runs.append({**m.to_dict(), "rate": rate, "unified": unified, "rows": g, "steps": st,
                     **live_figures(g)})
    head = (d / "header.txt").read_text().strip()
    out, _ = analyze(runs, pd.read_csv(d / "calibration_steps.csv"),
                     pd.read_csv(d / "calibration_rows.csv"), a)
    print(head + "\n\n" + "\n".join(out))
    return 0


def fit_models(runs, cal_steps: pd.DataFrame, a) -> dict:
    """name: (fit, per-request time outside the engine)."""
    models = {}
    new = calibration.fit_traces(cal_steps, bootstrap=200, name="new")
    one = cal_steps[cal_steps["in_flight"] == cal_steps["in_flight"].min()]
    rtt_cal = turnaround(one)
    models["new"] = (new, rtt_cal)
    models["new-abcd"] = (calibration.fit_traces(cal_steps, bootstrap=200, terms="abcd",
                                                 name="new-abcd"), rtt_cal)
    # Variant (added after seeing the held-out results of 19:43-19:53): each in-flight
    # phase of the calibration counts the same in the fit, whatever its number of steps.
    models["new-balanced"] = (calibration.fit_traces(cal_steps, bootstrap=200,
                                                     balance="in_flight",
                                                     name="new-balanced"), rtt_cal)
    # Variant (added after seeing the mixed runs' misses of 21:57-22:07): squared errors in
    # seconds instead of relative ones, so the few long prompt steps weigh as much as their
    # time rather than as one step among a thousand decode steps.
    models["new-absolute"] = (sim.fit(periods_of(cal_steps), weight="absolute", bootstrap=200,
                                      name="new-absolute"), rtt_cal)
    # In-sample reference, nothing held out: can the five terms explain every run at once?
    everything = pd.concat([periods_of(cal_steps)] + [step_periods(x["steps"]) for x in runs],
                           ignore_index=True)
    models["all (in-sample)"] = (sim.fit(everything, name="all"), rtt_cal)
    fit_runs = [x for x in runs if x["role"] == "held out, earlier fit"]
    if fit_runs:
        per = pd.concat([step_periods(x["steps"]) for x in fit_runs], ignore_index=True)
        f = sim.fit(per, terms="abcd", weight="absolute", bootstrap=200, name="earlier")
        ones = [turnaround(x["steps"]) for x in fit_runs if x["slots"] == 1]
        models["earlier"] = (f, float(np.median(ones)) if ones else 0.0)
    return models


def same_work(runs, cal_steps) -> list[str]:
    """Report lines: the same kind of step timed in every run (added after seeing the
    held-out results of 19:43-19:53). If one run's steps are slower than another's at the
    same composition, no cost model of the composition alone can predict both.

    - prompt-only steps of 150-250 and of 1900-2048 tokens (one chunk, nothing decoding):
      ms per prompt token;
    - decode-only steps with one sequence: step period (llama_decode plus host time up to
      the next step) against the calibration's 1-in-flight phase at the same context
      (a straight line a1 + d1 x attended fitted on that phase);
    - a sixth column, 1 for a step with exactly one decoding sequence and no prompt tokens
      (a lone sequence's matrix-vector kernels), fitted by NNLS with the five terms.
    """
    from labkit.sim.fit import design, nnls_small
    cal_p = periods_of(cal_steps)
    parts = [("calibration", cal_steps, cal_p)] + [
        (x["config"], x["steps"], step_periods(x["steps"])) for x in runs]
    one = cal_p[(cal_p["in_flight"] == cal_p["in_flight"].min()) & cal_p["dur_s"].notna()
                & (cal_p["n_prefill_tokens"] == 0) & (cal_p["n_decode"] == 1)]
    a1, d1 = np.polynomial.polynomial.polyfit(one["attended"].to_numpy(float),
                                              one["dur_s"].to_numpy(float), 1)
    out = ["The same work timed in each run: prompt-only steps of 150-250 and 1900-2048 "
           "tokens, and "
           "one-sequence decode steps against the calibration's 1-in-flight line "
           f"({a1 * 1e3:.2f} ms + {d1 * 1e6:.2f} us x attended):", "",
           "| run | short prompts | ms per token (median, range) | long prompts | ms per token "
           "| one-sequence decode steps | median period ms | against the calibration line |",
           "|---|---:|---|---:|---|---:|---:|---:|"]

    def per_token(raw, lo, hi):
        pr = raw[(raw["n_decode"] == 0) & raw["n_prefill_tokens"].between(lo, hi)]
        ms = pr["dur_s"] / pr["n_prefill_tokens"] * 1e3
        return (f"{len(pr)} | " + (f"{ms.median():.2f} ({ms.min():.2f}-{ms.max():.2f})"
                                   if len(pr) else "-"))
    for name, raw, per in parts:
        lone = per[per["dur_s"].notna() & (per["n_prefill_tokens"] == 0)
                   & (per["n_decode"] == 1)]
        ratio = (lone["dur_s"] / (a1 + d1 * lone["attended"])).median() - 1 \
            if len(lone) else float("nan")
        out.append(f"| {name} | {per_token(raw, 150, 250)} | {per_token(raw, 1900, 2048)} | "
                   f"{len(lone)} | "
                   + (f"{lone['dur_s'].median() * 1e3:.1f} | {pct(ratio)}" if len(lone)
                      else "- | -") + " |")

    def lone_term(df):
        df = df[df["dur_s"].notna() & (df["dur_s"] > 0)]
        X = np.column_stack([design(df), ((df["n_decode"] == 1)
                                          & (df["n_prefill_tokens"] == 0)).to_numpy(float)])
        y = df["dur_s"].to_numpy(float)
        coef, _ = nnls_small(X / y[:, None], np.ones(len(y)))
        return coef
    everything = pd.concat([p for _, _, p in parts], ignore_index=True)
    lc, la = lone_term(cal_p), lone_term(everything)
    out += ["", f"A sixth term, per step with exactly one decoding sequence and no prompt "
            f"tokens, fitted by NNLS with the five: {lc[5] * 1e3:.3f} ms on the calibration "
            f"run, {la[5] * 1e3:.3f} ms on every run at once (0 means the traces do not ask "
            f"for it)."]
    return out


def predict(run, cost, rtt, a, pool_attention=True):
    # a unified run is replayed in a unified pool of the same -c (the others as before: no KV
    # limit, which the split runs never reach)
    kv = (sim.UnifiedKV(a.n_ctx, pool_attention=pool_attention) if run.get("unified")
          else None)
    if run["rate"]:
        return replay_open(run["rows"], slots=run["slots"], cost=cost, rtt_s=rtt,
                           serial_ingress=True, n_batch=a.batch, kv=kv)
    return replay(run["rows"], slots=run["slots"], cost=cost, rtt_s=rtt, serial_ingress=True,
                  n_batch=a.batch, kv=kv)


def analyze(runs, cal_steps, cal_rows, a):
    """Fit on the calibration run, replay every run; the report lines and the table."""
    models = fit_models(runs, cal_steps, a)
    table = []
    configs = list(dict.fromkeys(x["config"] for x in runs))
    for cfg in configs:
        rs = [x for x in runs if x["config"] == cfg]
        line = {"config": cfg, "role": rs[0]["role"], "rounds": len(rs),
                "errors": sum(x["errors"] for x in rs),
                "load1_max": max(x["load1"] for x in rs),
                "foreign_max": max(x["foreign"] for x in rs),
                "live_steps": float(np.median([len(x["steps"]) for x in rs]))}
        for m in METRICS:
            line[f"live_{m}"] = float(np.median([x[m] for x in rs]))
        tr = pd.concat([x["steps"] for x in rs], ignore_index=True)
        # Per configuration, in-sample (added after seeing the mixed runs' misses of
        # 21:57-22:07): costs fitted on this configuration's own steps. Its replay has the
        # step costs the run actually had, so what is left is the simulator's scheduling;
        # the difference from the calibration fit's row is the costs not carrying over.
        per = pd.concat([step_periods(x["steps"]) for x in rs], ignore_index=True)
        # llama_decode times where a step has no period (its next step holds prompt
        # tokens): a run with few steps, like long:4, would otherwise lose its prefills.
        per["dur_s"] = per["dur_s"].fillna(per["decode_s"])
        own = {OWN: (sim.fit(per, name=OWN), models[HEAD][1])}
        for key, (f, rtt) in {**models, **own}.items():
            pred_steps = f.cost.predict(tr)
            line[f"{key}_decode_time_err"] = rel(float(pred_steps.sum()), float(tr["dur_s"].sum()))
            preds = [predict(x, f.cost, rtt, a) for x in rs]
            put_medians(line, key, preds)
            line[f"{key}_steps"] = float(np.median([q.result.n_steps for q in preds]))
        if rs[0].get("unified"):
            # the same unified run replayed with the earlier charging: each sequence its own
            # cells, as if the pool were split
            f, rtt = models[HEAD]
            preds = [predict(x, f.cost, rtt, a, pool_attention=False) for x in rs]
            put_medians(line, OLD, preds)
        table.append(line)
    t = pd.DataFrame(table)

    def coefs(f):
        c = f.cost
        return (f"a={c.a * 1e3:.3f} ms/step, b={c.b * 1e3:.3f} ms/prompt token, "
                f"c={c.c * 1e3:.3f} ms/decoding seq, d={c.d * 1e6:.3f} us/attended cell, "
                f"e={c.e * 1e9:.3f} ns/prefill pair ({f.n_steps} steps, R^2 {f.r2:.4f}, "
                f"median |step error| {f.rel_err.abs().median():.1%})")
    new, rtt = models["new"]
    u = new.uncertainty()
    scale = {"a": (1e3, "ms/step"), "b": (1e3, "ms/prompt token"),
             "c": (1e3, "ms/decoding sequence"), "d": (1e6, "us/attended cell"),
             "e": (1e9, "ns/prefill pair")}
    out = ["Calibration fit (new model), step periods, bootstrap over steps (200 resamples):",
           "", "| coefficient | value | standard error | 95 % interval | unit |",
           "|---|---:|---:|---|---|"]
    for k, (s, unit) in scale.items():
        out.append(f"| {k} | {u.loc[k, 'value'] * s:.4g} | {u.loc[k, 'se'] * s:.2g} | "
                   f"{u.loc[k, 'lo95'] * s:.4g} - {u.loc[k, 'hi95'] * s:.4g} | {unit} |")
    out += ["", f"R^2 {new.r2:.4f} over {new.n_steps} steps; median |step error| "
            f"{new.rel_err.abs().median():.1%}; per-request time outside the engine "
            f"{rtt * 1e3:.2f} ms (1-in-flight phase)",
            f"calibration requests: {len(cal_rows)}; prompt tokens "
            f"{int(cal_rows['prompt_tokens'].min())}-{int(cal_rows['prompt_tokens'].max())}", ""]
    for key, (f, rt) in models.items():
        out.append(f"- {key}: {coefs(f)}; outside the engine {rt * 1e3:.2f} ms")
    out += ["", f"Live against predicted, {HEAD} model (error = predicted / live - 1; target "
            f"within {TOLERANCE:.0%} on every held-out figure):", "",
            "| configuration | role | live tok/s | pred. | err | live TTFT p50 ms | pred. | "
            "err | TTFT mean ms | pred. | err | TTFT p90 ms | pred. | err | all within 10 % |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for _, r in t.iterrows():
        cells, ok = [], True
        for m in METRICS:
            s = 1 if m == "tok_s" else 1e3
            fmt = ".1f" if m == "tok_s" else ".0f"
            err = r[f"{HEAD}_{m}_err"]
            ok = ok and abs(err) <= TOLERANCE
            cells.append(f"{r[f'live_{m}'] * s:{fmt}} | {r[f'{HEAD}_{m}'] * s:{fmt}} | {pct(err)}")
        out.append(f"| {r.config} | {r.role} | {' | '.join(cells)} | {'yes' if ok else 'NO'} |")
    keys = list(models) + [OWN]
    out += ["", "Errors by model (tok/s / TTFT p50 / TTFT mean / TTFT p90), and each model's "
            "error on the live runs' total llama_decode time:", "",
            "| configuration | " + " | ".join(keys) + " | " +
            " | ".join(f"{k}: decode time" for k in keys) + " | steps live / sim / own |",
            "|---|" + "---|" * len(keys) + "---:|" * len(keys) + "---:|"]
    for _, r in t.iterrows():
        cells = " | ".join(" / ".join(pct(r[f"{k}_{m}_err"]) for m in METRICS) for k in keys)
        dts = " | ".join(pct(r[f"{k}_decode_time_err"]) for k in keys)
        out.append(f"| {r.config} | {cells} | {dts} | {r.live_steps:.0f} / "
                   f"{r[f'{HEAD}_steps']:.0f} / {r[f'{OWN}_steps']:.0f} |")
    if OLD + "_tok_s" in t:
        out += ["", f"Unified KV, {HEAD} model: attention charged over the whole pool (as "
                "llama.cpp computes it) against the old charging (each sequence its own cells):",
                "", "| configuration | live tok/s | pred. | err | old charging | err | "
                "live TTFT p50 ms | pred. | err | old charging | err |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in t[t[OLD + "_tok_s"].notna()].iterrows():
            cells = []
            for m, s, fmt in (("tok_s", 1, ".1f"), ("ttft_p50", 1e3, ".0f")):
                cells.append(f"{r[f'live_{m}'] * s:{fmt}} | {r[f'{HEAD}_{m}'] * s:{fmt}} | "
                             f"{pct(r[f'{HEAD}_{m}_err'])} | {r[f'{OLD}_{m}'] * s:{fmt}} | "
                             f"{pct(r[f'{OLD}_{m}_err'])}")
            out.append(f"| {r.config} | {' | '.join(cells)} |")
    out += ["", f"{OWN}: each configuration replayed with costs fitted on its own steps "
            "(nothing held out): the scheduling alone, with the step costs the run had."]
    out += ["", "Load per configuration (1-minute load average at the start, most cores "
            "others used during a kept run):", "",
            "| configuration | load | others (cores) | rounds |", "|---|---:|---:|---:|"]
    for _, r in t.iterrows():
        out.append(f"| {r.config} | {r.load1_max:.2f} | {r.foreign_max:.2f} | {r.rounds} |")
    out += [""] + same_work(runs, cal_steps)
    errs = int(t["errors"].sum())
    if errs:
        out += ["", f"WARNING: {errs} request(s) failed in the live runs"]
    return out, t


if __name__ == "__main__":
    raise SystemExit(main())
