"""What every notebook imports as ``nb``: one namespace for the notebooks' helpers.

Every notebook starts with::

    from labkit import notebook as nb
    nb.use_language("en")      # 語言 language: "en" | "zh-TW"
    nb.banner()

The middle line is the notebook's language line: the only line in which the English and the
Traditional Chinese edition of a notebook differ (:mod:`authoring.editions` checks it). The
banner then prints four lines (versions, machine, model, mode) instead of doctor's whole
report. A line a notebook prints for people goes through :func:`say` (or :func:`tr` for a
text), written in both languages side by side. The figures in what :func:`say` prints and in
the tables :func:`show` shows are kept, since the banner, for the open questions that ask about
the learner's own results (:mod:`labkit.machine.figures`).

This module is a facade. It defines the banner, the recipe and the compute path itself and
re-exports, by name, the helpers that live in smaller modules: quick mode, :func:`pick` and
the results folder (:mod:`labkit.machine.runenv`), the helpers that talk to a live server or engine
(:mod:`labkit.lessons.live`) and those that read results and plan capacity (:mod:`labkit.costs.planning`).
Those modules never import this one. ``__all__`` lists every name the notebooks use; a test
keeps it complete.

Everything else a notebook takes from labkit comes through here too, by the name it uses:
``from labkit.notebook import kv, widgets, describe``. :data:`EXPORTS` says where each name
lives; it is loaded on first use, so importing this module stays light (no llama.cpp), and a
module that moves changes one line of that table and no notebook.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

from .lessons.live import (EngineRun, ask, ask_messages, count_tokens, document,
                           get_trace, per_request, prefix_cache_rows,
                           queue_burst, run_requests, startup_lines, startup_table)
from .costs.planning import (DAY_PROFILE, day_of_traffic, first_saturated_rate,
                             hourly, prediction_error, replay, saturation_signals)
from .lang import i18n
from .lang.i18n import Both, value
from .lang.i18n import pick as tr
from .machine import figures
from .machine.runenv import log_to_file, pick, quick, results_dir

__all__ = [
    # defined here
    "banner", "banner_text", "beside_reference", "compute_path", "gpu_size", "gpus", "recipe", "save_recipe",
    "say", "show", "skip_without_gpu", "terms", "use_language",
    # labkit.lang.i18n
    "Both", "tr", "value",
    # labkit.machine.runenv
    "log_to_file", "pick", "quick", "results_dir",
    # labkit.lessons.live
    "EngineRun", "ask", "ask_messages", "count_tokens", "document",
    "get_trace", "per_request", "prefix_cache_rows", "queue_burst", "run_requests",
    "startup_lines", "startup_table",
    # labkit.costs.planning
    "DAY_PROFILE", "day_of_traffic", "first_saturated_rate", "hourly",
    "prediction_error", "replay", "saturation_signals",
]

#: The rest of what the notebooks import from labkit: each name and where it lives, a module
#: (``"labkit.models.kv"``) or a name in one (``"labkit.models.files:describe"``).
EXPORTS = {
    # model files and shapes
    "kv": "labkit.models.kv",
    "describe": "labkit.models.files:describe",
    "default_model_path": "labkit.models.files:default_model_path",
    "resolve_model": "labkit.models.files:resolve_model",
    # the machine, the languages, the setup check
    "usable_cores": "labkit.machine.runenv:usable_cores",
    "fonts": "labkit.lang.fonts",
    "doctor": "labkit.tools.doctor",
    # the engine and its settings
    "settings": "labkit.settings",
    "EngineConfig": "labkit.engine:EngineConfig",
    "install_log_router": "labkit.engine.native:install_log_router",
    "vocabulary": "labkit.engine.vocabulary",
    # servers and measurements
    "ServerConfig": "labkit.server.launch:ServerConfig",
    "launch": "labkit.server.launch:launch",
    "bench": "labkit.bench",
    "reading": "labkit.bench.reading",
    "calibration": "labkit.bench.calibration",
    "RequestSpec": "labkit.bench.client:RequestSpec",
    "Sampling": "labkit.bench.client:Sampling",
    "stream_one": "labkit.bench.client:stream_one",
    "ForeignCPU": "labkit.bench.harness:ForeignCPU",
    "answer_tokens": "labkit.bench.timing:answer_tokens",
    "Tokenizer": "labkit.bench.workload:Tokenizer",
    # the simulator
    "sim": "labkit.sim",
    "experiments": "labkit.sim.experiments",
    "policy_plots": "labkit.sim.policy_plots",
    "waste": "labkit.sim.waste",
    "sim_engine": "labkit.sim.engine",
    "calibrate": "labkit.sim.calibrate",
    "fit": "labkit.sim.fit:fit",
    "from_key": "labkit.sim.policies:from_key",
    # costs
    "capacity": "labkit.costs.capacity",
    "planning": "labkit.costs.planning",
    "rentbuy": "labkit.costs.rentbuy",
    "roofline": "labkit.costs.roofline",
    # the lessons' helpers
    "classroom": "labkit.lessons.classroom",
    "handbuilt": "labkit.lessons.handbuilt",
    "chat_tokens": "labkit.lessons.handbuilt:chat_tokens",
    "live": "labkit.lessons.live",
    "llama_server": "labkit.lessons.llama_server",
    "kv_attention": "labkit.lessons.kv_attention",
    "caption": "labkit.bench.provenance:caption",
    "plots": "labkit.lessons.plots",
    "prompt_cache": "labkit.lessons.prompt_cache",
    "seed_tables": "labkit.lessons.seed_tables",
    "widgets": "labkit.lessons.widgets",
    # the exercises
    "check": "labkit.exercises:check",
}
__all__ += list(EXPORTS)


def __getattr__(name: str):
    """A name of :data:`EXPORTS`, loaded on first use."""
    where = EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'labkit.notebook' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    value = importlib.import_module(module)
    return getattr(value, attr) if attr else value


def __dir__():
    return sorted(set(globals()) | set(EXPORTS))


# ---------------------------------------------------------------------------- language

def use_language(language: str) -> None:
    """The language line: ``"en"`` or ``"zh-TW"`` for labkit's messages, verdicts, plots and
    every process the notebook starts (sets ``LABKIT_LANG``). With Chinese it also gives
    matplotlib a CJK font, or says once how to install one."""
    from .lang.choice import use_language as set_language
    if set_language(language) == "zh-TW":
        from .lang import fonts
        fonts.setup()


def say(english: str, chinese: str) -> None:
    """Print the line in the notebook's language, and keep its figures."""
    line = tr(english, chinese)
    figures.record_text(line)
    print(line)


def beside_reference(notebook: str, values: dict[str, float]) -> None:
    """This run's figures beside the reference run's (:mod:`labkit.lessons.reference`): a
    table with the reference machine named and the ratio, and the lines under it."""
    from .lessons.reference import beside
    table, notes = beside(notebook, values)
    try:
        from IPython.display import display
        display(table)
    except ImportError:                  # outside a notebook: the table as text
        print(table.to_string(index=False))
    for note in notes:
        print(note)


def show(table, headings: dict[str, str] | None = None, lang: str | None = None):
    """``table`` as the notebook shows it (:func:`labkit.lang.i18n.show`: its headings and
    words in the notebook's language), and its figures kept."""
    figures.record_table(table)
    return i18n.show(table, headings, lang)


# ---------------------------------------------------------------------------- banner

def _short_report() -> dict:
    from .tools.doctor import collect
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
        gpu = "; ".join(f"{g.get('device') or 'GPU ' + str(g['index'])} {g['name']} "
                        f"{g['memory_total_bytes'] / 2**30:.0f} GiB"
                        + (tr(" (software device)", "（軟體裝置）") if g.get("software") else "")
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
    """Print the banner (the first cell of every notebook). An unreadable ``LABKIT_LANG`` or
    ``LABKIT_QUICK`` is one line first, naming it and the values it accepts, and the kernel
    goes on with its default rather than raising. A new notebook starts here: the figures
    kept from the one before are forgotten."""
    from .machine.unreadable import fall_back_to_defaults
    fall_back_to_defaults()
    figures.forget()
    print(banner_text())


# ---------------------------------------------------------------------------- CPU or GPU

def compute_path(report: dict | None = None) -> dict:
    """Which path this machine takes: ``gpu`` when llama.cpp was built with GPU offload
    *and* sees a GPU device (CUDA, Metal, HIP, Vulkan, SYCL: ggml's own device list), else
    ``cpu``; with the reason and the ``-ngl`` to use."""
    from .tools.doctor import choose_path
    r = report or _short_report()
    path, reason = choose_path(r)
    gpus = r["gpus"]
    if path == "gpu":
        names = ", ".join(f"{g.get('device', 'GPU')} ({g.get('name', '?')})" for g in gpus)
        return {"path": "gpu", "n_gpu_layers": 999, "gpus": gpus,
                "why": tr(f"llama.cpp can offload and sees {names}",
                          f"llama.cpp 可以卸載到 GPU，也看到 {names}")}
    if reason == "cpu_build_with_gpu":
        why = tr("a GPU is present but this llama-cpp-python is a CPU build: reinstall it with "
                 "CMAKE_ARGS=\"-DGGML_CUDA=on\" to use the GPU",
                 "有 GPU，但這個 llama-cpp-python 是 CPU 建置：要用 GPU，請以 "
                 "CMAKE_ARGS=\"-DGGML_CUDA=on\" 重新安裝")
    elif reason in ("no_device", "too_large"):
        why = r["gpu_note"]
    else:
        why = tr(f"CPU build of llama.cpp, and {r['gpu_note']}",
                 f"llama.cpp 是 CPU 建置，而且{r['gpu_note']}")
    return {"path": "cpu", "n_gpu_layers": 0, "gpus": gpus, "why": why}


def gpus():
    """The GPU devices llama.cpp sees (ggml's list; NVML adds name, driver and memory in use
    for NVIDIA ones), each with ``index``, ``device``, ``name``, ``backend``,
    ``memory_used_bytes``, ``memory_total_bytes`` and ``driver``; empty without one."""
    from types import SimpleNamespace

    from .machine.gpu import list_gpus
    from .tools.doctor import gpu_devices, llama_build
    build = llama_build()
    if not build["ok"]:
        return []
    return [SimpleNamespace(**{**g, "driver": g["driver"] or g["backend"]})
            for g in gpu_devices(build, list_gpus()[0])]


def skip_without_gpu(what: str) -> bool:
    """For GPU-only cells: True on the GPU path (:func:`compute_path`); otherwise print what
    is skipped and why. With ``LABKIT_REQUIRE_GPU=1`` (the GPU lane, .ci/gpu-lane) a cell
    that would be skipped is an error instead."""
    import os

    from .machine.runenv import flag
    path = compute_path()
    if path["path"] == "gpu":
        return True
    why = path["why"]
    if flag(os.environ.get("LABKIT_REQUIRE_GPU"), "LABKIT_REQUIRE_GPU"):
        raise RuntimeError(f"LABKIT_REQUIRE_GPU is set, but this cell would be skipped "
                           f"({what}): {why}")
    say(f"skipped: {what}\n  because: {why}. The CPU cells above cover the same idea.",
        f"已略過：{what}\n  原因：{why}。上面的 CPU 格子講的是同一件事。")
    return False


def gpu_size(software, usual):
    """The size of a GPU cell: ``usual``, or ``software`` when the GPU path's device is a
    software one (Mesa's lavapipe, shown as ``llvmpipe``: a GPU to llama.cpp that computes on
    the CPU, a few tokens a second), saying so in one line: its figures are the CPU's, never a
    GPU's."""
    soft = [g for g in compute_path()["gpus"][:1] if g.get("software")]
    if not soft:
        return usual
    name = f"{soft[0].get('device')} ({soft[0].get('name')})"
    say(f"{name} is a software device: it computes on the CPU, so this cell runs a smaller size, "
        "and its figures are the CPU's, not a GPU's",
        f"{name} 是軟體裝置：它用 CPU 計算，所以這一格跑比較小的規模，量到的數字是 CPU 的，"
        "不是 GPU 的")
    return software


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
        "gpu_backends": b.get("gpu_backends"),
        "compute_path": compute_path(r)["path"],
        "gpus": [f"{g.get('device', 'GPU')} {g['name']} ({g['memory_total_bytes'] / 2**30:.0f} GiB, "
                 f"{g.get('backend')}" + (f", driver {g['driver']})" if g.get("driver") else ")")
                 + (" software device" if g.get("software") else "")
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
    """Write the recipe to the results folder, whole or not at all: on a full disk the
    OSError names the file, and the recipe saved before stays as it was."""
    from .machine.atomic import write_atomic
    return write_atomic(results_dir() / name, json.dumps(rec, indent=2, ensure_ascii=False) + "\n")


def terms(*names: str):
    """Rows of the shared glossary (English, 中文, restaurant, llama.cpp) for these terms."""
    from .lang.glossary import table
    t = table().set_index("english")
    t = t.rename_axis(tr("english", "英文"))
    return t.loc[list(names)] if names else t
