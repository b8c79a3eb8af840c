"""Notebook 07 (scheduling): policies, starvation, bounded queues, batch size."""

from __future__ import annotations

from . import as_number, as_word, exercise

POLICY_WORDS = {"fifo": "fifo", "first in first out": "fifo", "sjf": "sjf",
                "shortest job first": "sjf", "priority": "priority", "fair": "fair",
                "fair share": "fair", "fairshare": "fair", "vtc": "fair"}


def _policy(answer) -> str:
    w = as_word(answer)
    if w not in POLICY_WORDS:
        raise ValueError(f"name one of fifo, sjf, priority, fair (got {answer!r})")
    return POLICY_WORDS[w]


@exercise("7.1", "Short requests keep arriving faster than the server can serve them. Under which "
                 "policy can a long request wait for ever? (fifo, sjf, priority or fair)")
def _starves(answer):
    p = _policy(answer)
    if p == "sjf":
        return True, ""
    if p == "fifo":
        return False, "FIFO serves everyone in arrival order: a long request waits its turn, never longer"
    return False, "which policy always picks the request with the fewest tokens still to generate?"


@exercise("7.2", "One user sends 85% of the requests and the other 15%. Which policy keeps the "
                 "light user's wait short even when the heavy user floods the queue?")
def _fair(answer):
    p = _policy(answer)
    if p == "fair":
        return True, ""
    if p == "priority":
        return False, "priority looks at a label on each request, not at who has already been served"
    return False, "look for the policy that counts the tokens served to each user"


def queue_refusals(n: int = 10, slots: int = 2, max_queue: int = 4) -> int:
    """Requests refused at once when ``n`` arrive together at an idle server."""
    return max(0, n - slots - max_queue)


@exercise("7.3", "A server with 2 idle slots and a bounded queue of 4 (--max-queue 4) receives 10 "
                 "requests at the same moment. How many are refused at once (HTTP 503)?")
def _bounded(answer):
    v = as_number(answer)
    want = queue_refusals()
    if v == want:
        return True, ""
    if v == 6:
        return False, "the 2 idle slots take 2 requests straight away; the queue holds 4 more"
    if v == 8:
        return False, "the queue holds 4 requests besides the ones the slots take"
    return False, "accepted = free slots + queue length; the rest are refused"


@exercise("7.4", "The server is already saturated (the queue never empties). You double the slots. "
                 "Does each stream's tok/s go up or down?")
def _batch(answer):
    w = as_word(answer)
    if w in ("down", "falls", "fall", "lower", "decreases", "slower"):
        return True, ""
    if w in ("up", "rises", "rise", "higher", "increases", "faster"):
        return False, ("the total may rise a little, but every step now carries more sequences, "
                       "so each one gets its next token later")
    raise ValueError("answer 'up' or 'down'")
