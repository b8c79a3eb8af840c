"""The five-term step cost: prefill attention in the simulator, its features, the fit and its
bootstrap, the presets."""

import numpy as np
import pandas as pd
import pytest

from labkit import sim
from labkit.sim import Request, StepCost, simulate
from labkit.sim.features import chunk_pairs, prefill_attention, with_prefill_attention

TRUE = StepCost(a=8e-3, b=3e-3, c=1.5e-3, d=3e-6, e=1e-9)


def test_four_coefficients_still_mean_no_prefill_attention():
    c = StepCost(1.0, 2.0, 3.0, 4.0)
    assert c.e == 0 and c.as_dict() == {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 0.0}
    assert c.step_time(1, 1, 1) == 10.0
    with pytest.raises(ValueError):
        StepCost(0, 0, 0, 0, e=-1.0)


def test_one_prompt_costs_its_square_once_whatever_the_chunks():
    # A P-token prompt adds P (h + P/2) pairs, h = 0: P^2 / 2. In chunks of 64 the chunks'
    # pairs add up to the same total: sum of 64 (64 i + 32) over i = P^2 / 2.
    cost = StepCost(a=0.0, b=0.0, c=0.0, d=0.0, e=1e-6)
    for n_batch in (2048, 64):
        res = simulate([Request(0, 0.0, 256, 1)], slots=1, cost=cost, n_batch=n_batch)
        assert res.requests["ttft"].iloc[0] == pytest.approx(1e-6 * 256 * 256 / 2)
        assert res.steps["prefill_attn"].sum() == pytest.approx(256 * 256 / 2)


def test_a_prompt_token_costs_more_in_a_long_prompt():
    cost = sim.preset("cpu", "smollm2-135m")
    assert cost.e > 0
    per_token = {p: cost.prefill_time(p) / p for p in (178, 2048)}
    assert per_token[2048] > 1.1 * per_token[178]
    assert cost.prefill_tok_s(4096) < cost.prefill_tok_s(512) * 1.2


def test_presets_derive_e_from_attention_flops():
    hw, m = sim.HARDWARE["h100"], sim.MODELS["8b-q4"]
    assert m.attn_flops_per_pair == 4 * 32 * 32 * 128
    assert sim.preset("h100", "8b-q4").e == pytest.approx(m.attn_flops_per_pair
                                                          / (hw.flops * hw.flops_eff))
    hand = sim.ModelSpec("x", 1e9, 5e8, 16, 1e5, 32000)        # no attention width given
    assert sim.derive(hw, hand).e == 0
    assert {"e_ps", "prefill_tok_s_4096"} <= set(sim.presets_table().columns)


def test_simulator_steps_carry_prefill_attention_and_replay_it():
    reqs = [Request(i, 0.01 * i, p, o) for i, (p, o) in
            enumerate([(64, 9), (700, 4), (2000, 12), (150, 30), (1200, 5), (90, 17)])]
    res = simulate(reqs, slots=2, cost=TRUE, n_batch=512, max_jump=1)
    st = res.steps
    assert (st.loc[st["n_prefill_tokens"] == 0, "prefill_attn"] == 0).all()
    assert st["dur_s"].to_numpy() == pytest.approx(TRUE.predict(st))


def _synthetic_trace(n_requests=60, seed=3):
    """A simulator run with varied prompts (64..2048) and answers, at 1, 2 and 4 slots."""
    rng = np.random.default_rng(seed)
    parts = []
    for slots in (1, 2, 4):
        reqs = [Request(i, 0.0, int(p), int(o)) for i, (p, o) in enumerate(zip(
            np.geomspace(64, 2048, n_requests // 3).round(),
            rng.integers(4, 120, n_requests // 3)))]
        parts.append(simulate(reqs, slots=slots, cost=TRUE, max_jump=1).steps)
    return pd.concat(parts, ignore_index=True)


def test_fit_recovers_five_coefficients_exactly_without_noise():
    f = sim.fit(_synthetic_trace())
    for k in "abcde":
        assert getattr(f.cost, k) == pytest.approx(getattr(TRUE, k), rel=1e-6), k
    assert f.r2 == pytest.approx(1.0)


def test_fit_with_noise_recovers_coefficients_within_their_uncertainty():
    tr = _synthetic_trace().copy()
    rng = np.random.default_rng(7)
    tr["dur_s"] = tr["dur_s"] * (1 + 0.03 * rng.standard_normal(len(tr)))
    f = sim.fit(tr, bootstrap=100, seed=1)
    u = f.uncertainty()
    for k in "abcde":
        true = getattr(TRUE, k)
        assert u.loc[k, "se"] > 0
        assert abs(u.loc[k, "value"] - true) <= 3 * u.loc[k, "se"], (k, u.loc[k].to_dict())
        assert u.loc[k, "lo95"] <= u.loc[k, "value"] <= u.loc[k, "hi95"]
    assert {"a_se", "e_se"} <= set(f.summary())


def test_fit_terms_limits_the_model_and_a_short_trace_cannot_see_e():
    tr = _synthetic_trace()
    four = sim.fit(tr, terms="abcd")
    assert four.cost.e == 0 and four.terms == tuple("abcd")
    assert four.r2 < sim.fit(tr).r2
    with pytest.raises(ValueError):
        sim.fit(tr, terms="abz")
    # Short prompts only: b and e are nearly collinear; the fit still returns valid costs.
    short = tr[(tr["n_prefill_tokens"] == 0) | (tr["n_prefill_tokens"] < 100)]
    assert all(v >= 0 for v in sim.fit(short).cost.as_dict().values())


def test_relative_weighting_keeps_short_steps_right():
    tr = _synthetic_trace().copy()
    big = tr["n_prefill_tokens"] > 1000
    tr.loc[big, "dur_s"] *= 1.3                   # a disturbed stretch of long prompt steps
    rel_fit = sim.fit(tr)
    abs_fit = sim.fit(tr, weight="absolute")
    dec = tr["n_prefill_tokens"] == 0
    err = lambda f: float(np.median(np.abs(f.rel_err[dec[f.rel_err.index]])))  # noqa: E731
    assert err(rel_fit) < err(abs_fit)


def _engine_like(sim_steps, res):
    """The engine's view of a simulated run: steps without prefill_attn, and a slot trace."""
    steps = sim_steps.drop(columns=["prefill_attn"])
    slots = res.slot_table()
    return steps, slots


def test_prefill_attention_from_the_slot_trace_is_exact():
    reqs = [Request(i, 0.05 * i, p, o) for i, (p, o) in
            enumerate([(300, 6), (900, 3), (50, 20), (1500, 4), (120, 9)])]
    res = simulate(reqs, slots=2, cost=TRUE, n_batch=512, max_jump=1)
    steps, slots = _engine_like(res.steps, res)
    got = prefill_attention(steps, slots)
    assert got.to_numpy() == pytest.approx(res.steps["prefill_attn"].to_numpy())
    assert with_prefill_attention(steps, slots)["prefill_attn"].sum() == pytest.approx(
        res.steps["prefill_attn"].sum())


def test_prefill_attention_solves_a_cached_prefix_from_attended():
    # Slot trace of one request that entered holding 100 cells (a cached prefix): a 50-token
    # chunk after 100 cells, then two decode steps.
    steps = pd.DataFrame({"step": [0, 1, 2], "n_prefill_tokens": [50, 0, 0],
                          "n_prefill_seqs": [1, 0, 0], "n_decode": [0, 1, 1],
                          "attended": [150, 151, 152]})
    slots = pd.DataFrame({"step": [0, 1, 2], "slot": [0, 0, 0],
                          "action": ["prefill", "decode", "decode"], "n_tokens": [50, 1, 1],
                          "request_id": [7, 7, 7]})
    assert prefill_attention(steps, slots).tolist() == pytest.approx(
        [chunk_pairs(50, 100), 0, 0])


def test_prefill_attention_from_steps_alone():
    # Exact for a step with one chunk and no decode; estimated when decode tokens ride along.
    reqs = [Request(0, 0.0, 400, 30), Request(1, 0.1, 800, 3)]
    res = simulate(reqs, slots=2, cost=StepCost(0.01, 1e-4, 1e-3, 0.0))
    steps = res.steps.drop(columns=["prefill_attn"])
    est = prefill_attention(steps)
    truth = res.steps["prefill_attn"]
    alone = (steps["n_prefill_tokens"] > 0) & (steps["n_decode"] == 0)
    assert est[alone].to_numpy() == pytest.approx(truth[alone].to_numpy())
    mixed = (steps["n_prefill_tokens"] > 0) & (steps["n_decode"] > 0)
    assert mixed.any()
    assert est[mixed].to_numpy() == pytest.approx(truth[mixed].to_numpy(), rel=0.05)
