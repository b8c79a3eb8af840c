"""Notebook 00 (setup): the recipe, the per-slot limit, the split arithmetic."""

from __future__ import annotations

from .. import catalog, kv
from . import as_number, as_word, exercise

# The embedded model's training context, from the catalogue (its file says the same).
SMOLLM2_N_CTX_TRAIN = catalog.get("smollm2-135m").n_ctx_train


@exercise("0.1", "Which field of the recipe proves that two model files hold the same bytes? "
                 "Answer with its name as a string.")
def _recipe_field(answer):
    w = as_word(answer).replace(" ", "")
    if "sha256" in w or "sha 256" in as_word(answer):
        return True, ""
    if w in ("name", "filename", "path", "size", "sizebytes", "modelname"):
        return False, ("a name, a path or a size can match while the bytes differ; the recipe "
                       "keeps a cryptographic hash of the whole file")
    return False, "look at the 'model' entry of the recipe: one field is a hash of the file"


@exercise("0.2", "Your 1-slot server ran with -c 2048, so n_ctx_slot = 2048. Is a prompt of "
                 "exactly 2048 tokens 'accepted' or 'refused'?")
def _exact_fit(answer):
    w = as_word(answer)
    if w in ("refused", "rejected", "refuse", "400"):
        return True, ""
    return False, ("the server refuses a prompt when n_tokens >= n_ctx_slot: a slot needs room "
                   "for at least one generated token after the prompt")


@exercise("0.3", "You restart the server with -c 2048 -np 2 and split KV. What n_ctx_slot will "
                 "its startup log print?")
def _two_slots(answer):
    want = kv.slot_context(2048, 2, False, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    v = as_number(answer)
    if v == want:
        return True, ""
    if v == 2048:
        return False, "split KV gives each slot its own stripe of the 2048 cells, not all of them"
    return False, "split KV: n_ctx_seq = n_ctx / n_slots, rounded up to a multiple of 256"
