"""Notebook 06 (counter-examples): continuous batching isolated, over-long inputs, dependent
tasks, the prefix cache."""

from __future__ import annotations

from . import as_number, as_word, exercise


@exercise("6.1", "Which single setting do you switch between two otherwise identical runs to show "
                 "what continuous batching changes?")
def _isolate(answer):
    w = as_word(answer).replace(" ", "_")
    if w in ("cont_batching", "continuous_batching", "no_cont_batching"):
        return True, ""
    if w in ("slots", "np", "n_slots", "kv_unified", "unified"):
        return False, ("changing slots or the KV mode changes the whole configuration; only "
                       "--cont-batching / --no-cont-batching isolates the scheduling mechanism")
    raise ValueError("answer 'cont_batching', 'slots' or 'kv_unified'")


@exercise("6.2", "A 5000-token prompt to a 4096-token slot came back with HTTP 200. What do you check first?")
def _truncation(answer):
    w = as_word(answer).replace(" ", "_")
    if w in ("prompt_tokens", "usage.prompt_tokens", "usage", "prompt_n"):
        return True, ""
    if w in ("finish_reason",):
        return False, ("finish_reason says why generation stopped, not whether the input was cut: "
                       "compare the tokens the server read with the prompt's length")
    raise ValueError("answer 'prompt_tokens' or 'finish_reason'")


@exercise("6.3", "8 independent summaries then 1 merge, 4 slots: most model calls at the same time?")
def _dependent(answer):
    v = as_number(answer)
    if v == 4:
        return True, ""
    if v in (8, 9):
        return False, "only 4 slots exist, and the merge must wait for all eight summaries"
    if v == 5:
        return False, "the merge needs every summary first, so it never runs beside them"
    return False, "the independent summaries share the 4 slots; the merge runs after them"


@exercise("6.4", "700 identical leading tokens + a ~60-token document, cache on, one slot: about how "
                 "many prompt tokens does the second request process anew (60 or 760)?")
def _prefix(answer):
    v = as_number(answer)
    if 40 <= v <= 100:
        return True, ""
    if v >= 700:
        return False, "the first 700 tokens are identical to the previous prompt and stay in the slot's cache"
    return False, "only the part after the shared prefix is new: about the document's length"
