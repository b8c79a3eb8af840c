"""Answers to the exercises of 00_setup.ipynb."""

from labkit.notebook import kv

# 0.1: only a hash of the bytes proves two files are the same; names and sizes can coincide.
answer_0_1 = "sha256"           # the field's name as the recipe spells it, in either edition

# 0.2: llama-server refuses a prompt when n_tokens >= n_ctx_slot, because the slot must keep
# room for at least one generated token.
answer_0_2 = "refused"          # in Chinese: "拒絕"

# 0.3: split KV gives each of the 2 slots its own stripe: pad256(2048 / 2) = 1024.
answer_0_3 = kv.slot_context(2048, 2, False, n_ctx_train=8192).n_ctx_slot

# 0.4: open; an answer of a few sentences (English, or at least 50 characters of Chinese) in
# your own words is recorded, not graded, and the model answer and rubric appear in the
# notebook's language. One such answer:
answer_0_4 = ("Both recipes must record the model's SHA-256, the llama.cpp version and build, "
              "the GPU or CPU and its driver, the exact server flags (context, slots, KV mode, "
              "GPU layers, threads) and the workload, because any one of them changes the speed; "
              "only when everything else is the same can the difference be blamed on the one "
              "thing that differs. I would also note the machine's load while measuring.")
