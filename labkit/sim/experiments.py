"""Run several configurations and tabulate them: comparisons and load sweeps.

- :func:`compare`: one workload, several configurations, one row each.
- :func:`sweep_load`: several arrival rates (and optionally several
  configurations), the data behind a throughput-latency curve.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

import pandas as pd

from .engine import simulate

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
