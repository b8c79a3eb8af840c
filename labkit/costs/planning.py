"""Notebook helpers for reading results and planning capacity (notebooks 05, 07, 08).

Saturation signals from a load sweep, an honest reading of a worksheet, the simulator's
replay of measured requests and its prediction error, a day of traffic, and what a solo
assistant and a 30-user chat need. Notebooks reach most of them through :mod:`labkit.notebook`;
notebook 08 imports the service helpers from here directly (rent or buy is
:mod:`labkit.costs.rentbuy`).
"""

from __future__ import annotations

from ..lang.i18n import pick, value

# ---------------------------------------------------------------------------- scheduling (notebook 07)

SATURATION_COLUMNS = ["rate", "throughput_tok_s", "ttft_p50", "ttft_p99", "peak_queue",
                      "per_stream_tok_s", "preemptions", "mean_decode_batch", "kv_use"]


def saturation_signals(sweep, *, by: str = "label"):
    """The four saturation signals per offered rate, from :func:`labkit.sim.experiments.sweep_load`:
    TTFT (p50, p99), peak queue depth, per-stream tok/s (1 / median time per output token) and
    preemptions; beside them what seed 001 also watches, the batch (``mean_decode_batch``:
    sequences decoding together, on average over the decode steps) and the KV use (``kv_use``:
    the peak KV cells in use over the pool's capacity; NaN where the pool is unlimited); plus
    ``saturated``: the queue stayed above zero *and* TTFT p50 is more than twice its value at
    the lowest rate of the same group."""
    import numpy as np
    import pandas as pd
    df = sweep.copy()
    df["per_stream_tok_s"] = 1.0 / df["tpot_p50"].replace(0, np.nan)
    if "mean_decode_batch" not in df.columns:
        df["mean_decode_batch"] = np.nan
    if {"peak_kv", "kv_capacity"} <= set(df.columns):
        capacity = df["kv_capacity"].astype(float).replace([np.inf, 0], np.nan)
        df["kv_use"] = df["peak_kv"].astype(float) / capacity
    else:
        df["kv_use"] = np.nan
    cols = ([by] if by in df.columns else []) + SATURATION_COLUMNS
    out = []
    groups = df.groupby(by, sort=False) if by in df.columns else [("", df)]
    for _, g in groups:
        g = g.sort_values("rate")[cols].copy()
        base = float(g["ttft_p50"].iloc[0])
        g["saturated"] = (g["peak_queue"] > 0) & (g["ttft_p50"] > 2 * base)
        out.append(g)
    return pd.concat(out, ignore_index=True)


def first_saturated_rate(signals) -> float | None:
    """The lowest offered rate flagged ``saturated`` in :func:`saturation_signals` (None if none)."""
    hit = signals[signals["saturated"]]
    return float(hit["rate"].min()) if len(hit) else None


def replay(rows, cost, slots: int, *, kv=None):
    """Simulate the requests of a bench run (``prompt_tokens`` and ``completion_tokens`` of each
    row that was answered) all arriving at once, on ``slots`` slots with step cost ``cost``: what
    the simulator predicts for a closed-loop run with as many requests in flight as slots."""
    from .. import sim
    ok = rows[rows["error"].isna()]
    reqs = [{"id": i, "arrival": 0.0, "prompt_tokens": int(p), "output_tokens": max(1, int(c))}
            for i, (p, c) in enumerate(zip(ok["prompt_tokens"], ok["completion_tokens"]))]
    return sim.simulate(reqs, slots=slots, cost=cost, kv=kv)


def prediction_error(measured: dict, predicted: dict):
    """One row per quantity: measured, predicted, and (predicted - measured) / measured."""
    import pandas as pd
    rows = []
    for k, m in measured.items():
        p = predicted[k]
        rows.append({"quantity": k, "measured": m, "predicted": p,
                     "error": (p - m) / m if m else float("nan")})
    return pd.DataFrame(rows).set_index("quantity")


# Share of the peak hour's traffic in each hour of a working day (0:00 .. 23:00): quiet at night,
# a morning ramp, a lunch dip, an afternoon peak. A shape to edit, not a measurement.
DAY_PROFILE = (0.05, 0.03, 0.02, 0.02, 0.03, 0.08, 0.2, 0.45, 0.8, 1.0, 0.95, 0.85,
               0.6, 0.85, 1.0, 0.95, 0.8, 0.6, 0.4, 0.3, 0.2, 0.15, 0.1, 0.07)


def day_of_traffic(peak_rate: float, *, profile=DAY_PROFILE, prompt=180, output=64,
                   seed: int = 0):
    """Poisson arrivals hour by hour: hour h gets ``peak_rate * profile[h]`` requests/s.
    ``prompt`` / ``output``: token lengths (an int or a labkit.sim length distribution)."""
    import dataclasses

    from .. import sim
    reqs = []
    for h, share in enumerate(profile):
        rate = peak_rate * share
        n = int(round(rate * 3600))
        if n == 0:
            continue
        for r in sim.poisson(n, rate=rate, prompt=prompt, output=output, seed=seed + h):
            if r.arrival < 3600:
                reqs.append(dataclasses.replace(r, arrival=r.arrival + 3600 * h, id=len(reqs)))
    return reqs


def hourly(result):
    """Per hour of a simulated day: requests, TTFT p50/p99 and the deepest queue."""
    import numpy as np
    req = result.requests.assign(hour=(result.requests["arrival"] // 3600).astype(int))
    q = result.queue_depth().assign(hour=lambda d: (d["t"] // 3600).astype(int))
    out = req.groupby("hour").agg(requests=("id", "size"),
                                  ttft_p50=("ttft", "median"),
                                  ttft_p99=("ttft", lambda s: float(np.nanpercentile(s, 99))))
    out["max_queue"] = q.groupby("hour")["queue_depth"].max().reindex(out.index).fillna(0).astype(int)
    return out


# ---------------------------------------------------------------------------- the planner's month

# The month labkit.exercises.quantities reads "months" in (8.3's instance is up 24 h x 30 days).
# Rent or buy (notebook 08) lives in labkit.costs.rentbuy, whose instance is up 730 h a month.
DAYS_PER_MONTH = 30


# ---------------------------------------------------------------------------- solo vs chat (notebook 08)

# The two services of the seed (吞吐量 vs 延遲): a one-person coding assistant keeps concurrency at
# 1-2 so the human's stream never queues; a 30-person chat fills the batch. The seconds between a
# user's messages are the ones notebook 07 simulates them with (5 s for the assistant, about 30 s of
# reading and typing in the chat); 200 answer tokens is the middle of notebook 07's 100-300 and
# 50-400; the chat's 2k-token conversation is the seed's KV example (2k token 的對話).
SERVICES = {
    "solo assistant": {"users": 2, "answer_tokens": 200, "think_s": 5.0, "context": None},
    "30-user chat": {"users": 30, "answer_tokens": 200, "think_s": 30.0, "context": 2048},
}

# The seed's worked KV example: a typical 8B dense model (32 layers, 8 KV heads, head dim 128,
# fp16) needs 2 x 32 x 8 x 128 x 2 B = 131,072 B per token, beside about 5 GB of weights.
SEED_8B = {"kv_bytes_per_token": 2 * 32 * 8 * 128 * 2, "weights_bytes": 5e9}


def learner_speeds(worksheet=None, rows=None):
    """Output tok/s per slot count from the learner's own measurements: notebook 05's worksheet
    (``output_tok_s`` and ``in_flight`` per config, the ``short`` workload, split KV first) when
    there is one, else the bench rows of a run (tokens / wall time). Returns a table indexed by
    slots with ``total_tok_s``, ``per_stream_tok_s`` and ``source``."""
    import pandas as pd
    if worksheet is not None and len(worksheet):
        ws = worksheet[worksheet["errors"].fillna(0) == 0]
        if "workload" in ws and (ws["workload"] == "short").any():
            ws = ws[ws["workload"] == "short"]
        ws = ws.sort_values("kv_mode", key=lambda s: s != "split").drop_duplicates("slots")
        out = pd.DataFrame({"slots": ws["slots"].astype(int), "total_tok_s": ws["output_tok_s"],
                            "per_stream_tok_s": ws["output_tok_s"] / ws["in_flight"].clip(lower=1),
                            "source": "notebook 05's worksheet"})
        return out.set_index("slots").sort_index()
    ok = rows[rows["error"].isna()]
    total = float(ok["completion_tokens"].sum() / ok["wall_s"].iloc[0])
    n = int(ok["in_flight"].iloc[0])
    return pd.DataFrame({"total_tok_s": [total], "per_stream_tok_s": [total / n],
                         "source": ["this notebook's held-out run"]},
                        index=pd.Index([n], name="slots"))


def service_needs(speeds, kv_bytes_per_token: float, weights_bytes: float, *, n_ctx_train: int,
                  services=None):
    """What each service needs, from measured ``speeds`` (:func:`learner_speeds`): slots,
    KV and total memory, and tok/s.

    - slots: the solo assistant, one per stream; the chat, the users generating at once in a
      closed loop (Little's law): users x answer time / (answer time + think time), rounded up,
      the answer time at the measured per-stream speed of the largest measured slot count;
    - memory: weights + slots x context x KV bytes per token (context: the service's own, or the
      model's training context for the assistant's long code prompts);
    - tok/s: total needed = slots x per-stream speed; ``machines`` = that over the best measured
      total (how many machines like the measured one)."""
    import math

    import pandas as pd
    services = services or SERVICES
    per_stream = float(speeds["per_stream_tok_s"].iloc[-1])
    best_total = float(speeds["total_tok_s"].max())
    rows = []
    for name, s in services.items():
        answer_s = s["answer_tokens"] / per_stream
        if name.startswith("solo"):
            slots = s["users"]
        else:
            slots = max(1, math.ceil(s["users"] * answer_s / (answer_s + s["think_s"])))
        ctx = s["context"] or n_ctx_train
        kv = slots * ctx * kv_bytes_per_token
        need = slots * per_stream
        rows.append({"service": name, "slots": slots, "context per slot": ctx,
                     "kv_mib": kv / 2**20, "memory_mib": (kv + weights_bytes) / 2**20,
                     "answer_s": answer_s, "tok_s_needed": need,
                     "machines": need / best_total})
    return pd.DataFrame(rows).set_index("service")
