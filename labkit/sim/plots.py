"""Pictures of a run. Each function is one short call that returns matplotlib Axes.

- :func:`gantt`: one row per slot (table), coloured by what it did each step:
  prefill (reading the order), decode (answering), idle (empty, or holding a
  guest who waits for their turn). Works on a :class:`SimResult` or on any
  long-form slot table with columns ``step, t_start, t_end, slot, action,
  n_tokens, request_id``, including the slot engine's.
- :func:`ttft_cdf`: cumulative distribution of time to first token, several runs overlaid.
- :func:`throughput_latency`: the curve from :func:`labkit.sim.experiments.sweep_load`.
- :func:`queue_and_kv`: queue depth and KV cells in use over time.
- :func:`fit_check`: a fitted cost model's predictions against the measured steps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lang.fonts import label as _L

COLORS = {"prefill": "#e6862a", "decode": "#3a76c4", "idle": "#e8e8e8", "held": "#c9c9c9"}


# What each bar colour means, in both languages (the legend).
ACTION_NAMES = {"prefill": ("prefill", "預填"), "decode": ("decode", "解碼"),
                "idle": ("idle", "閒置"), "held": ("idle (holding a request)", "閒置（占著請求）")}
# Metric names on axes: the request columns and the summary's.
METRIC_NAMES = {"ttft": "首字等待 TTFT", "e2e": "端到端延遲 e2e", "tpot": "每 token 時間 TPOT",
                "queue_wait": "排隊等待", "throughput_tok_s": "吞吐 (tok/s)",
                "goodput_tok_s": "有效吞吐 (tok/s)", "requests_per_s": "每秒請求數",
                "rate": "到達率 (req/s)"}


def _metric(name: str) -> str:
    """A metric's (column's) name on an axis: English as the program writes it, or Chinese."""
    from ..lang.i18n import HEADINGS
    english = name.replace("_", " ")
    if name in METRIC_NAMES:
        return _L(english, METRIC_NAMES[name])
    for stem, zh in METRIC_NAMES.items():          # ttft_p99 -> 首字等待 TTFT p99
        if name.startswith(stem + "_"):
            return _L(english, f"{zh} {name[len(stem) + 1:]}")
    return _L(english, HEADINGS.get(name, english))


def _axes(ax, figsize=(9, 3.5)):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _runs(table: pd.DataFrame, x: str) -> pd.DataFrame:
    """Merge consecutive rows of a slot with the same action and request into bars."""
    t = table.sort_values(["slot", "step"], kind="stable")
    rid = t["request_id"].astype(object).where(t["request_id"].notna(), None)
    key = t["action"].astype(str) + "|" + rid.map(str)      # map: None stays "None", never NaN
    new = (t["slot"] != t["slot"].shift()) | (key != key.shift()) | (t["step"] != t["step"].shift() + 1)
    run = new.cumsum()
    lo, hi = ("t_start", "t_end") if x == "time" else ("step", "step")
    g = t.groupby(run, sort=False)
    bars = pd.DataFrame({
        "slot": g["slot"].first(),
        "action": g["action"].first(),
        "request_id": rid.groupby(run, sort=False).first(),
        "start": g[lo].min(),
        "end": g[hi].max() + (0 if x == "time" else 1),
        "n_tokens": g["n_tokens"].sum(),
    })
    return bars.reset_index(drop=True)


def gantt(data, ax=None, *, x: str = "time", steps: tuple | None = None,
          labels: bool | None = None, title: str | None = None):
    """Slot Gantt chart: one row per slot; prefill / decode / idle in colour.

    Args:
        data: a SimResult, or a long-form slot table (the engine's or ``slot_table()``).
        x: ``"time"`` (seconds) or ``"step"`` (step index).
        steps: ``(first, last)`` step range to draw (default: all).
        labels: write request ids on the bars (default: when there are few bars).
    """
    if hasattr(data, "slot_table"):
        table = data.slot_table(steps=steps)
    else:
        table = data
        if steps is not None:
            table = table[(table["step"] >= steps[0]) & (table["step"] <= steps[1])]
    ax = _axes(ax)
    if table.empty:
        return ax
    bars = _runs(table, x)
    held = (bars["action"] == "idle") & bars["request_id"].notna()
    n_slots = int(table["slot"].max()) + 1
    for name, mask in (("idle", (bars["action"] == "idle") & ~held), ("held", held),
                       ("prefill", bars["action"] == "prefill"), ("decode", bars["action"] == "decode")):
        b = bars[mask]
        if b.empty:
            continue
        ax.barh(b["slot"], b["end"] - b["start"], left=b["start"], height=0.8,
                color=COLORS[name], edgecolor="white", linewidth=0.3,
                label=_L(*ACTION_NAMES[name]))
    work = bars[bars["action"] != "idle"]
    if labels is None:
        labels = work["request_id"].nunique() <= 60
    if labels:
        span = bars["end"].max() - bars["start"].min()
        for (slot, rid), g in work.groupby(["slot", work["request_id"].astype(str)], sort=False):
            lo, hi = g["start"].min(), g["end"].max()
            if hi - lo > 0.015 * span:
                ax.text((lo + hi) / 2, slot, rid, ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(n_slots))
    slot = _L("slot", "槽位")
    ax.set_yticklabels([f"{slot} {i}" for i in range(n_slots)])
    ax.invert_yaxis()
    ax.set_xlabel(_L("time (s)", "時間 (s)") if x == "time" else _L("step", "步驟"))
    ax.legend(loc="upper right", fontsize=7, ncol=4, frameon=False, bbox_to_anchor=(1, 1.15))
    if title:
        ax.set_title(title, loc="left")
    return ax


def _series(run, metric):
    if hasattr(run, "requests"):
        run = run.requests
    if isinstance(run, pd.DataFrame):
        return run[metric].dropna()
    return pd.Series(run).dropna()


def ttft_cdf(runs, ax=None, *, metric: str = "ttft", log: bool = False):
    """CDF of TTFT (or ``metric``: ``e2e``, ``tpot``, ``queue_wait``) for several runs.

    ``runs``: a dict ``{label: SimResult or requests DataFrame or values}``, or a
    list of SimResults (labelled by their configuration).
    """
    if not isinstance(runs, dict):
        runs = {r.config.label(): r for r in (runs if isinstance(runs, (list, tuple)) else [runs])}
    ax = _axes(ax, (6, 4))
    for label, run in runs.items():
        v = np.sort(_series(run, metric).to_numpy())
        if len(v):
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=str(label))
    ax.set_xlabel(_L(f"{metric} (s)", f"{METRIC_NAMES.get(metric, metric)} (s)"))
    ax.set_ylabel(_L("fraction of requests", "請求比例"))
    ax.set_ylim(0, 1.02)
    if log:
        ax.set_xscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def throughput_latency(sweep: pd.DataFrame, ax=None, *, x: str = "throughput_tok_s",
                       y: str = "ttft_p99", by: str = "label", annotate: bool = True):
    """Latency against throughput as offered load grows (one line per ``by`` group).

    ``sweep``: the DataFrame from :func:`labkit.sim.experiments.sweep_load`.
    """
    ax = _axes(ax, (6, 4))
    groups = sweep.groupby(by, sort=False) if by in sweep.columns else [("", sweep)]
    for label, g in groups:
        g = g.sort_values("rate")
        ax.plot(g[x], g[y], marker="o", label=str(label))
        if annotate and "rate" in g:
            for _, row in g.iterrows():
                ax.annotate(f"{row['rate']:g}/s", (row[x], row[y]), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(_metric(x))
    ylabel = _metric(y)
    ax.set_ylabel(ylabel if ylabel.endswith("(s)") else ylabel + " (s)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def queue_and_kv(result, axes=None):
    """Two stacked panels: requests waiting for a slot, and KV cells in use, over time."""
    if axes is None:
        import matplotlib.pyplot as plt
        _, axes = plt.subplots(2, 1, figsize=(9, 4.5), sharex=True)
    q = result.queue_depth()
    axes[0].step(q["t"], q["queue_depth"], where="post", color="#b04a3a")
    axes[0].set_ylabel(_L("queue depth", "佇列深度"))
    kv = result.kv_use()
    st = result.steps
    # Break the line where the server sat idle (no steps, so nothing was measured).
    gap = np.r_[False, st["t_start"].to_numpy()[1:] > st["t_end"].to_numpy()[:-1]]
    used = kv["kv_used"].astype(float).where(~pd.Series(gap, index=kv.index).shift(-1, fill_value=False))
    axes[1].plot(kv["t"], used, color="#3a76c4", lw=1)
    cap = result.kv_capacity
    if np.isfinite(cap):
        axes[1].axhline(cap, color="k", ls="--", lw=0.8, label=_L(f"capacity {int(cap)}", f"容量 {int(cap)}"))
        axes[1].legend(fontsize=8, loc="upper right")
    axes[1].set_ylabel(_L("KV cells used", "已用 KV 格數"))
    axes[1].set_xlabel(_L("time (s)", "時間 (s)"))
    for a in axes:
        a.grid(alpha=0.3)
    return axes


def fit_check(fitted, trace: pd.DataFrame, ax=None):
    """Measured against predicted step time for a :class:`labkit.sim.Fit`."""
    ax = _axes(ax, (4.5, 4.5))
    y = trace.loc[fitted.rel_err.index, "dur_s"].to_numpy() * 1e3
    p = fitted.predicted * 1e3
    ax.scatter(y, p, s=6, alpha=0.5)
    lim = [0, max(y.max(), p.max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set_xlabel(_L("measured step (ms)", "實測步驟時間 (ms)"))
    ax.set_ylabel(_L("predicted step (ms)", "預測步驟時間 (ms)"))
    ax.set_title(f"R² = {fitted.r2:.3f}", loc="left")
    return ax
