"""Notebook 05 (slots, live): why batching pays (the speed formula on your machine), the
worksheet's arithmetic, the gates, reading the result, and the stopwatch behind TTFT and
completion time."""

from __future__ import annotations

import json

from . import CODE, LearnerCodeError, as_number, as_word, call, choice, exercise, open_question


@exercise("5.1", "12 documents, 64-token answers each, a run wall time of 8 s: the output tok/s?")
def _tok_s(answer):
    v = as_number(answer)
    want = 12 * 64 / 8
    if abs(v - want) < 0.01:
        return True, ""
    if abs(v - 64 / 8) < 0.01:
        return False, "that is one answer's rate: output tok/s counts the tokens of every answer in the run"
    return False, "output tok/s = sum of generated tokens / the run's wall time"


def _bool(answer) -> bool:
    if isinstance(answer, bool):
        return answer
    if hasattr(answer, "item") and isinstance(answer.item(), bool):
        return answer.item()
    w = as_word(answer)
    if w in ("true", "yes", "pass", "passes", "是", "對", "通過", "會"):
        return True
    if w in ("false", "no", "fail", "fails", "否", "不", "不是", "不通過", "沒通過", "不會"):
        return False
    raise ValueError("answer True or False")


@exercise("5.2", "Fits every document, every first token in time, 11 of 12 answers correct: does it pass?")
def _gates(answer):
    if _bool(answer) is False:
        return True, ""
    return False, "name the three gates and check this configuration against each of them"


GATES = {
    "fits context": ("fits", "context", "fit", "fits the context", "context fits",
                     "Context 放得下", "放得下", "塞不下", "context 不夠"),
    "ttft": ("waits", "wait", "ttft ok", "waits acceptable", "等待可接受", "首字等待", "等待"),
    "correct": ("all correct", "answers correct", "交件正確", "正確", "答案正確"),
}


@exercise("5.3", "-c 4096 -np 4 split KV, a 2048-token document: which gate fails?")
def _fits(answer):
    if choice(answer, GATES) == "fits context":
        return True, ""
    return False, ("work out how many cells one split slot holds here, and whether the request "
                   "gets as far as a first token or an answer at all")


SPEEDS = {"slower": ("slow", "更慢", "較慢", "變慢", "慢"),
          "faster": ("fast", "更快", "較快", "變快", "快")}


@exercise("5.4", "1.5x the total tok/s, 1.3x the median completion time: single requests faster or slower?")
def _slower(answer):
    if choice(answer, SPEEDS) == "slower":
        return True, ""
    return False, ("the total tok/s is the whole batch's; completion time is one request's, from "
                   "send to end: read what 1.3x says about it")


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


BANDWIDTH_MODEL_ANSWER = (
    "Memory capacity and memory bandwidth buy different things. Capacity decides "
    "what fits: a bigger model, or more KV cache for more streams at once; it does not make one "
    "stream faster. Bandwidth sets the ceiling of one stream's speed: the speed formula, "
    "bandwidth / weight bytes. My sweep says how close a stream gets to that ceiling. Close to "
    "it (a GPU, where arithmetic is plentiful), twice the bandwidth gives nearly twice the tokens "
    "per second and batching is almost free up to the crossover batch, so for a few users the "
    "faster memory is the better buy. Far below it (a small CPU, where the per-token arithmetic "
    "and the per-step work set the speed), more bandwidth buys little and more arithmetic buys "
    "more. Either way prefill stayed flat in the batch: for prompt-heavy work such as the "
    "extraction set the lever is arithmetic, not memory.")
BANDWIDTH_RUBRIC = [
    "separates capacity (what fits: model size, streams at once) from bandwidth (how fast one "
    "stream can decode)",
    "quotes your speed-formula figure and your measured batch-1 rate, and says how close they were",
    "uses your sweep: how the total grew with the batch and where it stopped, and that prefill "
    "stayed flat",
    "matches the purchase to the workload: one user, many streams, or long prompts",
]

open_question(
    "5.6", "Open question: what do your numbers say about buying a GPU with more memory "
           "against one with more memory bandwidth?",
    BANDWIDTH_MODEL_ANSWER, BANDWIDTH_RUBRIC, min_words=15)


# ---------------------------------------------------------------------------- 5.7 the stopwatch

#: How far the learner's stopwatch may read from the scripted server's true times: a little
#: early (the clocks of two threads), and up to TIMER_LATE_S late (a client created inside the
#: timed span, a busy machine). The traps of the script lie outside this window.
TIMER_EARLY_S = 0.03
TIMER_LATE_S = 0.20
TIMER_PROMPT = "Which table ordered tea?"


def _triple(out) -> tuple[float | None, float, int | None]:
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError("return three values: (ttft_s, completion_s, n_tokens)")
    ttft, completion, n = out
    return (None if ttft is None else as_number(ttft), as_number(completion),
            None if n is None else int(as_number(n)))


def _timer_verdict(script, srv, out) -> tuple[bool, str, bool]:
    """(right, hint, worth a second try: the verdict was about time, which a busy machine
    can spoil)."""
    if not srv.requests:
        return False, ("the server received no chat request: POST the JSON body to base_url + "
                       "'/v1/chat/completions'"), False
    body = srv.requests[-1]
    if TIMER_PROMPT not in json.dumps(body.get("messages"), ensure_ascii=False):
        return False, "send the prompt you were given as the user's message", False
    if not body.get("stream"):
        return False, ("the answer came back in one piece, so there was no first token to time: "
                       "ask the server to stream it"), False
    ttft, completion, n = _triple(out)
    if n is None:
        return False, ("n_tokens is None: the server says how many tokens it generated in the "
                       "stream's final chunk"), False
    if n != script.n_tokens:
        return False, (f"{n} tokens, but the server generated {script.n_tokens}: chunks of text "
                       "are not the count the server reports; read the count it sends at the "
                       "end of the stream"), False
    if ttft is None:
        return False, "ttft_s is None: no visible text was seen; read choices[0].delta.content", False
    if ttft < script.ttft_s - TIMER_EARLY_S:
        return False, (f"your TTFT ({ttft:.2f} s) came before the answer's first visible text: "
                       "a chunk may carry only the role, reasoning, or whitespace"), False
    if abs(ttft - completion) < 0.02:
        return False, ("TTFT equals the completion time: take the first token's time inside the "
                       "loop, when its chunk arrives"), False
    if ttft > script.ttft_s + TIMER_LATE_S:
        return False, (f"your TTFT ({ttft:.2f} s) is late: start the clock just before sending "
                       "and stop it at the first chunk with visible text"), True
    if not script.last_token_s - TIMER_EARLY_S <= completion <= script.end_s + TIMER_LATE_S:
        return False, (f"your completion time ({completion:.2f} s) is off: it runs from sending "
                       "to the end of the stream"), True
    return True, (f"your stopwatch read TTFT {ttft:.3f} s, completion {completion:.3f} s, {n} "
                  f"tokens; the server's script: {script.ttft_s:.2f} s, {script.end_s:.2f} s "
                  f"(last token {script.last_token_s:.2f} s), {script.n_tokens} tokens. Now time "
                  f"a request to a live server with it and compare with labkit.bench's client "
                  f"(section 4)."), False


@exercise("5.7", "Write timer(base_url, prompt) -> (ttft_s, completion_s, n_tokens): send one "
                 "streaming chat request and time it as the worksheet does.", kind=CODE)
def _timer(fn):
    from ..stream_stub import Script, ScriptedServer
    script = Script.default()
    for attempt in range(2):
        with ScriptedServer(script) as srv:
            try:
                out = call(fn, srv.base_url, TIMER_PROMPT)
            except LearnerCodeError as exc:
                if srv.misses and not srv.requests:
                    method, path = srv.misses[-1]
                    return False, (f"{exc}. The server was asked for {method} {path}; chat "
                                   f"requests go to POST base_url + '/v1/chat/completions'")
                raise
        right, hint, retry = _timer_verdict(script, srv, out)
        if right or not retry:
            return right, hint
    return right, hint


# ---------------------------------------------------------------------------- 5.8 decode speed

@exercise("5.8", "A request generated 35 tokens; its first token came 2.50 s after it was sent "
                 "and its last at 3.35 s. From the client's clock, its decode speed in tok/s?")
def _decode_speed(answer):
    v = as_number(answer)
    if 34 / 0.85 * 0.95 <= v <= 35 / 0.85 * 1.05:
        return True, ("the server's timings.predicted_per_second measures the same span, first "
                      "token to last, on its own clock")
    if abs(v - 35 / 3.35) < 0.2:
        return False, ("that divides by the whole time since sending, which includes waiting "
                       "for a slot and reading the prompt; decode speed starts at the first token")
    if abs(v - 35 / 2.5) < 0.2:
        return False, "2.50 s is the time to the first token: decode happens after it"
    return False, "tok/s = tokens generated during decode / the seconds decode took"
