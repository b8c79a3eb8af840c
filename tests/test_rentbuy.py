"""Rent or buy (labkit.costs.rentbuy, notebook 08): the whole machine against an instance always
on, one stopped when idle and serverless, as the cost of a month over the busy hours in it."""

import dataclasses

import pytest

from labkit.costs import rentbuy
from labkit.costs.rentbuy import Owning, Refused, Renting


def test_a_month_of_owning_is_the_machine_less_its_resale_plus_power():
    own = Owning(card_price=600, host_price=800, host_share=0.5, years=3, resale=250,
                 card_load_w=350, host_load_w=100, idle_w=60, on_hours=730, kwh_price=0.15)
    line = rentbuy.owning(own)
    capital = (600 + 400 - 250) / 36                       # 20.83 a month
    idle = 0.060 * 730 * 0.15                              # 6.57: on all month, idle
    assert line.fixed == pytest.approx(capital + idle)
    assert line.per_hour == pytest.approx((0.450 - 0.060) * 0.15)    # a busy hour replaces an idle one
    # 100 busy hours: 630 idle hours at 60 W and 100 at 450 W
    assert line.at(100) == pytest.approx(capital + (0.060 * 630 + 0.450 * 100) * 0.15)


def test_each_way_of_renting():
    rent = Renting(rent_per_hour=1.0, overhead_h_per_start=0.25, busy_h_per_start=2.0,
                   disk_per_month=5.0, serverless_per_hour=1.5, cold_start_s=30,
                   cold_starts_per_busy_hour=4)
    assert rentbuy.HOURS_PER_MONTH == 730
    assert rentbuy.always_on(rent).at(0) == rentbuy.always_on(rent).at(500) == 730
    # 100 busy hours stopped when idle: 50 starts of 0.25 h each, and the disk
    assert rentbuy.stopped_when_idle(rent).at(100) == pytest.approx(100 + 50 * 0.25 + 5)
    # 100 busy hours serverless: 400 cold starts of 30 s billed beside them
    assert rentbuy.serverless(rent).at(100) == pytest.approx(1.5 * (100 + 400 * 30 / 3600))


def test_the_curve_starts_at_the_fixed_costs_and_has_one_column_per_option():
    costs = rentbuy.monthly_costs()
    assert list(costs.columns) == list(rentbuy.OPTIONS)
    assert costs.index[0] == 0 and costs.index[-1] == pytest.approx(730)
    fixed = {k: line.fixed for k, line in rentbuy.lines().items()}
    assert costs.loc[0].to_dict() == pytest.approx(fixed)
    at = rentbuy.monthly_costs(hours=[10, 200])
    assert at.loc[200, "serverless"] == pytest.approx(rentbuy.serverless(Renting()).at(200))


def test_the_crossovers_are_where_the_lines_meet():
    own, rent = Owning(), Renting()
    cross = rentbuy.crossovers(own, rent)
    assert set(cross) == {"always on", "stopped when idle", "serverless"}
    # with the defaults: owning 27.40 + 0.0585 h, stopped when idle 5 + 1.125 h
    stopped = cross["stopped when idle"]
    assert stopped.owning_cheaper == "above"
    assert stopped.hours == pytest.approx((27.4033 - 5) / (1.125 - 0.0585), rel=1e-4)   # 21.0
    at = rentbuy.monthly_costs(own, rent, [stopped.hours - 1, stopped.hours, stopped.hours + 1])
    diff = (at["own"] - at["stopped when idle"]).to_numpy()
    assert diff[0] > 0 and diff[1] == pytest.approx(0, abs=1e-9) and diff[2] < 0
    assert cross["always on"].owning_cheaper == "always" and cross["always on"].hours == 0
    assert stopped.lifetime_hours(own) == pytest.approx(stopped.hours * 36)


def test_the_crossover_moves_with_the_inputs():
    base = rentbuy.crossovers()["stopped when idle"].hours
    dearer = rentbuy.crossovers(Owning(card_price=1200))["stopped when idle"].hours
    cheaper_rent = rentbuy.crossovers(rent=Renting(rent_per_hour=0.5))["stopped when idle"].hours
    assert dearer > base and cheaper_rent > base
    # a rent so cheap that owning never catches up within the month
    never = rentbuy.crossovers(rent=Renting(rent_per_hour=0.01, disk_per_month=0,
                                            serverless_per_hour=0.01))
    assert never["stopped when idle"].owning_cheaper == "never"
    assert never["stopped when idle"].hours is None
    # an always-on instance cheaper than a busy machine: owning wins only below the crossover
    low = rentbuy.crossovers(rent=Renting(rent_per_hour=0.05))["always on"]
    assert low.owning_cheaper == "below" and 0 < low.hours < 730


def test_the_seeds_range_from_its_own_figures():
    # the seed: 損益兩平大約在 300–1,000 小時的實際生成, for a used card of a few hundred dollars
    # (數百美元) against 0.50-2 an hour
    assert "300–1,000 小時的實際生成" in rentbuy.SEED_WORDS
    assert rentbuy.seed_hours(600, 2.0) == 300
    assert rentbuy.seed_hours(500, 0.5) == 1000
    assert rentbuy.seed_hours(600, 0.6) == pytest.approx(1000)
    t = rentbuy.seed_range()
    assert t["in the seed's 300-1,000"].tolist() == [True, True, True, True, False]


@pytest.mark.parametrize("card, rent", [(600, 2.0), (600, 1.0), (500, 0.5)])
@pytest.mark.parametrize("years", [1, 3, 5])
def test_the_seeds_arithmetic_is_the_models_crossover_against_stopping_when_idle(card, rent, years):
    own, renting = rentbuy.seed_case(card, rent, years)
    c = rentbuy.crossovers(own, renting)["stopped when idle"]
    assert c.owning_cheaper == "above"
    assert c.lifetime_hours(own) == pytest.approx(card / rent)
    assert 300 <= round(c.lifetime_hours(own), 6) <= 1000


def test_the_whole_machine_moves_the_seeds_figure():
    # the defaults: the PC's share and idle power push the crossover up, the resale, the start
    # overhead and the disk pull it down; here it stays inside the seed's range
    whole = rentbuy.crossovers()["stopped when idle"].lifetime_hours(Owning())
    seed_own, seed_rent = rentbuy.seed_case(600, 1.0)
    seed = rentbuy.crossovers(seed_own, seed_rent)["stopped when idle"].lifetime_hours(seed_own)
    assert seed == pytest.approx(600) and whole == pytest.approx(756, abs=1)


def test_a_resale_above_the_price_is_refused():
    with pytest.raises(Refused, match="a resale of 1100 USD is more than the 1000 USD paid"):
        Owning(card_price=600, host_price=800, host_share=0.5, resale=1100)
    Owning(card_price=600, host_price=800, host_share=0.5, resale=1000)     # at most the price


@pytest.mark.parametrize("bad, message", [
    (dict(card_price=-1), "card_price must be 0 or more, not -1"),
    (dict(years=0), "years must be more than 0"),
    (dict(host_share=1.5), "host_share is a fraction of the PC"),
    (dict(on_hours=800), "a month has 730 hours"),
    (dict(kwh_price=float("nan")), "kwh_price must be 0 or more"),
])
def test_impossible_inputs_are_refused(bad, message):
    with pytest.raises(Refused, match=message):
        Owning(**bad)


def test_negative_hours_are_refused():
    with pytest.raises(Refused, match="busy hours a month must be between 0 and 730"):
        rentbuy.monthly_costs(hours=[-5])
    with pytest.raises(Refused, match="between 0 and 200"):
        rentbuy.summary(Owning(on_hours=200), busy_hours=300)
    with pytest.raises(Refused, match="busy_h_per_start must be more than 0"):
        Renting(busy_h_per_start=0)
    with pytest.raises(Refused, match="rent_per_hour must be more than 0"):
        rentbuy.seed_hours(600, 0)


def test_refusals_speak_chinese(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    with pytest.raises(Refused, match="轉賣價 900 美元比買顯示卡和電腦那一份付的 600 美元還多"):
        Owning(host_share=0, resale=900)
    with pytest.raises(Refused, match="每月忙碌時數必須介於 0 和 730"):
        rentbuy.check_hours(-1)


def test_every_input_is_named_and_sourced():
    t = rentbuy.inputs_table()
    fields = [f.name for cls in (Owning, Renting) for f in dataclasses.fields(cls)]
    assert t["input"].tolist() == fields
    assert set(t["kind"]) == {"seed", "spec", "assumption"}
    seeded = set(t.loc[t["kind"] == "seed", "input"])
    assert seeded == {"card_price", "rent_per_hour"}             # the seed's two prices
    assert all(s.startswith("not in the seed") for s in t.loc[t["kind"] != "seed", "source"])
    assert t["source"].str.len().min() > 40


def test_the_plot_draws_one_line_per_option_and_marks_your_hours():
    from matplotlib import pyplot as plt
    fig = rentbuy.plot_costs(rentbuy.monthly_costs(), busy_hours=120)
    try:
        ax = fig.axes[0]
        options = [line for line in ax.get_lines() if line.get_gid() in rentbuy.OPTIONS]
        assert [line.get_gid() for line in options] == list(rentbuy.OPTIONS)
        assert len(ax.get_lines()) == len(rentbuy.OPTIONS) + 1              # and your hours
        assert list(ax.get_lines()[-1].get_xdata()) == [120, 120]
        assert ax.get_xscale() == "log" and "busy hours a month" in ax.get_xlabel()
    finally:
        plt.close(fig)


def test_the_summary_and_the_words_for_each_crossover():
    s = rentbuy.summary(busy_hours=300)
    assert list(s.index) == list(rentbuy.OPTIONS)
    assert s.loc["own", "USD/month at your hours"] == pytest.approx(27.4033 + 0.0585 * 300, rel=1e-4)
    assert s.loc["always on", "USD/month at your hours"] == 730
    words = [rentbuy.crossover_words(c) for c in rentbuy.crossovers().values()]
    assert words[0] == ("vs rent, always on: owning costs less at any hours of use, 0 to 730 a month",
                        "對比「租用，一直開著」：每月用 0 到 730 小時，自己買都比較便宜")
    assert words[1][0] == ("vs rent, stopped when idle: owning costs less above 21.0 busy hours "
                           "a month (756 hours over 3 years)")
    assert "每月忙碌超過 21.0 小時，自己買就比較便宜（3 年共 756 小時）" in words[1][1]


def test_the_panel_redraws_from_the_same_arithmetic():
    from labkit.lessons import widgets
    p = widgets.rent_buy_panel(busy_hours=100)
    assert p.result.loc["stopped when idle", "USD/month at your hours"] == pytest.approx(
        100 * 1.125 + 5)
    p.update(rent_per_hour=2.0, busy_hours=50)
    assert p.result.loc["always on", "USD/month at your hours"] == 1460
    assert p.result.loc["stopped when idle", "crossover h/month"] == pytest.approx(
        (rentbuy.owning(Owning()).fixed - 5) / (2.25 - 0.0585))
    ax = p.figure.axes[0]
    assert sum(line.get_gid() in rentbuy.OPTIONS for line in ax.get_lines()) == 4
    # the title's money is written USD: two dollar signs would make the text between them math
    assert "$" not in ax.get_title() and "rent, always on 1,460 USD" in ax.get_title()
