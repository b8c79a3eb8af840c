"""The engine's pure logic (scheduler, slot states, stop strings, UTF-8 streaming, timings,
config): no model needed."""

import tracemalloc
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.engine.config import EngineConfig
from labkit.engine.request import Request, RequestHandle, Timings, usage
from labkit.engine.sampling import SamplingParams, StopMatcher, TextStream, complete_utf8
from labkit.engine.trace import Metrics, Trace
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


def test_choose_slot_is_llama_servers_get_available_slot():
    """tools/server/server-context.cpp, get_available_slot: the match reads the free slots'
    tokens whatever the request's cache_prompt (the engine's call passes none)."""
    slots = [slot(0, [7], t_last_used=3), slot(1, [8], t_last_used=1), slot(2, [9], t_last_used=2)]
    slots[0].tokens = [1, 2, 3]
    assert choose_slot(slots, [1, 2, 3, 4]).id == 0
    # among equal matches, the first in slot order (a strictly better match replaces it)
    slots[2].tokens = [1, 2, 3, 9]
    assert choose_slot(slots, [1, 2, 3, 4]).id == 0
    slots[2].tokens = [1, 2, 3, 4, 5]
    assert choose_slot(slots, [1, 2, 3, 4]).id == 2


def test_choose_slot_breaks_age_ties_by_slot_order_unlike_llama_server():
    """The one listed difference (docs/ENGINE.md): among equally old slots labkit takes the
    first, llama-server's loop (``t_last_used <= t_last``) the last."""
    def llama_servers(free):
        ret = None
        for s in free:
            if ret is None or s.t_last_used <= ret.t_last_used:
                ret = s
        return ret
    fresh = [slot(0), slot(1), slot(2), slot(3)]
    assert choose_slot(fresh, [1, 2, 3]).id == 0
    assert llama_servers(fresh).id == 3
    # ages apart, the two rules agree
    aged = [slot(0, t_last_used=4), slot(1, t_last_used=2), slot(2, t_last_used=5)]
    assert choose_slot(aged, [1]).id == llama_servers(aged).id == 1


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
    assert "".join(out) == "héllo 🐱 wörld" and ts.flush() == b""


def test_text_stream_keeps_a_cut_character_out_of_the_text():
    ts = TextStream()
    assert ts.push("ok 🐱".encode()[:5]) == "ok " and ts.pending
    assert ts.flush() == "🐱".encode()[:2] and not ts.pending
    assert ts.push(b"x") == "x"   # a fresh start after the flush


@pytest.mark.parametrize("raw,n", [(b"", 0), (b"abc", 3), ("é".encode(), 2),
                                   ("é".encode()[:1], 0), (b"a" + "🐱".encode()[:3], 1),
                                   ("🐱".encode(), 4), (b"\x9f\x98", 2)])
def test_complete_utf8_is_llama_servers_validate_utf8(raw, n):
    assert complete_utf8(raw) == n


def test_penalties_are_off_at_llama_servers_defaults():
    assert not SamplingParams().penalized
    assert SamplingParams(repeat_penalty=1.1).penalized
    assert SamplingParams(frequency_penalty=0.5).penalized
    assert SamplingParams(presence_penalty=-0.5).penalized
    assert not SamplingParams(repeat_penalty=1.5, repeat_last_n=0).penalized


def test_metrics_count_every_requests_tokens():
    m = Metrics()
    m.on_finished(5, 0.5)
    m.on_finished(3, 0.25, completed=False)   # cancelled or failed: its tokens count too
    snap = m.snapshot(0, 0)
    assert (snap["tokens_predicted_total"], snap["requests_finished_total"]) == (8, 1)
    assert snap["tokens_predicted_seconds_total"] == 0.75


def test_config_follows_llama_server_rules():
    auto = EngineConfig("m.gguf", n_slots="auto")
    assert (auto.slots, auto.unified) == (4, True)
    explicit = EngineConfig("m.gguf", n_slots=4)
    assert (explicit.slots, explicit.unified) == (4, False)
    assert EngineConfig("m.gguf", n_slots=2, kv_unified=True).unified
    assert EngineConfig("m.gguf", n_slots="auto", kv_unified=False).unified   # as llama-server
    with pytest.raises(ValueError):
        EngineConfig("m.gguf", n_slots="many")
    with pytest.raises(ValueError):
        EngineConfig("m.gguf", n_slots=1, type_k="q3_x")


# ---------------------------------------------------------------- slot states

class FakeSampler:
    closed = False

    def close(self):
        self.closed = True


def seated(tokens=(1, 2, 3), prompt=(1, 2, 3, 4, 5), stop=(), n_cached=3):
    """A slot holding ``tokens`` that has just taken a request for ``prompt``."""
    s = slot(0, tokens, t_last_used=1.0)
    req = Request(list(prompt), SamplingParams(stop=list(stop)))
    s.start(req, RequestHandle(req, wake=lambda: None), FakeSampler(), n_cached=n_cached,
            reserved=10)
    return s


def test_slot_start_prompt_done_free_cycle():
    s = seated()
    assert (s.state, s.busy, s.n_cached, s.reserved, s.prompt_left()) == (PREFILL, True, 3, 10, 2)
    assert isinstance(s.text, TextStream) and s.stop is None
    s.tokens.extend([4, 5])
    s.n_prompt_done = 2
    s.prompt_done(2.0)
    assert (s.state, s.t_first) == (GENERATING, 2.0)
    sampler = s.sampler
    s.free(5.0)
    assert (s.state, s.busy, s.t_last_used) == (IDLE, False, 5.0)
    assert sampler.closed
    assert s.tokens == [1, 2, 3, 4, 5]  # the cache outlives the request
    assert (s.request, s.handle, s.sampler, s.text, s.stop) == (None,) * 5
    assert (s.n_decoded, s.n_cached, s.n_prompt_done, s.reserved, s.sampled, s.i_batch) == (
        0, 0, 0, 0, -1, -1)


def test_slot_frees_from_prefill():
    s = seated()
    s.free(3.0)
    assert s.state == IDLE and s.t_last_used == 3.0
    s.start(Request([1, 2, 9], SamplingParams()), None, FakeSampler(), n_cached=3)
    assert s.state == PREFILL


def test_slot_transitions_refuse_the_wrong_state():
    s = slot(0)
    with pytest.raises(RuntimeError):
        s.prompt_done(1.0)
    with pytest.raises(RuntimeError):
        s.free(1.0)
    s = seated()
    with pytest.raises(RuntimeError):
        s.start(s.request, s.handle, FakeSampler(), n_cached=3)
    s.prompt_done(1.0)
    with pytest.raises(RuntimeError):
        s.prompt_done(2.0)
    with pytest.raises(ValueError):  # the KV mirror must be trimmed to the cached prefix first
        seated(tokens=(1, 2, 3, 7), n_cached=3)


def test_slot_text_holds_back_stop_prefixes_and_stops_at_a_match():
    s = seated(stop=["END"])
    assert isinstance(s.stop, StopMatcher)
    assert s.push_text(b"abE") == ("ab", False)
    assert s.flush_text() == ("E", b"")
    assert s.completion() == "abE" and s.stop_word == ""
    s = seated(stop=["END", "and"])
    assert s.push_text(b"xEN") == ("x", False)
    assert s.push_text(b"D and more") == ("", True)
    assert s.text is None and s.flush_text() == ("", b"") and s.completion() == "x"
    assert s.stop_word == "END"
    s = seated()
    assert s.push_text("é".encode()[:1]) == ("", False) and s.text_pending  # half a character
    assert s.flush_text() == ("", "é".encode()[:1])                        # is never sent
    assert s.completion() == ""


def test_timings_dict_and_slot_timings():
    zero = Timings().as_dict()
    assert list(zero) == ["cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms",
                          "prompt_per_second", "predicted_n", "predicted_ms",
                          "predicted_per_token_ms", "predicted_per_second"]
    assert all(v == 0 for v in zero.values())
    t = Timings(cache_n=2, prompt_n=10, prompt_ms=20.0, predicted_n=5, predicted_ms=50.0).as_dict()
    assert (t["prompt_per_token_ms"], t["prompt_per_second"]) == (2.0, 500.0)
    assert (t["predicted_per_token_ms"], t["predicted_per_second"]) == (10.0, 100.0)
    s = seated()
    s.t_start, s.n_prompt_done = 1.0, 2
    assert s.timings(1.5) == Timings(3, 2, 500.0, 0, 0.0)  # still reading its prompt
    s.prompt_done(2.0)
    s.n_decoded, s.t_last = 4, 2.25
    assert s.timings(9.0) == Timings(3, 2, 1000.0, 4, 250.0)
    assert usage(5, 4) == {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}


def test_cancel_wakes_the_engine():
    woken = []
    req = Request([1], SamplingParams())
    h = RequestHandle(req, wake=lambda: woken.append(True))
    h.cancel()
    assert req.cancelled and woken == [True]


# ---------------------------------------------------------------- chat template rules

TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</>{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")


def test_chat_template_joins_text_parts_and_continues_a_prefill():
    from labkit.engine.chat import ChatTemplate, prefill
    t = ChatTemplate(TEMPLATE)
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert t.render([{"role": "user", "content": parts}]) == "<user>a\nb</><assistant>"
    assert t.render([{"role": "user", "content": "x"}], add_generation_prompt=False) == \
        "<user>x</>"
    chat = [{"role": "user", "content": "x"}, {"role": "assistant", "content": parts}]
    assert prefill(chat) == "a\n\nb" and prefill(chat[:1]) == ""
    assert t.render(chat, add_generation_prompt=False) == "<user>x</><assistant>a\n\nb"
    with pytest.raises(ValueError, match="2 or more assistant messages"):
        t.render(chat[:1] + [{"role": "assistant", "content": "y"}] + chat[1:])


def test_chat_template_does_not_repeat_the_tokens_the_tokenizer_adds():
    from labkit.engine.chat import ChatTemplate
    t = ChatTemplate("{{ bos_token }}{{ messages[0]['content'] }}{{ eos_token }}", "<s>", "</s>",
                     add_bos=True, add_eos=False)
    assert t.render([{"role": "user", "content": "x"}]) == "x</s>"


# ---------------------------------------------------------------- the step trace

def _add_steps(trace, n, busy):
    for i in range(n):
        trace.add(i * 0.01, i * 0.01 + 0.005, busy, 0, 0, busy, 100 + i, 100 + i, busy,
                  tuple((s, "decode", 1, 7 + s) for s in range(busy)))


def test_the_trace_keeps_the_last_20000_steps():
    # A server that runs for hours must not keep every step: the trace once kept 100 000
    # of them (about 60 MB with 4 busy slots), the steady part of a soak's RSS growth.
    t = Trace(4)
    _add_steps(t, 30_000, 4)
    kept = t.records()
    assert len(kept) == 20_000 and t.n_steps == 30_000
    assert [kept[0][0], kept[-1][0]] == [10_000, 29_999]   # the newest, numbered on
    assert len(t.steps_df()) == 20_000 and len(t.slots_df()) == 4 * 20_000


def test_the_trace_keeps_fewer_steps_when_many_slots_are_busy():
    t = Trace(64)
    _add_steps(t, 3_000, 64)
    kept = t.records()
    assert sum(len(r[10]) for r in kept) <= 80_000 and len(kept) == 80_000 // 64
    assert kept[-1][0] == 2_999
    t.clear()
    _add_steps(t, 10, 64)            # clearing forgets the entries it dropped
    assert len(t.records()) == 10


def test_a_full_trace_holds_about_15_mb():
    held = []
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        t = Trace(16)
        _add_steps(t, 30_000, 4)           # 20 000 steps of 4 busy slots
        held.append(tracemalloc.get_traced_memory()[0] - before)
        _add_steps(t, 6_000, 16)           # 5 000 steps of 16
        held.append(tracemalloc.get_traced_memory()[0] - before)
    finally:
        tracemalloc.stop()
    assert len(t.records()) == 80_000 // 16
    assert max(held) < 16 * 2**20, [f"{h / 2**20:.1f} MB" for h in held]


def test_choose_slot_similarity_zero_is_least_recently_used_alone():
    """llama-server's --slot-prompt-similarity 0 turns the match off (get_available_slot
    skips it), so the slot holding the whole prompt is passed over for the oldest one."""
    slots = [slot(0, [1, 2, 3, 4], t_last_used=5), slot(1, [8], t_last_used=1)]
    assert choose_slot(slots, [1, 2, 3, 4, 5], similarity=0.1).id == 0
    assert choose_slot(slots, [1, 2, 3, 4, 5], similarity=0.0).id == 1
    # a high threshold: 4 of 5 tokens shared is 0.8, not more than 0.9
    assert choose_slot(slots, [1, 2, 3, 4, 5], similarity=0.9).id == 1
