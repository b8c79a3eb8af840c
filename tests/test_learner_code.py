"""The code exercises test the learner's code: a function that calls labkit's own implementation
of what the exercise asks for, or the check's reference, is refused with a message that names
it; the cases are drawn at check time from a seed the learner does not choose, besides the
fixed ones; a string where a number is asked is wrong; a function that hangs is stopped at the
time limit; and nothing a learner's function does makes ``evaluate`` raise."""

import runpy
import threading
import time
from pathlib import Path

import pytest

from labkit import exercises
from labkit.exercises import CORRECT, WRONG, evaluate

ROOT = Path(__file__).resolve().parents[1]


def solution(nb_file: str, name: str):
    return runpy.run_path(str(ROOT / "notebooks" / "solutions" / nb_file))[name]


def wrong(ex_id, fn, *needles):
    """``fn`` gets a wrong verdict on ``ex_id`` whose message holds every needle."""
    result = evaluate(ex_id, fn)
    assert result.status == WRONG, result
    for needle in needles:
        assert needle in result.message, (needle, result.message)
    return result


@pytest.fixture
def seed(monkeypatch):
    """``seed(n)``: the next checks draw their cases from seed ``n``."""
    def use(n):
        monkeypatch.setattr("labkit.exercises.learner_code.draw_seed", lambda: n)
    return use


@pytest.fixture
def limit(monkeypatch):
    """``limit(s)``: a learner's function may run ``s`` seconds in the next checks."""
    def use(s):
        monkeypatch.setattr("labkit.exercises.learner_code.LIMIT_S", s)
    return use


# ---------------------------------------------------------------------------- worked answers

#: The worked answers of the code exercises that need no model, and how many seeds each is
#: tried on (5.7 takes two timetables of about a second each).
WORKED = {"1.6": ("01_restaurant.py", 12), "3.4": ("03_kv_bytes.py", 12),
          "4.6": ("04_split_vs_unified.py", 12), "5.7": ("05_slots_live.py", 2)}


@pytest.mark.parametrize("ex_id, n", [(i, n) for i, (_, k) in WORKED.items() for n in range(k)])
def test_the_worked_answer_passes_whatever_is_drawn(ex_id, n, seed):
    """On the fixed cases and on the cases of many seeds: the tokenizer handed to 3.7 and the
    step cost handed to 1.7 may be called."""
    seed(1000 * n + 7)
    nb_file, _ = WORKED[ex_id]
    result = evaluate(ex_id, solution(nb_file, f"answer_{ex_id.replace('.', '_')}"))
    assert result.status == CORRECT, result


# ---------------------------------------------------------------------------- 1.7

def _requests(guests):
    from labkit import sim
    return [sim.Request(id=i, arrival=a, prompt_tokens=p, output_tokens=o)
            for i, (a, p, o) in enumerate(guests)]


def test_1_6_calling_the_simulator_is_refused():
    from labkit import sim

    def by_simulator(guests, slots, cost):
        run = sim.simulate(_requests(guests), slots=slots, cost=cost, batching="no_cont")
        return list(run.steps["dur_s"])
    wrong("1.6", by_simulator, "labkit.sim.engine.simulate",
          "labkit's own implementation of what this exercise asks you to write",
          "start from run_by_hand")

    def imported_inside(guests, slots, cost):
        from labkit.notebook import sim as s
        return list(s.simulate(_requests(guests), slots=slots, cost=cost,
                               batching="no_cont").steps["dur_s"])
    wrong("1.6", imported_inside, "labkit.sim.engine.simulate")


def test_1_6_calling_the_checks_own_helper_is_refused():
    from labkit.exercises.ch01 import no_cont_steps
    wrong("1.6", lambda guests, slots, cost: no_cont_steps(guests, slots),
          "labkit.exercises.ch01.no_cont_steps", "the check's own reference")

    def hidden(guests, slots, cost):         # no name of it in the code: seen while it runs
        module = __import__("labkit.exercises." + "ch01", fromlist=["_"])
        return getattr(module, "no_cont" + "_steps")(guests, slots)
    wrong("1.6", hidden, "labkit.exercises.ch01.no_cont_steps", "the check's own reference")

    def swallows(guests, slots, cost):       # catching the refusal does not undo it
        try:
            return getattr(__import__("labkit.exercises.ch01", fromlist=["_"]),
                           "no_cont" + "_steps")(guests, slots)
        except BaseException:
            return [0.0]
    wrong("1.6", swallows, "labkit.exercises.ch01.no_cont_steps")


def test_1_6_a_labkit_helper_that_runs_the_simulator_is_named_as_the_way_there():
    import pandas as pd

    from labkit.costs import planning

    def replayed(guests, slots, cost):
        rows = pd.DataFrame({"error": [None] * len(guests),
                             "prompt_tokens": [p for _, p, _ in guests],
                             "completion_tokens": [o for _, _, o in guests]})
        return list(planning.replay(rows, cost, slots).steps["dur_s"])
    wrong("1.6", replayed, "labkit.sim.engine.simulate (through labkit.costs.planning.replay)")


def test_1_6_the_step_cost_handed_over_may_be_used(seed):
    """1.6 hands the learner a StepCost (labkit.sim.cost): its methods are no exploit."""
    answer = solution("01_restaurant.py", "answer_1_6")

    def with_step_time(guests, slots, cost):
        return [d + 0 * cost.step_time(1, 1, 1) for d in answer(guests, slots, cost)]
    seed(7)
    assert evaluate("1.6", with_step_time).status == CORRECT


def test_1_6_the_fixed_cases_alone_no_longer_pass(seed):
    """A function that knows the fixed cases' answers fails on a drawn case."""
    from labkit.exercises.ch01 import NO_CONT_CASES, no_cont_steps
    known = {repr(g): no_cont_steps(g, s) for g, s in NO_CONT_CASES}
    seed(11)
    wrong("1.6", lambda guests, slots, cost: known[repr(guests)], "KeyError")


def test_1_6_a_failing_drawn_case_is_named(seed):
    answer = solution("01_restaurant.py", "answer_1_6")
    from labkit.exercises.ch01 import NO_CONT_CASES

    def right_on_fixed_only(guests, slots, cost):
        steps = answer(guests, slots, cost)
        fixed = any(list(map(tuple, guests)) == [tuple(g) for g in c] for c, _ in NO_CONT_CASES)
        return steps if fixed else steps[:-1]
    seed(3)
    wrong("1.6", right_on_fixed_only, "The case: guests=[", "the rule's")


def test_1_6_a_string_with_a_unit_is_wrong():
    wrong("1.6", lambda guests, slots, cost: ["0.014 s"], "should be a number",
          "without a unit")


# ---------------------------------------------------------------------------- 3.7

def test_3_4_passing_the_checks_reference_is_refused():
    from labkit.exercises.ch03 import chars_that_fit
    wrong("3.4", chars_that_fit, "labkit.exercises.ch03.chars_that_fit",
          "the check's own reference")
    wrong("3.4", lambda n, s, tok, a: chars_that_fit(n, s, tok, a),
          "labkit.exercises.ch03.chars_that_fit")


def test_3_4_a_string_with_a_unit_is_wrong():
    def with_unit(n, s, tok, a):
        return f"{int((n - a) * len(s) / len(tok(s)))} characters"
    wrong("3.4", with_unit, "should be a number", "'", "without a unit")
    wrong("3.4", lambda n, s, tok, a: str(int((n - a) * len(s) / len(tok(s)))),
          "should be a number")


def test_3_4_the_fixed_cases_alone_no_longer_pass(seed):
    from labkit.exercises.ch03 import CHARS_CASES, chars_that_fit
    known = {(n, s, a): chars_that_fit(n, s, tok, a) for n, s, tok, a in CHARS_CASES}
    seed(2)
    wrong("3.4", lambda n, s, tok, a: known[(n, s, a)], "KeyError")


def test_3_4_a_failing_drawn_case_is_named(seed):
    from labkit.exercises.ch03 import CHARS_CASES
    fixed = {s for _, s, _, _ in CHARS_CASES}

    def off_on_drawn(n, s, tok, a):
        right = int((n - a) * len(s) / len(tok(s)))
        return right if s in fixed else right + 50
    seed(9)
    wrong("3.4", off_on_drawn, "The case: n_ctx_slot=", "sample=", "tokenize = one token per",
          "expected")


# ---------------------------------------------------------------------------- 4.8

def test_4_6_calling_kv_is_refused():
    from labkit.models import kv
    wrong("4.6", lambda c, np, u, t: kv.server_slot_context(c, np, u, n_ctx_train=t).n_ctx_slot,
          "labkit.models.kv.server_slot_context", "padding to 256 cells")

    def through_the_facade(c, np, unified, n_ctx_train):
        from labkit.notebook import kv
        return kv.slot_context(c or n_ctx_train, np, unified, n_ctx_train=n_ctx_train).n_ctx_slot
    wrong("4.6", through_the_facade, "labkit.models.kv.slot_context")

    def dotted(c, np, unified, n_ctx_train):
        import labkit.models.kv
        return labkit.models.kv.server_slot_context(c, np, unified,
                                                    n_ctx_train=n_ctx_train).n_ctx_slot
    wrong("4.6", dotted, "labkit.models.kv.server_slot_context")

    def by_default(c, np, unified, n_ctx_train, ref=kv.server_slot_context):
        return ref(c, np, unified, n_ctx_train=n_ctx_train).n_ctx_slot
    wrong("4.6", by_default, "labkit.models.kv.server_slot_context")

    def helper(*a, **k):
        return kv.server_slot_context(*a, **k)
    wrong("4.6", lambda c, np, u, t: helper(c, np, u, n_ctx_train=t).n_ctx_slot,
          "labkit.models.kv.server_slot_context")


def test_4_6_a_table_of_the_fixed_cases_fails_on_the_drawn_ones(seed):
    from labkit.exercises.ch04 import slot_cases
    table = {(c, n, u, t): want for c, n, u, t, want in slot_cases()}
    seed(4)
    wrong("4.6", lambda c, np, u, t: table[(c, np, u, t)], "KeyError")


def test_4_6_a_failing_drawn_case_is_named(seed):
    answer = solution("04_split_vs_unified.py", "answer_4_6")
    from labkit.exercises.ch04 import SLOT_CASES
    fixed = set(SLOT_CASES)
    seed(6)
    wrong("4.6", lambda c, np, u, t: answer(c, np, u, t) + ((c, np, u, t) not in fixed),
          "first mismatch: c=", "llama-server reports")


def test_4_6_a_string_is_wrong():
    wrong("4.6", lambda c, np, u, t: "4096 cells", "return an int")


# ---------------------------------------------------------------------------- 5.7

def _send(base_url, prompt, read: bool):
    import json
    import urllib.request
    body = {"stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": prompt}]}
    request = urllib.request.Request(base_url + "/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        if read:
            response.read()


def test_5_7_wrapping_the_bench_client_is_refused():
    def wrapped(base_url, prompt):
        import time as clock

        import httpx

        from labkit.bench import client
        row = client.stream_one(httpx.Client(), base_url + "/v1/chat/completions",
                                {"stream": True, "messages": [{"role": "user", "content": prompt}]},
                                client.RequestSpec(0, 0, 0.0, []), clock.perf_counter())
        return row["first_token_s"], row["end_s"], row["completion_tokens"]
    wrong("5.7", wrapped, "labkit.bench.client", "Write the stopwatch yourself")


@pytest.mark.parametrize("reads_the_stream", [True, False], ids=["reads", "ignores the stream"])
def test_5_7_the_stubs_scripted_times_fail(reads_the_stream, seed):
    """Returning the default timetable's figures passed when the timetable was fixed, with
    or without reading the stream."""
    def scripted(base_url, prompt):
        _send(base_url, prompt, read=reads_the_stream)
        return 0.40, 0.70, 7
    seed(1)
    wrong("5.7", scripted, "The server's timetable:")


def test_5_7_reading_the_scripts_own_times_is_refused():
    def reads_the_script(base_url, prompt):
        from labkit.lessons.scripted_server import Script
        _send(base_url, prompt, read=True)
        s = Script.default()
        return s.ttft_s, s.end_s, s.n_tokens
    wrong("5.7", reads_the_script, "labkit.lessons.scripted_server")


def test_5_7_a_drawn_timetable_differs_from_the_default_and_keeps_its_traps():
    import random

    from labkit.lessons.scripted_server import Script
    default = Script.default()
    for n in range(200):
        s = Script.drawn(random.Random(n))
        lead = [(t, f, x) for t, f, x in s.tokens if t < s.ttft_s]
        assert s.n_tokens != default.n_tokens and s.ttft_s > default.ttft_s + 0.05
        assert any(f == "reasoning_content" for _, f, _ in lead)
        assert any(f == "content" and not x.strip() for _, f, x in lead)
        assert max(t for t, _, _ in lead) < s.ttft_s - 0.1
        assert s.end_s - s.ttft_s > 0.05 and s.end_s < 2


# ---------------------------------------------------------------------------- 2.3 (no model)

def test_2_3_returning_the_engines_run_is_refused_before_the_model_loads():
    from labkit.notebook import handbuilt as hb

    def engines(ctx, vocab, prompts, n_slots, max_tokens, n_batch):
        run = hb.engine_run(prompts, n_slots, max_tokens, n_batch=n_batch)
        return run.texts, run.steps
    started = time.perf_counter()
    wrong("2.3", engines, "labkit.lessons.handbuilt.engine_run", "Write the batcher yourself")
    assert time.perf_counter() - started < 5

    def checkers(ctx, vocab, prompts, n_slots, max_tokens, n_batch):
        from labkit.exercises.ch02 import _reference
        return _reference()[1].texts, _reference()[1].steps
    wrong("2.3", checkers, "labkit.exercises.ch02._reference", "the check's own reference")

    def engine(ctx, vocab, prompts, n_slots, max_tokens, n_batch):
        from labkit.engine import Engine
        with Engine(None) as eng:
            return eng
    wrong("2.3", engine, "labkit.engine.engine.Engine")


def test_guarded_decode_stays_until_the_last_overlapping_block_ends():
    llama_cpp = pytest.importorskip("llama_cpp")
    from labkit.lessons import handbuilt as hb
    real = llama_cpp.llama_decode
    first, second = hb.guarded_decode(), hb.guarded_decode()
    first.__enter__()
    guard = llama_cpp.llama_decode
    second.__enter__()
    first.__exit__(None, None, None)       # a stopped batcher's block ends first
    assert llama_cpp.llama_decode is guard is not real
    second.__exit__(None, None, None)
    assert llama_cpp.llama_decode is real


# ---------------------------------------------------------------------------- 7.5

def test_7_3_still_fails_a_fifo_key():
    wrong("7.3", lambda request, now: request.arrival, "the short answers wait too long")


def test_7_3_a_string_key_is_wrong():
    wrong("7.3", lambda request, now: str(request.expected), "a number or a tuple of numbers")


# ---------------------------------------------------------------------------- time limit

def _spin(*args):
    while True:
        pass


@pytest.mark.parametrize("ex_id", ["1.6", "3.4", "4.6"])
def test_a_hanging_function_is_stopped_at_the_limit(ex_id, limit, monkeypatch):
    limit(0.5)
    before = set(threading.enumerate())
    started = time.perf_counter()
    result = wrong(ex_id, _spin, "stopped after 0.5 s")
    assert time.perf_counter() - started < 3
    time.sleep(0.3)
    assert not [t for t in set(threading.enumerate()) - before if t.is_alive()], \
        "a loop of Python code should end when it is stopped"
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    assert "0.5 秒還沒結束" in evaluate(ex_id, _spin).message


def test_a_function_blocked_in_c_code_is_left_behind_without_holding_the_check(limit):
    limit(0.3)
    started = time.perf_counter()
    wrong("4.6", lambda c, np, u, t: time.sleep(2), "stopped after 0.3 s")
    assert time.perf_counter() - started < 1.5


def test_a_hanging_stopwatch_is_stopped(monkeypatch):
    from labkit.exercises import ch05
    monkeypatch.setattr(ch05, "TIMER_LIMIT_S", 0.5)
    wrong("5.7", _spin, "stopped after 0.5 s")


def test_a_hanging_key_is_stopped(monkeypatch):
    from labkit.exercises import ch07
    monkeypatch.setattr(ch07, "RUSH_LIMIT_S", 0.5)
    wrong("7.3", _spin, "stopped after 0.5 s")


# ---------------------------------------------------------------------------- never raises

class _Evil:
    def __eq__(self, other):
        raise RuntimeError("eq")

    def __float__(self):
        while True:
            pass

    def __int__(self):
        raise RuntimeError("int")

    def __len__(self):
        raise RuntimeError("len")

    def __iter__(self):
        raise RuntimeError("iter")


class _EvilInt(int):
    def __eq__(self, other):
        raise RuntimeError("eq")

    def __ne__(self, other):
        raise RuntimeError("ne")


def _raise(exc):
    def fn(*args):
        raise exc
    return fn


def _recurse(*args):
    return _recurse(*args)


def _endless(*args):
    def forever():
        while True:
            yield 0.0
    return forever()


NASTY = {
    "SystemExit": _raise(SystemExit(3)),
    "KeyboardInterrupt": _raise(KeyboardInterrupt()),
    "BaseException": _raise(BaseException("odd")),
    "recursion": _recurse,
    "evil object": lambda *a: _Evil(),
    "evil list": lambda *a: [_Evil()],
    "evil int": lambda *a: _EvilInt(4096),
    "endless generator": _endless,
    "None": lambda *a: None,
    "nan": lambda *a: float("nan"),
    "no arguments": lambda: 1,
}


@pytest.mark.parametrize("name", sorted(NASTY))
@pytest.mark.parametrize("ex_id", ["1.6", "3.4", "4.6", "7.3"])
def test_evaluate_never_raises_for_a_nasty_function(ex_id, name, limit):
    limit(2)
    result = evaluate(ex_id, NASTY[name])
    assert result.status in (WRONG, CORRECT) and result.message, result
    if name in ("SystemExit", "KeyboardInterrupt", "BaseException", "recursion"):
        assert result.status == WRONG


def test_evil_results_are_read_without_running_the_learners_methods():
    from labkit.exercises.learner_code import LearnerCodeError, plain
    assert plain(_EvilInt(3)) == 3 and type(plain(_EvilInt(3))) is int
    assert plain((1, [2.5, "x"], {"k": None})) == (1, [2.5, "x"], {"k": None})
    import numpy as np
    assert plain(np.array([1.5, 2.0])) == [1.5, 2.0] and plain(np.int64(7)) == 7
    with pytest.raises(LearnerCodeError, match="_Evil"):
        plain(_Evil())


# ---------------------------------------------------------------------------- inspection

def test_a_notebook_function_is_read_through_the_functions_it_calls():
    from labkit.exercises.ch04 import SLOT_RULE
    from labkit.exercises.learner_code import refusal
    namespace = {"__name__": "__main__"}
    exec("from labkit.notebook import kv\n"
         "def inner(c, np, u, t):\n"
         "    return kv.server_slot_context(c, np, u, n_ctx_train=t).n_ctx_slot\n"
         "def outer(c, np, u, t):\n"
         "    return inner(c, np, u, t)\n"
         "def honest(c, np, u, t):\n"
         "    return min(c, t)\n", namespace)
    assert "labkit.models.kv.server_slot_context" in refusal(namespace["outer"], SLOT_RULE)
    assert refusal(namespace["honest"], SLOT_RULE) is None


def test_every_refusal_is_said_in_chinese(monkeypatch):
    monkeypatch.setenv("LABKIT_LANG", "zh-TW")
    from labkit.models import kv
    result = wrong("4.6", lambda c, np, u, t: kv.slot_context(c, np, u).n_ctx_slot,
                   "你的函式呼叫了 labkit.models.kv.slot_context", "請自己寫出 llama-server 的規則")
    assert "labkit 自己對這題要你寫的東西的實作" in result.message
    from labkit.exercises.ch03 import chars_that_fit
    wrong("3.4", chars_that_fit, "檢查拿來和你的答案比對的參考答案")
    wrong("3.4", lambda n, s, tok, a: "12 個字元", "應該是數字", "不要加單位")


def test_the_seed_is_drawn_by_the_check():
    from labkit.exercises import learner_code
    seeds = {learner_code.draw_seed() for _ in range(8)}
    assert len(seeds) > 1


def test_every_code_exercise_has_a_rule_or_is_known():
    """Each code exercise names what its answer may not call (7.5's key only the checks)."""
    from labkit.exercises import ch01, ch02, ch03, ch04, ch05, ch07
    codes = {i for i, ex in exercises.REGISTRY.items() if ex.kind == exercises.CODE}
    assert codes == {"1.6", "2.3", "3.4", "4.6", "5.7", "7.3"}
    rules = (ch01.NO_CONT_RULE, ch02.BATCHER_RULE, ch03.CHARS_RULE, ch04.SLOT_RULE,
             ch05.TIMER_RULE, ch07.KEY_RULE)
    for rule in rules:
        assert rule_problems(rule) == [], rule


def rule_problems(rule) -> list[str]:
    """What is wrong with a rule: a forbidden name that no longer exists (a rule that could
    never refuse it), one it does not block, an allowed module it blocks, or a part of labkit
    it names nowhere that it blocks anyway. The checks themselves are blocked by every rule."""
    import importlib
    out = []
    if not rule.blocks("labkit.exercises.ch01", "no_cont_steps"):
        out.append("the checks are not blocked")
    for spec in rule.forbid:
        where, _, name = spec.partition(":")
        try:
            module = importlib.import_module(where)
        except ImportError:
            out.append(f"{spec}: no such module")
            continue
        if name and not hasattr(module, name.split(".")[0]):
            out.append(f"{spec}: no such name")
        if not rule.blocks(where, name or "anything"):
            out.append(f"{spec}: not blocked")
    out += [f"{a}: allowed, yet blocked" for a in rule.allow if rule.blocks(a, "anything")]
    named = [spec.partition(":")[0] for spec in rule.forbid]
    if not any(n.startswith("labkit.lang") for n in named) and rule.blocks("labkit.lang.choice",
                                                                           "lang"):
        out.append("labkit.lang.choice: blocked though no part of the rule names it")
    return out


def test_a_rule_that_cannot_refuse_what_it_names_is_caught():
    from labkit.exercises.learner_code import Both, Rule
    say = Both("Write it yourself.", "請自己寫。")
    assert rule_problems(Rule(forbid=("labkit.models.kv:slot_context",), instead=say)) == []
    assert rule_problems(Rule(forbid=("labkit.models.kv:no_such_function",), instead=say)) == [
        "labkit.models.kv:no_such_function: no such name"]
    assert rule_problems(Rule(forbid=("labkit.no_such_module",), instead=say)) == [
        "labkit.no_such_module: no such module"]
    assert rule_problems(Rule(forbid=("labkit.sim",), allow=("labkit.sim.cost",),
                              instead=say)) == []
