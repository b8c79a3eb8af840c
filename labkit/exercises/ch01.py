"""Notebook 01 (the restaurant): the five parts, static batching's idle seats, slots and TTFT,
one step's cost by hand, and whether continuous batching needs PagedAttention."""

from __future__ import annotations

from ..lang.i18n import Both, pick
from . import CODE, as_word, call, choice, exercise, open_question
from .learner_code import Rule, cases_rng, number
from .quantities import quantity

FIVE_PARTS = {
    "guest's order": "request",
    "table": "slot",
    "table top": "context",
    "notes": "kv cache",
    "refilling tables at every step": "continuous batching",
}
# Each part's other names: the glossary's (English and Traditional Chinese, the seeds' words
# among them) and a few abbreviations learners write.
_ABBREVIATIONS = {
    "request": ("requests",),
    "slot": ("slots", "sequence"),
    "context": ("ctx", "n ctx slot"),
    "kv cache": ("kv", "kvcache"),
    "continuous batching": ("continuous", "cont batching"),
}


# The restaurant words in seed 000's Chinese (the glossary's 比喻 column), also accepted as keys.
RESTAURANT_ZH = {
    "guest's order": ("正在辦的單", "客人的單", "點單", "單"),
    "table": ("窗口", "桌", "桌子", "餐桌"),
    "table top": ("桌面",),
    "notes": ("已讀筆記", "筆記"),
    "refilling tables at every step": ("每輪換桌名單", "每輪換桌", "換桌名單"),
}


def _parts() -> dict[str, tuple[str, ...]]:
    """Each part's accepted names, without the restaurant words (窗口 is the picture of a slot,
    not the llama.cpp part, so {"窗口": "窗口"} does not pass)."""
    from ..lang.glossary import lookup, options
    return {k.lower(): tuple(w for w in v if w != lookup(k).metaphor)
            + _ABBREVIATIONS.get(k.lower(), ())
            for k, v in options(*_ABBREVIATIONS).items()}


def _part(word):
    try:
        return choice(word, _parts())
    except ValueError:
        return as_word(word)


def _key(word):
    try:
        return choice(word, RESTAURANT_ZH)
    except ValueError:
        return as_word(word)


def _named(keys) -> str:
    """Restaurant words as the learner reads them: English, or seed 000's Chinese."""
    return pick(", ".join(f'"{k}"' for k in keys),
                "、".join(f"「{RESTAURANT_ZH[k][0]}」（`{k}`）" for k in keys))


@exercise("1.1", Both(
    "Map each restaurant word to its llama.cpp part: a dict with the keys "
    f"{list(FIVE_PARTS)} and values among request, slot, context, KV cache, continuous batching.",
    "把每個餐廳裡的說法對應到 llama.cpp 的零件：寫一個 dict，鍵是 "
    + "、".join(f'`"{k}"`' for k in FIVE_PARTS) + "（也可以用種子文章的說法："
    + "、".join(f'"{v[0]}"' for v in RESTAURANT_ZH.values()) + "），值從請求、槽位、上下文、"
    "KV 快取、連續批次之中選（中英文都可以）。"))
def _five_parts(answer):
    if not isinstance(answer, dict):
        return False, pick('answer with a dict such as {"table": "...", "notes": "...", ...}',
                           '請用 dict 作答，例如 {"窗口": "...", "已讀筆記": "...", ...}')
    got = {_key(k): v for k, v in answer.items()}
    missing = [k for k in FIVE_PARTS if k not in got]
    if missing:
        return False, pick(f"the dict lacks {_named(missing)}", f"這個 dict 少了{_named(missing)}")
    metaphors = [k for k in FIVE_PARTS if isinstance(got[k], str) and _key(got[k]) in FIVE_PARTS]
    if metaphors:
        return False, pick(f"the values for {_named(metaphors)} are restaurant words too: write "
                           "the llama.cpp part each one stands for",
                           f"{_named(metaphors)}的值也是餐廳裡的說法：請寫出它在 llama.cpp 裡"
                           "對應的零件")
    wrong = [k for k, v in FIVE_PARTS.items() if _part(got[k]) != v]
    if wrong:
        return False, pick(f"look again at {_named(wrong)}: the glossary table at the top of the "
                           "notebook has a 'restaurant' column",
                           f"再看一次{_named(wrong)}：筆記本開頭的詞彙表有「比喻」和「餐廳裡」兩欄")
    return True, ""


def static_idle_steps(outputs=(10, 20, 40, 400)) -> int:
    """Steps the shortest guest's table sits idle in one static batch (one token per step)."""
    return max(outputs) - min(outputs)


@exercise("1.2", Both(
    "Static batching, 4 slots, four guests arrive together wanting 10, 20, 40 and 400 output "
    "tokens (one token per step). For how many steps does the 10-token guest's table sit empty "
    "before the next batch may start?",
    "靜態批次、4 個槽位：四位客人同時到達，分別要 10、20、40 和 400 個輸出 token（每一步一個 "
    "token）。要 10 個 token 的那位客人的桌子，在下一批可以開始之前要空等幾步？"))
def _idle(answer):
    v = quantity(answer, "steps")
    want = static_idle_steps()
    if v == want:
        return True, ""
    if v == 400:
        return False, pick("the 10-token guest was served during the first 10 of those 400 steps",
                           "要 10 個 token 的客人，在那 400 步的前 10 步裡就拿到回答了")
    return False, pick("the batch ends when its longest order is done; count from the short "
                       "guest's last token",
                       "整個批次要等最長的那張單做完才結束；從短單客人的最後一個 token 開始數")


def smallest_slots_for_ttft(limit_s: float = 1.0, rate: float = 4.0, mix: str = "mixed",
                            max_slots: int = 8):
    """The fewest slots whose p90 TTFT (continuous batching) is below ``limit_s``, or None."""
    from ..sim.experiments import restaurant_runs
    for s in range(1, max_slots + 1):
        run = restaurant_runs(slots=s, rate=rate, mix=mix, modes=("continuous",))["continuous"]
        if run.summary()["ttft_p90"] < limit_s:
            return s
    return None


@exercise("1.3", Both(
    "In the control panel (continuous batching, 24 guests at 4 arrivals/s, mix 'mixed'), what is "
    "the smallest number of slots for which the p90 TTFT is below 1 s?",
    "在控制面板裡（連續批次、24 位客人、每秒到達 4 位、回答長短混合 'mixed'），p90 首字等待"
    "低於 1 秒的最少槽位數是多少？"))
def _slots_for_ttft(answer):
    want = smallest_slots_for_ttft()
    v = quantity(answer, "slots")
    if v == want:
        return True, ""
    if v > want:
        return False, pick("fewer slots already do it: try panel.update(slots=...) going down",
                           "更少的槽位就做得到了：用 panel.update(slots=...) 往下試")
    return False, pick("with that many slots p90 TTFT is still above 1 s: read the 'continuous' row",
                       "這麼多槽位時，p90 首字等待還在 1 秒以上：看「連續批次」（continuous）那一列")


@exercise("1.4", Both(
    "One step carries one decode token for each of 3 generating slots plus a 200-token chunk of a "
    "new prompt. How many tokens does that llama_decode process?",
    "一步裡載著 3 個正在生成的槽位各一個解碼 token，再加上一段新提示的 200 個 token。這一次 "
    "llama_decode 要處理多少個 token？"))
def _tokens_in_step(answer):
    v = quantity(answer, "tokens")
    if v == 203:
        return True, ""
    if v == 200:
        return False, pick("the three generating slots each add their one decode token to the "
                           "same batch", "三個正在生成的槽位，也各把一個解碼 token 放進同一個批次")
    if v == 3:
        return False, pick("the prompt chunk rides in the same batch as the decode tokens",
                           "提示片段和解碼 token 搭的是同一個批次")
    return False, pick("one batch = every decode token + the prompt tokens that fit",
                       "一個批次 = 所有解碼 token + 放得下的提示 token")


def step_ms_of_1_4(cost=None) -> float:
    """The step of exercise 1.4 under the simulator's RTX 4090 preset, in milliseconds: three
    decoding slots of 300, 500 and 700 cells, and the first 200-token chunk of a prompt."""
    from ..sim import preset
    cost = cost or preset("rtx4090", "8b-q4")
    attended = (300 + 1) + (500 + 1) + (700 + 1) + 200
    pairs = 200 * (0 + 200 / 2)
    return 1000 * (cost.a + cost.b * 200 + cost.c * 3 + cost.d * attended
                   + getattr(cost, "e", 0.0) * pairs)


@exercise("1.5", Both(
    "With the simulator's RTX 4090 preset, how many milliseconds does the step of exercise 1.4 "
    "take if the generating slots hold 300, 500 and 700 cells before it and the 200-token chunk "
    "starts a new prompt?",
    "用模擬器的 RTX 4090 預設值：如果這一步之前，三個正在生成的槽位各占 300、500、700 格，"
    "而那 200 個 token 是一段新提示的開頭，練習 1.4 的那一步要花幾毫秒？"))
def _step_ms(answer):
    want = step_ms_of_1_4()
    v = quantity(answer, "ms")
    if abs(v - want) <= 0.001 * want:
        return True, ""
    if abs(1000 * v - want) <= 0.001 * want:
        return False, pick("that looks like seconds; the question asks for milliseconds",
                           "這看起來是秒；題目問的是毫秒")
    if v < want:
        return False, pick("some of the step's work is missing: every term of the cost formula "
                           "applies, and each sequence in the batch attends to all of its cells",
                           "這一步的工作少算了：成本公式的每一項都要算，而且批次裡每條序列"
                           "都會對自己所有的格子做注意力")
    return False, pick("too much: count the cells each sequence holds once this step's tokens "
                       "are in, and the prompt pairs of a chunk that starts from an empty slot",
                       "算多了：每條序列的格數，要算放進這一步的 token 之後有幾格；提示配對數，"
                       "要照「從空槽位開始的一段」來算")


open_question(
    "1.7",
    Both("Seed 001 says continuous batching needs PagedAttention. From your live run, do you "
         "agree? What does PagedAttention add, and when would you want it?",
         "種子文章 001 說連續批次需要 PagedAttention。根據你自己這一輪的即時執行，你同意嗎？"
         "PagedAttention 多帶來了什麼？你什麼時候會需要它？"),
    model_answer=Both(
        "No. In my run the engine read a new prompt in 3 of its steps while the other slots "
        "kept decoding, on llama.cpp with one fixed stripe of cells per slot and no pages: "
        "continuous batching is a scheduling decision taken between steps (Orca, OSDI 2022). "
        "PagedAttention (vLLM, SOSP 2023) hands out KV memory in small blocks as sequences "
        "grow, so little memory sits reserved but unused and more sequences fit in one batch. "
        "I would want it when memory, not arithmetic, limits the batch: long and uneven "
        "requests on a GPU, where split stripes sized for the longest request leave most "
        "cells empty.",
        "不同意。在我這一輪裡，引擎有 3 步在其他槽位繼續解碼的同時讀進新的提示；用的是 "
        "llama.cpp，每個槽位固定一段格子，沒有分頁。所以連續批次是在步與步之間做的排程決定"
        "（Orca，OSDI 2022）。PagedAttention（vLLM，SOSP 2023）在序列變長時才以小區塊分配 "
        "KV 記憶體，「已保留卻沒用到」的記憶體很少，一個批次就放得下更多序列。當限制批次的是"
        "記憶體而不是運算時，我會想要它：GPU 上又長又參差的請求，若按最長請求切出固定的分割段，"
        "大部分格子都會空著。"),
    rubric=[Both("disagrees, with the run's own evidence: steps that mixed a new prompt with "
                 "other slots' decoding, and a KV cache without pages",
                 "不同意，並拿這一輪自己的證據：有幾步把新提示和其他槽位的解碼混在一起，"
                 "以及沒有分頁的 KV 快取"),
            Both("says what continuous batching is: the batch is rebuilt at every step",
                 "說出連續批次是什麼：每一步都重新組批次"),
            Both("says what PagedAttention is about: KV memory allocated in blocks on demand, "
                 "less reserved-but-unused memory, so a bigger batch fits",
                 "說出 PagedAttention 處理的是什麼：KV 記憶體按需要以區塊分配，已保留卻沒用到的"
                 "記憶體變少，所以放得下更大的批次"),
            Both("names when that matters: memory-bound batch size, long or uneven requests",
                 "指出什麼時候這很重要：批次大小受記憶體限制、請求很長或長短不一")],
    min_words=30, needs_number=True)


NO_CONT_CASES = [
    ([(0.0, 300, 4), (0.0, 120, 2), (0.01, 200, 3)], 2),
    ([(0.0, 64, 12), (0.005, 500, 3), (0.006, 80, 5), (0.2, 40, 2)], 3),
]


def drawn_guests(rng) -> tuple[list[tuple[float, int, int]], int]:
    """One case drawn at check time: 2 to 6 guests, some arriving together at 0, the others
    spread over 0.3 s, prompts of 8 to 600 tokens and answers of 1 to 12, on 1 to 4 slots.
    Listed in arrival order, so the order guests arriving together are seated in is the
    list's, as in the simulator."""
    guests = sorted((rng.choice((0.0, round(rng.uniform(0.0, 0.3), 3))), rng.randint(8, 600),
                     rng.randint(1, 12)) for _ in range(rng.randint(2, 6)))
    return guests, rng.randint(1, 4)


def no_cont_steps(guests, slots: int) -> list[float]:
    """The step durations of ``guests`` ((arrival, prompt, answer) tuples) on ``slots`` slots
    with llama.cpp's --no-cont-batching, from the simulator (RTX 4090 preset)."""
    from ..sim import Request, preset, simulate
    reqs = [Request(id=i, arrival=a, prompt_tokens=p, output_tokens=o)
            for i, (a, p, o) in enumerate(guests)]
    run = simulate(reqs, slots=slots, cost=preset("rtx4090", "8b-q4"), batching="no_cont")
    return [float(x) for x in run.steps["dur_s"]]


#: 1.6 is the loop the simulator runs: its answer may use the step cost it is handed, never
#: the simulator.
NO_CONT_RULE = Rule(
    forbid=("labkit.sim",), allow=("labkit.sim.cost", "labkit.sim.requests"),
    instead=Both("Write the loop yourself: start from run_by_hand and change the step in which "
                 "a prompt may be read; the cost argument gives each step's duration.",
                 "請自己寫出這個迴圈：從 run_by_hand 開始，改掉可以讀提示的那一步；每一步的"
                 "耗時用傳進來的 cost 計算。"))


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.4g} ms"


@exercise("1.6", Both(
    "Write run_no_cont(guests, slots, cost): run_by_hand's loop, but a prompt is read only in a "
    "step where no slot is generating (llama.cpp --no-cont-batching). Return each step's duration.",
    "寫出 run_no_cont(guests, slots, cost)：沿用 run_by_hand 的迴圈，但只有在沒有任何槽位正在"
    "生成的那一步才讀提示（llama.cpp 的 --no-cont-batching）。回傳每一步的耗時。"), kind=CODE)
def _no_cont(fn):
    import math

    from ..sim import preset
    cost = preset("rtx4090", "8b-q4")
    rng = cases_rng()
    cases = NO_CONT_CASES + [drawn_guests(rng) for _ in range(4)]
    for guests, slots in cases:
        want = no_cont_steps(guests, slots)
        out = call(fn, [tuple(g) for g in guests], slots, cost, rule=NO_CONT_RULE)
        if not isinstance(out, (list, tuple)):
            return False, pick(f"return the list of step durations (yours returned {out!r:.60})",
                               f"請回傳每一步耗時的串列（你的函式回傳了 {out!r:.60}）")
        got = [number(x, pick("each step's duration", "每一步的耗時")) for x in out]
        if len(got) == len(want) and all(math.isclose(g, w, rel_tol=1e-9) for g, w in zip(got, want)):
            continue
        first = next((i for i, (g, w) in enumerate(zip(got, want))
                      if not math.isclose(g, w, rel_tol=1e-9)), min(len(got), len(want)))
        yours = got[first] if first < len(got) else None
        rule = want[first] if first < len(want) else None
        return False, pick(f"{len(guests)} guests on {slots} slots: your run has {len(got)} "
                           f"steps, llama.cpp's rule gives {len(want)}, and they first differ at "
                           f"step {first} (yours {_ms(yours)}, the rule's {_ms(rule)}). In that "
                           "step, was any slot generating, and was a prompt read? The case: "
                           f"guests={guests}, slots={slots}",
                           f"{len(guests)} 位客人、{slots} 個槽位：你的執行有 {len(got)} 步，"
                           f"llama.cpp 的規則是 {len(want)} 步，兩者從第 {first} 步開始不同"
                           f"（你的 {_ms(yours)}，規則的 {_ms(rule)}）。在那一步，有沒有槽位正在"
                           f"生成？有沒有讀提示？這個情況：guests={guests}，slots={slots}")
    return True, pick(f"the same steps as llama.cpp's rule in all {len(cases)} cases, "
                      f"{len(cases) - len(NO_CONT_CASES)} of them drawn just now",
                      f"{len(cases)} 個情況的步驟全都和 llama.cpp 的規則相同，其中 "
                      f"{len(cases) - len(NO_CONT_CASES)} 個是剛剛隨機產生的")
