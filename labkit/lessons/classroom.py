"""Merge worksheets exported by many learners into one comparison (the classroom notebook).

Each learner exports a results folder with ``labkit bench`` or notebook 05
(``result.save(folder)``): ``worksheet.csv`` and ``environment.json`` among other files. An
instructor collects the folders and::

    from labkit.lessons import classroom
    merged = classroom.merge(["alice/", "bob/", "carol/worksheet.csv"])
    classroom.refused(merged)          # the submissions left out, and why
    classroom.recipes(merged)          # same model? same server? which machine?
    print(classroom.agreement(classroom.recipes(merged)))
    classroom.comparison(merged)       # learner x configuration, output tok/s
    classroom.plot(merged)

Every submission is checked before it is merged, against what ``labkit bench`` writes
(:mod:`labkit.lessons.submission_check`: its own files, no symbolic links; worksheet.csv and
environment.json both there, UTF-8, no larger than a bench run writes; bench's columns, every
line whole, every cell what bench writes there, no configuration twice). A submission that
fails is left out of the merge with its folder and the reason, in the language in use
(:class:`Refused`, :func:`refused`): it is never merged as numbers. A worksheet identical to
one already merged (a copy, a link) is left out as the same run.

A submission may carry an ``about.json`` with a ``label`` and a ``note`` (the bundled samples say
there that they are samples, and how they were made); the note travels with every row.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..lang.i18n import pick
from .submission_check import (MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINES, WORKSHEET, Refused,
                               SubmissionRefused, bench_columns, check, config_label)

__all__ = ["MAX_ENTRIES", "MAX_FILE_BYTES", "MAX_LINES", "Refused", "SubmissionRefused",
           "agreement", "bench_columns", "best_passing", "check", "comparison", "config_label",
           "gates", "merge", "plot", "read_submission", "recipes", "refused", "samples_dir",
           "submissions"]


def refused(merged: pd.DataFrame) -> pd.DataFrame:
    """The submissions :func:`merge` left out, one row each: ``submission`` (the folder or file
    as given) and ``reason`` (in the language in use); no rows when every one was merged."""
    rows = [{"submission": r.submission, "reason": r.reason}
            for r in merged.attrs.get("refused", [])]
    return pd.DataFrame(rows, columns=["submission", "reason"])


def _machine(env: dict) -> str:
    if "cpu_count" not in env and "gpus" not in env:
        return "unknown machine (not in environment.json)"
    gpus = env.get("gpus") or []
    gpu = ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus) or "no GPU"
    return f"{env.get('cpu_count', '?')} CPUs, {gpu}"


def _read(path, label: str | None) -> tuple[pd.DataFrame, str]:
    """One submission checked (:func:`check`): its worksheet with who/where columns, and the
    worksheet's sha256 (two submissions with one worksheet are one run)."""
    c = check(path)
    ws, env, about = c.worksheet.copy(), c.environment, c.about
    name = (label or about.get("label")
            or (c.folder.name if Path(path).is_dir() or c.csv.name == WORKSHEET else c.csv.stem))
    lc = env.get("llama_cpp") or {}
    commit = (lc.get("llama_cpp_source") or {}).get("commit")
    ws.insert(0, "learner", name)
    ws.insert(2, "machine", _machine(env))
    ws.insert(3, "llama_cpp", f"{lc.get('version', '?')} ({commit})" if commit
              else lc.get("version", "?"))
    ws.insert(4, "note", about.get("note", ""))
    return ws, c.sha256


def read_submission(path, label: str | None = None) -> pd.DataFrame:
    """One learner's worksheet, checked (see the module's docstring), with who/where columns
    prepended: ``learner``, ``config`` (:func:`config_label`), ``machine``, ``llama_cpp``,
    ``note``. ``path``: a results folder as ``labkit bench`` writes it (``worksheet.csv``,
    ``environment.json``, optionally ``about.json``) or the worksheet CSV file in one. A
    submission that fails a check raises :class:`SubmissionRefused`, naming it and why."""
    return _read(path, label)[0]


def merge(paths, labels=None) -> pd.DataFrame:
    """Every submission that passes its checks, one row per learner and configuration, with a
    ``config`` column (:func:`config_label`). A submission that fails is left out, and so is
    one whose worksheet is identical to one already merged (a copy or a link of it): they
    are listed in ``merged.attrs["refused"]`` (:class:`Refused` records), which
    :func:`refused` shows with the reasons. Learner names must be distinct."""
    paths = list(paths)
    if not paths:
        raise ValueError(pick("no submissions given", "沒有給任何繳交的結果"))
    labels = list(labels) if labels is not None else [None] * len(paths)
    if len(labels) != len(paths):
        raise ValueError(pick(f"{len(labels)} labels for {len(paths)} submissions",
                              f"{len(paths)} 份繳交卻給了 {len(labels)} 個 labels"))
    frames, left_out, merged_as = [], [], {}
    for p, lab in zip(paths, labels):
        try:
            frame, digest = _read(p, lab)
        except SubmissionRefused as exc:
            left_out.append(exc.refused)
            continue
        if digest in merged_as:
            left_out.append(Refused(str(p), "same_worksheet", {"other": merged_as[digest]}))
            continue
        merged_as[digest] = str(p)
        frames.append(frame)
    if not frames:
        listed = "\n".join(f"  {r}" for r in left_out)
        raise ValueError(pick(f"no submission can be merged:\n{listed}",
                              f"沒有任何一份繳交可以合併：\n{listed}"))
    names = [f["learner"].iloc[0] for f in frames]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(pick(f"two submissions share the name(s) {dup}; pass labels=",
                              f"有兩份結果同名 {dup}；請傳入 labels="))
    merged = pd.concat(frames, ignore_index=True)
    merged.attrs["refused"] = left_out
    return merged


# ---------------------------------------------------------------------------- recipes

def _majority(values: pd.Series):
    """The value more than half of ``values`` hold, or None when none does: two learners who
    differ, or a tie, have no majority, and then none of them is the odd one out."""
    counts = values.value_counts()
    return counts.index[0] if len(counts) and counts.iloc[0] * 2 > len(values) else None


def recipes(merged: pd.DataFrame) -> pd.DataFrame:
    """Per learner: the model (sha256 prefix), server, llama.cpp, machine, note, and whether the
    model and the server are the ones more than half the submissions used (``same_model``,
    ``same_server``): numbers from different models or servers are not one comparison. When
    no model (or server) is used by more than half (two learners who differ, a tie), no
    learner has the same one: none is singled out (:func:`agreement` says so)."""
    cols = ["learner", "machine", "llama_cpp", "note"]
    g = merged.groupby("learner", sort=False)
    out = g[cols[1:]].first()
    out["server"] = g["server"].first().astype(str) if "server" in merged else "?"
    if "model_sha256" in merged:
        sha = g["model_sha256"].first().astype(str)
        out["model_sha256"] = sha.str[:12]
        common = _majority(sha)
        out["same_model"] = (sha == common) if common is not None else False
    else:
        out["model_sha256"], out["same_model"] = "?", False
    common = _majority(out["server"])
    out["same_server"] = (out["server"] == common) if common is not None else False
    out["configs"] = g.size()
    out["all_pass"] = g["verdict"].apply(lambda v: bool((v == "pass").all()))
    return out


def _agreement_on(recipe: pd.DataFrame, column: str, same: str, en: str, zh: str) -> str:
    """One sentence on ``column`` (model_sha256 or server) across the submissions."""
    values = recipe[column].astype(str) + ("…" if column == "model_sha256" else "")
    if values.nunique() == 1:
        v = values.iloc[0]
        return pick(f"every submission used the same {en}: {v}", f"每份繳交都用同一個{zh}：{v}")
    odd = recipe.index[~recipe[same]]
    if recipe[same].any():
        common, others = values[recipe[same]].iloc[0], ", ".join(map(str, odd))
        n = int(recipe[same].sum())
        return pick(f"{others}: another {en} than the other {n} submissions ({common}); "
                    "compare with care",
                    f"{others}：{zh}和其他 {n} 份繳交（{common}）不同；比較時要小心")
    each = "; ".join(f"{who}: {v}" for who, v in values.items())
    return pick(f"no {en} is shared by more than half of the submissions, so none is the odd "
                f"one out ({each}): these numbers are not one comparison",
                f"沒有哪個{zh}是超過一半的繳交共用的，所以沒有誰是例外（{each}）："
                "這些數字不能放在一起比較")


def agreement(recipe: pd.DataFrame) -> str:
    """Whether the submissions share a model file and a server (:func:`recipes`' table), in
    the language in use: the same for all; these learners differ from the majority; or no
    majority (two learners who differ, a tie), where no learner is named the odd one out."""
    return "\n".join([
        _agreement_on(recipe, "model_sha256", "same_model", "model file", "模型檔"),
        _agreement_on(recipe, "server", "same_server", "server", "伺服器")])


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
    """The sub-folders of ``folder`` (hidden ones aside), sorted by name: each is a submission,
    and :func:`merge` refuses one without a worksheet.csv rather than leave it out unsaid."""
    return sorted(p for p in Path(folder).iterdir()
                  if not p.name.startswith(".") and (p.is_dir() or p.is_symlink()))
