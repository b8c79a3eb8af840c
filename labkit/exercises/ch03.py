"""Notebook 03 (KV bytes): the formula, the embedded model, the calculator, GQA, reserved but
unused cells under split and paged KV, and what a context holds in tokens of two languages."""

from __future__ import annotations

from ..costs import capacity
from ..models import catalog, kv
from ..lang.i18n import Both, pick
from . import CODE, call, exercise, open_question
from .learner_code import Rule, cases_rng, number
from .quantities import close, quantity

SEED_8B = catalog.get("llama-3.1-8b")


@exercise("3.1", Both(f"Bytes per token of the seed's 8B model ({SEED_8B.n_layer} layers, "
                      f"{SEED_8B.n_head_kv} KV heads, head dim {SEED_8B.head_dim}) with a q8_0 KV "
                      "cache?",
                      f"種子文章的 8B 模型（{SEED_8B.n_layer} 層、{SEED_8B.n_head_kv} 個 KV 頭、"
                      f"頭維度 {SEED_8B.head_dim}）用 q8_0 的 KV 快取，每個 token 要幾個位元組？"))
def _q8(answer):
    want = SEED_8B.kv_bytes_per_token("q8_0")
    v = quantity(answer, "B", per="token")
    if close(v, want):
        return True, ""
    if close(v, SEED_8B.kv_bytes_per_token("f16")):
        return False, pick("that is the f16 figure; q8_0 stores 32 values in 34 bytes",
                           "那是 f16 的數字；q8_0 用 34 個位元組存 32 個值")
    if close(v, 2 * SEED_8B.n_layer * SEED_8B.n_head_kv * SEED_8B.head_dim):
        return False, pick("q8_0 is not 1 byte per value: each block of 32 values carries a 2-byte "
                           "scale", "q8_0 不是每個值 1 個位元組：每一塊 32 個值還帶著一個 2 位元組的縮放係數")
    return False, pick("the formula of section 1 holds for every cache type; only the bytes per "
                       "value change, and a q8_0 block stores its 32 values together with a scale",
                       "第 1 節的公式對每種快取型別都成立，變的只有每個值的位元組數；"
                       "q8_0 的一塊把 32 個值和一個縮放係數存在一起")


def embedded_kv_mib(n_ctx: int = 4096, kv_type: str = "f16") -> float:
    from ..models.files import describe
    return kv.kv_cache_bytes(describe(with_hash=False), n_ctx, kv_type) / 2**20


@exercise("3.2", Both("How many MiB of KV cache does the embedded model need for 4096 cells in "
                      "f16?", "內建模型用 f16 存 4096 格，KV 快取要幾 MiB？"))
def _embedded(answer):
    want = embedded_kv_mib()
    v = quantity(answer, "MiB")
    if close(v, want, rel=0.005):           # 0.088 GiB, written to two figures, is right
        return True, ""
    if close(v, want * 2**20, rel=1e-6):
        return False, pick("that is in bytes; divide by 2**20 for MiB",
                           "那是位元組數；除以 2**20 才是 MiB")
    return False, pick("use the model's own n_layer, n_head_kv and head_dim (info above) and 2 "
                       "bytes per value", "用這個模型自己的 n_layer、n_head_kv 和 head_dim（上面的 "
                       "info），每個值 2 個位元組")


def conversations_24gib_q8() -> int:
    return capacity.plan(24, "llama-3.1-8b-q4", kv_type="q8_0", overhead_gib=1.0,
                         tokens_per_conversation=8192).conversations


@exercise("3.5", Both("With the capacity calculator: a 24 GiB GPU, Llama-3.1-8B Q4_K_M, 1 GiB "
                      "overhead, q8_0 KV cache. How many 8192-token conversations fit at once?",
                      "用容量計算器：24 GiB 的 GPU、Llama-3.1-8B Q4_K_M、1 GiB 的額外開銷、"
                      "q8_0 的 KV 快取。同時放得下幾段 8192 個 token 的對話？"))
def _calc(answer):
    want = conversations_24gib_q8()
    v = quantity(answer, "conversations")
    if v == want:
        return True, ""
    f16 = capacity.plan(24, "llama-3.1-8b-q4", kv_type="f16", tokens_per_conversation=8192)
    if v == f16.conversations:
        return False, pick("that is the figure for the default KV type: which type does the "
                           "question ask for?", "那是預設 KV 型別的數字：題目問的是哪一種型別？")
    if v <= 0:
        return False, pick("some must fit: 24 GiB less the weights and the overhead leaves room "
                           "for several long conversations",
                           "一定放得下幾段：24 GiB 扣掉權重和額外開銷，還夠放好幾段長對話")
    return False, pick("check each setting against the question: the GPU's size, the model, the "
                       "overhead, the KV type and the length of one conversation",
                       "逐項對照題目檢查設定：GPU 的大小、模型、額外開銷、KV 型別，以及一段對話的長度")


@exercise("3.6", Both(f"Llama-3.1-8B has {SEED_8B.n_head} query heads but only "
                      f"{SEED_8B.n_head_kv} KV heads (grouped-query attention). By what factor "
                      "would its KV cache grow if every query head kept its own keys and values?",
                      f"Llama-3.1-8B 有 {SEED_8B.n_head} 個查詢頭，卻只有 {SEED_8B.n_head_kv} 個 "
                      "KV 頭（分組查詢注意力，GQA）。如果每個查詢頭都保有自己的鍵和值，"
                      "它的 KV 快取會變成幾倍？"))
def _gqa(answer):
    v = quantity(answer, "x")
    if close(v, SEED_8B.gqa_group):
        return True, ""
    if close(v, 1 / SEED_8B.gqa_group):
        return False, pick("the question asks how much it would grow: more KV heads, more bytes",
                           "題目問的是會變大多少：KV 頭越多，位元組越多")
    return False, pick("bytes per token are proportional to n_head_kv",
                       "每個 token 的位元組數和 n_head_kv 成正比")


SPLIT_STRIPE, BLOCK = 2048, 16


def unused_cells(held: int = 410) -> tuple[int, int]:
    """(split, paged): cells reserved for a sequence holding ``held`` cells but holding no token,
    with a 2048-cell stripe and with 16-cell blocks."""
    return SPLIT_STRIPE - held, BLOCK * -(-held // BLOCK) - held


@exercise("3.7", Both("Split KV gives each of 4 slots 2048 cells; paged KV uses blocks of 16 "
                      "cells. A request holds 410 cells. How many cells are reserved for it but "
                      "unused under split and under paged? Answer with a pair (split, paged).",
                      "分割 KV 給 4 個槽位各 2048 格；分頁 KV 用 16 格一塊的區塊。一個請求占了 "
                      "410 格。在分割和分頁之下，替它保留卻沒用到的各有幾格？用一對數字回答："
                      "(分割, 分頁)。"))
def _unused(answer):
    if isinstance(answer, (dict, str)) or not hasattr(answer, "__len__") or len(answer) != 2:
        return False, pick("answer with a pair of numbers, (split, paged)",
                           "請用一對數字回答：(分割, 分頁)")
    split, paged = (quantity(x, "cells") for x in answer)
    want_split, want_paged = unused_cells()
    ok_split = split in (want_split, want_split + 1)       # 410 or 409 cells counted as held
    ok_paged = paged in (want_paged, want_paged + 1)
    if ok_split and ok_paged:
        return True, ""
    if (paged, split) == (want_split, want_paged):
        return False, pick("the pair is the wrong way round: split first, then paged",
                           "兩個數字的順序反了：先寫分割，再寫分頁")
    hints = []
    if not ok_split:
        hints.append(pick("split: the slot's whole stripe is set aside for this one request, "
                          "whatever it holds",
                          "分割：不管這個請求實際占了多少，槽位的整段都替它留著"))
    if not ok_paged:
        hints.append(pick("paged: blocks are taken whole, one at a time as the request grows; "
                          "only the last one can be partly empty",
                          "分頁：區塊是整塊整塊拿的，請求長大時一次拿一塊；只有最後一塊可能沒填滿"))
    return False, pick("; ", "；").join(hints)


open_question(
    "3.3",
    Both("A support team in Taipei plans -c 16384 -np 4 (split KV) so that each customer can paste "
         "about 4,000 characters. Using your characters per token, will it fit? What would you "
         "measure before choosing -c?",
         "台北的客服團隊打算用 -c 16384 -np 4（分割 KV），好讓每位客人能貼上大約 4,000 個字。"
         "用你量到的每 token 字元數算算看：放得下嗎？決定 -c 之前，你會先量什麼？"),
    model_answer=Both(
        "No. Split KV gives each of the 4 slots 16384 / 4 = 4,096 tokens, prompt and answer "
        "together. At the 0.53 characters per token I measured for Traditional Chinese with "
        "the embedded model's tokenizer, 4,000 characters are about 7,500 tokens, nearly twice "
        "a slot, so the server refuses them; in English (about 4.4 characters per token) the "
        "same 4,000 characters would be about 900 tokens. Before choosing -c I would tokenize "
        "a sample of real customer messages with the tokenizer of the model we will serve, "
        "take a high percentile of their tokens, add the longest answer we allow, and size "
        "n_ctx_slot (and so -c = slots x that) from it.",
        "放不下。分割 KV 讓 4 個槽位各分到 16384 / 4 = 4,096 個 token，提示和回答一起算。"
        "我用內建模型的 tokenizer 量到繁體中文每個 token 約 0.53 個字，4,000 個字就是大約 "
        "7,500 個 token，快要兩個槽位那麼長，伺服器會拒絕；同樣 4,000 個字元的英文（每個 token "
        "約 4.4 個字元）只要大約 900 個 token。決定 -c 之前，我會拿一批真實的客人訊息，用我們要"
        "上線的模型自己的 tokenizer 切一遍，取 token 數的高百分位，再加上允許的最長回答，"
        "用它來定 n_ctx_slot（於是 -c = 槽位數 x n_ctx_slot）。"),
    rubric=[Both("converts characters to tokens with the measured ratio, not one token per "
                 "character", "用量到的比例把字數換成 token 數，而不是一個字算一個 token"),
            Both("compares with the per-slot limit (n_ctx / n_slots with split KV), not all of -c",
                 "拿來比的是每個槽位的上限（分割 KV 時是 n_ctx / n_slots），不是整個 -c"),
            Both("leaves room for the answer: prompt and answer share the slot",
                 "替回答留了空間：提示和回答共用同一個槽位"),
            Both("measures real messages with the served model's own tokenizer (another "
                 "tokenizer gives another ratio)",
                 "用要上線的模型自己的 tokenizer 量真實訊息（換一個 tokenizer，比例就不同）")],
    min_words=30, needs_number=True)


def _byte_tokens(text: str) -> list[int]:
    """A stand-in tokenizer: one token per UTF-8 byte (what a vocabulary without the text's
    characters falls back to)."""
    return list(text.encode("utf-8"))


def _word_tokens(text: str) -> list[str]:
    """A stand-in tokenizer: one token per word or punctuation mark."""
    import re
    return re.findall(r"\w+|[^\w\s]", text)


def _pieces_of(k: int):
    """A stand-in tokenizer: one token per ``k`` characters (the last piece may be shorter)."""
    def tokenize(text: str) -> list[str]:
        return [text[i:i + k] for i in range(0, len(text), k)]
    return tokenize


def _tokenizer_name(tokenize) -> str:
    """What a stand-in tokenizer does, for a verdict that names the case."""
    if tokenize is _byte_tokens:
        return pick("one token per UTF-8 byte", "每個 UTF-8 位元組一個 token")
    if tokenize is _word_tokens:
        return pick("one token per word or punctuation mark", "每個詞或標點一個 token")
    k = tokenize.__closure__[0].cell_contents
    return pick(f"one token per {k} characters", f"每 {k} 個字元一個 token")


def chars_that_fit(n_ctx_slot: int, sample: str, tokenize, answer_tokens: int) -> int:
    """Characters of text like ``sample`` one slot holds after keeping ``answer_tokens`` for
    the answer: the tokens left, times the sample's characters per token."""
    return int((n_ctx_slot - answer_tokens) * len(sample) / len(tokenize(sample)))


CHARS_CASES = [
    (4096, "一家小餐廳有四張桌子。", _byte_tokens, 512),
    (4096, "A small restaurant has four tables, and one fast kitchen.", _word_tokens, 0),
    (2048, "tables and slots", _byte_tokens, 100),
    (16384, "每一輪，廚師為每位客人多做一口菜。", _word_tokens, 1024),
]

_WORDS = ("table", "slot", "guest", "kitchen", "tea", "order", "token", "prompt", "cook",
          "round", "notes", "a", "the", "long", "small")
_HANZI = "桌子槽位客人廚房茶點單提示每一輪筆記長短小快慢"


def drawn_chars_case(rng):
    """One case drawn at check time: a slot of 512 to 65536 tokens, up to half of it kept
    for the answer, a sample of random English words or Chinese characters (or both), and a
    tokenizer that cuts it into bytes, words or pieces of 2 to 4 characters."""
    n_ctx_slot = rng.randint(512, 65536)
    words = [rng.choice(_WORDS) for _ in range(rng.randint(3, 12))]
    hanzi = "".join(rng.choice(_HANZI) for _ in range(rng.randint(4, 20)))
    sample = rng.choice((" ".join(words) + ".", hanzi + "。", " ".join(words) + "，" + hanzi))
    tokenize = rng.choice((_byte_tokens, _word_tokens, _pieces_of(rng.randint(2, 4))))
    return n_ctx_slot, sample, tokenize, rng.randint(0, n_ctx_slot // 2)


#: 3.4's answer is arithmetic on the sample's own tokens: it may call the tokenize it is
#: handed, not labkit's reference nor its own counting of a context.
CHARS_RULE = Rule(
    forbid=("labkit.engine.vocabulary",),
    instead=Both("Write the arithmetic yourself: count the sample's characters and its tokens "
                 "(with the tokenize you are given), and scale the tokens left for the prompt.",
                 "請自己寫出這段算式：數出 sample 的字元數和 token 數（用傳給你的 tokenize），"
                 "再換算留給提示的 token 能放幾個字元。"))


@exercise("3.4", Both("Write a function (n_ctx_slot, sample, tokenize, answer_tokens) -> int: how "
                      "many characters of text like `sample` fit in one slot, keeping "
                      "answer_tokens for the answer. `tokenize(text)` returns the text's list of "
                      "tokens.",
                      "寫一個函式 (n_ctx_slot, sample, tokenize, answer_tokens) -> int：一個槽位"
                      "留下 answer_tokens 給回答之後，還放得下幾個像 `sample` 這樣的文字的字元？"
                      "`tokenize(text)` 傳回這段文字的 token 清單。"), kind=CODE)
def _chars_fit(fn):
    rng = cases_rng()
    cases = CHARS_CASES + [drawn_chars_case(rng) for _ in range(4)]
    for n_ctx_slot, sample, tokenize, answer_tokens in cases:
        want = chars_that_fit(n_ctx_slot, sample, tokenize, answer_tokens)
        got = number(call(fn, n_ctx_slot, sample, tokenize, answer_tokens, rule=CHARS_RULE),
                     pick("the number of characters", "字元數"))
        if abs(got - want) <= 1:
            continue
        n_tok, n_chr = len(tokenize(sample)), len(sample)
        case = pick(f" The case: n_ctx_slot={n_ctx_slot}, sample={sample!r}, tokenize = "
                    f"{_tokenizer_name(tokenize)} ({n_tok} tokens), answer_tokens="
                    f"{answer_tokens}: expected {want}, yours {got:g}.",
                    f"這個情況：n_ctx_slot={n_ctx_slot}、sample={sample!r}、tokenize 是"
                    f"{_tokenizer_name(tokenize)}（{n_tok} 個 token）、answer_tokens="
                    f"{answer_tokens}：應該是 {want}，你的是 {got:g}。")
        if abs(got - (n_ctx_slot - answer_tokens)) <= 1 or abs(got - n_ctx_slot) <= 1:
            return False, pick("a token is not a character: use the sample to find out how many "
                               "characters one token carries.",
                               "token 不是字元：用 sample 算出一個 token 平均裝幾個字元。") + case
        if abs(got - n_ctx_slot * n_chr / n_tok) <= 1:
            return False, pick("the answer shares the slot with the prompt: keep its tokens "
                               "aside.", "回答和提示共用同一個槽位：先把回答的 token 留出來。") + case
        if abs(got - (n_ctx_slot - answer_tokens) * n_tok / n_chr) <= 1:
            return False, pick("check the units: the result is in characters, and what you "
                               "multiply by should be characters per token.",
                               "檢查單位：結果是字元數，你乘上的應該是每個 token 的字元數。") + case
        return False, case.strip()
    return True, pick(f"right in all {len(cases)} cases, {len(cases) - len(CHARS_CASES)} of "
                      "them drawn just now",
                      f"{len(cases)} 個情況全對，其中 {len(cases) - len(CHARS_CASES)} 個是剛剛"
                      "隨機產生的")
