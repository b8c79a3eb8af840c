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
