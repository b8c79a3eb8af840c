"""Notebook 07 (scheduling): policies, starvation, queues, batch size, a policy of your own."""

from __future__ import annotations

from ..lang.i18n import Both, pick
from . import CODE, LearnerCodeError, as_word, call, choice, exercise, open_question
from .learner_code import Rule, raised, refusal
from .quantities import quantity

# The policies by the names the notebook, the seed article (001_027e2139b87c0d3a.txt) and the
# glossary give them, in English and Traditional Chinese (and the words a learner may use instead);
# the first two of each are the ones a check lists when it cannot read an answer.
POLICIES = {
    "fifo": ("first come first served", "先來先服務", "first in first out", "fcfs", "先進先出",
             "先到先服務", "先來先服務排程", "先來先服務調度"),
    "sjf": ("shortest job first", "最短作業優先", "shortest first", "短工作優先", "短作業優先",
            "最短優先"),
    "priority": ("priority first", "優先級", "priority scheduling", "優先級排程", "優先級調度",
                 "優先權", "優先順序", "優先級優先"),
    "fair": ("fair share", "公平分享", "fair sharing", "fairshare", "vtc", "virtual token counter",
             "公平分配", "公平共享", "公平", "虛擬 token 計數器"),
}


@exercise("7.1", Both("Short requests keep arriving faster than the server can serve them. Under "
                      "which policy can a long request wait for ever? (fifo, sjf, priority or fair)",
                      "短請求不斷湧進，速度比伺服器服務得了的還快。在哪一種策略下，長請求可能永遠"
                      "等下去？（fifo、sjf、priority 或 fair；也可以寫先來先服務、最短作業優先、"
                      "優先級、公平分享）"))
def _starves(answer):
    p = choice(answer, POLICIES)
    if p == "sjf":
        return True, ""
    if p == "fifo":
        return False, pick("FIFO serves everyone in arrival order: a long request waits its turn, "
                           "never longer",
                           "先來先服務照到達順序服務每個人：長請求只等到輪到它為止，不會更久")
    if p == "fair":
        return False, pick("fair share counts service per user, not per request length",
                           "公平分享計算的是每位使用者得到的服務量，不看請求的長短")
    return False, pick("with every request labelled alike, priority is plain arrival order: which "
                       "policy lets later requests pass a waiting long one, again and again?",
                       "每個請求的標籤都一樣時，優先級就只是到達順序：哪一種策略會讓後來的請求"
                       "一次又一次超過正在等的長請求？")


@exercise("7.2", Both("One user sends 85% of the requests and the other 15%. Which policy keeps "
                      "the light user's wait short even when the heavy user floods the queue?",
                      "一位使用者送出 85% 的請求，另一位送出 15%。哪一種策略能在用量大的使用者"
                      "塞爆佇列時，仍讓用量小的使用者等得不久？"))
def _fair(answer):
    p = choice(answer, POLICIES)
    if p == "fair":
        return True, ""
    if p == "priority":
        return False, pick("priority looks at a label on each request, not at who has already "
                           "been served",
                           "優先級看的是每個請求上的標籤，不看誰已經被服務了多少")
    return False, pick("which of the four policies knows who sent each request?",
                       "四種策略裡，哪一種知道每個請求是誰送來的？")


def queue_refusals(n: int = 10, slots: int = 2, max_queue: int = 4) -> int:
    """Requests refused at once when ``n`` arrive together at an idle server."""
    return max(0, n - slots - max_queue)


@exercise("7.5", Both("A labkit server with 2 idle slots and a bounded queue of 4 (labkit's own "
                      "--max-queue 4) receives 10 requests at the same moment. How many are "
                      "refused at once (HTTP 503)?",
                      "一台 labkit 伺服器有 2 個閒置的槽位，佇列上限是 4（labkit 自己的 "
                      "--max-queue 4），同一瞬間收到 10 個請求。有幾個會立刻被拒絕（HTTP 503）？"))
def _bounded(answer):
    v = quantity(answer, "requests")
    want = queue_refusals()
    if v == want:
        return True, ""
    if v == 6:
        return False, pick("the 2 idle slots take 2 requests straight away; the queue holds 4 more",
                           "2 個閒置的槽位馬上接走 2 個請求；佇列還能再放 4 個")
    if v == 8:
        return False, pick("the queue holds 4 requests besides the ones the slots take",
                           "除了槽位接走的請求，佇列還能放 4 個")
    return False, pick("count what the slots take, then what the queue holds; the rest are refused",
                       "先數槽位接走幾個，再數佇列放得下幾個；剩下的就被拒絕")


DOWN = ("down", "falls", "fall", "lower", "decreases", "slower", "goes down", "下降", "變慢",
        "降低", "變低", "減少", "變少", "下滑", "會下降")
UP = ("up", "rises", "rise", "higher", "increases", "faster", "goes up", "上升", "變快", "提高",
      "變高", "增加", "變多", "會上升")


@exercise("7.6", Both("The server is already saturated (the queue never empties). You double the "
                      "slots. Does each stream's tok/s go up or down?",
                      "伺服器已經飽和（佇列從來沒清空過）。你把槽位加倍。每條串流的 tok/s 會上升"
                      "還是下降？（up 或 down，也可以寫上升或下降）"))
def _batch(answer):
    w = as_word(answer)
    if w in DOWN:
        return True, ""
    if w in UP:
        return False, pick("that is the total tok/s; read section 4's per_stream_tok_s column as "
                           "the slots grow",
                           "那是總 tok/s；看第 4 節表格裡「每條串流 tok/s」（per_stream_tok_s）那一欄"
                           "隨槽位增加怎麼變")
    raise ValueError(pick("answer 'up' or 'down'", "請回答 up 或 down（或「上升」、「下降」）"))


#: 7.3's answer is a key; it may not call the checks.
KEY_RULE = Rule(forbid=(), instead=Both("Write the key yourself, from request and now.",
                                        "請自己用 request 和 now 寫出這個鍵。"))
#: Seconds the rush may take with the learner's key (about a second with a plain one).
RUSH_LIMIT_S = 120.0


def _is_key(k) -> bool:
    import numbers
    if isinstance(k, tuple):
        return all(isinstance(x, numbers.Real) for x in k)
    return isinstance(k, numbers.Real)


@exercise("7.3", Both("Write key(request, now) for a scheduling policy that keeps the rush's short "
                      "answers quick (TTFT p90 within the limit) and starves no long request "
                      "(every one admitted within the starvation limit). The smallest key is "
                      "admitted first.",
                      "為一個排程策略寫出 key(request, now)：讓尖峰時段的短回答維持快速（TTFT p90 "
                      "在門檻內），而且不讓任何長請求餓死（每一個都在餓死門檻內入座）。鍵最小的"
                      "先入座。"),
          kind=CODE)
def _own_policy(fn):
    from ..sim import experiments as ex
    from ..sim.policies import from_key
    if not callable(fn):
        raise TypeError(pick(f"expected a function key(request, now), got {type(fn).__name__}",
                             f"這裡要的是一個函式 key(request, now)，收到的是 "
                             f"{type(fn).__name__}"))
    refused = refusal(fn, KEY_RULE)
    if refused:
        return False, refused

    def key(request, now):       # called by the simulator, in the thread call() runs it in
        try:
            k = fn(request, now)
        except Exception as exc:
            raise raised(exc) from exc
        if not _is_key(k):
            raise LearnerCodeError(pick(f"your key should be a number or a tuple of numbers, "
                                        f"but it returned {k!r:.60}",
                                        f"你的鍵應該是數字，或由數字組成的 tuple，你的函式卻回傳了 "
                                        f"{k!r:.60}"))
        return k

    def rush():
        try:
            return ex.verdict(ex.rush_run(from_key(key, name="yours")))
        except TypeError as exc:         # keys that cannot be compared with each other
            raise LearnerCodeError(pick(f"your keys could not be compared ({exc}); return "
                                        f"numbers, or tuples of numbers",
                                        f"你的鍵無法互相比較（`{exc}`）；請回傳數字，或由數字組成"
                                        f"的 tuple")) from exc

    v = call(rush, limit_s=RUSH_LIMIT_S, read=lambda verdict: verdict)
    bound, limit = ex.STARVATION_BOUND_S, ex.SHORT_TTFT_P90_LIMIT_S
    wait, p90 = v["long_wait_max_s"], v["short_ttft_p90_s"]
    got = pick(f"longest wait of a long request {wait:.1f} s (limit {bound:g} s), short answers' "
               f"TTFT p90 {p90:.1f} s (limit {limit:g} s)",
               f"長請求最久等了 {wait:.1f} 秒（門檻 {bound:g} 秒），短回答的 TTFT p90 "
               f"{p90:.1f} 秒（門檻 {limit:g} 秒）")
    if v["ok"]:
        return True, got
    if not v["no_starvation"] and not v["short_ttft_ok"]:
        return False, pick(f"{got}: both missed. Short requests should go first while the long "
                           f"ones are fresh, and a long request's claim should grow as it waits",
                           f"{got}：兩條都沒過。大家都剛到的時候，短請求應該先上；長請求等得越久，"
                           f"它的順位就該越往前")
    if not v["no_starvation"]:
        starved, total = v["long_starved"], v["long_requests"]
        return False, pick(f"{got}: {starved} of {total} long requests starved. Does your key "
                           f"change as now - request.arrival grows, and fast enough that a long "
                           f"request overtakes fresh short ones in time?",
                           f"{got}：{total} 個長請求裡有 {starved} 個餓死。你的鍵會隨著 "
                           f"`now - request.arrival` 變大而改變嗎？變得夠快，能讓長請求及時超過"
                           f"剛到的短請求嗎？")
    return False, pick(f"{got}: the short answers wait too long. Long requests overtake them too "
                       f"soon: let a long request's waiting count for less, or favour short ones "
                       f"more while everyone is fresh",
                       f"{got}：短回答等太久了。長請求太早就超車：讓長請求的等待時間算得少一點，"
                       f"或在大家都剛到時更偏向短請求")


def llama_server_refusals(n: int = 10, slots: int = 2) -> int:
    """What llama-server refuses at once of ``n`` requests sent together: none; those that find
    no free slot are deferred (its ``requests_deferred`` gauge) until one frees up."""
    return 0


@exercise("7.7", Both("The same 10 requests arrive at once at llama-server with 2 idle slots "
                      "(-np 2). How many does it refuse at once?",
                      "同樣 10 個請求同時送到有 2 個閒置槽位的 llama-server（-np 2）。它會立刻"
                      "拒絕幾個？"))
def _llama_server(answer):
    v = quantity(answer, "requests")
    if v == llama_server_refusals():
        return True, ""
    if v == queue_refusals():
        return False, pick("that is labkit's --max-queue at work: is it one of llama-server's flags?",
                           "那是 labkit 的 `--max-queue` 在起作用：它是 llama-server 的旗標嗎？")
    return False, pick("look at the /metrics gauge this notebook read from llama-server while the "
                       "burst waited",
                       "看看這本筆記本在那一波請求等待時，從 llama-server 的 `/metrics` 讀到的量表")


open_question(
    "7.4",
    Both("You run the rush of section 2 for a team: short chat answers and long reports on one "
         "server. Which policy do you deploy, and with which setting? Decide from your own "
         "numbers: quote the longest wait of a long request and the short answers' TTFT p90 that "
         "your choice gave, and what the other policies gave.",
         "你為一個團隊經營第 2 節的尖峰時段：短的聊天回答和長報告放在同一台伺服器上。你要部署"
         "哪一種策略、用什麼設定？用你自己的數字來決定：引用你選的策略得到的長請求最長等待和"
         "短回答的 TTFT p90，以及其他策略得到的數字。"),
    model_answer=Both(
        "Neither plain policy: SJF (and priority with chat above reports) kept the chat quick, "
        "TTFT p90 about 1 s, but the longest report waited 57 s and 17 of 52 were starved past "
        "the 40 s limit, a number that grows for as long as the rush lasts; FIFO and fair share "
        "starved no one but put the chat's TTFT p90 at 12-16 s. Shortest-first with aging (key = "
        "expected tokens - 20 x seconds waited) gave about 35 s and 4.5 s: both limits held. I "
        "deploy that, and because the server is overloaded all the same, I also cap the queue "
        "in front of it so that the excess is refused at once instead of waiting.",
        "兩種單純的策略都不用：最短作業優先（以及把聊天排在報告前面的優先級）讓聊天很快，TTFT "
        "p90 約 1 秒，但最久的報告等了 57 秒，52 份裡有 17 份超過 40 秒的門檻而餓死，而且尖峰"
        "持續多久，這個數字就漲多久；先來先服務和公平分享沒讓任何人餓死，但聊天的 TTFT p90 落在 "
        "12–16 秒。帶老化的最短作業優先（鍵 = 預期 token 數 − 20 × 已等待秒數）得到約 35 秒和 "
        "4.5 秒：兩條門檻都守住了。我部署這個；而且因為伺服器終究是超載的，我也會在它前面給佇列"
        "設上限，讓多出來的請求立刻被拒絕，而不是一直等下去。"),
    rubric=[
        Both("quotes two figures from their own run: a long request's longest wait and the short "
             "answers' TTFT p90",
             "引用自己這一輪的兩個數字：長請求的最長等待，以及短回答的 TTFT p90"),
        Both("compares with at least one plain policy (SJF starves reports, FIFO or fair share "
             "slow the chat)",
             "至少和一種單純的策略比較（最短作業優先讓報告餓死，先來先服務或公平分享拖慢聊天）"),
        Both("chooses a policy whose long waits stay bounded (aging, or fair share with a reason)",
             "選一個讓長等待有上限的策略（老化，或說得出理由的公平分享）"),
        Both("notes that no order makes an overloaded server keep up: the queue still grows, so a "
             "limit in front of the server (or more capacity) is needed",
             "指出沒有哪一種順序能讓超載的伺服器跟上：佇列還是會變長，所以需要在伺服器前面設上限"
             "（或增加容量）"),
    ],
    min_words=25, needs_number=True)
