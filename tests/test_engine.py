"""The slot engine against the real embedded model on the CPU (no mocks of llama.cpp)."""

import json
import logging
import math
import threading
import time

import pytest

from labkit.models import kv
from labkit.engine import (ContextExceeded, Engine, EngineConfig, FinalEvent, QueueFull,
                           SamplingParams, TokenEvent)
from labkit.engine.trace import SLOT_COLUMNS, STEP_COLUMNS

pytestmark = pytest.mark.slow

GREEDY = dict(temperature=0)
NAMES = ["Alice", "Bob", "Carol", "Dan", "Eve", "Frank", "Grace", "Heidi", "Ivan", "Judy",
         "Mallory", "Oscar"]
JSON_SYSTEM = 'Answer with one JSON object like {"name": "...", "age": 0} and nothing else.'


def chat(engine, user, system=None):
    msgs = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}]
    return engine.tokenize(engine.apply_template(msgs))


def long_prompt(engine, n):
    """Exactly n tokens of filler text."""
    toks = engine.tokenize("The quick brown fox jumps over the lazy dog. " * (n // 5 + 4))
    return toks[:n]


@pytest.fixture(scope="module")
def eng(model_path):
    """4 split slots of 512 tokens each."""
    with Engine(EngineConfig(model_path, n_ctx=2048, n_slots=4)) as e:
        yield e


@pytest.fixture(scope="module")
def eng1(model_path):
    with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1)) as e:
        yield e


def wait_for(cond, timeout=30.0):
    t = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > t:
            raise TimeoutError("condition not reached")
        time.sleep(0.005)


# ---------------------------------------------------------------- sizes and startup

@pytest.mark.parametrize("unified", [False, True])
def test_facts_match_kv_arithmetic_and_llama_cpp(model_path, unified):
    import llama_cpp
    for n_slots in (1, 2, 4):
        with Engine(EngineConfig(model_path, n_ctx=16384, n_slots=n_slots,
                                 kv_unified=unified)) as e:
            f = e.facts
            planned = kv.slot_context(16384, n_slots, unified, n_ctx_train=f["n_ctx_train"])
            assert f["n_ctx_seq"] == llama_cpp.llama_n_ctx_seq(e.ctx.ptr) == planned.n_ctx_seq
            assert f["n_ctx"] == planned.n_ctx
            assert f["n_ctx_slot"] == planned.n_ctx_slot == min(planned.n_ctx_seq, 8192)
            assert (f["n_slots"], f["kv_unified"]) == (n_slots, unified)
            if not unified:
                assert f["n_ctx_seq"] == 16384 // n_slots


def test_startup_log_lines(model_path, caplog):
    caplog.set_level(logging.INFO, logger="labkit.engine")
    with Engine(EngineConfig(model_path, n_ctx=1024, n_slots="auto", kv_unified_per_slot=512)) as e:
        assert e.facts["kv_unified"] and e.facts["n_slots"] == 4
        assert e.facts["n_ctx_slot"] == 512
    text = caplog.text
    assert "n_ctx         = 1024" in text and "n_ctx_seq     = 1024" in text
    assert "initializing, n_slots = 4, n_ctx_slot = 512, kv_unified = 'true'" in text
    assert "n_ctx_seq" in text and any(r.name == "labkit.engine.llama" for r in caplog.records)


def test_ctx_size_zero_with_a_slot_cap_sizes_the_pool_by_the_cap(model_path):
    """-c 0 --kv-unified-per-slot N, as llama-server does it (measured on the xllamacpp wheel:
    "sizing KV pool to n_parallel * kv_unified_per_slot = 2 * 1024 = 2048"), split or unified."""
    for unified in (True, False):
        with Engine(EngineConfig(model_path, n_ctx=0, n_slots=2, kv_unified=unified,
                                 kv_unified_per_slot=1024)) as e:
            assert (e.facts["n_ctx"], e.facts["n_ctx_slot"]) == (2048, 1024), e.facts


def test_ctx_size_zero_is_the_training_context(model_path):
    """-c 0, as in llama-server: the model's own training context, shared by the slots."""
    with Engine(EngineConfig(model_path, n_ctx=0, n_slots=2, kv_unified=False)) as e:
        train = e.facts["n_ctx_train"]
        assert e.facts["n_ctx"] == train and e.facts["n_ctx_seq"] == train // 2


def test_a_request_cancelled_before_its_first_token_has_no_stale_timings(model_path):
    with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1)) as e:
        first = e.submit(e.tokenize("Say hi."), SamplingParams(max_tokens=4))
        first.result(60)
        second = e.submit(e.tokenize("Count to one hundred:"), SamplingParams(max_tokens=200))
        second.cancel()
        t = second.result(30).timings
        assert t["prompt_ms"] >= 0 and t["predicted_ms"] >= 0, t


def test_close_leaves_no_thread(model_path):
    e = Engine(EngineConfig(model_path, n_ctx=512, n_slots=1))
    h = e.submit(e.tokenize("Count to one hundred:"), SamplingParams(max_tokens=500, ignore_eos=True))
    e.close()
    assert h.result(5).finish_reason == "cancelled"
    assert not [t for t in threading.enumerate() if t.name == "labkit-engine"]
    e.close()  # twice is fine


# ---------------------------------------------------------------- batching

def test_concurrent_greedy_matches_single_slot(eng, eng1):
    prompts = [chat(eng, q) for q in ("Name three colors.", "What is 2+2?",
                                      "Say hello in French.", "List two fruits.")]
    params = SamplingParams(max_tokens=24, **GREEDY)
    alone = [eng1.submit(p, params).result().text for p in prompts]
    handles = [eng.submit(p, params) for p in prompts]
    together = [h.result().text for h in handles]
    # On this CPU build a row's logits do not depend on the batch it shares,
    # so greedy decoding is identical token for token.
    assert together == alone
    steps = eng.trace_df()
    assert steps.n_decode.max() == 4


def test_twelve_json_requests_on_four_slots(eng):
    prompts = [chat(eng, f"{n} is {20 + i} years old.", JSON_SYSTEM) for i, n in enumerate(NAMES)]
    handles = [eng.submit(p, SamplingParams(max_tokens=60, json_object=True, **GREEDY))
               for p in prompts]
    finals = [h.result(120) for h in handles]
    # Every request is answered; the answers that end end as one JSON object. At most one may
    # run to max_tokens: on a 2-core AMD EPYC with AVX2 and no AVX-512 (2026-12-02) the greedy
    # answer for Heidi kept adding keys ("gender", "gender_role", ...) for all 60 tokens,
    # where on the AVX-512 machine it stopped after "age".
    ended = [f for f in finals if f.finish_reason == "stop"]
    assert len(finals) == 12 and len(ended) >= 11, [f.finish_reason for f in finals]
    assert {f.finish_reason for f in finals} <= {"stop", "length"}
    for f in ended:
        assert isinstance(json.loads(f.text), dict), f.text
    assert sum(n in f.text for n, f in zip(NAMES, finals)) >= 10
    assert max(s["is_processing"] for s in eng.slots()) is False


def test_json_schema_constrains_output(eng):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    f = eng.submit(chat(eng, "Bob is 41 years old.", JSON_SYSTEM),
                   SamplingParams(max_tokens=60, json_schema=schema, **GREEDY)).result()
    obj = json.loads(f.text)
    assert set(obj) == {"name", "age"} and isinstance(obj["age"], int)


def _mixed_steps(engine):
    engine.clear_trace()
    first = engine.submit(chat(engine, "Write a long story about a dragon."),
                          SamplingParams(max_tokens=40, ignore_eos=True, **GREEDY))
    wait_for(lambda: engine.slots()[0]["n_decoded"] >= 3 or any(
        s["n_decoded"] >= 3 for s in engine.slots()))
    second = engine.submit(chat(engine, "Now tell me about the sea, please."),
                           SamplingParams(max_tokens=5, **GREEDY))
    first.result(), second.result()
    df = engine.trace_df()
    return df[(df.n_decode > 0) & (df.n_prefill_tokens > 0)], df


def test_continuous_batching_mixes_prefill_and_decode(eng):
    mixed, df = _mixed_steps(eng)
    assert len(mixed) >= 1
    row = mixed.iloc[0]
    assert row.n_tokens == row.n_decode + row.n_prefill_tokens
    slots = eng.slot_trace_df()
    actions = set(slots[slots.step == row.step].action)
    assert {"decode", "prefill"} <= actions


def test_no_cont_batching_never_mixes(model_path):
    with Engine(EngineConfig(model_path, n_ctx=1024, n_slots=2, cont_batching=False)) as e:
        mixed, df = _mixed_steps(e)
        assert len(mixed) == 0
        assert (df.n_prefill_tokens > 0).sum() >= 2


def test_trace_tables(eng):
    eng.submit(chat(eng, "Hi"), SamplingParams(max_tokens=3, **GREEDY)).result()
    steps, slots = eng.trace_df(), eng.slot_trace_df()
    assert list(steps.columns[:len(STEP_COLUMNS)]) == STEP_COLUMNS
    assert list(slots.columns) == SLOT_COLUMNS
    assert len(slots) == 4 * len(steps)
    assert (steps.dur_s > 0).all() and (steps.t_end >= steps.t_start).all()
    assert (steps.attended >= steps.n_tokens).all()
    assert set(slots.action) <= {"prefill", "decode", "idle"}
    eng.clear_trace()
    assert len(eng.trace_df()) == 0


# ---------------------------------------------------------------- limits

def test_context_exceeded_at_submit(eng):
    n_ctx_slot = eng.facts["n_ctx_slot"]
    assert n_ctx_slot == 512
    with pytest.raises(ContextExceeded) as exc:
        eng.submit(long_prompt(eng, 600), SamplingParams())
    assert (exc.value.n_prompt_tokens, exc.value.n_ctx) == (600, 512)
    assert str(exc.value) == ("request (600 tokens) exceeds the available context size "
                              "(512 tokens), try increasing it")
    with pytest.raises(ContextExceeded):
        eng.submit(long_prompt(eng, 512), SamplingParams())  # >=, as llama-server
    assert eng.metrics()["requests_deferred"] == 0


def test_slot_fills_with_finish_reason_length(model_path):
    with Engine(EngineConfig(model_path, n_ctx=512, n_slots=2)) as e:  # 256 per slot
        f = e.submit(long_prompt(e, 230), SamplingParams(ignore_eos=True, **GREEDY)).result()
        assert f.finish_reason == "length"
        assert f.usage["total_tokens"] == 256
        assert max(e.trace_df().kv_used) <= 255


def test_unified_pool_exhaustion_fails_every_request_in_flight(model_path):
    """As llama-server: when not even one token fits, every request in flight ends with
    'Context size has been exceeded.' and the engine keeps serving."""
    cfg = EngineConfig(model_path, n_ctx=256, n_slots=2, kv_unified=True)  # one 256-cell pool
    with Engine(cfg) as e:
        params = SamplingParams(ignore_eos=True, **GREEDY)
        a = e.submit(long_prompt(e, 80), params)
        b = e.submit(long_prompt(e, 90), params)
        finals = [a.result(60), b.result(60)]
        assert [f.finish_reason for f in finals] == ["error", "error"]
        assert {f.error for f in finals} == {"Context size has been exceeded."}
        assert e.metrics()["n_decode_failed_total"] >= 1
        assert all(s["n_tokens"] == 0 for s in e.slots())      # their caches were cleared
        ok = e.submit(e.tokenize("Hello"), SamplingParams(max_tokens=4, **GREEDY)).result(30)
        assert ok.finish_reason == "length" and ok.usage["completion_tokens"] == 4


def test_reserve_admission_avoids_exhaustion(model_path):
    cfg = EngineConfig(model_path, n_ctx=256, n_slots=2, kv_unified=True, reserve=True)
    with Engine(cfg) as e:
        params = SamplingParams(max_tokens=60, ignore_eos=True, **GREEDY)
        hs = [e.submit(long_prompt(e, 80), params), e.submit(long_prompt(e, 90), params)]
        finals = [h.result(60) for h in hs]
        assert [f.finish_reason for f in finals] == ["length", "length"]
        assert e.metrics()["n_decode_failed_total"] == 0
        # 140 + 150 cells do not fit in 256 together: the second waited for the first
        slots = e.slot_trace_df()
        busy = slots[slots.action != "idle"].groupby("step").slot.nunique()
        assert busy.max() == 1


# ---------------------------------------------------------------- prompt cache

def test_prompt_cache_reuse(eng1):
    p = chat(eng1, "Tell me a fact about the moon.")
    params = SamplingParams(max_tokens=4, **GREEDY)
    eng1.submit(p, params).result()
    again = eng1.submit(p, params).result()
    assert again.timings["cache_n"] == len(p) - 1 and again.timings["prompt_n"] == 1
    longer = eng1.submit(p + eng1.tokenize(" More.", add_special=False), params).result()
    assert longer.timings["cache_n"] >= len(p) - 1
    off = eng1.submit(p, SamplingParams(max_tokens=4, cache_prompt=False, **GREEDY)).result()
    assert off.timings["cache_n"] == 0 and off.timings["prompt_n"] == len(p)
    assert eng1.slots()[0]["n_tokens"] == 0  # cleared
    assert again.text == off.text


# ---------------------------------------------------------------- control

def test_cancel_frees_the_slot(eng1):
    h = eng1.submit(chat(eng1, "Count from one to one thousand."),
                    SamplingParams(max_tokens=400, ignore_eos=True, **GREEDY))
    wait_for(lambda: eng1.slots()[0]["n_decoded"] >= 2)
    h.cancel()
    f = h.result(10)
    assert f.finish_reason == "cancelled" and 2 <= f.usage["completion_tokens"] < 400
    wait_for(lambda: not eng1.slots()[0]["is_processing"], 5)
    assert eng1.submit(chat(eng1, "Hi"), SamplingParams(max_tokens=2)).result(10).finish_reason


def test_queue_full(model_path):
    with Engine(EngineConfig(model_path, n_ctx=512, n_slots=1, max_queue=1)) as e:
        long = SamplingParams(max_tokens=300, ignore_eos=True)
        a = e.submit(e.tokenize("One"), long)
        wait_for(lambda: e.slots()[0]["is_processing"])
        b = e.submit(e.tokenize("Two"), long)
        with pytest.raises(QueueFull):
            e.submit(e.tokenize("Three"), long)
        assert e.metrics()["requests_deferred"] == 1
        b.cancel()
        a.cancel()
        assert b.result(10).finish_reason == "cancelled"
        assert a.result(10).finish_reason == "cancelled"


# ---------------------------------------------------------------- sampling and streaming

def test_events_stream_the_final_text(eng):
    h = eng.submit(chat(eng, "Name three animals."), SamplingParams(max_tokens=20, **GREEDY))
    events = list(h)
    assert isinstance(events[-1], FinalEvent)
    tokens = [ev for ev in events[:-1] if isinstance(ev, TokenEvent)]
    assert "".join(ev.text for ev in tokens) == events[-1].text
    final = events[-1]
    assert final.usage["completion_tokens"] == sum(1 for ev in tokens if ev.token >= 0)
    t = final.timings
    assert t["prompt_n"] + t["cache_n"] == final.usage["prompt_tokens"]
    assert t["predicted_n"] == final.usage["completion_tokens"]
    assert t["prompt_ms"] > 0 and t["predicted_per_second"] > 0


def test_on_event_callback(eng):
    got = []
    done = threading.Event()

    def on_event(ev):
        got.append(ev)
        if isinstance(ev, FinalEvent):
            done.set()

    h = eng.submit(chat(eng, "Hi"), SamplingParams(max_tokens=5, **GREEDY), on_event=on_event)
    assert done.wait(30)
    assert h.result(1) is got[-1]


def test_stop_strings(eng):
    p = chat(eng, "Name three colors.")
    full = eng.submit(p, SamplingParams(max_tokens=24, **GREEDY)).result().text
    stop = full[6:9]
    assert len(stop.strip()) > 0
    events = list(eng.submit(p, SamplingParams(max_tokens=24, stop=[stop], **GREEDY)))
    final = events[-1]
    assert final.finish_reason == "stop"
    cut = full[:full.find(stop)]
    assert final.text == cut
    assert "".join(ev.text for ev in events[:-1]) == cut


def test_seeded_sampling_is_reproducible(eng):
    p = chat(eng, "Write a sentence about rain.")
    runs = [eng.submit(p, SamplingParams(max_tokens=20, temperature=1.0, seed=1234)).result().text
            for _ in range(2)]
    assert runs[0] == runs[1]


def test_max_tokens_and_metrics(eng):
    f = eng.submit(chat(eng, "Tell me a story."), SamplingParams(max_tokens=7, ignore_eos=True,
                                                                 **GREEDY)).result()
    assert f.finish_reason == "length" and f.usage["completion_tokens"] == 7
    m = eng.metrics()
    for key in ("prompt_tokens_total", "prompt_seconds_total", "tokens_predicted_total",
                "tokens_predicted_seconds_total", "n_decode_total", "n_busy_slots_per_decode",
                "requests_processing", "requests_deferred"):
        assert key in m
    assert m["tokens_predicted_total"] >= 7 and m["n_decode_total"] > 0
    s = eng.slots()
    assert [x["id"] for x in s] == [0, 1, 2, 3]
    assert all(x["n_ctx"] == 512 and x["id_task"] == -1 for x in s)


# ---------------------------------------------------------------- as llama-server makes them

SMOL_SYSTEM = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
               "Hugging Face<|im_end|>\n")


@pytest.mark.parametrize("messages,prompt,n_tokens", [
    ([{"role": "user", "content": "Say hi"}],
     SMOL_SYSTEM + "<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\n", 32),
    ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi"}],
     "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nSay hi<|im_end|>\n"
     "<|im_start|>assistant\n", 21),
    ([{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi!"},
      {"role": "user", "content": "Again"}],
     SMOL_SYSTEM + "<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nHi!<|im_end|>\n"
     "<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n", 46),
    ([{"role": "user", "content": [{"type": "text", "text": "Say "},
                                   {"type": "text", "text": "hi"}]}],
     SMOL_SYSTEM + "<|im_start|>user\nSay \nhi<|im_end|>\n<|im_start|>assistant\n", 34),
    ([{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi"}],
     SMOL_SYSTEM + "<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nHi", 33),
], ids=["no-system", "system", "multi-turn", "text-parts", "prefill"])
def test_chat_template_renders_as_llama_server(eng1, messages, prompt, n_tokens):
    """The prompts and token counts llama-server's /apply-template and usage.prompt_tokens
    gave for the same messages on the same model."""
    assert eng1.apply_template(messages) == prompt
    assert len(eng1.tokenize(prompt)) == n_tokens


def test_chat_template_refuses_two_assistant_messages_at_the_end(eng1):
    with pytest.raises(ValueError, match="Cannot have 2 or more assistant messages"):
        eng1.apply_template([{"role": "user", "content": "hi"},
                             {"role": "assistant", "content": "a"},
                             {"role": "assistant", "content": "b"}])


def test_token_probabilities(eng):
    h = eng.submit(chat(eng, "Name three colors."), SamplingParams(max_tokens=8, n_probs=3,
                                                                   **GREEDY))
    events = list(h)
    final = events[-1]
    entries = [ev.probs for ev in events[:-1]]
    assert all(e is not None for e in entries) and final.probs == entries
    assert "".join(e["token"] for e in entries) == final.text
    for e in entries:
        top = e["top_logprobs"]
        assert len(top) == 3 and top[0]["id"] == e["id"]          # greedy: the likeliest
        assert e["logprob"] == pytest.approx(top[0]["logprob"])
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert sum(math.exp(t["logprob"]) for t in top) <= 1.0 + 1e-6
        assert all(bytes(t["bytes"]) == eng._pieces[t["id"]] for t in top)
    plain = eng.submit(chat(eng, "Name three colors."), SamplingParams(max_tokens=8, **GREEDY))
    assert plain.result().probs == [] and plain.result().text == final.text


def test_logit_bias_bans_and_pushes_tokens(eng):
    prompt = eng.tokenize("Hello")
    first = eng.submit(prompt, SamplingParams(max_tokens=1, **GREEDY)).result()
    banned = eng.tokenize(first.text, add_special=False)
    assert len(banned) == 1
    for bias in ([(banned[0], float("-inf"))], [(first.text, -100.0)]):
        other = eng.submit(prompt, SamplingParams(max_tokens=1, logit_bias=bias, **GREEDY))
        assert other.result().text != first.text
    pushed = eng.submit(prompt, SamplingParams(max_tokens=3, logit_bias=[(eng.tokenize(
        " zebra", add_special=False)[0], 100.0)], **GREEDY)).result()
    assert pushed.text == " zebra zebra zebra"
    ignored = eng.submit(prompt, SamplingParams(max_tokens=1, logit_bias=[(10**9, -100.0)],
                                                **GREEDY)).result()
    assert ignored.text == first.text      # ids outside the vocabulary are skipped


def test_penalties_see_the_prompt_and_the_answer(eng):
    prompt = eng.tokenize("one one one one one")

    def text(**kw):
        return eng.submit(prompt, SamplingParams(max_tokens=6, **GREEDY, **kw)).result().text
    plain = text()
    assert plain == "-to-many-to"           # llama-server's answer, unpenalised
    assert text(repeat_penalty=1.5) == "-toothed, it's"
    assert text(frequency_penalty=1.5) == "-to-many relations,"
    assert text(repeat_penalty=1.5, repeat_last_n=0) == plain


def test_stages_that_change_nothing_are_left_out_of_the_chain(eng):
    import llama_cpp

    from labkit.engine.sampling import Sampler
    vocab = eng.model.vocab

    def stages(**kw):
        s = Sampler(vocab, SamplingParams(**kw))
        try:
            return llama_cpp.llama_sampler_chain_n(s.ptr)
        finally:
            s.close()
    assert stages(temperature=0) == 1                        # greedy alone
    assert stages() == 5                                     # top_k, top_p, min_p, temp, dist
    assert stages(temperature=0, repeat_penalty=1.1, logit_bias=[(5, 1.0)]) == 3


def chain_pick(sampler, logits):
    """The token ``sampler``'s llama.cpp chain picks from ``logits`` (applied, not accepted)."""
    import ctypes

    import llama_cpp
    import numpy as np
    cur = (llama_cpp.llama_token_data * len(logits))()
    for i, x in enumerate(logits):
        cur[i].id, cur[i].logit, cur[i].p = i, float(x), 0.0
    arr = llama_cpp.llama_token_data_array(data=cur, size=len(logits), selected=-1, sorted=False)
    llama_cpp.llama_sampler_apply(sampler.ptr, ctypes.byref(arr))
    return int(np.int32(cur[arr.selected].id))


def test_the_engines_greedy_pick_is_the_chains(eng):
    """The engine picks a token for a greedy slot with numpy's argmax over its logits instead
    of running the llama.cpp chain (Sampler.argmax_only): on ties, bans, pushes and a ban of
    the largest logit, both give the same token. The chain keeps the first largest logit;
    taking the last one would give another token on the tie, and ignoring the biases another
    on the others."""
    import numpy as np
    from labkit.engine.sampling import Sampler
    vocab, n = eng.model.vocab, eng.n_vocab
    rng = np.random.default_rng(0)
    base = rng.normal(size=n).astype(np.float32)
    tie = base.copy()
    tie[[100, 2000]] = base.max() + 1.0                      # two equal largest logits
    top = int(base.argmax())
    cases = [
        ({}, tie, 100),
        ({"logit_bias": [(top, float("-inf"))]}, base, None),     # the largest one banned
        ({"logit_bias": [(7, 50.0)]}, base, 7),                    # a push that wins
        ({"logit_bias": [(7, 25.0), (7, 25.0)]}, base, 7),         # the same token twice
        ({"ignore_eos": True}, np.where(np.arange(n) == eng.eog[0], 99.0, base), None),
    ]
    for kw, logits, expected in cases:
        s = Sampler(vocab, SamplingParams(temperature=0, **kw), eng.eog)
        try:
            assert s.argmax_only
            ours = s.argmax_of(logits.astype(np.float32))
            assert ours == chain_pick(s, logits), kw
            if expected is not None:
                assert ours == expected
            assert ours != int(logits.argmax()) or not kw, kw      # the biases did something
        finally:
            s.close()
    assert int(len(tie) - 1 - tie[::-1].argmax()) == 2000          # the wrong rule differs
    for kw in ({}, {"temperature": 0, "repeat_penalty": 1.1},
               {"temperature": 0, "grammar": 'root ::= "a"'}):
        s = Sampler(vocab, SamplingParams(**kw), eng.eog)
        assert not s.argmax_only, kw                          # these run the chain
        s.close()


def test_a_character_cut_by_max_tokens_is_never_sent(eng):
    prompt = eng.tokenize("我爱")   # its next characters take three tokens each
    cut = list(eng.submit(prompt, SamplingParams(max_tokens=2, **GREEDY)))
    final = cut[-1]
    assert final.text == "" and len(cut) == 1 and final.partial    # nothing whole to send
    more = list(eng.submit(prompt, SamplingParams(max_tokens=4, **GREEDY)))
    assert more[-1].text == "爱" and more[-1].partial
    assert "".join(ev.text for ev in more[:-1]) == "爱"
    assert all("\ufffd" not in ev.text for ev in more[:-1])


def test_stop_word_is_reported(eng):
    f = eng.submit(eng.tokenize("The capital of France is"),
                   SamplingParams(max_tokens=16, stop=["."], n_probs=1, **GREEDY)).result()
    assert (f.text, f.stop_word, f.finish_reason) == (" Paris", ".", "stop")
    assert [e["token"] for e in f.probs] == [" Paris"]     # the stop string's token left out


def test_cancelled_requests_count_in_the_metrics(eng1):
    before = eng1.metrics()["tokens_predicted_total"]
    h = eng1.submit(chat(eng1, "Count from one to one thousand."),
                    SamplingParams(max_tokens=400, ignore_eos=True, **GREEDY))
    wait_for(lambda: eng1.slots()[0]["n_decoded"] >= 3)
    h.cancel()
    n = h.result(10).usage["completion_tokens"]
    assert eng1.metrics()["tokens_predicted_total"] - before == n >= 3


def test_a_full_unified_pool_fails_both_long_requests(model_path):
    """Two growing requests on -c 512 -np 2 --kv-unified (150-word prompts, 400 tokens each):
    both end with llama-server's error."""
    words = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet " * 15).split()
    with Engine(EngineConfig(model_path, n_ctx=512, n_slots=2, kv_unified=True)) as e:
        hs = [e.submit(e.tokenize(" ".join(w)), SamplingParams(max_tokens=400, ignore_eos=True,
                                                               **GREEDY))
              for w in (words, words[::-1])]
        finals = [h.result(300) for h in hs]
    assert [(f.finish_reason, f.error) for f in finals] == [
        ("error", "Context size has been exceeded.")] * 2


def test_requests_queued_together_share_the_first_step(eng):
    """submit_many: the first step reads every prompt that fits a slot, as llama-server's loop
    does with requests that arrived together; a bad request queues none of them."""
    params = SamplingParams(max_tokens=4, temperature=0)
    prompts = [eng.tokenize(t) for t in ("One two", "Three four five", "Six")]
    before = len(eng.trace.records())
    handles = eng.submit_many((p, params) for p in prompts[:2])
    assert [h.result(60).finish_reason for h in handles] == ["length", "length"]
    first = eng.trace.records()[before]
    assert sorted(n for _, action, n, _ in first[10] if action == "prefill") == \
        sorted(len(p) for p in prompts[:2])
    waiting = len(eng.slots())
    with pytest.raises(ValueError, match="empty"):
        eng.submit_many([(prompts[2], params), ([], params)])
    assert eng.metrics()["requests_processing"] == 0 and len(eng.slots()) == waiting


def test_events_name_the_slot_that_served_them(eng):
    """llama-server's id_slot: every chunk and the final answer say which slot generated them."""
    h = eng.submit(eng.tokenize("Name a colour."), SamplingParams(max_tokens=3, temperature=0))
    events = list(h)
    final = events[-1]
    assert isinstance(final, FinalEvent) and 0 <= final.id_slot < len(eng.slots())
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert tokens and all(e.id_slot == final.id_slot for e in tokens)
