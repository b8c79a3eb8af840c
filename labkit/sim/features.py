"""What the step-cost model reads off a step trace: the prompt tokens' attention work.

One step's cost depends on how much attention it computes. A decode token attends to every
cell its sequence holds: the trace's ``attended`` column adds those up. A prompt chunk of
``n`` tokens whose sequence already holds ``h`` cells is different: its first token attends
``h + 1`` cells, its last ``h + n``, so the chunk computes about

    n x (h + n / 2)        (query, key) pairs, its *prefill attention*

which grows with the square of the prompt. A whole prompt of P tokens in one chunk costs
P x P / 2 pairs; the same prompt in chunks adds up to the same total.

The engine's step trace counts tokens and cells per step, not per chunk, so ``h`` must be
recovered. :func:`prefill_attention` does it exactly from the engine's *slot* trace (one
row per step and slot, ``GET /trace?kind=slots``), or approximately from the step trace
alone. The simulator's own ``res.steps`` carries the column already.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMN = "prefill_attn"


def chunk_pairs(n, held):
    """Prefill attention of a chunk of ``n`` prompt tokens after ``held`` cells: n (held + n/2)."""
    return n * (held + n / 2)


def prefill_attention(steps: pd.DataFrame, slots: pd.DataFrame | None = None) -> pd.Series:
    """The ``prefill_attn`` of every step of ``steps`` (aligned on its index).

    - ``steps`` already has the column (the simulator's steps, or a trace done before):
      returned as it is.
    - ``slots`` given (the engine's slot trace: ``step, slot, action, n_tokens,
      request_id``): exact. Each request's cells after a step are what it held when it
      entered its slot (a cached prefix; usually 0) plus the tokens it processed so far;
      that starting count is solved from the step trace's ``attended``, one request at a
      time (:func:`_starting_cells`).
    - neither: an estimate from the step rows alone. A step with prompt tokens and no
      decode tokens is exact when it carries one prompt chunk (the chunk held
      ``attended - n`` cells before it). In a step that also decodes, each decoding
      sequence is taken to hold what the decoding sequences held on average in the last
      decode-only step before it, plus the steps since; the rest of ``attended`` belongs to
      the prompt chunks, split evenly among them.
    """
    if COLUMN in steps.columns:
        return steps[COLUMN].astype(float)
    if len(steps) == 0:
        return pd.Series(np.zeros(0), index=steps.index, name=COLUMN)
    if slots is not None and len(slots):
        return _from_slots(steps, slots)
    return _from_steps(steps)


def with_prefill_attention(steps: pd.DataFrame, slots: pd.DataFrame | None = None) -> pd.DataFrame:
    """``steps`` with the ``prefill_attn`` column (a copy; see :func:`prefill_attention`)."""
    if COLUMN in steps.columns:
        return steps
    out = steps.copy()
    out[COLUMN] = prefill_attention(steps, slots).to_numpy()
    return out


def _from_steps(steps: pd.DataFrame) -> pd.Series:
    st = steps.sort_values("step") if "step" in steps.columns else steps
    n_pre = st["n_prefill_tokens"].to_numpy(dtype=float)
    n_seq = (st["n_prefill_seqs"].to_numpy(dtype=float) if "n_prefill_seqs" in st.columns
             else (n_pre > 0).astype(float))
    n_dec = st["n_decode"].to_numpy(dtype=float)
    att = st["attended"].to_numpy(dtype=float)
    out = np.zeros(len(st))
    per_dec, last_i = 0.0, None       # cells per decoding sequence in the last decode-only step
    for i in range(len(st)):
        if n_pre[i] <= 0:
            if n_dec[i] > 0:
                per_dec, last_i = att[i] / n_dec[i], i
            continue
        k = max(n_seq[i], 1.0)
        grown = per_dec + (i - last_i if last_i is not None else 0)
        pre_cells = max(att[i] - n_dec[i] * grown, n_pre[i])     # the chunks' cells after
        n = n_pre[i] / k
        held = max(pre_cells / k - n, 0.0)
        out[i] = k * chunk_pairs(n, held)
    return pd.Series(out, index=st.index, name=COLUMN).reindex(steps.index)


def _starting_cells(steps: pd.DataFrame, rows: pd.DataFrame) -> dict:
    """Cells each request held when it entered its slot, from ``attended``.

    Every step gives one equation: the sum over its requests of (starting cells + tokens
    processed so far) equals the step's ``attended``. A step where all requests but one are
    known fixes that one; repeat until nothing changes. Requests never fixed start at 0.
    """
    att = steps.set_index("step")["attended"].astype(float)
    by_step = {s: list(zip(g["request_id"], g["cum"])) for s, g in rows.groupby("step")}
    known: dict = {}
    changed = True
    while changed:
        changed = False
        for s, items in by_step.items():
            if s not in att.index:
                continue
            unknown = [r for r, _ in items if r not in known]
            if len(set(unknown)) != 1:
                continue
            rest = att[s] - sum(c for _, c in items) - sum(known[r] for r, _ in items if r in known)
            known[unknown[0]] = max(0.0, float(rest))
            changed = True
    return known


def _from_slots(steps: pd.DataFrame, slots: pd.DataFrame) -> pd.Series:
    rows = slots[slots["action"].isin(["prefill", "decode"])].copy()
    rows = rows.sort_values(["step", "slot"])
    rows["request_id"] = rows["request_id"].astype("int64")
    rows["n_tokens"] = rows["n_tokens"].astype("int64")
    rows["cum"] = rows.groupby("request_id")["n_tokens"].cumsum()
    start = _starting_cells(steps, rows)
    pre = rows[rows["action"] == "prefill"]
    held = pre["request_id"].map(start).fillna(0.0) + pre["cum"] - pre["n_tokens"]
    pairs = chunk_pairs(pre["n_tokens"].astype(float), held)
    per_step = pairs.groupby(pre["step"]).sum()
    out = steps["step"].map(per_step).fillna(0.0).astype(float)
    out.name = COLUMN
    return out
