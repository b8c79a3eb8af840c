"""A slot: one llama.cpp sequence id, and the request it is serving.

A slot is a seat at the table. Its ``tokens`` list mirrors exactly what the
KV cache holds for its sequence (position i holds tokens[i]); that mirror is
what makes prompt caching work: a new request that starts with the same tokens
only has to compute the rest.

A slot is in one of three states, and only its three methods move it:

- ``IDLE``: no request. Its tokens stay cached (cache_prompt) for reuse.
  :meth:`Slot.start` takes a request: ``IDLE -> PREFILL``.
- ``PREFILL``: its prompt is being read into the KV cache, one chunk per step.
  :meth:`Slot.prompt_done` (the first token is sampled): ``PREFILL -> GENERATING``.
- ``GENERATING``: each step feeds back the last sampled token and samples one more.
  :meth:`Slot.free` (the request ended, in either busy state): ``-> IDLE``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .request import Timings
from .sampling import StopMatcher, TextStream

if TYPE_CHECKING:
    from .request import Request, RequestHandle
    from .sampling import Sampler

SlotState = Literal["idle", "prefill", "generating"]
IDLE: SlotState = "idle"
PREFILL: SlotState = "prefill"
GENERATING: SlotState = "generating"


@dataclass(eq=False)
class Slot:
    id: int
    n_ctx: int                      # n_ctx_slot: the most tokens this slot may hold
    tokens: list[int] = field(default_factory=list)   # what the KV cache holds
    state: SlotState = IDLE
    t_last_used: float = -1.0       # for least-recently-used slot choice

    # the request being served (None when idle)
    request: Request | None = None
    handle: RequestHandle | None = None
    sampler: Sampler | None = None
    text: TextStream | None = None  # None after a stop string: nothing more is sent
    stop: StopMatcher | None = None
    parts: list[str] = field(default_factory=list)    # released completion text
    probs: list[dict] = field(default_factory=list)   # token probabilities, when asked
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
    def busy(self) -> bool:
        return self.state != IDLE

    def prompt_left(self) -> int:
        """Prompt tokens still to compute."""
        return len(self.request.prompt) - len(self.tokens)

    # ------------------------------------------------------------------ transitions

    def start(self, request: Request, handle: RequestHandle, sampler: Sampler,
              n_cached: int, reserved: int = 0) -> None:
        """IDLE -> PREFILL: serve ``request``; the KV holds its first ``n_cached`` tokens."""
        if self.state != IDLE:
            raise RuntimeError(f"slot {self.id} is {self.state}; only an idle slot takes a request")
        if n_cached != len(self.tokens):
            raise ValueError(f"slot {self.id} holds {len(self.tokens)} tokens, not the "
                             f"{n_cached} cached ones; trim the KV cache first")
        stops = request.params.stop
        self.request, self.handle, self.sampler = request, handle, sampler
        self.text = TextStream()
        self.stop = StopMatcher(stops) if stops else None
        self.n_cached = n_cached
        self.reserved = reserved
        self.t_start = self.t_first = self.t_last = 0.0
        self.state = PREFILL

    def prompt_done(self, now: float) -> None:
        """PREFILL -> GENERATING: the first token was sampled at ``now``."""
        if self.state != PREFILL:
            raise RuntimeError(f"slot {self.id} is {self.state}, not reading a prompt")
        self.t_first = now
        self.state = GENERATING

    def free(self, now: float) -> None:
        """-> IDLE: forget the request and close its sampler; keep the cached tokens."""
        if self.state == IDLE:
            raise RuntimeError(f"slot {self.id} is already idle")
        if self.sampler is not None:
            self.sampler.close()
        self.state = IDLE
        self.t_last_used = now
        self.request = self.handle = self.sampler = self.text = self.stop = None
        self.parts, self.probs = [], []
        self.sampled = self.i_batch = -1
        self.n_decoded = self.n_cached = self.n_prompt_done = self.reserved = 0

    # ------------------------------------------------------------------ text and figures

    def push_text(self, piece: bytes) -> tuple[str, bool]:
        """Add one token's bytes; returns the text now safe to send, and whether a stop matched."""
        text = self.text.push(piece)
        hit = False
        if self.stop is not None:
            text, hit = self.stop.push(text)
        if text:
            self.parts.append(text)
        if hit:
            self.text = None  # nothing after a stop string is ever sent
        return text, hit

    @property
    def text_pending(self) -> bool:
        """Whether the last token ended in the middle of a character (its text waits)."""
        return self.text is not None and self.text.pending

    def flush_text(self) -> tuple[str, bytes]:
        """At the end: the text held back as a possible stop-string prefix (now released),
        and the bytes of a character the generation ended in the middle of (never released)."""
        partial = self.text.flush() if self.text is not None else b""
        tail = self.stop.flush() if self.stop is not None else ""
        if tail:
            self.parts.append(tail)
        return tail, partial

    @property
    def stop_word(self) -> str:
        """The stop string that ended the text ('' if none did)."""
        return self.stop.matched if self.stop is not None else ""

    def completion(self) -> str:
        """All the text sent for this request so far."""
        return "".join(self.parts)

    def timings(self, now: float) -> Timings:
        """This request's prompt and generation times, as of ``now``."""
        prompt_ms = ((self.t_first or now) - (self.t_start or now)) * 1e3
        predicted_ms = max(1e-3, (self.t_last - self.t_first) * 1e3) if self.n_decoded else 0.0
        return Timings(self.n_cached, self.n_prompt_done, prompt_ms, self.n_decoded, predicted_ms)
