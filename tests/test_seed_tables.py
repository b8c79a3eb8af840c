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
