"""A slot: one llama.cpp sequence id, and the request it is serving.

A slot is a seat at the table. Its ``tokens`` list mirrors exactly what the
KV cache holds for its sequence (position i holds tokens[i]); that mirror is
what makes prompt caching work: a new request that starts with the same tokens
only has to compute the rest.

A slot is in one of three states:

- ``IDLE``: no request. Its tokens stay cached (cache_prompt) for reuse.
- ``PREFILL``: its prompt is being read into the KV cache, one chunk per step.
- ``GENERATING``: each step feeds back the last sampled token and samples one more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

IDLE, PREFILL, GENERATING = "idle", "prefill", "generating"


@dataclass(eq=False)
class Slot:
    id: int
    n_ctx: int                      # n_ctx_slot: the most tokens this slot may hold
    tokens: list[int] = field(default_factory=list)   # what the KV cache holds
    state: str = IDLE
    t_last_used: float = -1.0       # for least-recently-used slot choice

    # the request being served (None when idle)
    request: object = None          # Request
    handle: object = None           # RequestHandle
    sampler: object = None          # Sampler
    text: object = None             # TextStream
    stop: object = None             # StopMatcher
    parts: list[str] = field(default_factory=list)    # released completion text
    sampled: int = -1               # last sampled token, fed back next step
    i_batch: int = -1               # where this slot's logits sit in the batch
    n_decoded: int = 0              # completion tokens sampled so far
    n_cached: int = 0               # prompt tokens reused from the cache
    n_prompt_done: int = 0          # prompt tokens computed for this request
    reserved: int = 0               # KV cells promised to this request (reserve mode)
    t_start: float = 0.0            # first step that worked on this request
    t_first: float = 0.0            # first token sampled
    t_last: float = 0.0             # latest token sampled

    @property
    def n_past(self) -> int:
        """Tokens of this sequence in the KV cache (the next position to write)."""
        return len(self.tokens)

    @property
    def busy(self) -> bool:
        return self.state != IDLE

    def prompt_left(self) -> int:
        """Prompt tokens still to compute."""
        return len(self.request.prompt) - len(self.tokens)

    def release(self, now: float) -> None:
        """Forget the request; keep the cached tokens."""
        if self.sampler is not None:
            self.sampler.close()
        self.state = IDLE
        self.t_last_used = now
        self.request = self.handle = self.sampler = self.text = self.stop = None
        self.parts = []
        self.sampled = self.i_batch = -1
        self.n_decoded = self.n_cached = self.n_prompt_done = self.reserved = 0
