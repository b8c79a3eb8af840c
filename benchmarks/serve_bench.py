#!/usr/bin/env python
"""Serving speed: labkit's server against llama.cpp's llama-server and llama_cpp.server.

The same embedded model, the same machine, the same threads, the same client and the same
12-request workload (labkit.bench: the short set, temperature 0, cache_prompt false, as many
requests in flight as the server has slots). Every round starts a fresh server for each
(server, slot count) and alternates the servers, rotating their order from round to round,
so a warm or a busy machine does not always favour the same one. llama_cpp.server answers
one request at a time: it runs once per in-flight level, with no slots to set.

The speed reference is a llama-server built from the very llama.cpp sources of the installed
llama-cpp-python with the same CPU features (benchmarks/build_llama_server.sh), not the
xllamacpp wheel, which is a generic AVX2 build.

It also runs llama-batched-bench (same build) for -npl 1,2,4 with the workload's median
prompt and completion lengths: S_TG is a bare lockstep decode loop with no server around it,
the ceiling a server's aggregate can approach.

    python benchmarks/serve_bench.py                  # 3 rounds, slots 1 2 4, -t 2
    python benchmarks/serve_bench.py --rounds 5 --out results/serve_bench
    python benchmarks/serve_bench.py --model synthetic:gpu-speed-stand-in --slots 1 4 8 16

``--model`` takes any model labkit takes; ``synthetic:gpu-speed-stand-in`` is a shape whose
decode step takes about a millisecond here, as a small model's does on a GPU, so the servers'
host work weighs as much as it would there (labkit/models/catalog.py, STAND_INS). Its text is
noise: compare speeds on it, not answers.

The targets checked (performance targets live here, never in timed tests): labkit's
aggregate tokens/s >= 0.98x llama-server's at every slot count on a real model (>= 0.95x on
the GPU-speed stand-in, where the servers' host work is a third of a step), its median TTFT
<= 1.05x, and its gain from the fewest to the most slots at least llama-server's. The ratio
is also printed round by round (each round's two runs were made minutes apart), with the
mean TTFT's ratio beside the p50's, and how each server's first calls shared the requests sent
together at the start (a race, not a rule: it moves the p50 of twelve requests by a prompt
call and the mean far less; docs/PERFORMANCE.md, "Seven rounds").

    python benchmarks/serve_bench.py --parity         # the parity check, both models

``--parity`` is the whole comparison in one command: labkit and llama-server only, -c 16384
split KV, on the embedded model at 1, 2, 4 and 8 slots and on the GPU-speed stand-in at 1, 4,
8 and 16 (48 timing-only requests a run there: answers max_tokens long, ignore_eos), three
rounds each, and a last table of every ratio against its target.

Before every run it waits until the 1-minute load average is below --max-load (the machine
is shared); the load at the start of every run is printed and kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd

from labkit import bench
from labkit.bench import harness
from labkit.bench.harness import QuietMachine
from labkit.bench.runner import default_sampling, measure_target
from labkit.bench.timing import fixed_length
from labkit.bench.worksheet import run_summary
from labkit.server.launch import ServerConfig, launch
from labkit.models.files import resolve_model

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ("labkit", "llama-server", "llama_cpp.server")
TARGET_TOK_S, TARGET_TOK_S_STAND_IN, TARGET_TTFT, TARGET_GAIN = 0.98, 0.95, 1.05, 1.0
STAND_IN = "synthetic:gpu-speed-stand-in"
# --parity: (model, slot counts, requests per run) in the order they run; None is the embedded
# model; None requests: the workload as it is. The stand-in's text is noise, so its runs are
# timing-only (every answer max_tokens long, ignore_eos) and four times as long as the
# workload's 12 requests: a step takes a millisecond there, and a 12-request run lasts 0.3 s.
PARITY = ((None, (1, 2, 4, 8), None), (STAND_IN, (1, 4, 8, 16), 48))
PARITY_N_CTX = 16384


def tok_s_target(model: str | None) -> float:
    """The throughput ratio labkit must reach on ``model``: lower on a stand-in shape
    (labkit/models/catalog.py, STAND_INS), whose steps are as short as a GPU's."""
    from labkit.models import catalog
    name = (model or "").removeprefix("synthetic:").split(":")[0]
    return TARGET_TOK_S_STAND_IN if name in catalog.STAND_INS else TARGET_TOK_S


# ------------------------------------------------------------------------ helpers

def reference_bin() -> Path:
    import llama_cpp
    root = Path(os.environ.get("LABKIT_CACHE", Path.home() / ".cache" / "labkit"))
    return root / f"llama.cpp-{llama_cpp.__version__}" / "build" / "bin"


def _run_text(cmd: list[str], timeout: float = 60) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"


def versions(bin_dir: Path) -> dict:
    from importlib.metadata import version
    out = {"python": platform.python_version()}
    for pkg in ("labkit", "llama_cpp_python", "xllamacpp", "uvicorn", "starlette"):
        try:
            out[pkg] = version(pkg)
        except Exception:
            out[pkg] = "not installed"
    v = _run_text([str(bin_dir / "llama-server"), "--version"])
    out["llama-server"] = " ".join(line.strip() for line in v.splitlines()
                                   if line.startswith(("version", "built with")))
    import llama_cpp
    out["llama_cpp system_info"] = llama_cpp.llama_print_system_info().decode().strip()
    from labkit.machine.runenv import cpu_model
    out["cpu"] = f"{cpu_model()} ({os.cpu_count()} logical CPUs)"
    return out


def server_config(kind: str, slots: int, a, bin_dir: Path) -> ServerConfig:
    if kind == "llama_cpp.server":
        # Serial: no slots. Same context, threads and batch sizes; flash attention on, as
        # llama.cpp's "auto" resolves on this CPU; logits only for the last prompt token,
        # as the other two servers compute them; and queue concurrent requests instead of
        # cutting off the one being streamed (its default, interrupt_requests=True, would
        # truncate answers as soon as two requests are in flight).
        return ServerConfig(kind=kind, model=a.model, n_ctx=a.n_ctx, n_batch=a.batch,
                            n_ubatch=a.ubatch, n_threads=a.threads, extra_args=(
                                "--n_ubatch", str(a.ubatch), "--n_threads_batch", str(a.threads),
                                "--flash_attn", "true", "--logits_all", "false",
                                "--interrupt_requests", "false"))
    return ServerConfig(kind=kind, model=a.model, n_ctx=a.n_ctx, n_slots=slots, kv_unified=False,
                        n_batch=a.batch, n_ubatch=a.ubatch, n_threads=a.threads,
                        binary=str(bin_dir / "llama-server") if kind == "llama-server" else None)


def one_run(kind, slots, a, bin_dir, wl, round_, quiet: QuietMachine
            ) -> tuple[pd.DataFrame, dict]:
    """One measured run on a fresh server, kept only if the machine stayed quiet."""
    cfg = server_config(kind, slots, a, bin_dir)
    # the workload's own fields (a timing-only workload: its fixed answer length, ignore_eos)
    sampling = dataclasses.replace(default_sampling(wl),
                                   require_usage=kind != "llama_cpp.server")

    def measure(monitor):
        with launch(cfg) as srv:
            harness.warm_up(srv.base_url, wl, sampling)
            with monitor:
                rows, _, info = measure_target(harness.target_of(srv), wl, slots,
                                               sampling=sampling, warmup=False, round_=round_,
                                               sample_memory=False)
        return rows, info, shlex.join(srv.command)

    run = quiet.run(measure, f"{kind} at {slots} slots")
    rows, info, command = run.result
    rows["bench_server"], rows["bench_slots"], rows["load1"] = kind, slots, run.load1
    rows["foreign_cores"], rows["discarded"] = run.foreign_cores, run.discarded
    return rows, {**info, "command": command, "foreign_cores": run.foreign_cores,
                  "discarded": run.discarded}


# ------------------------------------------------------------------ batched-bench

_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|"
                  r"\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|"
                  r"\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")


def batched_bench(bin_dir: Path, model: str, a, npp: int, ntg: int, npl=(1, 2, 4)):
    """Run llama-batched-bench once; one row per -npl value (S_PP, S_TG, S in tokens/s)."""
    cmd = [str(bin_dir / "llama-batched-bench"), "-m", model, "-c", str(a.n_ctx),
           "-b", str(a.batch), "-ub", str(a.ubatch), "-t", str(a.threads), "-fa", "auto",
           "-ngl", "0", "--no-kv-unified", "-npp", str(npp), "-ntg", str(ntg), "-npl", ",".join(map(str, npl))]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    rows = []
    for line in p.stdout.splitlines():
        m = _ROW.match(line.strip())
        if m:
            v = m.groups()
            rows.append({"PP": int(v[0]), "TG": int(v[1]), "B": int(v[2]), "N_KV": int(v[3]),
                         "T_PP_s": float(v[4]), "S_PP": float(v[5]), "T_TG_s": float(v[6]),
                         "S_TG": float(v[7]), "T_s": float(v[8]), "S": float(v[9])})
    if not rows:
        raise RuntimeError(f"llama-batched-bench printed no table:\n{p.stdout}\n{p.stderr[-3000:]}")
    return pd.DataFrame(rows), " ".join(shlex.quote(c) for c in cmd)


# ------------------------------------------------------------------------- report

def fmt(x, spec=".1f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def per_round(values, spec=".2f") -> str:
    """Values one per round, "a / b / c"."""
    return " / ".join(fmt(v, spec) for v in values)


def correct_range(g: pd.DataFrame) -> str:
    """The fewest and most answers graded correct in a run, or "not graded" (timing only)."""
    c = pd.to_numeric(g["correct"], errors="coerce")
    if c.isna().any():
        return "not graded"
    return f"{int(c.min())}-{int(c.max())}/{int(g['n_requests'].iloc[0])}"


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    runs = run_summary(rows)
    meta = rows.groupby("run_id", sort=False).agg(
        bench_server=("bench_server", "first"), bench_slots=("bench_slots", "first"),
        load1=("load1", "first"), completion_tokens=("completion_tokens", "sum"))
    runs = runs.merge(meta, left_on="run_id", right_index=True)
    ttft_mean = rows.assign(t=pd.to_numeric(rows["ttft_s"], errors="coerce")) \
        .groupby("run_id")["t"].mean().rename("ttft_mean_s")
    runs = runs.merge(ttft_mean, left_on="run_id", right_index=True)
    out = []
    for (kind, n), g in runs.groupby(["bench_server", "bench_slots"], sort=False):
        g = g.sort_values("round")
        out.append({"server": kind, "slots": int(n), "rounds": len(g),
                    "tok_s": g["output_tok_s"].median(),
                    "tok_s_list": list(g["output_tok_s"]),
                    "ttft_list": list(g["ttft_p50_s"] * 1e3),
                    "tok_s_rounds": per_round(g["output_tok_s"], ".1f"),
                    "ttft_p50_ms": g["ttft_p50_s"].median() * 1e3,
                    "ttft_rounds_ms": per_round(g["ttft_p50_s"] * 1e3, ".0f"),
                    "ttft_mean_ms": g["ttft_mean_s"].median() * 1e3,
                    "completion_tokens": g["completion_tokens"].median(),
                    "correct": correct_range(g),
                    "errors": int(g["errors"].sum()),
                    "load1": per_round(g["load1"])})
    return pd.DataFrame(out)


def same_answers(rows: pd.DataFrame, a: str, b: str) -> str:
    """How many requests got the same text from servers a and b (same round, same slots)."""
    k = ["round", "bench_slots", "index"]
    x = rows[rows["bench_server"] == a].set_index(k)["answer"]
    y = rows[rows["bench_server"] == b].set_index(k)["answer"]
    common = x.index.intersection(y.index)
    same = int((x.loc[common] == y.loc[common]).sum())
    return f"{same}/{len(common)}"


def first_calls(rows: pd.DataFrame, server: str, slots: int) -> list[str]:
    """Per round, how the requests sent together at the start (as many as there are slots)
    got their first tokens: "1+3" is one request's prompt in the first call and the other
    three's in the next. Requests whose prompts share a call get their first tokens together,
    a call apart from the next group; "together" is read as closer than a quarter of the
    first request's time to first token (one prompt call)."""
    out = []
    g = rows[(rows["bench_server"] == server) & (rows["bench_slots"] == slots)]
    for _, r in g.groupby("round", sort=True):
        start = r.sort_values("send_s").head(slots)
        t = sorted(pd.to_numeric(start["first_token_s"], errors="coerce").dropna())
        if len(t) < slots:
            out.append("-")
            continue
        apart = 0.25 * (t[0] - float(start["send_s"].min()))
        groups = [1]
        for a, b in zip(t, t[1:]):
            if b - a > apart:
                groups.append(1)
            else:
                groups[-1] += 1
        out.append("+".join(map(str, groups)))
    return out


def ratios(summary: pd.DataFrame, slots, target_tok_s: float,
           reference: str = "llama-server") -> list[dict]:
    """labkit / llama-server (or ``reference``, another build of it) per slot count: the ratio
    of the medians, each round's ratio (round r's labkit run over round r's reference run), and
    whether the targets are met."""
    s = summary.set_index(["server", "slots"])
    out = []
    for n in slots:
        try:
            lk, ls = s.loc[("labkit", n)], s.loc[(reference, n)]
        except KeyError:
            continue
        rt, rf = lk.tok_s / ls.tok_s, lk.ttft_p50_ms / ls.ttft_p50_ms
        mean = lk.get("ttft_mean_ms", math.nan) / ls.get("ttft_mean_ms", math.nan)
        out.append({"slots": n, "tok_s": rt, "ttft": rf, "ttft_mean": mean,
                    "tok_s_rounds": [a / b for a, b in zip(lk.tok_s_list, ls.tok_s_list)],
                    "ttft_rounds": [a / b for a, b in zip(lk.ttft_list, ls.ttft_list)],
                    "tok_s_ok": rt >= target_tok_s, "ttft_ok": rf <= TARGET_TTFT})
    return out


def report(summary: pd.DataFrame, rows: pd.DataFrame, bb: pd.DataFrame | None, slots,
           target_tok_s: float = TARGET_TOK_S) -> str:
    s = summary.set_index(["server", "slots"])
    lines = ["| server | slots (in flight) | output tok/s (median) | per round | "
             "TTFT p50 ms (median) | per round | TTFT mean ms | completion tokens | correct | "
             "errors |",
             "|---|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    for _, r in summary.sort_values(["slots", "server"]).iterrows():
        lines.append(f"| {r.server} | {r.slots} | {fmt(r.tok_s)} | {r.tok_s_rounds} | "
                     f"{fmt(r.ttft_p50_ms, '.0f')} | {r.ttft_rounds_ms} | "
                     f"{fmt(r.ttft_mean_ms, '.0f')} | "
                     f"{fmt(r.completion_tokens, '.0f')} | {r.correct} | {r.errors} |")
    lines += ["", f"Ratios (labkit / llama-server; target: tok/s >= {target_tok_s:.2f}x, "
              f"TTFT p50 <= {TARGET_TTFT:.2f}x):", "",
              "| slots | tok/s ratio | per round | meets | TTFT p50 ratio | per round | meets | "
              "TTFT mean ratio | labkit / llama_cpp.server tok/s |",
              "|---:|---:|---|---|---:|---|---|---:|---:|"]
    for r in ratios(summary, slots, target_tok_s):
        n = r["slots"]
        serial = (s.loc[("labkit", n)].tok_s / s.loc[("llama_cpp.server", n)].tok_s
                  if ("llama_cpp.server", n) in s.index else float("nan"))
        lines.append(f"| {n} | {r['tok_s']:.3f}x | {per_round(r['tok_s_rounds'])} | "
                     f"{'yes' if r['tok_s_ok'] else 'NO'} | {r['ttft']:.3f}x | "
                     f"{per_round(r['ttft_rounds'])} | "
                     f"{'yes' if r['ttft_ok'] else 'NO'} | {fmt(r['ttft_mean'], '.3f')}x | "
                     f"{fmt(serial, '.2f')}{'' if math.isnan(serial) else 'x'} |")
    started = [(n, {k: first_calls(rows, k, n) for k in ("labkit", "llama-server")})
               for n in slots if n > 1]
    started = [(n, f) for n, f in started if f["labkit"] and f["llama-server"]]
    if started:
        lines += ["", "The first requests, sent together, as the servers' first calls took them "
                  "(per round; 1+3: one prompt in the first call, three in the next). Which "
                  "requests share the first call is a race between a server's loop and its "
                  "arriving requests; it sets the TTFT p50 of a run more than its mean:", ""]
        lines += [f"- {n} slots: labkit {' / '.join(f['labkit'])}; llama-server "
                  f"{' / '.join(f['llama-server'])}" for n, f in started]
    lo, hi = min(slots), max(slots)
    gains = {}
    for kind in SERVERS:
        if (kind, lo) in s.index and (kind, hi) in s.index:
            gains[kind] = s.loc[(kind, hi)].tok_s / s.loc[(kind, lo)].tok_s
    if "labkit" in gains and "llama-server" in gains:
        ok = gains["labkit"] >= TARGET_GAIN * gains["llama-server"]
        lines += ["", f"{hi}-slot / {lo}-slot gain: " + ", ".join(
            f"{k} {v:.2f}x" for k, v in gains.items())
            + f" (target: labkit's >= llama-server's: {'yes' if ok else 'NO'})"]
    if {"labkit", "llama-server"} <= set(rows["bench_server"]):
        lines += ["", "Same answer text, labkit vs llama-server (same round and slots): "
                  + same_answers(rows, "labkit", "llama-server")
                  + "; labkit vs llama_cpp.server: " + same_answers(rows, "labkit",
                                                                    "llama_cpp.server")]
    if bb is not None:
        lines += ["", "llama-batched-bench (same build; bare lockstep decode, no server):", "",
                  "| -npl | PP | TG | S_PP t/s | S_TG t/s | S t/s (PP+TG) | "
                  "B x TG / T (output tok/s, prefill included) |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for r in bb.itertuples():
            lines.append(f"| {int(r.B)} | {int(r.PP)} | {int(r.TG)} | {r.S_PP:.1f} | "
                         f"{r.S_TG:.1f} | {r.S:.1f} | {r.B * r.TG / r.T_s:.1f} |")
        lines += ["", "Serving overhead: a server's aggregate output tok/s / the bare loop's "
                  "(S_TG: decode only; B x TG / T: prompt and decode, as the workload does):", "",
                  "| slots | server | vs S_TG | vs B x TG / T |", "|---:|---|---:|---:|"]
        for r in bb.itertuples():
            for k in ("labkit", "llama-server"):
                if (k, int(r.B)) in s.index:
                    agg = s.loc[(k, int(r.B))].tok_s
                    lines.append(f"| {int(r.B)} | {k} | {agg / r.S_TG:.2f} | "
                                 f"{agg / (r.B * r.TG / r.T_s):.2f} |")
    return "\n".join(lines)


def parity_table(verdicts: list[dict]) -> list[str]:
    """The verdicts of :func:`ratios` (each with its ``model`` and ``target``) as one markdown
    table, and how many slot counts meet both targets (the GPU check prints the same). The
    target is judged on the ratio of the medians; the median of the per-round ratios is shown
    beside it, since each round's two runs were made minutes apart and their ratio cancels the
    machine's drift over a long run, which the ratio of medians does not."""
    lines = ["| model | slots | tok/s ratio | per round | median of rounds | target | meets | "
             "TTFT p50 ratio | per round | meets |",
             "|---|---:|---:|---|---:|---:|---|---:|---|---|"]
    for v in verdicts:
        lines.append(f"| {v['model']} | {v['slots']} | {v['tok_s']:.3f}x | "
                     f"{per_round(v['tok_s_rounds'])} | "
                     f"{fmt(statistics.median(v['tok_s_rounds']), '.3f')}x | "
                     f">= {v['target']:.2f} | {'yes' if v['tok_s_ok'] else 'NO'} | "
                     f"{v['ttft']:.3f}x | {per_round(v['ttft_rounds'])} | "
                     f"{'yes' if v['ttft_ok'] else 'NO'} |")
    met = sum(v["tok_s_ok"] and v["ttft_ok"] for v in verdicts)
    return lines + ["", f"{met} of {len(verdicts)} slot counts meet both targets."]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--servers", nargs="+", default=list(SERVERS), choices=SERVERS)
    p.add_argument("--threads", "-t", type=int, default=2)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--batch", "-b", type=int, default=2048)
    p.add_argument("--ubatch", "-ub", type=int, default=512)
    p.add_argument("--workload", default="short")
    p.add_argument("--model", "-m", default=None,
                   help="a GGUF path or synthetic:NAME (default: the embedded model)")
    p.add_argument("--docs", type=int, default=None, help="first N documents only")
    p.add_argument("--requests", type=int, default=None,
                   help="timing only: the documents repeated to N requests, every answer "
                        "max_tokens long (ignore_eos), not graded")
    p.add_argument("--bin-dir", default=None,
                   help="folder with llama-server and llama-batched-bench "
                        "(default: benchmarks/build_llama_server.sh's)")
    p.add_argument("--batched-bench-reps", type=int, default=3,
                   help="llama-batched-bench runs (median S_TG); 0 skips it")
    QuietMachine.add_arguments(p)
    p.add_argument("--out", default=None, help="folder for rows.csv, runs.csv, summary.csv")
    p.add_argument("--report-from", default=None, metavar="DIR",
                   help="measure nothing: print the report again from a run saved with --out")
    p.add_argument("--parity", action="store_true",
                   help="labkit against llama-server only, -c 16384, the embedded model at 1 2 4 8 "
                        "slots and the GPU-speed stand-in at 1 4 8 16 (--model, --slots, "
                        "--servers and --n-ctx are then ignored)")
    a = p.parse_args(argv)
    if a.report_from:
        return report_from(Path(a.report_from), a)
    if not a.parity:
        run(a, argv)
        return 0
    verdicts = []
    for model, slots, requests in PARITY:
        one = argparse.Namespace(**{**vars(a), "model": model, "slots": list(slots),
                                    "servers": ["labkit", "llama-server"],
                                    "n_ctx": PARITY_N_CTX, "requests": requests})
        if a.out:
            one.out = str(Path(a.out) / (model or "embedded").replace(":", "_"))
        print(f"\n## {model or 'the embedded model'}\n")
        summary = run(one, argv)
        target = tok_s_target(model)
        verdicts += [{**r, "model": model or "embedded", "target": target}
                     for r in ratios(summary, slots, target)]
    lines = ["", "## Parity: labkit / llama-server", "", *parity_table(verdicts)]
    print("\n".join(lines))
    if a.out:
        (Path(a.out) / "parity.md").write_text("\n".join(lines).lstrip() + "\n")
    return 0


def run(a, argv) -> pd.DataFrame:
    """Measure and print the report of one model at a.slots; returns the summary."""
    bin_dir = Path(a.bin_dir) if a.bin_dir else reference_bin()
    if "llama-server" in a.servers and not (bin_dir / "llama-server").exists():
        sys.exit(f"no llama-server in {bin_dir}: run bash benchmarks/build_llama_server.sh")
    quiet = QuietMachine.from_args(a)
    wl = bench.load_workload(a.workload)
    if a.docs:
        wl = wl.head(a.docs)
    if a.requests:
        wl = fixed_length(wl, a.requests, wl.prompt.max_tokens)
    model = str(resolve_model(a.model))
    started = dt.datetime.now().astimezone()
    cmdline = "python " + " ".join(shlex.quote(x) for x in [os.path.relpath(__file__, ROOT)]
                                   + (argv if argv is not None else sys.argv[1:]))
    print(f"{cmdline}\n{started:%Y-%m-%d %H:%M %Z}; load average at start "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)

    all_rows, runs = [], []
    for r in range(a.rounds):
        for j, n in enumerate(a.slots):
            k = (r + j) % len(a.servers)
            for kind in a.servers[k:] + a.servers[:k]:
                rows, info = one_run(kind, n, a, bin_dir, wl, r, quiet)
                rr = run_summary(rows).iloc[0]
                print(f"round {r + 1}/{a.rounds} slots {n} {kind:17s} "
                      f"{rr.output_tok_s:7.1f} tok/s  TTFT p50 {rr.ttft_p50_s * 1e3:6.0f} ms  "
                      f"errors {rr.errors}  load {rows['load1'].iloc[0]:.2f}  "
                      f"others {info['foreign_cores']:.2f} cores", file=sys.stderr)
                all_rows.append(rows)
                runs.append({"round": r, "server": kind, "slots": n, "command": info["command"],
                             "load1": float(rows["load1"].iloc[0]),
                             "foreign_cores": info["foreign_cores"],
                             "discarded": info["discarded"]})
    rows = pd.concat(all_rows, ignore_index=True)
    summary = summarize(rows)

    bb, bb_cmd, bb_all = None, None, []
    if a.batched_bench_reps and (bin_dir / "llama-batched-bench").exists():
        lk = rows[rows["bench_server"] == "labkit"]
        npp = int(round(pd.to_numeric(lk["prompt_tokens"]).median()))
        ntg = int(round(pd.to_numeric(lk["completion_tokens"]).median()))
        def measure(monitor):
            with monitor:
                return batched_bench(bin_dir, model, a, npp, ntg, tuple(sorted(set(a.slots))))

        for _ in range(a.batched_bench_reps):
            df, bb_cmd = quiet.run(measure, "a llama-batched-bench run").result
            bb_all.append(df)
        allbb = pd.concat(bb_all)
        bb = allbb.groupby("B", as_index=False).median(numeric_only=True)
        for c in ("PP", "TG", "B", "N_KV"):
            bb[c] = bb[c].astype(int)

    ended = dt.datetime.now().astimezone()
    text = report(summary, rows, bb, a.slots, tok_s_target(a.model))
    v = versions(bin_dir)
    head = [f"Command: `{cmdline}`",
            f"Date: {started:%Y-%m-%d %H:%M}-{ended:%H:%M %Z}; 1-minute load average at the "
            f"start of each run: {min(x['load1'] for x in runs):.2f}-"
            f"{max(x['load1'] for x in runs):.2f} (waited for < {a.max_load}); other "
            f"processes' CPU during the kept runs: {max(x['foreign_cores'] for x in runs):.2f} "
            f"cores at most; runs discarded and repeated because others were busy: "
            f"{sum(x['discarded'] for x in runs)}",
            f"Workload: {wl.name}, {len(wl)} requests"
            f"{' (timing only: ignore_eos, not graded)' if wl.meta.get('ignore_eos') else ''}, "
            f"closed loop, in flight = slots, temperature 0, cache_prompt false, "
            f"max_tokens {wl.meta.get('max_tokens', wl.prompt.max_tokens)}; "
            f"-c {a.n_ctx} (split KV) -t {a.threads} -b {a.batch} -ub {a.ubatch}; "
            f"{a.rounds} rounds, fresh server per run, servers alternated",
            f"Model: {a.model or 'embedded'} ({model})",
            f"Reference: {bin_dir}/llama-server ({v['llama-server']})",
            "Versions: " + ", ".join(f"{k} {v[k]}" for k in
                                     ("python", "labkit", "llama_cpp_python", "uvicorn",
                                      "starlette")),
            f"CPU: {v['cpu']}; llama.cpp: {v['llama_cpp system_info']}"]
    if bb_cmd:
        head.append(f"batched-bench: `{bb_cmd}` (median of {a.batched_bench_reps} runs)")
    print("\n".join(head) + "\n\n" + text)
    print("\nExample server commands:", file=sys.stderr)
    seen = set()
    for x in runs:
        if (x["server"], x["slots"]) not in seen:
            seen.add((x["server"], x["slots"]))
            print(f"  {x['command']}", file=sys.stderr)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        rows.drop(columns=["usage", "timings"], errors="ignore").to_csv(out / "rows.csv",
                                                                         index=False)
        pd.DataFrame(runs).to_csv(out / "runs.csv", index=False)
        summary.to_csv(out / "summary.csv", index=False)
        if bb_all:
            pd.concat(bb_all).to_csv(out / "batched_bench.csv", index=False)
        (out / "report.md").write_text("\n".join(head) + "\n\n" + text + "\n")
        (out / "header.txt").write_text("\n".join(head) + "\n")
    return summary


def report_from(d: Path, a) -> int:
    """Re-render the report of a saved run (its header lines are kept as they were)."""
    rows = pd.read_csv(d / "rows.csv")
    runs = pd.read_csv(d / "runs.csv")
    bb = None
    if (d / "batched_bench.csv").exists():
        allbb = pd.read_csv(d / "batched_bench.csv")
        bb = allbb.groupby("B", as_index=False).median(numeric_only=True)
    header = (d / "header.txt") if (d / "header.txt").exists() else d / "report.md"
    head = header.read_text().split("\n\n")[0]
    slots = sorted(int(x) for x in runs["slots"].unique())
    model = next((line.split()[1] for line in head.splitlines() if line.startswith("Model: ")),
                 None)
    print(head + "\n\n" + report(summarize(rows), rows, bb, slots, tok_s_target(model)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
