"""Notebook helpers for reading results and planning capacity (notebooks 05, 07, 08).

Saturation signals from a load sweep, an honest reading of a worksheet, the simulator's
replay of measured requests and its prediction error, a day of traffic, rent against buy (an
instance billed every hour it is up, and serverless billed by busy hours), and what a solo
assistant and a 30-user chat need. Notebooks reach most of them through :mod:`labkit.notebook`;
notebook 08 imports the rent-or-buy and service helpers from here directly.
"""

from __future__ import annotations

from ..lang.i18n import chinese, pick, show, value

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
        name = pick(f"{r['workload']}, {r['kv_mode']}, {r['slots']} slot"
                    f"{'s' if r['slots'] != 1 else ''}",
                    f"{r['workload']}，{r['kv_mode']}，{r['slots']} 個槽位")
        if r["failed"]:
            out.append(pick(f"{name}: {r['failed']} request(s) failed, so its throughput is not a "
                            f"result ({r['verdict']}).",
                            f"{name}：有 {r['failed']} 個請求失敗，所以它的吞吐不算結果"
                            f"（{value('verdict', r['verdict'])}）。"))
            continue
        if r["slots"] == 1 or r["tok_s_vs_1_slot"] != r["tok_s_vs_1_slot"]:
            continue
        rose, x = r["tok_s_vs_1_slot"] > 1, r["tok_s_vs_1_slot"]
        line = pick(f"{name}: total tok/s {'rose' if rose else 'did not rise'} (x{x:.2f} of 1 slot)",
                    f"{name}：總 tok/s {'上升了' if rose else '沒有上升'}，是 1 個槽位的 {x:.2f} 倍")
        c = r["completion_p50_vs_1_slot"]
        if c == c:
            line += pick(f"; the median single request took x{c:.2f} as long"
                         + (" (slower)" if c > 1 else " (not slower)"),
                         f"；單一請求所花時間的中位數是 1 個槽位的 {c:.2f} 倍"
                         + ("（變慢了）" if c > 1 else "（沒有變慢）"))
        out.append(line + pick(f"; {r['verdict']}.", f"；{value('verdict', r['verdict'])}。"))
    return out


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


# ---------------------------------------------------------------------------- rent or buy (notebook 08)

# Every default below says where it came from. SEED is the capacity-planning article the learners
# read (its section 租 vs 買，速寫); it gives its prices "as of now" (截至目前) and no date.
SEED = "002_d3d53c3c703d85c8.txt"
HOURS_PER_DAY = 24
DAYS_PER_MONTH = 30

SEED_PRICES = {
    # name: (low, high, unit, the seed's words)
    "rent a 24 GB-class GPU": (0.50, 2.0, "USD per hour", "租用的 24GB 級 GPU 約每小時 $0.50–2"),
    "buy a used 24 GB card": (None, None, "USD, once", "二手 24GB 卡數百美元 (a few hundred dollars)"),
    "break-even": (300, 1000, "hours of actual generation", "損益兩平大約在 300–1,000 小時的實際生成"),
}

RENT_BUY_DEFAULTS = {
    # value, where it came from
    "buy_price": (600.0, f"{SEED}: a used 24 GB card costs 'a few hundred dollars'; 600 is one "
                         "such price, the one that puts the seed's own break-even at about 300 hours "
                         "for its top rent of $2/h"),
    "rent_per_hour": (1.0, f"{SEED}: a rented 24 GB-class GPU costs about $0.50-2 per hour; 1.0 "
                           "lies inside that range"),
    "serverless_per_hour": (1.0, f"{SEED} gives one hourly range; a scale-to-zero service bills "
                                 "per second of use at its own rate: put your quote here (the "
                                 "default reuses the instance rate)"),
    "power_w": (350.0, "not in the seed: the board power NVIDIA specifies for a GeForce RTX 3090, "
                       "a 24 GB card (the most a card of that class draws while generating)"),
    "kwh_price": (0.15, "not in the seed: an example price per kWh; replace it with your bill"),
    "busy_hours_per_day": (4.0, "not in the seed, which says most people overestimate their "
                                "hours and should measure a real week first: an example to replace"),
}

# What the seed weighs beside the money (租 vs 買，速寫), as it lists them.
SEED_FACTORS = [
    ("privacy", "buy (run it yourself)", "本機贏在隱私"),
    ("latency", "buy (run it yourself)", "本機贏在…延遲"),
    ("no rate limits", "buy (run it yourself)", "本機贏在…無速率限制"),
    ("bursty demand", "rent", "租用贏在爆發性需求"),
    ("80 GB-class models (no consumer card holds them)", "rent",
     "租用贏在…沒有消費卡裝得下的 80GB 級模型"),
    ("your real hours (most people overestimate them)", "measure first",
     "多數人高估自己的時數——決定前先量測真實的一週"),
]


# The same factors in Chinese (the table shown under LABKIT_LANG=zh-TW).
SEED_FACTORS_ZH = {
    "privacy": "隱私", "latency": "延遲", "no rate limits": "沒有速率限制",
    "bursty demand": "爆發性需求",
    "80 GB-class models (no consumer card holds them)": "80 GB 級模型（沒有消費級顯卡裝得下）",
    "your real hours (most people overestimate them)": "你真實的使用時數（多數人會高估）",
    "buy (run it yourself)": "買（自己架）", "rent": "租", "measure first": "先量測",
}

# Where each default came from, in Chinese (the table shown under LABKIT_LANG=zh-TW).
RENT_BUY_SOURCES_ZH = {
    "buy_price": f"{SEED}：二手 24 GB 卡「數百美元」；600 是其中一個價格，用它算，種子文章自己的"
                 "回本點在最高租金 $2/h 時約為 300 小時",
    "rent_per_hour": f"{SEED}：租用 24 GB 級 GPU 約每小時 $0.50–2；1.0 落在這個範圍內",
    "serverless_per_hour": f"{SEED} 只給了一個每小時的範圍；可縮到零的服務按實際使用的秒數以自己的"
                           "費率計費：請填你拿到的報價（預設沿用租用執行個體的費率）",
    "power_w": "種子文章沒有：NVIDIA 為 24 GB 的 GeForce RTX 3090 標示的顯示卡功耗（這類卡生成時"
               "最多耗用的電力）",
    "kwh_price": "種子文章沒有：每度電（kWh）的範例價格；請換成你的電費單上的價格",
    "busy_hours_per_day": "種子文章沒有；它說多數人會高估自己的時數，應先量測真實的一週："
                          "這是個要換掉的範例",
}


def seed_factors():
    """The seed's non-price factors as a table: factor, which side it favours, the seed's words
    (in Chinese under LABKIT_LANG=zh-TW: factor and side translated, headings too)."""
    import pandas as pd
    if chinese():
        return pd.DataFrame([(SEED_FACTORS_ZH.get(f, f), SEED_FACTORS_ZH.get(side, side), words)
                             for f, side, words in SEED_FACTORS],
                            columns=["因素", "有利於", f"{SEED} 原文"])
    return pd.DataFrame(SEED_FACTORS, columns=["factor", "favours", f"in {SEED}"])


def defaults_table():
    """RENT_BUY_DEFAULTS as a table: input, value, where it came from (in Chinese under
    LABKIT_LANG=zh-TW; the inputs keep their names, the keyword arguments of
    :func:`rent_buy_compare`)."""
    import pandas as pd
    if chinese():
        return pd.DataFrame([(k, v, RENT_BUY_SOURCES_ZH.get(k, src))
                             for k, (v, src) in RENT_BUY_DEFAULTS.items()],
                            columns=["輸入", "預設值", "來源"])
    return pd.DataFrame([(k, v, src) for k, (v, src) in RENT_BUY_DEFAULTS.items()],
                        columns=["input", "default", "source"])


def rent_buy_compare(buy_price: float, rent_per_hour: float, busy_hours_per_day: float, *,
                     serverless_per_hour: float | None = None, power_w: float = 350.0,
                     kwh_price: float = 0.15, other_per_month: float = 0.0, months: int = 24,
                     days_per_month: int = DAYS_PER_MONTH):
    """Cumulative cost, month by month, of three ways to have a GPU:

    - **buy**: ``buy_price`` up front, then each month the electricity of the busy hours
      (``power_w`` x busy hours x ``kwh_price``) plus ``other_per_month`` (hosting, idle power);
    - **rent, always on**: a rented instance bills every hour it is up, 24 h x ``days_per_month``
      at ``rent_per_hour``, busy or not;
    - **rent, busy hours only**: serverless / scale-to-zero, billed only for the busy hours at
      ``serverless_per_hour`` (default: ``rent_per_hour``).

    Returns ``table`` (months x the three columns), ``monthly`` (cost per month of each),
    ``break_even_months`` ({"always on": m, "busy hours only": m}, None where buying never catches
    up) and ``hours`` (busy and billed hours per month)."""
    import pandas as pd
    serverless_per_hour = rent_per_hour if serverless_per_hour is None else serverless_per_hour
    busy = busy_hours_per_day * days_per_month
    up = HOURS_PER_DAY * days_per_month
    running = busy * power_w / 1000 * kwh_price + other_per_month
    monthly = {"buy": running, "rent, always on": up * rent_per_hour,
               "rent, busy hours only": busy * serverless_per_hour}
    m = pd.RangeIndex(0, months + 1, name="month").to_numpy()
    table = pd.DataFrame({"buy": buy_price + running * m,
                          "rent, always on": monthly["rent, always on"] * m,
                          "rent, busy hours only": monthly["rent, busy hours only"] * m},
                         index=pd.RangeIndex(0, months + 1, name="month"))

    def even(rent_monthly):
        gap = rent_monthly - running
        return buy_price / gap if gap > 0 else None
    return {"table": table, "monthly": monthly,
            "break_even_months": {"always on": even(monthly["rent, always on"]),
                                  "busy hours only": even(monthly["rent, busy hours only"])},
            "hours": {"busy per month": busy, "billed always on": up}}


def break_even_range(buy_price: float, busy_hours_per_day: float, rents=(0.50, 1.0, 2.0), **kw):
    """Break-even months of buying against both kinds of renting, for each hourly rent in
    ``rents`` (default: the seed's range and 1.0 inside it)."""
    import pandas as pd
    rows = []
    for rent in rents:
        r = rent_buy_compare(buy_price, rent, busy_hours_per_day,
                             serverless_per_hour=rent, **kw)["break_even_months"]
        rows.append({"rent per hour": rent, "vs always on (months)": r["always on"],
                     "vs busy hours only (months)": r["busy hours only"]})
    return pd.DataFrame(rows)


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
