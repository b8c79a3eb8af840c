"""Notebook 00 (setup): the recipe, the per-slot limit, the split arithmetic, and what makes two
machines' figures comparable."""

from __future__ import annotations

from ..models import catalog, kv
from ..lang.i18n import Both, pick
from . import as_word, choice, exercise, open_question
from .quantities import quantity

# The embedded model's training context, from the catalogue (its file says the same).
SMOLLM2_N_CTX_TRAIN = catalog.get("smollm2-135m").n_ctx_train

#: How the recipe's hash field may be written (spaces taken out): its name, alone.
SHA_FIELD = ("sha256", "thesha256")


@exercise("0.1", Both("Which field of the recipe proves that two model files hold the same bytes? "
                      "Answer with its name as a string.",
                      "配方裡哪一個欄位，能證明兩個模型檔的位元組完全相同？請用字串寫出它的名稱。"))
def _recipe_field(answer):
    w = as_word(answer).strip("`").replace(" ", "")
    if w.removeprefix("model.").removesuffix("欄位").removesuffix("field") in SHA_FIELD:
        return True, ""
    if "sha" in w:
        return False, pick("write the field's name alone, as the recipe spells it",
                           "只寫欄位的名稱，照配方裡的寫法")
    if w in ("hash", "雜湊", "雜湊值", "哈希", "filehash", "checksum", "校驗和", "檔案雜湊"):
        return False, pick("right idea; write the field's name as the recipe spells it",
                           "方向對了；請照配方裡的寫法，寫出那個欄位的名稱")
    if w in ("name", "filename", "path", "size", "sizebytes", "modelname", "檔名", "名稱", "大小",
             "路徑", "模型名稱", "檔案大小"):
        return False, pick("a name, a path or a size can match while the bytes differ; the recipe "
                           "keeps a cryptographic hash of the whole file",
                           "名稱、路徑或大小都可能一樣，位元組卻不同；配方裡另外記了整個檔案的"
                           "密碼學雜湊")
    return False, pick("look at the 'model' entry of the recipe: one field is a hash of the file",
                       "看配方裡的 `model` 那一項：其中一個欄位是整個檔案的雜湊")


@exercise("0.2", Both("Your 1-slot server ran with -c 2048, so n_ctx_slot = 2048. Is a prompt of "
                      "exactly 2048 tokens 'accepted' or 'refused'?",
                      "你的單槽位伺服器用 -c 2048 執行，所以 n_ctx_slot = 2048。一個剛好 2048 個 "
                      "token 的提示，會被「接受」（accepted）還是被「拒絕」（refused）？"))
def _exact_fit(answer):
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(int(answer))
    said = choice(answer, {
        # the first two words of each are named when an answer names neither option
        "refused": ("rejected", "拒絕", "refuse", "reject", "400", "http 400", "error",
                    "拒收", "被拒絕", "不接受", "不收", "會被拒絕", "錯誤", "放不下"),
        "accepted": ("accept", "接受", "ok", "200", "fits", "收下", "可以", "放得下",
                     "被接受", "會被接受"),
    })
    if said == "refused":
        return True, ""
    return False, pick("a slot holds the prompt and the answer together: once a 2048-token prompt "
                       "is in, how many cells are left for the first token the model generates?",
                       "一個槽位要同時放下提示和回答：2048 個 token 的提示放進去之後，"
                       "還剩幾格給模型生成的第一個 token？")


@exercise("0.3", Both("You restart the server with -c 2048 -np 2 and split KV. What n_ctx_slot will "
                      "its startup log print?",
                      "你用 -c 2048 -np 2 和分割 KV 重新啟動伺服器。它的啟動日誌會印出多少 "
                      "n_ctx_slot？"))
def _two_slots(answer):
    want = kv.slot_context(2048, 2, False, n_ctx_train=SMOLLM2_N_CTX_TRAIN).n_ctx_slot
    v = quantity(answer, "cells")
    if v == want:
        return True, ""
    if v == 2048:
        return False, pick("split KV gives each slot its own stripe of the 2048 cells, not all of "
                           "them",
                           "分割 KV 讓每個槽位各分到 2048 格裡屬於自己的一段，而不是全部")
    return False, pick("read the n_ctx_seq row of the field table for split KV, then remember that "
                       "llama.cpp pads cell counts",
                       "看欄位表裡分割 KV 時 n_ctx_seq 那一列，再想想 llama.cpp 會把格數補齊到"
                       "某個倍數")


open_question(
    "0.4",
    Both("You measured tokens per second on this machine; a colleague measured on theirs and got "
         "twice as many. What must each recipe record for the two figures to be comparable, and "
         "why does each item matter?",
         "你在這台機器上量了每秒 token 數；同事在他的機器上量，得到兩倍。兩份配方各要記下什麼，"
         "這兩個數字才能比較？每一項為什麼重要？"),
    model_answer=Both(
        "Both recipes must name the same model file by its SHA-256 (a different quantization or "
        "a re-converted file changes the bytes read per token, so the speed), the llama.cpp "
        "commit and build options (kernels and GPU offload change between versions), the "
        "server's exact flags (-c, -np, split or unified KV, -ngl, threads, batch size: they "
        "decide how many sequences share a step and how much memory each has), the hardware "
        "(CPU or GPU model, memory, driver) and the workload (prompt and answer lengths, how "
        "many requests at once). Then the difference can be pinned on the one thing that "
        "differs; if two things differ, the figures say nothing about either. A measurement "
        "also needs the load on the machine while it ran, because a shared machine is slower.",
        "兩份配方都要用 SHA-256 指名同一個模型檔（換了量化或重新轉檔，每個 token 要讀的位元組就變了，"
        "速度也跟著變）；記下 llama.cpp 的提交和建置選項（不同版本的運算核心和 GPU 卸載都不一樣）；"
        "記下伺服器確切的旗標（-c、-np、分割或統一 KV、-ngl、執行緒數、批次大小：它們決定一步裡有"
        "幾個序列、每個序列分到多少記憶體）；記下硬體（CPU 或 GPU 型號、記憶體、驅動程式）和工作負載"
        "（提示與回答的長度、同時有幾個請求）。這樣差異才能歸到唯一不同的那一項；要是有兩項不同，"
        "這兩個數字對哪一項都說明不了什麼。測量時還要記下機器的負載，因為共用的機器會比較慢。"),
    rubric=[Both("the model's hash, not its name: same bytes, same work per token",
                 "模型的雜湊，而不是名稱：位元組相同，每個 token 的工作量才相同"),
            Both("versions and build of llama.cpp (and the driver on a GPU)",
                 "llama.cpp 的版本和建置（用 GPU 時還有驅動程式）"),
            Both("the exact flags: slots, context, KV mode, GPU layers, threads",
                 "確切的旗標：槽位數、上下文、KV 模式、GPU 層數、執行緒數"),
            Both("the hardware and the workload (lengths, concurrency), and the load while "
                 "measuring",
                 "硬體和工作負載（長度、並行數），以及測量時的負載"),
            Both("the reason: only one thing may differ for a difference to be explained by it",
                 "理由：只有一項不同，差異才能用那一項來解釋")],
    min_words=25)
