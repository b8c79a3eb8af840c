"""What a run produced: per-request results, the step trace, and the summary numbers.

:class:`SimResult` is what :func:`labkit.sim.simulate` returns:

- ``result.requests``: one row per request (times in seconds since the run began):
  ``id, user, priority, arrival, admitted, first_token, finish, ttft, tpot, e2e,
  queue_wait, preemptions, status, reason, prompt_tokens, output_tokens, generated,
  cached_tokens, slot, prefix_id, starved``. ``status`` is ``ok``, ``length`` (stopped
  early: the sequence's context was full), ``refused`` (could never fit) or
  ``failed`` (the KV pool ran out). TPOT is the mean gap between output tokens after
  the first; ``queue_wait`` runs from arrival to the first admission into a slot.
- ``result.steps``: one row per simulated step, in the same schema as the slot
  engine's trace (``step, t_start, t_end, dur_s, n_tokens, n_prefill_tokens,
  n_prefill_seqs, n_decode, attended, kv_used``) plus ``n_busy`` (slots holding a
  request), ``prefill_attn`` (the prompt chunks' attention pairs, :mod:`.features`)
  and, for paged KV, ``kv_blocks``. :func:`labkit.sim.fit` accepts it.
- ``result.slot_table()``: the long form, one row per (step, slot):
  ``step, t_start, t_end, slot, action, n_tokens, request_id`` with action
  ``prefill``, ``decode`` or ``idle``. The Gantt plot draws it (and the engine's).
- ``result.summary()``: throughput, latency percentiles, goodput under SLOs,
  occupancy, KV and queue peaks.
- ``result.queue_depth()``, ``result.kv_use()``: time series for plots.
- ``result.by("user")``: per-user (or per-priority) waits and service, with a
  ``starved`` count, so a policy's unfairness is visible.
- ``result.record``: the :class:`labkit.sim.record.SimRecord` the simulator handed
  over, the raw rows every table above is built from.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import pandas as pd

from .record import QUEUE_FIELDS, REQUEST_FIELDS, SimRecord, elapsed

REQUEST_COLUMNS = ["id", "user", "priority", "arrival", "admitted", "first_token", "finish",
                   "ttft", "tpot", "e2e", "queue_wait", "preemptions", "status", "reason",
                   "prompt_tokens", "output_tokens", "generated", "cached_tokens", "slot",
                   "prefix_id", "starved"]
STEP_COLUMNS = ["step", "t_start", "t_end", "dur_s", "n_tokens", "n_prefill_tokens",
                "n_prefill_seqs", "n_decode", "attended", "kv_used", "n_busy", "prefill_attn", "held"]
SLOT_COLUMNS = ["step", "t_start", "t_end", "slot", "action", "n_tokens", "request_id"]
ACTIONS = np.array(["idle", "prefill", "decode"], dtype=object)

#: A request is flagged ``starved`` when its queue wait exceeds this many times the
#: larger of (the run's median queue wait, the mean time a served request spends in
#: its slot). Ordinary queueing, where everyone waits about as long, is not flagged;
#: being passed over again and again (shortest-job-first's long jobs, low
#: priorities) is. Pass ``starvation_s`` to :meth:`SimResult.by` for a fixed limit.
STARVATION_FACTOR = 10.0


def _pct(x: pd.Series, q: float) -> float:
    x = x.dropna()
    return float(x.quantile(q)) if len(x) else math.nan


class SimResult:
    """The outcome of one :func:`labkit.sim.simulate` run (see the module docstring)."""

    def __init__(self, record: SimRecord):
        self.record = record
        self.config = record.config
        self.n_slots = record.config.slots
        self.kv_kind = record.kv_kind
        self.kv_capacity = record.kv_capacity
        self.block_size = record.block_size
        self.end_time = record.end_time
        self.n_steps = record.n_steps
        self.requests = self._requests_frame(record.requests)

    # ------------------------------------------------------------- requests
    def _requests_frame(self, rows) -> pd.DataFrame:
        df = pd.DataFrame(rows, columns=list(REQUEST_FIELDS))
        for c in ("admitted", "first_token", "finish"):
            df[c] = df[c].astype(float)
        df["ttft"] = df["first_token"] - df["arrival"]
        df["e2e"] = df["finish"] - df["arrival"]
        df["queue_wait"] = df["admitted"] - df["arrival"]
        gaps = (df["generated"] - 1).where(df["generated"] > 1)
        df["tpot"] = (df["finish"] - df["first_token"]) / gaps
        served = df["status"].isin(["ok", "length"])
        service = (df["finish"] - df["admitted"])[served].mean() if served.any() else math.nan
        self.starvation_s = STARVATION_FACTOR * np.nanmax([df["queue_wait"].median(), service, 0.0])
        df["starved"] = (df["queue_wait"] > self.starvation_s).fillna(False)
        df = df.sort_values("arrival_no")[REQUEST_COLUMNS].reset_index(drop=True)   # arrival order
        return df

    # ---------------------------------------------------------------- steps
    @cached_property
    def steps(self) -> pd.DataFrame:
        """One row per step (the engine's trace schema)."""
        segments = self.record.segments
        if not segments:
            return pd.DataFrame(columns=STEP_COLUMNS)
        cols = list(zip(*segments))
        step0, k, t0, first, beta = (np.asarray(c) for c in cols[:5])
        n_pre, n_pre_seqs, n_dec, att, kv0, kv_inc = (np.asarray(c, dtype=np.int64) for c in cols[5:11])
        slacks, n_busy = cols[11], np.asarray(cols[12], dtype=np.int64)
        pairs = np.asarray(cols[13], dtype=float)
        att_inc = np.asarray(cols[14], dtype=np.int64)
        held = np.asarray(cols[15], dtype=np.int64)
        k = k.astype(np.int64)
        idx = np.repeat(np.arange(len(k)), k)
        offsets = np.cumsum(k) - k
        j = np.arange(int(k.sum()), dtype=np.int64) - offsets[idx]
        t_start = t0[idx] + elapsed(first[idx], beta[idx], j)
        t_end = t0[idx] + elapsed(first[idx], beta[idx], j + 1)
        kv_used = kv0[idx] + kv_inc[idx] * (j + 1)
        if self.block_size:
            B = self.block_size
            for s, sl in enumerate(slacks):
                if sl:
                    J = np.arange(1, k[s] + 1, dtype=np.int64)[:, None]
                    S = np.asarray(sl, dtype=np.int64)[None, :]
                    grow = np.where(J > S, -((S - J) // B), 0).sum(axis=1)
                    kv_used[offsets[s]:offsets[s] + k[s]] = kv0[s] + B * grow
        df = pd.DataFrame({
            "step": step0[idx] + j,
            "t_start": t_start,
            "t_end": t_end,
            "dur_s": t_end - t_start,
            "n_tokens": n_pre[idx] + n_dec[idx],
            "n_prefill_tokens": n_pre[idx],
            "n_prefill_seqs": n_pre_seqs[idx],
            "n_decode": n_dec[idx],
            "attended": att[idx] + att_inc[idx] * j,
            "kv_used": kv_used,
            "n_busy": n_busy[idx],
            "prefill_attn": pairs[idx],
            # the sequences' own cells (equal to attended but with a unified pool, where each
            # querying sequence attends over every used cell)
            "held": held[idx] + n_dec[idx] * j,
        })
        if self.block_size:
            df["kv_blocks"] = df["kv_used"] // self.block_size
        return df

    def slot_table(self, steps: tuple | None = None, max_rows: int = 2_000_000) -> pd.DataFrame:
        """Long form: one row per (step, slot) with action prefill / decode / idle.

        ``request_id`` is the request holding the slot (also on idle rows where a
        request holds the slot but did no work that step), or None.
        ``steps=(first, last)`` builds only that window (inclusive), which keeps
        big runs cheap.
        """
        lo, hi = (0, self.n_steps - 1) if steps is None else (max(0, steps[0]), min(steps[1], self.n_steps - 1))
        n, m = max(hi - lo + 1, 0), self.n_slots
        if n * m > max_rows:
            raise ValueError(f"{n} steps x {m} slots = {n * m} rows; pass steps=(first, last) "
                             f"or raise max_rows")
        action = np.zeros((n, m), dtype=np.int8)
        ntok = np.zeros((n, m), dtype=np.int64)
        rid = np.full((n, m), None, dtype=object)
        spans = self.record.spans
        for slot, r, kind, a, b in spans:
            if kind == "hold" and a <= hi and b >= lo:
                rid[max(a, lo) - lo:min(b, hi) - lo + 1, slot] = r
        for slot, r, kind, a, b in spans:
            if kind == "decode" and a <= hi and b >= lo:
                action[max(a, lo) - lo:min(b, hi) - lo + 1, slot] = 2
                ntok[max(a, lo) - lo:min(b, hi) - lo + 1, slot] = 1
        for step, slot, tokens, r in self.record.prefill_rows:
            if lo <= step <= hi:
                action[step - lo, slot] = 1
                ntok[step - lo, slot] = tokens
        st = self.steps.iloc[lo:hi + 1]
        return pd.DataFrame({
            "step": np.repeat(st["step"].to_numpy(), m),
            "t_start": np.repeat(st["t_start"].to_numpy(), m),
            "t_end": np.repeat(st["t_end"].to_numpy(), m),
            "slot": np.tile(np.arange(m), n),
            "action": ACTIONS[action.ravel()],
            "n_tokens": ntok.ravel(),
            "request_id": rid.ravel(),
        })

    # ----------------------------------------------------------- time series
    def queue_depth(self) -> pd.DataFrame:
        """Requests waiting for a slot over time (after all changes at each instant)."""
        events = self.record.queue_events
        if not events:
            return pd.DataFrame({"t": [0.0], "queue_depth": [0]})
        ev = pd.DataFrame(events, columns=list(QUEUE_FIELDS))
        ev = ev.sort_values("t", kind="stable")
        ev["queue_depth"] = ev["delta"].cumsum()
        out = ev.groupby("t", sort=True)["queue_depth"].last().reset_index()
        return out

    def kv_use(self) -> pd.DataFrame:
        """KV cells in use at the end of every step (and the fraction of capacity)."""
        st = self.steps
        df = pd.DataFrame({"t": st["t_end"], "kv_used": st["kv_used"]})
        if math.isfinite(self.kv_capacity):
            df["kv_frac"] = df["kv_used"] / self.kv_capacity
        return df

    # --------------------------------------------------------------- summary
    def summary(self, ttft_slo: float | None = None, tpot_slo: float | None = None) -> dict:
        """Headline numbers. Goodput counts served requests that meet both SLOs (seconds)."""
        df = self.requests
        served = df["status"].isin(["ok", "length"])
        t_first = df["arrival"].min() if len(df) else 0.0
        t_last = df["finish"].max() if len(df) else 0.0
        span = t_last - t_first if len(df) else 0.0
        tokens = float(df.loc[served, "generated"].sum())
        good = served.copy()
        if ttft_slo is not None:
            good &= df["ttft"] <= ttft_slo
        if tpot_slo is not None:
            good &= df["tpot"].fillna(0) <= tpot_slo
        st = self.steps
        dec = st["n_decode"] > 0
        busy_time = float((st["n_busy"] * st["dur_s"]).sum())
        qd = self.queue_depth()
        rate = lambda x: x / span if span > 0 else math.nan
        return {
            "label": self.config.label(),
            "requests": len(df),
            "ok": int((df["status"] == "ok").sum()),
            "length": int((df["status"] == "length").sum()),
            "refused": int((df["status"] == "refused").sum()),
            "failed": int((df["status"] == "failed").sum()),
            "preemptions": int(df["preemptions"].sum()),
            "duration_s": span,
            "throughput_tok_s": rate(tokens),
            "requests_per_s": rate(float(served.sum())),
            "ttft_p50": _pct(df["ttft"], 0.5),
            "ttft_p90": _pct(df["ttft"], 0.9),
            "ttft_p99": _pct(df["ttft"], 0.99),
            "tpot_p50": _pct(df["tpot"], 0.5),
            "tpot_p90": _pct(df["tpot"], 0.9),
            "e2e_mean": float(df.loc[served, "e2e"].mean()) if served.any() else math.nan,
            "e2e_p50": _pct(df.loc[served, "e2e"], 0.5),
            "e2e_p99": _pct(df.loc[served, "e2e"], 0.99),
            "queue_wait_mean": float(df["queue_wait"].mean()) if served.any() else math.nan,
            "queue_wait_max": float(df["queue_wait"].max()) if served.any() else math.nan,
            "starved": int(df["starved"].sum()),
            "goodput_req_s": rate(float(good.sum())),
            "goodput_tok_s": rate(float(df.loc[good, "generated"].sum())),
            "slo_attainment": float(good.sum()) / len(df) if len(df) else math.nan,
            "steps": self.n_steps,
            "mean_decode_batch": float(st.loc[dec, "n_decode"].mean()) if dec.any() else 0.0,
            "slot_occupancy": busy_time / (self.n_slots * span) if span > 0 else math.nan,
            "peak_queue": int(qd["queue_depth"].max()),
            "peak_kv": int(st["kv_used"].max()) if len(st) else 0,
            "kv_capacity": self.kv_capacity,
        }

    def by(self, key: str = "user", starvation_s: float | None = None) -> pd.DataFrame:
        """Per ``user`` (or ``priority``, ``prefix_id``...) waits and service, to spot starvation.

        ``starved`` counts requests whose queue wait exceeded ``starvation_s``
        (default: the run's threshold, ``self.starvation_s``).
        """
        df = self.requests
        if starvation_s is not None:
            df = df.assign(starved=(df["queue_wait"] > starvation_s).fillna(False))
        g = df.groupby(key, sort=True)
        out = pd.DataFrame({
            "requests": g.size(),
            "served": g["status"].apply(lambda s: int(s.isin(["ok", "length"]).sum())),
            "tokens": g["generated"].sum(),
            "queue_wait_mean": g["queue_wait"].mean(),
            "queue_wait_max": g["queue_wait"].max(),
            "ttft_p50": g["ttft"].median(),
            "e2e_mean": g["e2e"].mean(),
            "starved": g["starved"].sum().astype(int),
        })
        return out

    def __repr__(self):
        s = self.summary()
        return (f"SimResult({s['label']}: {s['requests']} requests, {s['ok']} ok, "
                f"{s['throughput_tok_s']:.1f} tok/s, TTFT p50 {s['ttft_p50']:.3f}s, "
                f"e2e mean {s['e2e_mean']:.3f}s)")
