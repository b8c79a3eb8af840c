"""Who gets the next free table: the waiting-room policies.

When a slot frees up, the scheduler picks one request from the waiting room.
The policy decides which:

- ``fifo``: first come, first served. Fair in order, but one long request
  blocks the short ones behind it.
- ``sjf``: shortest job first, by the *expected* output length. Lowest mean
  latency; long requests can wait forever under steady load (starvation).
- ``priority``: larger ``Request.priority`` first, then arrival order. Low
  priorities can starve.
- ``fair``: fair share between users, after the Virtual Token Counter (VTC) of
  Sheng et al., "Fairness in Serving Large Language Models" (OSDI 2024). Each user
  has a counter of service received (prompt tokens processed + ``output_weight`` x
  tokens generated); the next request comes from the waiting user with the
  smallest counter. A user who returns after being idle is lifted to the smallest
  counter among the users still waiting, so nobody can bank credit by staying away.

- a *key policy* (:func:`from_key`, :class:`KeyPolicy`): any function
  ``key(request, now) -> sortable`` (smallest first), evaluated again at every
  admission with the simulated time ``now``, so the order may change while requests
  wait. Aging (a request's claim grows with its wait) is written this way; so is the
  "hybrid" of sorting on several fields at once. :func:`make_policy` accepts such a
  function directly: ``simulate(reqs, policy=my_key)``.

Every policy has the same small interface: ``push``, ``peek``, ``pop``, ``len``,
iteration over the waiting requests, and ``charge`` (only ``fair`` uses it).
A request pushed with ``front=True`` (one that was preempted and must redo its
work) goes before everything else.
"""

from __future__ import annotations

import copy
import heapq
from collections import deque
from itertools import count

from .requests import Request


class Policy:
    """Base class. Subclasses keep the waiting room in whatever order suits them."""

    name = "base"
    #: True if the engine should report served tokens through :meth:`charge`.
    tracks_service = False
    #: The simulated time of the admission being decided; the engine sets it before each one,
    #: so a policy whose order changes with time (aging) can read the clock.
    now: float = 0.0

    def push(self, req: Request, now: float, front: bool = False) -> None:
        raise NotImplementedError

    def peek(self) -> Request:
        raise NotImplementedError

    def pop(self) -> Request:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self):
        raise NotImplementedError

    def charge(self, user, prompt_tokens: int = 0, output_tokens: int = 0) -> None:
        """Record service given to ``user`` (ignored unless :attr:`tracks_service`)."""

    def __repr__(self):
        return f"{type(self).__name__}()"


class FIFO(Policy):
    """First come, first served."""

    name = "fifo"

    def __init__(self):
        self._q: deque[Request] = deque()

    def push(self, req, now, front=False):
        if front:
            self._q.appendleft(req)
        else:
            self._q.append(req)

    def peek(self):
        return self._q[0]

    def pop(self):
        return self._q.popleft()

    def __len__(self):
        return len(self._q)

    def __iter__(self):
        return iter(self._q)


class _Keyed(Policy):
    """A waiting room ordered by a key (a heap); ties go to the earlier push."""

    def __init__(self):
        self._heap: list = []
        self._seq = count()

    def key(self, req: Request) -> tuple:
        raise NotImplementedError

    def push(self, req, now, front=False):
        heapq.heappush(self._heap, (0 if front else 1, self.key(req), next(self._seq), req))

    def peek(self):
        return self._heap[0][-1]

    def pop(self):
        return heapq.heappop(self._heap)[-1]

    def __len__(self):
        return len(self._heap)

    def __iter__(self):
        return (e[-1] for e in self._heap)


class SJF(_Keyed):
    """Shortest (expected) job first; equal lengths in arrival order."""

    name = "sjf"

    def key(self, req):
        return (req.expected, req.arrival)


class PriorityFirst(_Keyed):
    """Highest ``priority`` first; equal priorities in arrival order."""

    name = "priority"

    def key(self, req):
        return (-req.priority, req.arrival)


class FairShare(Policy):
    """Virtual Token Counter fair sharing between users (Sheng et al., OSDI 2024).

    ``counters[user]`` grows by ``prompt_weight`` per prompt token and
    ``output_weight`` per generated token served to that user. The waiting user with
    the smallest counter is served next (ties: the user whose oldest waiting
    request arrived first). Each user's own requests stay in arrival order.
    """

    name = "fair"
    tracks_service = True

    def __init__(self, prompt_weight: float = 1.0, output_weight: float = 2.0):
        self.prompt_weight, self.output_weight = prompt_weight, output_weight
        self.counters: dict = {}
        self._queues: dict = {}       # user -> deque of waiting requests
        self._n = 0

    def push(self, req, now, front=False):
        u = req.user
        q = self._queues.get(u)
        if not q:
            # A user (re)joining the waiting room is lifted to the least-served
            # backlogged user, so idle time does not turn into banked credit.
            backlogged = [self.counters.get(v, 0.0) for v, qq in self._queues.items() if qq]
            c = self.counters.get(u, 0.0)
            if backlogged:
                c = max(c, min(backlogged))
            self.counters[u] = c
            q = self._queues[u] = deque()
        if front:
            q.appendleft(req)
        else:
            q.append(req)
        self._n += 1

    def _next_user(self):
        best, best_key = None, None
        for u, q in self._queues.items():
            if q:
                k = (self.counters.get(u, 0.0), q[0].arrival)
                if best_key is None or k < best_key:
                    best, best_key = u, k
        return best

    def peek(self):
        return self._queues[self._next_user()][0]

    def pop(self):
        self._n -= 1
        return self._queues[self._next_user()].popleft()

    def __len__(self):
        return self._n

    def __iter__(self):
        for q in self._queues.values():
            yield from q

    def charge(self, user, prompt_tokens=0, output_tokens=0):
        self.counters[user] = (self.counters.get(user, 0.0)
                               + self.prompt_weight * prompt_tokens
                               + self.output_weight * output_tokens)


class KeyPolicy(Policy):
    """The waiting request with the smallest ``key(request, now)`` goes first.

    Unlike SJF and priority, whose keys are fixed when a request joins the queue, the key
    is computed again at every admission, with ``now`` the simulated time of that admission
    (:attr:`Policy.now`, set by the engine), so ``now - request.arrival`` is how long the
    request has waited so far. Ties go to the earlier push; preempted requests
    (``front=True``) go before the rest. Picking scans the waiting room, O(waiting) per
    admission, which suits lessons and small what-ifs rather than 100,000-request runs.
    """

    def __init__(self, key, name: str | None = None):
        if not callable(key):
            raise TypeError(f"key must be a function key(request, now), got {type(key).__name__}")
        self.key = key
        self.name = name or getattr(key, "__name__", "key")
        if self.name == "<lambda>":
            self.name = "key"
        self._waiting: dict = {}      # seq -> (front, request), in push order
        self._seq = count()
        self._pick = None             # (now, seq) of the last choice, valid until the room changes

    def push(self, req, now, front=False):
        self._waiting[next(self._seq)] = (0 if front else 1, req)
        self._pick = None

    def _best(self) -> int:
        if self._pick is not None and self._pick[0] == self.now:
            return self._pick[1]
        now, key = self.now, self.key
        best, best_k = None, None
        for seq, (front, req) in self._waiting.items():
            k = (front, key(req, now))
            if best_k is None or k < best_k:
                best, best_k = seq, k
        self._pick = (now, best)
        return best

    def peek(self):
        return self._waiting[self._best()][1]

    def pop(self):
        req = self._waiting.pop(self._best())[1]
        self._pick = None
        return req

    def __len__(self):
        return len(self._waiting)

    def __iter__(self):
        return (req for _, req in self._waiting.values())

    def __repr__(self):
        return f"KeyPolicy({self.name!r})"


def from_key(key, name: str | None = None) -> KeyPolicy:
    """A policy from a function ``key(request, now)``: the smallest key is admitted first.

    >>> by_label = from_key(lambda r, now: (-r.priority, r.arrival), name="by label")  # doctest: +SKIP
    >>> simulate(reqs, policy=by_label)                                                # doctest: +SKIP
    """
    return KeyPolicy(key, name)


POLICIES = {"fifo": FIFO, "sjf": SJF, "priority": PriorityFirst, "fair": FairShare}


def make_policy(policy) -> Policy:
    """A fresh policy from a name (``fifo``, ``sjf``, ``priority``, ``fair``), a class, an
    instance, or a key function ``key(request, now)`` (see :func:`from_key`).

    An instance is copied, so one configured policy object can serve many runs
    without carrying state (queues, counters) from one run into the next.
    """
    if isinstance(policy, Policy):
        return copy.deepcopy(policy)
    if isinstance(policy, type) and issubclass(policy, Policy):
        return policy()
    if callable(policy) and not isinstance(policy, type):
        return KeyPolicy(policy)
    try:
        return POLICIES[str(policy).lower()]()
    except KeyError:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}") from None
