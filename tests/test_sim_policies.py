"""Key policies (a function key(request, now), re-read at every admission) and the rush of
notebook 07: starvation against one fixed limit, under overload that lasts."""

from functools import lru_cache

import pytest

from labkit import sim
from labkit.sim import experiments as ex
from labkit.sim.policies import KeyPolicy, from_key, make_policy
from labkit.sim.requests import Request


def _req(i, arrival=0.0, out=10, priority=0):
    return Request(i, arrival, 16, out, priority=priority)


def _drain(policy, now=0.0):
    out = []
    while len(policy):
        policy.now = now
        out.append(policy.pop().id)
    return out


def test_smallest_key_first_ties_in_push_order():
    p = from_key(lambda r, now: r.expected)
    for i, out in enumerate([30, 10, 20, 10]):
        p.push(_req(i, out=out), 0.0)
    assert p.peek().id == 1 and len(p) == 4 and sorted(r.id for r in p) == [0, 1, 2, 3]
    assert _drain(p) == [1, 3, 2, 0]


def test_the_key_is_read_again_at_each_admission_with_the_time():
    # Each second waited is worth 10 tokens of answer: a 100-token request that has waited
    # overtakes a fresh 10-token one once it has waited more than 9 s.
    p = from_key(lambda r, now: r.expected - 10 * (now - r.arrival))
    p.push(_req("long", arrival=0.0, out=100), 0.0)
    p.push(_req("short", arrival=5.0, out=10), 5.0)
    p.now = 5.0
    assert p.peek().id == "short"                  # keys 50 and 10
    p.pop()
    p.push(_req("fresh", arrival=20.0, out=10), 20.0)
    p.now = 20.0
    assert p.peek().id == "long"                   # keys -100 and 10
    p.now = 20.5                                   # the same room, read again later: same order
    assert _drain(p, 20.5) == ["long", "fresh"]


def test_preempted_requests_go_first():
    p = from_key(lambda r, now: r.expected)
    p.push(_req(0, out=1), 0.0)
    p.push(_req(1, out=99), 0.0, front=True)
    assert _drain(p) == [1, 0]


def test_make_policy_takes_a_function_and_copies_instances():
    def shortest(request, now):
        return request.expected
    p = make_policy(shortest)
    assert isinstance(p, KeyPolicy) and p.name == "shortest"
    assert make_policy(lambda r, now: 0).name == "key"
    named = from_key(shortest, name="mine")
    copy = make_policy(named)
    assert copy is not named and copy.key is shortest and copy.name == "mine"
    with pytest.raises(TypeError, match="key"):
        from_key(42)


def _workload():
    return sim.poisson(120, rate=30.0, prompt=(32, 256), output=sim.Choice([16, 200], [0.7, 0.3]),
                       priority={0: 0.7, 1: 0.3}, seed=3)


@pytest.mark.parametrize("name, key", [
    ("fifo", lambda r, now: r.arrival),
    ("sjf", lambda r, now: (r.expected, r.arrival)),
    ("priority", lambda r, now: (-r.priority, r.arrival)),     # the seed's "hybrid"
])
def test_a_key_policy_reproduces_the_built_in_policies(name, key):
    wl = _workload()
    a = sim.simulate(wl, slots=3, policy=name).requests
    b = sim.simulate(wl, slots=3, policy=key).requests
    assert a[["id", "admitted", "finish"]].equals(b[["id", "admitted", "finish"]])


def test_the_engine_tells_the_policy_each_admission_time():
    seen = []

    def spy(request, now):
        seen.append(now)
        return request.arrival
    run = sim.simulate(_workload(), slots=2, policy=spy)
    admitted = set(run.requests["admitted"].round(12))
    assert seen == sorted(seen)                                 # the clock only moves forward
    assert {round(t, 12) for t in seen} <= admitted | {0.0}


@lru_cache(maxsize=None)
def _rush(policy):
    return ex.rush_run(policy)


def test_rush_is_sustained_overload_and_sjf_starves_the_long_requests():
    fifo, sjf = _rush("fifo"), _rush("sjf")
    assert fifo.requests["arrival"].max() == pytest.approx(299.88, abs=0.01)
    # FIFO's wait keeps growing: later arrivals wait longer (the queue never drains)
    w = ex.waits(fifo)
    assert w["wait"].iloc[-50:].mean() > 3 * w["wait"].iloc[50:100].mean()
    v_fifo, v_sjf = ex.verdict(fifo), ex.verdict(sjf)
    assert v_fifo["no_starvation"] and not v_fifo["short_ttft_ok"]
    assert not v_sjf["no_starvation"] and v_sjf["short_ttft_ok"] and v_sjf["long_starved"] > 10
    starved = ex.waits(sjf)
    assert starved.loc[starved["starved"], "output_tokens"].eq(ex.LONG_TOKENS).all()
    assert starved["still_waiting"].any()           # some were never admitted while arrivals lasted


def test_one_fixed_limit_for_every_policy():
    run = _rush("fifo")
    w = ex.waits(run, bound=5.0)
    assert (w["starved"] == (w["wait"] > 5.0)).all() and w["starved"].any()
    # only requests whose whole wait fell while arrivals lasted are judged
    last = run.requests["arrival"].max()
    assert ex.waits(run, bound=100.0)["arrival"].max() <= last - 100.0


def test_aging_passes_the_rush_where_sjf_and_fifo_do_not():
    aging = ex.rush_run(lambda r, now: r.expected - 20 * (now - r.arrival))
    assert [ex.verdict(run)["ok"] for run in (_rush("fifo"), _rush("sjf"), aging)] == [False, False, True]


def test_service_runs_solo_needs_its_streams_chat_needs_more():
    t = ex.service_runs(slots=(1, 2, 8)).set_index(["service", "slots"])
    solo, chat = t.loc["solo assistant"], t.loc["30-user chat"]
    assert solo.loc[1, "queue_wait_max"] > 1.0 > solo.loc[2, "queue_wait_max"]
    assert chat.loc[2, "ttft_p90"] > 5 * chat.loc[8, "ttft_p90"]
    assert chat.loc[8, "stream_tok_s"] < chat.loc[1, "stream_tok_s"]


def test_the_evening_is_one_recipe_with_or_without_people():
    """Notebook 07's evening, in both parts: the same 200 requests; with ``people`` they also
    carry two users and two priorities, and nothing else changes."""
    from labkit.sim import experiments as ex
    plain, people = ex.evening(), ex.evening(people=True)
    assert len(plain) == len(people) == 200
    assert {r.output_tokens for r in plain} == {ex.SHORT_TOKENS, ex.LONG_TOKENS}
    assert [(r.arrival, r.prompt_tokens, r.output_tokens) for r in plain] == \
        [(r.arrival, r.prompt_tokens, r.output_tokens) for r in people]
    assert {r.user for r in people} == {"a", "b"} and {r.priority for r in people} == {0, 1}
    assert len({r.user for r in plain}) == 1 and {r.priority for r in plain} == {0}
