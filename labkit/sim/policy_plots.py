"""Pictures of scheduling policies: how long the long requests waited, policy by policy.

:func:`long_waits` draws, for each run, the wait for a slot of every long request against
the time it arrived, with the one starvation limit all the runs are held to. A policy that
starves shows a line climbing through the limit for as long as the overload lasts.
"""

from __future__ import annotations

from ..lang.fonts import label as _L
from .experiments import LONG_TOKENS, STARVATION_BOUND_S, waits

COLORS = ("#3a76c4", "#b04a3a", "#d08c2c", "#4a9a5a", "#7a5ab0", "#666666")


def long_waits(runs: dict, *, bound: float = STARVATION_BOUND_S, long_tokens: int = LONG_TOKENS,
               ax=None):
    """Wait for a slot of each ``long_tokens`` request of every ``{label: SimResult}``,
    against its arrival time, with the limit ``bound`` as a dashed line. A hollow marker is a
    request that had not even been admitted when the arrivals stopped (its wait is at least
    what is drawn)."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    for (label, run), color in zip(runs.items(), COLORS * 4):
        w = waits(run, bound=bound)
        w = w[w["output_tokens"] == long_tokens]
        admitted = ~w["still_waiting"]
        ax.plot(w["arrival"], w["wait"], "-", color=color, lw=1, alpha=0.7)
        ax.plot(w.loc[admitted, "arrival"], w.loc[admitted, "wait"], "o", color=color, ms=3,
                label=_L(f"{label} ({int(w['starved'].sum())} of {len(w)} starved)",
                         f"{label}（{len(w)} 個中 {int(w['starved'].sum())} 個餓死）"))
        ax.plot(w.loc[~admitted, "arrival"], w.loc[~admitted, "wait"], "o", mfc="none",
                color=color, ms=4)
    ax.axhline(bound, color="k", ls="--", lw=0.8)
    ax.text(ax.get_xlim()[1], bound, _L(f"starvation limit {bound:g} s ", f"餓死門檻 {bound:g} s "),
            ha="right", va="bottom", fontsize=8)
    ax.set_xlabel(_L("arrival time of the long request (s)", "長請求的到達時間 (s)"))
    ax.set_ylabel(_L("wait for a slot (s)", "等待槽位的時間 (s)"))
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return ax
