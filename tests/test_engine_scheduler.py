"""The engine's pure logic (scheduler, stop strings, UTF-8 streaming, config): no model needed."""

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.engine.config import EngineConfig
from labkit.engine.sampling import StopMatcher, TextStream
from labkit.engine.scheduler import (choose_slot, common_prefix, plan_step, reservation,
                                     reserve_room, reused_prefix)
from labkit.engine.slot import GENERATING, IDLE, PREFILL, Slot


def slot(i, tokens=(), state=IDLE, t_last_used=-1.0, prompt=None, reserved=0):
    s = Slot(i, n_ctx=1024, tokens=list(tokens), state=state, t_last_used=t_last_used)
    s.reserved = reserved
    if prompt is not None:
        s.request = SimpleNamespace(prompt=list(prompt))
    return s


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([1, 2], [1, 2, 3]) == 2


def test_choose_slot_prefers_longest_cached_prefix():
    slots = [slot(0, [9, 9], t_last_used=0), slot(1, [1, 2, 3, 4], t_last_used=5),
             slot(2, [1, 2], t_last_used=1)]
    assert choose_slot(slots, [1, 2, 3, 4, 5]).id == 1


def test_choose_slot_falls_back_to_least_recently_used():
    slots = [slot(0, [7], t_last_used=3), slot(1, [8], t_last_used=1), slot(2, [9], t_last_used=2)]
    assert choose_slot(slots, [1, 2, 3]).id == 1
    # a shared prefix below the similarity threshold (10% of the prompt) does not count
    slots[0].tokens = [1]
    assert choose_slot(slots, [1] + [5] * 20).id == 1
    # without prompt caching the cache is ignored
    slots[0].tokens = [1, 2, 3]
    assert choose_slot(slots, [1, 2, 3], cache_prompt=False).id == 1


def test_choose_slot_skips_busy_slots():
    slots = [slot(0, [1, 2, 3], state=GENERATING), slot(1)]
    assert choose_slot(slots, [1, 2, 3]).id == 1
    slots[1].state = PREFILL
    assert choose_slot(slots, [1, 2, 3]) is None


def test_reused_prefix_always_leaves_one_token_to_compute():
    assert reused_prefix([1, 2, 3], [1, 2, 3], True) == 2
    assert reused_prefix([1, 2, 3, 4], [1, 2, 9], True) == 2
    assert reused_prefix([1, 2, 3], [1, 2, 3], False) == 0


def test_reservation():
    assert reservation(100, 50, 1024) == 150
    assert reservation(100, None, 1024) == 1024
    assert reservation(1000, 500, 1024) == 1024


def test_reserve_room_counts_reservations_and_purges_idle_lru_first():
    busy = slot(0, [1] * 10, state=GENERATING, reserved=300)
    old = slot(1, [2] * 100, t_last_used=1)
    new = slot(2, [3] * 100, t_last_used=2)
    chosen = slot(3)
    slots = [busy, old, new, chosen]
    # 512 cells: 300 reserved by the busy slot, 200 cached by idle slots, 12 free
    assert reserve_room(slots, chosen, 12, 512) == (True, [])
    assert reserve_room(slots, chosen, 100, 512) == (True, [old])
    assert reserve_room(slots, chosen, 212, 512) == (True, [old, new])
    assert reserve_room(slots, chosen, 213, 512) == (False, [])


def test_plan_step_decodes_first_then_chunks_prompts():
    gen = [slot(0, [1] * 5, state=GENERATING), slot(1, [1] * 5, state=GENERATING)]
    pre = [slot(2, [], state=PREFILL, prompt=[1] * 10), slot(3, [1] * 2, state=PREFILL, prompt=[1] * 10)]
    work = plan_step(gen + pre, [pre[1], pre[0]], n_batch=8)
    assert [(w.slot.id, w.action, w.n) for w in work] == [
        (0, "decode", 1), (1, "decode", 1), (3, "prefill", 6)]
    work = plan_step(gen + pre, [pre[1], pre[0]], n_batch=20)
    assert [(w.slot.id, w.n) for w in work] == [(0, 1), (1, 1), (3, 8), (2, 10)]


def test_plan_step_without_continuous_batching_waits_for_generation():
    gen = slot(0, [1] * 5, state=GENERATING)
    pre = slot(1, [], state=PREFILL, prompt=[1] * 10)
    assert [w.action for w in plan_step([gen, pre], [pre], 64, cont_batching=False)] == ["decode"]
    gen.state = IDLE
    assert [w.action for w in plan_step([gen, pre], [pre], 64, cont_batching=False)] == ["prefill"]


@given(st.lists(st.tuples(st.sampled_from([IDLE, PREFILL, GENERATING]),
                          st.integers(1, 300), st.integers(0, 299)), min_size=1, max_size=8),
       st.integers(8, 512), st.booleans())
def test_plan_step_properties(spec, n_batch, cont):
    slots = []
    for i, (state, n_prompt, done) in enumerate(spec):
        done = min(done, n_prompt - 1)
        slots.append(slot(i, [0] * done, state=state, prompt=[0] * n_prompt))
    work = plan_step(slots, [s for s in slots if s.state == PREFILL], n_batch, cont)
    gen = [s for s in slots if s.state == GENERATING]
    assert sum(w.n for w in work) <= max(n_batch, len(gen))
    assert sorted(w.slot.id for w in work if w.action == "decode") == [s.id for s in gen]
    for w in work:
        if w.action == "prefill":
            assert 0 < w.n <= w.slot.prompt_left()
    if not cont and gen:
        assert all(w.action == "decode" for w in work)


def test_stop_matcher_holds_back_possible_prefixes():
    m = StopMatcher(["</end>"])
    assert m.push("Hello <") == ("Hello ", False)
    assert m.push("/en") == ("", False)
    assert m.push("d> more") == ("", True)
    m = StopMatcher(["STOP"])
    assert m.push("ST") == ("", False)
    assert m.push("OX") == ("STOX", False)
    assert m.flush() == ""
    m = StopMatcher(["ab"])
    assert m.push("xa") == ("x", False)
    assert m.flush() == "a"


@given(st.text(min_size=0, max_size=40), st.lists(st.integers(1, 6), max_size=20))
def test_stop_matcher_equals_find_on_the_whole_text(text, cuts):
    stops = ["<|", "END", "é!"]
    m, out, pos, stopped = StopMatcher(stops), [], 0, False
    for c in cuts + [len(text)]:
        piece, pos = text[pos:pos + c], pos + c
        rel, stopped = m.push(piece)
        out.append(rel)
        if stopped:
            break
    if not stopped:
        out.append(m.flush())
    hits = [text.find(s) for s in stops if s in text]
    expected = text[:min(hits)] if hits else text
    assert "".join(out) == expected


def test_text_stream_never_splits_a_character():
    data = "héllo 🐱 wörld".encode()
    ts = TextStream()
    out = [ts.push(data[i:i + 1]) for i in range(len(data))]
    assert all("\ufffd" not in o for o in out)
    assert "".join(out) + ts.flush() == "héllo 🐱 wörld"


def test_config_follows_llama_server_rules():
    auto = EngineConfig("m.gguf", n_slots="auto")
    assert (auto.slots, auto.unified) == (4, True)
    explicit = EngineConfig("m.gguf", n_slots=4)
    assert (explicit.slots, explicit.unified) == (4, False)
    assert EngineConfig("m.gguf", n_slots=2, kv_unified=True).unified
    assert not EngineConfig("m.gguf", n_slots="auto", kv_unified=False).unified
    with pytest.raises(ValueError):
        EngineConfig("m.gguf", n_slots="many")
    with pytest.raises(ValueError):
        EngineConfig("m.gguf", type_k="q3_x")
