"""The step trace and the server counters: what the engine did, step by step.

Every llama_decode call appends one record: when it started and ended (seconds
since the engine started, ``time.perf_counter``), how many tokens it carried,
how many of those were prompt (prefill) tokens and how many were one-token
decodes, how much context the batch attended to, and how many KV cells were in
use afterwards, plus what each slot did. :meth:`Trace.steps_df` and
:meth:`Trace.slots_df` turn that into pandas tables; labkit.sim fits its cost
model on the first and draws the second as a Gantt chart.
"""

from __future__ import annotations

import threading
from collections import deque

STEP_COLUMNS = ["step", "t_start", "t_end", "dur_s", "n_tokens", "n_prefill_tokens",
                "n_prefill_seqs", "n_decode", "attended", "kv_used", "n_busy"]
SLOT_COLUMNS = ["step", "t_start", "t_end", "slot", "action", "n_tokens", "request_id"]


class Trace:
    """A bounded record of the last ``maxlen`` llama_decode calls.

    A record is a tuple ``(step, t_start, t_end, n_tokens, n_prefill_tokens,
    n_prefill_seqs, n_decode, attended, kv_used, n_busy, actions)`` where
    ``actions`` lists ``(slot, action, n_tokens, request_id)`` for the slots
    that had tokens in the batch; every other slot was idle for that call.
    Only successful calls are recorded; failed ones (KV pool exhausted) are
    counted in the metrics instead.
    """

    def __init__(self, n_slots: int, maxlen: int = 100_000):
        self.n_slots = n_slots
        self._records: deque = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self.n_steps = 0

    def add(self, t_start: float, t_end: float, n_tokens: int, n_prefill_tokens: int,
            n_prefill_seqs: int, n_decode: int, attended: int, kv_used: int, n_busy: int,
            actions: tuple[tuple[int, str, int, int], ...]) -> None:
        with self._lock:
            self._records.append((self.n_steps, t_start, t_end, n_tokens, n_prefill_tokens,
                                  n_prefill_seqs, n_decode, attended, kv_used, n_busy, actions))
            self.n_steps += 1

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def records(self) -> list[tuple]:
        with self._lock:
            return list(self._records)

    def steps_df(self):
        """One row per llama_decode (columns: :data:`STEP_COLUMNS`)."""
        import pandas as pd
        rows = [(r[0], r[1], r[2], r[2] - r[1], *r[3:10]) for r in self.records()]
        return pd.DataFrame(rows, columns=STEP_COLUMNS)

    def slots_df(self):
        """One row per (llama_decode, slot) (columns: :data:`SLOT_COLUMNS`)."""
        import pandas as pd
        rows = []
        for r in self.records():
            step, t0, t1, acts = r[0], r[1], r[2], r[10]
            by_slot = {a[0]: a for a in acts}
            for sid in range(self.n_slots):
                a = by_slot.get(sid)
                if a is None:
                    rows.append((step, t0, t1, sid, "idle", 0, None))
                else:
                    rows.append((step, t0, t1, sid, a[1], a[2], a[3]))
        df = pd.DataFrame(rows, columns=SLOT_COLUMNS)
        df["request_id"] = df["request_id"].astype("Int64")
        return df


class Metrics:
    """llama-server's /metrics counters (the names after the ``llamacpp:`` prefix)."""

    def __init__(self):
        self.prompt_tokens_total = 0
        self.prompt_seconds_total = 0.0
        self.tokens_predicted_total = 0
        self.tokens_predicted_seconds_total = 0.0
        self.n_decode_total = 0
        self.n_busy_slots_total = 0
        self.n_decode_failed_total = 0
        self.requests_finished_total = 0

    def on_decode(self, n_busy: int) -> None:
        self.n_decode_total += 1
        self.n_busy_slots_total += n_busy

    def on_prompt_done(self, n_tokens: int, seconds: float) -> None:
        self.prompt_tokens_total += n_tokens
        self.prompt_seconds_total += seconds

    def on_finished(self, n_predicted: int, seconds: float, completed: bool = True) -> None:
        """A request left its slot. Its tokens count whatever ended it (a cancelled or failed
        request's too, as in llama-server); ``requests_finished_total`` counts the requests
        that ran to their end (stop or length)."""
        self.tokens_predicted_total += n_predicted
        self.tokens_predicted_seconds_total += seconds
        self.requests_finished_total += completed

    def snapshot(self, requests_processing: int, requests_deferred: int) -> dict:
        def rate(n, s):
            return n / s if s > 0 else 0.0
        return {
            "prompt_tokens_total": self.prompt_tokens_total,
            "prompt_seconds_total": self.prompt_seconds_total,
            "tokens_predicted_total": self.tokens_predicted_total,
            "tokens_predicted_seconds_total": self.tokens_predicted_seconds_total,
            "n_decode_total": self.n_decode_total,
            "n_busy_slots_per_decode": rate(self.n_busy_slots_total, self.n_decode_total),
            "prompt_tokens_seconds": rate(self.prompt_tokens_total, self.prompt_seconds_total),
            "predicted_tokens_seconds": rate(self.tokens_predicted_total,
                                             self.tokens_predicted_seconds_total),
            "requests_processing": requests_processing,
            "requests_deferred": requests_deferred,
            "n_decode_failed_total": self.n_decode_failed_total,
            "requests_finished_total": self.requests_finished_total,
        }
