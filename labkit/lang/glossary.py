"""The workbook's shared vocabulary, in English and in Traditional Chinese as written in Taiwan.

Each term has four names and a meaning:

- ``english``: the term as the notebooks write it;
- ``chinese``: the standard technical term a Taiwanese engineer writes (請求, 槽位, KV 快取);
- ``metaphor``: the seed articles' picture of it, where they give one (窗口, 桌面, 已讀筆記,
  每輪換桌名單 from 000_7ca7d4cd839f7038.txt; the bus of 001_027e2139b87c0d3a.txt), else "";
- ``restaurant``: the same picture in English;
- ``engineer``: what it is in llama.cpp terms.

``aliases`` holds the other words a reader may use for it, in either language. Notebooks show
the table with :func:`table`; docs/GLOSSARY.md is generated from :func:`markdown` (a test keeps
the two identical). :func:`lookup` finds a term by any of its names; :func:`words` and
:func:`options` give exercise checks the accepted answers in both languages::

    >>> lookup("連續批次").english
    'continuous batching'
    >>> choice(answer, options("fifo", "sjf"))        # labkit.exercises.choice
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    metaphor: str
    restaurant: str
    engineer: str
    aliases: tuple[str, ...] = ()

    def restaurant_in(self, lang: str = "en") -> str:
        """The restaurant picture in ``lang`` ("en" or "zh-TW")."""
        return IN_CHINESE[self.english][0] if lang == "zh-TW" else self.restaurant

    def engineer_in(self, lang: str = "en") -> str:
        """The engineer's meaning in ``lang`` ("en" or "zh-TW")."""
        return IN_CHINESE[self.english][1] if lang == "zh-TW" else self.engineer

    def names(self) -> tuple[str, ...]:
        """Every name of the term, English first, no repeats, empty ones left out."""
        seen: list[str] = []
        for w in (self.english, self.chinese, self.metaphor, *self.aliases):
            if w and w not in seen:
                seen.append(w)
        return tuple(seen)


TERMS: list[Term] = [
    # ---- the five parts (seed 000, section 一)
    Term("request", "請求", "正在辦的單", "one guest's order",
         "one call to the model: a prompt in, tokens out; an agent task may make many",
         ("requests", "req")),
    Term("slot", "槽位", "窗口", "a table",
         "a sequence position the server works on at once (llama-server -np; a sequence id)",
         ("slots", "槽", "sequence", "序列", "n_slots")),
    Term("context", "上下文", "桌面", "the table top",
         "the tokens one sequence may hold, prompt and generated together (n_ctx_slot)",
         ("ctx", "context window", "上下文長度", "n_ctx_slot", "n ctx slot")),
    Term("KV cache", "KV 快取", "已讀筆記", "the notes kept about each order",
         "keys and values of every past token, per layer, reused at each decode step",
         ("kv", "kvcache", "KV 快取記憶體", "KV Cache")),
    Term("continuous batching", "連續批次", "每輪換桌名單", "refilling tables at every step",
         "iteration-level scheduling: sequences join and leave the batch between decode steps",
         ("continuous", "cont batching", "--cont-batching", "連續批處理", "迭代層級調度",
          "迭代層級排程", "iteration-level scheduling")),
    # ---- the two phases and what a learner measures
    Term("prefill", "預填", "先讀提示", "reading the order",
         "processing the prompt tokens, many per step; sets the time to first token",
         ("prompt processing", "預填充", "提示處理")),
    Term("decode", "解碼", "逐步生成", "cooking one bite at a time",
         "generating one token per sequence per step; a step reads all the weights once per "
         "microbatch it is cut into, not once per step",
         ("decoding", "decode step", "解碼步驟", "生成")),
    Term("token", "token", "", "a bite",
         "the model's unit of text; not a character: one Chinese character is often one token "
         "or more", ("tokens", "Token", "詞元")),
    Term("tokenizer", "斷詞器", "", "how the kitchen cuts an order into bites",
         "the model's own table that turns text into tokens and back (llama_tokenize; the GGUF "
         "file's tokenizer fields)", ("tokenizers", "分詞器")),
    Term("TTFT", "首字等待", "首字等待", "waiting for the first bite",
         "time to first token: from sending the request to its first visible text",
         ("time to first token", "first token latency", "首個 token 延遲", "首 token 延遲",
          "首字延遲", "首字時間")),
    Term("throughput", "吞吐", "", "meals served per hour",
         "output tokens per second summed over all requests", ("吞吐量", "tok/s", "tokens/s")),
    Term("latency", "延遲", "", "how long one guest waits",
         "the time one request takes, end to end (or to its first token: TTFT)",
         ("延遲時間", "e2e latency", "end-to-end latency")),
    Term("in-flight requests", "在途請求數", "在途數", "guests ordering at the same time",
         "how many requests the client keeps outstanding (closed loop)",
         ("in flight", "in-flight", "outstanding requests", "concurrency", "並發數", "在途請求")),
    Term("usable concurrency", "可用並行數", "三關一起過", "how many tables really serve well",
         "the largest in-flight count that passes the three gates",
         ("可用並行", "usable parallelism")),
    Term("three gates", "三關", "", "the dish fits the table, comes in time, and is right",
         "usable concurrency = fits the context AND acceptable wait AND correct answers",
         ("3 gates", "三道關卡")),
    # ---- KV layouts (seed 000, section 二)
    Term("split KV", "分割 KV", "", "each table gets a fixed share of the table top",
         "n_ctx_seq = n_ctx / n_slots (padded to 256); --no-kv-unified",
         ("split", "--no-kv-unified", "分割", "分割配置", "分割 KV 配置")),
    Term("unified KV", "統一 KV", "", "one long shared table top",
         "all sequences share one pool of n_ctx cells; --kv-unified",
         ("unified", "--kv-unified", "共用 KV 池", "共同容量池", "共用桌", "unified kv cache")),
    Term("PagedAttention", "分頁注意力", "", "notes on loose pages instead of a reserved notebook",
         "KV stored in fixed-size blocks allocated on demand (vLLM)",
         ("paged attention", "pagedattention", "paging", "分頁")),
    Term("prefix cache", "前綴快取", "前綴重用", "keeping the notes of a set menu everyone orders first",
         "reusing the KV of a shared prompt prefix (cache_prompt)",
         ("prefix caching", "prefix reuse", "cache_prompt", "prompt cache", "提示快取")),
    # ---- batching (seed 001)
    Term("static batching", "靜態批次", "到終點才一起下車的巴士",
         "a bus that leaves full and lets everyone off at the end",
         "collect N requests, run them all to completion", ("static", "靜態批處理")),
    Term("dynamic batching", "動態批次", "隨時上車、仍要等全車到站的巴士",
         "a bus that leaves when full or after a wait",
         "max batch size plus max wait; each batch still runs to completion",
         ("dynamic", "動態批處理")),
    Term("batch size", "批次大小", "", "how many orders the kitchen cooks in one round",
         "how much one step processes, a word with two meanings: tokens per llama_decode call "
         "for llama.cpp (-b, n_batch), sequences for vLLM (max_num_seqs); the workbook writes "
         "-b / n_batch for the first and \"sequences in a step\" for the second, and neither is "
         "the slot count",
         ("batch", "批次", "max batch size", "最大批次大小", "n_batch", "max_num_seqs")),
    Term("microbatch", "實體批次", "", "one pan of a big order",
         "the physical chunk a logical batch is cut into for one compute pass (-ub, n_ubatch); "
         "llama.cpp runs the whole model, reading every weight, once per microbatch",
         ("micro-batch", "physical batch", "ubatch", "n_ubatch", "微批次", "微批")),
    Term("step", "步驟", "", "one round of the kitchen",
         "one llama_decode call over the current batch: one forward pass of the model per "
         "microbatch",
         ("iteration", "迭代", "decode iteration", "一步")),
    # ---- scheduling (seed 001, section 五: the policies by the names it gives them)
    Term("scheduling policy", "排程策略", "", "who is seated next",
         "the rule that picks which waiting requests join the batch at each step",
         ("scheduler", "scheduling", "policy", "排程", "排程器", "調度策略", "調度")),
    Term("FIFO", "先來先服務", "", "seated in order of arrival",
         "serve requests in arrival order; fair and simple, a long request holds up short ones",
         ("fifo", "fcfs", "first come first served", "first in first out", "先進先出",
          "先到先服務")),
    Term("SJF", "最短作業優先", "", "the quick orders first",
         "serve the request with the shortest expected output first; lowest mean latency, "
         "a long request may wait for ever",
         ("sjf", "shortest job first", "shortest first", "短作業優先", "短工作優先")),
    Term("priority", "優先級", "", "regulars first",
         "serve higher-priority requests first; low-priority ones may starve",
         ("priority scheduling", "priority first", "優先級排程", "優先級調度", "優先權", "優先順序")),
    Term("fair share", "公平分享", "", "every party gets its share of the kitchen",
         "balance service per user or per request (e.g. the Virtual Token Counter, VTC)",
         ("fair", "fair sharing", "fairshare", "vtc", "virtual token counter", "公平分配",
          "公平共享")),
    Term("hybrid", "混合", "", "regulars first, then whoever came first",
         "seed 001's policy: priority first, then arrival time; a low-priority request can "
         "still starve (notebook 07 measures it), only aging prevents that",
         ("hybrid policy", "mixed", "混合策略")),
    Term("queue depth", "佇列深度", "", "guests waiting at the door",
         "requests waiting for a slot; steadily above zero means the server is saturated",
         ("queue length", "queue", "佇列長度", "佇列", "排隊長度", "排隊")),
    Term("saturation", "飽和", "", "every table taken and a line at the door",
         "the load past which more requests only lengthen the queue, not the throughput",
         ("saturated", "飽和點", "已飽和")),
    Term("preemption", "搶占", "", "asking a guest to give up the table for a while",
         "pausing a running request (its KV freed or swapped) to make room for another",
         ("preempt", "preempted", "搶佔", "先佔")),
    Term("starvation", "餓死", "", "a guest who is never seated",
         "a request that waits for ever because others keep being chosen first",
         ("starve", "starved", "starves", "飢餓")),
    # ---- the benchmark (labkit bench)
    Term("worksheet", "工作表", "", "the kitchen's log book",
         "one row per configuration: throughput, TTFT, errors, correct answers, memory",
         ("紀錄表",)),
    # ---- the workbook and what it talks about
    Term("workbook", "工作簿", "", "the restaurant's training book",
         "the notebooks, labkit and their tests, read and run in order",
         ("教材", "工作手冊")),
    Term("host", "帶位員", "", "the one who seats each guest",
         "the server's scheduler: it gives a free slot to the next waiting request",
         ("帶位的人", "領檯")),
    Term("agent", "Agent", "", "a guest with a long errand, who orders many times",
         "a program that calls the model many times in its own loop, using tools and files "
         "between the calls (seed 000's Agent)", ("agents", "代理", "智慧代理")),
    Term("harness", "Harness", "", "the guest's own errand list",
         "the agent's outer loop: your code, which holds the tools, files, state and the order "
         "of the tasks, and hands results from one request to the next (seed 000's Harness)",
         ("agent harness",)),
    Term("stopwatch", "碼錶", "", "the guest's watch",
         "the client's three timestamps of a request: sent, first visible token, end of the "
         "stream (labkit.bench's client)", ("碼表",)),
    Term("closed loop", "封閉迴路", "", "each guest orders again only after the last dish",
         "a load where each client sends its next request when the last one has finished "
         "(labkit bench, labkit sim --clients); a program's loop is a 迴圈",
         ("closed-loop", "封閉迴圈")),
    Term("open loop", "開放迴路", "", "guests walk in on their own schedule",
         "a load where requests arrive at a set rate whether or not earlier ones are done "
         "(Poisson arrivals, --rate)", ("open-loop", "開放迴圈")),
    Term("answer key", "答案本", "", "the recipe the dish is checked against",
         "the expected id, owner and deadline of every test document", ("標準答案", "答案")),
    Term("warm-up", "暖機", "", "heating the stove before service",
         "an unscored first request so one-time costs don't land in the measurement",
         ("warmup", "warm up", "預熱")),
    Term("sampled peak", "取樣峰值", "", "the busiest moment someone happened to look",
         "the highest memory reading of a 200 ms sampler; brief spikes can be missed",
         ("peak", "峰值")),
]


# The restaurant picture and the engineer's meaning of every term, in Chinese (the Chinese
# edition's glossary table and docs/GLOSSARY.md show them beside the English).
IN_CHINESE: dict[str, tuple[str, str]] = {
    "request": ("一位客人點的一張單",
                "對模型的一次呼叫：送進提示、拿回 token；一個 Agent 任務可能發出很多次"),
    "slot": ("一張桌子",
             "伺服器同時處理的一個序列位置（llama-server 的 -np；一個序列 id）"),
    "context": ("桌面",
                "一個序列能容納的 token，提示和生成的合計（n_ctx_slot）"),
    "KV cache": ("為每張單記下的筆記",
                 "每個已處理 token 在每一層的鍵（key）與值（value），每個解碼步驟都會重複讀取"),
    "continuous batching": ("每一輪都重新安排入座的桌子",
                            "迭代層級排程：序列在兩個解碼步驟之間加入或離開批次"),
    "prefill": ("先把點單讀完",
                "處理提示的 token，一步處理很多個；決定首字等待時間"),
    "decode": ("一口一口地做菜",
               "每一步為每個序列生成一個 token；一步裡的每個實體批次都把全部權重讀過一次，"
               "不是每一步只讀一次"),
    "token": ("一口", "模型處理文字的單位；不等於字元：一個中文字常是一個或更多個 token"),
    "tokenizer": ("廚房把一張單切成一口一口的方法",
                  "模型自己的對照表，把文字切成 token、再把 token 拼回文字（llama_tokenize；GGUF "
                  "檔裡的 tokenizer 欄位）"),
    "TTFT": ("等第一口菜上桌", "從送出請求到看見第一段文字的時間"),
    "throughput": ("每小時出了幾道菜", "所有請求合計每秒輸出的 token 數"),
    "latency": ("一位客人等了多久", "一個請求從頭到尾花的時間（或到第一個 token：TTFT）"),
    "in-flight requests": ("同時在點餐的客人", "用戶端同時保持未完成的請求數（封閉迴路）"),
    "usable concurrency": ("真正能好好服務的桌數", "通過三關的最大在途請求數"),
    "three gates": ("菜放得上桌、準時上菜、而且做對",
                    "可用並行數 = 放得進上下文、等待可以接受、答案正確，三者同時成立"),
    "split KV": ("每張桌子分到固定的一塊桌面",
                 "n_ctx_seq = n_ctx / n_slots（補齊到 256 的倍數）；--no-kv-unified"),
    "unified KV": ("一張大家共用的長桌", "所有序列共用一個 n_ctx 格的池；--kv-unified"),
    "PagedAttention": ("筆記寫在活頁紙上，不預留整本筆記本",
                       "KV 存在固定大小的區塊裡，用到才配置（vLLM）"),
    "prefix cache": ("大家都先點的套餐，筆記先留著",
                     "重用共同提示前綴的 KV（cache_prompt）"),
    "static batching": ("坐滿才開、到終點才讓大家一起下車的巴士",
                        "湊滿 N 個請求，全部跑完才結束這一批"),
    "dynamic batching": ("坐滿或等夠久就開的巴士",
                         "最大批次大小加上最長等待時間；每一批仍要跑完才結束"),
    "batch size": ("廚房一輪煮幾份單",
                   "一步處理多少，這個詞有兩種意思：llama.cpp 指一次 llama_decode 的 token 數"
                   "（-b，n_batch），vLLM 指序列數（max_num_seqs）；本工作簿前者寫 -b／n_batch，"
                   "後者寫「批次中的序列數」，兩者都不是槽位數"),
    "microbatch": ("一大份單裡的一鍋", "一個邏輯批次為了一次計算切出的實體區塊（-ub，n_ubatch）；"
                   "llama.cpp 每個實體批次都把整個模型跑一次，讀過每一個權重"),
    "step": ("廚房的一輪", "對目前批次的一次 llama_decode 呼叫：每個實體批次做一次模型的前向計算"),
    "scheduling policy": ("下一位讓誰入座", "每一步決定哪些等待中的請求加入批次的規則"),
    "FIFO": ("照到達的順序入座", "依到達順序服務；公平又簡單，但一個長請求會擋住短的"),
    "SJF": ("快的單先做", "先服務預期輸出最短的請求；平均延遲最低，長請求可能永遠等下去"),
    "priority": ("熟客優先", "先服務優先級高的請求；優先級低的可能餓死"),
    "fair share": ("每一桌客人都分到廚房的一份力氣",
                   "依使用者或請求平衡服務量（例如虛擬 token 計數器 VTC）"),
    "hybrid": ("熟客優先，同一級的先來先坐",
               "種子 001 的策略：先看優先級，再看到達時間；優先級低的請求仍可能餓死"
               "（筆記本 07 量給你看），只有老化才能避免"),
    "queue depth": ("門口排隊的客人", "等待槽位的請求數；持續大於零表示伺服器已飽和"),
    "saturation": ("桌桌客滿，門口還排了隊", "超過這個負載，再多的請求只會拉長佇列，吞吐不再增加"),
    "preemption": ("請一位客人暫時讓出桌子", "暫停一個執行中的請求（釋放或換出它的 KV），騰出空間給另一個"),
    "starvation": ("永遠等不到位子的客人", "因為別人總是先被選中，一個請求一直等下去"),
    "worksheet": ("廚房的紀錄本", "每個配置一列：吞吐、首字等待、錯誤、答對數、記憶體"),
    "answer key": ("用來對照菜做得對不對的食譜", "每份測試文件應有的 id、負責人和截止日"),
    "workbook": ("餐廳給新人的訓練本", "依序閱讀、執行的筆記本，加上 labkit 和它的測試"),
    "host": ("替每位客人帶位、領他入座", "伺服器的排程器：把空出來的槽位交給下一個等待中的請求"),
    "agent": ("辦一件長差事、會點很多次單的客人",
              "在自己的迴圈裡多次呼叫模型、呼叫之間使用工具和檔案的程式（種子文章 000 的 Agent）"),
    "harness": ("客人自己的差事清單",
                "Agent 在模型之外的那層執行迴圈：你的程式碼，管工具、檔案、狀態和任務的先後，"
                "把一個請求的結果交給下一個（種子文章 000 的 Harness）"),
    "closed loop": ("每位客人吃完上一道才點下一道",
                    "每個用戶端等上一個請求完成才送下一個的負載（labkit bench、labkit sim --clients）；"
                    "程式裡的 loop 則是迴圈"),
    "open loop": ("客人照自己的時間進門", "請求依固定速率到達、不管前面的做完沒有的負載（卜瓦松到達，--rate）"),
    "stopwatch": ("客人手上的錶",
                  "用戶端替一個請求記下的三個時間：送出、第一個可見 token、串流結束（labkit.bench 的用戶端）"),
    "warm-up": ("營業前先熱爐子", "一個不計分的第一個請求，讓一次性的成本不算進測量"),
    "sampled peak": ("剛好有人看到的最忙時刻", "每 200 ms 取樣一次的記憶體最高讀數；短暫的尖峰可能漏掉"),
}


# Words the Chinese edition does not write, and the glossary's word instead: other names for
# the policies than seed 001's, the other renderings of the workbook's own terms (one word per
# term), and terms written differently outside Taiwan. The editions check
# (authoring.editions) reads the zh-TW notebooks' prose for them, and tests read labkit's
# Chinese messages, README.zh-TW.md and the exercises' Chinese.
AVOID: dict[str, str] = {
    # one word per term: the word the glossary chose, the other renderings found in the prose
    "調度": "排程", "詞元": "token", "首個 token 延遲": "首字等待", "首 token 延遲": "首字等待",
    "首字延遲": "首字等待", "微批": "實體批次", "分詞器": "斷詞器", "教材": "工作簿",
    "工作手冊": "工作簿", "帶位的人": "帶位員", "領檯": "帶位員", "智慧代理": "Agent",
    "代理": "Agent", "碼表": "碼錶", "程式助手": "程式助理", "FAQ": "常見問題",
    "總結": "重點整理", "佔": "占", "開放迴圈": "開放迴路", "封閉迴圈": "封閉迴路",
    "實例": "執行個體", "chunk": "片段",
    "wall time": "實際經過時間",
    # the step trace's headings, as labkit's catalogue writes them (labkit.lang.i18n.HEADINGS)
    "注意到的格數": "注意力讀取格數",
    # written differently outside Taiwan, or other names for seed 001's policies
    "先到先服務": "先來先服務", "短工作優先": "最短作業優先", "短作業優先": "最短作業優先",
    "優先權": "優先級", "公平分配": "公平分享", "搶佔": "搶占", "飢餓": "餓死",
    "緩存": "快取", "內存": "記憶體", "顯存": "GPU 記憶體", "默認": "預設", "線程": "執行緒",
    "進程": "行程", "服務器": "伺服器", "數據": "資料", "質量": "品質",
    "信息": "訊息", "網絡": "網路", "軟件": "軟體", "硬件": "硬體", "文檔": "文件",
    "調用": "呼叫", "接口": "介面", "模塊": "模組", "併發": "並行", "並發": "並行",
    "批處理": "批次處理", "令牌": "token", "運行": "執行", "視頻": "影片", "字符": "字元",
    "代碼": "程式碼", "源碼": "原始碼", "變量": "變數", "函數": "函式", "客戶端": "用戶端",
}

# Words that hold a word of AVOID and are right as they are: 反向代理 is a reverse proxy, not an
# agent; 程式碼表示 is "shown in code", not a stopwatch; chunked prefill (分塊預填) and 片段（chunk）
# give a term's English beside it, as a first use does.
FINE: tuple[str, ...] = ("反向代理", "代理伺服器", "程式碼表", "chunked prefill", "片段（chunk）")

# Passages the zh-TW prose quotes word for word from the seed articles, in 「」, with the seed's
# own words, which may be ones the glossary avoids (seed 000 writes 碼表, seed 001 調度): a quote
# is left as the seed wrote it, so the editions check does not read these. Each is the text
# between the corner brackets and the seed it comes from.
SEED_QUOTES: dict[str, str] = {
    "放上碼表": "000_7ca7d4cd839f7038.txt",
}


def _inside(text: str, start: int, length: int, word: str) -> bool:
    """Whether ``text[start:start + length]`` lies inside an occurrence of ``word``."""
    return any(text[i:i + len(word)] == word and start + length <= i + len(word)
               for i in range(max(0, start - len(word) + length), start + 1))


def avoided(text: str) -> dict[str, str]:
    """``{word: the glossary's word}`` for every word of :data:`AVOID` in ``text`` (an
    occurrence inside the right word, 短作業優先 in 最短作業優先, or inside a word of
    :data:`FINE`, 代理 in 反向代理, does not count)."""
    found = {}
    for wrong, right in AVOID.items():
        start = text.find(wrong)
        while start >= 0:
            covered = any(_inside(text, start, len(wrong), w) for w in (right, *FINE))
            if not covered:
                found[wrong] = right
                break
            start = text.find(wrong, start + 1)
    return found


def _key(word: str) -> str:
    """How names are compared: lower case, no spaces, hyphens or underscores."""
    return "".join(word.strip().lower().replace("-", " ").replace("_", " ").split())


def _index() -> dict[str, Term]:
    index: dict[str, Term] = {}
    for t in TERMS:
        for w in t.names():
            index.setdefault(_key(w), t)
    return index


_INDEX = _index()


def lookup(word: str) -> Term:
    """Find a term by any of its names: English, Chinese, the seeds' metaphor or an alias
    (case, spaces, hyphens and underscores do not matter)."""
    t = _INDEX.get(_key(word))
    if t is None:
        raise KeyError(f"{word!r} is not in the glossary; known: "
                       f"{', '.join(t.english for t in TERMS)}")
    return t


def words(term: str) -> tuple[str, ...]:
    """Every accepted word for ``term`` (any of its names), English and Traditional Chinese:
    what an exercise check passes to :func:`labkit.exercises.choice`."""
    return lookup(term).names()


def options(*terms: str) -> dict[str, tuple[str, ...]]:
    """``{english: words}`` for these terms, the argument :func:`labkit.exercises.choice`
    takes: ``choice(answer, options("fifo", "sjf"))`` returns "FIFO" or "SJF"."""
    return {lookup(t).english: words(t) for t in terms}


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else "–"


def markdown() -> str:
    rows = ["| English | 中文 | The seeds' words (比喻) | In the restaurant（餐廳裡） "
            "| In llama.cpp terms（工程師的意思） | Also |",
            "|---|---|---|---|---|---|"]
    rows += [f"| {t.english} | {t.chinese} | {_cell(t.metaphor)} | {t.restaurant}<br>"
             f"{t.restaurant_in('zh-TW')} | {_cell(t.engineer)}<br>{_cell(t.engineer_in('zh-TW'))} "
             f"| {_cell(', '.join(t.aliases))} |" for t in TERMS]
    return ("# Glossary\n\nThe terms the workbook uses: the English term, the Traditional Chinese "
            "term as Taiwanese engineers write it, the picture the seed articles draw of it "
            "(000_7ca7d4cd839f7038.txt: 窗口, 桌面, 已讀筆記, 每輪換桌名單; "
            "001_027e2139b87c0d3a.txt: the policies and the bus), and what it is in llama.cpp, "
            "each in English and in Chinese. "
            "`labkit.lang.glossary.words` gives every name in a row, in either language, to the "
            "exercise checks; `labkit.lang.glossary.lookup` finds a row by any of them. "
            "Generated from `labkit/lang/glossary.py`.\n\n"
            "本表列出工作簿用到的術語：英文、台灣工程師慣用的繁體中文術語、種子文章裡的比喻，以及它在 "
            "llama.cpp 裡的意思。\n\n" + "\n".join(rows) + "\n")


def table(lang: str | None = None):
    """The glossary as a pandas DataFrame (what a notebook displays), its pictures and
    meanings in the language in use (or ``lang``)."""
    import pandas as pd

    from .choice import lang as language
    lang = lang or language()
    if lang == "zh-TW":
        return pd.DataFrame([{"english": t.english, "中文": t.chinese, "比喻": t.metaphor,
                              "餐廳裡": t.restaurant_in(lang), "工程師的意思": t.engineer_in(lang)}
                             for t in TERMS])
    return pd.DataFrame([{"english": t.english, "中文": t.chinese, "比喻": t.metaphor,
                          "restaurant": t.restaurant, "engineer": t.engineer} for t in TERMS])
