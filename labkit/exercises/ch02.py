"""Notebook 02 (a batcher built by hand): counting llama_decode calls, why a step that reads a
prompt is slower, and chunked prefill written by the learner and checked against the engine."""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

from . import CODE, LearnerCodeError, call, exercise, open_question
from .learner_code import Rule, cases_rng, refusal, require_function
from .quantities import quantity
from ..lang.i18n import Both, pick
from ..lessons.handbuilt import (chat_tokens, context, engine_run, first_difference,
                                 guarded_decode, pattern, schedule)


def decode_calls(prompt_lens, n_slots: int, answer_lens, n_batch: int = 2048) -> int:
    """How many llama_decode calls the engine's rules make for these lengths (see
    :func:`labkit.lessons.handbuilt.schedule`)."""
    return len(schedule(list(prompt_lens), n_slots, answer_lens, n_batch))


@exercise("2.1", Both("Three prompts of 30 tokens arrive together at a batcher with 2 slots; every "
                      "answer is exactly 5 tokens long and a whole prompt fits in one batch. How "
                      "many llama_decode calls serve all three?",
                      "三個 30 token 的提示同時送到一個有 2 個槽位的批次器；每個回答剛好 5 個 token，"
                      "一整個提示放得進一個批次。服務完這三個請求，總共要呼叫幾次 llama_decode？"))
def _calls(answer):
    v = quantity(answer, "steps")
    want = decode_calls([30, 30, 30], 2, 5)
    if v == want:
        return True, ""
    if v == 15:
        return False, pick("that is one call per token per request; the two seated requests share "
                           "every call",
                           "這是每個請求的每個 token 各呼叫一次；已經入座的兩個請求共用每一次呼叫")
    if v == want - 1:
        return False, pick("a slot freed by a call takes the next prompt in the call after it, not "
                           "in the same one: its prompt was not yet in that batch",
                           "某次呼叫空出來的槽位，要到下一次呼叫才接下一個提示，不是同一次："
                           "那個提示還不在那一次的批次裡")
    if v in (5, 6):
        return False, pick("only two of the three fit at once: the third waits for a free slot",
                           "三個裡同時只放得下兩個：第三個要等槽位空出來")
    return False, pick("write the step table by hand: which requests are in each call, and when "
                       "does each of them sample its first and its last token?",
                       "動手寫出步驟表：每次呼叫裡有哪些請求？每個請求在哪一次取樣出第一個和"
                       "最後一個 token？")


open_question(
    "2.2",
    Both("In your step table, compare a step that read a new prompt with a decode-only step "
         "that had the same slots busy: how long did each take, and why is the first one slower?",
         "在你的步驟表裡，拿一個讀入新提示的步驟，和一個同樣槽位在忙、只做解碼的步驟比較："
         "各花了多久？為什麼前者比較慢？"),
    model_answer=Both(
        "The step that read a prompt of about 35 tokens next to one decode took several times "
        "as long as a step of two decodes (your table has the two figures). llama.cpp runs "
        "the model, reading every weight, once per micro-batch of a step: the decode-only step "
        "is one micro-batch, and with this notebook's split KV the admitting step is two (one "
        "token from each slot, then the rest of the prompt), so it reads the weights twice, "
        "not 35 times. What grows with the tokens is the arithmetic, one row of every matrix "
        "product per token: about 36 rows against two, so far more work, yet much less than "
        "35 separate decode steps would take. "
        "The other slot's token waits for that longer step: that is the price a newcomer's "
        "prefill puts on everyone already generating, and what chunked prefill spreads out.",
        "在一個解碼旁邊讀入約 35 個 token 提示的那一步，花的時間是兩個解碼那一步的好幾倍"
        "（兩個數字都在你的表裡）。llama.cpp 每個實體批次跑一次模型、把每個權重讀一次：只解碼的"
        "那一步是一個實體批次；這本筆記本用分割 KV，讀入提示的那一步是兩個（先從每個槽位各取一個 "
        "token，再跑提示剩下的部分），所以權重讀兩次，不是 35 次。隨 token 變多的是運算量："
        "每個 token 在每個矩陣乘法裡占一列，約 36 列對兩列，工作多得多，但還是遠少於分開做 35 "
        "次解碼。另一個槽位的 "
        "token 要等這個比較長的步驟：這就是新來者的預填讓所有正在生成的請求付出的代價，"
        "也是分塊預填（chunked prefill）要攤開的東西。"),
    rubric=[Both("quotes the two durations from their own table",
                 "引用自己表裡的兩個耗時"),
            Both("says the admitting step carries many more tokens (the whole prompt) than a "
                 "decode-only step (one token per generating slot)",
                 "說出讀入提示的一步裝的 token 多得多（整個提示），只解碼的一步則是每個生成中的"
                 "槽位一個 token"),
            Both("says the cost per step grows with the tokens in the batch, while reading the "
                 "weights is paid once per micro-batch (here one or two per step), not per token",
                 "說出每一步的成本隨批次裡的 token 數增加，而讀權重是每個實體批次付一次（這裡每一步"
                 "一或兩次），不是每個 token 一次"),
            Both("notes that the other slot's next token is delayed by the longer step",
                 "指出另一個槽位的下一個 token 被這個比較長的步驟拖慢了")],
    needs_number=True)


# The code exercise: real prompts, the engine's answer as the reference.
QUESTIONS = ("Say hi.", "What is the capital of France?", "Name three colours.")
N_SLOTS, MAX_TOKENS, N_BATCH = 2, 6, 16
#: The questions a drawn case takes two to four of.
MORE_QUESTIONS = QUESTIONS + ("What is 2+2?", "What is a cat?", "Translate 'cat' to French.",
                              "Count from one to ten.", "Name a fruit.")
#: Seconds the learner's batcher may take on one case, loading its context included.
BATCHER_LIMIT_S = 300.0


def drawn_batch_case(rng) -> tuple[tuple[str, ...], int, int, int]:
    """One case drawn at check time: (questions, n_slots, max_tokens, n_batch): two to four
    questions, 1 to 3 slots, answers of 2 to 8 tokens, n_batch of 8 to 40."""
    questions = tuple(rng.sample(MORE_QUESTIONS, rng.randint(2, 4)))
    return questions, rng.randint(1, 3), rng.randint(2, 8), rng.randint(8, 40)


@lru_cache(maxsize=8)
def _reference(questions: tuple[str, ...] = QUESTIONS, n_slots: int = N_SLOTS,
               max_tokens: int = MAX_TOKENS, n_batch: int = N_BATCH):
    """The chat prompts and the engine's texts and steps for them (computed once a process
    for each case)."""
    with context(n_slots, n_batch=n_batch) as lab:
        prompts = chat_tokens(lab.model, lab.vocab, list(questions))
    return prompts, engine_run(prompts, n_slots, max_tokens, n_batch=n_batch)


@contextmanager
def _lent(n_slots: int, n_batch: int):
    """The context lent to the learner's batcher, guarded against a batch over n_batch: made
    and freed in the batcher's own thread, so a batcher stopped at its time limit keeps it
    until it is done."""
    with context(n_slots, n_batch=n_batch) as lab, guarded_decode():
        yield lab.ctx, lab.vocab


#: 2.3 is the batcher labkit's engine is: its answer builds the batches with llama.cpp's C API.
BATCHER_RULE = Rule(
    forbid=("labkit.engine", "labkit.lessons.handbuilt:engine_run", "labkit.lessons.live",
            "labkit.server", "labkit.bench"),
    allow=("labkit.engine.native", "labkit.engine.vocabulary"),
    instead=Both("Write the batcher yourself, as the notebook's batcher does: fill a batch "
                 "with llama_cpp.llama_batch_init and call llama_cpp.llama_decode.",
                 "請自己寫出批次器，像筆記本裡的 batcher 那樣：用 llama_cpp.llama_batch_init "
                 "填一個批次，再呼叫 llama_cpp.llama_decode。"))


def _about(questions, n_slots, max_tokens, n_batch) -> str:
    return pick(f"The case: the questions {list(questions)}, n_slots={n_slots}, "
                f"max_tokens={max_tokens}, n_batch={n_batch}.",
                f"這個情況：問題 {list(questions)}、n_slots={n_slots}、max_tokens={max_tokens}、"
                f"n_batch={n_batch}。")


@exercise("2.3", Both("Write chunked_batcher(ctx, vocab, prompts, n_slots, max_tokens, n_batch): "
                      "the batcher of this notebook, but no llama_decode may carry more than "
                      "n_batch tokens. Each step holds one decode token for every generating slot "
                      "first, then prompt tokens in arrival order in the room left, so a long "
                      "prompt is read over several steps; a request samples its first token only "
                      "when its prompt's last chunk is in. Return (texts, steps) as batcher does.",
                      "寫出 chunked_batcher(ctx, vocab, prompts, n_slots, max_tokens, n_batch)："
                      "就是這本筆記本的批次器，但每次 llama_decode 最多只能裝 n_batch 個 token。"
                      "每一步先替每個生成中的槽位放一個解碼 token，剩下的空間再依到達順序放提示"
                      " token，所以長提示會分好幾步讀完；一個請求要等提示的最後一塊讀進去，才取樣"
                      "第一個 token。和 batcher 一樣回傳 (texts, steps)。"),
          kind=CODE, needs_model=True)
def _chunked(fn):
    require_function(fn)
    refused = refusal(fn, BATCHER_RULE)           # before the model is loaded
    if refused:
        return False, refused
    drawn = drawn_batch_case(cases_rng())
    for case in ((QUESTIONS, N_SLOTS, MAX_TOKENS, N_BATCH), drawn):
        right, hint = _chunked_case(fn, *case)
        if not right:
            return False, f"{hint.rstrip('.。')}{pick('. ', '。')}{_about(*case)}"
    return True, pick(f"the same texts and the same steps as the engine's with n_batch = "
                      f"{N_BATCH}, and on a case drawn just now ({len(drawn[0])} questions, "
                      f"{drawn[1]} slot{'s' if drawn[1] > 1 else ''}, n_batch = {drawn[3]})",
                      f"文字和步驟都和 n_batch = {N_BATCH} 的引擎相同，剛剛隨機產生的情況"
                      f"（{len(drawn[0])} 個問題、{drawn[1]} 個槽位、n_batch = {drawn[3]}）也一樣")


def _chunked_case(fn, questions, n_slots, max_tokens, n_batch) -> tuple[bool, str]:
    prompts, ref = _reference(questions, n_slots, max_tokens, n_batch)
    try:
        got = call(fn, [list(p) for p in prompts], n_slots, max_tokens, n_batch,
                   rule=BATCHER_RULE, limit_s=BATCHER_LIMIT_S,
                   within=lambda: _lent(n_slots, n_batch))
    except LearnerCodeError as exc:
        note = ""
        if "n_batch" in str(exc):
            note = pick(" Count the tokens you put into one batch: the decode tokens take their "
                        "room first, and a prompt that does not fit the rest waits for the next "
                        "step.", "數一數你放進一個批次的 token：解碼 token 先占位，放不進剩下"
                        "空間的提示部分，等下一步再讀。")
        return False, f"{str(exc).rstrip('.。')}{pick('.', '。')}{note}"
    if not (isinstance(got, tuple | list) and len(got) == 2):
        return False, pick("return two things, (texts, steps), as the notebook's batcher does",
                           "要回傳兩樣東西 (texts, steps)，和筆記本裡的 batcher 一樣")
    texts, steps = got
    if not isinstance(texts, list) or len(texts) != len(prompts) \
            or not all(isinstance(t, str) for t in texts):
        return False, pick(f"texts should be a list with one string per prompt ({len(prompts)})",
                           f"texts 應該是一個串列，每個提示一個字串（共 {len(prompts)} 個）")
    try:
        steps_pattern = pattern(steps)
    except (TypeError, ValueError):
        return False, pick("each step should be (ms, [(slot, request, action, n_tokens), ...]), "
                           "as in the notebook's batcher",
                           "每一步應該是 (ms, [(slot, request, action, n_tokens), ...])，"
                           "和筆記本裡的 batcher 一樣")
    too_big = [i for i, step in enumerate(steps_pattern) if sum(w[3] for w in step) > n_batch]
    if too_big:
        return False, pick(f"step {too_big[0]} of your table lists more than n_batch = {n_batch} "
                           "tokens",
                           f"你的表第 {too_big[0]} 步列了超過 n_batch = {n_batch} 個 token")
    diff = first_difference(steps, ref.steps)
    if diff:
        return False, pick(f"with n_batch = {n_batch}, your schedule parts from the engine's at "
                           f"{diff}. Put the generating slots' tokens in first, then fill what is "
                           "left with prompt chunks, oldest request first",
                           f"n_batch = {n_batch} 時，你的排程和引擎的在這裡分開：{diff}。"
                           "先放生成中槽位的 token，剩下的空間再用提示分塊填滿，最早到的請求先放")
    wrong = [i for i, (a, b) in enumerate(zip(texts, ref.texts)) if a != b]
    if wrong:
        i = wrong[0]
        return False, pick(f"your schedule matches the engine's but request #{i}'s text does not: "
                           f"yours {texts[i]!r}, the engine's {ref.texts[i]!r}. Check the "
                           "positions each chunk's tokens get, and that you sample from the logits "
                           "of the prompt's last token only",
                           f"你的排程和引擎的一樣，但請求 #{i} 的文字不同：你的是 {texts[i]!r}，"
                           f"引擎的是 {ref.texts[i]!r}。檢查每一塊的 token 拿到的位置，"
                           "以及是不是只從提示最後一個 token 的 logits 取樣")
    return True, ""


@exercise("2.4", Both("A batcher with 2 slots and n_batch = 32 gets two prompts of 40 tokens at "
                      "once; each answer is exactly 3 tokens. With chunked prefill, how many "
                      "llama_decode calls serve both?",
                      "一個有 2 個槽位、n_batch = 32 的批次器同時收到兩個 40 token 的提示；每個回答"
                      "剛好 3 個 token。用分塊預填，服務完兩個請求要呼叫幾次 llama_decode？"))
def _chunked_calls(answer):
    v = quantity(answer, "steps")
    want = decode_calls([40, 40], 2, 3, n_batch=32)
    if v == want:
        return True, ""
    if v == decode_calls([40, 40], 2, 3):
        return False, pick("both 40-token prompts do not fit in one batch of 32 tokens",
                           "兩個 40 token 的提示放不進一個 32 token 的批次")
    if v in (want + 1, want + 2):
        return False, pick("the second prompt's first chunk rides in the step that finishes the "
                           "first prompt, and its decodes ride with the first request's",
                           "第二個提示的第一塊，搭的是讀完第一個提示的那一步；它的解碼也和"
                           "第一個請求的解碼同一步")
    return False, pick("draw the steps: in each, the decode tokens first, then prompt tokens in "
                       "the room left of 32",
                       "把步驟畫出來：每一步先放解碼 token，32 個位置裡剩下的空間再放提示 token")
