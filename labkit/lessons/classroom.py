"""Merge worksheets exported by many learners into one comparison (the classroom notebook).

Each learner exports a worksheet with ``labkit bench`` or notebook 05 (``result.save(folder)``):
a folder holding ``worksheet.csv`` and ``environment.json``. An instructor collects the
folders (or just the CSV files) and::

    from labkit.lessons import classroom
    merged = classroom.merge(["alice/", "bob/", "carol/worksheet.csv"])
    classroom.recipes(merged)          # same model? same server? which machine?
    classroom.comparison(merged)       # learner x configuration, output tok/s
    classroom.plot(merged)

A submission may carry an ``about.json`` with a ``label`` and a ``note`` (the bundled samples say
there that they are samples, and how they were made); the note travels with every row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..lang.i18n import pick

REQUIRED = ("kv_mode", "slots", "workload", "output_tok_s", "ttft_p50_s", "completion_p50_s",
            "errors", "verdict")
CONFIG = ("workload", "kv_mode", "slots")


def _machine(env: dict) -> str:
    if not env:
        return "unknown machine (no environment.json)"
    gpus = env.get("gpus") or []
    gpu = ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus) or "no GPU"
    return f"{env.get('cpu_count', '?')} CPUs, {gpu}"


def read_submission(path, label: str | None = None) -> pd.DataFrame:
    """One learner's worksheet with who/where columns prepended: ``learner``, ``machine``,
    ``llama_cpp``, ``note``. ``path``: a folder with ``worksheet.csv`` (and optionally
    ``environment.json``, ``about.json``) or a worksheet CSV file."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    csv = path / "worksheet.csv" if path.is_dir() else path
    if not csv.exists():
        raise FileNotFoundError(pick(f"{path}: no worksheet.csv (export one with labkit bench or "
                                     "result.save(folder) in notebook 05)",
                                     f"{path}：沒有 worksheet.csv（用 labkit bench 或筆記本 05 的 "
                                     "result.save(folder) 匯出一份）"))
    ws = pd.read_csv(csv)
    missing = [c for c in REQUIRED if c not in ws.columns]
    if missing:
        raise ValueError(pick(f"{csv}: not a labkit worksheet, missing column(s) {missing}",
                              f"{csv}：不是 labkit 的工作表，缺少欄位 {missing}"))
    env_path, about_path = folder / "environment.json", folder / "about.json"
    env = json.loads(env_path.read_text()) if env_path.exists() else {}
    about = json.loads(about_path.read_text()) if about_path.exists() else {}
    name = label or about.get("label") or (folder.name if path.is_dir() else csv.stem)
    lc = env.get("llama_cpp") or {}
    commit = (lc.get("llama_cpp_source") or {}).get("commit")
    ws.insert(0, "learner", name)
    ws.insert(1, "machine", _machine(env))
    ws.insert(2, "llama_cpp", f"{lc.get('version', '?')} ({commit})" if commit else lc.get("version", "?"))
    ws.insert(3, "note", about.get("note", ""))
    return ws


def merge(paths, labels=None) -> pd.DataFrame:
    """Every submission's worksheet, one row per learner and configuration, with a
    ``config`` column (``workload kv_mode npN``). Learner names must be distinct."""
    paths = list(paths)
    if not paths:
        raise ValueError(pick("no submissions given", "沒有給任何繳交的結果"))
    labels = list(labels) if labels is not None else [None] * len(paths)
    frames = [read_submission(p, lab) for p, lab in zip(paths, labels)]
    merged = pd.concat(frames, ignore_index=True)
    names = [f["learner"].iloc[0] for f in frames]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(pick(f"two submissions share the name(s) {dup}; pass labels=",
                              f"有兩份結果同名 {dup}；請傳入 labels="))
    merged.insert(1, "config", merged["workload"].astype(str) + " " + merged["kv_mode"].astype(str)
                  + " np" + merged["slots"].astype(int).astype(str))
    return merged


def recipes(merged: pd.DataFrame) -> pd.DataFrame:
    """Per learner: the model (sha256 prefix), server, llama.cpp, machine, note, and whether the
    model is the one most submissions used (``same_model``): numbers from different models or
    servers are not one comparison."""
    cols = ["learner", "machine", "llama_cpp", "note"]
    g = merged.groupby("learner", sort=False)
    out = g[cols[1:]].first()
    out["server"] = g["server"].first() if "server" in merged else "?"
    if "model_sha256" in merged:
        sha = g["model_sha256"].first().astype(str)
        out["model_sha256"] = sha.str[:12]
        common = sha.mode().iloc[0]
        out["same_model"] = sha == common
    else:
        out["model_sha256"], out["same_model"] = "?", False
    out["configs"] = g.size()
    out["all_pass"] = g["verdict"].apply(lambda v: bool((v == "pass").all()))
    return out


def comparison(merged: pd.DataFrame, metric: str = "output_tok_s") -> pd.DataFrame:
    """Learner x configuration table of ``metric``; a cell whose configuration failed a gate is
    left empty for throughput (a failed batch has no throughput) and shown as measured otherwise."""
    if metric not in merged.columns:
        raise KeyError(f"no column {metric!r} in the merged worksheets")
    return merged.pivot_table(index="learner", columns="config", values=metric, aggfunc="first",
                              sort=False)


def gates(merged: pd.DataFrame) -> pd.DataFrame:
    """Learner x configuration: the worksheet's verdict (``pass`` or which gates failed)."""
    return merged.pivot(index="learner", columns="config", values="verdict")


def best_passing(merged: pd.DataFrame, metric: str = "output_tok_s") -> pd.DataFrame:
    """Per learner and workload, the passing configuration with the highest ``metric``."""
    ok = merged[(merged["verdict"] == "pass") & merged[metric].notna()]
    if ok.empty:
        return pd.DataFrame(columns=["learner", "workload", "config", metric])
    idx = ok.groupby(["learner", "workload"], sort=False)[metric].idxmax()
    return ok.loc[idx, ["learner", "workload", "config", metric, "ttft_p50_s", "completion_p50_s"]] \
        .reset_index(drop=True)


def plot(merged: pd.DataFrame, metric: str = "output_tok_s", ax=None):
    """Grouped bars: one group per configuration, one bar per learner; hatched bars failed a gate."""
    import numpy as np
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(9, 4))
    configs = list(dict.fromkeys(merged["config"]))
    learners = list(dict.fromkeys(merged["learner"]))
    width = 0.8 / max(1, len(learners))
    x = np.arange(len(configs))
    for i, who in enumerate(learners):
        sub = merged[merged["learner"] == who].set_index("config")
        vals = [float(sub.loc[c, metric]) if c in sub.index and pd.notna(sub.loc[c, metric]) else 0.0
                for c in configs]
        bars = ax.bar(x + (i - (len(learners) - 1) / 2) * width, vals, width, label=who)
        for b, c in zip(bars, configs):
            if c in sub.index and sub.loc[c, "verdict"] != "pass":
                b.set_hatch("//")
                b.set_edgecolor("k")
    from ..lang.fonts import label as _L
    from ..lang.i18n import HEADINGS
    name = metric.replace("_", " ")
    name_zh = HEADINGS.get(metric, name)
    ax.set_xticks(x, configs, rotation=20, ha="right")
    ax.set_ylabel(_L(name, name_zh))
    ax.set_title(_L(f"{name} by configuration (hatched: failed a gate)",
                    f"各配置的{name_zh}（斜線：有一關沒過）"))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return ax


def samples_dir() -> Path:
    """The bundled sample submissions (``data/classroom/``; see its README: samples made with
    ``labkit bench`` on one machine, not other learners' results)."""
    from ..bench.workload import data_dir
    return data_dir() / "classroom"


def submissions(folder) -> list[Path]:
    """The sub-folders of ``folder`` that hold a ``worksheet.csv``, sorted by name."""
    return sorted(p for p in Path(folder).iterdir() if (p / "worksheet.csv").exists())
