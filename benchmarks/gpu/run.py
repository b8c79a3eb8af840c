"""The GPU check: how do 1, 2, 4, 8 and 16 slots batch on this machine's GPU, for a small and
an 8B model? Started by run.sh (one command); see benchmarks/gpu/README.md.

Stages, each leaving its files before the next one starts (a run cut short keeps them):

1. **machine**: the GPU (nvidia-smi: name, memory, compute capability, driver), CPUs, Python;
2. **build**: llama.cpp, from the sources llama-cpp-python was built from, for CUDA and this
   GPU's architecture only, once (a later run reuses the build); the log is ``build.log``;
   a failed build stops the run with its reason;
3. **models**: the synthetic models written (labkit.models.synthetic), with their write times;
4. **doctor**: ``labkit doctor --json`` through that build (llama-cpp-python loads it with
   ``LLAMA_CPP_LIB_PATH``): GPU offload, devices, a short generation;
5. **bench**: for each model and slot count, labkit's server and llama-server (the same build),
   a fresh server per run, alternated over ``--rounds`` rounds, measured by labkit's bench on
   the timing-only workload (the short set's prompts, 35-token answers, ``--requests`` of
   them): aggregate output tok/s, TTFT p50, sampled GPU memory, and labkit / llama-server
   against benchmarks/serve_bench.py's targets (its ratios and parity table);
6. **notebooks**: the GPU branches of notebooks 00, 03 and 05 (05_roofline and 05_slots_live), each executed top to bottom in
   its own Jupyter kernel (nbclient) with ``LABKIT_REQUIRE_GPU=1``, so a GPU cell that would be
   skipped is an error; run only where llama.cpp sees a GPU device (the compute path ``gpu``),
   the executed copies kept in ``notebooks/``;
7. **report**: ``report.md``, ``results.csv``, ``requests.csv``, ``plots.png`` in ``--out``.

Without an NVIDIA GPU the CUDA steps say "no NVIDIA GPU" and are skipped; the rest runs on the CPU in a
reduced form (the installed llama-cpp-python and the xllamacpp wheel's llama-server, the
small model only, 1 and 2 slots), and the report says what was skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CARRY = HERE / "carry"
MODELS = ("synthetic:smollm2-135m", "synthetic:llama-3.1-8b:q4_0")
#: The notebooks with GPU branches (cells guarded by ``nb.skip_without_gpu``).
NOTEBOOKS = ("00_setup", "03_kv_bytes", "05_roofline", "05_slots_live")
GUARD = re.compile(r"^\s*if .*skip_without_gpu\(", re.M)
SLOTS = (1, 2, 4, 8, 16)
BUILD_TARGETS = ("llama-server", "llama", "llama-common", "mtmd")

sys.path.insert(0, str(REPO))


class Run:
    """The output folder, the log (printed and kept in run.log) and the report's sections."""

    def __init__(self, out: Path, work: Path, budget_s: float | None):
        self.out, self.work = out, work
        out.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        self.t0 = time.monotonic()
        self.budget_s = budget_s
        self.log_file = open(out / "run.log", "a", buffering=1)
        self.facts: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        self.notes: list[str] = []
        self.models: list[dict] = []
        self.lines: list[dict] = []
        self.rounds: list = []          # per-run lines (the worksheet's numbers per round)
        self.overhead = ""
        self.notebooks: list[dict] = []

    def log(self, msg: str) -> None:
        line = f"[{time.monotonic() - self.t0:6.0f} s] {msg}"
        print(line, flush=True)
        self.log_file.write(line + "\n")

    def note(self, msg: str) -> None:
        self.notes.append(msg)
        self.log(msg)

    def left_s(self) -> float:
        return float("inf") if self.budget_s is None else \
            self.budget_s - (time.monotonic() - self.t0)


# ---------------------------------------------------------------------------- 1. machine

def machine(run: Run) -> dict | None:
    """The first NVIDIA GPU as nvidia-smi reports it, or None."""
    run.facts.update(python=sys.version.split()[0], platform=platform.platform(),
                     cpus=os.cpu_count())
    smi = shutil.which("nvidia-smi")
    if not smi:
        run.note("no NVIDIA GPU: nvidia-smi is not installed")
        return None
    q = subprocess.run([smi, "--query-gpu=name,memory.total,compute_cap,driver_version",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    if q.returncode != 0 or not q.stdout.strip():
        run.note(f"no NVIDIA GPU: nvidia-smi says {(q.stderr or q.stdout).strip()[:200]}")
        return None
    name, mem, cap, driver = [x.strip() for x in q.stdout.splitlines()[0].split(",")]
    gpu = {"name": name, "memory_mib": int(float(mem)), "compute_cap": cap, "driver": driver,
           "count": len(q.stdout.strip().splitlines())}
    run.facts["gpu"] = gpu
    run.log(f"GPU: {name}, {gpu['memory_mib']} MiB, compute capability {cap}, driver {driver}")
    return gpu


# ---------------------------------------------------------------------------- 2. build

def llama_source(run: Run, tarball: str | None) -> Path:
    """The llama.cpp tree to build: --llama-src (a folder or a tar), the carry folder's
    trimmed tree, else the pip source distribution of the installed llama-cpp-python."""
    if tarball and Path(tarball).is_dir():
        return Path(tarball)
    src = Path(tarball) if tarball else CARRY / "llama.cpp.tar.xz"
    if src == CARRY / "llama.cpp.tar.xz" and src.is_file():
        m = json.loads((CARRY / "manifest.json").read_text())
        run.facts["sources"] = (f"llama-cpp-python {m['llama_cpp_python']}'s, llama.cpp commit "
                                f"{m['llama_cpp_commit']} (the carry folder)")
    elif not src.is_file():
        sys.path.insert(0, str(HERE))
        from pack import sdist, version
        src = sdist(version())
        run.facts["sources"] = f"llama-cpp-python {version()}'s source distribution"
    dest = run.work / "src"
    stamp = dest / ".from"
    ident = f"{src.resolve()} {src.stat().st_size} {src.stat().st_mtime_ns}"
    if not (stamp.is_file() and stamp.read_text() == ident):
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        with tarfile.open(src) as t:
            try:
                t.extractall(dest, filter="data")
            except TypeError:           # a Python without tarfile's extraction filters
                t.extractall(dest)
        stamp.write_text(ident)
    for candidate in (dest / "llama.cpp", *dest.glob("*/vendor/llama.cpp")):
        if (candidate / "CMakeLists.txt").is_file():
            return candidate
    raise FileNotFoundError(f"no llama.cpp CMakeLists.txt under {dest}")


def _first(patterns) -> Path | None:
    for pattern in patterns:
        found = sorted(Path("/").glob(pattern.lstrip("/")))
        if found:
            return found[0]
    return None


def cuda_libraries(run: Run) -> list[str]:
    """CMake flags for cuBLAS and the driver library when the CUDA toolkit lacks them (an
    image whose cuBLAS comes as a pip wheel, nvidia-cublas, beside PyTorch)."""
    flags: list[str] = []
    toolkit = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    if not list(toolkit.glob("lib*/libcublas.so*")) \
            and not list(toolkit.glob("targets/*/lib/libcublas.so*")):
        roots = [Path(p) for p in sys.path if p and Path(p).is_dir()]
        lib = next((p for r in roots for p in sorted(r.glob("nvidia/*/lib/libcublas.so*"))), None)
        inc = next((p for r in roots for p in sorted(r.glob("nvidia/*/include/cublas_v2.h"))), None)
        if lib is None or inc is None:
            raise RuntimeError(f"cuBLAS not found in {toolkit} nor in Python's nvidia-* "
                               "packages; install the CUDA toolkit's cuBLAS or nvidia-cublas")
        lt = next(iter(sorted(lib.parent.glob("libcublasLt.so*"))))
        flags += [f"-DCUDA_cublas_LIBRARY={lib}", f"-DCUDA_cublasLt_LIBRARY={lt}",
                  f"-DCMAKE_CUDA_FLAGS=-I{inc.parent}", f"-DCMAKE_CXX_FLAGS=-I{inc.parent}"]
        os.environ["LD_LIBRARY_PATH"] = f"{lib.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"
        run.log(f"cuBLAS from {lib.parent} (not in the toolkit at {toolkit})")
    driver = _first(["/usr/local/nvidia/lib64/libcuda.so*", "/usr/lib/x86_64-linux-gnu/libcuda.so*",
                     "/usr/lib64/libcuda.so*", f"{toolkit}/lib64/stubs/libcuda.so"])
    if driver is None:
        flags.append("-DGGML_CUDA_NO_VMM=ON")
        run.note("libcuda.so not found: built with GGML_CUDA_NO_VMM (ggml's plain CUDA pool)")
    elif not list(toolkit.glob("lib*/**/libcuda.so")):
        flags.append(f"-DCUDA_cuda_driver_LIBRARY={driver}")
    return flags


def build(run: Run, kind: str, gpu: dict | None, source: str | None, jobs: int,
          nvcc: str | None = None) -> Path | None:
    """Configure and build llama.cpp (``kind`` cuda or cpu) once; return the folder holding
    llama-server and the shared libraries, or None (``kind`` none)."""
    if kind == "none":
        return None
    src = llama_source(run, source)
    arch = (gpu["compute_cap"].replace(".", "") if gpu else "native") if kind == "cuda" else "-"
    bdir = run.work / f"build-{kind}"
    flags = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON",
             "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON",
             "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
             "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=ON"]
    if kind == "cuda":
        if not nvcc:
            raise RuntimeError("a CUDA build needs the CUDA compiler, nvcc, on PATH or in "
                               "/usr/local/cuda/bin")
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}",
                  f"-DCMAKE_CUDA_COMPILER={nvcc}", *cuda_libraries(run)]
    stamp = bdir / "labkit-build.json"
    ident = {"source": str(src), "kind": kind, "arch": arch, "flags": flags}
    binary = bdir / "bin" / "llama-server"
    run.facts["build"] = {"kind": kind, "arch": arch, "source": str(src)}
    if binary.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == ident:
        run.log(f"build: reusing {bdir} ({kind}, architecture {arch})")
        if (bdir / "build.log").is_file():
            shutil.copy(bdir / "build.log", run.out / "build.log")
        run.facts["build"]["status"] = "reused from an earlier run"
        return binary.parent
    log = open(run.out / "build.log", "w")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(src.parent)}   # not labkit's commit
    t0 = time.monotonic()
    run.log(f"build: llama.cpp for {kind} (architecture {arch}) with {jobs} jobs; log build.log")
    steps = [["cmake", "-S", str(src), "-B", str(bdir), *flags],
             ["cmake", "--build", str(bdir), "-j", str(jobs), "--target", *BUILD_TARGETS]]
    for cmd in steps:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
        if rc != 0:
            log.close()
            tail = [ln for ln in (run.out / "build.log").read_text(errors="replace")
                    .splitlines() if ln.strip()][-20:]
            run.facts["build"]["failed"] = tail
            errors = [ln.strip() for ln in tail if "error" in ln.lower()] or tail[-3:]
            raise RuntimeError(f"the {kind} build of llama.cpp failed (exit {rc}): "
                               + " | ".join(dict.fromkeys(errors[:3])))
    log.close()
    run.facts["build"]["status"] = f"built in {time.monotonic() - t0:.0f} s"
    stamp.write_text(json.dumps(ident))
    shutil.copy(run.out / "build.log", bdir / "build.log")
    run.log(f"build: {run.facts['build']['status']}")
    return binary.parent


# ---------------------------------------------------------------------------- 4. doctor

def doctor(run: Run, model: str | None) -> dict:
    """``labkit doctor --json`` on ``model`` (None: the notebooks' model, the embedded one)."""
    r = subprocess.run([sys.executable, "-m", "labkit", "doctor", "--json",
                        *(["--model", model] if model else [])],
                       capture_output=True, text=True, timeout=600)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        report = {"ok": False, "problems": [f"doctor printed no JSON: {r.stderr[-500:]}"]}
    (run.out / "doctor.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    b, g = report.get("llama_cpp", {}), report.get("generation", {})
    run.facts["doctor"] = {"ok": report.get("ok"), "gpu_offload": b.get("gpu_offload"),
                           "devices": b.get("devices"), "llama_cpp_python": b.get("version"),
                           "llama_cpp_source": b.get("llama_cpp_source"),
                           "generation_tok_s": g.get("tokens_per_s"),
                           "path": report.get("path"),
                           "gpu_devices": [f"{d.get('device')} ({d.get('name')}, "
                                           f"{d.get('backend')})" for d in report.get("gpus") or []],
                           "problems": report.get("problems")}
    run.log(f"doctor: ok={report.get('ok')} offload={b.get('gpu_offload')} "
            f"devices={b.get('devices')} generation={g.get('tokens_per_s')} tok/s")
    return report


def overhead(run: Run, model: str, gpu_layers: int, slots) -> None:
    """labkit's own host time per engine step at this machine's speed
    (benchmarks/engine_overhead.py): where a GPU makes llama_decode fast, Python may dominate."""
    if run.left_s() < 120:
        run.note("engine overhead not measured: no time left in the budget")
        return
    cmd = [sys.executable, str(REPO / "benchmarks" / "engine_overhead.py"), "--model", model,
           "-ngl", "all" if gpu_layers else "0", "--slots", *map(str, slots)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=min(300, run.left_s()))
    except subprocess.TimeoutExpired:
        run.note("engine overhead: timed out")
        return
    run.overhead = r.stdout if r.returncode == 0 else f"failed: {r.stderr[-800:]}"
    run.log("engine overhead:\n" + run.overhead)


# ---------------------------------------------------------------------------- 3. models

def write_models(run: Run, models, gpu_layers) -> list[str]:
    from labkit.models import catalog, synthetic
    ready = []
    for name in models:
        spec = synthetic.parse(name)
        t0 = time.monotonic()
        existed = synthetic.path_for(spec).is_file()
        try:
            path = synthetic.ensure(name, load=True, n_gpu_layers=gpu_layers)
        except synthetic.SyntheticError as exc:
            run.note(f"{name} skipped: {exc}")
            continue
        s = catalog.get(spec.key)
        run.models.append({"model": name, "layers": s.n_layer, "heads": s.n_head,
                           "kv_heads": s.n_head_kv, "head_dim": s.head_dim,
                           "kv_bytes_per_token": int(s.kv_bytes_per_token()),
                           "file_gb": round(path.stat().st_size / 1e9, 3),
                           "write_s": "cached" if existed else round(time.monotonic() - t0, 1)})
        run.log(f"model {name}: {path} ({run.models[-1]['file_gb']} GB, "
                f"{run.models[-1]['write_s']}{'' if existed else ' s'})")
        ready.append(name)
    return ready


# ---------------------------------------------------------------------------- 5. bench

def bench(run: Run, models, slots, servers, n_requests, rounds, n_ctx, gpu_layers, bindir,
          threads) -> None:
    """Every server at every slot count, ``rounds`` times, the servers alternated: one
    ``measure`` call per (model, slot count) starts a fresh server per run and rotates the
    servers' order from round to round, as benchmarks/serve_bench.py does."""
    import pandas as pd

    from labkit.bench import measure
    from labkit.bench.timing import plan
    from labkit.server.launch import ServerConfig
    rows_all = []
    took: dict[str, float] = {}     # seconds per run, by model
    for model in models:
        wls = plan(["short"], model, [n_requests], max_docs=min(n_requests, 12))
        for n in slots:
            runs = len(servers) * rounds
            guess = took.get(model, 30.0) * runs
            if run.left_s() < guess * 1.5:
                run.note(f"{model} {n} slots skipped: {run.left_s():.0f} s of the budget left, "
                         f"its {runs} runs take about {guess:.0f} s")
                continue
            cfgs = [ServerConfig(kind=kind, binary=str(bindir / "llama-server")
                                 if kind == "llama-server" else None, model=model, n_ctx=n_ctx,
                                 n_slots=n, kv_unified=False, n_gpu_layers=gpu_layers,
                                 n_threads=threads, startup_timeout_s=300) for kind in servers]
            t0 = time.monotonic()
            try:
                res = measure(cfgs, wls, rounds, progress=False, env=False,
                              log_dir=str(run.work / "logs"))
            except Exception as exc:   # kept as a note; the next slot count still runs
                run.note(f"{model} {n} slots failed: {type(exc).__name__}: {str(exc)[-600:]}")
                continue
            took[model] = (time.monotonic() - t0) / runs
            for line in res.worksheet().to_dict("records"):
                kind = str(line["server"]).split()[0]
                line.update(model=model, server_kind=kind, seconds=round(took[model], 1))
                run.lines.append(line)
                run.log(f"{model} {kind} {n} slots: {line['output_tok_s']:.1f} tok/s "
                        f"({line['output_tok_s_rounds']}), TTFT p50 {line['ttft_p50_s']:.3f} s, "
                        f"peak {line['sampled_peak_mib']:.0f} MiB ({line['memory']}), "
                        f"{line['verdict']}")
            run.rounds.append(res.rounds().assign(
                model=model, server_kind=lambda d: d["server"].astype(str).str.split().str[0]))
            rows_all.append(res.rows.assign(model=model))
            pd.concat(rows_all).to_csv(run.out / "requests.csv", index=False)
            report(run)


@functools.cache
def serve_bench():
    """benchmarks/serve_bench.py as a module, loaded once: its ratios, targets and parity
    table (the report is written again after every slot count)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("serve_bench", HERE.parent / "serve_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tok_s_target(sb, model: str, on_gpu: bool) -> float:
    """serve_bench's throughput targets. On a GPU the small model's step takes about a
    millisecond, what the GPU-speed stand-in imitates on a CPU, so it is held to the stand-in's
    target; the 8B model's steps are several times longer, so it is held to a real model's."""
    if on_gpu and model == MODELS[0]:
        return sb.TARGET_TOK_S_STAND_IN
    return sb.tok_s_target(model)


def parity(run: Run) -> list[dict]:
    """labkit / the llama.cpp server measured beside it, per model and slot count: the ratio
    of the medians and each round's, against serve_bench's targets (serve_bench.ratios)."""
    import pandas as pd
    if not run.rounds:
        return []
    sb = serve_bench()
    rounds = pd.concat(run.rounds, ignore_index=True)
    out = []
    for model, g in rounds.groupby("model", sort=False):
        kinds = set(g["server_kind"])
        reference = next((k for k in ("llama-server", "xllamacpp") if k in kinds), None)
        if reference is None or "labkit" not in kinds:
            continue
        summary = pd.DataFrame([
            {"server": kind, "slots": int(n), "tok_s": h["output_tok_s"].median(),
             "ttft_p50_ms": h["ttft_p50_s"].median() * 1e3,
             "tok_s_list": list(h["output_tok_s"]), "ttft_list": list(h["ttft_p50_s"] * 1e3)}
            for (kind, n), h in g.sort_values("round").groupby(["server_kind", "slots"])])
        target = tok_s_target(sb, model, run.facts.get("on_gpu", False))
        out += [{**r, "model": model, "reference": reference, "target": target}
                for r in sb.ratios(summary, sorted(summary["slots"].unique()), target, reference)]
    return out


# ---------------------------------------------------------------------------- 6. notebooks

def notebooks(run: Run, names, path: str | None, size: str) -> None:
    """Execute each notebook top to bottom in its own kernel with ``LABKIT_REQUIRE_GPU=1`` (a
    GPU cell that would be skipped raises), in quick mode unless ``size`` is ``full``; keep the
    executed copy in ``notebooks/`` and one line per notebook for the report. Only where the
    compute path is ``gpu``: elsewhere every GPU branch would be skipped."""
    if path != "gpu":
        run.note(f"notebooks' GPU branches not run: the compute path is {path or 'unknown'} "
                 "(llama.cpp sees no GPU device it can offload to)")
        return
    try:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError
    except ImportError as exc:
        run.note(f"notebooks' GPU branches not run: {exc.name} is missing (pip install -e . "
                 "installs Jupyter; a carry-folder machine has no Jupyter kernel)")
        return
    folder = run.out / "notebooks"
    folder.mkdir(exist_ok=True)
    # the measuring cells record their figures as reference run "gpu" (labkit.lessons.reference):
    # data/reference/gpu.json, copied into the report's folder below
    env = {"LABKIT_REQUIRE_GPU": "1", "LABKIT_QUICK": "0" if size == "full" else "1",
           "LABKIT_RECORD_REFERENCE": "gpu"}
    for name in names:
        if run.left_s() < 120:
            run.note(f"notebook {name} not run: {run.left_s():.0f} s of the budget left")
            continue
        source = REPO / "notebooks" / f"{name}.ipynb"
        nb = nbformat.read(source, as_version=4)
        t0 = time.monotonic()
        client = NotebookClient(nb, timeout=int(min(600, run.left_s())), kernel_name="python3",
                                resources={"metadata": {"path": str(source.parent)}})
        try:
            with _environment(env):      # the kernel inherits this process's environment
                client.execute()
            result = "passed"
        except CellExecutionError as exc:
            result = "failed: " + _last_error_line(str(exc))
        except Exception as exc:         # a timeout, a kernel that died: kept as a line
            result = f"failed: {type(exc).__name__}: {str(exc)[:300]}"
        nbformat.write(nb, folder / f"{name}.ipynb")
        line = {"notebook": name, "size": size, "result": result,
                "seconds": round(time.monotonic() - t0, 1), "gpu_cells": _gpu_cells(nb)}
        run.notebooks.append(line)
        run.log(f"notebook {name}: {result} in {line['seconds']} s, "
                f"{line['gpu_cells']} GPU cell(s) ran")
        report(run)
    recorded = REPO / "data" / "reference" / "gpu.json"
    if recorded.exists():
        shutil.copy2(recorded, run.out / "reference-gpu.json")
        run.note("the notebooks' figures were recorded as reference run 'gpu' (reference-gpu.json): "
                 "copied to data/reference/gpu.json of a checkout, every measuring notebook shows "
                 "them beside the CPU reference, labelled with the device")


@contextlib.contextmanager
def _environment(values: dict):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _gpu_cells(nb) -> int:
    """How many GPU-only cells (guarded by ``nb.skip_without_gpu``) were executed; under
    ``LABKIT_REQUIRE_GPU=1`` one that would have skipped raises instead."""
    return sum(1 for c in nb.cells if c.cell_type == "code" and GUARD.search(c.source)
               and c.get("execution_count") is not None)


def _last_error_line(text: str) -> str:
    """The last line of a cell's error, without the terminal colours IPython adds."""
    lines = [x for x in re.sub(r"\x1b\[[0-9;]*m", "", text).strip().splitlines() if x.strip()]
    return (lines[-1] if lines else text)[:300]


# ---------------------------------------------------------------------------- 7. report

COLUMNS = ["model", "server", "slots", "n_ctx_slot", "n_requests", "output_tok_s",
           "gain_vs_1_slot", "ttft_p50_s", "ttft_max_s", "sampled_peak_mib", "errors",
           "verdict", "memory", "seconds", "server_kind"]
TITLES = {"gain_vs_1_slot": "tok/s gain vs 1 slot", "seconds": "run s"}


def results_frame(run: Run):
    import pandas as pd
    df = pd.DataFrame(run.lines)
    if df.empty:
        return df
    one = df[df["slots"] == 1].set_index(["model", "server_kind"])["output_tok_s"]
    df["gain_vs_1_slot"] = [r.output_tok_s / one.get((r.model, r.server_kind), float("nan"))
                            for r in df.itertuples()]
    return df[[c for c in COLUMNS if c in df]]


def plots(df, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    panels = [("output_tok_s", "aggregate output tok/s"), ("ttft_p50_s", "TTFT p50 (s)"),
              ("sampled_peak_mib", "sampled peak memory (MiB)")]
    for ax, (col, title) in zip(axes, panels):
        for (model, kind), g in df.groupby(["model", "server_kind"], sort=False):
            g = g.sort_values("slots")
            ax.plot(g["slots"], g[col], marker="o", label=f"{model} ({kind})")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(df["slots"].unique()), [str(s) for s in sorted(df["slots"].unique())])
        ax.set_xlabel("slots")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(run: Run) -> None:
    from labkit.bench.worksheet import to_markdown
    df = results_frame(run)
    if not df.empty:
        df.to_csv(run.out / "results.csv", index=False)
        plots(df, run.out / "plots.png")
    f = run.facts
    gpu = f.get("gpu")
    lines = ["# GPU check: how slots batch on this machine", "",
             f"Started {f['started']}; {time.monotonic() - run.t0:.0f} s so far. "
             "Synthetic models: real shapes, random weights (labkit.models.synthetic), so every "
             "number is timing and memory, never answer quality.", "",
             "## Machine", "",
             f"- GPU: {gpu['name']}, {gpu['memory_mib']} MiB, compute capability "
             f"{gpu['compute_cap']}, driver {gpu['driver']}" if gpu else
             "- NVIDIA GPU (nvidia-smi): none; the devices llama.cpp sees are below",
             f"- CPUs: {f.get('cpus')}; Python {f.get('python')}; {f.get('platform')}"]
    b = f.get("build")
    if b:
        lines.append(f"- llama.cpp build: {b['kind']}, architecture {b['arch']}, "
                     f"{b.get('status', 'failed')}; sources {f.get('sources', b['source'])}")
        if b.get("failed"):
            lines += ["", "Build failed; the end of build.log:", "", "```",
                      *b["failed"], "```"]
    d = f.get("doctor")
    if d:
        src = d.get("llama_cpp_source") or {}
        commit = src.get("commit")
        lines.append(f"- labkit doctor: ok={d['ok']}, GPU offload {d['gpu_offload']}, devices "
                     f"{', '.join(d.get('devices') or []) or '-'}, llama-cpp-python "
                     f"{d.get('llama_cpp_python')}"
                     f"{f', llama.cpp {commit}' if commit and commit != 'unknown' else ''}, "
                     f"generation {d.get('generation_tok_s')} tok/s")
        lines.append(f"- compute path: {d.get('path') or '-'}; GPU devices llama.cpp sees (backend): "
                     f"{', '.join(d.get('gpu_devices') or []) or 'none'}")
    if run.models:
        lines += ["", "## Models", "", "| model | layers | heads | KV heads | head dim | "
                  "KV bytes/token (f16) | file GB | written in s |", "|---" * 8 + "|"]
        lines += [f"| {m['model']} | {m['layers']} | {m['heads']} | {m['kv_heads']} | "
                  f"{m['head_dim']} | {m['kv_bytes_per_token']:,} | {m['file_gb']} | "
                  f"{m['write_s']} |" for m in run.models]
    if not df.empty:
        lines += ["", "## Results", "",
                  "The median over rounds (a fresh server per run, the servers alternated), "
                  "split KV; the short set's prompts, answers of a "
                  "fixed length (ignore_eos), closed loop with as many requests in flight as "
                  "slots. Memory is the sampler's peak (every 200 ms), labelled with what it "
                  "measured. Gates: fits context and TTFT only (answers not graded).", "",
                  to_markdown(df.drop(columns=["memory", "server_kind"])
                              .rename(columns=TITLES)),
                  f"Memory: {df['memory'].iloc[0]}.", "", "![plots](plots.png)"]
    verdicts = parity(run)
    if verdicts:
        sb = serve_bench()
        refs = sorted({v["reference"] for v in verdicts})
        which = ("the same llama.cpp build" if refs == ["llama-server"] else
                 "xllamacpp: the wheel's llama-server, a build of its own, in the CPU reduced "
                 "form: not a parity measurement")
        lines += ["", "## labkit / llama-server", "",
                  "The comparison of benchmarks/serve_bench.py, on this machine: labkit's server "
                  f"over {' and '.join(refs)} ({which}), "
                  "aggregate tok/s and TTFT p50, the median over rounds and each round's ratio "
                  f"(the servers alternated). Targets: tok/s >= the target column, TTFT p50 <= "
                  f"{sb.TARGET_TTFT:.2f}x.", "", *sb.parity_table(verdicts)]
    if run.overhead:
        lines += ["", "## Engine overhead (labkit's host time per step)", "", "```",
                  run.overhead.rstrip(), "```"]
    if run.notebooks:
        lines += ["", "## Notebooks' GPU branches", "",
                  "Each notebook executed top to bottom in its own kernel with "
                  "LABKIT_REQUIRE_GPU=1 (a GPU cell that would be skipped is an error); the "
                  "executed copies are in notebooks/.", "",
                  "| notebook | size | result | GPU cells run | s |", "|---" * 5 + "|"]
        lines += [f"| {n['notebook']} | {n['size']} | {n['result']} | {n['gpu_cells']} | "
                  f"{n['seconds']} |" for n in run.notebooks]
    if run.notes:
        lines += ["", "## Notes (skipped, failed, reduced)", ""] + [f"- {n}" for n in run.notes]
    (run.out / "report.md").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="The GPU check (see benchmarks/gpu/README.md).")
    ap.add_argument("--out", default=os.environ.get("OUT") or
                    str(REPO / "results" / time.strftime("gpu-%Y%m%d-%H%M%S")),
                    help="where the report goes (default $OUT, else results/gpu-<time>)")
    ap.add_argument("--work", default=str(HERE / ".work"),
                    help="sources, builds, server logs (default benchmarks/gpu/.work)")
    ap.add_argument("--build", choices=["auto", "cuda", "cpu", "none"], default="auto",
                    help="auto: cuda with a GPU and nvcc, else none (use the installed "
                         "llama-cpp-python and xllamacpp); cpu builds the same tree for the CPU")
    ap.add_argument("--stage", choices=["build", "notebooks", "all"], default="all",
                    help="build: stop after the build (a second call then measures); "
                         "notebooks: the build, doctor and the notebooks' GPU branches only")
    ap.add_argument("--notebooks", nargs="*", default=None,
                    help=f"which notebooks' GPU branches to run (default {' '.join(NOTEBOOKS)}; "
                         "none: --notebooks with no name)")
    ap.add_argument("--notebook-size", choices=["quick", "full"], default="quick",
                    help="LABKIT_QUICK=1 (the default) or the notebooks' full size")
    ap.add_argument("--llama-src", default=None, help="a llama.cpp tree or tarball to build")
    ap.add_argument("--models", nargs="+", default=None)
    ap.add_argument("--slots", nargs="+", type=int, default=None)
    ap.add_argument("--servers", nargs="+", default=None,
                    choices=["llama-server", "labkit", "xllamacpp"])
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per run (default 32 with a GPU, 2 without)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="runs of every server and slot count, alternated (default 3 with a GPU, "
                         "1 without)")
    ap.add_argument("-c", "--ctx-size", dest="n_ctx", type=int, default=None,
                    help="KV pool n_ctx (default 16384 with a GPU, 4096 without)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no measurement that would end after this many seconds")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)

    run = Run(Path(args.out), Path(args.work), args.budget_s)
    run.log(f"GPU check: report in {run.out}")
    gpu = machine(run)
    nvcc = shutil.which("nvcc") or shutil.which("nvcc", path="/usr/local/cuda/bin")
    kind = args.build
    if kind == "auto":
        kind = "cuda" if gpu and nvcc else "none"
        if gpu and not nvcc:
            run.note("no CUDA compiler (nvcc): the CUDA build is skipped")
    if kind == "none" and not gpu:
        run.note("no NVIDIA GPU: the CUDA build is skipped, and the measurements below run on the "
                 "CPU in a reduced form of the GPU steps (the notebooks' GPU branches still run "
                 "wherever llama.cpp sees a GPU device)")
    try:
        bindir = build(run, kind, gpu, args.llama_src, args.jobs, nvcc)
    except Exception as exc:
        run.note(f"stopped: {exc}")
        report(run)
        return 2
    if bindir is not None:
        os.environ["LLAMA_CPP_LIB_PATH"] = str(bindir)
        os.environ["MTMD_CPP_LIB"] = str(bindir)
        os.environ["LD_LIBRARY_PATH"] = f"{bindir}:{os.environ.get('LD_LIBRARY_PATH', '')}"
    report(run)
    if args.stage == "build":
        return 0
    names = NOTEBOOKS if args.notebooks is None else args.notebooks
    if args.stage == "notebooks":
        found = doctor(run, None)
        notebooks(run, names, found.get("path"), args.notebook_size)
        report(run)
        run.log(f"done: {run.out / 'report.md'}")
        return 0 if run.notebooks and all(n["result"] == "passed" for n in run.notebooks) else 1

    on_gpu = gpu is not None and kind == "cuda"
    run.facts["on_gpu"] = on_gpu
    gpu_layers = -1 if on_gpu else 0
    models = args.models or (MODELS if on_gpu else MODELS[:1])
    if not on_gpu and not args.models:
        run.note(f"{MODELS[1]} not measured on the CPU (reduced form): written and described only")
    slots = args.slots or (SLOTS if on_gpu else (1, 2))
    servers = args.servers or (["labkit", "llama-server"] if bindir is not None
                               else ["labkit", "xllamacpp"])
    n_requests = args.requests or (32 if on_gpu else 2)
    n_ctx = args.n_ctx or (16384 if on_gpu else 4096)
    threads = None if on_gpu else max(1, (os.cpu_count() or 2) - 1)

    ready = write_models(run, models if on_gpu or args.models else MODELS, gpu_layers)
    report(run)
    found = doctor(run, models[0])
    overhead(run, models[0], gpu_layers, (1, 4, 16) if on_gpu else (1, 4))
    report(run)
    ready = [m for m in ready if m in models]
    rounds = args.rounds or (3 if on_gpu else 1)
    bench(run, ready, slots, servers, n_requests, rounds, n_ctx, gpu_layers, bindir, threads)
    report(run)
    notebooks(run, names, found.get("path"), args.notebook_size)
    report(run)
    run.log(f"done: {run.out / 'report.md'}")
    return 0 if run.lines else 1


if __name__ == "__main__":
    sys.exit(main())
