"""Notebook 02 (a batcher built by hand): counting llama_decode calls, why a step that reads a
prompt is slower, and chunked prefill written by the learner and checked against the engine."""

from __future__ import annotations

from functools import lru_cache

from . import CODE, LearnerCodeError, as_number, call, exercise, open_question
from ..handbuilt import (chat_tokens, context, engine_run, first_difference, guarded_decode,
                         pattern, schedule)


def decode_calls(prompt_lens, n_slots: int, answer_lens, n_batch: int = 2048) -> int:
    """How many llama_decode calls the engine's rules make for these lengths (see
    :func:`labkit.handbuilt.schedule`)."""
    return len(schedule(list(prompt_lens), n_slots, answer_lens, n_batch))


@exercise("2.1", "Three prompts of 30 tokens arrive together at a batcher with 2 slots; every "
                 "answer is exactly 5 tokens long and a whole prompt fits in one batch. How many "
                 "llama_decode calls serve all three?")
def _calls(answer):
    v = as_number(answer)
    want = decode_calls([30, 30, 30], 2, 5)
    if v == want:
        return True, ""
    if v == 15:
        return False, ("that is one call per token per request; the two seated requests share "
                       "every call")
    if v == want - 1:
        return False, ("a slot freed by a call takes the next prompt in the call after it, not "
                       "in the same one: its prompt was not yet in that batch")
    if v in (5, 6):
        return False, "only two of the three fit at once: the third waits for a free slot"
    return False, ("write the step table by hand: which requests are in each call, and when "
                   "does each of them sample its first and its last token?")


open_question(
    "2.2",
    "In your step table, compare a step that read a new prompt with a decode-only step that "
    "had the same slots busy: how long did each take, and why is the first one slower?",
    model_answer=(
        "The step that read a prompt of about 35 tokens next to one decode took several times "
        "as long as a step of two decodes (your table has the two figures). Every step "
        "reads all the weights once, whatever it carries; what grows with the batch is the "
        "arithmetic, one row of every matrix product per token. A decode-only step has two "
        "rows, the admitting step about 36, so it does far more work, yet much less than 35 "
        "separate decode steps would, because the weights are read once for all those rows. "
        "The other slot's token waits for that longer step: that is the price a newcomer's "
        "prefill puts on everyone already generating, and what chunked prefill spreads out."),
    rubric=["quotes the two durations from their own table",
            "says the admitting step carries many more tokens (the whole prompt) than a "
            "decode-only step (one token per generating slot)",
            "says the cost per step grows with the tokens in the batch, while reading the "
            "weights is paid once per step",
            "notes that the other slot's next token is delayed by the longer step"],
    needs_number=True)


# The code exercise: real prompts, the engine's answer as the reference.
QUESTIONS = ("Say hi.", "What is the capital of France?", "Name three colours.")
N_SLOTS, MAX_TOKENS, N_BATCH = 2, 6, 16


@lru_cache(maxsize=4)
def _reference(n_batch: int = N_BATCH):
    """The chat prompts and the engine's texts and steps for them (computed once a process)."""
    with context(N_SLOTS, n_batch=n_batch) as lab:
        prompts = chat_tokens(lab.model, lab.vocab, list(QUESTIONS))
    return prompts, engine_run(prompts, N_SLOTS, MAX_TOKENS, n_batch=n_batch)


def _run_learner(fn, prompts, n_batch):
    with context(N_SLOTS, n_batch=n_batch) as lab, guarded_decode():
        return call(fn, lab.ctx, lab.vocab, [list(p) for p in prompts], N_SLOTS, MAX_TOKENS,
                    n_batch)


@exercise("2.3", "Write chunked_batcher(ctx, vocab, prompts, n_slots, max_tokens, n_batch): the "
                 "batcher of this notebook, but no llama_decode may carry more than n_batch "
                 "tokens. Each step holds one decode token for every generating slot first, then "
                 "prompt tokens in arrival order in the room left, so a long prompt is read over "
                 "several steps; a request samples its first token only when its prompt's last "
                 "chunk is in. Return (texts, steps) as batcher does.",
          kind=CODE, needs_model=True)
def _chunked(fn):
    prompts, ref = _reference()
    try:
        got = _run_learner(fn, prompts, N_BATCH)
    except LearnerCodeError as exc:
        note = ""
        if "n_batch" in str(exc):
            note = (" Count the tokens you put into one batch: the decode tokens take their "
                    "room first, and a prompt that does not fit the rest waits for the next step.")
        return False, f"{exc}.{note}"
    if not (isinstance(got, tuple) and len(got) == 2):
        return False, "return two things, (texts, steps), as the notebook's batcher does"
    texts, steps = got
    if not isinstance(texts, list) or len(texts) != len(prompts):
        return False, f"texts should be a list with one string per prompt ({len(prompts)})"
    try:
        steps_pattern = pattern(steps)
    except (TypeError, ValueError):
        return False, ("each step should be (ms, [(slot, request, action, n_tokens), ...]), as "
                       "in the notebook's batcher")
    too_big = [i for i, step in enumerate(steps_pattern) if sum(w[3] for w in step) > N_BATCH]
    if too_big:
        return False, (f"step {too_big[0]} of your table lists more than n_batch = {N_BATCH} "
                       "tokens")
    diff = first_difference(steps, ref.steps)
    if diff:
        return False, (f"with n_batch = {N_BATCH}, your schedule parts from the engine's at "
                       f"{diff}. Put the generating slots' tokens in first, then fill what is "
                       "left with prompt chunks, oldest request first.")
    wrong = [i for i, (a, b) in enumerate(zip(texts, ref.texts)) if a != b]
    if wrong:
        i = wrong[0]
        return False, (f"your schedule matches the engine's but request #{i}'s text does not: "
                       f"yours {texts[i]!r}, the engine's {ref.texts[i]!r}. Check the positions "
                       "each chunk's tokens get, and that you sample from the logits of the "
                       "prompt's last token only")
    return True, (f"{len(steps)} llama_decode calls, the same texts and the same steps as the "
                  f"engine's with n_batch = {N_BATCH}")


@exercise("2.4", "A batcher with 2 slots and n_batch = 32 gets two prompts of 40 tokens at once; "
                 "each answer is exactly 3 tokens. With chunked prefill, how many llama_decode "
                 "calls serve both?")
def _chunked_calls(answer):
    v = as_number(answer)
    want = decode_calls([40, 40], 2, 3, n_batch=32)
    if v == want:
        return True, ""
    if v == decode_calls([40, 40], 2, 3):
        return False, "both 40-token prompts do not fit in one batch of 32 tokens"
    if v in (want + 1, want + 2):
        return False, ("the second prompt's first chunk rides in the step that finishes the "
                       "first prompt, and its decodes ride with the first request's")
    return False, ("draw the steps: in each, the decode tokens first, then prompt tokens in "
                   "the room left of 32")
