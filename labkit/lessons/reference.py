"""The learner's numbers beside the reference run's.

The notebooks committed in this repository carry the outputs of one dated reference run
(:mod:`authoring.outputs`). Where a notebook measures, its last measuring cell calls
:func:`beside` with what this run measured; the table it returns puts the learner's figure
next to each recorded reference run's, with the reference machine named and the ratio
"yours ÷ reference", so a learner on a laptop or a GPU sees at once how far from it they are.

The reference figures live in ``data/reference/<label>.json``, one file per reference run:
``cpu.json`` for the CPU run the notebooks' committed outputs come from, and one more per GPU
run (``gpu.json`` from ``benchmarks/gpu/run.sh``, or any label). Each notebook's figures are
labelled with the device they were measured on: the GPU llama.cpp offloads to for 00, which
takes the compute path, and the CPU for the others, whose servers keep every layer there. A run records
itself when ``LABKIT_RECORD_REFERENCE`` names its label (``python -m authoring.outputs refresh``
sets ``cpu``; ``--reference gpu`` on a machine with a GPU), and only from the English edition,
so each reference figure comes from exactly one notebook run.

Which figures each notebook reports is :data:`QUANTITIES`, the one list of them: a key the
notebook passes, its name in both languages, its unit.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path

from ..lang.choice import lang
from ..lang.i18n import pick
from ..machine.atomic import write_atomic
from ..machine.runenv import cpu_model, quick

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_DIR = ROOT / "data" / "reference"
RECORD_ENV = "LABKIT_RECORD_REFERENCE"

# notebook -> [(key, English name, Chinese name, unit)]
QUANTITIES: dict[str, list[tuple[str, str, str, str]]] = {
    "00_setup": [
        ("prefill_tok_s", "prefill speed, one request (labkit's server)",
         "預填速度，一個請求（labkit 的伺服器）", "tok/s"),
        ("decode_tok_s", "decode speed, one request (labkit's server)",
         "解碼速度，一個請求（labkit 的伺服器）", "tok/s"),
    ],
    "02_build_a_batcher": [
        ("decode_step_ms", "a decode-only step of your batcher, 2 slots busy (median)",
         "你的批次器只解碼的一步，2 個槽位都在忙（中位數）", "ms"),
    ],
    "04_split_vs_unified": [
        ("split_tok_s_4", "total decode speed, 4 sequences, split KV (labkit's server)",
         "總解碼速度，4 個序列，分割 KV（labkit 的伺服器）", "tok/s"),
        ("unified_tok_s_4", "total decode speed, 4 sequences, unified KV (labkit's server)",
         "總解碼速度，4 個序列，統一 KV（labkit 的伺服器）", "tok/s"),
    ],
    "05_slots_live": [
        ("tok_s_1_slot", "output tok/s, 1 slot (short set)", "輸出 tok/s，1 個槽位（短文件組）", "tok/s"),
        ("tok_s_4_slots", "output tok/s, 4 slots (short set)", "輸出 tok/s，4 個槽位（短文件組）", "tok/s"),
        ("ttft_p50_4_slots", "TTFT p50, 4 slots (short set)", "首字等待 p50，4 個槽位（短文件組）", "s"),
        ("decode_tok_s_1_slot", "output tok/s, 1 slot (decode-heavy set)",
         "輸出 tok/s，1 個槽位（解碼為主的題組）", "tok/s"),
        ("decode_tok_s_4_slots", "output tok/s, 4 slots (decode-heavy set)",
         "輸出 tok/s，4 個槽位（解碼為主的題組）", "tok/s"),
    ],
    "06_counterexamples": [
        ("short_finish_s", "slowest short request's finish, continuous batching on",
         "最慢的短請求完成時間，開著連續批次", "s"),
        ("tasks_s", "step A's extractions, 2 slots, until the last ended",
         "步驟 A 的擷取，2 個槽位，到最後一個結束", "s"),
    ],
    "08_capacity_planning": [
        ("step_ms", "fitted fixed cost of a step (labkit's fit, a)", "擬合：每一步的固定成本（labkit 的擬合，a）", "ms"),
        ("decode_ms_per_seq", "fitted cost of each decoding sequence in a step (labkit's fit, c)",
         "擬合：一步裡每個解碼序列的成本（labkit 的擬合，c）", "ms"),
        ("capacity_rps", "predicted capacity, 2 slots", "預測容量，2 個槽位", "req/s"),
    ],
}


# Where each notebook's figures are measured: on the compute path the notebook chose (the GPU
# when llama.cpp offloads to one), or on the CPU whatever the machine has (every layer on the
# CPU: 02 sets -ngl 0, and the servers of 04, 05, 06 and 08 take the default, 0).
ON_THE_COMPUTE_PATH = {"00_setup"}


class UnknownQuantity(KeyError):
    pass


def _names(notebook: str) -> dict[str, tuple[str, str, str]]:
    if notebook not in QUANTITIES:
        raise UnknownQuantity(f"{notebook!r} reports no reference figures; "
                              f"these do: {', '.join(QUANTITIES)}")
    return {k: (en, zh, unit) for k, en, zh, unit in QUANTITIES[notebook]}


def this_machine() -> str:
    """The CPU, as a reference run names its machine: "Intel Xeon ..., 2 CPUs, Linux"."""
    model = cpu_model() or platform.processor() or platform.machine()
    return f"{model}, {os.cpu_count()} CPUs, {platform.system()}"


def this_device() -> str:
    """Where llama.cpp computes here: its first GPU device (name and description), or "CPU"."""
    try:
        from ..engine.devices import gpu_devices
        gpus = gpu_devices()
    except Exception:                       # no llama.cpp library: the CPU is all we can name
        gpus = []
    if not gpus:
        return "CPU"
    g = gpus[0]
    return f"{g.name} ({g.description})" + (" [software]" if g.software else "")


def load(folder: Path | None = None) -> dict[str, dict]:
    """Every recorded reference run, by label, CPU first."""
    folder = folder or REFERENCE_DIR
    runs = {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(folder.glob("*.json"))}
    return dict(sorted(runs.items(), key=lambda kv: (kv[0] != "cpu", kv[0])))


def record(notebook: str, values: dict[str, float], label: str,
           folder: Path | None = None, *, today: dt.date | None = None) -> Path:
    """Write this run's figures as reference run ``label``'s for ``notebook``."""
    folder = folder or REFERENCE_DIR
    path = folder / f"{label}.json"
    run = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    run.update({"label": label, "machine": this_machine()})
    run.setdefault("notebooks", {})[notebook] = {
        "date": (today or dt.date.today()).isoformat(),
        "device": this_device() if notebook in ON_THE_COMPUTE_PATH else "CPU",
        "size": "quick" if quick() else "full",
        "values": {k: float(v) for k, v in values.items()}}
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(run, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return path


def described(run: dict, entry: dict) -> str:
    """The line naming a reference run under the table: its label, the device its figures were
    measured on, the machine, the date and the size."""
    size = pick(entry["size"], {"quick": "快速", "full": "完整"}[entry["size"]])
    return pick(f"reference {run['label']}: measured on {entry['device']}, {run['machine']}; "
                f"{entry['date']}, {size} size",
                f"參考 {run['label']}：在 {entry['device']} 上量測，{run['machine']}；"
                f"{entry['date']}，{size}大小")


def beside(notebook: str, values: dict[str, float], folder: Path | None = None):
    """This run's figures next to every reference run's: a DataFrame, one row per figure, a
    column per reference run with the ratio "yours ÷ reference"; and the lines to print under
    it (which run is the reference, sizes that differ, no reference yet). When
    ``LABKIT_RECORD_REFERENCE`` is set, in the English edition, this run is recorded first."""
    import pandas as pd
    names = _names(notebook)
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise UnknownQuantity(f"{notebook} reports {', '.join(names)}; not {', '.join(unknown)}")
    notes = []
    label = os.environ.get(RECORD_ENV, "").strip()
    if label and lang() == "en":
        where = record(notebook, values, label, folder)
        notes.append(pick(f"this run is reference run {label!r} (recorded in "
                          f"{where.relative_to(where.parents[2]) if folder is None else where})",
                          f"這一輪就是參考執行 {label!r}"))
    zh = lang() == "zh-TW"
    table = pd.DataFrame({
        pick("figure", "數字"): [names[k][1 if zh else 0] for k in values],
        pick("unit", "單位"): [names[k][2] for k in values],
        pick("yours", "你的"): [round(float(v), 3) for v in values.values()],
    })
    size_here = "quick" if quick() else "full"
    runs = load(folder)
    for run in runs.values():
        entry = run.get("notebooks", {}).get(notebook)
        if not entry:
            continue
        ref = [entry["values"].get(k) for k in values]
        table[pick(f"reference {run['label']}", f"參考 {run['label']}")] = [
            None if r is None else round(r, 3) for r in ref]
        table[pick(f"yours ÷ {run['label']}", f"你的 ÷ {run['label']}")] = [
            None if not r else round(float(v) / r, 2) for v, r in zip(values.values(), ref)]
        notes.append(described(run, entry))
        if entry["size"] != size_here:
            notes.append(pick(
                f"the {run['label']} reference ran at {entry['size']} size and this run at "
                f"{size_here} size: the workloads differ, so compare speeds, not totals",
                f"參考執行 {run['label']} 用的是{'快速' if entry['size'] == 'quick' else '完整'}大小，"
                f"這一輪是{'快速' if size_here == 'quick' else '完整'}大小：工作負載不同，"
                f"比速度就好，別比總量"))
    if any(notebook in r.get("notebooks", {}) for r in runs.values()):
        notes.append(pick("yours ÷ reference above 1: more than the reference, which for a speed "
                          "(tok/s, req/s) means faster here and for a time (s, ms) slower",
                          "你的 ÷ 參考大於 1：比參考多；速度（tok/s、req/s）代表這台比較快，"
                          "時間（s、ms）代表這台比較慢"))
    else:
        notes.append(pick("no reference run has recorded this notebook yet",
                          "還沒有參考執行記錄過這本筆記本"))
    return table, notes
