"""The step trace and the server counters: what the engine did, step by step.

Every llama_decode call appends one record: when it started and ended (seconds
since the engine started, ``time.perf_counter``), how many tokens it carried,
how many of those were prompt (prefill) tokens and how many were one-token
decodes, how much context the batch attended to, and how many KV cells were in
use afterwards, plus what each slot did. :meth:`Trace.steps_df` and
:meth:`Trace.slots_df` turn that into pandas tables; labkit.sim fits its cost
model on the first and draws the second as a Gantt chart.

The trace is a ring buffer: it keeps the last :data:`MAX_STEPS` steps, and fewer when many
slots work at once (at most :data:`MAX_ACTIONS` slot entries), so that a server that runs
for days holds a few MB of it, not an ever larger share of its memory. A step costs about
300 bytes plus about 80 per busy slot (20 000 steps of 4 busy slots: 12 MB, measured with
tracemalloc), so the whole trace stays under about 15 MB however many slots there are. A
measured run (a benchmark's, a lesson's) is a few thousand steps at most; a client that wants
a longer record reads ``GET /trace?since=STEP`` as it goes.
"""

from __future__ import annotations

import threading
from collections import deque

STEP_COLUMNS = ["step", "t_start", "t_end", "dur_s", "n_tokens", "n_prefill_tokens",
                "n_prefill_seqs", "n_decode", "attended", "kv_used", "n_busy"]
SLOT_COLUMNS = ["step", "t_start", "t_end", "slot", "action", "n_tokens", "request_id"]

MAX_STEPS = 20_000      # the steps the trace keeps (12 MB with 4 busy slots)
MAX_ACTIONS = 80_000    # and the (step, busy slot) entries: 20 000 steps of 4 busy slots


class Trace:
    """A bounded record of the last llama_decode calls: at most ``max_steps`` of them, and
    fewer when their slot entries would pass ``max_actions`` (the oldest go first).

    A record is a tuple ``(step, t_start, t_end, n_tokens, n_prefill_tokens,
    n_prefill_seqs, n_decode, attended, kv_used, n_busy, actions)`` where
    ``actions`` lists ``(slot, action, n_tokens, request_id)`` for the slots
    that had tokens in the batch; every other slot was idle for that call.
    Only successful calls are recorded; failed ones (KV pool exhausted) are
    counted in the metrics instead. ``n_steps`` counts every call recorded, kept or not:
    step numbers go on from there after old records are dropped.
    """

    def __init__(self, n_slots: int, max_steps: int = MAX_STEPS, max_actions: int = MAX_ACTIONS):
        if max_steps < 1 or max_actions < 1:
            raise ValueError("the trace must keep at least one step")
        self.n_slots, self.max_steps, self.max_actions = n_slots, max_steps, max_actions
        self._records: deque = deque()
        self._n_actions = 0     # the slot entries of the records kept
        self._lock = threading.Lock()
        self.n_steps = 0

    def add(self, t_start: float, t_end: float, n_tokens: int, n_prefill_tokens: int,
            n_prefill_seqs: int, n_decode: int, attended: int, kv_used: int, n_busy: int,
            actions: tuple[tuple[int, str, int, int], ...]) -> None:
        with self._lock:
            self._records.append((self.n_steps, t_start, t_end, n_tokens, n_prefill_tokens,
                                  n_prefill_seqs, n_decode, attended, kv_used, n_busy, actions))
            self._n_actions += len(actions)
            self.n_steps += 1
            while len(self._records) > 1 and (len(self._records) > self.max_steps
                                              or self._n_actions > self.max_actions):
                self._n_actions -= len(self._records.popleft()[10])

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self._n_actions = 0

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
