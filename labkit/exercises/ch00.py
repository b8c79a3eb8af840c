"""Notebook 00 (setup): the recipe, the per-slot limit, the split arithmetic, and what makes two
machines' figures comparable."""

from __future__ import annotations

from .. import catalog, kv
from . import as_number, as_word, choice, exercise, open_question

# The embedded model's training context, from the catalogue (its file says the same).
SMOLLM2_N_CTX_TRAIN = catalog.get("smollm2-135m").n_ctx_train


@exercise("0.1", "Which field of the recipe proves that two model files hold the same bytes? "
                 "Answer with its name as a string.")
def _recipe_field(answer):
    w = as_word(answer).replace(" ", "")
    if "sha256" in w or "sha 256" in as_word(answer):
        return True, ""
    if w in ("hash", "雜湊", "雜湊值", "哈希", "filehash", "checksum", "校驗和"):
        return False, "right idea; write the field's name as the recipe spells it"
    if w in ("name", "filename", "path", "size", "sizebytes", "modelname", "檔名", "名稱", "大小"):
        return False, ("a name, a path or a size can match while the bytes differ; the recipe "
                       "keeps a cryptographic hash of the whole file")
    return False, "look at the 'model' entry of the recipe: one field is a hash of the file"


@exercise("0.2", "Your 1-slot server ran with -c 2048, so n_ctx_slot = 2048. Is a prompt of "
                 "exactly 2048 tokens 'accepted' or 'refused'?")
def _exact_fit(answer):
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(int(answer))
    said = choice(answer, {
        "refused": ("rejected", "refuse", "reject", "400", "http 400", "error",
                    "拒絕", "拒收", "被拒絕", "不接受", "不收"),
        "accepted": ("accept", "ok", "200", "fits", "接受", "收下", "可以", "放得下"),
    })
    if said == "refused":
        return True, ""
    return False, ("a slot holds the prompt and the answer together: once a 2048-token prompt "
                   "is in, how many cells are left for the first token the model generates?")


@exercise("0.3", "You restart the server with -c 2048 -np 2 and split KV. What n_ctx_slot will "
                 "its startup log print?")
def _two_slots(answer):
    want = kv.slot_context(2048, 2, False, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    v = as_number(answer)
    if v == want:
        return True, ""
    if v == 2048:
        return False, "split KV gives each slot its own stripe of the 2048 cells, not all of them"
    return False, ("read the n_ctx_seq row of the field table for split KV, then remember that "
                   "llama.cpp pads cell counts")


open_question(
    "0.4",
    "You measured tokens per second on this machine; a colleague measured on theirs and got "
    "twice as many. What must each recipe record for the two figures to be comparable, and why "
    "does each item matter?",
    model_answer=(
        "Both recipes must name the same model file by its SHA-256 (a different quantization or "
        "a re-converted file changes the bytes read per token, so the speed), the llama.cpp "
        "commit and build options (kernels and GPU offload change between versions), the "
        "server's exact flags (-c, -np, split or unified KV, -ngl, threads, batch size: they "
        "decide how many sequences share a step and how much memory each has), the hardware "
        "(CPU or GPU model, memory, driver) and the workload (prompt and answer lengths, how "
        "many requests at once). Then the difference can be pinned on the one thing that "
        "differs; if two things differ, the figures say nothing about either. A measurement "
        "also needs the load on the machine while it ran, because a shared machine is slower."),
    rubric=["the model's hash, not its name: same bytes, same work per token",
            "versions and build of llama.cpp (and the driver on a GPU)",
            "the exact flags: slots, context, KV mode, GPU layers, threads",
            "the hardware and the workload (lengths, concurrency), and the load while measuring",
            "the reason: only one thing may differ for a difference to be explained by it"],
    min_words=25)
