"""Notebook 08 (capacity planning): prediction error, the step cost, a machine of your own against
an instance that is always up, a day's plot, a chat's KV memory, and rent or buy for your team."""

from __future__ import annotations

from ..costs.planning import HOURS_PER_MONTH
from ..lang.i18n import Both, pick
from . import choice, exercise, open_question
from .quantities import quantity


@exercise("8.1", Both("Predicted 10 s, measured 12 s: (predicted - measured) / measured?",
                      "預測 10 秒、實測 12 秒：(預測 - 實測) / 實測 是多少？"))
def _error(answer):
    v = quantity(answer, "")
    want = (10 - 12) / 12
    if abs(v - want) < 0.005:
        return True, ""
    if abs(v + want) < 0.005:
        return False, pick("check the sign: was the prediction above or below what was measured?",
                           "檢查正負號：預測比實測高還是低？")
    if abs(v - (10 - 12) / 10) < 0.005:
        return False, pick("the error is relative to what really happened, not to the prediction",
                           "誤差是相對於實際發生的情況，不是相對於預測")
    if abs(abs(v) - 16.67) < 0.1:
        return False, pick("as a fraction, not a percentage", "請用比例表示，不是百分比")
    return False, pick("subtract first, then divide by one of the two times: which one is the "
                       "reference?", "先相減，再除以兩個時間中的一個：哪一個才是基準？")


@exercise("8.2", Both("a = 0.01, b = 0, c = 0.002 per decoding sequence, d = e = 0: one step with 8 "
                      "sequences?",
                      "a = 0.01、b = 0、每個解碼中的序列 c = 0.002、d = e = 0：有 8 個序列的一步要幾秒？"))
def _step(answer):
    v = quantity(answer, "s")
    if abs(v - (0.01 + 8 * 0.002)) < 1e-6:
        return True, ""
    if abs(v - 8 * 0.002) < 1e-6:
        return False, pick("every step also pays the fixed cost a", "每一步也都要付固定成本 a")
    if abs(v - 8 * 0.012) < 1e-6:
        return False, pick("a is paid once per step, not once per sequence",
                           "a 是每一步付一次，不是每個序列付一次")
    return False, pick("the step cost is a sum of five terms; only two of them are non-zero here",
                       "每一步的成本是五項的和；這裡只有兩項不是零")


# One month everywhere, notebook 08's: 730 h (365 x 24 / 12). The power bill is $20 so that no
# pair of mistakes lands on the right answer (with $10, 730 - 10 = 720 = a 30-day month's hours).
BUY, POWER, RENT, BUSY_H = 600, 20, 1.0, 4
MONTH_H = HOURS_PER_MONTH                   # 730
DAYS = MONTH_H / 24                         # 30.42


def _near(v, want, tol=0.005):
    return abs(v - want) < tol


@exercise("8.3", Both("Buy 600 + 20/month of power; rent an instance at 1.0/h, up all month "
                      "(730 h), busy 4 h a day: break-even after how many months?",
                      "買卡 600，加上每月電費 20；租執行個體每小時 1.0，整個月開著（730 小時），"
                      "每天忙 4 小時：幾個月後回本？"))
def _break_even(answer):
    v = quantity(answer, "months")
    if _near(v, BUY / (MONTH_H * RENT - POWER)):
        return True, ""
    if _near(v, BUY / (MONTH_H * RENT)):
        return False, pick("owning is not free once bought: the machine's power bill is paid every "
                           "month", "買了之後也不是免費的：每個月都要付這台機器的電費")
    if _near(v, BUY / (720 * RENT - POWER)) or _near(v, BUY / (720 * RENT)):
        return False, pick("a month here is 730 hours (365 x 24 / 12), as in notebook 08, not "
                           "30 days of 24 hours", "這裡的一個月是 730 小時（365 x 24 / 12），和筆記本 08 "
                           "一樣，不是 30 天乘 24 小時")
    if _near(v, BUY / (BUSY_H * DAYS * RENT - POWER), 0.01) or _near(v, BUY / (BUSY_H * DAYS * RENT), 0.01):
        return False, pick("that is the serverless price: a rented instance bills every hour it is "
                           "up, not only the hours it generates",
                           "那是無伺服器的價格：租來的執行個體開著的每一小時都計費，"
                           "不只是它在生成的時數")
    if _near(v, BUY / (24 * RENT - POWER / DAYS), 0.5) or _near(v, BUY / (24 * RENT), 0.5):
        return False, pick("that is in days; the question asks for months",
                           "那是以天為單位；題目問的是月")
    return False, pick("find what renting costs in a month, then what owning saves each month",
                       "先算出租一個月要多少錢，再算自己擁有每個月省下多少")


DAY_SHAPES = {
    "capacity": ("容量不足", "not enough capacity", "capacity short", "short capacity", "不足",
                 "穩定攀升"),
    "bursts": ("爆發", "burst", "burstiness", "佇列吸收的爆發", "鋸齒", "鋸齒狀"),
}


@exercise("8.4", Both("TTFT and queue depth climb all afternoon and never drain: bursts or "
                      "capacity? (容量不足 or 爆發)",
                      "首字等待和佇列深度整個下午一路往上爬、一直消退不下來：是爆發還是容量不足？"))
def _day(answer):
    if choice(answer, DAY_SHAPES) == "capacity":
        return True, ""
    return False, pick("a burst the queue absorbs leaves a saw-tooth that drains; what does a "
                       "climb that never drains say?",
                       "佇列吸收得了的爆發，會留下會消退的鋸齒；一路往上爬、消退不下來，說明了什麼？")


SEED_8B_KV = 2 * 32 * 8 * 128 * 2        # bytes per token, the seed's 8B example


@exercise("8.5", Both("16 conversations of 2,048 tokens each on the seed's 8B model (131,072 B of "
                      "KV per token): how many GiB of KV?",
                      "在種子文章的 8B 模型上（每個 token 131,072 B 的 KV），16 段各 2,048 個 token "
                      "的對話：合計多少 GiB 的 KV？"))
def _chat_kv(answer):
    v = quantity(answer, "GiB")
    want = 16 * 2048 * SEED_8B_KV / 2**30
    if abs(v - want) < 0.01 * want:
        return True, ""
    if abs(v - 16 * 2048 * SEED_8B_KV / 1e9) < 0.01:
        return False, pick("in GiB (2**30 bytes), not GB", "單位是 GiB（2**30 位元組），不是 GB")
    if abs(v - 2048 * SEED_8B_KV / 2**30) < 0.01:
        return False, pick("that is one conversation; every conversation generating at once holds "
                           "its own", "那是一段對話的量；同時在生成的每段對話都各自保有一份")
    if abs(v - 16 * 2048 * SEED_8B_KV / 2 / 2**30) < 0.01:
        return False, pick("131,072 B per token already counts both K and V",
                           "每個 token 131,072 B 已經把 K 和 V 都算進去了")
    return False, pick("how many tokens are held in all, and how many bytes does each one take?",
                       "總共保有多少個 token？每個 token 又占多少位元組？")


open_question(
    "8.6",
    Both("Rent or buy for your team? Use your own numbers: your busy hours a month from your "
         "simulated (or measured) day, your quotes, the cost of a month of owning the machine and "
         "of each way of renting at those hours, and the crossover hours. Say which you choose and "
         "which non-price factor of the seed would change your mind.",
         "你的團隊該租還是買？用你自己的數字：模擬（或實測）的一天算出的每月忙碌時數、你拿到的報價、"
         "在這個時數下自己買機器和每種租法每月的成本，以及交叉點的時數。說出你的選擇，"
         "以及種子文章裡哪個價格以外的因素會讓你改變主意。"),
    model_answer=Both(
        "My simulated day, run on the RTX 4090 preset with the 8B model, kept the GPU busy about "
        "5.4 hours a day, about 165 hours a month. At those hours the whole machine (a $600 card, "
        "half of an $800 PC, sold for $250 after 3 years, power idle and busy) costs about $37 a "
        "month, against $730 for an instance always on, about $190 for one stopped when idle and "
        "$256 serverless. Owning costs less than stopping an instance above about 21 busy hours a "
        "month, so we would still buy at an eighth of our hours. We generate every working day and our documents must stay in the building "
        "(privacy), so we buy; we would rent instead if our demand came in bursts or we needed an "
        "80 GB-class model that no consumer card holds.",
        "我模擬的一天放到 RTX 4090 預設、8B 模型上跑，讓 GPU 每天忙約 5.4 小時，每月約 165 小時。"
        "在這個時數下，整台機器（一張 $600 的卡、一台 $800 電腦的一半，3 年後以 $250 賣掉，算進閒置和"
        "忙碌的電費）每月約 $37；一直開著的執行個體每月 $730，閒置就關機的約 $190，無伺服器約 $256。"
        "每月忙碌超過約 21 小時，自己買就比閒置就關機的執行個體便宜，所以就算時數只有八分之一，"
        "我們還是會買。我們每個工作天都在生成，"
        "文件也必須留在公司內（隱私），所以選擇買；如果需求是一陣一陣的爆發，或需要消費級顯示卡放不下"
        "的 80 GB 等級模型，我們就會改用租的。"),
    rubric=[
        Both("quotes the busy hours a month and where they came from (the simulated day, or a "
             "real week measured)", "引用每月忙碌的時數和它的來源（模擬的一天，或實測的一週）"),
        Both("sets the whole machine (card, the PC's share, power, resale), not the card alone, "
             "against the ways of renting, and says an instance always on bills every hour of "
             "the month", "拿整台機器（顯示卡、電腦那一份、電費、轉賣價）而不只是一張卡，和各種租法比較，"
             "並指出一直開著的執行個體整個月每一小時都計費"),
        Both("gives the cost of a month of each at those hours, or the crossover hours, and where "
             "the prices came from (quotes, the seed, or assumptions)",
             "給出在這個時數下每種方案每月的成本，或交叉點的時數，以及價格的出處（報價、種子文章或假設）"),
        Both("names at least one non-price factor from the seed (privacy, latency, rate limits, "
             "bursty demand, 80 GB-class models) and says how it weighs",
             "至少舉出一個種子文章裡價格以外的因素（隱私、延遲、速率限制、突發的需求、80 GB 等級的"
             "模型），並說明它有多重要"),
        Both("decides, and says which measurement would change the decision",
             "做出決定，並說明哪個測量結果會改變這個決定"),
    ],
    min_words=30, needs_number=True)
