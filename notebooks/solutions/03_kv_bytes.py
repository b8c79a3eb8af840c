"""Answers to the exercises of chapter 03: 3.1 to 3.4 in 03_kv_bytes.ipynb (part 1), 3.5 to 3.7 in
03_kv_capacity.ipynb (part 2)."""

from labkit.notebook import capacity
from labkit.notebook import kv
from labkit.notebook import describe

# 3.1: 2 x 32 x 8 x 128 values per token, 34 bytes per 32 values in q8_0.
answer_3_1 = kv.bytes_per_token(32, 8, 128, "q8_0")

# 3.2: the embedded model's bytes per token x 4096 cells, in MiB.
answer_3_2 = kv.kv_cache_bytes(describe(with_hash=False), 4096, "f16") / 2**20

# 3.3: open; an answer of a few sentences that quotes one of the learner's figures (within
# rounding) is recorded, not graded, and the model answer and rubric appear. One such answer:
answer_3_3 = ("No. With split KV each of the 4 slots gets 4096 tokens, and at the 0.53 characters "
              "per token I measured for Traditional Chinese, 4000 characters are about 7500 "
              "tokens, so the server would refuse them before any answer. I would tokenize real "
              "customer messages with the served model's tokenizer, add room for the answer, "
              "and size each slot from a high percentile of that.")


# 3.4: the tokens the prompt may use, times the sample's characters per token.
def answer_3_4(n_ctx_slot, sample, tokenize, answer_tokens):
    chars_per_token = len(sample) / len(tokenize(sample))
    return int((n_ctx_slot - answer_tokens) * chars_per_token)


# 3.5: the calculator with a q8_0 cache and 8192-token conversations.
answer_3_5 = capacity.plan(24, "llama-3.1-8b-q4", kv_type="q8_0", overhead_gib=1.0,
                           tokens_per_conversation=8192).conversations

# 3.6: bytes per token scale with n_head_kv: 32 / 8.
answer_3_6 = 32 // 8

# 3.7: split sets aside the whole 2048-cell stripe; paged takes 26 blocks of 16 = 416 cells.
answer_3_7 = (2048 - 410, 16 * 26 - 410)
