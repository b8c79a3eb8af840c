"""Notebook 03 (KV bytes): the formula, the embedded model, the calculator, GQA, reserved but
unused cells under split and paged KV, and what a context holds in tokens of two languages."""

from __future__ import annotations

from .. import capacity, catalog, kv
from . import CODE, as_number, call, close, exercise, open_question

SEED_8B = catalog.get("llama-3.1-8b")


@exercise("3.1", f"Bytes per token of the seed's 8B model ({SEED_8B.n_layer} layers, "
                 f"{SEED_8B.n_head_kv} KV heads, head dim {SEED_8B.head_dim}) with a q8_0 KV cache?")
def _q8(answer):
    want = SEED_8B.kv_bytes_per_token("q8_0")
    v = as_number(answer)
    if close(v, want):
        return True, ""
    if close(v, SEED_8B.kv_bytes_per_token("f16")):
        return False, "that is the f16 figure; q8_0 stores 32 values in 34 bytes"
    if close(v, 2 * SEED_8B.n_layer * SEED_8B.n_head_kv * SEED_8B.head_dim):
        return False, "q8_0 is not 1 byte per value: each block of 32 values carries a 2-byte scale"
    return False, ("the formula of section 1 holds for every cache type; only the bytes per value "
                   "change, and a q8_0 block stores its 32 values together with a scale")


def embedded_kv_mib(n_ctx: int = 4096, kv_type: str = "f16") -> float:
    from ..models import describe
    return kv.kv_cache_bytes(describe(with_hash=False), n_ctx, kv_type) / 2**20


@exercise("3.2", "How many MiB of KV cache does the embedded model need for 4096 cells in f16?")
def _embedded(answer):
    want = embedded_kv_mib()
    v = as_number(answer)
    if close(v, want, abs_=0.01):
        return True, ""
    if close(v, want * 2**20, rel=1e-6):
        return False, "that is in bytes; divide by 2**20 for MiB"
    return False, "use the model's own n_layer, n_head_kv and head_dim (info above) and 2 bytes per value"


def conversations_24gib_q8() -> int:
    return capacity.plan(24, "llama-3.1-8b-q4", kv_type="q8_0", overhead_gib=1.0,
                         tokens_per_conversation=8192).conversations


@exercise("3.3", "With the capacity calculator: a 24 GiB GPU, Llama-3.1-8B Q4_K_M, 1 GiB "
                 "overhead, q8_0 KV cache. How many 8192-token conversations fit at once?")
def _calc(answer):
    want = conversations_24gib_q8()
    v = as_number(answer)
    if v == want:
        return True, ""
    f16 = capacity.plan(24, "llama-3.1-8b-q4", kv_type="f16", tokens_per_conversation=8192)
    if v == f16.conversations:
        return False, "that is the figure for the default KV type: which type does the question ask for?"
    if v <= 0:
        return False, ("some must fit: 24 GiB less the weights and the overhead leaves room for "
                       "several long conversations")
    return False, ("check each setting against the question: the GPU's size, the model, the "
                   "overhead, the KV type and the length of one conversation")


@exercise("3.4", f"Llama-3.1-8B has {SEED_8B.n_head} query heads but only {SEED_8B.n_head_kv} "
                 "KV heads (grouped-query attention). By what factor would its KV cache grow if "
                 "every query head kept its own keys and values?")
def _gqa(answer):
    v = as_number(answer)
    if close(v, SEED_8B.gqa_group):
        return True, ""
    if close(v, 1 / SEED_8B.gqa_group):
        return False, "the question asks how much it would grow: more KV heads, more bytes"
    return False, "bytes per token are proportional to n_head_kv"


SPLIT_STRIPE, BLOCK = 2048, 16


def unused_cells(held: int = 410) -> tuple[int, int]:
    """(split, paged): cells reserved for a sequence holding ``held`` cells but holding no token,
    with a 2048-cell stripe and with 16-cell blocks."""
    return SPLIT_STRIPE - held, BLOCK * -(-held // BLOCK) - held


@exercise("3.5", "Split KV gives each of 4 slots 2048 cells; paged KV uses blocks of 16 cells. A "
                 "request holds 410 cells. How many cells are reserved for it but unused under "
                 "split and under paged? Answer with a pair (split, paged).")
def _unused(answer):
    if isinstance(answer, dict) or isinstance(answer, str) or len(answer) != 2:
        return False, "answer with a pair of numbers, (split, paged)"
    split, paged = (as_number(x) for x in answer)
    want_split, want_paged = unused_cells()
    ok_split = split in (want_split, want_split + 1)       # 410 or 409 cells counted as held
    ok_paged = paged in (want_paged, want_paged + 1)
    if ok_split and ok_paged:
        return True, ""
    if (paged, split) == (want_split, want_paged):
        return False, "the pair is the wrong way round: split first, then paged"
    hints = []
    if not ok_split:
        hints.append("split: the slot's whole stripe is set aside for this one request, "
                     "whatever it holds")
    if not ok_paged:
        hints.append("paged: blocks are taken whole, one at a time as the request grows; only "
                     "the last one can be partly empty")
    return False, "; ".join(hints)


open_question(
    "3.6",
    "A support team in Taipei plans -c 16384 -np 4 (split KV) so that each customer can paste "
    "about 4,000 characters. Using your characters per token, will it fit? What would you "
    "measure before choosing -c?",
    model_answer=(
        "No. Split KV gives each of the 4 slots 16384 / 4 = 4,096 tokens, prompt and answer "
        "together. At the 0.53 characters per token I measured for Traditional Chinese with "
        "the embedded model's tokenizer, 4,000 characters are about 7,500 tokens, nearly twice "
        "a slot, so the server refuses them; in English (about 4.4 characters per token) the "
        "same 4,000 characters would be about 900 tokens. Before choosing -c I would tokenize "
        "a sample of real customer messages with the tokenizer of the model we will serve, "
        "take a high percentile of their tokens, add the longest answer we allow, and size "
        "n_ctx_slot (and so -c = slots x that) from it."),
    rubric=["converts characters to tokens with the measured ratio, not one token per character",
            "compares with the per-slot limit (n_ctx / n_slots with split KV), not all of -c",
            "leaves room for the answer: prompt and answer share the slot",
            "measures real messages with the served model's own tokenizer (another tokenizer "
            "gives another ratio)"],
    min_words=30, needs_number=True)


def _byte_tokens(text: str) -> list[int]:
    """A stand-in tokenizer: one token per UTF-8 byte (what a vocabulary without the text's
    characters falls back to)."""
    return list(text.encode("utf-8"))


def _word_tokens(text: str) -> list[str]:
    """A stand-in tokenizer: one token per word or punctuation mark."""
    import re
    return re.findall(r"\w+|[^\w\s]", text)


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


@exercise("3.7", "Write a function (n_ctx_slot, sample, tokenize, answer_tokens) -> int: how many "
                 "characters of text like `sample` fit in one slot, keeping answer_tokens for the "
                 "answer. `tokenize(text)` returns the text's list of tokens.", kind=CODE)
def _chars_fit(fn):
    for n_ctx_slot, sample, tokenize, answer_tokens in CHARS_CASES:
        want = chars_that_fit(n_ctx_slot, sample, tokenize, answer_tokens)
        got = as_number(call(fn, n_ctx_slot, sample, tokenize, answer_tokens))
        if abs(got - want) <= 1:
            continue
        n_tok, n_chr = len(tokenize(sample)), len(sample)
        if abs(got - (n_ctx_slot - answer_tokens)) <= 1 or abs(got - n_ctx_slot) <= 1:
            return False, ("a token is not a character: use the sample to find out how many "
                           "characters one token carries")
        if abs(got - n_ctx_slot * n_chr / n_tok) <= 1:
            return False, "the answer shares the slot with the prompt: keep its tokens aside"
        if abs(got - (n_ctx_slot - answer_tokens) * n_tok / n_chr) <= 1:
            return False, ("check the units: the result is in characters, and what you multiply "
                           "by should be characters per token")
        return False, (f"for a {n_ctx_slot}-token slot, {answer_tokens} answer tokens and a "
                       f"sample of {n_chr} characters in {n_tok} tokens, your function gave {got:g}")
    return True, ""
