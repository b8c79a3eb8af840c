"""Rent or buy (notebook 08): a whole machine of your own against three ways of renting one,
as the cost of a month over the hours of use in it.

- **own** (:class:`Owning`): the card and the PC's share of it, bought once and sold after
  ``years`` (their price less the resale, spread over the months), and electricity: the machine
  draws ``idle_w`` for the hours it is on but idle and ``card_load_w + host_load_w`` for the
  busy ones, at ``kwh_price``;
- **always on** (:class:`Renting`): an instance billed every hour of the month, 730 h, busy
  or not;
- **stopped when idle**: an instance started for the work and stopped after it, billed the busy
  hours plus ``overhead_h_per_start`` for each start (boot, loading the weights, the idle wait
  before it is stopped), one start for every ``busy_h_per_start`` busy hours, plus the disk that
  keeps the model while it is stopped;
- **serverless**: a worker that scales to zero, billed per second of work at its own rate plus
  ``cold_start_s`` for each of its ``cold_starts_per_busy_hour``; the first request after a cold
  start waits that long too.

Each cost is a straight line in the busy hours a month, ``fixed + per_hour x hours``
(:class:`Line`); the crossover of two lines is where owning starts (or stops) costing less
(:func:`crossovers`). Every input is a field of a dataclass whose metadata names its unit and
where it came from: the seed's figure where the seed gives one, a specification, or an
assumption said to be one (:func:`inputs_table`).

The seed (002, section 租 vs 買，速寫) gives its prices "as of now" (截至目前) and no date: 「租用的
24GB 級 GPU 約每小時 $0.50–2，二手 24GB 卡數百美元——損益兩平大約在 300–1,000 小時的實際生成」.
Its break-even is the card's price over the hourly rent: the card alone, no PC, no power, no
resale, against an instance billed only while it generates (:func:`seed_hours`,
:func:`seed_range`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..lang.i18n import chinese, heading, pick

SEED = "002_d3d53c3c703d85c8.txt"
SEED_WORDS = "租用的 24GB 級 GPU 約每小時 $0.50–2，二手 24GB 卡數百美元——損益兩平大約在 300–1,000 小時的實際生成"
SEED_RENTS = (0.50, 2.0)           # USD an hour, the seed's range
SEED_BREAK_EVEN = (300, 1000)      # hours of actual generation, the seed's range
HOURS_PER_MONTH = 365 * 24 / 12    # 730: a month of an instance that stays up

OPTIONS = ("own", "always on", "stopped when idle", "serverless")
# Each option's name, (English, Chinese): the Chinese is its table heading (labkit.lang.i18n).
OPTION_NAMES = {k: (en, heading(k)) for k, en in
                (("own", "own the machine"), ("always on", "rent, always on"),
                 ("stopped when idle", "rent, stopped when idle"), ("serverless", "serverless"))}
KINDS = {"seed": "種子文章", "spec": "規格", "assumption": "假設"}
UNITS_ZH = {"USD": "美元", "fraction": "比例", "years": "年", "W": "瓦", "USD/kWh": "美元/度",
            "h/month": "小時/月", "USD/h": "美元/小時", "h": "小時", "USD/month": "美元/月",
            "s": "秒", "per busy hour": "每忙碌小時"}


def _figure(default: float, unit: str, kind: str, source: str, source_zh: str):
    """A dataclass field holding one input: its default, unit, kind (seed, spec, assumption) and
    where it came from, in English and Chinese."""
    assert kind in KINDS, kind
    return field(default=default, metadata={"unit": unit, "kind": kind, "source": source,
                                            "source_zh": source_zh})


def name(option: str) -> str:
    """An option's name in the language in use."""
    return pick(*OPTION_NAMES[option])


class Refused(ValueError):
    """An input the arithmetic cannot take (a resale above the price, negative hours); the
    message names it and what it may be, in the learner's language."""


def _at_least(value: float, low: float, what: str):
    if not value >= low:                     # NaN refused too
        raise Refused(pick(f"{what} must be {low:g} or more, not {value:g}",
                           f"{what} 必須大於或等於 {low:g}，不能是 {value:g}"))


# ---------------------------------------------------------------------------- the inputs

@dataclass(frozen=True)
class Owning:
    """A machine of your own: the card, the PC's share, power, and what they sell for."""

    card_price: float = _figure(
        600.0, "USD", "seed",
        f"{SEED}: a used 24 GB card costs 'a few hundred dollars' (數百美元); 600 is one such price",
        f"{SEED}：二手 24 GB 卡「數百美元」；600 是其中一個價格")
    host_price: float = _figure(
        800.0, "USD", "assumption",
        "not in the seed: a used desktop PC that can take a 24 GB card (a PCIe x16 slot, an "
        "850 W power supply, 32 GB of memory)",
        "種子文章沒有：一台放得下 24 GB 顯示卡的二手桌上型電腦（PCIe x16 插槽、850 W 電源供應器、"
        "32 GB 記憶體）")
    host_share: float = _figure(
        0.5, "fraction", "assumption",
        "not in the seed: the share of the PC charged to serving, the rest to your other work on "
        "it; 1 if you buy the PC only for this",
        "種子文章沒有：這台電腦的成本算在服務上的比例，其餘算在你用它做的其他工作；只為服務而買就填 1")
    years: float = _figure(
        3.0, "years", "assumption",
        "not in the seed: how long you keep the machine before selling the card",
        "種子文章沒有：賣掉顯示卡之前，你會用這台機器幾年")
    resale: float = _figure(
        250.0, "USD", "assumption",
        "not in the seed: what the card and the PC's share sell for after `years` (here the card "
        "at about 40 % of its price, the PC's share for nothing)",
        "種子文章沒有：`years` 年後顯示卡和電腦那一份能賣多少錢（這裡是顯示卡約賣原價的 40 %，"
        "電腦那一份不值錢）")
    card_load_w: float = _figure(
        350.0, "W", "spec",
        "not in the seed: the board power NVIDIA specifies for a GeForce RTX 3090, a 24 GB card "
        "(the most it draws while generating)",
        "種子文章沒有：NVIDIA 為 24 GB 的 GeForce RTX 3090 標示的顯示卡功耗（它生成時最多耗用的電力）")
    host_load_w: float = _figure(
        100.0, "W", "assumption",
        "not in the seed: the PC around the card while it generates (processor, memory, disk, "
        "fans, the power supply's losses)",
        "種子文章沒有：顯示卡在生成時，周圍這台電腦的耗電（處理器、記憶體、硬碟、風扇、電源供應器的損耗）")
    idle_w: float = _figure(
        60.0, "W", "assumption",
        "not in the seed: the whole machine switched on, a model loaded, nothing to do (a card "
        "of this class idles near 20-30 W, a desktop near 30-40 W)",
        "種子文章沒有：整台機器開著、載入了模型、沒有工作時的耗電（這一級的顯示卡閒置約 20-30 W，"
        "桌上型電腦約 30-40 W）")
    on_hours: float = _figure(
        HOURS_PER_MONTH, "h/month", "assumption",
        "not in the seed: the hours a month the machine is on, busy or idle; 730 leaves it on "
        "like a server, ready at any hour",
        "種子文章沒有：機器每月開著的時數，不論忙或閒；730 表示像伺服器一樣一直開著，隨時可用")
    kwh_price: float = _figure(
        0.15, "USD/kWh", "assumption",
        "not in the seed: an example price of a kWh; put the one on your bill",
        "種子文章沒有：每度電（kWh）的範例價格；請換成你的電費單上的價格")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _at_least(getattr(self, f.name), 0.0, f.name)
        if not self.years > 0:
            raise Refused(pick(f"years must be more than 0, not {self.years:g}: the machine's "
                               "price is spread over the months you keep it",
                               f"years 必須大於 0，不能是 {self.years:g}：機器的價格要分攤到你用它的月份上"))
        if self.host_share > 1:
            raise Refused(pick(f"host_share is a fraction of the PC, 0 to 1, not {self.host_share:g}",
                               f"host_share 是電腦成本的比例，介於 0 和 1 之間，不能是 {self.host_share:g}"))
        if self.resale > self.paid:
            raise Refused(pick(
                f"a resale of {self.resale:g} USD is more than the {self.paid:g} USD paid for the "
                "card and the PC's share: a used machine sells for less than it cost",
                f"轉賣價 {self.resale:g} 美元比買顯示卡和電腦那一份付的 {self.paid:g} 美元還多："
                "用過的機器賣的錢不會比買價高"))
        if self.on_hours > HOURS_PER_MONTH:
            raise Refused(pick(f"on_hours is {self.on_hours:g}, but a month has "
                               f"{HOURS_PER_MONTH:g} hours",
                               f"on_hours 是 {self.on_hours:g}，但一個月只有 {HOURS_PER_MONTH:g} 小時"))

    @property
    def paid(self) -> float:
        """The card and the PC's share, in USD."""
        return self.card_price + self.host_share * self.host_price

    @property
    def months(self) -> float:
        return 12 * self.years

    @property
    def load_w(self) -> float:
        """The whole machine while it generates."""
        return self.card_load_w + self.host_load_w


@dataclass(frozen=True)
class Renting:
    """Three ways to rent a 24 GB-class GPU: an instance always on, one stopped when idle, and
    serverless."""

    rent_per_hour: float = _figure(
        1.0, "USD/h", "seed",
        f"{SEED}: a rented 24 GB-class GPU costs about $0.50-2 an hour; 1.0 lies inside",
        f"{SEED}：租用 24 GB 級 GPU 約每小時 $0.50–2；1.0 落在這個範圍內")
    overhead_h_per_start: float = _figure(
        0.25, "h", "assumption",
        "not in the seed: the hours billed each time the instance is started beside the work "
        "(booting, loading the weights, the idle wait before it is stopped)",
        "種子文章沒有：每次啟動執行個體時，工作以外也要付的時數（開機、載入權重、閒置多久才關機）")
    busy_h_per_start: float = _figure(
        2.0, "h", "assumption",
        "not in the seed: the busy hours one start serves (a morning's or an afternoon's work)",
        "種子文章沒有：啟動一次能做完的忙碌時數（一個上午或一個下午的工作）")
    disk_per_month: float = _figure(
        5.0, "USD/month", "assumption",
        "not in the seed: the disk that keeps the model while the instance is stopped "
        "(about 50 GB at about 0.10 USD per GB a month)",
        "種子文章沒有：執行個體關機時保存模型的磁碟（約 50 GB，每 GB 每月約 0.10 美元）")
    serverless_per_hour: float = _figure(
        1.5, "USD/h", "assumption",
        "not in the seed: serverless bills per second of work, usually dearer by the hour than "
        "an instance of the same GPU; here 1.5 times the seed's middle rent. Sold per token "
        "instead, it is the price of the tokens one busy hour generates",
        "種子文章沒有：無伺服器按工作的秒數計費，換算成每小時通常比同一張 GPU 的執行個體貴；這裡取"
        "種子文章中間租金的 1.5 倍。若是按 token 計價，就是一個忙碌小時生成的 token 的價格")
    cold_start_s: float = _figure(
        30.0, "s", "assumption",
        "not in the seed: one cold start, a worker starting from zero (the container, then the "
        "weights); billed, and the first request waits for it",
        "種子文章沒有：一次冷啟動，也就是工作節點從零開始（先是容器，再載入權重）；要計費，"
        "第一個請求也要等它")
    cold_starts_per_busy_hour: float = _figure(
        4.0, "per busy hour", "assumption",
        "not in the seed: a worker scales to zero after a short idle wait, so every pause of a "
        "few minutes in the work costs another cold start",
        "種子文章沒有：工作節點閒置一小段時間就縮到零，所以工作中每停頓幾分鐘，就多一次冷啟動")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _at_least(getattr(self, f.name), 0.0, f.name)
        if not self.busy_h_per_start > 0:
            raise Refused(pick("busy_h_per_start must be more than 0: each start serves some work",
                               "busy_h_per_start 必須大於 0：每次啟動總要做一些工作"))


def inputs_table(own: Owning | None = None, rent: Renting | None = None):
    """Every input, its value, unit, kind (seed, spec or assumption) and source, in the
    language in use (the inputs keep their names, the dataclasses' fields)."""
    import pandas as pd
    rows = []
    for obj in (own or Owning(), rent or Renting()):
        for f in dataclasses.fields(obj):
            m = f.metadata
            if chinese():
                rows.append((f.name, getattr(obj, f.name), UNITS_ZH.get(m["unit"], m["unit"]),
                             KINDS[m["kind"]], m["source_zh"]))
            else:
                rows.append((f.name, getattr(obj, f.name), m["unit"], m["kind"], m["source"]))
    columns = (["輸入", "值", "單位", "類別", "來源"] if chinese()
               else ["input", "value", "unit", "kind", "source"])
    return pd.DataFrame(rows, columns=columns)


# ---------------------------------------------------------------------------- the lines

@dataclass(frozen=True)
class Line:
    """The cost of a month, ``fixed + per_hour x busy hours``, in USD."""

    fixed: float
    per_hour: float

    def at(self, hours):
        return self.fixed + self.per_hour * hours


def owning(own: Owning) -> Line:
    """Owning: the price less the resale over the months kept, and idle power for every hour the
    machine is on (``on_hours``); a busy hour adds what load draws beyond idle."""
    capital = (own.paid - own.resale) / own.months
    idle = own.idle_w / 1000 * own.on_hours * own.kwh_price
    return Line(capital + idle, (own.load_w - own.idle_w) / 1000 * own.kwh_price)


def always_on(rent: Renting) -> Line:
    """An instance up all month: 730 hours billed whatever the busy hours."""
    return Line(rent.rent_per_hour * HOURS_PER_MONTH, 0.0)


def stopped_when_idle(rent: Renting) -> Line:
    """An instance started for the work: each busy hour billed, plus a start's overhead for
    every ``busy_h_per_start`` of them; the disk bills all month."""
    return Line(rent.disk_per_month,
                rent.rent_per_hour * (1 + rent.overhead_h_per_start / rent.busy_h_per_start))


def serverless(rent: Renting) -> Line:
    """Per second of work, plus each cold start's seconds."""
    return Line(0.0, rent.serverless_per_hour
                * (1 + rent.cold_starts_per_busy_hour * rent.cold_start_s / 3600))


def lines(own: Owning | None = None, rent: Renting | None = None) -> dict[str, Line]:
    """The four options' lines, in :data:`OPTIONS` order."""
    own, rent = own or Owning(), rent or Renting()
    return {"own": owning(own), "always on": always_on(rent),
            "stopped when idle": stopped_when_idle(rent), "serverless": serverless(rent)}


def check_hours(hours, own: Owning | None = None):
    """``hours`` (one number or several) as a float array, refused outside 0 to the hours the
    machine is on (``own.on_hours``: it cannot be busy longer)."""
    import numpy as np
    top = (own or Owning()).on_hours
    h = np.atleast_1d(np.asarray(hours, dtype=float))
    bad = h[~((h >= 0) & (h <= top))]
    if bad.size:
        raise Refused(pick(f"busy hours a month must be between 0 and {top:g} (the hours the "
                           f"machine is on), not {bad[0]:g}",
                           f"每月忙碌時數必須介於 0 和 {top:g}（機器開著的時數）之間，不能是 {bad[0]:g}"))
    return h


def monthly_costs(own: Owning | None = None, rent: Renting | None = None, hours=None):
    """The cost of a month of each option (columns: :data:`OPTIONS`) at each number of busy
    hours a month (index ``busy hours a month``; default 0, then 1 to ``on_hours`` spaced
    evenly on a log scale)."""
    import numpy as np
    import pandas as pd
    own, rent = own or Owning(), rent or Renting()
    if hours is None:
        hours = np.unique(np.r_[0.0, np.geomspace(1.0, own.on_hours, 80)]) if own.on_hours >= 1 \
            else np.array([0.0, own.on_hours])
    h = check_hours(hours, own)
    return pd.DataFrame({k: line.at(h) for k, line in lines(own, rent).items()},
                        index=pd.Index(h, name="busy hours a month"))


# ---------------------------------------------------------------------------- the crossovers

@dataclass(frozen=True)
class Crossover:
    """Where owning meets one rental option inside 0 to ``top`` busy hours a month.

    ``owning_cheaper`` is "above" (owning costs less above ``hours``), "below" (less below
    ``hours``), "always" (at every hour: ``hours`` is 0) or "never" (at none: ``hours`` is
    None)."""

    option: str
    hours: float | None
    owning_cheaper: str
    top: float

    def lifetime_hours(self, own: Owning) -> float | None:
        """The crossover as busy hours over the years the machine is kept: the unit of the
        seed's 300-1,000 hours."""
        return None if self.hours is None else self.hours * own.months


def crossover(own_line: Line, other: Line, option: str, top: float = HOURS_PER_MONTH) -> Crossover:
    """Where ``own_line`` and ``other`` meet in 0..``top`` and on which side owning costs less
    (a tie counts as not cheaper)."""
    d0, d1 = own_line.at(0.0) - other.at(0.0), own_line.at(top) - other.at(top)
    if d0 < 0 and d1 < 0:
        return Crossover(option, 0.0, "always", top)
    if d0 >= 0 and d1 >= 0:
        return Crossover(option, None, "never", top)
    hours = (own_line.fixed - other.fixed) / (other.per_hour - own_line.per_hour)
    return Crossover(option, hours, "above" if d0 >= 0 else "below", top)


def crossovers(own: Owning | None = None, rent: Renting | None = None) -> dict[str, Crossover]:
    """For each rental option, the busy hours a month at which owning starts (or stops) costing
    less, within the hours the machine is on."""
    own = own or Owning()
    ls = lines(own, rent)
    return {k: crossover(ls["own"], line, k, own.on_hours) for k, line in ls.items() if k != "own"}


def crossover_words(c: Crossover, own: Owning | None = None) -> tuple[str, str]:
    """One line on a crossover, (English, Chinese), for ``nb.say``."""
    own = own or Owning()
    en, zh = OPTION_NAMES[c.option]
    if c.owning_cheaper == "always":
        return (f"vs {en}: owning costs less at any hours of use, 0 to {c.top:.0f} a month",
                f"對比「{zh}」：每月用 0 到 {c.top:.0f} 小時，自己買都比較便宜")
    if c.owning_cheaper == "never":
        return (f"vs {en}: owning never costs less, up to {c.top:.0f} busy hours a month",
                f"對比「{zh}」：每月忙碌到 {c.top:.0f} 小時，自己買都不會比較便宜")
    life = c.lifetime_hours(own)
    if c.owning_cheaper == "above":
        return (f"vs {en}: owning costs less above {c.hours:.1f} busy hours a month "
                f"({life:,.0f} hours over {own.years:g} years)",
                f"對比「{zh}」：每月忙碌超過 {c.hours:.1f} 小時，自己買就比較便宜"
                f"（{own.years:g} 年共 {life:,.0f} 小時）")
    return (f"vs {en}: owning costs less below {c.hours:.1f} busy hours a month, more above",
            f"對比「{zh}」：每月忙碌少於 {c.hours:.1f} 小時時自己買比較便宜，超過就比較貴")


def summary(own: Owning | None = None, rent: Renting | None = None, busy_hours: float = 0.0):
    """One row per option (index ``option``): its fixed cost a month, its cost per busy hour,
    its cost a month at ``busy_hours``, and for the rentals the crossover with owning."""
    import pandas as pd
    own = own or Owning()
    h = float(check_hours(busy_hours, own)[0])
    cross = crossovers(own, rent)
    rows = []
    for k, line in lines(own, rent).items():
        c = cross.get(k)
        rows.append({"option": k, "fixed USD/month": line.fixed, "USD per busy hour": line.per_hour,
                     "USD/month at your hours": line.at(h),
                     "crossover h/month": None if c is None else c.hours,
                     "owning cheaper": "" if c is None else c.owning_cheaper})
    return pd.DataFrame(rows).set_index("option")


# ---------------------------------------------------------------------------- the seed's figure

def seed_hours(card_price: float, rent_per_hour: float) -> float:
    """The seed's break-even, in hours of generation: the card's price over the hourly rent.

    It is this module's crossover against an instance stopped when idle, times the months the
    machine is kept, with everything the seed leaves out set to zero: no PC, no power, no
    resale, no start overhead, no disk (:func:`seed_case`)."""
    _at_least(card_price, 0.0, "card_price")
    if not rent_per_hour > 0:
        raise Refused(pick(f"rent_per_hour must be more than 0, not {rent_per_hour:g}",
                           f"rent_per_hour 必須大於 0，不能是 {rent_per_hour:g}"))
    return card_price / rent_per_hour


def seed_case(card_price: float = 600.0, rent_per_hour: float = 1.0, years: float = 3.0):
    """The seed's inputs as this module's: (Owning, Renting) with the card alone and an instance
    billed only while it generates."""
    own = Owning(card_price=card_price, host_price=0.0, host_share=0.0, years=years, resale=0.0,
                 card_load_w=0.0, host_load_w=0.0, idle_w=0.0)
    rent = Renting(rent_per_hour=rent_per_hour, overhead_h_per_start=0.0, disk_per_month=0.0)
    return own, rent


# The pairs that give the seed's ends: 300 h is a $600 card at the top rent of $2 an hour, 1,000 h
# a $500 card at the bottom rent of $0.50 (or a $600 card at $0.60); a $600 card at $1 is 600 h.
SEED_PAIRS = ((600.0, 2.0), (600.0, 1.0), (600.0, 0.60), (500.0, 0.50), (600.0, 0.50))


def seed_range(pairs=SEED_PAIRS):
    """The seed's arithmetic for each (card price, hourly rent) of ``pairs``: the hours of
    generation to break even, and whether they fall in its 300-1,000."""
    import pandas as pd
    lo, hi = SEED_BREAK_EVEN
    rows = [{"card USD": p, "rent USD/h": r, "hours to break even": seed_hours(p, r),
             "in the seed's 300-1,000": lo <= seed_hours(p, r) <= hi} for p, r in pairs]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- the picture

def plot_costs(costs, busy_hours: float | None = None, ax=None):
    """The cost of a month of each option (:func:`monthly_costs`) against the busy hours a
    month, one line per option, both axes on a log scale, and ``busy_hours`` marked with a
    dotted vertical line. Returns the figure."""
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from ..lang.fonts import label
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4))
    shown = costs[costs.index > 0]
    for k, style in zip(OPTIONS, ["-", "--", "-.", ":"]):
        ax.plot(shown.index, shown[k], style, lw=2 if k == "own" else 1.5,
                label=label(*OPTION_NAMES[k]), gid=k)
    if busy_hours is not None and busy_hours > 0:
        ax.axvline(busy_hours, color="k", lw=0.8, ls=(0, (1, 2)),
                   label=label(f"your hours: {busy_hours:.0f} h a month",
                               f"你的時數：每月 {busy_hours:.0f} 小時"))
    ax.set_xscale("log"); ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    ax.xaxis.set_major_formatter(plain); ax.yaxis.set_major_formatter(plain)
    ax.set_xlabel(label("busy hours a month", "每月忙碌時數"))
    ax.set_ylabel(label("cost of a month, USD", "每月成本（美元）"))
    ax.grid(alpha=0.3, which="both"); ax.legend(fontsize=8)
    return ax.figure


# ---------------------------------------------------------------------------- beside the money

# What the seed weighs beside the money (租 vs 買，速寫), as it lists them.
SEED_FACTORS = [
    ("privacy", "buy (run it yourself)", "本機贏在隱私"),
    ("latency", "buy (run it yourself)", "本機贏在…延遲"),
    ("no rate limits", "buy (run it yourself)", "本機贏在…無速率限制"),
    ("bursty demand", "rent", "租用贏在爆發性需求"),
    ("80 GB-class models (no consumer card holds them)", "rent",
     "租用贏在…沒有消費卡裝得下的 80GB 級模型"),
    ("your real hours (most people overestimate them)", "measure first",
     "多數人高估自己的時數——決定前先量測真實的一週"),
]

# The same factors in Chinese (the table shown under LABKIT_LANG=zh-TW).
SEED_FACTORS_ZH = {
    "privacy": "隱私", "latency": "延遲", "no rate limits": "沒有速率限制",
    "bursty demand": "爆發性需求",
    "80 GB-class models (no consumer card holds them)": "80 GB 級模型（沒有消費級顯示卡裝得下）",
    "your real hours (most people overestimate them)": "你真實的使用時數（多數人會高估）",
    "buy (run it yourself)": "買（自己架）", "rent": "租", "measure first": "先量測",
}


def seed_factors():
    """The seed's non-price factors as a table: factor, which side it favours, the seed's words
    (in Chinese under LABKIT_LANG=zh-TW: factor and side translated, headings too)."""
    import pandas as pd
    if chinese():
        return pd.DataFrame([(SEED_FACTORS_ZH.get(f, f), SEED_FACTORS_ZH.get(side, side), words)
                             for f, side, words in SEED_FACTORS],
                            columns=["因素", "有利於", f"{SEED} 原文"])
    return pd.DataFrame(SEED_FACTORS, columns=["factor", "favours", f"in {SEED}"])
