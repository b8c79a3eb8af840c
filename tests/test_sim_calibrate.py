"""labkit.sim.calibrate: step periods, closed-loop replay of fixed requests, client overhead."""

import math

import numpy as np
import pandas as pd
import pytest

from labkit.sim import StepCost, fit
from labkit.sim.calibrate import (ReplayClosedLoop, client_overhead, host_share, replay,
                                  step_periods, turnaround)

ONE = StepCost(a=1.0, b=0.0, c=0.0, d=0.0)


def _trace(rows):
    cols = ["step", "t_start", "t_end", "n_prefill_tokens", "n_decode", "attended"]
    df = pd.DataFrame(rows, columns=cols)
    df["dur_s"] = df["t_end"] - df["t_start"]
    return df


def test_step_periods_keep_only_gaps_before_decode_only_steps():
    tr = _trace([
        (0, 0.0, 0.5, 10, 0, 10),    # prefill; next is decode-only -> period 0.6
        (1, 0.6, 0.8, 0, 1, 11),     # decode; next is decode-only -> period 0.3
        (2, 0.9, 1.1, 0, 1, 12),     # decode; next has a prompt (maybe idle before) -> NaN
        (3, 5.0, 5.4, 10, 1, 23),    # prefill + decode; next decode-only -> period 0.5
        (4, 5.5, 5.6, 0, 2, 25),     # last step -> NaN
    ])
    p = step_periods(tr)
    assert p["dur_s"].tolist()[:2] == pytest.approx([0.6, 0.3])
    assert math.isnan(p["dur_s"][2]) and math.isnan(p["dur_s"][4])
    assert p["dur_s"][3] == pytest.approx(0.5)
    assert p["decode_s"].tolist() == pytest.approx(tr["dur_s"].tolist())
    h = host_share(tr)
    assert h["steps"] == 3
    assert h["host_s"] == pytest.approx(0.1 + 0.1 + 0.1)


def test_step_periods_recover_a_cost_with_host_time():
    # decode time 1 ms + 0.1 ms/seq; host time 0.5 ms + 0.2 ms/seq after each step
    rows, t, step = [], 0.0, 0
    for n in (1, 2, 3, 4) * 5:
        dur = 1e-3 + 1e-4 * n
        rows.append((step, t, t + dur, 0, n, 0))
        t += dur + 5e-4 + 2e-4 * n
        step += 1
    f = fit(step_periods(_trace(rows)))
    assert f.cost.a == pytest.approx(1.5e-3, rel=1e-6)
    assert f.cost.c == pytest.approx(3e-4, rel=1e-6)


def test_replay_closed_loop_one_client_is_serial():
    # 1 s per step; 3 requests of 1 output token each: one prefill step each, back to back
    rep = replay([(5, 1), (5, 1), (5, 1)], slots=1, cost=ONE)
    assert rep.wall_s == pytest.approx(3.0)
    assert rep.throughput_tok_s == pytest.approx(1.0)
    assert rep.ttft_p50_s == pytest.approx(1.0)
    assert rep.requests.sort_values("id")["arrival"].tolist() == pytest.approx([0, 1, 2])


def test_replay_rtt_delays_arrivals_and_adds_to_ttft():
    rep = replay([(5, 1), (5, 1)], slots=1, cost=ONE, rtt_s=0.25)
    r = rep.requests.sort_values("id")
    assert r["arrival"].tolist() == pytest.approx([0.25, 1.5])
    assert r["client_ttft"].tolist() == pytest.approx([1.25, 1.25])
    assert rep.wall_s == pytest.approx(2.5)


def test_replay_clients_take_requests_in_order():
    # two clients, two slots: request 2 goes to whoever finishes first (request 1, shorter)
    rep = replay([(5, 4), (5, 1), (5, 1)], slots=2, cost=ONE)
    r = rep.requests.set_index("id")
    assert r.loc[2, "arrival"] == pytest.approx(r.loc[1, "finish"])
    assert len(rep.requests) == 3


def test_replay_accepts_bench_rows():
    rows = pd.DataFrame({"index": [1, 0], "prompt_tokens": [5, 5],
                         "completion_tokens": [1, 2], "ttft_s": [1.4, 1.4]})
    rep = replay(rows, slots=1, cost=ONE)
    assert rep.requests.sort_values("id")["output_tokens"].tolist() == [2, 1]
    assert client_overhead(rows, ONE) == pytest.approx(0.4)


def test_replay_serial_ingress_staggers_requests_sent_together():
    # two clients send at t=0; the front admits one every 0.25 s: the second misses step 1
    rep = replay([(5, 1), (5, 1)], slots=2, cost=ONE, rtt_s=0.25, serial_ingress=True)
    r = rep.requests.sort_values("id")
    assert r["arrival"].tolist() == pytest.approx([0.25, 0.5])
    assert r["sent"].tolist() == pytest.approx([0.0, 0.0])
    assert r["client_ttft"].tolist() == pytest.approx([1.25, 2.25])
    par = replay([(5, 1), (5, 1)], slots=2, cost=ONE, rtt_s=0.25)
    assert par.requests["client_ttft"].tolist() == pytest.approx([1.25, 1.25])


def test_turnaround_is_the_idle_gap_less_the_host_gap():
    tr = _trace([
        (0, 0.0, 0.5, 10, 0, 10),     # request 1's prompt
        (1, 0.6, 0.8, 0, 1, 11),      # host gap 0.1
        (2, 0.9, 1.1, 0, 1, 12),      # host gap 0.1; request 1 ends
        (3, 1.5, 2.0, 10, 0, 10),     # idle 0.4 before request 2's prompt
        (4, 2.1, 2.3, 0, 1, 11),
        (5, 2.4, 2.5, 0, 1, 12),
        (6, 3.1, 3.5, 10, 0, 10),     # idle 0.6
    ])
    assert turnaround(tr) == pytest.approx(0.5 - 0.1)
    with pytest.raises(ValueError):
        turnaround(tr.iloc[:3])


def test_replay_closed_loop_validates():
    with pytest.raises(ValueError):
        ReplayClosedLoop([(1, 1)], clients=0)
    with pytest.raises(ValueError):
        ReplayClosedLoop([(1, 1)], clients=1, rtt_s=-1)
    assert np.isfinite(replay([(1, 1)], slots=4, cost=ONE).wall_s)


def test_replay_open_sends_at_the_clients_times():
    from labkit.sim.calibrate import replay_open
    # 1 s per step; sent at 0 and 0.5: the second waits for the first's step to end
    rep = replay_open([(0.0, 5, 1), (0.5, 5, 1)], slots=1, cost=ONE)
    r = rep.requests.sort_values("id")
    assert r["client_ttft"].tolist() == pytest.approx([1.0, 1.5])
    assert rep.wall_s == pytest.approx(2.0)
    assert rep.ttft_mean_s == pytest.approx(1.25)
    rows = pd.DataFrame({"send_s": [0.5, 0.0], "prompt_tokens": [5, 5],
                         "completion_tokens": [1, 1]})
    assert replay_open(rows, slots=1, cost=ONE).wall_s == pytest.approx(2.0)
    # serial ingress: sent together, they reach the engine rtt apart
    ser = replay_open([(0.0, 5, 1), (0.0, 5, 1)], slots=2, cost=ONE, rtt_s=0.25,
                      serial_ingress=True)
    assert ser.requests.sort_values("id")["arrival"].tolist() == pytest.approx([0.25, 0.5])


def test_calibration_plan_spreads_prompts_and_answers():
    from labkit.bench import calibration
    full, quick = calibration.plan(), calibration.plan(quick=True)
    prompts = sorted(p for p, _ in full.requests)
    assert prompts[0] == 64 and prompts[-1] == 2048
    ratios = np.diff(np.log(prompts))
    assert ratios == pytest.approx([ratios[0]] * len(ratios), rel=0.05)   # log-spaced
    assert len({o for _, o in full.requests}) == len(full.requests)
    assert full.in_flight == (1, 2, 4) and quick.in_flight == (1, 2)
    assert max(p for p, _ in quick.requests) == 1024
    assert calibration.plan() == calibration.plan()                        # seeded


@pytest.mark.slow
def test_calibration_quick_mode_on_the_engine():
    from labkit.bench import calibration
    cal = calibration.run(quick=True, bootstrap=50)
    assert len(cal.rows) == 2 * len(cal.plan.requests)
    assert cal.rows["error"].isna().all()
    assert sorted(cal.rows["completion_tokens"].astype(int)) == sorted(
        2 * [o for _, o in cal.plan.requests])
    assert set(cal.steps["in_flight"]) == {1, 2}
    assert (cal.steps["prefill_attn"] > 0).sum() >= len(cal.plan.requests)
    # Timing on a shared machine varies with its load: check the fit's shape, not its quality.
    assert np.isfinite(cal.fit.r2) and cal.fit.n_steps > 0.9 * len(cal.steps) - 10
    table = cal.table()
    assert list(table.index) == list("abcde")
    assert table["se"].notna().all() and (table["value"] >= 0).all()
    assert cal.cost.b > 0                      # a prompt token always costs time
    assert 0 <= cal.rtt_s < 1.0
    assert len(cal.load1) == 2 and len(cal.foreign) == 2


def test_the_calibration_table_reads_in_chinese(monkeypatch):
    """The coefficient table names its units and what each term multiplies in the notebook's
    language; the numbers do not change."""
    import pandas as pd

    from labkit import sim
    from labkit.bench import calibration
    res = sim.simulate(sim.burst(6, prompt=300, output=20), slots=2)
    f = sim.fit(res.steps, bootstrap=5)
    cal = calibration.Calibration(calibration.plan(quick=True), pd.DataFrame(), res.steps,
                                  pd.DataFrame(), f, 0.01)
    english = cal.table()
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    chinese = cal.table()
    assert chinese["value"].tolist() == english["value"].tolist()
    assert chinese.loc["a", "unit"] == "ms/步" and chinese.loc["b", "multiplies"] == "提示 token 數"
    assert english.loc["a", "unit"] == "ms/step"
