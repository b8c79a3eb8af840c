"""Hand-checked scenarios for the simulator: exact times a broken loop would miss."""

import math

import numpy as np
import pandas as pd
import pytest

from labkit import sim
from labkit.sim import PagedKV, Request, SplitKV, StepCost, UnifiedKV, simulate

ONE_SECOND = StepCost(a=1.0, b=0.0, c=0.0, d=0.0, name="1 s per step")


def R(i, t, p, o, **kw):
    return Request(id=i, arrival=t, prompt_tokens=p, output_tokens=o, **kw)


def row(res, rid):
    df = res.requests.set_index("id")
    return df.loc[rid]


# ---------------------------------------------------------------- exact times

def test_single_request_exact_times():
    cost = StepCost(a=1.0, b=0.1, c=0.01, d=0.0)
    res = simulate([R(0, 0.0, 10, 3)], slots=1, cost=cost)
    r = row(res, 0)
    assert r.ttft == pytest.approx(2.0)           # 1 + 0.1 x 10 prompt tokens
    assert r.finish == pytest.approx(4.02)        # two decode steps of 1.01 s
    assert r.tpot == pytest.approx(1.01)
    assert r.status == "ok" and r.generated == 3
    assert list(res.steps["n_prefill_tokens"]) == [10, 0, 0]
    assert list(res.steps["n_decode"]) == [0, 1, 1]


def test_attended_term_grows_with_context():
    cost = StepCost(a=0.0, b=0.0, c=0.0, d=1.0)
    res = simulate([R(0, 0.0, 4, 3)], slots=1, cost=cost)
    assert list(res.steps["attended"]) == [4, 5, 6]
    assert list(res.steps["t_end"]) == [4.0, 9.0, 15.0]
    assert row(res, 0).finish == 15.0


TWO = [R(0, 0.0, 5, 3), R(1, 0.5, 5, 2)]


def test_one_slot_queues_the_second_request():
    res = simulate(TWO, slots=1, cost=ONE_SECOND)
    assert row(res, 0).finish == 3.0
    assert row(res, 1).admitted == 3.0
    assert row(res, 1).ttft == 3.5                # prefill 3..4, arrived at 0.5
    assert row(res, 1).finish == 5.0
    assert row(res, 1).queue_wait == 2.5


def test_continuous_joins_at_the_next_step():
    res = simulate(TWO, slots=2, cost=ONE_SECOND)
    assert row(res, 1).admitted == 1.0            # arrival during step 0 waits for its end
    assert row(res, 1).ttft == 1.5                # prefilled in step 1 next to R0's decode
    assert row(res, 0).finish == 3.0 and row(res, 1).finish == 3.0
    st = res.steps
    assert list(st["n_prefill_tokens"]) == [5, 5, 0]
    assert list(st["n_decode"]) == [0, 1, 2]


def test_static_waits_for_a_full_batch():
    res = simulate(TWO, slots=2, batching="static", cost=ONE_SECOND)
    assert row(res, 0).admitted == 0.5 and row(res, 1).admitted == 0.5
    assert row(res, 0).ttft == 1.5 and row(res, 1).ttft == 1.0
    assert row(res, 1).finish == 2.5 and row(res, 0).finish == 3.5


def test_no_cont_batching_holds_prompts_while_generating():
    res = simulate(TWO, slots=2, batching="no_cont", cost=ONE_SECOND)
    assert row(res, 1).admitted == 1.0            # takes the slot at once...
    assert row(res, 1).first_token == 4.0         # ...but its prompt waits until R0 is done
    assert row(res, 1).finish == 5.0
    table = res.slot_table()
    held = table[(table.request_id == 1) & (table.action == "idle")]
    assert list(held.step) == [1, 2]


def test_dynamic_batch_leaves_after_max_wait():
    res = simulate(TWO, slots=2, batching="dynamic", max_wait=0.2, cost=ONE_SECOND)
    assert row(res, 0).admitted == 0.2
    assert row(res, 0).finish == 3.2
    assert row(res, 1).admitted == 3.2            # the batch runs to completion first
    assert row(res, 1).finish == 5.2


def test_chunked_prefill_respects_n_batch():
    reqs = [R(0, 0.0, 10, 40), R(1, 0.1, 150, 2)]
    res = simulate(reqs, slots=2, n_batch=64, cost=ONE_SECOND)
    st = res.steps
    # R1 joins at t=1 next to R0's decode token: 63 + 63 + 24 prompt tokens.
    assert list(st["n_prefill_tokens"][:5]) == [10, 63, 63, 24, 0]
    assert list(st["n_tokens"][:4]) == [10, 64, 64, 25]
    assert row(res, 1).first_token == 4.0


def test_output_of_one_token_finishes_at_prefill():
    res = simulate([R(0, 0.0, 7, 1)], slots=1, cost=ONE_SECOND)
    r = row(res, 0)
    assert r.first_token == r.finish == 1.0 and math.isnan(r.tpot)
    assert res.n_steps == 1


def test_idle_gap_and_time_never_runs_backwards():
    res = simulate([R(0, 0.0, 5, 2), R(1, 10.0, 5, 2)], slots=1, cost=ONE_SECOND)
    st = res.steps
    assert list(st["t_start"]) == [0.0, 1.0, 10.0, 11.0]
    assert row(res, 1).ttft == 1.0


def test_continuous_beats_static_on_a_realistic_mixed_workload():
    reqs = sim.poisson(300, 1.0, prompt=(32, 1024), output=sim.Exponential(200), seed=7)
    cost = sim.preset("rtx4090", "8b-q4")
    cont = simulate(reqs, slots=8, batching="continuous", cost=cost).summary()
    stat = simulate(reqs, slots=8, batching="static", cost=cost).summary()
    assert cont["e2e_mean"] < 0.5 * stat["e2e_mean"]
    assert cont["ttft_p50"] < stat["ttft_p50"]


def test_prefill_interference_can_make_continuous_lose():
    # Prompt tokens cost time: R2's 11-token prompt rides in the same step as R1's
    # last decode token, so R1 finishes later than it would in a static batch.
    cost = StepCost(a=1e-3, b=1e-4, c=0.0, d=0.0)
    reqs = [R(0, 0.0, 1, 1), R(1, 0.0, 1, 2), R(2, 0.0, 11, 1)]
    cont = simulate(reqs, slots=2, batching="continuous", cost=cost).requests
    stat = simulate(reqs, slots=2, batching="static", cost=cost).requests
    assert list(cont.e2e.round(6)) == [0.0012, 0.0033, 0.0033]
    assert list(stat.e2e.round(6)) == [0.0012, 0.0022, 0.0043]
    assert cont.e2e.mean() > stat.e2e.mean()


def test_waiting_to_batch_can_win_when_steps_are_long():
    # R1 arrives 14 ms after R0, and a step takes 100 ms. Continuous starts R0 at
    # once and R1 must wait for that step to end; static waits 14 ms and serves both
    # in one step.
    reqs = [R(0, 0.0, 1, 1), R(1, 0.014, 1, 1)]
    cost = StepCost(0.1, 0.0, 0.0, 0.0)
    cont = simulate(reqs, slots=2, batching="continuous", cost=cost).requests
    stat = simulate(reqs, slots=2, batching="static", cost=cost).requests
    assert list(cont.finish.round(6)) == [0.1, 0.2]
    assert list(stat.finish.round(6)) == [0.114, 0.114]


# ------------------------------------------------------------------ KV models

def test_split_kv_refuses_and_truncates():
    res = simulate([R(0, 0.0, 8, 5), R(1, 0.0, 6, 10), R(2, 0.0, 3, 2)], slots=2,
                   kv=SplitKV(8), cost=ONE_SECOND)
    r0, r1, r2 = row(res, 0), row(res, 1), row(res, 2)
    assert r0.status == "refused" and "exceed_context_size" in r0.reason
    assert "8 tokens" in r0.reason and math.isnan(r0.admitted)
    assert r1.status == "length" and r1.generated == 3     # 6 prompt cells + 2 decode cells = 8
    assert r2.status == "ok"


def test_split_from_n_ctx_mirrors_llama_cpp():
    assert SplitKV.from_n_ctx(16384, 4).slot_cap == 4096
    assert SplitKV.from_n_ctx(16384, 2).slot_cap == 8192
    assert SplitKV.from_n_ctx(16384, 1, n_ctx_train=8192).slot_cap == 8192
    assert SplitKV.from_n_ctx(1000, 3).slot_cap == 512   # pad(1024 / 3 = 341) = 512


def test_unified_optimistic_fails_the_youngest():
    reqs = [R(0, 0.0, 8, 10), R(1, 0.0, 8, 10)]
    res = simulate(reqs, slots=2, kv=UnifiedKV(20, on_full="fail"), cost=ONE_SECOND)
    r0, r1 = row(res, 0), row(res, 1)
    assert r0.status == "ok"
    assert r1.status == "failed" and r1.reason.startswith("kv_full")
    assert r1.generated == 3                      # 16 + 2 + 2 = 20 cells, then no room
    assert res.steps["kv_used"].max() <= 20


def test_a_dry_unified_pool_fails_every_request_in_flight_as_llama_server_does():
    """The default, llama-server's: when no cell is left for the next token, every request in
    flight fails at that step, none is preempted, and a request still queued is served after."""
    reqs = [R(0, 0.0, 8, 10), R(1, 0.0, 8, 10), R(2, 0.0, 4, 2)]
    res = simulate(reqs, slots=2, kv=UnifiedKV(20), cost=ONE_SECOND)
    r0, r1, r2 = row(res, 0), row(res, 1), row(res, 2)
    assert r0.status == r1.status == "failed"
    assert r0.reason.startswith("kv_full") and r1.reason.startswith("kv_full")
    assert r0.finish == r1.finish                 # at the same step
    assert r0.generated == r1.generated == 3      # 16 + 2 + 2 = 20 cells, then no room
    assert res.summary()["preemptions"] == 0 and (res.requests["preemptions"] == 0).all()
    assert r2.status == "ok" and r2.admitted >= r0.finish
    # the other two modes give a different end to the same evening
    one = simulate(reqs, slots=2, kv=UnifiedKV(20, on_full="fail"), cost=ONE_SECOND)
    assert row(one, 0).status == "ok"
    again = simulate(reqs, slots=2, kv=UnifiedKV(20, on_full="preempt"), cost=ONE_SECOND)
    assert (again.requests.status == "ok").all() and again.summary()["preemptions"] >= 1


def test_unknown_on_full_is_refused():
    with pytest.raises(ValueError, match="fail_all"):
        UnifiedKV(20, on_full="drop")


def test_unified_preempt_recomputes_later():
    reqs = [R(0, 0.0, 8, 10), R(1, 0.0, 8, 10)]
    res = simulate(reqs, slots=2, kv=UnifiedKV(20, on_full="preempt"), cost=ONE_SECOND)
    r1 = row(res, 1)
    assert (res.requests.status == "ok").all()
    assert r1.preemptions == 1 and r1.generated == 10
    assert r1.first_token == 1.0                  # TTFT counts the first run's token
    assert res.steps["kv_used"].max() <= 20
    assert res.summary()["preemptions"] == 1


def test_unified_reserve_admits_only_what_can_finish():
    reqs = [R(0, 0.0, 8, 10), R(1, 0.0, 8, 10)]
    res = simulate(reqs, slots=2, kv=UnifiedKV(20, admission="reserve"), cost=ONE_SECOND)
    assert (res.requests.status == "ok").all()
    assert row(res, 1).admitted == row(res, 0).finish
    assert res.steps["kv_used"].max() <= 20


def test_paged_counts_whole_blocks_and_preempts():
    reqs = [R(i, 0.0, 20, 30) for i in range(3)]
    res = simulate(reqs, slots=3, kv=PagedKV(8, 8), cost=ONE_SECOND)
    st = res.steps
    assert (st["kv_blocks"] <= 8).all()
    assert (st["kv_used"] % 8 == 0).all()
    assert st["n_busy"].iloc[0] == 2              # 3 x 3 prompt blocks do not fit in 8
    assert (res.requests.status == "ok").all()
    assert res.requests.preemptions.sum() >= 1
    assert res.requests.generated.tolist() == [30, 30, 30]


def test_paged_refuses_prompts_larger_than_the_pool():
    res = simulate([R(0, 0.0, 100, 2)], slots=1, kv=PagedKV(4, 16), cost=ONE_SECOND)
    assert row(res, 0).status == "refused"


# ------------------------------------------------------------- prefix caching

def shared(n, gap=10.0, p=120, prefix=100):
    return [R(i, i * gap, p, 2, prefix_id="sys", prefix_tokens=prefix) for i in range(n)]


def test_slot_prefix_cache_reuses_the_prefix():
    res = simulate(shared(2), slots=1, cost=ONE_SECOND)
    assert list(res.requests.cached_tokens) == [0, 100]
    assert list(res.steps.n_prefill_tokens[res.steps.n_prefill_tokens > 0]) == [120, 20]
    off = simulate(shared(2), slots=1, cost=ONE_SECOND, prefix_cache=False)
    assert list(off.requests.cached_tokens) == [0, 0]


def test_slot_prefix_cache_prefers_the_matching_slot():
    reqs = [R(0, 0.0, 50, 2), R(1, 0.0, 120, 2, prefix_id="sys", prefix_tokens=100),
            R(2, 10.0, 120, 2, prefix_id="sys", prefix_tokens=100)]
    res = simulate(reqs, slots=2, cost=ONE_SECOND)
    assert row(res, 2).slot == row(res, 1).slot
    assert row(res, 2).cached_tokens == 100


def test_unified_prefix_cache_is_kept_and_reclaimable():
    res = simulate(shared(2), slots=1, kv=UnifiedKV(200), cost=ONE_SECOND)
    assert list(res.requests.cached_tokens) == [0, 100]
    # A big prompt later on still fits: the kept prefix is given back.
    res = simulate(shared(1) + [R(9, 20.0, 190, 2)], slots=2, kv=UnifiedKV(200), cost=ONE_SECOND)
    assert row(res, 9).status == "ok"


def test_paged_prefix_cache_shares_full_blocks():
    late = R(7, 10.0, 120, 2, prefix_id="sys", prefix_tokens=100)
    res = simulate(shared(3, gap=0.0) + [late], slots=4, kv=PagedKV(64, 16), cost=ONE_SECOND)
    # The three simultaneous requests cannot share (nobody had computed it yet);
    # the late one finds six full blocks (96 tokens) cached.
    assert list(res.requests.cached_tokens) == [0, 0, 0, 96]


def test_at_least_one_prompt_token_is_recomputed():
    reqs = [R(i, i * 10.0, 100, 2, prefix_id="x", prefix_tokens=100) for i in range(2)]
    res = simulate(reqs, slots=1, cost=ONE_SECOND)
    assert row(res, 1).cached_tokens == 99


# ------------------------------------------------------------------- policies

BURST = [R(0, 0.0, 5, 50), R(1, 0.0, 5, 5, priority=0), R(2, 0.0, 5, 20, priority=2),
         R(3, 0.0, 5, 8, priority=1)]


def completion_order(res):
    return list(res.requests.sort_values("finish", kind="stable").id)


def test_policies_order_a_burst():
    assert completion_order(simulate(BURST, slots=1, cost=ONE_SECOND)) == [0, 1, 2, 3]
    assert completion_order(simulate(BURST, slots=1, policy="sjf", cost=ONE_SECOND)) == [1, 3, 2, 0]
    assert completion_order(simulate(BURST, slots=1, policy="priority", cost=ONE_SECOND)) == [2, 3, 0, 1]


def test_sjf_uses_expected_output():
    reqs = [R(0, 0.0, 5, 50, expected_output=1), R(1, 0.0, 5, 5)]
    assert completion_order(simulate(reqs, slots=1, policy="sjf", cost=ONE_SECOND)) == [0, 1]


def test_fair_share_lets_a_light_user_in():
    heavy = [R(i, 0.0, 5, 10, user="A") for i in range(6)]
    light = [R(100, 0.01, 5, 10, user="B")]
    fifo = simulate(heavy + light, slots=1, cost=ONE_SECOND)
    fair = simulate(heavy + light, slots=1, policy="fair", cost=ONE_SECOND)
    assert completion_order(fifo)[-1] == 100
    assert completion_order(fair).index(100) == 1
    assert fair.requests.set_index("id").loc[100, "queue_wait"] < fifo.requests.set_index("id").loc[100, "queue_wait"]


def test_starvation_is_visible_under_sjf():
    reqs = sim.poisson(400, 4.5, prompt=64, output=sim.Choice([8, 400], [0.9, 0.1]), seed=3)
    sjf = simulate(reqs, slots=2, policy="sjf", cost=StepCost(0.01, 0, 0, 0))
    fifo = simulate(reqs, slots=2, policy="fifo", cost=StepCost(0.01, 0, 0, 0))
    starved = sjf.requests[sjf.requests.starved]
    assert len(starved) > 0 and (starved.output_tokens == 400).all()   # only long jobs starve
    assert not fifo.requests.starved.any()
    assert (sjf.by("output_tokens").loc[400, "queue_wait_max"]
            > fifo.by("output_tokens").loc[400, "queue_wait_max"])
    assert sjf.summary()["starved"] == len(starved)
    assert sjf.by("output_tokens", starvation_s=0.0).loc[8, "starved"] > 0


# ---------------------------------------------------------------- workloads

def test_closed_loop_keeps_one_request_per_client():
    wl = sim.closed_loop(3, 20, think_time=0.5, prompt=10, output=(2, 8), seed=1)
    res = simulate(wl, slots=2, cost=ONE_SECOND)
    df = res.requests
    assert len(df) == 20 and (df.status == "ok").all()
    for user, g in df.groupby("user"):
        g = g.sort_values("arrival")
        assert (g.arrival.to_numpy()[1:] == g.finish.to_numpy()[:-1] + 0.5).all()
    # Replaying the same closed loop gives the same run.
    again = simulate(wl, slots=2, cost=ONE_SECOND).requests
    pd.testing.assert_frame_equal(df, again)


def test_static_flushes_when_no_more_requests_can_come():
    wl = sim.closed_loop(2, 6, prompt=5, output=3)
    res = simulate(wl, slots=4, batching="static", cost=ONE_SECOND)
    assert (res.requests.status == "ok").all() and len(res.requests) == 6


def test_trace_replay_from_dataframe_and_dicts():
    rows = [{"arrival": 0.0, "prompt_tokens": 5, "output_tokens": 2, "user": "x", "extra": 1},
            {"arrival": 1.0, "prompt_tokens": 6, "output_tokens": 3, "priority": 2}]
    a = simulate(rows, slots=1, cost=ONE_SECOND).requests
    b = simulate(pd.DataFrame(rows), slots=1, cost=ONE_SECOND).requests
    assert list(a.id) == [0, 1] and list(a.user) == ["x", "u0"]
    pd.testing.assert_frame_equal(a, b)


def test_generators_are_seeded():
    a = sim.gamma(50, 2.0, cv=3.0, users={"a": 3, "b": 1}, priority=3, seed=5,
                  prefix=sim.SharedPrefix(32, groups=2, share=0.5))
    b = sim.gamma(50, 2.0, cv=3.0, users={"a": 3, "b": 1}, priority=3, seed=5,
                  prefix=sim.SharedPrefix(32, groups=2, share=0.5))
    assert a == b
    assert any(r.prefix_id for r in a) and all(r.prompt_tokens > r.prefix_tokens or r.prefix_tokens == 0 for r in a)
    assert np.all(np.diff([r.arrival for r in a]) >= 0)


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        simulate([R(0, 0.0, 5, 2), R(0, 1.0, 5, 2)], cost=ONE_SECOND)


# --------------------------------------------------------------- result tables

def test_steps_schema_matches_the_engine_trace():
    res = simulate(sim.poisson(30, 5.0, prompt=(5, 200), output=(1, 40), seed=2), slots=3)
    for c in ["step", "t_start", "t_end", "dur_s", "n_tokens", "n_prefill_tokens",
              "n_prefill_seqs", "n_decode", "attended", "kv_used"]:
        assert c in res.steps.columns
    assert list(res.steps.step) == list(range(res.n_steps))
    table = res.slot_table()
    assert list(table.columns) == ["step", "t_start", "t_end", "slot", "action", "n_tokens", "request_id"]
    per_step = table.groupby("step")["n_tokens"].sum()
    assert (per_step.to_numpy() == res.steps.n_tokens.to_numpy()).all()
    dec = table[table.action == "decode"].groupby("step").size().reindex(res.steps.step, fill_value=0)
    assert (dec.to_numpy() == res.steps.n_decode.to_numpy()).all()
    assert set(table.action) <= {"prefill", "decode", "idle"}
    window = res.slot_table(steps=(5, 9))
    pd.testing.assert_frame_equal(window.reset_index(drop=True),
                                  table[(table.step >= 5) & (table.step <= 9)].reset_index(drop=True))


def test_summary_and_time_series():
    res = simulate(sim.poisson(50, 2.0, prompt=(5, 200), output=(1, 40), seed=2), slots=2,
                   kv=UnifiedKV(600))
    s = res.summary(ttft_slo=0.5, tpot_slo=0.05)
    assert s["requests"] == 50
    assert 0 <= s["slot_occupancy"] <= 1
    assert s["goodput_req_s"] <= s["requests_per_s"]
    assert s["peak_kv"] <= 600
    q = res.queue_depth()
    assert q.queue_depth.min() >= 0 and q.queue_depth.iloc[-1] == 0
    assert "kv_frac" in res.kv_use()


# ----------------------------------------------------------------- cost & fit

def test_presets_follow_first_principles():
    h200, rtx = sim.preset("h200", "8b-q4"), sim.preset("rtx4090", "8b-q4")
    assert h200.a < rtx.a                       # more bandwidth reads the weights faster
    assert sim.preset("rtx4090", "smollm2-135m").a < rtx.a
    assert rtx.decode_tok_s(32, 512) > 5 * rtx.decode_tok_s(1, 512)   # batching pays
    assert sim.preset("h100/8b-q4") == sim.preset("h100", "8b-q4")
    table = sim.presets_table()
    assert len(table) == len(sim.HARDWARE) * len(sim.MODELS)
    assert (table[["a_ms", "b_us", "c_us", "d_ns"]] > 0).all().all()
    with pytest.raises(ValueError):
        sim.preset("tpu", "8b-q4")


def test_fit_recovers_a_known_cost_from_simulated_steps():
    true = StepCost(a=2e-3, b=1e-4, c=3e-4, d=2e-7)
    res = simulate(sim.poisson(200, 20.0, prompt=(10, 500), output=(1, 200), seed=4), slots=8,
                   cost=true, max_jump=1)
    f = sim.fit(res.steps)
    assert f.r2 > 0.999999
    for k in "abcd":
        assert getattr(f.cost, k) == pytest.approx(getattr(true, k), rel=1e-6)
    assert f.rel_err.abs().max() < 1e-6


def test_fit_takes_the_engine_schema_and_stays_non_negative():
    rng = np.random.default_rng(0)
    n = 300
    trace = pd.DataFrame({
        "step": np.arange(n),
        "n_prefill_tokens": rng.integers(0, 512, n) * (rng.random(n) < 0.2),
        "n_prefill_seqs": 0, "n_decode": rng.integers(0, 8, n), "kv_used": 0,
    })
    trace["attended"] = trace.n_decode * 300 + trace.n_prefill_tokens
    trace["n_tokens"] = trace.n_prefill_tokens + trace.n_decode
    # No real dependence on attended, and noise: plain least squares may go negative there.
    trace["dur_s"] = 5e-3 + 2e-5 * trace.n_prefill_tokens + 1e-3 * trace.n_decode \
        + rng.normal(0, 3e-4, n)
    trace["t_start"] = np.cumsum(trace.dur_s) - trace.dur_s
    trace["t_end"] = trace.t_start + trace.dur_s
    f = sim.fit(trace)
    assert min(f.cost.a, f.cost.b, f.cost.c, f.cost.d) >= 0
    assert f.r2 > 0.9
    assert f.cost.b == pytest.approx(2e-5, rel=0.1)
    assert set(f.summary()) >= {"r2", "median_abs_rel_err", "n_steps", "a", "b", "c", "d"}


def test_nnls_matches_the_constrained_optimum():
    from labkit.sim.fit import nnls_small
    X = np.array([[1, 0], [1, 1], [1, 2]], dtype=float)
    y = np.array([3.0, 2.0, 1.0])                 # slope -1: must be clipped to 0
    coef, active = nnls_small(X, y)
    assert coef == pytest.approx([2.0, 0.0])
    assert active == (0,)


# ----------------------------------------------------------------- plots & CLI

def _bars(ax, action=None):
    """The bars a Gantt chart drew (Rectangles), optionally only one action's colour."""
    from matplotlib.colors import to_rgba
    from labkit.sim.plots import COLORS
    bars = [p for p in ax.patches if p.get_width() > 0]
    if action is not None:
        bars = [p for p in bars if p.get_facecolor() == to_rgba(COLORS[action])]
    return bars


def _runs_in(table):
    """Bars a slot table should give: runs of consecutive steps of one slot, action and request."""
    n, last = 0, None
    for r in table.sort_values(["slot", "step"]).itertuples():
        key = (r.slot, r.action, None if pd.isna(r.request_id) else int(r.request_id), r.step)
        if last is None or key[:3] != last[:3] or key[3] != last[3] + 1:
            n += 1
        last = key
    return n


def test_gantt_draws_every_slot_row_of_the_run():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from labkit.sim import plots
    reqs = sim.poisson(12, 4.0, prompt=(5, 100), output=(2, 20), seed=1)
    a = simulate(reqs, slots=3, kv=UnifiedKV(200, on_full="preempt"))
    table, st = a.slot_table(), a.steps

    ax = plots.gantt(a)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["slot 0", "slot 1", "slot 2"]
    assert len(_bars(ax)) == _runs_in(table)
    for action in ("prefill", "decode"):
        rows = table[table.action == action]
        drawn = _bars(ax, action)
        assert sum(p.get_width() for p in drawn) == pytest.approx((rows.t_end - rows.t_start).sum())
        assert {round(p.get_y() + p.get_height() / 2) for p in drawn} == set(rows.slot)
    assert min(p.get_x() for p in _bars(ax)) == st.t_start.iloc[0]
    assert max(p.get_x() + p.get_width() for p in _bars(ax)) == pytest.approx(st.t_end.iloc[-1])
    lo, hi = ax.get_xlim()
    assert lo <= st.t_start.iloc[0] and hi >= st.t_end.iloc[-1]

    # By step, a window: every slot has one bar width per step of the window.
    by_step = plots.gantt(table, x="step", steps=(0, 20))
    for slot in range(3):
        row = [p for p in _bars(by_step) if round(p.get_y() + p.get_height() / 2) == slot]
        assert sum(p.get_width() for p in row) == 21
    assert min(p.get_x() for p in _bars(by_step)) == 0
    assert by_step.get_xlabel() == "step"

    # A window of a SimResult draws only those steps' times.
    window = _bars(plots.gantt(a, steps=(3, 8)))
    assert min(p.get_x() for p in window) == st.t_start.iloc[3]
    assert max(p.get_x() + p.get_width() for p in window) == pytest.approx(st.t_end.iloc[8])

    # The engine's table (nullable integer request ids) draws the same bars and labels.
    engine_like = table.assign(request_id=lambda t: t.request_id.astype("Int64"))
    ax2 = plots.gantt(engine_like)
    assert len(_bars(ax2)) == len(_bars(ax))
    assert sorted(t.get_text() for t in ax2.texts) == sorted(t.get_text() for t in ax.texts)
    assert {t.get_text() for t in ax.texts} <= {str(i) for i in a.requests.id}
    plt.close("all")


def test_other_plots_draw_their_data():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from labkit.sim import plots
    reqs = sim.poisson(12, 4.0, prompt=(5, 100), output=(2, 20), seed=1)
    a = simulate(reqs, slots=3, kv=UnifiedKV(200, on_full="preempt"))
    b = simulate(reqs, slots=3, batching="static")

    cdf = plots.ttft_cdf({"continuous": a, "static": b})
    assert [t.get_text() for t in cdf.get_legend().get_texts()] == ["continuous", "static"]
    for line, run in zip(cdf.get_lines(), (a, b)):
        x, y = line.get_data()
        assert list(x) == sorted(run.requests.ttft) and y[-1] == 1.0
    e2e = plots.ttft_cdf([a, b], metric="e2e")
    assert sorted(e2e.get_lines()[1].get_xdata()) == sorted(b.requests.e2e)
    assert e2e.get_xlabel() == "e2e (s)"

    top, bottom = plots.queue_and_kv(a)
    assert max(top.get_lines()[0].get_ydata()) == a.summary()["peak_queue"]
    assert np.nanmax(bottom.get_lines()[0].get_ydata()) == a.summary()["peak_kv"]
    assert 200 in bottom.get_lines()[1].get_ydata()                 # the capacity line

    sweep = sim.experiments.sweep_load([2.0, 4.0], lambda r: sim.poisson(20, r, prompt=50, output=10),
                                       variants={"c": {}, "s": {"batching": "static"}}, slots=2)
    tl = plots.throughput_latency(sweep)
    assert [t.get_text() for t in tl.get_legend().get_texts()] == ["c", "s"]
    for line, (_, g) in zip(tl.get_lines(), sweep.groupby("label", sort=False)):
        assert list(line.get_xdata()) == list(g.sort_values("rate").throughput_tok_s)

    steps = simulate(reqs, slots=3, max_jump=1).steps
    f = sim.fit(steps)
    fc = plots.fit_check(f, steps)
    assert len(fc.collections[0].get_offsets()) == len(f.rel_err)
    plt.close("all")


def test_cli_prints_a_comparison(capsys, tmp_path):
    from labkit.sim.cli import main
    out = tmp_path / "t.csv"
    assert main(["--requests", "40", "--rate", "2", "--compare", "all", "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    for label in ("batching=continuous", "batching=static", "policy=fair", "kv=paged"):
        assert label in text
    assert len(pd.read_csv(out)) == 4 + 4 + 5
    assert main(["--arrivals", "closed", "--clients", "3", "--requests", "12", "--compare", "none",
                 "--kv", "unified:4096"]) == 0


@pytest.mark.slow
def test_python_dash_m_runs():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "labkit.sim", "--requests", "10", "--compare", "none"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "TTFT p50" in r.stdout
