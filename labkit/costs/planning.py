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

# One month everywhere: 365 x 24 / 12 = 730 h, the month of labkit.costs.rentbuy (an instance
# always on bills 730 h), of notebook 08 and of the exercises (labkit.exercises.quantities reads
# "months" in it; exercise 8.3's instance is up 730 h a month).
HOURS_PER_MONTH = 365 * 24 / 12
DAYS_PER_MONTH = HOURS_PER_MONTH / 24       # 30.42


# ---------------------------------------------------------------------------- shared vs per sequence (notebook 08)

#: Below this share of a one-sequence step, the shared part of a step is called near zero: slots
#: then cannot raise the total tok/s by more than 1 / (1 - share) - 1, a few per cent.
NEAR_ZERO_SHARE = 0.05


def slot_gain(shared: float, per_seq: float, slots: int) -> float:
    """The decode total at ``slots`` sequences over one sequence's, by the two-term step
    ``shared + per_seq x n``: slots x (shared + per_seq) / (shared + slots x per_seq)."""
    return slots * (shared + per_seq) / (shared + slots * per_seq)


def decode_split(periods, levels=None):
    """Shared and per-sequence step cost from a decode trace: least squares of each step's
    duration on ``1`` and its decoding sequences, over the steps that carry no prompt token
    (as notebook 05_roofline's lockstep does). ``periods``: rows with ``dur_s``, ``n_decode``
    and ``n_prefill_tokens``. Returns (shared s, per sequence s), neither below zero."""
    import numpy as np
    ok = periods[(periods["n_prefill_tokens"] == 0) & (periods["n_decode"] > 0)
                 & np.isfinite(periods["dur_s"])]
    return _two_terms(ok["n_decode"].to_numpy(float), ok["dur_s"].to_numpy(float))


def _two_terms(n, t):
    import numpy as np
    if len(set(n)) < 2:
        return 0.0, float(np.median(t / n))
    X = np.column_stack([np.ones(len(n)), n])
    (a, c), *_ = np.linalg.lstsq(X / t[:, None], np.ones(len(t)), rcond=None)
    if a < 0:
        return 0.0, float(np.sum(n * t / t**2) / np.sum(n * n / t**2))
    if c < 0:
        return float(np.median(t)), 0.0
    return float(a), float(c)


def client_decode_fit(kind: str = "labkit", *, levels=(1, 2, 4), max_tokens: int = 32,
                      rounds: int = 2, n_threads: int = 2, log_dir: str | None = None):
    """Shared and per-sequence step cost of a server as its client sees it: a fresh server of
    ``kind`` (``"labkit"``, ``"xllamacpp"``, ``"llama-server"``) with ``max(levels)`` split-KV
    slots; at each level n, n short prompts at once, each answering exactly ``max_tokens``
    tokens (``ignore_eos``). A request's time per generated token (the server's own
    ``timings.predicted_ms / predicted_n`` where it reports them, as llama-server does, else the
    client's (last chunk - first chunk) / (tokens - 1)) is the period of a step that decodes n
    sequences (the quickest of ``rounds`` rounds, levels forwards then backwards); least
    squares of those periods on n gives the shared part and the part per sequence. Works on any server with
    llama-server's API, no step trace needed. Returns a dict: ``kind``, ``shared_s``,
    ``per_seq_s`` and ``table`` (per level: ``period_ms``, ``total_tok_s``)."""
    import numpy as np
    import pandas as pd

    from ..bench.calibration import send_closed
    from ..bench.client import Sampling
    from ..server.launch import ServerConfig, launch
    n_slots = max(levels)
    cfg = ServerConfig(kind=kind, n_ctx=n_slots * 512, n_slots=n_slots, kv_unified=False,
                       n_threads=n_threads, log_dir=log_dir)
    msg = [{"role": "user", "content": "Tell a long story about a lighthouse keeper."}]
    body = Sampling(max_tokens=max_tokens, extra={"ignore_eos": True}).body(msg)
    rows = []
    with launch(cfg) as srv:
        send_closed(srv.base_url, [body], 1)                     # warm-up, not kept
        for k in range(rounds):                                  # forwards, then backwards
            for n in (levels if k % 2 == 0 else levels[::-1]):
                r = send_closed(srv.base_url, [body] * n, n)
                if r["error"].notna().any():
                    raise RuntimeError(f"{kind}: {r['error'].dropna().iloc[0]}")
                gap = (r["end_s"] - r["first_chunk_s"]) / (r["completion_tokens"] - 1).clip(lower=1)
                served = pd.to_numeric(r["predicted_ms"], errors="coerce") / pd.to_numeric(
                    r["predicted_n"], errors="coerce")        # the server's own clock, if it says
                if served.notna().all() and (served > 0).all():
                    gap = served / 1e3
                rows.append({"in_flight": n, "period_ms": float(gap.median()) * 1e3})
    # the quickest round at each level: another process on the machine only ever slows a step
    table = pd.DataFrame(rows).groupby("in_flight")[["period_ms"]].min()
    table["total_tok_s"] = table.index / (table["period_ms"] / 1e3)
    a, c = _two_terms(table.index.to_numpy(float), table["period_ms"].to_numpy() / 1e3)
    return {"kind": kind, "shared_s": a, "per_seq_s": c, "table": table}


def split_table(splits: dict, slots: int = 4):
    """One row per way of measuring (``splits``: label -> (shared s, per sequence s)):
    ``shared_ms``, ``per_seq_ms``, ``shared_share`` (of a one-sequence step) and
    ``gain_at_<slots>`` (:func:`slot_gain`)."""
    import pandas as pd
    rows = []
    for label, (a, c) in splits.items():
        rows.append({"measured by": label, "shared_ms": a * 1e3, "per_seq_ms": c * 1e3,
                     "shared_share": a / (a + c) if a + c > 0 else float("nan"),
                     f"gain_at_{slots}": slot_gain(a, c, slots) if a + c > 0 else float("nan")})
    return pd.DataFrame(rows).set_index("measured by")


def split_reading(table, slots: int = 4) -> list[tuple[str, str]]:
    """What :func:`split_table` says, one (English, Chinese) sentence per row and one comparing
    the first row (the cost the notebook simulates with) with the others, every figure computed
    from the table (its labels already in the reader's language). A row whose shared part is under :data:`NEAR_ZERO_SHARE` of a one-sequence
    step says that on this machine, measured that way, slots do not raise throughput."""
    gain = f"gain_at_{slots}"
    out = []
    for label, r in table.iterrows():
        a, c, share, g = r["shared_ms"], r["per_seq_ms"], r["shared_share"], r[gain]
        head_en = f"{label}: shared {a:.3g} ms a step, {c:.3g} ms per sequence ({share:.1%} shared)"
        head_zh = f"{label}：每步共用 {a:.3g} ms，每個序列 {c:.3g} ms（共用占 {share:.1%}）"
        if share < NEAR_ZERO_SHARE:
            out.append((f"{head_en}: the shared part is near zero, so measured this way, on this machine "
                        f"slots do not raise throughput: {slots} slots give at most {g:.2f}x the tok/s of one",
                        f"{head_zh}：共用的部分幾乎是零，所以照這種量法，在這台機器上槽位不會提高吞吐量："
                        f"{slots} 個槽位最多只有一個槽位的 {g:.2f} 倍 tok/s"))
        else:
            out.append((f"{head_en}: {slots} slots give at most {g:.2f}x the tok/s of one",
                        f"{head_zh}：{slots} 個槽位最多是一個槽位的 {g:.2f} 倍 tok/s"))
    if len(table) > 1:
        first = table.iloc[0]
        for label, r in table.iloc[1:].iterrows():
            one_a, one_b = first["shared_ms"] + first["per_seq_ms"], r["shared_ms"] + r["per_seq_ms"]
            why_en, why_zh = _why(first, r)
            out.append((f"{table.index[0]} against {label}: a one-sequence step {one_a:.2f} vs "
                        f"{one_b:.2f} ms, the shared part {first['shared_ms']:.2f} vs "
                        f"{r['shared_ms']:.2f} ms, each sequence {first['per_seq_ms']:.2f} vs "
                        f"{r['per_seq_ms']:.2f} ms: " + why_en,
                        f"{table.index[0]} 對 {label}：單一序列的一步 "
                        f"{one_a:.2f} 對 {one_b:.2f} ms，共用部分 {first['shared_ms']:.2f} 對 "
                        f"{r['shared_ms']:.2f} ms，每個序列 {first['per_seq_ms']:.2f} 對 "
                        f"{r['per_seq_ms']:.2f} ms：" + why_zh))
    return out


def _close(x: float, y: float, tol: float = 0.25) -> bool:
    return abs(x - y) <= tol * max(abs(x), abs(y), 1e-9)


def _why(first, r) -> tuple[str, str]:
    """Why two splits of a step differ (or that they agree), in English and Chinese."""
    if _close(first["shared_ms"], r["shared_ms"]) and _close(first["per_seq_ms"], r["per_seq_ms"]):
        return "they agree within 25 %", "兩者相差在 25 % 以內"
    if _close(first["shared_ms"] + first["per_seq_ms"], r["shared_ms"] + r["per_seq_ms"]):
        gap = abs(first["shared_ms"] - r["shared_ms"])
        return (f"the one-sequence steps agree (within 25 %), the split does not: "
                f"{gap:.2f} ms of the step is counted as shared in one "
                "and as per sequence in the other, so only the runs with several sequences in a step "
                "tell them apart, and the simulator's slot predictions follow the first",
                f"單一序列的一步相符（差距在 25 % 以內），拆法卻不同：一步裡有 "
                f"{gap:.2f} ms 在一邊算成共用，在另一邊算成每個序列的成本，"
                "只有一步裡有好幾個序列的執行才分得出來，而模擬器對槽位的預測跟著第一種拆法")
    moved = (first["shared_ms"] - r["shared_ms"]) + (first["per_seq_ms"] - r["per_seq_ms"])
    return (f"the steps themselves differ ({moved:+.2f} ms at one sequence): they were timed on "
            "different runs and by different clocks (a server's period to the next step, the "
            "client's time between tokens, the engine's llama_decode alone), so each prediction "
            "holds for the way it was measured",
            f"步驟本身就不同（單一序列時差 {moved:+.2f} ms）：它們來自不同的執行、用不同的時鐘量"
            "（伺服器到下一步的週期、用戶端看到的 token 間隔、引擎單獨的 llama_decode），"
            "所以每個預測只適用於它自己的量法")


def faq_total(more_slots, ones_label: str, fours_label: str, table) -> tuple[str, str]:
    """FAQ 2's answer ("higher total tok/s: is my single answer faster?") from the simulated
    ``more_slots`` rows (``throughput_tok_s``, ``e2e_p50``) at 1 and 4 slots, and the cost the
    simulation used (``table``'s first row, :func:`split_table`): where the two totals are within
    3 % it says why, from the shared share of the step."""
    by = more_slots.set_index("label")
    one, four = by.loc[ones_label], by.loc[fours_label]
    t1, t4, e1, e4 = (one["throughput_tok_s"], four["throughput_tok_s"], one["e2e_p50"],
                      four["e2e_p50"])
    first = table.iloc[0]
    en = (f"Not necessarily. Predicted here, 4 slots vs 1: total {t4:.1f} vs {t1:.1f} tok/s "
          f"({t4 / t1 - 1:+.0%}), median request {e4:.1f} s vs {e1:.1f} s")
    zh = (f"不一定。這裡的預測，4 個槽位對 1 個：總共 {t4:.1f} 對 {t1:.1f} tok/s"
          f"（{t4 / t1 - 1:+.0%}），請求完成時間中位數 {e4:.1f} 秒對 {e1:.1f} 秒")
    if abs(t4 / t1 - 1) < 0.03:
        en += (f": the totals are equal because the fitted shared cost the simulator uses, "
               f"{first['shared_ms']:.3g} ms, is {first['shared_share']:.1%} of a one-sequence step, so "
               "four sequences cost four times one and, by this fit, slots on this machine only share "
               "the time out (the other measurements of the split in section 1 say how far that holds)")
        zh += (f"：總量相同，是因為模擬器用的擬合共用成本 {first['shared_ms']:.3g} ms 只占單一序列一步的 "
               f"{first['shared_share']:.1%}，四個序列就花四倍的時間；照這個擬合，這台機器上的槽位只是把時間"
               "分掉（第 1 節那幾種拆法的量測說明這一點成立到什麼程度）")
    elif t4 > t1:
        en += "; the total rose, and your single answer " + ("slowed" if e4 > e1 else "did not slow")
        zh += "；總量上升，你的單一回答" + ("變慢了" if e4 > e1 else "沒有變慢")
    return en + ".", zh + "。"


def busy_hours_a_month(result) -> float:
    """The busy hours a month of a simulated day (:func:`labkit.sim.simulate` of a day's
    requests): the seconds its steps took, summed, times the days of a 730-hour month."""
    return float(result.steps["dur_s"].sum() / 3600) * DAYS_PER_MONTH


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
