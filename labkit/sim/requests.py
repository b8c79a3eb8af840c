"""Requests (the guests) and the length distributions that describe them.

A :class:`Request` is one guest walking into the restaurant: when they arrive,
how long their order is (``prompt_tokens``), how much they will want to hear back
(``output_tokens``), who they are (``user``), how important they are
(``priority``), and whether their order starts with a text many guests share
(``prefix_id`` / ``prefix_tokens``, e.g. a common system prompt).

The simulator never mutates a Request: all run-time state lives inside the
engine, so one workload can be replayed under many configurations.

Length distributions are small callables ``dist(rng, n) -> int array``; every
argument that asks for a length accepts an int (fixed), a ``(lo, hi)`` tuple
(uniform integers, both ends included) or one of the classes below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Union

import numpy as np


@dataclass(frozen=True, slots=True)
class Request:
    """One request, as the simulator sees it.

    Attributes:
        id: unique key (int or str) used in every result table.
        arrival: seconds since the start of the run.
        prompt_tokens: tokens the model must read before answering (prefill),
            including ``prefix_tokens``.
        output_tokens: tokens the request will generate if nothing stops it early.
        priority: larger means more important (used by the ``priority`` policy).
        user: who sent it (used by the ``fair`` policy and per-user reports).
        prefix_id: requests with the same id start with the same
            ``prefix_tokens`` tokens, which a prefix cache may reuse.
        prefix_tokens: length of that shared prefix (0 when there is none).
        expected_output: what a scheduler *believes* the output length is
            (shortest-job-first sorts on it); defaults to ``output_tokens``.
    """

    id: Hashable
    arrival: float
    prompt_tokens: int
    output_tokens: int
    priority: int = 0
    user: Hashable = "u0"
    prefix_id: Hashable | None = None
    prefix_tokens: int = 0
    expected_output: int | None = None

    def __post_init__(self):
        if self.prompt_tokens < 1:
            raise ValueError(f"request {self.id!r}: prompt_tokens must be >= 1")
        if self.output_tokens < 1:
            raise ValueError(f"request {self.id!r}: output_tokens must be >= 1")
        if self.arrival < 0 or self.arrival != self.arrival:
            raise ValueError(f"request {self.id!r}: arrival must be a time >= 0")
        if not 0 <= self.prefix_tokens <= self.prompt_tokens:
            raise ValueError(f"request {self.id!r}: prefix_tokens must lie in [0, prompt_tokens]")

    @property
    def expected(self) -> int:
        """The output length a scheduler may assume."""
        return self.output_tokens if self.expected_output is None else self.expected_output


# ----------------------------------------------------------------------------
# Length distributions
# ----------------------------------------------------------------------------

class Fixed:
    """Always the same length."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError("a length must be at least 1")
        self.n = int(n)

    def __call__(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.n, dtype=np.int64)

    def __repr__(self) -> str:
        return f"Fixed({self.n})"

    @property
    def mean(self) -> float:
        return float(self.n)


class Uniform:
    """Integers drawn uniformly from ``lo..hi`` (both included)."""

    def __init__(self, lo: int, hi: int):
        if not 1 <= lo <= hi:
            raise ValueError("need 1 <= lo <= hi")
        self.lo, self.hi = int(lo), int(hi)

    def __call__(self, rng, size):
        return rng.integers(self.lo, self.hi + 1, size=size, dtype=np.int64)

    def __repr__(self):
        return f"Uniform({self.lo}, {self.hi})"

    @property
    def mean(self) -> float:
        return (self.lo + self.hi) / 2


class Exponential:
    """Roughly exponential lengths with the given mean (a geometric draw), clipped to [lo, hi].

    Chat outputs look like this: many short answers, a long tail of long ones.
    """

    def __init__(self, mean: float, lo: int = 1, hi: int | None = None):
        if mean < 1:
            raise ValueError("mean must be >= 1")
        self._mean, self.lo, self.hi = float(mean), int(lo), hi

    def __call__(self, rng, size):
        x = rng.geometric(1.0 / self._mean, size=size).astype(np.int64)
        return np.clip(x, self.lo, self.hi if self.hi is not None else None)

    def __repr__(self):
        return f"Exponential(mean={self._mean:g})"

    @property
    def mean(self) -> float:
        return self._mean


class LogNormal:
    """Log-normal lengths around ``median`` with spread ``sigma``, clipped to [lo, hi]."""

    def __init__(self, median: float, sigma: float = 1.0, lo: int = 1, hi: int | None = None):
        self.median, self.sigma, self.lo, self.hi = float(median), float(sigma), int(lo), hi

    def __call__(self, rng, size):
        x = np.rint(rng.lognormal(np.log(self.median), self.sigma, size=size)).astype(np.int64)
        return np.clip(x, self.lo, self.hi if self.hi is not None else None)

    def __repr__(self):
        return f"LogNormal(median={self.median:g}, sigma={self.sigma:g})"

    @property
    def mean(self) -> float:
        return self.median * float(np.exp(self.sigma ** 2 / 2))


class Choice:
    """One of a few lengths, with optional weights: ``Choice([16, 1024], [0.8, 0.2])``."""

    def __init__(self, values, weights=None):
        self.values = np.asarray(values, dtype=np.int64)
        if self.values.min() < 1:
            raise ValueError("lengths must be at least 1")
        w = np.ones(len(self.values)) if weights is None else np.asarray(weights, dtype=float)
        self.weights = w / w.sum()

    def __call__(self, rng, size):
        return rng.choice(self.values, size=size, p=self.weights)

    def __repr__(self):
        return f"Choice({self.values.tolist()})"

    @property
    def mean(self) -> float:
        return float(self.values @ self.weights)


LengthLike = Union[int, tuple, Callable[[np.random.Generator, int], np.ndarray]]


def as_lengths(x: LengthLike):
    """Turn an int, a ``(lo, hi)`` tuple or a callable into a length distribution."""
    if isinstance(x, (int, np.integer)):
        return Fixed(int(x))
    if isinstance(x, tuple) and len(x) == 2:
        return Uniform(*x)
    if callable(x):
        return x
    raise TypeError(f"cannot use {x!r} as a length distribution")
