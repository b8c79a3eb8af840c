"""Answers to the exercises of chapter 04: 4.1 to 4.6 in 04_slot_context.ipynb (part 1), 4.7 to
4.10 in 04_split_vs_unified.ipynb (part 2)."""

from labkit.notebook import kv

# 4.1: llama.cpp allocates 16384 cells for the one sequence, but the slot is capped at n_ctx_train.
answer_4_1 = kv.slot_context(16384, 1, False, n_ctx_train=8192).n_ctx_slot

# 4.2: pad256(1000) = 1024; 1024 // 3 = 341 -> pad256 = 512 per stripe; 3 x 512 = 1536 in all.
_sc = kv.slot_context(1000, 3, False)
answer_4_2 = (_sc.n_ctx, _sc.n_ctx_seq)

# 4.3: no -np means "auto": 4 slots sharing one unified pool; each slot may use min(8192, n_ctx_train).
answer_4_3 = (4, "共用桌", 8192)

# 4.4: without -c the pool is np x cap = 4 x 1536 = 6144 (already a multiple of 256); a -c you
# write stays: 4096, each slot capped at 1536 (seed FAQ 5).
answer_4_4 = (4 * 1536, 4096)

# 4.5: -b and -ub are token counts inside one llama_decode call; -np 2 is the slot count (FAQ 6).
answer_4_5 = 2


# 4.6: llama-server's rules, written out.
def answer_4_6(c, np, unified, n_ctx_train):
    def pad(n):                                   # round up to a multiple of 256 cells
        return -(-n // 256) * 256
    pool = pad(c if c > 0 else n_ctx_train)       # -c 0: the training context
    per_seq = pool if unified else pad(pool // np)
    return min(per_seq, n_ctx_train)


# 4.7: each request reserves 900 + 500 = 1400 cells; 4096 // 1400 = 2 fit at once.
answer_4_7 = 4096 // (900 + 500)

# 4.8: llama-server ends every request in flight with HTTP 500 "Context size has been exceeded."
answer_4_8 = "全部失敗"

# 4.9: an open question; an answer that reasons with this notebook's numbers (besides the
# question's own) is recorded, not graded, then compared with the model answer and rubric.
answer_4_9 = ("Split -np 4 -c 24576 gives each agent 6144 but refuses the 20k document, so I "
              "choose unified -np 4 -c 32768: one slot may take the whole 20k document. If the "
              "four agents (4 x 6k = 24k) and the document (20k) grow together, 44k is more than "
              "32768 and llama-server fails every request in flight with HTTP 500, so I send the "
              "document when the agents are idle, or raise -c to 45056 and pay its memory.")

# 4.10: unified KV is one stream: n_kv covers every sequence's used cells, 4 x 2,000 = 8,000,
# padded to 256 (llama_kv_cache::get_n_kv): 8192.
answer_4_10 = 8192
