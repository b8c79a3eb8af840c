"""Reserved-but-unused KV cells, scheme by scheme, at equal memory (labkit.sim.waste)."""

import pytest

from labkit import sim
from labkit.sim import waste


def test_split_reserves_whole_stripes_and_paged_only_block_tails():
    reqs = sim.burst(2, prompt=100, output=10)            # 2 sequences of at most 109 cells
    split = sim.simulate(reqs, slots=2, kv=sim.SplitKV(512), prefix_cache=False)
    r = waste.reservation(split)
    assert (r["reserved"] == r["n_busy"] * 512).all()
    assert r["tokens"].iloc[0] == 200 and r["reserved"].iloc[0] == 1024
    paged = sim.simulate(reqs, slots=2, kv=sim.PagedKV(64, 16), prefix_cache=False)
    p = waste.reservation(paged)
    assert p["reserved"].iloc[0] == 2 * 112            # 100 tokens take 7 blocks of 16
    assert ((p["reserved"] - p["tokens"]) < 2 * 16).all()
    unified = sim.simulate(reqs, slots=2, kv=sim.UnifiedKV(1024), prefix_cache=False)
    u = waste.reservation(unified)
    assert (u["reserved"] == u["tokens"]).all()


def test_split_without_a_cap_is_refused():
    run = sim.simulate(sim.burst(1), slots=1, prefix_cache=False)
    with pytest.raises(ValueError, match="slot cap"):
        waste.reservation(run)


def test_equal_memory_paged_wastes_a_few_percent_split_most():
    table, runs = waste.equal_memory(waste.default_workload(120))
    split, narrow, unified, paged = table.index
    assert table.loc[split, "waste"] > 0.5
    assert table.loc[paged, "waste"] < 0.05
    assert table.loc[unified, "waste"] == pytest.approx(0, abs=1e-9)
    assert table.loc[paged, "throughput_tok_s"] > table.loc[split, "throughput_tok_s"]
    assert table.loc[narrow, "cut short or refused"] > 0 and table.loc[split, "cut short or refused"] == 0
    pool = table["tokens"] + table["reserved_unused"] + table["free"]
    assert pool.round(6).eq(8192).all()
