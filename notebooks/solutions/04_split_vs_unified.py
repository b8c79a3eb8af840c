"""Answers to the exercises of 04_split_vs_unified.ipynb."""

from labkit import kv

# 4.1: llama.cpp allocates 16384 cells for the one sequence, but the slot is capped at n_ctx_train.
answer_4_1 = kv.slot_context(16384, 1, False, n_ctx_train=8192).n_ctx_slot

# 4.2: pad256(1000) = 1024; 1024 // 3 = 341 -> pad256 = 512 per stripe; 3 x 512 = 1536 in all.
_sc = kv.slot_context(1000, 3, False)
answer_4_2 = (_sc.n_ctx, _sc.n_ctx_seq)

# 4.3: no -np means "auto": 4 slots sharing one unified pool; each slot may use min(8192, n_ctx_train).
answer_4_3 = (4, True, 8192)

# 4.4: each request reserves 900 + 500 = 1400 cells; 4096 // 1400 = 2 fit at once.
answer_4_4 = 4096 // (900 + 500)
