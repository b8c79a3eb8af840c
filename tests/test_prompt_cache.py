"""The agent-fleet prompt-cache lesson (labkit.lessons.prompt_cache): the workload, the figures'
arithmetic, and (slow) what llama-server's prompt cache in RAM does with it, measured."""

import pandas as pd
import pytest

from labkit.lessons import llama_server
from labkit.lessons import prompt_cache as pc
from labkit.server.launch import ServerConfig


def test_the_fleet_sends_teams_in_turn_and_grows_each_conversation():
    w = pc.fleet(n_teams=3, agents_per_team=2, turns=2, n_rules=5)
    assert len(w.requests) == 12 and w.n_agents == 6
    assert [r.team for r in w.requests[:6]] == [0, 1, 2, 0, 1, 2]
    assert [r.agent for r in w.requests[:6]] == [0, 0, 0, 1, 1, 1]
    assert {r.turn for r in w.requests[6:]} == {1}
    assert [r.order for r in w.requests] == list(range(12))
    # each team's prompt differs from every other's after the first words, and has its rules
    assert len(set(w.systems)) == 3
    assert all(s.count("\nRule ") == 5 for s in w.systems)
    assert w.systems[0].split("\n")[1] != w.systems[1].split("\n")[1]
    # an agent asks a different question each turn
    q = {(r.team, r.agent, r.turn): r.question for r in w.requests}
    assert q[(0, 0, 0)] != q[(0, 0, 1)]
    with pytest.raises(ValueError):
        pc.fleet(n_teams=0)
    with pytest.raises(ValueError):
        pc.system_prompt(0, 0)


def test_a_prompt_holds_the_system_prompt_then_the_history_then_the_question():
    text = pc.prompt_text("SYS", [("q1", " a1 ")], "q2")
    assert text == "SYS\n\nUser: q1\nAssistant: a1\nUser: q2\nAssistant:"
    first = pc.prompt_text("SYS", [], "q1")
    assert first.startswith("SYS\n\nUser: q1") and text.startswith("SYS\n\nUser: q1\nAssistant:")


def _rows(reused, evaluated, previous, same_team, ttft):
    return pd.DataFrame({"reused": reused, "evaluated": evaluated,
                         "prompt_tokens": [a + b for a, b in zip(reused, evaluated)],
                         "previous": previous, "same_team": same_team, "ttft_ms": ttft})


def test_the_summary_counts_reuse_and_the_requests_on_another_teams_slot():
    rows = _rows([0, 0, 400, 10], [400, 410, 10, 400], ["", "", "1/0", "0/0"],
                 [False, False, False, True], [100.0, 120.0, 20.0, 90.0])
    s = pc.summary(rows)
    assert s["requests"] == 4
    assert s["reused share"] == pytest.approx(410 / 1630)
    assert s["evaluated"] == pytest.approx((400 + 410 + 10 + 400) / 4)
    assert s["TTFT ms"] == pytest.approx(82.5)
    # only request 2 landed on a slot another team (team 1) used last
    assert s["on another team's slot"] == 1 and s["evaluated there"] == 10
    late = pc.summary(rows, skip_first=2)
    assert late["requests"] == 2 and late["reused"] == pytest.approx(205)
    with pytest.raises(ValueError):
        pc.summary(rows, skip_first=4)


def test_the_runs_name_their_server_and_flags():
    base = ServerConfig(n_ctx=1024, n_slots=2, kv_unified=False)
    labels = [label for label, _ in pc.configurations(base, "xllamacpp")]
    assert labels == ["labkit", "llama-server", "llama-server --cache-ram 0",
                      "llama-server -sps 0", "llama-server -sps 0.9"]
    assert [label for label, _ in pc.configurations(base, None)] == ["labkit"]
    cfgs = dict(pc.configurations(base, "xllamacpp"))
    assert pc.flags(cfgs["llama-server --cache-ram 0"]) == (
        "-c 1024 -np 2 --no-kv-unified --slot-prompt-similarity 0.1 --cache-ram 0")
    assert cfgs["labkit"].kind == "labkit" and cfgs["llama-server -sps 0"].slot_prompt_similarity == 0


@pytest.mark.slow
@pytest.mark.skipif(not llama_server.reference_installed(), reason="no llama-server here")
def test_llama_servers_cache_in_ram_restores_another_teams_evicted_prefix():
    """Measured on llama-server (xllamacpp 2026.10.11549), three teams taking turns on two
    slots: with its cache in RAM on (the default), a request that lands on a slot another team
    used last reuses its own team's whole system prompt (cache_n); with --cache-ram 0 it reuses
    only the words all the teams' prompts begin with, as labkit's server does."""
    work = pc.fleet(n_teams=3, agents_per_team=1, turns=2, n_rules=4)
    base = ServerConfig(n_ctx=1024, n_slots=2, kv_unified=False)
    runs = {r.label: r for r in pc.compare(base, work, n_predict=2, labels=(
        "labkit", "llama-server", "llama-server --cache-ram 0"))}
    shared = min(len(s) for s in work.systems)  # characters; the prompts are ~100+ tokens
    assert shared > 300
    for label, run in runs.items():
        later = run.rows.iloc[3:]            # the second round: every prompt was read once
        assert (~later["same_team"]).all(), (label, later)  # three teams, two slots
        if label == "llama-server":
            assert (later["reused"] >= 0.8 * later["prompt_tokens"]).all(), later
        else:
            assert (later["reused"] <= 5).all(), (label, later)
        assert len(run.slots) == 2
