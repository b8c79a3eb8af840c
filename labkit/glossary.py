"""The workbook's shared vocabulary, in English and in the Traditional Chinese of its sources.

Workshops run in either language, so every term keeps the name the source
articles gave it. Notebooks show the table with :func:`table`; docs/GLOSSARY.md
is generated from :func:`markdown` (a test keeps the two identical).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    restaurant: str
    engineer: str


TERMS: list[Term] = [
    Term("request", "正在辦的單", "one guest's order",
         "one call to the model: a prompt in, tokens out; an agent task may make many"),
    Term("slot", "窗口", "a table",
         "a sequence position the server works on at once (llama-server -np; a sequence id)"),
    Term("context", "桌面", "the table top",
         "the tokens one sequence may hold, prompt and generated together (n_ctx_slot)"),
    Term("KV cache", "已讀筆記", "the notes kept about each order",
         "keys and values of every past token, per layer, reused at each decode step"),
    Term("continuous batching", "每輪換桌名單", "refilling tables at every step",
         "iteration-level scheduling: sequences join and leave the batch between decode steps"),
    Term("prefill", "先讀提示", "reading the order",
         "processing the prompt tokens, many per step; sets the time to first token"),
    Term("decode", "逐步生成", "cooking one bite at a time",
         "generating one token per sequence per step; reads all weights once per step"),
    Term("TTFT", "首字等待", "waiting for the first bite",
         "time to first token: from sending the request to its first visible text"),
    Term("throughput", "吞吐", "meals served per hour",
         "output tokens per second summed over all requests"),
    Term("split KV", "分割 KV", "each table gets a fixed share of the table top",
         "n_ctx_seq = n_ctx / n_slots (padded to 256); --no-kv-unified"),
    Term("unified KV", "unified KV / 共用桌", "one long shared table top",
         "all sequences share one pool of n_ctx cells; --kv-unified"),
    Term("static batching", "靜態批次", "a bus that leaves full and lets everyone off at the end",
         "collect N requests, run them all to completion"),
    Term("dynamic batching", "動態批次", "a bus that leaves when full or after a wait",
         "max batch size plus max wait; each batch still runs to completion"),
    Term("prefix cache", "前綴重用", "keeping the notes of a set menu everyone orders first",
         "reusing the KV of a shared prompt prefix (cache_prompt)"),
    Term("paged attention", "分頁注意力", "notes on loose pages instead of a reserved notebook",
         "KV stored in fixed-size blocks allocated on demand"),
    Term("in-flight requests", "在途數", "guests ordering at the same time",
         "how many requests the client keeps outstanding (closed loop)"),
    Term("worksheet", "工作表", "the kitchen's log book",
         "one row per configuration: throughput, TTFT, errors, correct answers, memory"),
    Term("answer key", "答案本", "the recipe the dish is checked against",
         "the expected id, owner and deadline of every test document"),
    Term("warm-up", "暖機", "heating the stove before service",
         "an unscored first request so one-time costs don't land in the measurement"),
    Term("sampled peak", "取樣峰值", "the busiest moment someone happened to look",
         "the highest memory reading of a 200 ms sampler; brief spikes can be missed"),
    Term("three gates", "三關", "the dish fits the table, comes in time, and is right",
         "usable concurrency = fits the context AND acceptable wait AND correct answers"),
]


def markdown() -> str:
    rows = ["| English | 中文 | In the restaurant | In llama.cpp terms |", "|---|---|---|---|"]
    rows += [f"| {t.english} | {t.chinese} | {t.restaurant} | {t.engineer} |" for t in TERMS]
    return ("# Glossary\n\nThe terms the workbook uses, with the names its Traditional Chinese "
            "sources give them. Generated from `labkit/glossary.py`.\n\n" + "\n".join(rows) + "\n")


def table():
    """The glossary as a pandas DataFrame (what a notebook displays)."""
    import pandas as pd
    return pd.DataFrame([t.__dict__ for t in TERMS])


def lookup(word: str) -> Term:
    """Find a term by its English or Chinese name (case-insensitive)."""
    w = word.strip().lower()
    for t in TERMS:
        if w in (t.english.lower(), t.chinese.lower()):
            return t
    raise KeyError(f"{word!r} is not in the glossary; known: {', '.join(t.english for t in TERMS)}")
