"""Notebook 05 (slots, live): why batching pays (the speed formula on your machine), the
worksheet's arithmetic, the gates, reading the result, and the stopwatch behind TTFT and
completion time."""

from __future__ import annotations

import json

from ..lang.i18n import Both, pick
from . import CODE, LearnerCodeError, as_word, call, choice, exercise, open_question
from .learner_code import Rule, cases_rng, number, require_function
from .quantities import quantity


@exercise("5.3", Both("12 documents, 64-token answers each, a run wall time of 8 s: the output tok/s?",
                      "12 份文件，每個回答 64 個 token，整批的實際經過時間是 8 秒：輸出 tok/s 是多少？"))
def _tok_s(answer):
    v = quantity(answer, "tok/s")
    want = 12 * 64 / 8
    if abs(v - want) < 0.01:
        return True, ""
    if abs(v - 64 / 8) < 0.01:
        return False, pick("that is one answer's rate: output tok/s counts the tokens of every "
                           "answer in the run",
                           "那是單一回答的速率：輸出 tok/s 要算整批所有回答的 token")
    return False, pick("output tok/s = sum of generated tokens / the run's wall time",
                       "輸出 tok/s = 生成 token 的總和 ÷ 整批的實際經過時間")


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
    raise ValueError(pick("answer True or False", "請回答 True 或 False（通過或不通過）"))


@exercise("5.4", Both("Fits every document, every first token in time, 11 of 12 answers correct: "
                      "does it pass?",
                      "每份文件都放得下、每個首字都準時，但 12 個答案只對了 11 個：這個配置算通過嗎？"))
def _gates(answer):
    if _bool(answer) is False:
        return True, ""
    return False, pick("name the three gates and check this configuration against each of them",
                       "先說出三關是哪三關，再拿這個配置一關一關對照")


GATES = {
    "fits context": ("fits", "context", "fit", "fits the context", "context fits",
                     "Context 放得下", "放得下", "塞不下", "context 不夠", "上下文放得下",
                     "上下文", "上下文不夠", "放不下", "第一關"),
    "ttft": ("waits", "wait", "ttft ok", "waits acceptable", "等待可接受", "首字等待", "等待",
             "首個 token 延遲", "第二關"),
    "correct": ("all correct", "answers correct", "交件正確", "正確", "答案正確", "答對",
                "第三關"),
}


@exercise("5.5", Both("-c 4096 -np 4 split KV, a 2048-token document: which gate fails?",
                      "-c 4096 -np 4、分割 KV，送進一份 2048 token 的文件：哪一關沒過？"))
def _fits(answer):
    if choice(answer, GATES) == "fits context":
        return True, ""
    return False, pick("work out how many cells one split slot holds here, and whether the "
                       "request gets as far as a first token or an answer at all",
                       "先算出這裡分割 KV 給每個槽位幾格，再想想這個請求究竟有沒有走到"
                       "第一個 token 或交出答案")


SPEEDS = {"slower": ("slow", "更慢", "較慢", "變慢", "慢"),
          "faster": ("fast", "更快", "較快", "變快", "快")}


@exercise("5.6", Both("1.5x the total tok/s, 1.3x the median completion time: single requests "
                      "faster or slower?",
                      "總 tok/s 變成 1.5 倍，完成時間中位數變成 1.3 倍：單一請求變快還是變慢？"))
def _slower(answer):
    if choice(answer, SPEEDS) == "slower":
        return True, ""
    return False, pick("the total tok/s is the whole batch's; completion time is one request's, "
                       "from send to end: read what 1.3x says about it",
                       "總 tok/s 是整批的成績；完成時間是單一請求從送出到結束的時間："
                       "想想 1.3 倍對它代表什麼")


#: How far a batch-1 prediction may be from bandwidth / weight bytes (a GB read as a GiB, the
#: file's size for its tensor bytes, or the KV cache added, all stay inside it).
SPEED_TOLERANCE = 0.10


@exercise("5.1", Both("From your measured memory bandwidth and the bytes one decode step reads, "
                      "predict one stream's decode tok/s (batch 1).",
                      "用你量到的記憶體頻寬，和一個解碼步驟要讀的位元組數，預測單一串流"
                      "（批次 1）的解碼 tok/s。"))
def _speed(answer):
    from ..costs.roofline import machine, model_cost
    v = quantity(answer, "tok/s")
    m, c = machine(), model_cost()
    want = m.bandwidth / c.weight_bytes
    formula = (f"{m.bandwidth / 1e9:.2f} GB/s / {c.weight_bytes / 1e6:.1f} MB of weights "
               f"= {want:.0f} tok/s")
    if abs(v / want - 1) <= SPEED_TOLERANCE:
        return True, pick(f"the speed formula on your latest measurement: {formula}. Compare it "
                          f"with the batch-1 decode rate the sweep measured.",
                          f"用你最新一次測量代入速度公式：{formula}。拿它和掃描實測到的"
                          f"批次 1 解碼速率比一比。")
    if abs(v / (m.bandwidth / c.matrix_params) - 1) <= SPEED_TOLERANCE:
        return False, pick("that divides by the parameter count; divide by the bytes the weights "
                           "take in the file (quantized weights take less than a byte each here)",
                           "那是除以參數個數；要除以權重在檔案裡占的位元組數"
                           "（這裡量化過的權重每個不到一個位元組）")
    if abs(v / (m.flops / c.flops_per_token) - 1) <= SPEED_TOLERANCE:
        return False, pick("that is the arithmetic ceiling (rate / FLOPs per token); at batch 1 "
                           "the memory is the slower side: divide the bandwidth by the weight bytes",
                           "那是算力的上限（運算速率 ÷ 每個 token 的 FLOPs）；批次 1 時"
                           "慢的是記憶體那一側：用頻寬除以權重位元組數")
    if not 0.01 < v / want < 100:
        return False, pick("check the units: bandwidth in bytes per second divided by bytes per "
                           "token gives tokens per second",
                           "檢查單位：每秒位元組數的頻寬，除以每個 token 的位元組數，"
                           "才會得到每秒 token 數")
    return False, pick(f"one stream reads every weight once per token: tok/s = bandwidth "
                       f"(bytes/s) / weight bytes, within {SPEED_TOLERANCE:.0%}",
                       f"一個串流每生成一個 token 就把每個權重讀一次：tok/s = 頻寬（bytes/s）"
                       f"÷ 權重位元組數，誤差 {SPEED_TOLERANCE:.0%} 以內")


BANDWIDTH_MODEL_ANSWER = Both(
    "Memory capacity and memory bandwidth buy different things. Capacity decides "
    "what fits: a bigger model, or more KV cache for more streams at once; it does not make one "
    "stream faster. Bandwidth sets the ceiling of one stream's speed: the speed formula, "
    "bandwidth / weight bytes. My sweep says how close a stream gets to that ceiling. Close to "
    "it (a GPU, where arithmetic is plentiful), twice the bandwidth gives nearly twice the tokens "
    "per second and batching is almost free up to the crossover batch, so for a few users the "
    "faster memory is the better buy. Far below it (a small CPU, where the per-token arithmetic "
    "and the per-step work set the speed), more bandwidth buys little and more arithmetic buys "
    "more. Either way prefill stayed flat in the batch: for prompt-heavy work such as the "
    "extraction set the lever is arithmetic, not memory.",
    "記憶體容量和記憶體頻寬買到的是不同的東西。容量決定放得下什麼：更大的模型，或給更多同時進行的"
    "串流更多 KV 快取；它不會讓單一串流變快。頻寬決定單一串流速度的上限，也就是速度公式："
    "頻寬 ÷ 權重位元組數。我的掃描說明一個串流離這個上限有多近。很接近時（例如算力充足的 GPU），"
    "頻寬加倍，每秒 token 數也幾乎加倍，而且在交叉批次之前批次幾乎免費，所以只有少數使用者時，"
    "記憶體更快的卡比較划算。離上限很遠時（例如小型 CPU，速度由每個 token 的運算和每一步的固定工作"
    "決定），多買頻寬幫助不大，多買算力才有用。不管哪一種，預填的速率都不隨批次改變：像抽取題組"
    "這種以提示為主的工作，該加強的是算力，不是記憶體。")
BANDWIDTH_RUBRIC = [
    Both("separates capacity (what fits: model size, streams at once) from bandwidth (how fast "
         "one stream can decode)",
         "把容量（放得下什麼：模型大小、同時幾個串流）和頻寬（單一串流能解碼多快）分開來談"),
    Both("quotes your speed-formula figure and your measured batch-1 rate, and says how close "
         "they were",
         "引用你的速度公式數字和實測的批次 1 速率，並說出兩者差多少"),
    Both("uses your sweep: how the total grew with the batch and where it stopped, and that "
         "prefill stayed flat",
         "用上你的掃描結果：總量怎麼隨批次成長、在哪裡停住，以及預填速率一直持平"),
    Both("matches the purchase to the workload: one user, many streams, or long prompts",
         "依工作負載決定買哪一種：一位使用者、很多串流，還是很長的提示"),
]

open_question(
    "5.2", Both("Open question: what do your numbers say about buying a GPU with more memory "
                "against one with more memory bandwidth?",
                "開放題：記憶體比較大的 GPU 和記憶體頻寬比較高的 GPU，你的數字說該買哪一張？"),
    BANDWIDTH_MODEL_ANSWER, BANDWIDTH_RUBRIC, min_words=15, needs_number=True)


# ---------------------------------------------------------------------------- 5.7 the stopwatch

#: How far the learner's stopwatch may read from the scripted server's true times: a little
#: early (the clocks of two threads), and up to TIMER_LATE_S late (a client created inside the
#: timed span, a busy machine). The traps of the script lie outside this window.
TIMER_EARLY_S = 0.03
TIMER_LATE_S = 0.20
TIMER_PROMPT = "Which table ordered tea?"


def _triple(out) -> tuple[float | None, float, int | None]:
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError(pick("return three values: (ttft_s, completion_s, n_tokens)",
                              "請回傳三個值：(ttft_s, completion_s, n_tokens)"))
    ttft, completion, n = out
    if n is not None:
        n = number(n, "n_tokens")
        if n != int(n):
            raise LearnerCodeError(pick(f"n_tokens should be a whole number, not {n!r}",
                                        f"n_tokens 應該是整數，不是 {n!r}"))
    return (None if ttft is None else number(ttft, "ttft_s"), number(completion, "completion_s"),
            None if n is None else int(n))


def _timer_verdict(script, srv, out) -> tuple[bool, str, bool]:
    """(right, hint, worth a second try: the verdict was about time, which a busy machine
    can spoil)."""
    if not srv.requests:
        return False, pick("the server received no chat request: POST the JSON body to "
                           "base_url + '/v1/chat/completions'",
                           "伺服器沒有收到任何聊天請求：把 JSON 內容用 POST 送到 "
                           "base_url + '/v1/chat/completions'"), False
    body = srv.requests[-1]
    if TIMER_PROMPT not in json.dumps(body.get("messages"), ensure_ascii=False):
        return False, pick("send the prompt you were given as the user's message",
                           "把題目給你的提示當成使用者（user）的訊息送出"), False
    if not body.get("stream"):
        return False, pick("the answer came back in one piece, so there was no first token to "
                           "time: ask the server to stream it",
                           "回答一次整包回來，就沒有第一個 token 可以計時：請伺服器用串流回答"), False
    ttft, completion, n = _triple(out)
    if n is None:
        return False, pick("n_tokens is None: the server says how many tokens it generated in "
                           "the stream's final chunk",
                           "n_tokens 是 None：伺服器會在串流的最後一個片段（chunk）告訴你它生成了"
                           "幾個 token"), False
    if n != script.n_tokens:
        return False, pick(f"{n} tokens, but the server generated {script.n_tokens}: chunks of "
                           "text are not the count the server reports; read the count it sends "
                           "at the end of the stream",
                           f"你算出 {n} 個 token，伺服器其實生成了 {script.n_tokens} 個："
                           "文字片段的個數不是伺服器回報的數目；請讀它在串流結尾送來的"
                           "計數"), False
    if ttft is None:
        return False, pick("ttft_s is None: no visible text was seen; read "
                           "choices[0].delta.content",
                           "ttft_s 是 None：沒看到任何可見文字；請讀 "
                           "choices[0].delta.content"), False
    if ttft < script.ttft_s - TIMER_EARLY_S:
        return False, pick(f"your TTFT ({ttft:.2f} s) came before the answer's first visible "
                           "text: a chunk may carry only the role, reasoning, or whitespace",
                           f"你的首字等待（{ttft:.2f} 秒）比回答第一段可見文字還早："
                           "有些片段只帶角色、推理內容或空白"), False
    if abs(ttft - completion) < 0.02:
        return False, pick("TTFT equals the completion time: take the first token's time inside "
                           "the loop, when its chunk arrives",
                           "首字等待和完成時間一樣：要在迴圈裡、第一個 token 的片段抵達時"
                           "記下時間"), False
    if ttft > script.ttft_s + TIMER_LATE_S:
        return False, pick(f"your TTFT ({ttft:.2f} s) is late: start the clock just before "
                           "sending and stop it at the first chunk with visible text",
                           f"你的首字等待（{ttft:.2f} 秒）太晚了：碼錶要在送出前一刻開始，"
                           "在第一個帶可見文字的片段停下"), True
    if not script.last_token_s - TIMER_EARLY_S <= completion <= script.end_s + TIMER_LATE_S:
        return False, pick(f"your completion time ({completion:.2f} s) is off: it runs from "
                           "sending to the end of the stream",
                           f"你的完成時間（{completion:.2f} 秒）不對：它從送出一直算到串流"
                           "結束"), True
    return True, pick(f"Your stopwatch read TTFT {ttft:.3f} s, completion {completion:.3f} s, "
                      f"{n} tokens; the server's script: {script.ttft_s:.2f} s, "
                      f"{script.end_s:.2f} s (last token {script.last_token_s:.2f} s), "
                      f"{script.n_tokens} tokens. Now time a request to a live server with it and "
                      f"compare with labkit.bench's client (section 4).",
                      f"你的碼錶讀到首字等待 {ttft:.3f} 秒、完成 {completion:.3f} 秒、{n} 個 "
                      f"token；伺服器的劇本是 {script.ttft_s:.2f} 秒、{script.end_s:.2f} 秒"
                      f"（最後一個 token 在 {script.last_token_s:.2f} 秒）、{script.n_tokens} 個 "
                      f"token。接著用它替真的伺服器上的請求計時，和 labkit.bench 的用戶端比較"
                      f"（第 4 節）。"), False


#: 5.7's answer is the stopwatch labkit.bench's client already is: it may not call it, nor read
#: the scripted server's timetable instead of timing the stream.
TIMER_RULE = Rule(
    forbid=("labkit.bench", "labkit.lessons.live", "labkit.lessons.scripted_server"),
    instead=Both("Write the stopwatch yourself: send the request with an HTTP client (urllib, "
                 "httpx), read the stream chunk by chunk, and take the times on your own clock.",
                 "請自己寫出這個碼錶：用 HTTP 用戶端（urllib、httpx）送出請求，一個片段一個片段地"
                 "讀串流，用你自己的時鐘記下時間。"))

#: Seconds a stopwatch may take on one timetable (a timetable lasts under 2 s).
TIMER_LIMIT_S = 30.0


def _timetable(script) -> str:
    """A timetable as a verdict names it."""
    lead = [t for t, f, x in script.tokens if t < script.ttft_s]
    return pick(f"The server's timetable: {len(lead)} tokens without visible text from "
                f"{lead[0]:.2f} s, the first visible text at {script.ttft_s:.2f} s, the last token "
                f"at {script.last_token_s:.2f} s, the end of the stream at {script.end_s:.2f} s, "
                f"{script.n_tokens} tokens in all",
                f"伺服器的時間表：從 {lead[0]:.2f} 秒起有 {len(lead)} 個沒有可見文字的 token，"
                f"第一段可見文字在 {script.ttft_s:.2f} 秒，最後一個 token 在 "
                f"{script.last_token_s:.2f} 秒，串流在 {script.end_s:.2f} 秒結束，一共 "
                f"{script.n_tokens} 個 token")


def _time_one(fn, script) -> tuple[bool, str]:
    """The verdict on the learner's stopwatch on one timetable (a verdict about time is
    tried twice: a busy machine can spoil it)."""
    from ..lessons.scripted_server import ScriptedServer
    for attempt in range(2):
        with ScriptedServer(script) as srv:
            try:
                out = call(fn, srv.base_url, TIMER_PROMPT, rule=TIMER_RULE,
                           limit_s=TIMER_LIMIT_S)
            except LearnerCodeError as exc:
                if srv.misses and not srv.requests:
                    method, path = srv.misses[-1]
                    return False, pick(f"{exc}. The server was asked for {method} {path}; "
                                       f"chat requests go to POST base_url + "
                                       f"'/v1/chat/completions'",
                                       f"{exc}。伺服器收到的是 {method} {path}；聊天請求"
                                       f"要送到 POST base_url + '/v1/chat/completions'")
                raise
        right, hint, retry = _timer_verdict(script, srv, out)
        if right or not retry:
            break
    if not right:
        hint = f"{hint}{pick('. ', '。')}{_timetable(script)}{pick('.', '。')}"
    return right, hint


@exercise("5.7", Both("Write timer(base_url, prompt) -> (ttft_s, completion_s, n_tokens): send "
                      "one streaming chat request and time it as the worksheet does.",
                      "寫出 timer(base_url, prompt) -> (ttft_s, completion_s, n_tokens)：送出一個"
                      "串流的聊天請求，用工作表的方式替它計時。"), kind=CODE)
def _timer(fn):
    from ..lessons.scripted_server import Script
    require_function(fn)
    for script in (Script.default(), Script.drawn(cases_rng())):
        right, hint = _time_one(fn, script)
        if not right:
            return False, hint
    return True, pick(f"right on the fixed timetable and on one drawn just now. {hint}",
                      f"固定的時間表和剛剛隨機產生的時間表都對。{hint}")


# ---------------------------------------------------------------------------- 5.8 decode speed

@exercise("5.8", Both("A request generated 35 tokens; its first token came 2.50 s after it was "
                      "sent and its last at 3.35 s. From the client's clock, its decode speed in "
                      "tok/s?",
                      "一個請求生成了 35 個 token；送出後 2.50 秒收到第一個 token，3.35 秒收到"
                      "最後一個。只看用戶端的時鐘，它的解碼速度是多少 tok/s？"))
def _decode_speed(answer):
    v = quantity(answer, "tok/s")
    if 34 / 0.85 * 0.95 <= v <= 35 / 0.85 * 1.05:
        return True, pick("the server's timings.predicted_per_second measures the same span, "
                          "first token to last, on its own clock",
                          "伺服器的 timings.predicted_per_second 量的是同一段，從第一個 token "
                          "到最後一個，只是用它自己的時鐘")
    if abs(v - 35 / 3.35) < 0.2:
        return False, pick("that divides by the whole time since sending, which includes "
                           "waiting for a slot and reading the prompt; decode speed starts at "
                           "the first token",
                           "那是除以從送出開始的全部時間，裡面包含等槽位和讀提示；"
                           "解碼速度要從第一個 token 開始算")
    if abs(v - 35 / 2.5) < 0.2:
        return False, pick("2.50 s is the time to the first token: decode happens after it",
                           "2.50 秒是等到第一個 token 的時間：解碼發生在那之後")
    return False, pick("tok/s = tokens generated during decode / the seconds decode took",
                       "tok/s = 解碼期間生成的 token 數 ÷ 解碼花的秒數")
