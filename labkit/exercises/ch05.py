"""Notebook 05 (slots, live): why batching pays (the speed formula on your machine), the
worksheet's arithmetic, the gates, reading the result."""

from __future__ import annotations

from . import as_number, as_word, exercise


@exercise("5.1", "12 documents, 64-token answers each, a run wall time of 8 s: the output tok/s?")
def _tok_s(answer):
    v = as_number(answer)
    want = 12 * 64 / 8
    if abs(v - want) < 0.01:
        return True, ""
    if abs(v - 64 / 8) < 0.01:
        return False, "count every document's tokens: the run produced 12 x 64 of them"
    return False, "output tok/s = sum of generated tokens / the run's wall time"


def _bool(answer) -> bool:
    if isinstance(answer, bool):
        return answer
    if hasattr(answer, "item") and isinstance(answer.item(), bool):
        return answer.item()
    w = as_word(answer)
    if w in ("true", "yes", "pass", "passes"):
        return True
    if w in ("false", "no", "fail", "fails"):
        return False
    raise ValueError("answer True or False")


@exercise("5.2", "Fits every document, every first token in time, 11 of 12 answers correct: does it pass?")
def _gates(answer):
    if _bool(answer) is False:
        return True, ""
    return False, "all three gates must hold: every answer correct is one of them"


@exercise("5.3", "-c 4096 -np 4 split KV, a 2048-token document: which gate fails?")
def _fits(answer):
    w = as_word(answer)
    if w in ("fits context", "fits", "context", "fit", "fits the context"):
        return True, ""
    if w in ("ttft", "waits", "ttft ok", "correct", "all correct"):
        return False, ("each split slot holds 4096 / 4 = 1024 cells; the request is refused before "
                       "any first token or answer exists")
    raise ValueError("answer 'fits context', 'ttft' or 'correct'")


@exercise("5.4", "1.5x the total tok/s, 1.3x the median completion time: single requests faster or slower?")
def _slower(answer):
    w = as_word(answer)
    if w in ("slower", "slow"):
        return True, ""
    if w in ("faster", "fast"):
        return False, "completion time is per request: 1.3x as long means each request took longer"
    raise ValueError("answer 'faster' or 'slower'")


#: How far a batch-1 prediction may be from bandwidth / weight bytes (a GB read as a GiB, the
#: file's size for its tensor bytes, or the KV cache added, all stay inside it).
SPEED_TOLERANCE = 0.10


@exercise("5.5", "From your measured memory bandwidth and the bytes one decode step reads, predict "
                 "one stream's decode tok/s (batch 1).")
def _speed(answer):
    from ..roofline import machine, model_cost
    v = as_number(answer)
    m, c = machine(), model_cost()
    want = m.bandwidth / c.weight_bytes
    formula = (f"{m.bandwidth / 1e9:.2f} GB/s / {c.weight_bytes / 1e6:.1f} MB of weights "
               f"= {want:.0f} tok/s")
    if abs(v / want - 1) <= SPEED_TOLERANCE:
        return True, (f"the speed formula on your latest measurement: {formula}. Compare it with "
                      f"the batch-1 decode rate the sweep measured.")
    if abs(v / (m.bandwidth / c.matrix_params) - 1) <= SPEED_TOLERANCE:
        return False, ("that divides by the parameter count; divide by the bytes the weights take "
                       "in the file (quantized weights take less than a byte each here)")
    if abs(v / (m.flops / c.flops_per_token) - 1) <= SPEED_TOLERANCE:
        return False, ("that is the arithmetic ceiling (rate / FLOPs per token); at batch 1 the "
                       "memory is the slower side: divide the bandwidth by the weight bytes")
    if not 0.01 < v / want < 100:
        return False, ("check the units: bandwidth in bytes per second divided by bytes per "
                       "token gives tokens per second")
    return False, (f"one stream reads every weight once per token: tok/s = bandwidth (bytes/s) "
                   f"/ weight bytes, within {SPEED_TOLERANCE:.0%}")


OPEN_MIN_WORDS = 15
BANDWIDTH_MODEL_ANSWER = (
    "Model answer: memory capacity and memory bandwidth buy different things. Capacity decides "
    "what fits: a bigger model, or more KV cache for more streams at once; it does not make one "
    "stream faster. Bandwidth sets the ceiling of one stream's speed: the speed formula, "
    "bandwidth / weight bytes. My sweep says how close a stream gets to that ceiling. Close to "
    "it (a GPU, where arithmetic is plentiful), twice the bandwidth gives nearly twice the tokens "
    "per second and batching is almost free up to the crossover batch, so for a few users the "
    "faster memory is the better buy. Far below it (a small CPU, where the per-token arithmetic "
    "and the per-step work set the speed), more bandwidth buys little and more arithmetic buys "
    "more. Either way prefill stayed flat in the batch: for prompt-heavy work such as the "
    "extraction set the lever is arithmetic, not memory.\n"
    "Rubric: (1) separates capacity (what fits: model size, streams at once) from bandwidth (how "
    "fast one stream can decode); (2) quotes your speed-formula figure and your measured batch-1 "
    "rate, and says how close they were; (3) uses your sweep: how the total grew with the batch "
    "and where it stopped, and that prefill stayed flat; (4) matches the purchase to the "
    "workload: one user, many streams, or long prompts.")


@exercise("5.6", "Open question: what do your numbers say about buying a GPU with more memory "
                 "against one with more memory bandwidth?")
def _bandwidth_or_memory(answer):
    if not isinstance(answer, str):
        raise TypeError("answer in words, between quotes")
    if len(answer.split()) < OPEN_MIN_WORDS:
        return False, (f"write two or three sentences (at least {OPEN_MIN_WORDS} words) that use "
                       "your own figures: your bandwidth, your batch-1 rate, your sweep")
    return True, "compare yours with this.\n" + BANDWIDTH_MODEL_ANSWER
