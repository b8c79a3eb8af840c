"""Notebook 07 (scheduling): policies, starvation, queues, batch size, a policy of your own."""

from __future__ import annotations

from . import CODE, LearnerCodeError, as_number, as_word, call, choice, exercise, open_question

# The policies by the names the notebook, the seed article (001_027e2139b87c0d3a.txt) and the
# glossary give them, in English and Traditional Chinese.
POLICIES = {
    "fifo": ("first in first out", "first come first served", "fcfs", "先進先出", "先來先服務",
             "先到先服務"),
    "sjf": ("shortest job first", "shortest first", "最短作業優先", "短工作優先", "短作業優先"),
    "priority": ("priority first", "priority scheduling", "優先級", "優先級調度", "優先權",
                 "優先順序"),
    "fair": ("fair share", "fair sharing", "fairshare", "vtc", "virtual token counter", "公平分享",
             "公平分配", "公平共享"),
}


@exercise("7.1", "Short requests keep arriving faster than the server can serve them. Under which "
                 "policy can a long request wait for ever? (fifo, sjf, priority or fair)")
def _starves(answer):
    p = choice(answer, POLICIES)
    if p == "sjf":
        return True, ""
    if p == "fifo":
        return False, "FIFO serves everyone in arrival order: a long request waits its turn, never longer"
    if p == "fair":
        return False, "fair share counts service per user, not per request length"
    return False, ("with every request labelled alike, priority is plain arrival order: which "
                   "policy lets later requests pass a waiting long one, again and again?")


@exercise("7.2", "One user sends 85% of the requests and the other 15%. Which policy keeps the "
                 "light user's wait short even when the heavy user floods the queue?")
def _fair(answer):
    p = choice(answer, POLICIES)
    if p == "fair":
        return True, ""
    if p == "priority":
        return False, "priority looks at a label on each request, not at who has already been served"
    return False, "which of the four policies knows who sent each request?"


def queue_refusals(n: int = 10, slots: int = 2, max_queue: int = 4) -> int:
    """Requests refused at once when ``n`` arrive together at an idle server."""
    return max(0, n - slots - max_queue)


@exercise("7.3", "A labkit server with 2 idle slots and a bounded queue of 4 (labkit's own "
                 "--max-queue 4) receives 10 requests at the same moment. How many are refused "
                 "at once (HTTP 503)?")
def _bounded(answer):
    v = as_number(answer)
    want = queue_refusals()
    if v == want:
        return True, ""
    if v == 6:
        return False, "the 2 idle slots take 2 requests straight away; the queue holds 4 more"
    if v == 8:
        return False, "the queue holds 4 requests besides the ones the slots take"
    return False, "count what the slots take, then what the queue holds; the rest are refused"


@exercise("7.4", "The server is already saturated (the queue never empties). You double the slots. "
                 "Does each stream's tok/s go up or down?")
def _batch(answer):
    w = as_word(answer)
    if w in ("down", "falls", "fall", "lower", "decreases", "slower", "下降", "變慢", "降低"):
        return True, ""
    if w in ("up", "rises", "rise", "higher", "increases", "faster", "上升", "變快", "提高"):
        return False, ("that is the total tok/s; read section 4's per_stream_tok_s column as the "
                       "slots grow")
    raise ValueError("answer 'up' or 'down'")


@exercise("7.5", "Write key(request, now) for a scheduling policy that keeps the rush's short "
                 "answers quick (TTFT p90 within the limit) and starves no long request (every one "
                 "admitted within the starvation limit). The smallest key is admitted first.",
          kind=CODE)
def _own_policy(fn):
    from ..sim import experiments as ex
    from ..sim.policies import from_key
    if not callable(fn):
        raise TypeError(f"expected a function key(request, now), got {type(fn).__name__}")

    def key(request, now):
        return call(fn, request, now)

    try:
        v = ex.verdict(ex.rush_run(from_key(key, name="yours")))
    except TypeError as exc:         # keys that cannot be compared with each other
        raise LearnerCodeError(f"your keys could not be compared ({exc}); return numbers, "
                               f"or tuples of numbers") from exc
    bound, limit = ex.STARVATION_BOUND_S, ex.SHORT_TTFT_P90_LIMIT_S
    got = (f"longest wait of a long request {v['long_wait_max_s']:.1f} s (limit {bound:g} s), "
           f"short answers' TTFT p90 {v['short_ttft_p90_s']:.1f} s (limit {limit:g} s)")
    if v["ok"]:
        return True, got
    if not v["no_starvation"] and not v["short_ttft_ok"]:
        return False, (f"{got}: both missed. Short requests should go first while the long ones "
                       f"are fresh, and a long request's claim should grow as it waits")
    if not v["no_starvation"]:
        return False, (f"{got}: {v['long_starved']} of {v['long_requests']} long requests starved. "
                       f"Does your key change as now - request.arrival grows, and fast enough "
                       f"that a long request overtakes fresh short ones in time?")
    return False, (f"{got}: the short answers wait too long. Long requests overtake them too "
                   f"soon: let a long request's waiting count for less, or favour short ones "
                   f"more while everyone is fresh")


def llama_server_refusals(n: int = 10, slots: int = 2) -> int:
    """What llama-server refuses at once of ``n`` requests sent together: none; those that find
    no free slot are deferred (its ``requests_deferred`` gauge) until one frees up."""
    return 0


@exercise("7.6", "The same 10 requests arrive at once at llama-server with 2 idle slots (-np 2). "
                 "How many does it refuse at once?")
def _llama_server(answer):
    v = as_number(answer)
    if v == llama_server_refusals():
        return True, ""
    if v == queue_refusals():
        return False, "that is labkit's --max-queue at work: is it one of llama-server's flags?"
    return False, ("look at the /metrics gauge this notebook read from llama-server while the "
                   "burst waited")


open_question(
    "7.7",
    "You run the rush of section 2 for a team: short chat answers and long reports on one server. "
    "Which policy do you deploy, and with which setting? Decide from your own numbers: quote the "
    "longest wait of a long request and the short answers' TTFT p90 that your choice gave, and "
    "what the other policies gave.",
    model_answer=(
        "Neither plain policy: SJF (and priority with chat above reports) kept the chat quick, "
        "TTFT p90 about 1 s, but the longest report waited 57 s and 17 of 52 were starved past "
        "the 40 s limit, a number that grows for as long as the rush lasts; FIFO and fair share "
        "starved no one but put the chat's TTFT p90 at 12-16 s. Shortest-first with aging (key = "
        "expected tokens - 20 x seconds waited) gave about 35 s and 4.5 s: both limits held. I "
        "deploy that, and because the server is overloaded all the same, I also cap the queue "
        "in front of it so that the excess is refused at once instead of waiting."),
    rubric=[
        "quotes two figures from their own run: a long request's longest wait and the short "
        "answers' TTFT p90",
        "compares with at least one plain policy (SJF starves reports, FIFO or fair share slow "
        "the chat)",
        "chooses a policy whose long waits stay bounded (aging, or fair share with a reason)",
        "notes that no order makes an overloaded server keep up: the queue still grows, so a "
        "limit in front of the server (or more capacity) is needed",
    ],
    min_words=25, needs_number=True)
