"""Unified KV's attention is charged over the whole pool (llama.cpp's one stream: n_kv covers
every used cell, other sequences' cells masked out), its cells read once for the batch; split
KV's over each sequence's own cells."""

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


def test_unified_decode_reads_every_used_cell_of_the_pool_once_a_step():
    res = simulate(_two_long(), slots=2, kv=UnifiedKV(4096), cost=ATTENTION_ONLY)
    dec = _decode_steps(res)
    # the pool's used cells after the step, read once for both decoding sequences (not once
    # per sequence: the batch's queries share one view of the pool)
    assert (dec["attended"] == dec["kv_used"]).all()
    assert (dec["n_decode"] == 2).all()
    # the step times follow the charged cells
    assert dec["dur_s"].to_numpy() == pytest.approx(1e-6 * dec["attended"].to_numpy())


def test_split_decode_attends_its_own_cells():
    res = simulate(_two_long(), slots=2, kv=SplitKV(2048), cost=ATTENTION_ONLY)
    dec = _decode_steps(res)
    assert (dec["attended"] == dec["kv_used"]).all()     # two sequences, their own cells each


def test_with_every_sequence_decoding_unified_reads_what_split_reads():
    """No idle cache: the pool holds exactly the decoding sequences' cells, so a unified decode
    step costs what a split one does (the 4-decoding phase of notebook 04 §7: labkit 0.80,
    llama-server 0.80-0.96 of split's speed, against 0.63-0.86 beside idle caches). Charging
    each sequence the whole pool would make it twice as slow here."""
    split = simulate(_two_long(), slots=2, kv=SplitKV(2048), cost=ATTENTION_ONLY)
    unified = simulate(_two_long(), slots=2, kv=UnifiedKV(4096), cost=ATTENTION_ONLY)
    d_split, d_unified = (_decode_steps(r)["dur_s"].sum() for r in (split, unified))
    assert d_unified == pytest.approx(d_split)
    per_sequence = sum(r.n_decode * r.kv_used for r in _decode_steps(unified).itertuples())
    assert 1e-6 * per_sequence == pytest.approx(2 * d_unified)      # what it is not charged


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


def test_a_unified_prompt_pays_its_own_attention_pairs_only():
    """llama.cpp's flash attention (ggml-cpu's ops.cpp, the tiled path a prompt takes) skips a
    tile whose cells are all masked: a prompt's tokens do not score the other sequences' cells.
    The check fails on a charge over the pool (400 x the other sequence's 1,000+ cells)."""
    reqs = [Request(id=0, arrival=0.0, prompt_tokens=1000, output_tokens=200),
            Request(id=1, arrival=0.01, prompt_tokens=400, output_tokens=5)]
    cost = StepCost(0.01, 0.0, 0.0, 0.0, "e only", e=1e-9)
    rows = []
    for kv in (SplitKV(2048), UnifiedKV(4096)):
        st = simulate(reqs, slots=2, kv=kv, cost=cost).steps
        rows.append(st[(st.n_prefill_tokens == 400)].iloc[0])
    split, unified = rows
    assert unified["prefill_attn"] == pytest.approx(400 * (0 + 400 / 2))
    assert unified["prefill_attn"] == pytest.approx(split["prefill_attn"])
    assert unified["kv_used"] - 400 > 1000                # the other sequence's cells were there
    # its step also decodes the first sequence, whose attention spans the pool
    assert unified["attended"] == unified["kv_used"]
