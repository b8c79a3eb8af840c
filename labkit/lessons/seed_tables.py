"""The seed articles' tables, recomputed where the workbook can compute them.

:func:`why_batching_pays` puts seed 001's table ("why batching", a 7B model, one request
against a batch of 32) next to the same rows computed two ways: for an 8B Q4 model on an
RTX 4090 from the simulator's first-principles step cost (:func:`labkit.sim.preset`), and
for the embedded model on this machine from the roofline (:mod:`labkit.costs.roofline`: the
machine's measured memory bandwidth and arithmetic rate, the model's bytes and FLOPs from
its GGUF). The seed's percentages are utilisation a profiler would show; the roofline's
are the share of a step each side of it would be busy if the two overlapped perfectly, so
they are an upper bound, and a real step is slower.
"""

from __future__ import annotations

import math

#: Seed 001_027e2139b87c0d3a.txt, section 1 (為什麼需要批次處理): a 7B model, one request
#: against a batch of 32. Its cost rows are in dollars per token.
SEED_001_WHY_BATCH = {
    "arithmetic busy": (0.15, 0.85),
    "memory bandwidth busy": (0.30, 0.90),
    "tokens/s": (30.0, 600.0),
    "cost per token": (0.001, 0.00005),
}
SEED_001 = "001_027e2139b87c0d3a.txt"


def why_batching_pays(machine=None, model_cost=None, *, batch: int = 32, context: int = 512,
                      step_cost=None):
    """Seed 001's table and the same figures recomputed: one row per (source, batch size),
    columns: ``arithmetic busy`` and ``bandwidth busy`` (shares of a step), ``decode tok/s``
    (all sequences together) and ``cost per token`` (batch 1 = 1). Each sequence attends
    ``context`` cells.

    ``machine``/``model_cost``: :func:`labkit.costs.roofline.machine` and
    :func:`labkit.costs.roofline.model_cost` by default (this machine, the embedded model);
    ``step_cost``: the simulator's preset for an 8B Q4 model on an RTX 4090 by default."""
    import pandas as pd

    from ..costs import roofline
    from ..sim import preset
    m = machine or roofline.machine()
    c = model_cost or roofline.model_cost()
    who = "the embedded model" if model_cost is None else c.name
    sc = step_cost or preset("rtx4090", "8b-q4")
    seed = SEED_001_WHY_BATCH
    cols = {}
    cols[("seed 001: 7B on a GPU", 1)] = [seed["arithmetic busy"][0], seed["memory bandwidth busy"][0],
                                         seed["tokens/s"][0], 1.0]
    cols[("seed 001: 7B on a GPU", batch)] = [seed["arithmetic busy"][1], seed["memory bandwidth busy"][1],
                                             seed["tokens/s"][1],
                                             seed["cost per token"][1] / seed["cost per token"][0]]
    one = sc.decode_tok_s(1, context)
    for b in (1, batch):
        rate = sc.decode_tok_s(b, context)
        cols[(f"simulator: {sc.name}", b)] = [math.nan, math.nan, rate, one / rate]
    step1 = roofline.decode_step_seconds(m, c, 1, context)
    for b in (1, batch):
        moving, computing = roofline.step_times(m, c, tokens=b, logits=b, kv_cells=b * context,
                                                attention_cells=b * context)
        step = max(moving, computing)
        cols[(f"roofline: {who} on this machine", b)] = [computing / step, moving / step,
                                                           b / step, (step / b) / step1]
    df = pd.DataFrame(cols, index=["arithmetic busy", "bandwidth busy", "decode tok/s",
                                   "cost per token"])
    df.columns = pd.MultiIndex.from_tuples(df.columns, names=["source", "batch"])
    return df.T


#: Seed 001, section 1 (什麼時候該用批次？): each scenario, the seed's verdict and reason, in
#: English and in the seed's own words.
SEED_001_WHEN_TO_BATCH = {
    "offline batch work": (("very suitable", "非常適合"), ("no latency requirement", "沒有延遲要求")),
    "many similar requests": (("suitable", "適合"), ("batches efficiently", "批次效率高")),
    "real-time chat": (("with care", "需謹慎"), ("latency-sensitive", "延遲敏感")),
    "single interaction": (("not suitable", "不適合"), ("nothing else to batch with", "沒有其他請求可批次")),
}
SCENARIO_ZH = {"offline batch work": "離線批次處理", "many similar requests": "大量相似請求",
               "real-time chat": "即時對話", "single interaction": "單一互動"}

#: How many requests each scenario has at hand to decode together: an assumption, stated as one.
WHEN_TO_BATCH_SCENARIOS = {"offline batch work": 32, "many similar requests": 16,
                           "real-time chat": 8, "single interaction": 1}


def when_to_batch(step_cost=None, *, context: int = 512, prompt: int = 1000,
                  scenarios: dict | None = None):
    """Seed 001's when-to-batch table with the figures behind each row, from the simulator's
    step cost (the RTX 4090 / 8B Q4 preset by default): for each scenario's requests at hand
    (``scenarios``: name -> requests), the total decode tok/s against one request, each
    stream's tok/s, and how long every other stream's next token is held up when a new
    ``prompt``-token request joins a step (its prefill shares the step), in ms and in that
    stream's own tokens. A single interaction has nothing to gain; a chat gains throughput, but
    each arrival's prefill pauses every stream someone is reading. Words in the notebook's
    language (:func:`labkit.lang.i18n.pick`)."""
    import pandas as pd

    from ..lang.i18n import pick
    from ..sim import preset
    sc = step_cost or preset("rtx4090", "8b-q4")
    scen = scenarios or WHEN_TO_BATCH_SCENARIOS
    one = sc.decode_tok_s(1, context)
    rows, names = [], []
    for name, n in scen.items():
        total = sc.decode_tok_s(n, context)
        others = n - 1
        attended = others * (context + 1)
        pause = (sc.step_time(prompt, others, attended + prompt, prompt * prompt / 2)
                 - sc.step_time(0, others, attended)) if others else 0.0
        verdict, reason = SEED_001_WHEN_TO_BATCH.get(name, (("", ""), ("", "")))
        rows.append({"seed says": pick(*verdict), "seed's reason": pick(*reason),
                     "requests at hand": n, "total tok/s vs 1": total / one,
                     "tok/s per stream": total / n,
                     "others' pause when a prompt joins (ms)": pause * 1000,
                     "the pause, in each stream's tokens": pause * total / n})
        names.append(pick(name, SCENARIO_ZH.get(name, name)))
    return pd.DataFrame(rows, index=names)


#: The table's headings in Chinese, for ``nb.show``.
WHEN_TO_BATCH_ZH = {"seed says": "文章的判斷", "seed's reason": "文章的理由",
                    "requests at hand": "手上的請求數", "total tok/s vs 1": "總 tok/s 對 1 個請求",
                    "tok/s per stream": "每串流 tok/s",
                    "others' pause when a prompt joins (ms)": "新提示加入時其他串流停頓 (ms)",
                    "the pause, in each stream's tokens": "停頓折合每串流 token 數"}
TAIL_ZH = {"samples": "樣本數", "samples above the true P95 (mean)": "高於真實 P95 的樣本數（平均）",
           "chance none is above it": "沒有任何樣本高於它的機率",
           "sample P95 / true, 10th pct": "樣本 P95 ÷ 真實值，第 10 百分位",
           "sample P95 / true, 90th pct": "樣本 P95 ÷ 真實值，第 90 百分位"}


def tail_from_samples(ns=(12, 30, 59, 100, 300), q: float = 0.95, *, trials: int = 4000,
                      seed: int = 0, sigma: float = 0.5):
    """Why twelve samples are not a P95. For each sample count n: how many samples lie above
    the true ``q`` quantile on average (n (1 - q)); the chance that none does, so that even the
    slowest sample is under the true P95 (q ** n); and, over ``trials`` draws of n latencies
    from a lognormal (``sigma``), the spread of the P95 computed from the sample (numpy's
    linear interpolation) as a share of the true one (10th and 90th percentiles of that share).
    The first two columns hold for any continuous distribution; the third is one example."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    true = float(np.exp(sigma * _normal_quantile(q)))
    rows = {}
    for n in ns:
        draws = rng.lognormal(0.0, sigma, size=(trials, n))
        est = np.quantile(draws, q, axis=1) / true
        rows[n] = {"samples above the true P95 (mean)": n * (1 - q),
                   "chance none is above it": q ** n,
                   "sample P95 / true, 10th pct": float(np.quantile(est, 0.1)),
                   "sample P95 / true, 90th pct": float(np.quantile(est, 0.9))}
    df = pd.DataFrame(rows).T
    df.index.name = "samples"
    return df


def samples_for_a_tail(q: float = 0.95, confidence: float = 0.95) -> int:
    """The fewest samples whose largest exceeds the true ``q`` quantile with ``confidence``:
    the smallest n with 1 - q ** n >= confidence (59 for a P95 at 95 %)."""
    n = math.ceil(math.log(1 - confidence) / math.log(q))
    while 1 - q ** n < confidence:      # guard against rounding at the boundary
        n += 1
    return n


def _normal_quantile(p: float) -> float:
    from statistics import NormalDist
    return NormalDist().inv_cdf(p)
