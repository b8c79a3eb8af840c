"""Run several configurations and tabulate them: comparisons, load sweeps and the
notebooks' ready-made experiments.

- :func:`compare`: one workload, several configurations, one row each.
- :func:`sweep_load`: several arrival rates (and optionally several
  configurations), the data behind a throughput-latency curve.
- :func:`restaurant_runs`, :func:`restaurant`, :func:`summarize`: one evening of
  guests through static, dynamic and continuous batching (notebook 01).
- :func:`evening`, :func:`load_run`: one evening of short and long answers at an arrival
  rate, under a scheduling policy (notebook 07).
- :func:`rush`, :func:`rush_run`, :func:`waits`, :func:`verdict`, :func:`rush_table`:
  sustained overload, starvation against one fixed limit, and the short answers' TTFT
  (notebook 07 and its policy exercise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from .arrivals import poisson
from .cost import StepCost, preset
from .engine import simulate
from .requests import Choice, Request, Uniform

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

#: The two answer lengths of notebook 07's evening and rush: a chat answer and a report.
SHORT_TOKENS, LONG_TOKENS = 32, 600


# Notebook 07's evening: ``n`` requests arriving at ``rate`` a second (Poisson), prompts of
# 64-512 tokens, answers of SHORT_TOKENS or, for ``long_share`` of them, LONG_TOKENS. With
# ``people``, two users (``a`` sends 85 % of the requests) and two priorities (a fifth of the
# requests urgent, priority 1). The notebook prints this function's source in either edition,
# so its text is here, above it, and its body carries no English sentence.
def evening(rate: float = 3.0, n: int = 200, long_share: float = 0.3, seed: int = 1,
            people: bool = False) -> list[Request]:
    extra = {}
    if people:
        extra = {"users": {"a": 0.85, "b": 0.15}, "priority": {0: 0.8, 1: 0.2}}
    return poisson(n, rate=rate, prompt=Uniform(64, 512),
                   output=Choice([SHORT_TOKENS, LONG_TOKENS], [1 - long_share, long_share]),
                   seed=seed, **extra)


def load_run(rate: float = 2.0, slots: int = 4, policy: str = "fifo", n: int = 200,
             long_share: float = 0.3, seed: int = 1) -> dict:
    """One simulated :func:`evening` at ``rate`` requests/s: ``{"summary":
    SimResult.summary(), "run": SimResult}``."""
    run = simulate(evening(rate, n, long_share, seed), slots=slots, policy=policy)
    return {"summary": run.summary(), "run": run}


# ---------------------------------------------------------------------------- the rush (notebook 07)

#: The step cost of the scheduling lessons, fixed here so that their numbers and the
#: exercise checks do not move when the simulator's presets are re-fitted: the simulator's
#: 8B Q4_K_M on RTX 4090 preset of 2026-11-30 (``preset("rtx4090", "8b-q4")``), rounded.
RUSH_COST = StepCost(a=6.7e-3, b=2.4e-4, c=3.7e-4, d=1.6e-7,
                     name="8B Q4 on an RTX 4090 (the preset, rounded)")
#: One limit for every policy: a long request that waits longer than this for a slot is
#: starved. A 600-token answer spends about 5 s in a slot, so this is eight answers' time.
STARVATION_BOUND_S = 40.0
#: What the chat users of the rush will put up with: 90 % of short answers start within this.
SHORT_TTFT_P90_LIMIT_S = 8.0
RUSH_PROMPT = 128


def rush(duration: float = 300.0, short_rate: float = 8.2, long_rate: float = 0.2,
         prompt: int = RUSH_PROMPT) -> list[Request]:
    """Sustained overload: for ``duration`` seconds a short chat answer (32 tokens, user
    ``chat``, priority 1) arrives every ``1/short_rate`` s and a long report (600 tokens, user
    ``reports``, priority 0) every ``1/long_rate`` s, evenly spaced, every prompt ``prompt``
    tokens. On 4 slots at :data:`RUSH_COST` the short ones alone fit, but both together ask a
    little more than the server can give, for the whole run: the queue never drains while
    arrivals last. Even spacing keeps the run free of luck, so a verdict does not depend on
    a seed."""
    shorts = [(t, SHORT_TOKENS, "chat", 1) for t in np.arange(0.0, duration, 1.0 / short_rate)]
    longs = [(t, LONG_TOKENS, "reports", 0)
             for t in np.arange(0.5 / long_rate, duration, 1.0 / long_rate)]
    rows = sorted(shorts + longs)
    return [Request(i, float(t), prompt, out, priority=p, user=u)
            for i, (t, out, u, p) in enumerate(rows)]


def rush_run(policy="fifo", slots: int = 4, **kw):
    """:func:`rush` (its keyword arguments in ``kw``) through ``policy`` on ``slots`` slots at
    :data:`RUSH_COST`; a policy may be a name, a Policy or a key function ``key(request, now)``."""
    return simulate(rush(**kw), slots=slots, policy=policy, cost=RUSH_COST)


def waits(run, *, bound: float = STARVATION_BOUND_S, until: float | None = None) -> pd.DataFrame:
    """The requests of ``run`` that arrived at least ``bound`` seconds before the arrivals
    stopped (``until``, default the last arrival), so that all of their wait fell while the
    overload lasted: ``wait`` for a slot and ``ttft``, each counted up to ``until`` at most
    (a request not yet admitted then has waited at least that long, whatever happened in
    the quiet after; ``still_waiting`` marks them), and ``starved``: waited more than ``bound``. One limit for every
    policy, unlike a limit relative to each run's own typical wait."""
    r = run.requests
    until = float(r["arrival"].max()) if until is None else until
    win = r[r["arrival"] <= until - bound]
    cap = lambda col: win[col].fillna(math.inf).clip(upper=until) - win["arrival"]
    out = pd.DataFrame({"id": win["id"], "arrival": win["arrival"],
                        "output_tokens": win["output_tokens"], "user": win["user"],
                        "wait": cap("admitted"), "ttft": cap("first_token")})
    out["starved"] = out["wait"] > bound
    out["still_waiting"] = ~(win["admitted"] <= until)      # not admitted while arrivals lasted
    return out.reset_index(drop=True)


def verdict(run, *, bound: float = STARVATION_BOUND_S,
            ttft_limit: float = SHORT_TTFT_P90_LIMIT_S) -> dict:
    """The two numbers the rush is judged by: the longest wait of a long request (and how
    many waited past ``bound``), and the short answers' TTFT p90; ``ok`` when both hold."""
    w = waits(run, bound=bound)
    long_ = w["output_tokens"] == LONG_TOKENS
    out = {"long_requests": int(long_.sum()),
           "long_wait_max_s": float(w.loc[long_, "wait"].max()),
           "long_starved": int(w.loc[long_, "starved"].sum()),
           "short_ttft_p90_s": float(w.loc[~long_, "ttft"].quantile(0.9))}
    out["no_starvation"] = out["long_wait_max_s"] <= bound
    out["short_ttft_ok"] = out["short_ttft_p90_s"] <= ttft_limit
    out["ok"] = out["no_starvation"] and out["short_ttft_ok"]
    return out


def rush_table(policies: Mapping, **kw) -> pd.DataFrame:
    """:func:`verdict` of the rush under each ``{label: policy}``, one row each."""
    return pd.DataFrame({label: verdict(rush_run(p, **kw)) for label, p in policies.items()}).T


# ------------------------------------------------------- one developer or thirty chatters (notebook 07)

#: Two services of the capacity seed (002_d3d53c3c703d85c8.txt), as closed loops: each
#: client sends its next request a think time after its previous answer ended.
#: ``solo``: one developer's coding assistant, two streams (the chat and the editor's
#: requests), long prompts full of code, short thinking. ``chat``: thirty people chatting,
#: each reading and typing for about 30 s between messages.
SERVICES = {
    "solo assistant": dict(clients=2, requests=40, think_time=5.0, prompt=(2000, 6000),
                           output=(100, 300), context=16384),
    "30-user chat": dict(clients=30, requests=300, think_time=30.0, prompt=(300, 1500),
                         output=(50, 400), context=4096),
}


def service_runs(slots: Iterable[int] = (1, 2, 4, 8, 16), services: Mapping | None = None,
                 seed: int = 0) -> pd.DataFrame:
    """Each service of :data:`SERVICES` on each number of slots at :data:`RUSH_COST`: TTFT
    p50/p90, the longest wait for a slot, each stream's tok/s, and the KV cache the slots
    need (slots x the service's context x 8B's 128 KiB per token, the seed's figure)."""
    from .arrivals import closed_loop
    kv_per_token = 2 * 32 * 8 * 128 * 2          # 8B: layers, KV heads, head size, fp16
    rows = []
    for name, spec in (services or SERVICES).items():
        spec = dict(spec)
        context = spec.pop("context")
        for n in slots:
            wl = closed_loop(spec["clients"], spec["requests"], think_time=spec["think_time"],
                             random_think=True, stagger=spec["think_time"] / spec["clients"],
                             prompt=spec["prompt"], output=spec["output"], seed=seed)
            s = simulate(wl, slots=n, cost=RUSH_COST).summary()
            rows.append({"service": name, "slots": n, "ttft_p50": s["ttft_p50"],
                         "ttft_p90": s["ttft_p90"], "queue_wait_max": s["queue_wait_max"],
                         "stream_tok_s": 1 / s["tpot_p50"], "requests_per_s": s["requests_per_s"],
                         "kv_gib": n * context * kv_per_token / 2**30})
    return pd.DataFrame(rows)
