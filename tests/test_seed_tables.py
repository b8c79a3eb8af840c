"""Seed 001's "why batching pays" table next to the simulator's and the roofline's figures."""

import math

import pytest

from labkit.costs import roofline
from labkit.lessons import seed_tables
from labkit.sim import StepCost


def test_seed_rows_are_the_seeds_figures_and_recomputed_rows_follow_the_models():
    m = roofline.Machine(100e9, 1e12, "given", "given")
    c = roofline.ModelCost("toy", weight_bytes=int(1e9), file_tensor_bytes=int(1e9),
                           matrix_params=int(1e9), output_params=int(1e8),
                           kv_bytes_per_cell=1e5, attention_flops_per_cell=1000)
    sc = StepCost(0.01, 1e-4, 1e-4, 1e-8, name="toy step")
    df = seed_tables.why_batching_pays(m, c, step_cost=sc, batch=32, context=512)
    seed = df.loc["seed 001: 7B on a GPU"]
    assert list(seed["decode tok/s"]) == [30, 600]
    assert seed.loc[32, "cost per token"] == pytest.approx(0.05)
    sim = df.loc["simulator: toy step"]
    assert sim.loc[32, "decode tok/s"] == pytest.approx(sc.decode_tok_s(32, 512))
    assert math.isnan(sim.loc[1, "arithmetic busy"])
    roof = df.loc["roofline: toy on this machine"]
    assert roof.loc[1, "decode tok/s"] == pytest.approx(
        roofline.decode_tok_s(m, c, 1, 512))
    # one side of the roofline is always fully busy; cost per token falls with the batch
    assert (roof[["arithmetic busy", "bandwidth busy"]].max(axis=1) == 1).all()
    assert roof.loc[32, "cost per token"] < 1


# ---------------------------------------------------------------- when to batch; twelve samples

def test_when_to_batch_follows_the_step_cost():
    from labkit.sim import StepCost
    sc = StepCost(a=0.02, b=0.0002, c=0.001, d=0.0, name="t")
    df = seed_tables.when_to_batch(sc, context=512, prompt=1000,
                                   scenarios={"offline batch work": 4, "single interaction": 1})
    # 4 streams: a step of 0.02 + 4 x 0.001 s gives 4 tokens; one stream: 0.021 s for one
    assert df["total tok/s vs 1"].iloc[0] == pytest.approx((4 / 0.024) / (1 / 0.021))
    assert df["tok/s per stream"].iloc[0] == pytest.approx(1 / 0.024)
    # a 1,000-token prompt adds b x 1000 = 0.2 s to the three other streams' step
    assert df["others' pause when a prompt joins (ms)"].iloc[0] == pytest.approx(200)
    assert df["the pause, in each stream's tokens"].iloc[0] == pytest.approx(0.2 / 0.024)
    assert df["total tok/s vs 1"].iloc[1] == 1 and df["others' pause when a prompt joins (ms)"].iloc[1] == 0
    assert list(df["seed says"]) == ["very suitable", "not suitable"]


def test_when_to_batch_speaks_chinese_in_the_chinese_edition(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    df = seed_tables.when_to_batch()
    assert list(df.index) == ["離線批次處理", "大量相似請求", "即時對話", "單一互動"]
    assert df["seed says"].iloc[2] == "需謹慎"


def test_twelve_samples_are_not_a_p95():
    df = seed_tables.tail_from_samples((12, 59), trials=2000)
    assert df.loc[12, "samples above the true P95 (mean)"] == pytest.approx(0.6)
    assert df.loc[12, "chance none is above it"] == pytest.approx(0.95 ** 12)
    assert df.loc[12, "chance none is above it"] > 0.5 > df.loc[59, "chance none is above it"]
    spread = lambda n: df.loc[n, "sample P95 / true, 90th pct"] - df.loc[n, "sample P95 / true, 10th pct"]
    assert spread(12) > spread(59) > 0
    assert seed_tables.samples_for_a_tail(0.95, 0.95) == 59
    assert seed_tables.samples_for_a_tail(0.99, 0.95) == 299
    assert seed_tables.samples_for_a_tail(0.5, 0.75) == 2

