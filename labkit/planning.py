"""Notebook helpers for reading results and planning capacity (notebooks 05, 07, 08).

Saturation signals from a load sweep, an honest reading of a worksheet, the simulator's
replay of measured requests and its prediction error, a day of traffic, and a rent-vs-buy
sketch on the learner's own inputs. Notebooks reach them through :mod:`labkit.notebook`.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------- scheduling (notebook 07)

SATURATION_COLUMNS = ["rate", "throughput_tok_s", "ttft_p50", "ttft_p99", "peak_queue",
                      "per_stream_tok_s", "preemptions"]


def saturation_signals(sweep, *, by: str = "label"):
    """The four saturation signals per offered rate, from :func:`labkit.sim.experiments.sweep_load`:
    TTFT (p50, p99), peak queue depth, per-stream tok/s (1 / median time per output token) and
    preemptions; plus ``saturated``: the queue stayed above zero *and* TTFT p50 is more than
    twice its value at the lowest rate of the same group."""
    import numpy as np
    import pandas as pd
    df = sweep.copy()
    df["per_stream_tok_s"] = 1.0 / df["tpot_p50"].replace(0, np.nan)
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


# ---------------------------------------------------------------------------- reading a worksheet (notebook 05)

def read_worksheet(ws):
    """Read a :func:`labkit.bench.worksheet` honestly: each config against the 1-slot config of
    the same workload (its baseline; the same KV mode when there is one, else the other: one slot
    holds the same cells either way). Returns one row per config with
    ``tok_s_vs_1_slot`` (ratio of output tok/s), ``completion_p50_vs_1_slot`` (ratio of the
    median single request's send-to-end time), ``single_requests_slower`` (that ratio > 1),
    ``failed`` (requests with an error) and ``verdict``. Configs without a 1-slot baseline,
    or whose throughput is undefined because a request failed, get NaN ratios."""
    import math

    import pandas as pd
    rows = []
    for _, r in ws.iterrows():
        ones = ws[(ws["workload"] == r["workload"]) & (ws["slots"] == 1)]
        same = ones[ones["kv_mode"] == r["kv_mode"]]
        # With one slot, split and unified hold the same cells; either is the baseline.
        base = same.iloc[0] if len(same) else (ones.iloc[0] if len(ones) else None)

        def ratio(col):
            if base is None or pd.isna(r[col]) or pd.isna(base[col]) or base[col] == 0:
                return math.nan
            return float(r[col]) / float(base[col])
        c = ratio("completion_p50_s")
        rows.append({"kv_mode": r["kv_mode"], "slots": int(r["slots"]), "workload": r["workload"],
                     "output_tok_s": r["output_tok_s"], "tok_s_vs_1_slot": ratio("output_tok_s"),
                     "completion_p50_s": r["completion_p50_s"], "completion_p50_vs_1_slot": c,
                     "single_requests_slower": bool(c > 1) if not math.isnan(c) else None,
                     "failed": int(r["errors"]), "verdict": r["verdict"]})
    return pd.DataFrame(rows)


def findings(reading) -> list[str]:
    """Plain sentences from :func:`read_worksheet`: where total tok/s rose, where single
    requests got slower, where requests failed. Only what the numbers say."""
    out = []
    for _, r in reading.iterrows():
        name = f"{r['workload']}, {r['kv_mode']}, {r['slots']} slot{'s' if r['slots'] != 1 else ''}"
        if r["failed"]:
            out.append(f"{name}: {r['failed']} request(s) failed, so its throughput is not a "
                       f"result ({r['verdict']}).")
            continue
        if r["slots"] == 1 or r["tok_s_vs_1_slot"] != r["tok_s_vs_1_slot"]:
            continue
        change = "rose" if r["tok_s_vs_1_slot"] > 1 else "did not rise"
        line = f"{name}: total tok/s {change} (x{r['tok_s_vs_1_slot']:.2f} of 1 slot)"
        c = r["completion_p50_vs_1_slot"]
        if c == c:
            line += (f"; the median single request took x{c:.2f} as long"
                     + (" (slower)" if c > 1 else " (not slower)"))
        out.append(line + f"; {r['verdict']}.")
    return out


def replay(rows, cost, slots: int, *, kv=None):
    """Simulate the requests of a bench run (``prompt_tokens`` and ``completion_tokens`` of each
    row that was answered) all arriving at once, on ``slots`` slots with step cost ``cost``: what
    the simulator predicts for a closed-loop run with as many requests in flight as slots."""
    from . import sim
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

    from . import sim
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


def rent_vs_buy(buy_price: float, buy_running_per_month: float, rent_per_hour: float,
                hours_per_month: float, months: int = 36):
    """Cumulative cost of buying (price up front + running cost each month) and renting (hours x
    hourly rate each month) over ``months``, and the break-even month (None if renting stays
    cheaper over the horizon). Every input is yours: quotes, power bills, measured hours."""
    import pandas as pd
    m = pd.RangeIndex(0, months + 1, name="month")
    buy = buy_price + buy_running_per_month * m.to_numpy()
    rent = rent_per_hour * hours_per_month * m.to_numpy()
    table = pd.DataFrame({"buy": buy, "rent": rent}, index=m)
    monthly_gap = rent_per_hour * hours_per_month - buy_running_per_month
    even = buy_price / monthly_gap if monthly_gap > 0 else None
    return {"table": table, "break_even_months": even,
            "break_even_hours": even * hours_per_month if even is not None else None}
