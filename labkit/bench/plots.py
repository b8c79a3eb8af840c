"""The benchmark's pictures (matplotlib). Each function takes the rows (or the worksheet's
per-round table, or the memory samples) and returns the Axes it drew on.

- :func:`throughput_vs_slots`: total output tok/s against slots, one line per KV mode
  (median over rounds; every round as a dot).
- :func:`ttft_per_request`: each request's time to first visible token, per config.
- :func:`timeline`: one bar per request: waiting for a client worker, waiting in the server,
  prefill, generating.
- :func:`memory_over_time`: the memory sampler's trace, one line per run.
- :func:`gains`: a reading's (:mod:`.reading`) tok/s against 1 slot, with the ceiling the
  prompt share allows beside it.
"""

from __future__ import annotations

import pandas as pd

from ..lang.fonts import label as _L
from .provenance import SEP, caption, row_label
from .worksheet import CONFIG_KEYS, run_summary

PHASE_COLORS = {"client wait": "#d9d9d9", "server queue": "#f2c14e", "prefill": "#e6862a",
                "generating": "#3a76c4"}
PHASE_NAMES = {"client wait": "等待用戶端", "server queue": "在伺服器排隊",
               "prefill": "預填", "generating": "生成中"}


def _axes(ax, figsize=(7, 4)):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _config_label(r) -> str:
    """A run's legend entry: the server and its flags (:mod:`.provenance`), the client's
    requests in flight and the workload."""
    return f"{row_label(r)}, if{r['in_flight']} {r['workload']}"


def _server_only(r) -> str:
    return row_label(r).split(SEP)[0]


def _titled(ax, en: str, zh: str, rows: pd.DataFrame, fontsize=9):
    """A live plot's title: what it shows, then the line naming the servers that produced it."""
    ax.set_title(_L(en, zh) + "\n" + caption(rows), fontsize=fontsize)


def throughput_vs_slots(rows: pd.DataFrame, ax=None):
    """Output tok/s (completion tokens / wall) against slots, a line per KV mode and workload."""
    ax = _axes(ax)
    runs = run_summary(rows)
    for (kv, wl, server), g in runs.groupby(["kv_mode", "workload", "server"], sort=False):
        med = g.groupby("slots")["output_tok_s"].median().sort_index()
        line, = ax.plot(med.index, med.values, marker="o",
                        label=f"{kv} ({wl}, {_server_only(g.iloc[0])})")
        ax.scatter(g["slots"], g["output_tok_s"], color=line.get_color(), alpha=0.35, s=14)
    ax.set_xlabel(_L("slots (and requests in flight)", "槽位數（與在途請求數）"))
    ax.set_ylabel(_L("total output tok/s", "總輸出 tok/s"))
    ax.set_xticks(sorted(runs["slots"].dropna().unique()))
    ax.set_ylim(bottom=0)
    _titled(ax, "Throughput vs slots (line: median of rounds; dots: each round)",
            "吞吐與槽位數（線：各輪中位數；點：每一輪）", rows)
    ax.legend(fontsize=8)
    return ax


def ttft_per_request(rows: pd.DataFrame, ax=None, round_: int | None = 0):
    """Each request's TTFT (send to first visible token), in sending order, a line per config."""
    ax = _axes(ax)
    data = rows if round_ is None else rows[rows["round"] == round_]
    for run_id, g in data.groupby("run_id", sort=False):
        g = g.sort_values("send_s")
        ax.plot(range(1, len(g) + 1), g["ttft_s"], marker=".", label=_config_label(g.iloc[0]))
    ax.set_xlabel(_L("request (in the order sent)", "請求（依送出順序）"))
    ax.set_ylabel(_L("TTFT (s)", "首字等待 TTFT (s)"))
    ax.set_ylim(bottom=0)
    _titled(ax, "Time to first visible token, per request" +
            ("" if round_ is None else f" (round {round_ + 1})"),
            "每個請求的首字等待（第一個可見 token）" +
            ("" if round_ is None else f"（第 {round_ + 1} 輪）"), data)
    ax.legend(fontsize=8)
    return ax


def phases(g: pd.DataFrame) -> pd.DataFrame:
    """Start and length of each request's phases, from the client's clock and the server's
    prompt_ms: prefill is taken to end at the first content chunk."""
    first = g["first_chunk_s"].fillna(g["end_s"])
    prefill = (pd.to_numeric(g["prompt_ms"], errors="coerce").fillna(0) / 1e3)
    prefill_start = (first - prefill).clip(lower=g["send_s"])
    return pd.DataFrame({
        "doc_id": g["doc_id"],
        "client wait": list(zip(g["scheduled_s"], g["send_s"] - g["scheduled_s"])),
        "server queue": list(zip(g["send_s"], prefill_start - g["send_s"])),
        "prefill": list(zip(prefill_start, first - prefill_start)),
        "generating": list(zip(first, g["end_s"] - first)),
    })


def timeline(rows: pd.DataFrame, run_id: str | None = None, ax=None):
    """One horizontal bar per request of one run (default: the first run)."""
    run_id = run_id or rows["run_id"].iloc[0]
    g = rows[rows["run_id"] == run_id].sort_values("index")
    ax = _axes(ax, figsize=(8, 0.3 * len(g) + 1.2))
    ph = phases(g)
    for y, (_, r) in enumerate(ph.iterrows()):
        for name, color in PHASE_COLORS.items():
            start, width = r[name]
            if pd.notna(width) and width > 0:
                ax.broken_barh([(start, width)], (y - 0.4, 0.8), color=color,
                               label=_L(name, PHASE_NAMES[name]) if y == 0 else None)
    ax.set_yticks(range(len(ph)))
    ax.set_yticklabels(ph["doc_id"], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(_L("seconds from the start of the run", "自這一輪開始起算的秒數"))
    ax.set_title(_config_label(g.iloc[0]), fontsize=9)
    handles = [__import__("matplotlib.patches", fromlist=["Patch"]).Patch(
        color=c, label=_L(n, PHASE_NAMES[n])) for n, c in PHASE_COLORS.items()]
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    return ax


def memory_over_time(memory: pd.DataFrame, rows: pd.DataFrame | None = None, ax=None,
                     kind: str | None = None):
    """The sampled memory of each run (MiB), from the sampler's start."""
    ax = _axes(ax)
    if memory is None or memory.empty:
        ax.text(0.5, 0.5, _L("no memory samples", "沒有記憶體取樣"), ha="center",
                transform=ax.transAxes)
        if rows is not None and not rows.empty:
            _titled(ax, "Memory over time", "記憶體用量隨時間變化", rows)
        return ax
    if kind is None:
        present = set(memory["kind"])
        kind = next((k for k in ("gpu_process_used", "gpu_device_used", "gpu_device_used_ggml",
                                 "rss") if k in present))
    labels = {}
    if rows is not None and not rows.empty:
        labels = {rid: _config_label(g.iloc[0]) + f" r{g.iloc[0]['round'] + 1}"
                  for rid, g in rows.groupby("run_id", sort=False)}
    m = memory[memory["kind"] == kind]
    for run_id, g in m.groupby("run_id", sort=False):
        per_t = g.groupby("t_s")["bytes"].sum() / 2**20
        ax.plot(per_t.index, per_t.values, label=labels.get(run_id, run_id), lw=1)
    ax.set_xlabel(_L("seconds from the start of the run", "自這一輪開始起算的秒數"))
    ax.set_ylabel(f"{kind} (MiB)")
    title = (f"Memory over time ({kind}, sampled every 0.2 s)",
             f"記憶體用量隨時間變化（{kind}，每 0.2 秒取樣）")
    if rows is not None and not rows.empty:
        _titled(ax, *title, rows)
    else:
        ax.set_title(_L(*title))
    if m["run_id"].nunique() <= 12:
        ax.legend(fontsize=7)
    return ax


def all_plots(result) -> dict:
    """The four standard figures of a :class:`~labkit.bench.runner.BenchResult`, by name."""
    import matplotlib.pyplot as plt
    rows = result.rows
    figs = {}
    fig, ax = plt.subplots(figsize=(7, 4))
    throughput_vs_slots(rows, ax)
    figs["throughput_vs_slots"] = fig
    fig, ax = plt.subplots(figsize=(8, 4))
    ttft_per_request(rows, ax)
    figs["ttft_per_request"] = fig
    first_round = rows[rows["round"] == rows["round"].min()]
    run_ids = list(dict.fromkeys(first_round["run_id"]))
    per_run = max(rows.groupby("run_id").size().max(), 1)
    fig, axes = plt.subplots(len(run_ids), 1, squeeze=False, sharex=True,
                             figsize=(8, len(run_ids) * (0.25 * per_run + 1.0)))
    for rid, ax in zip(run_ids, axes[:, 0]):
        timeline(rows, rid, ax)
    fig.tight_layout()
    figs["timeline"] = fig
    fig, ax = plt.subplots(figsize=(8, 4))
    memory_over_time(result.memory, rows, ax)
    figs["memory_over_time"] = fig
    return figs


__all__ = ["throughput_vs_slots", "ttft_per_request", "timeline", "memory_over_time",
           "all_plots", "phases", "CONFIG_KEYS"]


def gains(reading: pd.DataFrame, ax=None):
    """Tokens/s against 1 slot (:func:`labkit.bench.reading.read`), a line per server, workload
    and KV mode, and dotted beside it the ceiling its prompt share allows (where the server
    reports timings): the gap between the two is what sharing a decode step cost."""
    ax = _axes(ax)
    keys = [k for k in ("server", "workload", "kv_mode") if k in reading.columns]
    for key, g in reading.dropna(subset=["tok_s_vs_1"]).groupby(keys, sort=False):
        g = g.sort_values("slots")
        if len(g) < 2:
            continue
        name = " · ".join(str(k).split(SEP)[0] for k in (key if isinstance(key, tuple) else (key,)))
        line, = ax.plot(g["slots"], g["tok_s_vs_1"], marker="o", label=name)
        if g["ceiling"].notna().any():
            ax.plot(g["slots"], g["ceiling"], ls=":", marker="^", color=line.get_color(),
                    label=_L(f"ceiling: {name}", f"上限：{name}"))
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel(_L("slots (and requests in flight)", "槽位數（與在途請求數）"))
    ax.set_ylabel(_L("total tok/s against 1 slot", "總 tok/s 是 1 個槽位的幾倍"))
    ax.set_title(_L("What more slots bought (solid), and the most the prompt share allows (dotted)",
                    "多開槽位換到多少（實線），以及提示占比允許的上限（虛線）"), fontsize=9)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return ax
