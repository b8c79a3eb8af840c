"""What every notebook imports: the banner, quick mode, the recipe, the compute path.

Every notebook starts with::

    from labkit import notebook as nb
    nb.banner()

which prints four lines (versions, machine, model, mode) instead of doctor's
whole report. Quick mode (``LABKIT_QUICK=1``, set by the test suite) shrinks
workloads so a notebook runs in seconds on two CPU cores; :func:`pick` chooses
between the quick and the full size of a number in one place.

The notebooks use one namespace, ``nb``: the helpers that talk to a live server or
engine (:mod:`labkit.live`) and those that read results and plan capacity
(:mod:`labkit.planning`) are re-exported here.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

ENV_QUICK = "LABKIT_QUICK"
ENV_RESULTS = "LABKIT_RESULTS"


# ---------------------------------------------------------------------------- quick mode

def quick() -> bool:
    """True when ``LABKIT_QUICK`` is set to anything but ``""``, ``0``, ``false`` or ``no``."""
    v = os.environ.get(ENV_QUICK, "").strip().lower()
    return v not in ("", "0", "false", "no", "off")


def pick(quick_value, full_value):
    """``quick_value`` in quick mode, else ``full_value``."""
    return quick_value if quick() else full_value


# ---------------------------------------------------------------------------- files

def results_dir() -> Path:
    """Where notebooks write what they record (``$LABKIT_RESULTS``, else ``./results``).

    ``results/`` is ignored by git, so recipes and logs written while learning stay local.
    """
    p = Path(os.environ.get(ENV_RESULTS) or "results")
    p.mkdir(parents=True, exist_ok=True)
    return p


_log_handler: logging.Handler | None = None


def log_to_file(name: str = "labkit.log") -> Path:
    """Send labkit's own log (the in-process engine's startup lines, its warnings when the
    KV pool runs out) to a file under :func:`results_dir`, never into a cell. Idempotent."""
    global _log_handler
    path = (results_dir() / name).resolve()
    logger = logging.getLogger("labkit")
    if _log_handler is not None and Path(_log_handler.baseFilename) == path:
        return path
    if _log_handler is not None:
        logger.removeHandler(_log_handler)
        _log_handler.close()
    _log_handler = logging.FileHandler(path, encoding="utf-8")
    _log_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(_log_handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return path


# ---------------------------------------------------------------------------- banner

def _short_report() -> dict:
    from .doctor import collect
    return collect(generate=False)


def banner_text(report: dict | None = None) -> str:
    """The four-line banner: versions, machine, model, mode."""
    r = report or _short_report()
    b = r["llama_cpp"]
    if b.get("ok"):
        src = b.get("llama_cpp_source") or {}
        commit = f"llama.cpp {src['commit']}, " if src.get("commit") else ""
        llama = (f"llama-cpp-python {b['version']} ({commit}"
                 f"{'GPU offload build' if b['gpu_offload'] else 'CPU build'})")
    else:
        llama = f"llama-cpp-python missing: {b.get('error')}"
    if r["gpus"]:
        gpu = "; ".join(f"GPU {g['index']} {g['name']} {g['memory_total_bytes'] / 2**30:.0f} GiB"
                        for g in r["gpus"])
    else:
        gpu = f"no GPU ({r['gpu_note']})"
    m = r["model"]
    if "error" in m:
        model = f"model: {m['error']}"
    else:
        model = (f"model:   {m['name']} ({m['file_type']}, {m['size_bytes'] / 2**20:.0f} MiB), "
                 f"sha256 {m['sha256'][:16]}…")
    mode = ("quick (LABKIT_QUICK=1: workloads shrunk to run in seconds)" if quick()
            else "full (set LABKIT_QUICK=1 for the quick sizes)")
    return "\n".join([
        f"labkit {r['labkit']} · Python {r['python']} · {llama}",
        f"machine: {r['platform']}, {r['cpu_count']} CPUs, {gpu}",
        model,
        f"mode:    {mode}",
    ])


def banner() -> None:
    """Print the banner (the first cell of every notebook)."""
    print(banner_text())


# ---------------------------------------------------------------------------- CPU or GPU

def compute_path(report: dict | None = None) -> dict:
    """Which path this machine takes: ``gpu`` when llama.cpp was built with GPU offload
    *and* a GPU is visible, else ``cpu``; with the reason and the ``-ngl`` to use."""
    r = report or _short_report()
    offload = bool(r["llama_cpp"].get("gpu_offload"))
    gpus = r["gpus"]
    if offload and gpus:
        return {"path": "gpu", "n_gpu_layers": 999, "gpus": gpus,
                "why": f"llama.cpp can offload and NVML sees {len(gpus)} GPU(s)"}
    if gpus and not offload:
        why = ("a GPU is present but this llama-cpp-python is a CPU build: reinstall it with "
               "CMAKE_ARGS=\"-DGGML_CUDA=on\" to use the GPU")
    elif offload:
        why = f"this build can offload, but {r['gpu_note']}"
    else:
        why = f"CPU build of llama.cpp, and {r['gpu_note']}"
    return {"path": "cpu", "n_gpu_layers": 0, "gpus": gpus, "why": why}


def gpus():
    """The NVIDIA GPUs NVML sees (empty on a CPU-only machine)."""
    from .gpu import list_gpus
    return list_gpus()[0]


def skip_without_gpu(what: str) -> bool:
    """For GPU-only cells: True if a GPU is present; otherwise print what is skipped and why."""
    from .gpu import list_gpus
    found, why = list_gpus()
    if found:
        return True
    print(f"skipped: {what}\n  because: {why}. The CPU cells above cover the same idea.")
    return False


# ---------------------------------------------------------------------------- the recipe

def recipe(server_config=None, report: dict | None = None) -> dict:
    """Everything needed to say "same kitchen, same dish": versions, llama.cpp build,
    machine, GPU, model identity (sha256) and, given a ServerConfig, the exact flags."""
    r = report or _short_report()
    b = r["llama_cpp"]
    m = r["model"]
    out = {
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "labkit": r["labkit"],
        "python": r["python"],
        "llama_cpp_python": b.get("version"),
        "llama_cpp_commit": (b.get("llama_cpp_source") or {}).get("commit"),
        "gpu_offload_build": b.get("gpu_offload"),
        "platform": r["platform"],
        "cpu_count": r["cpu_count"],
        "gpus": [f"{g['name']} ({g['memory_total_bytes'] / 2**30:.0f} GiB, driver {g['driver']})"
                 for g in r["gpus"]],
        "model": {k: m.get(k) for k in ("name", "path", "file_type", "size_bytes", "sha256")},
    }
    if server_config is not None:
        out["server_kind"] = server_config.kind
        out["flags"] = server_config.args(m.get("path", "MODEL"), 0)
        # The port is chosen at launch; keep the flags that define the run.
        i = out["flags"].index("--port") if "--port" in out["flags"] else -1
        if i >= 0:
            del out["flags"][i:i + 2]
    return out


def save_recipe(rec: dict, name: str = "recipe.json") -> Path:
    path = results_dir() / name
    path.write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n")
    return path


def terms(*names: str):
    """Rows of the shared glossary (English, 中文, restaurant, llama.cpp) for these terms."""
    from .glossary import table
    t = table().set_index("english")
    return t.loc[list(names)] if names else t


# The notebooks' single namespace (imported last: labkit.live imports from this module).
from .live import *  # noqa: E402,F401,F403
from .planning import *  # noqa: E402,F401,F403
