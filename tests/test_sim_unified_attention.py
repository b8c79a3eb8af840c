"""Unified KV's attention is charged over the whole pool (llama.cpp's one stream: n_kv covers
every used cell, other sequences' cells masked out); split KV's over each sequence's own cells."""

import pytest

from labkit.sim import simulate
from labkit.sim.cost import StepCost
from labkit.sim.kv import SplitKV, UnifiedKV
from labkit.sim.requests import Request

# Only the attention terms cost anything, so the step times are the charged cells.
ATTENTION_ONLY = StepCost(0.0, 0.0, 0.0, 1e-6, "attention only", e=1e-9)


def _two_long(out=50, prompt=1000):
    return [Request(id=i, arrival=0.0, prompt_tokens=prompt, output_tokens=out) for i in range(2)]


def _decode_steps(res):
    st = res.steps
    return st[(st.n_prefill_tokens == 0) & (st.n_decode > 0)]


def test_unified_decode_attends_every_used_cell_of_the_pool():
    res = simulate(_two_long(), slots=2, kv=UnifiedKV(4096), cost=ATTENTION_ONLY)
    dec = _decode_steps(res)
    # each of the 2 decoding sequences attends over the pool's used cells after the step
    assert (dec["attended"] == dec["n_decode"] * dec["kv_used"]).all()
    first = dec.iloc[0]
    assert first["attended"] == 2 * first["kv_used"]
    # the step times follow the charged cells
    assert dec["dur_s"].to_numpy() == pytest.approx(1e-6 * dec["attended"].to_numpy())


def test_split_decode_attends_its_own_cells():
    res = simulate(_two_long(), slots=2, kv=SplitKV(2048), cost=ATTENTION_ONLY)
    dec = _decode_steps(res)
    assert (dec["attended"] == dec["kv_used"]).all()     # two sequences, their own cells each


def test_the_old_charging_would_make_unified_as_fast_as_split():
    split = simulate(_two_long(), slots=2, kv=SplitKV(2048), cost=ATTENTION_ONLY)
    unified = simulate(_two_long(), slots=2, kv=UnifiedKV(4096), cost=ATTENTION_ONLY)
    old = simulate(_two_long(), slots=2, kv=UnifiedKV(4096, pool_attention=False),
                   cost=ATTENTION_ONLY)
    d_split, d_unified, d_old = (_decode_steps(r)["dur_s"].sum() for r in (split, unified, old))
    assert d_old == pytest.approx(d_split)
    assert d_unified == pytest.approx(2 * d_split, rel=0.01)   # two sequences' pools


def test_an_idle_slots_cache_slows_a_lone_unified_decode():
    """llama.cpp issue #25804: one sequence decodes while another slot keeps its finished
    request's cache (prefix caching). Unified: the lone decode attends over both."""
    reqs = [Request(id=0, arrival=0.0, prompt_tokens=1500, output_tokens=1, prefix_id="a",
                    prefix_tokens=1500),
            Request(id=1, arrival=1.0, prompt_tokens=500, output_tokens=100)]

    def lone_decode(kv):
        res = simulate(reqs, slots=2, kv=kv, cost=ATTENTION_ONLY, prefix_cache=True)
        dec = _decode_steps(res)
        assert (dec["n_decode"] == 1).all() and len(dec) == 99
        return dec

    split, unified = lone_decode(SplitKV(2048)), lone_decode(UnifiedKV(4096))
    old = lone_decode(UnifiedKV(4096, pool_attention=False))
    assert split["attended"].iloc[0] == 501
    assert unified["attended"].iloc[0] == 1500 + 501    # the idle slot's kept 1,500 cells too
    assert old["attended"].iloc[0] == 501
    assert unified["dur_s"].sum() > 3.5 * split["dur_s"].sum()


def test_unified_prefill_attention_pairs_cover_the_pool():
    reqs = [Request(id=0, arrival=0.0, prompt_tokens=1000, output_tokens=200),
            Request(id=1, arrival=0.01, prompt_tokens=400, output_tokens=5)]
    cost = StepCost(0.01, 0.0, 0.0, 0.0, "e only", e=1e-9)
    for kv, extra in ((SplitKV(2048), 0), (UnifiedKV(4096), 1)):
        st = simulate(reqs, slots=2, kv=kv, cost=cost).steps
        row = st[(st.n_prefill_tokens == 400)].iloc[0]
        own = 400 * (0 + 400 / 2)
        # unified: the 400 prompt tokens also meet the other sequence's cells
        others = row["kv_used"] - 400
        assert row["prefill_attn"] == pytest.approx(own + extra * 400 * others)
        assert others > 1000
