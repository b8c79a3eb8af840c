"""Notebook 06 (counter-examples): continuous batching isolated, over-long inputs, dependent
tasks, the prefix cache, and what your own on/off timelines say."""

from __future__ import annotations

from ..lang.i18n import Both, pick
from . import choice, exercise, open_question
from .quantities import quantity


SETTINGS = {
    "cont_batching": ("continuous batching", "cont batching", "no cont batching",
                      "--cont-batching", "--no-cont-batching", "連續批次", "continuous batching 開關",
                      "連續批次開關", "每輪換桌名單"),
    "slots": ("slot", "np", "n slots", "-np", "槽數", "槽", "窗口", "窗口數", "槽位", "槽位數"),
    "kv_unified": ("kv unified", "unified", "unified kv", "--kv-unified", "共用桌", "分割 kv",
                   "split", "kv 模式", "統一 kv", "統一kv"),
}


@exercise("6.1", Both("Which single setting do you switch between two otherwise identical runs to "
                      "show what continuous batching changes?",
                      "要顯示連續批次本身改變了什麼，兩次其他條件都相同的執行之間，你只切換哪一個設定？"))
def _isolate(answer):
    if choice(answer, SETTINGS) == "cont_batching":
        return True, ""
    return False, pick("that setting changes the whole configuration (how many requests run, or "
                       "how memory is shared), not only how requests are admitted between steps; "
                       "which setting changes the admission alone?",
                       "那個設定改變的是整個配置（同時跑幾個請求，或記憶體怎麼共用），不只是請求在"
                       "步驟之間怎麼入座；哪一個設定只改變入座方式？")


FIELDS = {
    "prompt_tokens": ("usage.prompt_tokens", "usage", "prompt_n", "prompt tokens",
                      "提示 token 數", "輸入 token 數", "提示詞 token 數"),
    "finish_reason": ("finish reason", "結束原因", "完成原因"),
}


@exercise("6.2", Both("A 5000-token prompt to a 4096-token slot came back with HTTP 200. What do "
                      "you check first?",
                      "一個 5000 token 的提示送進上限 4096 token 的槽位，回來的是 HTTP 200。"
                      "你先檢查什麼？"))
def _truncation(answer):
    if choice(answer, FIELDS) == "prompt_tokens":
        return True, ""
    return False, pick("finish_reason tells how the answer ended; the worry here is whether the "
                       "whole input was read",
                       "finish_reason 說的是回答怎麼結束；這裡擔心的是整個輸入有沒有被讀完")


@exercise("6.3", Both("8 independent summaries then 1 merge, 4 slots: most model calls at the same "
                      "time?",
                      "8 份互不相依的摘要，再加 1 次合併，4 個槽位：同一時間最多有幾次模型呼叫？"))
def _dependent(answer):
    v = quantity(answer, "requests")
    if v == 4:
        return True, ""
    if v in (8, 9):
        return False, pick("count how many requests the server can work on side by side",
                           "數一數伺服器能同時並排處理幾個請求")
    if v == 5:
        return False, pick("can the merge start before the last summary has come back?",
                           "最後一份摘要回來之前，合併可以開始嗎？")
    return False, pick("a slot serves one request at a time; and ask when the merge can start",
                       "一個槽位一次服務一個請求；再想想合併什麼時候才能開始")


@exercise("6.4", Both("700 identical leading tokens + a ~60-token document, cache on, one slot: "
                      "about how many prompt tokens does the second request process anew (60 or "
                      "760)?",
                      "開頭 700 個完全相同的 token，加上約 60 token 的文件，快取開著，一個槽位："
                      "第二個請求大約要重新處理多少個提示 token（60 還是 760）？"))
def _prefix(answer):
    v = quantity(answer, "tokens")
    if 40 <= v <= 100:
        return True, ""
    if v >= 700:
        return False, pick("look at cache_n and prompt_n of the second request in section 4: "
                           "which part of its prompt had the slot seen before?",
                           "看第 4 節第二個請求的 cache_n 和 prompt_n：它的提示有哪一部分是槽位"
                           "之前看過的？")
    return False, pick("compare the second request's prompt with the first one's, token by token",
                       "把第二個請求的提示和第一個的逐個 token 比較")


CB_MODEL_ANSWER = Both(
    "With continuous batching the short requests took the slot the long request's neighbour "
    "freed and finished within a few seconds; without it the last short request waited for the "
    "long one to end, so its finish time was the long request's plus its own (quote your two "
    "finish times here). The long request finished later with continuous "
    "batching, because it shared its decode steps with the short ones. For a service where "
    "people wait for short answers behind long jobs I would keep it on: the short requests' "
    "waits are what users feel, and the long job loses little. I would only consider turning "
    "it off for a batch job where every request is long and only the total time matters, and "
    "even then I would measure first.",
    "有連續批次時，短請求拿到長請求旁邊那個槽位空出來的位置，幾秒內就完成；沒有它時，最後一個"
    "短請求要等長請求結束，所以它的完成時間是長請求的完成時間再加上它自己的（在這裡引用你的兩個"
    "完成時間）。有連續批次時長請求反而比較晚完成，因為它和短請求共用解碼步驟。如果是使用者在長"
    "工作後面等短回答的服務，我會開著它：使用者感受到的是短請求的等待，長工作損失不多。只有在每個"
    "請求都很長、只在乎總時間的離線批次工作，我才會考慮關掉它，而且就算那樣也會先量過。")
CB_RUBRIC = [
    Both("quotes your own finish times of the short requests, with and without continuous "
         "batching",
         "引用你自己量到的短請求完成時間，有連續批次和沒有連續批次各一個"),
    Both("says why the last short request waited without it: new requests are admitted only when "
         "no slot is generating",
         "說出沒有連續批次時最後一個短請求為什麼要等：只有在沒有任何槽位在生成時，新請求才能入座"),
    Both("notes what the long request paid (its finish time) and why: shared steps",
         "指出長請求付出的代價（它的完成時間）和原因：共用步驟"),
    Both("decides for a named workload (interactive short requests behind long jobs, or an offline "
         "batch) rather than in general",
         "針對一個具體的工作負載做決定（排在長工作後面的互動式短請求，或離線批次），而不是泛泛而談"),
]

open_question(
    "6.5", Both("Open question: from your two timelines (cont_batching on and off), would you ever "
                "run a server with --no-cont-batching? Use your own finish times.",
                "開放題：看你的兩條時間軸（cont_batching 開和關），你會不會用 --no-cont-batching "
                "執行伺服器？用你自己的完成時間回答。"),
    CB_MODEL_ANSWER, CB_RUBRIC, min_words=20, needs_number=True)


@exercise("6.6", Both("Three teams of agents, each team with its own 400-token system prompt, send "
                      "one request at a time, the teams taking turns, to a server with 2 slots "
                      "(split KV, cache_prompt on). After the first round, about how many "
                      "system-prompt tokens does a request reuse on labkit's server, which keeps "
                      "a prefix only in the slot that read it?",
                      "三個 Agent 團隊各有自己 400 token 的系統提示，團隊輪流、一次一個請求，送到"
                      "有 2 個槽位的伺服器（分割 KV，cache_prompt 開著）。第一輪之後，在只把前綴"
                      "留在讀過它的槽位裡的 labkit 伺服器上，一個請求大約重用多少個系統提示 token？"))
def _fleet_prefix(answer):
    v = quantity(answer, "tokens")
    if 0 <= v <= 10:
        return True, ""
    if v >= 300:
        return False, pick("which team used the slot the request gets last? With three teams "
                           "taking turns on two slots, the least recently used slot holds another "
                           "team's prompt; llama-server's cache in RAM (--cache-ram) is what "
                           "would bring the prompt back",
                           "請求拿到的槽位，上一次是哪個團隊用的？三個團隊輪流用兩個槽位時，最久沒用"
                           "的槽位裡是別的團隊的提示；能把提示找回來的是 llama-server 記憶體裡的快取"
                           "（--cache-ram）")
    return False, pick("a prefix is reused only as far as the slot's tokens equal the prompt's, "
                       "from the first token on: what does another team's prompt share with yours?",
                       "前綴只重用槽位裡的 token 從第一個起和提示完全相同的部分：別的團隊的提示和"
                       "你的共有多少？")
