"""Notebook 06 (counter-examples): continuous batching isolated, over-long inputs, dependent
tasks, the prefix cache, and what your own on/off timelines say."""

from __future__ import annotations

from . import as_number, choice, exercise, open_question

SETTINGS = {
    "cont_batching": ("continuous batching", "cont batching", "no cont batching",
                      "--cont-batching", "--no-cont-batching", "連續批次", "continuous batching 開關",
                      "每輪換桌名單"),
    "slots": ("slot", "np", "n slots", "-np", "槽數", "槽", "窗口", "窗口數"),
    "kv_unified": ("kv unified", "unified", "unified kv", "--kv-unified", "共用桌", "分割 kv",
                   "split", "kv 模式"),
}


@exercise("6.1", "Which single setting do you switch between two otherwise identical runs to show "
                 "what continuous batching changes?")
def _isolate(answer):
    if choice(answer, SETTINGS) == "cont_batching":
        return True, ""
    return False, ("that setting changes the whole configuration (how many requests run, or how "
                   "memory is shared), not only how requests are admitted between steps; which "
                   "setting changes the admission alone?")


FIELDS = {
    "prompt_tokens": ("usage.prompt_tokens", "usage", "prompt_n", "prompt tokens",
                      "提示 token 數", "輸入 token 數", "提示詞 token 數"),
    "finish_reason": ("finish reason", "結束原因"),
}


@exercise("6.2", "A 5000-token prompt to a 4096-token slot came back with HTTP 200. What do you check first?")
def _truncation(answer):
    if choice(answer, FIELDS) == "prompt_tokens":
        return True, ""
    return False, ("finish_reason tells how the answer ended; the worry here is whether the "
                   "whole input was read")


@exercise("6.3", "8 independent summaries then 1 merge, 4 slots: most model calls at the same time?")
def _dependent(answer):
    v = as_number(answer)
    if v == 4:
        return True, ""
    if v in (8, 9):
        return False, "count how many requests the server can work on side by side"
    if v == 5:
        return False, "can the merge start before the last summary has come back?"
    return False, "a slot serves one request at a time; and ask when the merge can start"


@exercise("6.4", "700 identical leading tokens + a ~60-token document, cache on, one slot: about how "
                 "many prompt tokens does the second request process anew (60 or 760)?")
def _prefix(answer):
    v = as_number(answer)
    if 40 <= v <= 100:
        return True, ""
    if v >= 700:
        return False, ("look at cache_n and prompt_n of the second request in section 4: which "
                       "part of its prompt had the slot seen before?")
    return False, "compare the second request's prompt with the first one's, token by token"


CB_MODEL_ANSWER = (
    "With continuous batching the short requests took the slot the long request's neighbour "
    "freed and finished within a few seconds; without it the last short request waited for the "
    "long one to end, so its finish time was the long request's plus its own (quote your two "
    "finish times here). The long request finished later with continuous "
    "batching, because it shared its decode steps with the short ones. For a service where "
    "people wait for short answers behind long jobs I would keep it on: the short requests' "
    "waits are what users feel, and the long job loses little. I would only consider turning "
    "it off for a batch job where every request is long and only the total time matters, and "
    "even then I would measure first.")
CB_RUBRIC = [
    "quotes your own finish times of the short requests, with and without continuous batching",
    "says why the last short request waited without it: new requests are admitted only when no "
    "slot is generating",
    "notes what the long request paid (its finish time) and why: shared steps",
    "decides for a named workload (interactive short requests behind long jobs, or an offline "
    "batch) rather than in general",
]

open_question(
    "6.5", "Open question: from your two timelines (cont_batching on and off), would you ever run "
           "a server with --no-cont-batching? Use your own finish times.",
    CB_MODEL_ANSWER, CB_RUBRIC, min_words=20, needs_number=True)
