"""Answers to the exercises of 03_kv_bytes.ipynb."""

from labkit import capacity, kv
from labkit.models import describe

# 3.1: 2 x 32 x 8 x 128 values per token, 34 bytes per 32 values in q8_0.
answer_3_1 = kv.bytes_per_token(32, 8, 128, "q8_0")

# 3.2: the embedded model's bytes per token x 4096 cells, in MiB.
answer_3_2 = kv.kv_cache_bytes(describe(with_hash=False), 4096, "f16") / 2**20

# 3.3: the calculator with a q8_0 cache and 8192-token conversations.
answer_3_3 = capacity.plan(24, "llama-3.1-8b-q4", kv_type="q8_0", overhead_gib=1.0,
                           tokens_per_conversation=8192).conversations

# 3.4: bytes per token scale with n_head_kv: 32 / 8.
answer_3_4 = 32 // 8
