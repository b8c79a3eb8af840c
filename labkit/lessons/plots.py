"""Pictures the notebooks need beyond the simulator's own (:mod:`labkit.sim.plots`).

- :func:`table_tops`: how -c is shared among slots, split or unified (notebook 04).
- :func:`memory_bar`: a GPU's memory as weights + overhead + KV (notebook 03).
- :func:`kv_bars`: bytes per token by KV type, formula next to llama.cpp (notebook 03).
- :func:`mode_bars`: throughput next to latency for several runs (notebook 01).
- :func:`gantt`: the slots over time of a simulator run or an engine's slot trace, busy
  stretches only (notebooks 01, 04, 06).

Each returns the matplotlib Axes it drew on.
"""

from __future__ import annotations

from ..lang.fonts import label as _L

COLORS = {"weights": "#7f7f7f", "overhead": "#bcbcbc", "kv": "#3a76c4", "free": "#eeeeee",
          "slot": ["#3a76c4", "#e6862a", "#4a9a5b", "#b85450", "#8064a2", "#c8a02a"]}


def _axes(ax, figsize):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=figsize)
    return ax


def table_tops(sc, ax=None):
    """One bar of n_ctx cells. Split KV: one fixed stripe per slot. Unified KV: one shared
    pool, with each slot's cap (n_ctx_slot) drawn as a bracket. ``sc``: a SlotContext."""
    ax = _axes(ax, (10, 2.4))
    if sc.kv_unified:
        ax.barh(0, sc.n_ctx, color="#9dbbe3", edgecolor="white")
        ax.text(sc.n_ctx / 2, 0, _L(f"one shared pool: {sc.n_ctx} cells",
                                     f"一個共用池：{sc.n_ctx} 格"), ha="center", va="center")
        for i in range(sc.n_slots):
            y = 0.55 + 0.18 * i
            ax.plot([0, sc.n_ctx_slot], [y, y], color=COLORS["slot"][i % 6], lw=2)
            ax.text(sc.n_ctx_slot, y, _L(f" slot {i} may use up to {sc.n_ctx_slot}",
                                        f" 槽位 {i} 最多可用 {sc.n_ctx_slot}"), va="center",
                    fontsize=7)
        ax.set_ylim(-0.6, 0.75 + 0.18 * sc.n_slots)
    else:
        for i in range(sc.n_slots):
            ax.barh(0, sc.n_ctx_seq, left=i * sc.n_ctx_seq, color=COLORS["slot"][i % 6],
                    edgecolor="white")
            label = _L(f"slot {i}: {sc.n_ctx_seq}", f"槽位 {i}：{sc.n_ctx_seq}")
            if sc.n_ctx_slot < sc.n_ctx_seq:
                label += _L(f"\n(cap {sc.n_ctx_slot})", f"\n（上限 {sc.n_ctx_slot}）")
            if sc.n_slots <= 8:
                ax.text((i + 0.5) * sc.n_ctx_seq, 0, label, ha="center", va="center",
                        color="white", fontsize=8)
        ax.set_ylim(-0.6, 0.6)
    ax.set_yticks([])
    ax.set_xlim(0, sc.n_ctx * 1.25 if sc.kv_unified else sc.n_ctx)
    ax.set_xlabel(_L("KV cells (tokens)", "KV 格數（token）"))
    sizes = f"n_ctx={sc.n_ctx}, n_ctx_seq={sc.n_ctx_seq}, n_ctx_slot={sc.n_ctx_slot}"
    mode_zh = {"unified": "統一 KV", "split": "分割 KV"}.get(sc.mode, f"{sc.mode} KV")
    ax.set_title(_L(f"{sc.mode} KV: {sizes}, {sc.n_slots} slot(s)",
                    f"{mode_zh}：{sizes}，{sc.n_slots} 個槽位"), loc="left", fontsize=10)
    return ax


def memory_bar(c, ax=None):
    """A GPU's memory as one bar: weights, overhead, the configured KV cache, what is left."""
    GiB = 2 ** 30
    ax = _axes(ax, (10, 2.2))
    parts = [("weights", c.weights_bytes), ("overhead", c.overhead_bytes), ("kv", c.kv_bytes)]
    names = {"weights": _L("weights", "權重"), "overhead": _L("overhead", "額外開銷"),
             "kv": _L(f"KV cache for -c {c.n_ctx}", f"-c {c.n_ctx} 的 KV 快取")}
    left = 0.0
    for name, b in parts:
        ax.barh(0, b / GiB, left=left, color=COLORS[name], edgecolor="white", label=names[name])
        left += b / GiB
    free = c.gpu_bytes / GiB - left
    if free > 0:
        ax.barh(0, free, left=left, color=COLORS["free"], edgecolor="white",
                label=_L("free", "未使用"))
    ax.axvline(c.gpu_bytes / GiB, color="black", lw=1.5)
    ax.text(c.gpu_bytes / GiB, 0.45, f" GPU {c.gpu_bytes / GiB:.0f} GiB", va="center", fontsize=8)
    ax.set_yticks([])
    ax.set_xlabel("GiB")
    ax.set_xlim(0, max(c.gpu_bytes, c.needed_bytes) / GiB * 1.12)
    ax.legend(loc="lower right", fontsize=7, ncol=4, frameon=False, bbox_to_anchor=(1, 1.0))
    ax.set_title(_L(f"{c.model}: {'fits' if c.fits else 'does NOT fit'}; "
                    f"{c.conversations} conversations of {c.tokens_per_conversation} tokens fit",
                    f"{c.model}：{'放得下' if c.fits else '放不下'}；可容納 {c.conversations} 段"
                    f" {c.tokens_per_conversation} token 的對話"),
                 loc="left", fontsize=10)
    return ax


def kv_bars(table, ax=None):
    """Formula against llama.cpp per KV type, from :func:`labkit.costs.capacity.kv_match_table`."""
    import numpy as np
    ax = _axes(ax, (8, 3))
    cells = _L("cells", "格")
    labels = [f"{r['KV type']}\n{r['cells (padded)']} {cells}" for _, r in table.iterrows()]
    x = np.arange(len(table))
    ax.bar(x - 0.2, table["formula MiB"], 0.4, label=_L("formula", "公式"), color="#9dbbe3")
    ax.bar(x + 0.2, table["llama.cpp MiB"], 0.4,
           label=_L("llama.cpp allocated", "llama.cpp 實際配置"), color="#3a76c4")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel(_L("KV cache (MiB)", "KV 快取 (MiB)"))
    ax.legend(frameon=False, fontsize=8)
    return ax


def mode_bars(summary, ax=None, *, left: str = "throughput_tok_s", right: str = "e2e_mean"):
    """Two metrics per run side by side: by default throughput (bars) and mean e2e (dots)."""
    ax = _axes(ax, (7, 3))
    x = range(len(summary))
    ax.bar(x, summary[left], color="#9dbbe3", label=_L(left, _heading(left)))
    ax.set_ylabel(_L(left, _heading(left)))
    ax.set_xticks(list(x))
    ax.set_xticklabels([str(i) for i in summary.index])
    ax2 = ax.twinx()
    ax2.plot(list(x), summary[right], "o-", color="#b85450", label=_L(right, _heading(right)))
    ax2.set_ylabel(_L(right, _heading(right)))
    ax2.set_ylim(bottom=0)
    ax.set_title(_L(f"{left} (bars) and {right} (dots)",
                    f"{_heading(left)}（長條）與 {_heading(right)}（圓點）"), loc="left", fontsize=10)
    return ax


def _heading(column: str) -> str:
    from ..lang.i18n import HEADINGS
    return HEADINGS.get(column, column)


def work_table(run):
    """A run's slot table without the rows of empty tables: what a Gantt chart needs to draw
    (a blank stretch is an empty table). Much faster to draw than the full table.
    ``run``: a simulator result (anything with ``slot_table()``) or a slot table."""
    t = run.slot_table() if hasattr(run, "slot_table") else run
    return t[(t["action"] != "idle") | t["request_id"].notna()]


def gantt(run, ax=None, **kw):
    """:func:`labkit.sim.plots.gantt` of a simulator run or an engine slot trace, drawing only
    the busy stretches (see :func:`work_table`)."""
    from ..sim import plots
    return plots.gantt(work_table(run), ax=ax, **kw)
