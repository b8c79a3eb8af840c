"""Reserved but unused: how much of a KV pool holds real tokens, scheme by scheme.

The restaurant version: the floor has room for so many plates. A host who gives every
table a fixed stretch of the counter, long enough for the biggest meal anyone might order,
leaves most of it bare while guests eat ordinary meals; a host who hands out the counter a
tray at a time, as the dishes come, keeps almost all of it covered.

The engineer version, at equal memory (the same number of KV cells) and on the same
workload, one step at a time:

- **tokens**: cells that hold a token of a sequence in a slot (its prompt read so far plus
  what it generated; the simulator's ``held`` column);
- **reserved**: cells set aside for the sequences in slots. Split KV (llama.cpp
  ``--no-kv-unified``) sets aside a whole stripe of ``n_ctx / n_slots`` cells for every busy
  slot, however short its request; unified KV (llama.cpp ``--kv-unified``) takes a cell per
  token from the shared pool; paged KV (vLLM's PagedAttention) takes a block of
  ``block_size`` cells at a time, so only the unused tail of each sequence's last block is
  set aside ahead;
- **waste** = 1 - (time-weighted tokens) / (time-weighted reserved): the share of the
  set-aside memory that holds nothing. It is what the vLLM paper measured in earlier serving
  systems and what PagedAttention brings down to a few per cent.

:func:`reservation` reads it from one run's step table; :func:`equal_memory` runs one
workload through several schemes that share one pool size and tabulates it all.
Prefix caching is off in these runs, so no cell holds a finished request's prefix.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .arrivals import poisson
from .cost import preset
from .engine import simulate
from .kv import PagedKV, SplitKV, UnifiedKV
from .requests import Choice, Uniform


def reservation(run) -> pd.DataFrame:
    """One row per step of ``run`` (a :class:`labkit.sim.SimResult`): its start and length,
    the cells holding tokens, the cells reserved for the sequences in slots, and the pool."""
    st = run.steps
    if run.kv_kind == "split":
        if not np.isfinite(run.kv_capacity):
            raise ValueError("split KV without a slot cap reserves nothing: give SplitKV(slot_cap)")
        reserved = st["n_busy"] * int(run.kv_capacity // run.n_slots)
    else:                   # unified: cells written; paged: whole blocks
        reserved = st["kv_used"]
    return pd.DataFrame({"t_start": st["t_start"], "dur_s": st["dur_s"],
                         "tokens": st["held"], "reserved": reserved,
                         "pool": run.kv_capacity, "n_busy": st["n_busy"]})


def summary(run) -> dict:
    """Time-weighted averages over the run: cells holding tokens, reserved but unused, free,
    the waste share, and the sequences in slots."""
    r = reservation(run)
    w = r["dur_s"].to_numpy()
    total = w.sum()

    def avg(col):
        return float((r[col].to_numpy() * w).sum() / total)

    tokens, reserved = avg("tokens"), avg("reserved")
    return {"tokens": tokens, "reserved_unused": reserved - tokens,
            "free": float(run.kv_capacity) - reserved, "waste": 1 - tokens / reserved,
            "mean_busy": avg("n_busy")}


def default_workload(n: int = 300, seed: int = 1):
    """Prompts of 32-768 tokens, answers of 16, 64, 256 or 1024 tokens (equally likely), 50
    arrivals a second: enough to keep every scheme's pool full. The longest request needs
    768 + 1024 = 1792 cells, inside a 2048-cell stripe."""
    return poisson(n, rate=50.0, prompt=Uniform(32, 768), output=Choice([16, 64, 256, 1024]),
                   seed=seed)


def schemes(cells: int = 8192, longest: int = 2048, slots: int = 16, block_size: int = 16):
    """The schemes :func:`equal_memory` compares, every one with ``cells`` KV cells:
    ``{label: simulate keyword arguments}``.

    - split, as many slots as stripes of ``longest`` cells fit (every request fits);
    - split, ``slots`` slots (smaller stripes: long requests are refused or cut short);
    - unified, ``slots`` slots sharing the pool, as llama.cpp's ``--kv-unified`` runs it: when
      the pool runs dry every request in flight fails (llama-server), none is preempted;
    - paged, ``slots`` slots, blocks of ``block_size`` cells: a sequence that finds no free
      block is preempted and recomputed later, as vLLM does.
    """
    wide = max(1, cells // longest)
    narrow = cells // slots
    return {
        f"split, {wide} slots x {longest}": dict(slots=wide, kv=SplitKV(longest)),
        f"split, {slots} slots x {narrow}": dict(slots=slots, kv=SplitKV(narrow)),
        f"unified, {slots} slots": dict(slots=slots, kv=UnifiedKV(cells, slot_cap=longest,
                                                                  on_full="fail_all")),
        f"paged, {slots} slots, blocks of {block_size}": dict(
            slots=slots, kv=PagedKV(cells // block_size, block_size, max_cells=longest)),
    }


def equal_memory(workload=None, *, cells: int = 8192, longest: int = 2048, slots: int = 16,
                 block_size: int = 16, cost=None):
    """Run ``workload`` (default :func:`default_workload`) through every scheme of
    :func:`schemes` and return ``(table, runs)``: one row per scheme (the averages of
    :func:`summary`, throughput and how the requests ended), and the runs themselves."""
    workload = default_workload() if workload is None else workload
    cost = cost or preset("rtx4090", "8b-q4")
    rows, runs = [], {}
    for label, kw in schemes(cells, longest, slots, block_size).items():
        run = runs[label] = simulate(workload, cost=cost, prefix_cache=False, **kw)
        status = run.requests["status"].value_counts()
        s = run.summary()
        rows.append({"scheme": label, **summary(run),
                     "throughput_tok_s": s["throughput_tok_s"],
                     "ok": int(status.get("ok", 0)),
                     "cut short or refused": int(status.get("length", 0) + status.get("refused", 0)),
                     "failed": int(status.get("failed", 0)),
                     "preemptions": int(run.requests["preemptions"].sum())})
    return pd.DataFrame(rows).set_index("scheme"), runs


def plot(table, ax=None):
    """One bar per scheme, the pool split into cells holding tokens, reserved but unused,
    and free (time-weighted averages). Returns the Axes."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 2.8))
    y = np.arange(len(table))[::-1]
    left = np.zeros(len(table))
    from ..lang.fonts import label as _L
    from ..lang.i18n import value
    for col, color, label in (("tokens", "#3a76c4", _L("holding tokens", "存放 token")),
                              ("reserved_unused", "#e6862a", _L("reserved, unused", "已保留、未使用")),
                              ("free", "#dddddd", _L("free", "空閒"))):
        vals = table[col].to_numpy()
        ax.barh(y, vals, left=left, color=color, label=label, edgecolor="white")
        left = left + vals
    for yi, (_, row) in zip(y, table.iterrows()):
        ax.text(row["tokens"] + row["reserved_unused"], yi, _L(f"  waste {row['waste']:.0%}", f"  浪費 {row['waste']:.0%}"),
                va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels([_L(str(s), value("scheme", str(s), "zh-TW")) for s in table.index],
                       fontsize=8)
    ax.set_xlabel(_L("KV cells (time-weighted average over the run)",
                     "KV 格數（整段執行的時間加權平均）"))
    ax.legend(frameon=False, fontsize=8, ncol=3, loc="lower right", bbox_to_anchor=(1, 1))
    return ax
