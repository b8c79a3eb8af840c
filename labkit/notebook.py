"""What every notebook imports as ``nb``: one namespace for the notebooks' helpers.

Every notebook starts with::

    from labkit import notebook as nb
    nb.use_language("en")      # 語言 language: "en" | "zh-TW"
    nb.banner()

The middle line is the notebook's language line: the only line in which the English and the
Traditional Chinese edition of a notebook differ (:mod:`labkit.editions` checks it). The
banner then prints four lines (versions, machine, model, mode) instead of doctor's whole
report. A line a notebook prints for people goes through :func:`say` (or :func:`tr` for a
text), written in both languages side by side.

This module is a facade. It defines the banner, the recipe and the compute path itself and
re-exports, by name, the helpers that live in smaller modules: quick mode, :func:`pick` and
the results folder (:mod:`labkit.runenv`), the helpers that talk to a live server or engine
(:mod:`labkit.live`) and those that read results and plan capacity (:mod:`labkit.planning`).
Those modules never import this one. ``__all__`` lists every name the notebooks use; a test
keeps it complete.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .live import (EngineRun, ask, ask_messages, count_tokens, document, extract_then_sort,
                   get_trace, per_request, prefix_cache_rows, queue_burst, run_requests,
                   startup_lines, startup_table)
from .planning import (DAY_PROFILE, day_of_traffic, findings, first_saturated_rate, hourly,
                       prediction_error, read_worksheet, replay,
                       saturation_signals)
from .i18n import Both, show
from .i18n import pick as tr
from .runenv import log_to_file, pick, quick, results_dir

__all__ = [
    # defined here
    "banner", "banner_text", "compute_path", "gpus", "recipe", "save_recipe",
    "say", "skip_without_gpu", "terms", "use_language",
    # labkit.i18n
    "Both", "show", "tr",
    # labkit.runenv
    "log_to_file", "pick", "quick", "results_dir",
    # labkit.live
    "EngineRun", "ask", "ask_messages", "count_tokens", "document", "extract_then_sort",
    "get_trace", "per_request", "prefix_cache_rows", "queue_burst", "run_requests",
    "startup_lines", "startup_table",
    # labkit.planning
    "DAY_PROFILE", "day_of_traffic", "findings", "first_saturated_rate", "hourly",
    "prediction_error", "read_worksheet", "replay", "saturation_signals",
]


# ---------------------------------------------------------------------------- language

def use_language(language: str) -> None:
    """The language line: ``"en"`` or ``"zh-TW"`` for labkit's messages, verdicts, plots and
    every process the notebook starts (sets ``LABKIT_LANG``). With Chinese it also gives
    matplotlib a CJK font, or says once how to install one."""
    from .runenv import use_language as set_language
    if set_language(language) == "zh-TW":
        from . import fonts
        fonts.setup()


def say(english: str, chinese: str) -> None:
    """Print the line in the notebook's language."""
    print(tr(english, chinese))


# ---------------------------------------------------------------------------- banner

def _short_report() -> dict:
    from .doctor import collect
    return collect(generate=False)


def banner_text(report: dict | None = None) -> str:
    """The four-line banner: versions, machine, model, mode (in the notebook's language)."""
    r = report or _short_report()
    b = r["llama_cpp"]
    if b.get("ok"):
        src = b.get("llama_cpp_source") or {}
        commit = f"llama.cpp {src['commit']}, " if src.get("commit") else ""
        build = tr("GPU offload build", "可卸載到 GPU 的建置") if b["gpu_offload"] \
            else tr("CPU build", "CPU 建置")
        llama = tr(f"llama-cpp-python {b['version']} ({commit}{build})",
                   f"llama-cpp-python {b['version']}（{commit.replace(', ', '，')}{build}）")
    else:
        llama = tr(f"llama-cpp-python missing: {b.get('error')}",
                   f"缺少 llama-cpp-python：{b.get('error')}")
    if r["gpus"]:
        gpu = "; ".join(f"GPU {g['index']} {g['name']} {g['memory_total_bytes'] / 2**30:.0f} GiB"
                        for g in r["gpus"])
    else:
        gpu = tr(f"no GPU ({r['gpu_note']})", r["gpu_note"])
    m = r["model"]
    if "error" in m:
        model = tr(f"model: {m['error']}", f"模型：{m['error']}")
    else:
        size = f"{m['file_type']}, {m['size_bytes'] / 2**20:.0f} MiB"
        model = tr(f"model:   {m['name']} ({size}), sha256 {m['sha256'][:16]}…",
                   f"模型：  {m['name']}（{size.replace(', ', '，')}），sha256 {m['sha256'][:16]}…")
    mode = (tr("quick (LABKIT_QUICK=1: workloads shrunk to run in seconds)",
               "快速（LABKIT_QUICK=1：工作負載縮小，幾秒內跑完）") if quick()
            else tr("full (set LABKIT_QUICK=1 for the quick sizes)",
                    "完整（設 LABKIT_QUICK=1 改用快速的大小）"))
    return "\n".join([
        f"labkit {r['labkit']} · Python {r['python']} · {llama}",
        tr(f"machine: {r['platform']}, {r['cpu_count']} CPUs, {gpu}",
           f"機器：  {r['platform']}，{r['cpu_count']} 個 CPU，{gpu}"),
        model,
        tr("mode:    ", "模式：  ") + mode,
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
                "why": tr(f"llama.cpp can offload and NVML sees {len(gpus)} GPU(s)",
                          f"llama.cpp 可以卸載到 GPU，NVML 也看到 {len(gpus)} 張 GPU")}
    if gpus and not offload:
        why = tr("a GPU is present but this llama-cpp-python is a CPU build: reinstall it with "
                 "CMAKE_ARGS=\"-DGGML_CUDA=on\" to use the GPU",
                 "有 GPU，但這個 llama-cpp-python 是 CPU 建置：要用 GPU，請以 "
                 "CMAKE_ARGS=\"-DGGML_CUDA=on\" 重新安裝")
    elif offload:
        why = tr(f"this build can offload, but {r['gpu_note']}",
                 f"這個建置可以卸載到 GPU，但{r['gpu_note']}")
    else:
        why = tr(f"CPU build of llama.cpp, and {r['gpu_note']}",
                 f"llama.cpp 是 CPU 建置，而且{r['gpu_note']}")
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
    say(f"skipped: {what}\n  because: {why}. The CPU cells above cover the same idea.",
        f"已略過：{what}\n  原因：{why}。上面的 CPU 格子講的是同一件事。")
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
    t = t.rename_axis(tr("english", "英文"))
    return t.loc[list(names)] if names else t
