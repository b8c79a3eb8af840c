"""Notebook 04 (split vs unified): padding, the training cap, -np auto, reservations,
--kv-unified-per-slot, -b versus -np, a pool that runs out, a function that sizes a slot, and
a decision for a team."""

from __future__ import annotations

from .. import catalog, kv
from . import CODE, as_number, call, choice, exercise, open_question

# The embedded model's training context, from the catalogue (its file says the same).
SMOLLM2_N_CTX_TRAIN = catalog.get("smollm2-135m").n_ctx_train

KV_MODES = {
    "unified": ("true", "yes", "--kv-unified", "unified kv", "shared", "shared pool",
                "共用", "共用桌", "共池", "統一"),
    "split": ("false", "no", "--no-kv-unified", "split kv", "分割", "分割 kv", "分桌"),
}


def _tuple(answer, n):
    if not isinstance(answer, (tuple, list)) or len(answer) != n:
        raise ValueError(f"expected a tuple of {n} values")
    return tuple(answer)


# ---------------------------------------------------------------------------- 4.1 the training cap

@exercise("4.1", "SmolLM2 was trained on 8192 tokens. With -c 16384 -np 1 (split KV), what "
                 "n_ctx_slot does the server report?")
def _train_cap(answer):
    want = kv.slot_context(16384, 1, False, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    v = as_number(answer)
    if v == want:
        return True, ""
    if v == 16384:
        return False, ("llama.cpp allocates 16384 cells for the one sequence, but llama-server "
                       "also caps a slot by something the model brings with it")
    return False, ("one slot with split KV owns the whole pool; then ask how long a text the "
                   "model was trained to read")


# ---------------------------------------------------------------------------- 4.2 padding

@exercise("4.2", "-c 1000 -np 3, split KV: what are n_ctx and n_ctx_seq after llama.cpp's "
                 "padding? Answer (n_ctx, n_ctx_seq).")
def _padding(answer):
    sc = kv.slot_context(1000, 3, False)
    got = tuple(int(as_number(x)) for x in _tuple(answer, 2))
    if got == (sc.n_ctx, sc.n_ctx_seq):
        return True, ""
    if got[1] in (333, 341):
        return False, "each stripe is rounded up too, to a multiple of 256 cells"
    if got[0] in (1000, 1024):
        return False, ("once every stripe is rounded up, the total is no longer what -c said: "
                       "add the stripes up again")
    return False, "llama.cpp rounds twice: the whole -c first, then each stripe"


# ---------------------------------------------------------------------------- 4.3 -np auto

@exercise("4.3", "You start llama-server with -c 8192 and no -np. Answer (n_slots, kv_unified, "
                 "n_ctx_slot) for SmolLM2; kv_unified may be True/False or a word such as "
                 "'unified' / '共用桌' or 'split' / '分割'.")
def _auto(answer):
    n, unified, slot = _tuple(answer, 3)
    n, slot = int(as_number(n)), int(as_number(slot))
    if not isinstance(unified, bool):
        unified = choice(unified, KV_MODES) == "unified"
    want = kv.slot_context(8192, 4, True, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    if (n, unified, slot) == (4, True, want):
        return True, ""
    if n == 1:
        return False, ("leaving out -np is not one slot: look at what llama-server chose by "
                       "itself in section 2's last row")
    if not unified:
        return False, ("the slot count llama-server picks by itself comes with a KV mode of its "
                       "own: read kv_unified in that row")
    if slot == 8192 // 4:
        return False, "in a shared pool a slot is not limited to its quarter of it"
    return False, "compare your three numbers with the -np auto row that llama-server printed"


# ---------------------------------------------------------------------------- 4.4 reserve

def reserved_at_once(pool: int = 4096, prompt: int = 900, max_tokens: int = 500,
                     requests: int = 4) -> int:
    return min(requests, pool // (prompt + max_tokens))


@exercise("4.4", "A unified pool of 4096 cells, reserve=True, four requests each with a "
                 "900-token prompt and max_tokens=500. How many run at the same time?")
def _reserve(answer):
    v = as_number(answer)
    want = reserved_at_once()
    if v == want:
        return True, ""
    if v == 4:
        return False, "4 x (900 + 500) cells is more than the pool; reserve admits only what surely fits"
    if v == 3:
        return False, "a request reserves room for its prompt and for every token it may generate"
    return False, "reserve=True admits a request only when all the cells it may ever need are free"


# ---------------------------------------------------------------------------- 4.5 FAQ 5

@exercise("4.5", "-np 4 --kv-unified --kv-unified-per-slot 1536 for SmolLM2 (trained on 8192). "
                 "How many KV cells does llama-server allocate without -c, and how many with "
                 "-c 4096? Answer (without, with).")
def _per_slot_pool(answer):
    without, with_c = (int(as_number(x)) for x in _tuple(answer, 2))
    want = tuple(kv.server_slot_context(c, 4, True, n_ctx_train=SMOLLM2_N_CTX_TRAIN,
                                        per_slot=1536).n_ctx for c in (0, 4096))
    if (without, with_c) == want:
        return True, ("the cap sizes the pool only when -c is left out; a -c you wrote stays as "
                      "it is (FAQ 5 of the seed)")
    if without == SMOLLM2_N_CTX_TRAIN:
        return False, ("without -c and without the cap, the training context would size the "
                       "pool; with --kv-unified-per-slot, llama-server's log says otherwise")
    if without == 1536 or with_c == 1536:
        return False, "1536 is what each slot may use, not the size of the shared pool"
    if with_c != want[1]:
        return False, "does the per-slot cap change a -c that you wrote yourself? (FAQ 5)"
    return False, "read the 'sizing KV pool' line of llama-server's log in section 3"


# ---------------------------------------------------------------------------- 4.6 FAQ 6

@exercise("4.6", "llama-server -c 8192 -b 512 -ub 128 -np 2: how many requests does it serve "
                 "at the same time?")
def _batch_is_not_slots(answer):
    v = as_number(answer)
    if v == 2:
        return True, ("-b and -ub size the batches of tokens inside one llama_decode call; the "
                      "slot count alone says how many requests are served at once (FAQ 6)")
    if v == 512:
        return False, "-b counts tokens per llama_decode call, not requests (FAQ 6)"
    if v == 128:
        return False, "-ub counts tokens per computation pass, not requests"
    if v in (4, 16):
        return False, "no flag here is divided by another: each counts a different thing"
    return False, "three flags, three different things: find the one that counts slots"


# ---------------------------------------------------------------------------- 4.7 the pool runs out

POOL_OUTCOMES = {
    "all fail": ("every request fails", "all requests fail", "every request in flight fails",
                 "fail all", "all 500", "全部失敗", "都失敗", "全部都失敗", "全部請求失敗"),
    "newest fails": ("the newest fails", "the last one fails", "one fails", "one request fails",
                     "最新的失敗", "一個失敗", "最後一個失敗"),
    "they wait": ("wait", "queue", "the rest wait", "等待", "排隊"),
    "truncated": ("truncate", "cut", "context shift", "截斷", "被截斷"),
}


@exercise("4.7", "Two requests generate at the same time in a 2-slot unified pool, and the pool "
                 "runs out. What does llama-server do with them: 'all fail', 'newest fails', "
                 "'they wait' or 'truncated' (or 全部失敗 / 最新的失敗 / 等待 / 截斷)?")
def _pool_runs_out(answer):
    said = choice(answer, POOL_OUTCOMES)
    if said == "all fail":
        return True, ("both get HTTP 500 'Context size has been exceeded.': llama-server ends "
                      "every request in flight")
    if said == "they wait":
        return False, ("waiting is what labkit's own reserve=True does; section 6 shows "
                       "llama-server without it")
    if said == "truncated":
        return False, ("with --no-context-shift (the seed's flags) nothing is cut; read the "
                       "HTTP statuses in section 6")
    return False, "count the HTTP 500s in section 6's llama-server row"


# ---------------------------------------------------------------------------- 4.8 code: size a slot

# Cases in an order that meets one rule at a time: plain division, the training cap, padding,
# then -c 0 (not given).
SLOT_CASES = (
    [(16384, n, u, t) for t in (131072, 8192) for u in (False, True) for n in (1, 2, 4)]
    + [(c, n, u, 4096) for c in (4096, 16384, 65536) for n in (1, 2) for u in (False, True)]
    + [(c, n, u, 131072) for c in (1000, 100, 5000, 3000, 2304) for n in (1, 3, 5, 8)
       for u in (False, True)]
    + [(0, n, u, t) for t in (8192, 32768, 2048) for n in (1, 2, 3, 4) for u in (False, True)]
)


def slot_cases():
    """(c, np, unified, n_ctx_train, llama-server's n_ctx_slot) for every case the judge tries."""
    return [(c, n, u, t, kv.server_slot_context(c, n, u, n_ctx_train=t).n_ctx_slot)
            for c, n, u, t in SLOT_CASES]


@exercise("4.8", "Write n_ctx_slot(c, np, unified, n_ctx_train) -> int: the per-slot context "
                 "llama-server reports for -c c -np np (unified or split KV) and a model trained "
                 "on n_ctx_train tokens, -c 0 included.", kind=CODE)
def _slot_function(fn):
    cases = slot_cases()
    for c, n, u, t, want in cases:
        got = call(fn, c, n, u, t)
        if isinstance(got, bool) or not isinstance(got, int) and not hasattr(got, "__index__"):
            return False, f"return an int (for c={c}, np={n} yours returned {got!r})"
        if int(got) != want:
            mode = "unified" if u else "split"
            return False, (f"first mismatch: c={c}, np={n}, {mode}, n_ctx_train={t}: yours says "
                           f"{int(got)}, llama-server reports {want}")
    return True, f"all {len(cases)} cases agree with llama-server's rules"


# ---------------------------------------------------------------------------- 4.9 open: a team

open_question(
    "4.9",
    "Your team runs 4 agents, each keeping about 6k tokens of context, and once a day someone "
    "asks about one 20k-token document, on a model trained on 32k tokens. Split or unified? "
    "Which -c and -np? What happens if the pool runs out, and how would you keep that from "
    "hurting the agents? Use the numbers of this notebook.",
    model_answer=(
        "Split -np 4 gives each stripe -c/4: -c 24576 serves the agents (6144 each) but refuses "
        "the 20k document with HTTP 400, and taking it in split mode needs -c 81920, four times "
        "the memory, idle most of the day. Unified -np 4 -c 32768 lets one slot take the "
        "document (n_ctx_slot = min(32768, 32768)), but four agents (4 x 6k = 24k) and the "
        "document (20k) need 44k together: if they all grow at once the pool runs out and "
        "llama-server fails every request in flight with HTTP 500 'Context size has been "
        "exceeded.' (section 6). So either size -c for the worst day (about 45056 after padding, "
        "and pay its KV bytes, notebook 03), or keep -c 32768 and send the document when the "
        "agents are quiet (or to a separate -np 1 server), cap ordinary slots with "
        "--kv-unified-per-slot, and retry a 500 in the client; labkit's reserve=True would make "
        "requests wait instead, but llama-server has no such option."),
    rubric=[
        "computes the split stripe (-c / np, padded) and sees the 20k document refused (HTTP 400)",
        "computes the unified worst case (4 x 6k + 20k = 44k) against the chosen -c",
        "says that when the unified pool runs out every request in flight fails (HTTP 500), "
        "not just the newest",
        "names a remedy with its cost: a bigger -c (memory), scheduling the document apart, a "
        "second server, a per-slot cap, client retries or admission control",
        "writes -c and -np explicitly (no -np auto) and checks n_ctx_slot in the log",
    ],
    min_words=40, needs_number=True)
