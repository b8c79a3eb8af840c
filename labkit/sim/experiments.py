"""Run several configurations and tabulate them: comparisons, load sweeps and the
notebooks' ready-made experiments.

- :func:`compare`: one workload, several configurations, one row each.
- :func:`sweep_load`: several arrival rates (and optionally several
  configurations), the data behind a throughput-latency curve.
- :func:`restaurant_runs`, :func:`restaurant`, :func:`summarize`: one evening of
  guests through static, dynamic and continuous batching (notebook 01).
- :func:`load_run`: one evening of short and long answers at an arrival rate, under a
  scheduling policy (notebook 07).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import pandas as pd

from .arrivals import poisson
from .cost import preset
from .engine import simulate
from .requests import Choice, Uniform

COLUMNS = ["label", "ok", "length", "refused", "failed", "preemptions", "throughput_tok_s",
           "ttft_p50", "ttft_p99", "tpot_p50", "e2e_mean", "e2e_p99", "queue_wait_max",
           "starved", "goodput_req_s", "slot_occupancy", "mean_decode_batch", "peak_kv"]


def compare(workload, variants: Mapping[str, dict] | Iterable[dict], *, ttft_slo: float | None = None,
            tpot_slo: float | None = None, **common) -> pd.DataFrame:
    """Simulate ``workload`` once per variant; return one summary row per variant.

    ``variants``: ``{"label": {simulate keyword arguments}}`` or a list of such dicts
    (labelled by their configuration). ``common``: keyword arguments every run shares.

    >>> compare(reqs, {"static": {"batching": "static"}, "continuous": {}}, slots=4)  # doctest: +SKIP
    """
    items = variants.items() if isinstance(variants, Mapping) else [(None, v) for v in variants]
    rows = []
    for label, kw in items:
        res = simulate(workload, **{**common, **kw})
        s = res.summary(ttft_slo=ttft_slo, tpot_slo=tpot_slo)
        s["label"] = label if label is not None else s["label"]
        rows.append(s)
    return pd.DataFrame(rows)[COLUMNS + [c for c in rows[0] if c not in COLUMNS]]


def sweep_load(rates: Iterable[float], make_workload: Callable[[float], object], *,
               variants: Mapping[str, dict] | None = None, ttft_slo: float | None = None,
               tpot_slo: float | None = None, **common) -> pd.DataFrame:
    """Summaries over offered loads: ``make_workload(rate)`` builds each run's requests.

    Returns one row per (variant, rate) with the offered ``rate`` and every
    :meth:`SimResult.summary` field; :func:`labkit.sim.plots.throughput_latency` draws it.
    """
    variants = variants or {"": {}}
    rows = []
    for rate in rates:
        wl = make_workload(rate)
        for label, kw in variants.items():
            s = simulate(wl, **{**common, **kw}).summary(ttft_slo=ttft_slo, tpot_slo=tpot_slo)
            s["label"] = label or s["label"]
            s["rate"] = rate
            rows.append(s)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- the restaurant (notebook 01)

#: Output-length mixes for the restaurant workload (prompt lengths: 64-512 tokens).
MIXES = {
    "short": (16, 32, 48),
    "mixed": (16, 64, 256),
    "long": (128, 256, 512),
}
_MIX_WEIGHTS = {"short": None, "mixed": (0.5, 0.3, 0.2), "long": None}
MODES = ("static", "dynamic", "continuous")


def restaurant_workload(n: int = 24, rate: float = 4.0, mix: str = "mixed", seed: int = 0):
    """``n`` guests arriving at ``rate`` per second (Poisson), prompts of 64-512 tokens,
    answers drawn from the ``mix`` (see :data:`MIXES`)."""
    if mix not in MIXES:
        raise ValueError(f"mix must be one of {list(MIXES)}")
    return poisson(n, rate=rate, prompt=(64, 512), output=Choice(MIXES[mix], _MIX_WEIGHTS[mix]),
                   seed=seed)


def restaurant_runs(slots: int = 4, rate: float = 4.0, mix: str = "mixed", n: int = 24,
                    seed: int = 0, modes=MODES, hardware: str = "rtx4090", model: str = "8b-q4",
                    max_wait: float = 0.25) -> dict:
    """The same workload through each batching mode: ``{mode: SimResult}``.

    The step cost is the simulator's first-principles preset (an 8B Q4 model on an RTX 4090
    by default), so the times are an idealised GPU's, not this machine's.
    """
    reqs = restaurant_workload(n, rate, mix, seed)
    cost = preset(hardware, model)
    return {m: simulate(reqs, slots=slots, batching=m, cost=cost, max_wait=max_wait)
            for m in modes}


SUMMARY_COLUMNS = ["throughput_tok_s", "ttft_p50", "ttft_p90", "e2e_mean", "e2e_p99",
                   "queue_wait_mean", "slot_occupancy", "duration_s"]


def summarize(runs: dict) -> pd.DataFrame:
    """One row per run (``{name: SimResult}``) with the headline numbers of
    :data:`SUMMARY_COLUMNS`."""
    return pd.DataFrame({k: {c: r.summary()[c] for c in SUMMARY_COLUMNS}
                         for k, r in runs.items()}).T


@dataclass
class RestaurantResult:
    """The runs of :func:`restaurant_runs` and their :func:`summarize` table, shown as the table."""

    runs: dict
    summary: pd.DataFrame

    def _repr_html_(self):
        return self.summary.round(3)._repr_html_()

    def __repr__(self):
        return self.summary.round(3).to_string()


def restaurant(**kw) -> RestaurantResult:
    """:func:`restaurant_runs` (same arguments) with its summary."""
    runs = restaurant_runs(**kw)
    return RestaurantResult(runs, summarize(runs))


def restaurant_summary(**kw) -> pd.DataFrame:
    """The summary table of :func:`restaurant` alone."""
    return restaurant(**kw).summary


# ---------------------------------------------------------------------------- load (notebook 07)

def load_run(rate: float = 2.0, slots: int = 4, policy: str = "fifo", n: int = 200,
             long_share: float = 0.3, seed: int = 1) -> dict:
    """One simulated evening (short 32-token and long 600-token answers, prompts of 64-512
    tokens) at ``rate`` requests/s: ``{"summary": SimResult.summary(), "run": SimResult}``."""
    reqs = poisson(n, rate=rate, prompt=Uniform(64, 512),
                   output=Choice([32, 600], [1 - long_share, long_share]), seed=seed)
    run = simulate(reqs, slots=slots, policy=policy)
    return {"summary": run.summary(), "run": run}
