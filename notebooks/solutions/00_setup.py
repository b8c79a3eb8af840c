"""Answers to the exercises of 00_setup.ipynb."""

from labkit import kv

# 0.1: only a hash of the bytes proves two files are the same; names and sizes can coincide.
answer_0_1 = "sha256"

# 0.2: llama-server refuses a prompt when n_tokens >= n_ctx_slot, because the slot must keep
# room for at least one generated token.
answer_0_2 = "refused"

# 0.3: split KV gives each of the 2 slots its own stripe: pad256(2048 / 2) = 1024.
answer_0_3 = kv.slot_context(2048, 2, False, n_ctx_train=8192).n_ctx_slot
