"""Notebook 04 (split vs unified): padding, the training cap, -np auto, reservations,
--kv-unified-per-slot, -b versus -np, a pool that runs out, a function that sizes a slot, and
a decision for a team. Every question, hint, model answer and rubric item in English and in
Traditional Chinese (labkit.lang.i18n.Both, pick)."""

from __future__ import annotations

from ..models import catalog, kv
from ..lang.i18n import Both, pick
from . import CODE, call, choice, exercise, open_question
from .learner_code import Rule, cases_rng
from .quantities import quantity

# The embedded model's training context, from the catalogue (its file says the same).
SMOLLM2_N_CTX_TRAIN = catalog.get("smollm2-135m").n_ctx_train

KV_MODES = {
    "unified": ("true", "yes", "--kv-unified", "unified kv", "shared", "shared pool",
                "unified pool", "共用", "共用桌", "共池", "共用池", "共同容量池", "統一", "統一 kv",
                "統一池"),
    "split": ("false", "no", "--no-kv-unified", "split kv", "分割", "分割 kv", "分桌", "分割配置"),
}


def _tuple(answer, n):
    if not isinstance(answer, (tuple, list)) or len(answer) != n:
        raise ValueError(pick(f"expected a tuple of {n} values", f"這裡要的是 {n} 個值的 tuple"))
    return tuple(answer)


# ---------------------------------------------------------------------------- 4.1 the training cap

@exercise("4.1", Both("SmolLM2 was trained on 8192 tokens. With -c 16384 -np 1 (split KV), what "
                      "n_ctx_slot does the server report?",
                      "SmolLM2 的訓練上下文是 8192 個 token。用 -c 16384 -np 1（分割 KV）時，"
                      "伺服器回報的 n_ctx_slot 是多少？"))
def _train_cap(answer):
    want = kv.slot_context(16384, 1, False, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    v = quantity(answer, "cells")
    if v == want:
        return True, ""
    if v == 16384:
        return False, pick("llama.cpp allocates 16384 cells for the one sequence, but llama-server "
                           "also caps a slot by something the model brings with it",
                           "llama.cpp 替這唯一的序列配置了 16384 格，但 llama-server 還會用模型"
                           "本身帶來的一個數字，替槽位設上限")
    return False, pick("one slot with split KV owns the whole pool; then ask how long a text the "
                       "model was trained to read",
                       "分割 KV 下只有一個槽位時，整個池都是它的；接著想想，這個模型訓練時一次讀的"
                       "文字有多長")


# ---------------------------------------------------------------------------- 4.2 padding

@exercise("4.2", Both("-c 1000 -np 3, split KV: what are n_ctx and n_ctx_seq after llama.cpp's "
                      "padding? Answer (n_ctx, n_ctx_seq).",
                      "-c 1000 -np 3、分割 KV：經過 llama.cpp 的補齊後，n_ctx 和 n_ctx_seq "
                      "各是多少？用 (n_ctx, n_ctx_seq) 作答。"))
def _padding(answer):
    sc = kv.slot_context(1000, 3, False)
    got = tuple(int(quantity(x, "cells")) for x in _tuple(answer, 2))
    if got == (sc.n_ctx, sc.n_ctx_seq):
        return True, ""
    if got[1] in (333, 341):
        return False, pick("each stripe is rounded up too, to a multiple of 256 cells",
                           "每一段也會補齊，進位到 256 格的倍數")
    if got[0] in (1000, 1024):
        return False, pick("once every stripe is rounded up, the total is no longer what -c said: "
                           "add the stripes up again",
                           "每一段都補齊之後，總數就不再是 -c 寫的那個數了：把各段重新加起來")
    return False, pick("llama.cpp rounds twice: the whole -c first, then each stripe",
                       "llama.cpp 補齊兩次：先補整個 -c，再補每一段")


# ---------------------------------------------------------------------------- 4.3 -np auto

@exercise("4.3", Both("You start llama-server with -c 8192 and no -np. Answer (n_slots, kv_unified, "
                      "n_ctx_slot) for SmolLM2; kv_unified may be True/False or a word such as "
                      "'unified' / '共用桌' or 'split' / '分割'.",
                      "你用 -c 8192 啟動 llama-server，沒寫 -np。對 SmolLM2 回答 (n_slots, "
                      "kv_unified, n_ctx_slot)；kv_unified 可以寫 True/False，或寫一個詞，"
                      "例如「統一」、「共用桌」或「分割」。"))
def _auto(answer):
    n, unified, slot = _tuple(answer, 3)
    n, slot = int(quantity(n, "slots")), int(quantity(slot, "cells"))
    if not isinstance(unified, bool):
        unified = choice(unified, KV_MODES) == "unified"
    want = kv.slot_context(8192, 4, True, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    if (n, unified, slot) == (4, True, want):
        return True, ""
    if n == 1:
        return False, pick("leaving out -np is not one slot: look at what llama-server chose by "
                           "itself in section 2's last row",
                           "不寫 -np 不等於一個槽位：看第 2 節最後一列，llama-server 自己選了什麼")
    if not unified:
        return False, pick("the slot count llama-server picks by itself comes with a KV mode of its "
                           "own: read kv_unified in that row",
                           "llama-server 自己選的槽數，也帶著它自己選的 KV 模式：讀那一列的 "
                           "kv_unified")
    if slot == 8192 // 4:
        return False, pick("in a shared pool a slot is not limited to its quarter of it",
                           "在共用的池裡，一個槽位不只能用四分之一")
    return False, pick("compare your three numbers with the -np auto row that llama-server printed",
                       "拿你的三個數字，和 llama-server 印出的 -np auto 那一列比一比")


# ---------------------------------------------------------------------------- 4.7 reserve

def reserved_at_once(pool: int = 4096, prompt: int = 900, max_tokens: int = 500,
                     requests: int = 4) -> int:
    return min(requests, pool // (prompt + max_tokens))


@exercise("4.7", Both("A unified pool of 4096 cells, reserve=True, four requests each with a "
                      "900-token prompt and max_tokens=500. How many run at the same time?",
                      "一個 4096 格的統一池，reserve=True，來了四個請求，每個的提示有 900 個 "
                      "token、max_tokens=500。同時有幾個在跑？"))
def _reserve(answer):
    v = quantity(answer, "requests")
    want = reserved_at_once()
    if v == want:
        return True, ""
    if v == 4:
        return False, pick("4 x (900 + 500) cells is more than the pool; reserve admits only what "
                           "surely fits",
                           "4 x (900 + 500) 格比池還大；reserve 只接一定放得下的請求")
    if v == 3:
        return False, pick("a request reserves room for its prompt and for every token it may "
                           "generate",
                           "一個請求要替它的提示、也替它可能生成的每一個 token 預留空間")
    return False, pick("reserve=True admits a request only when all the cells it may ever need are "
                       "free",
                       "reserve=True 只在一個請求可能用到的格子全都空著時，才把它接進來")


# ---------------------------------------------------------------------------- 4.4 FAQ 5

@exercise("4.4", Both("-np 4 --kv-unified --kv-unified-per-slot 1536 for SmolLM2 (trained on 8192). "
                      "How many KV cells does llama-server allocate without -c, and how many with "
                      "-c 4096? Answer (without, with).",
                      "SmolLM2（訓練上下文 8192 個 token）用 -np 4 --kv-unified "
                      "--kv-unified-per-slot 1536。沒寫 -c 時，llama-server 配置幾個 KV 格？"
                      "寫了 -c 4096 時又是幾個？用 (沒寫, 有寫) 作答。"))
def _per_slot_pool(answer):
    without, with_c = (int(quantity(x, "cells")) for x in _tuple(answer, 2))
    want = tuple(kv.server_slot_context(c, 4, True, n_ctx_train=SMOLLM2_N_CTX_TRAIN,
                                        per_slot=1536).n_ctx for c in (0, 4096))
    if (without, with_c) == want:
        return True, pick("the cap sizes the pool only when -c is left out; a -c you wrote stays as "
                          "it is (FAQ 5 of the seed)",
                          "只有沒寫 -c 時，這個上限才決定池的大小；你寫了的 -c 維持原樣"
                          "（種子文章的常見問題 5）")
    if without == SMOLLM2_N_CTX_TRAIN:
        return False, pick("without -c and without the cap, the training context would size the "
                           "pool; with --kv-unified-per-slot, llama-server's log says otherwise",
                           "沒寫 -c、也沒有上限時，池的大小才是訓練上下文；加上 "
                           "--kv-unified-per-slot 之後，llama-server 的日誌說的不一樣")
    if without == 1536 or with_c == 1536:
        return False, pick("1536 is what each slot may use, not the size of the shared pool",
                           "1536 是每個槽位能用的量，不是共用池的大小")
    if with_c != want[1]:
        return False, pick("does the per-slot cap change a -c that you wrote yourself? (FAQ 5)",
                           "每槽上限會改變你自己寫的 -c 嗎？（常見問題 5）")
    return False, pick("read the 'sizing KV pool' line of llama-server's log in section 3",
                       "讀第 3 節 llama-server 日誌裡 `sizing KV pool` 那一行")


# ---------------------------------------------------------------------------- 4.5 FAQ 6

@exercise("4.5", Both("llama-server -c 8192 -b 512 -ub 128 -np 2: how many requests does it serve "
                      "at the same time?",
                      "llama-server -c 8192 -b 512 -ub 128 -np 2：它同時服務幾個請求？"))
def _batch_is_not_slots(answer):
    v = quantity(answer, "requests")
    if v == 2:
        return True, pick("-b and -ub size the batches of tokens inside one llama_decode call; the "
                          "slot count alone says how many requests are served at once (FAQ 6)",
                          "-b 和 -ub 決定一次 llama_decode 呼叫裡 token 批次的大小；同時服務幾個"
                          "請求，只看槽數（常見問題 6）")
    if v == 512:
        return False, pick("-b counts tokens per llama_decode call, not requests (FAQ 6)",
                           "-b 算的是每次 llama_decode 呼叫的 token 數，不是請求數（常見問題 6）")
    if v == 128:
        return False, pick("-ub counts tokens per computation pass, not requests",
                           "-ub 算的是每一趟計算的 token 數，不是請求數")
    if v in (4, 16):
        return False, pick("no flag here is divided by another: each counts a different thing",
                           "這裡沒有哪個旗標要拿另一個來除：每個旗標算的是不同的東西")
    return False, pick("three flags, three different things: find the one that counts slots",
                       "三個旗標，三件不同的事：找出算槽位的那一個")


# ---------------------------------------------------------------------------- 4.8 the pool runs out

POOL_OUTCOMES = {
    "all fail": ("every request fails", "all requests fail", "every request in flight fails",
                 "fail all", "all 500", "全部失敗", "都失敗", "全部都失敗", "全部請求失敗",
                 "全都失敗", "都會失敗", "兩個都失敗", "所有請求失敗", "所有在途請求失敗",
                 "在途請求全部失敗", "全部 500"),
    "newest fails": ("the newest fails", "the last one fails", "one fails", "one request fails",
                     "最新的失敗", "一個失敗", "最後一個失敗", "最新的請求失敗", "只有一個失敗"),
    "they wait": ("wait", "queue", "the rest wait", "等待", "排隊", "等候", "其他請求等待"),
    "truncated": ("truncate", "cut", "context shift", "截斷", "被截斷", "截掉"),
}


@exercise("4.8", Both("Two requests generate at the same time in a 2-slot unified pool, and the pool "
                      "runs out. What does llama-server do with them: 'all fail', 'newest fails', "
                      "'they wait' or 'truncated' (or 全部失敗 / 最新的失敗 / 等待 / 截斷)?",
                      "在一個 2 槽位的統一池裡，兩個請求同時在生成，然後池用光了。llama-server "
                      "會怎麼處理它們？回答「全部失敗」、「最新的失敗」、「等待」或「截斷」"
                      "（英文的 all fail、newest fails、they wait、truncated 也可以）。"))
def _pool_runs_out(answer):
    said = choice(answer, POOL_OUTCOMES)
    if said == "all fail":
        return True, pick("both get HTTP 500 'Context size has been exceeded.': llama-server ends "
                          "every request in flight",
                          "兩個都收到 HTTP 500 `Context size has been exceeded.`：llama-server "
                          "結束了每一個在途請求")
    if said == "they wait":
        return False, pick("waiting is what labkit's own reserve=True does; section 6 shows "
                           "llama-server without it",
                           "等待是 labkit 自己的 reserve=True 的做法；第 6 節看的是沒有它的 "
                           "llama-server")
    if said == "truncated":
        return False, pick("with --no-context-shift (the seed's flags) nothing is cut; read the "
                           "HTTP statuses in section 6",
                           "用 --no-context-shift（種子文章的旗標）時什麼都不會被截掉；讀第 6 節的 "
                           "HTTP 狀態碼")
    return False, pick("count the HTTP 500s in section 6's llama-server row",
                       "數一數第 6 節 llama-server 那幾列有幾個 HTTP 500")


# ---------------------------------------------------------------------------- 4.6 code: size a slot

# Cases in an order that meets one rule at a time: plain division, the training cap, padding,
# then -c 0 (not given).
SLOT_CASES = (
    [(16384, n, u, t) for t in (131072, 8192) for u in (False, True) for n in (1, 2, 4)]
    + [(c, n, u, 4096) for c in (4096, 16384, 65536) for n in (1, 2) for u in (False, True)]
    + [(c, n, u, 131072) for c in (1000, 100, 5000, 3000, 2304) for n in (1, 3, 5, 8)
       for u in (False, True)]
    + [(0, n, u, t) for t in (8192, 32768, 2048) for n in (1, 2, 3, 4) for u in (False, True)]
)


def slot_cases():
    """(c, np, unified, n_ctx_train, llama-server's n_ctx_slot) for every fixed case the judge
    tries."""
    return [(c, n, u, t, kv.server_slot_context(c, n, u, n_ctx_train=t).n_ctx_slot)
            for c, n, u, t in SLOT_CASES]


def drawn_slot_cases(rng, n: int = 16):
    """``n`` cases drawn at check time, in the form of :func:`slot_cases`: -c 0 or 1 to
    200,000, 1 to 16 slots, split or unified, a training context of 1,000 to 131,072 tokens
    (a round one or not)."""
    out = []
    for _ in range(n):
        c = rng.choice((0, rng.randint(1, 200_000), 256 * rng.randint(1, 512)))
        np_, unified = rng.randint(1, 16), rng.random() < 0.5
        t = rng.choice((rng.choice((2048, 4096, 8192, 32768, 131072)), rng.randint(1000, 131072)))
        out.append((c, np_, unified, t, kv.server_slot_context(c, np_, unified,
                                                               n_ctx_train=t).n_ctx_slot))
    return out


#: 4.6 is the rule labkit.models.kv applies: its answer writes it out.
SLOT_RULE = Rule(
    forbid=("labkit.models.kv",),
    instead=Both("Write llama-server's rules yourself: padding to 256 cells, split or unified, "
                 "the training cap, and -c 0.",
                 "請自己寫出 llama-server 的規則：補齊到 256 格的倍數、分割或統一、訓練上下文的"
                 "上限，以及 -c 0。"))


@exercise("4.6", Both("Write n_ctx_slot(c, np, unified, n_ctx_train) -> int: the per-slot context "
                      "llama-server reports for -c c -np np (unified or split KV) and a model trained "
                      "on n_ctx_train tokens, -c 0 included.",
                      "寫出 n_ctx_slot(c, np, unified, n_ctx_train) -> int：對 -c c -np np"
                      "（統一或分割 KV）、以及訓練上下文為 n_ctx_train 個 token 的模型，llama-server "
                      "回報的每槽上下文；-c 0 也要算對。"), kind=CODE)
def _slot_function(fn):
    cases = slot_cases() + drawn_slot_cases(cases_rng())
    for c, n, u, t, want in cases:
        got = call(fn, c, n, u, t, rule=SLOT_RULE)
        if isinstance(got, bool) or not isinstance(got, int):
            return False, pick(f"return an int (for c={c}, np={n} yours returned {got!r:.60})",
                               f"請回傳 int（c={c}、np={n} 時，你的函式回傳了 {got!r:.60}）")
        if got != want:
            mode = pick("unified", "統一") if u else pick("split", "分割")
            return False, pick(f"first mismatch: c={c}, np={n}, {mode}, n_ctx_train={t}: yours says "
                               f"{got}, llama-server reports {want}",
                               f"第一個不一致：c={c}、np={n}、{mode}、n_ctx_train={t}：你的函式說 "
                               f"{got}，llama-server 回報 {want}")
    drawn = len(cases) - len(SLOT_CASES)
    return True, pick(f"all {len(cases)} cases agree with llama-server's rules, {drawn} of them "
                      "drawn just now",
                      f"{len(cases)} 種情況全都和 llama-server 的規則一致，其中 {drawn} 種是剛剛"
                      "隨機產生的")


# ---------------------------------------------------------------------------- 4.9 open: a team

open_question(
    "4.9",
    Both("Your team runs 4 agents, each keeping about 6k tokens of context, and once a day someone "
         "asks about one 20k-token document, on a model trained on 32k tokens. Split or unified? "
         "Which -c and -np? What happens if the pool runs out, and how would you keep that from "
         "hurting the agents? Use the numbers of this notebook.",
         "你的團隊跑 4 個 Agent，每個保留大約 6k token 的上下文；每天會有一次，有人問起一份 "
         "20k token 的文件；模型的訓練上下文是 32k token。分割還是統一？-c 和 -np 設多少？"
         "池用光了會怎樣，你要怎麼不讓它傷到那些 Agent？用這本筆記本的數字回答。"),
    model_answer=Both(
        "Split -np 4 gives each stripe -c/4: -c 24576 serves the agents (6144 each) but refuses "
        "the 20k document with HTTP 400, and taking it in split mode needs -c 81920, four times "
        "the memory, idle most of the day. Unified -np 4 -c 32768 lets one slot take the "
        "document (n_ctx_slot = min(32768, 32768)), but four agents (4 x 6k = 24k) and the "
        "document (20k) need 44k together: if they all grow at once the pool runs out and "
        "llama-server fails every request in flight with HTTP 500 'Context size has been "
        "exceeded.' (section 6). So either size -c for the worst day (about 45056 after padding, "
        "and pay its KV bytes, notebook 03), or keep -c 32768 and send the document when the "
        "agents are quiet (or to a separate -np 1 server), and retry a 500 in the client. "
        "--kv-unified-per-slot cannot cap only the agents' slots: its one cap applies to every "
        "slot, and a cap that keeps 4 slots within 32768 (8192 each) refuses the 20k document "
        "too. labkit's reserve=True would make requests wait instead, but llama-server has no "
        "such option.",
        "分割 -np 4 讓每一段是 -c/4：-c 24576 夠 Agent 用（每個 6144），但那份 20k 的文件會"
        "收到 HTTP 400 被拒絕；要在分割模式下收它，得用 -c 81920，記憶體是四倍，一天裡大半時間"
        "閒著。統一 -np 4 -c 32768 讓一個槽位就能收下那份文件（n_ctx_slot = min(32768, 32768)），"
        "但四個 Agent（4 x 6k = 24k）加上文件（20k）合起來要 44k：它們同時變長時，池會用光，"
        "llama-server 讓每一個在途請求都以 HTTP 500 `Context size has been exceeded.` 失敗"
        "（第 6 節）。所以要嘛照最糟的那天設 -c（補齊後約 45056，並付出它的 KV 位元組，見筆記本 "
        "03），要嘛維持 -c 32768，在 Agent 空閒時才送那份文件（或送到另一台 -np 1 的伺服器），"
        "並在用戶端重試 500。--kv-unified-per-slot 沒辦法只限制 Agent 的槽位：它只有一個上限，"
        "每個槽位都套用；能讓 4 個槽位留在 32768 之內的上限（每個 8192）也會拒絕那份 20k 的"
        "文件。labkit 的 reserve=True 會讓請求改成等待，但 llama-server 沒有這個選項。"),
    rubric=[
        Both("computes the split stripe (-c / np, padded) and sees the 20k document refused "
             "(HTTP 400)",
             "算出分割時每一段的大小（-c / np，再補齊），並看出 20k 的文件會被拒絕（HTTP 400）"),
        Both("computes the unified worst case (4 x 6k + 20k = 44k) against the chosen -c",
             "算出統一時最糟的情況（4 x 6k + 20k = 44k），和選定的 -c 比較"),
        Both("says that when the unified pool runs out every request in flight fails (HTTP 500), "
             "not just the newest",
             "說出統一池用光時，每一個在途請求都會失敗（HTTP 500），不只最新的那個"),
        Both("names a remedy with its cost: a bigger -c (memory), scheduling the document apart, a "
             "second server, a per-slot cap, client retries or admission control",
             "提出一個對策並說出它的代價：更大的 -c（記憶體）、把文件錯開時間處理、第二台伺服器、"
             "每槽上限、用戶端重試，或准入控制"),
        Both("writes -c and -np explicitly (no -np auto) and checks n_ctx_slot in the log",
             "明寫 -c 和 -np（不用 -np auto），並在日誌裡核對 n_ctx_slot"),
    ],
    min_words=40, needs_number=True)


# ---------------------------------------------------------------------------- 4.10 unified attention

@exercise("4.10", Both("-np 4 with unified KV: four slots each hold 2,000 cells, and one sequence "
                       "decodes while the three others sit idle with their caches. Over how many "
                       "KV cells (n_kv, llama.cpp pads it to a multiple of 256) does the decoding "
                       "sequence's attention run for each token?",
                       "-np 4、統一 KV：四個槽位各存著 2,000 格，其中一個序列在解碼，另外三個閒著，"
                       "但快取還留著。解碼中的序列每產生一個 token，它的注意力要跑過幾格 KV"
                       "（n_kv，llama.cpp 會把它補齊到 256 的倍數）？"))
def _unified_attention(answer):
    from ..lessons.kv_attention import n_kv
    want = n_kv([2000] * 4, True)
    v = quantity(answer, "cells")
    if v == want:
        return True, pick(f"one stream holds all four sequences: 4 x 2,000 = 8,000 used cells, "
                          f"padded to {want}; the other three's cells are computed and masked out. "
                          f"Split KV would attend over {n_kv([2000], False)}",
                          f"一條串流裝著全部四個序列：4 × 2,000 = 8,000 格已用，補齊成 {want}；"
                          f"另外三個序列的格子照樣算過，再被遮罩丟掉。分割 KV 只要跑 "
                          f"{n_kv([2000], False)} 格")
    if v in (2000, n_kv([2000], False)):
        return False, pick("that is split KV's count, its own stream; in a unified pool the "
                           "attention views the one stream's used cells, every sequence's",
                           "那是分割 KV 的數字，只看自己的串流；統一池裡，注意力看的是那一條串流"
                           "所有已用的格子，每個序列的都算")
    if v == 8000:
        return False, pick("right cells, but llama.cpp pads n_kv to a multiple of 256",
                           "格子對了，但 llama.cpp 會把 n_kv 補齊到 256 的倍數")
    return False, pick("count the used cells of the whole pool, the idle caches included, then pad",
                       "把整個池已用的格子都數進來，閒著的快取也算，然後補齊")
