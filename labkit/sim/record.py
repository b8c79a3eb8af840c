"""What a finished run hands over: its configuration and the raw rows it recorded.

The event loop (:mod:`.engine`) fills a :class:`SimRecord` as it runs; the result
tables (:mod:`.metrics`) are built from that record alone. The rows are plain
tuples, laid out as the ``*_FIELDS`` tuples below say, because a run of 100,000
requests appends millions of them and tuples are the cheapest thing to append.

Steps are recorded in *segments*: a run of ``k`` identical decode-only steps is one
row, its j-th step (0-based) starting ``elapsed(first, beta, j)`` seconds after the
segment began (:func:`elapsed`). A step with prompt work is a segment of one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cost import DEFAULT_COST, StepCost

#: One row per request that left the system (served, stopped, refused or failed).
REQUEST_FIELDS = ("id", "user", "priority", "arrival", "admitted", "first_token", "finish",
                  "preemptions", "status", "reason", "prompt_tokens", "output_tokens",
                  "generated", "cached_tokens", "slot", "prefix_id", "arrival_no")
#: One row per segment of identical steps. ``kv_used`` after step j (1-based) is
#: ``kv_before + kv_per_step * j``; for paged KV, ``slacks`` (one per decoding sequence)
#: give it in whole blocks instead (see :meth:`labkit.sim.kv.KVModel.grow`).
#: ``prefill_attn``: the step's prompt chunks' attention pairs, n (h + n/2) per chunk
#: (0 in decode-only segments; :mod:`labkit.sim.features`).
SEGMENT_FIELDS = ("step", "k", "t_start", "first_dur", "beta", "n_prefill_tokens",
                  "n_prefill_seqs", "n_decode", "attended", "kv_before", "kv_per_step",
                  "slacks", "n_busy", "prefill_attn", "attended_per_step", "held")
#: One row per (step, slot) that processed prompt tokens.
PREFILL_FIELDS = ("step", "slot", "n_tokens", "request_id")
#: One row per stretch of steps a request spent in a slot: ``hold`` from admission to
#: leaving, ``decode`` while it generated (first and last step inclusive).
SPAN_FIELDS = ("slot", "request_id", "kind", "first_step", "last_step")
#: One row per change of the waiting room: +1 a request joined, -1 one took a slot.
QUEUE_FIELDS = ("t", "delta")


def elapsed(first: float, beta: float, k):
    """Total time of k steps whose costs are first, first + beta, first + 2 beta, ...

    Works on ints and on numpy arrays alike; the engine and the step table both use
    it, so their times agree to the last bit.
    """
    return first * k + beta * (k * (k - 1) // 2)


@dataclass(frozen=True)
class SimConfig:
    """Everything that defines a run besides the workload (see :func:`labkit.sim.simulate`)."""

    slots: int = 4
    batching: str = "continuous"
    policy: str = "fifo"
    kv: str = "unlimited"
    cost: StepCost = field(default=DEFAULT_COST)
    n_batch: int = 2048
    batch_size: int | None = None
    max_wait: float = 0.05
    prefix_cache: bool = True

    def label(self) -> str:
        return f"{self.batching}/{self.policy}/{self.kv.split('(')[0]}/{self.slots} slots"


@dataclass
class SimRecord:
    """A finished run: its configuration, its KV model's size and the rows it recorded."""

    config: SimConfig
    kv_kind: str                  # "split", "unified", "paged" (KVModel.kind)
    kv_capacity: float            # cells in all (inf when unbounded)
    block_size: int | None        # cells per block, paged KV only
    end_time: float               # the clock when the last event was handled
    n_steps: int
    requests: list                # REQUEST_FIELDS rows, in the order requests left
    segments: list                # SEGMENT_FIELDS rows
    prefill_rows: list            # PREFILL_FIELDS rows
    spans: list                   # SPAN_FIELDS rows
    queue_events: list            # QUEUE_FIELDS rows
