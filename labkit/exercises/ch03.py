"""Notebook 03 (KV bytes): the formula, the embedded model, the calculator, GQA."""

from __future__ import annotations

from .. import capacity, catalog, kv
from . import as_number, close, exercise

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
    return False, "2 x layers x KV heads x head dim x bytes per value, with 34/32 bytes per value"


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
        return False, "that is the f16 answer; set kv_type='q8_0'"
    return False, "capacity.plan(24, 'llama-3.1-8b-q4', kv_type='q8_0', tokens_per_conversation=8192)"


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
