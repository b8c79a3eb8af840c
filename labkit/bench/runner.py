"""Runs: a server config x a workload x an in-flight count, repeated over rounds.

    from labkit.server.launch import ServerConfig
    from labkit import bench

    rows = bench.run_config(ServerConfig(n_ctx=4096, n_slots=2, kv_unified=False),
                            bench.load_workload("short"), in_flight=2)
    result = bench.measure([ServerConfig(n_ctx=4096, n_slots=n, kv_unified=u)
                            for u in (False, True) for n in (1, 2, 4)],
                           workloads=["short"], rounds=3)
    result.worksheet(ttft_threshold_s=10)

The recipe every run follows (the seed tutorial's):

1. start the server (labkit's launcher: a subprocess, its log in a file, always stopped);
2. read back what it really allocated: n_ctx, slots, the per-slot cap n_ctx_slot, KV mode;
3. send one unscored warm-up request (the prompt's worked example);
4. start the memory sampler, send the workload, stop the sampler;
5. grade every answer; keep every row, errors included.

:func:`measure` restarts the server for every round and rotates the order of the configs
from round to round, so a slow start or a warm machine does not always favour the same one.
Interrupted (Ctrl-C), it stops the server it started and raises :class:`BenchInterrupted`,
whose ``result`` holds every run that had finished.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..settings import masked_argv, masked_fields
from .client import RequestSpec, Sampling, poisson_arrivals, send_all, stream_one
from .grading import grade
from .harness import Target, target_of
from .memory import MemorySampler, peak
from .workload import Workload, load_workload

TIMING_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")


def _get_json(base_url: str, path: str) -> dict | list | None:
    import httpx
    try:
        r = httpx.get(base_url.rstrip("/") + path, timeout=10)
        return r.json() if r.status_code == 200 else None
    except Exception:
        return None


def _server_name(target: Target, props: dict | None) -> str:
    from importlib.metadata import PackageNotFoundError, version
    kind = getattr(target.config, "kind", None) or "external"
    pkg = {"labkit": "labkit", "xllamacpp": "xllamacpp",
           "llama_cpp.server": "llama-cpp-python"}.get(kind)
    ver = None
    if pkg:
        try:
            ver = version(pkg)
        except PackageNotFoundError:
            ver = None
    if ver is None and props:
        ver = props.get("build_info")
    return f"{kind} {ver}" if ver else kind


def describe_target(target: Target) -> dict:
    """The run-level identity of a server: name/version, model hash, KV mode, pool, slots and
    the per-slot cap, preferring what the server reported (startup log, then /props) over
    what was asked for."""
    from ..models.files import sha256_file
    props = _get_json(target.base_url, "/props")
    props = props if isinstance(props, dict) else None
    f, cfg = target.facts or {}, target.config
    model_path = target.model_path or (props or {}).get("model_path")
    sha = "unknown"
    if model_path and Path(model_path).is_file():
        sha = sha256_file(model_path)
    kv = f.get("kv_unified")
    if kv is None and cfg is not None and getattr(cfg, "kind", "") != "llama_cpp.server":
        from ..settings import resolve_slots
        kv = resolve_slots(cfg.n_slots, cfg.kv_unified)[1]
    slot_cap = f.get("n_ctx_slot")
    if slot_cap is None and props:
        slot_cap = (props.get("default_generation_settings") or {}).get("n_ctx")
    slots = f.get("n_slots") or (props or {}).get("total_slots")
    if slots is None and cfg is not None and getattr(cfg, "kind", "") == "llama_cpp.server":
        slots = 1
    pool = f.get("n_ctx") or getattr(cfg, "n_ctx", None)
    from .provenance import flags
    return {"server": _server_name(target, props),
            "flags": flags(cfg) if cfg is not None and hasattr(cfg, "n_slots") else None,
            "model_sha256": sha,
            "kv_mode": {True: "unified", False: "split", None: "unknown"}[kv],
            "pool_n_ctx": pool, "slots": slots, "n_ctx_slot": slot_cap,
            "model_path": model_path,
            **device_of(getattr(cfg, "n_gpu_layers", None), f, getattr(cfg, "main_gpu", 0))}


def device_of(n_gpu_layers, facts: dict | None = None, main_gpu: int = 0) -> dict:
    """Where a server's layers went: ``device`` (ggml's name and description, or ``CPU``),
    its ``backend``, the ``n_gpu_layers`` asked for and the ``gpu_layers`` llama.cpp's
    startup log says went to the device (None when it says nothing). The device is the GPU
    device this process's llama.cpp sees, the one a server started from it uses; a server
    measured by URL, whose -ngl is not known, is ``unknown``."""
    facts = facts or {}
    on_gpu = facts.get("gpu_layers")
    out = {"n_gpu_layers": n_gpu_layers, "gpu_layers": on_gpu}
    if n_gpu_layers is None and on_gpu is None:
        return {**out, "device": "unknown", "backend": "unknown"}
    if n_gpu_layers in (0, "0") or on_gpu == 0:
        return {**out, "device": "CPU", "backend": "CPU"}
    try:
        from ..engine.devices import gpu_devices
        found = gpu_devices()
    except Exception:   # no llama.cpp here (an external server)
        found = []
    if not found:       # llama.cpp keeps every layer on the CPU
        return {**out, "device": "CPU", "backend": "CPU"}
    d = found[main_gpu] if 0 <= main_gpu < len(found) else found[0]
    name = f"{d.name} ({d.description})" + (" [software device]" if d.software else "")
    return {**out, "device": name, "backend": d.backend}


def request_specs(workload: Workload, rate: float | None = None, burst: int = 1,
                  seed: int = 0) -> list[RequestSpec]:
    """One spec per document, in order; open loop when ``rate`` is given."""
    times = poisson_arrivals(len(workload), rate, burst, seed) if rate else [0.0] * len(workload)
    return [RequestSpec(i, d.id, workload.messages(d), d.answer, t)
            for i, (d, t) in enumerate(zip(workload.documents, times))]


def finish_rows(raw: list[dict]) -> pd.DataFrame:
    """Flatten timings, derive the per-request durations, grade every answer."""
    df = pd.DataFrame(raw)
    for k in TIMING_KEYS:
        df[k] = [(t or {}).get(k) if isinstance(t, dict) else None for t in df["timings"]]
    for col in ("send_s", "first_chunk_s", "first_token_s", "end_s", "scheduled_s"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["client_wait_s"] = df["send_s"] - df["scheduled_s"]
    df["ttft_s"] = df["first_token_s"] - df["send_s"]
    df["completion_s"] = df["end_s"] - df["send_s"]
    return df


def grade_rows(df: pd.DataFrame, answers: dict[int, dict | None],
               no_key: str = "no answer key") -> pd.DataFrame:
    grades = [grade(r["answer"], answers.get(r["index"]) or {}, r["error"])
              if answers.get(r["index"]) is not None else None
              for _, r in df.iterrows()]
    df["correct"] = [g.ok if g else None for g in grades]
    df["grade_reason"] = [g.reason if g else no_key for g in grades]
    return df


def default_sampling(workload: Workload, cache_prompt: bool = False) -> Sampling:
    """The request fields a workload asks for: its prompt's max_tokens and response_format,
    or a timing-only workload's fixed answer length with ignore_eos (:mod:`.timing`)."""
    meta = workload.meta
    return Sampling(max_tokens=meta.get("max_tokens", workload.prompt.max_tokens),
                    cache_prompt=cache_prompt, response_format=workload.prompt.response_format,
                    extra={"ignore_eos": True} if meta.get("ignore_eos") else {})


def measure_target(target: Target, workload: Workload, in_flight: int | None = None, *,
                   rate: float | None = None, burst: int = 1, arrival_seed: int = 0,
                   sampling: Sampling | None = None, warmup: bool = True,
                   round_: int = 0, sample_memory: bool = True, gpu: bool | None = None,
                   progress=None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """One run against a server that is already up: (rows, memory samples, run info)."""
    sampling = sampling or default_sampling(workload)
    ident = describe_target(target)
    in_flight = in_flight or ident["slots"] or 1
    load = f"poisson {rate:g}/s" + (f" x{burst}" if burst > 1 else "") if rate else "closed"
    run_id = (f"{ident['server']}|{ident['kv_mode']}|c{ident['pool_n_ctx']}|"
              f"np{ident['slots']}|if{in_flight if not rate else '-'}|{load}|{workload.name}|"
              f"cache{int(sampling.cache_prompt)}|r{round_}")
    info = {"run_id": run_id, "round": round_, "base_url": target.base_url,
            "command": target.command, "log_path": target.log_path, "facts": target.facts,
            **ident}
    if warmup:
        import httpx
        spec = RequestSpec(-1, "warmup", workload.prompt.warmup_messages())
        with httpx.Client(timeout=600) as c:
            w = stream_one(c, target.base_url.rstrip("/") + "/v1/chat/completions",
                           sampling.body(spec.messages), spec, time.perf_counter(),
                           require_usage=sampling.require_usage)
        info["warmup_error"] = w["error"]
    specs = request_specs(workload, rate, burst, arrival_seed)
    if gpu is None:     # the GPU's memory when the layers went to one (or may have: a URL)
        gpu = ident["device"] != "CPU"
    sampler = MemorySampler(target.pid, gpu=gpu) if sample_memory else None
    on_done = (lambda row: progress.update(1)) if progress is not None else None
    if sampler:
        sampler.start()
    try:
        raw, wall = send_all(target.base_url, specs, sampling, in_flight=in_flight,
                             open_loop=bool(rate), on_done=on_done)
    finally:
        if sampler:
            sampler.stop()
    mem = sampler.frame() if sampler else pd.DataFrame(columns=["t_s", "kind", "device", "bytes"])
    mem["run_id"] = run_id
    peak_bytes, label = peak(mem, prefer_gpu=gpu)
    df = grade_rows(finish_rows(raw), {s.index: s.answer for s in specs},
                    workload.meta.get("not_graded", "no answer key"))
    if workload.meta.get("not_graded"):     # random text: the first token counts, seen or not
        df["ttft_s"] = df["first_chunk_s"] - df["send_s"]
    run_cols = {"run_id": run_id, "round": round_, **{k: v for k, v in ident.items()
                                                      if k != "model_path"},
                "in_flight": in_flight if not rate else None, "load": load,
                "workload": workload.name, "cache_prompt": sampling.cache_prompt,
                "wall_s": wall, "peak_memory_bytes": peak_bytes, "memory_label": label}
    for k, v in reversed(list(run_cols.items())):
        df.insert(0, k, [v] * len(df))
    info.update(wall_s=wall, peak_memory_bytes=peak_bytes, memory_label=label,
                n_requests=len(df), errors=int(df["error"].notna().sum()))
    return df, mem, info


def _resolve_workload(w) -> Workload:
    wl = load_workload(w) if isinstance(w, str) else w
    return wl


def run_config(server, workload="short", in_flight: int | None = None, **kw) -> pd.DataFrame:
    """One run: start ``server`` (a :class:`~labkit.server.launch.ServerConfig`; or pass a running
    server or a base URL to use it as it is), send ``workload`` with ``in_flight`` workers
    (default: as many as the server has slots), stop the server. Returns one row per request.

    Keyword options are those of :func:`measure_target` (``rate``, ``burst``, ``sampling``,
    ``warmup``, ``sample_memory``...).
    """
    from ..server.launch import ServerConfig, launch
    wl = _resolve_workload(workload)
    if isinstance(server, ServerConfig):
        with launch(server) as srv:
            return measure_target(target_of(srv), wl, in_flight, **kw)[0]
    return measure_target(target_of(server), wl, in_flight, **kw)[0]


# ---------------------------------------------------------------------------- many runs

@dataclass
class BenchResult:
    """Everything one :func:`measure` produced.

    ``rows``: one line per request (every round, every config, errors included);
    ``memory``: every memory sample, with its ``run_id``; ``runs``: one dict per run (server
    command, log, facts read back); ``env``: the environment record.
    """
    rows: pd.DataFrame
    memory: pd.DataFrame
    runs: list[dict]
    env: dict = field(default_factory=dict)
    ttft_threshold_s: float = 10.0

    def worksheet(self, ttft_threshold_s: float | None = None) -> pd.DataFrame:
        from .worksheet import worksheet
        return worksheet(self.rows, ttft_threshold_s or self.ttft_threshold_s)

    def rounds(self, ttft_threshold_s: float | None = None) -> pd.DataFrame:
        """The worksheet's numbers per round, before the median."""
        from .worksheet import run_summary
        return run_summary(self.rows, ttft_threshold_s or self.ttft_threshold_s)

    def timing_agreement(self) -> pd.DataFrame:
        from .worksheet import timing_agreement
        return timing_agreement(self.rows)

    @property
    def plots(self) -> dict:
        """The standard figures, by name (see :mod:`labkit.bench.plots`)."""
        from .plots import all_plots
        return all_plots(self)

    def save(self, folder: str | os.PathLike) -> Path:
        """Write worksheet.csv/.md, rounds.csv, requests.csv/.json, memory.csv, runs.json,
        environment.json and plots/*.png under ``folder``."""
        from .report import save_result
        return save_result(self, Path(folder))


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`measure`: ``result`` is a :class:`BenchResult` of every run that
    finished before it (the run in progress is dropped)."""

    def __init__(self, result: BenchResult):
        super().__init__(f"interrupted after {len(result.runs)} finished run(s)")
        self.result = result


def _rotate(seq: list, k: int) -> list:
    if not seq:
        return seq
    k %= len(seq)
    return seq[k:] + seq[:k]


def measure(configs: Iterable, workloads: Iterable = ("short",), rounds: int = 3, *,
            in_flight: Iterable[int] | int | None = None, rate: float | None = None,
            burst: int = 1, sampling: Sampling | None = None, cache_prompt: bool = False,
            ttft_threshold_s: float = 10.0, progress: bool = True, sample_memory: bool = True,
            log_dir: str | None = None, env: bool = True, max_docs: int | None = None
            ) -> BenchResult:
    """Measure every config on every workload, ``rounds`` times.

    ``configs``: :class:`~labkit.server.launch.ServerConfig` objects (started and stopped here, once
    per round: a fresh server every round) or base URLs of servers already running (used as
    they are). ``in_flight``: the client's concurrency, one number or several; default: the
    config's slot count (more slots without more requests in flight measures nothing).
    ``rate``/``burst`` switch to open-loop Poisson arrivals. ``cache_prompt`` stays False
    unless the experiment is about the prompt cache. ``max_docs`` keeps the first N
    documents of each workload.
    """
    from ..server.launch import ServerConfig, launch
    configs = list(configs)
    wls = [_resolve_workload(w) for w in workloads]
    if max_docs:
        wls = [w.head(max_docs) for w in wls]
    flights = [in_flight] if in_flight is None or isinstance(in_flight, int) else list(in_flight)
    if sampling is not None and cache_prompt:
        sampling.cache_prompt = True
    total = rounds * len(configs) * len(flights) * sum(len(w) for w in wls)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, desc="labkit bench", unit="req", leave=True)
    finished: list[tuple] = []     # (rows, memory, info) of each run, appended whole
    interrupted = False
    try:
        for r in range(rounds):
            for cfg in _rotate(configs, r):
                if isinstance(cfg, ServerConfig):
                    cfg = cfg.with_(log_dir=cfg.log_dir or log_dir)
                    ctx = launch(cfg)
                else:
                    ctx = _nullcontext(cfg)
                with ctx as srv:
                    target = target_of(srv)
                    for wl in wls:
                        for f in flights:
                            if bar is not None:
                                name = getattr(cfg, "label", str(cfg))
                                bar.set_description(f"round {r + 1}/{rounds} {name} {wl.name}")
                            smp = sampling or default_sampling(wl, cache_prompt)
                            df, mem, info = measure_target(
                                target, wl, f, rate=rate, burst=burst, sampling=smp,
                                round_=r, sample_memory=sample_memory, progress=bar,
                                arrival_seed=r)
                            finished.append((df, mem, info))
    except KeyboardInterrupt:   # the server it started is stopped already (launch's finally)
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
    rows, mems, runs = ([run[i] for run in finished] for i in range(3))
    env_record = environment([c for c in configs if isinstance(c, ServerConfig)]) if env else {}
    result = BenchResult(pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(),
                         pd.concat(mems, ignore_index=True) if mems else pd.DataFrame(),
                         runs, env_record, ttft_threshold_s)
    if interrupted:
        raise BenchInterrupted(result)
    return result


class _nullcontext:
    def __init__(self, value):
        self.value = value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        return False


def environment(configs: list | None = None) -> dict:
    """The record kept next to every result: labkit doctor's report (versions, llama.cpp
    build, GPUs, model and its sha256; no generation) plus the server configs asked for."""
    from dataclasses import asdict
    from ..tools.doctor import collect
    model = next((c.model for c in configs or [] if getattr(c, "model", None)), None)
    rec = collect(model=model, generate=False)
    rec["configs"] = [{**masked_fields(asdict(c)), "extra_args": masked_argv(list(c.extra_args))}
                      for c in (configs or [])]                  # no API key in a record
    rec["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return rec
