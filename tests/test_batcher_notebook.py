"""Notebook 02's lesson holds: the batcher written in the notebook, run on the embedded model,
writes the same texts as labkit's engine at temperature 0 and makes the same steps; the
comparison can fail; the step rules the exercises count are the engine's; and the helpers of
labkit.lessons.handbuilt read step lists as the notebook shows them."""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from labkit.lessons import handbuilt as hb

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "02_build_a_batcher.ipynb"


def _cells():
    return nbformat.read(NOTEBOOK, as_version=4).cells


def batcher_source() -> str:
    (cell,) = [c for c in _cells() if "batcher" in c.metadata.get("tags", [])]
    return cell.source


def notebook_questions() -> list[str]:
    """The QUESTIONS the notebook serves, read from its own cell."""
    for c in _cells():
        m = re.search(r"^QUESTIONS = (\[.*?\])$", c.source, re.M | re.S)
        if m:
            return ast.literal_eval(m.group(1))
    raise AssertionError("the notebook defines no QUESTIONS")


def notebook_batcher():
    ns: dict = {}
    exec(compile(batcher_source(), str(NOTEBOOK), "exec"), ns)
    return ns["batcher"]


def answer_lengths(steps, n_requests):
    """Tokens each request sampled: one per decode, plus the one from its prompt's last chunk."""
    return [1 + sum(1 for _, work in steps for s, r, a, n in work if r == i and a == "decode")
            for i in range(n_requests)]


# ---------------------------------------------------------------- no model: form and helpers

def test_the_notebooks_batcher_stays_short_and_low_level():
    src = batcher_source()
    code = [line for line in src.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert len(code) <= 60, f"the batcher cell has {len(code)} lines of code"
    for call in ("llama_batch_init", "llama_decode", "llama_get_logits_ith",
                 "llama_memory_seq_rm", "llama_get_memory"):
        assert call in src
    assert "labkit" not in src and "Engine" not in src       # built by hand, not borrowed


def test_schedule_follows_the_engines_rules():
    # 2.1: two prompts read in step 0, five tokens each; the third is seated at step 5.
    steps = hb.schedule([30, 30, 30], 2, 5)
    assert len(steps) == 10
    assert steps[0] == [(0, 0, "prefill", 30), (1, 1, "prefill", 30)]
    assert steps[5] == [(0, 2, "prefill", 30)]
    # 2.4: chunked prefill in 32-token batches, decode tokens first.
    steps = hb.schedule([40, 40], 2, 3, n_batch=32)
    assert steps == [[(0, 0, "prefill", 32)],
                     [(0, 0, "prefill", 8), (1, 1, "prefill", 24)],
                     [(0, 0, "decode", 1), (1, 1, "prefill", 16)],
                     [(0, 0, "decode", 1), (1, 1, "decode", 1)],
                     [(1, 1, "decode", 1)]]
    # a slot freed by a short answer takes the next prompt while the other slot decodes
    steps = hb.schedule([10, 10, 10], 2, [2, 4, 1])
    assert steps[2] == [(1, 1, "decode", 1), (0, 2, "prefill", 10)]
    with pytest.raises(ValueError):
        hb.schedule([10], 4, 1, n_batch=2)


def test_step_table_side_by_side_and_first_difference():
    mine = [(20.0, [(0, 0, "prefill", 33), (1, 1, "prefill", 37)]),
            (5.0, [(0, 0, "decode", 1), (1, 1, "decode", 1)]),
            (6.0, [(1, 1, "decode", 1), (0, 2, "prefill", 35)])]
    theirs = [(21.0, [(1, 1, "prefill", 37), (0, 0, "prefill", 33)]),      # batch order aside
              (5.5, [(0, 0, "decode", 1), (1, 1, "decode", 1)]),
              (6.5, [(0, 0, "decode", 1), (1, 2, "prefill", 35)])]
    table = hb.step_table(mine, 2)
    assert list(table.columns) == ["ms", "slot 0", "slot 1"]
    assert table.loc[2, "slot 0"] == "prefill 35 · #2" and table.loc[2, "slot 1"] == "decode · #1"
    side = hb.side_by_side(mine, theirs, 2)
    assert side[("", "same")].tolist() == [True, True, False]
    assert side.loc[0, ("engine", "ms")] == 21.0
    diff = hb.first_difference(mine, theirs)
    assert diff.startswith("step 2: yours did slot 0 prefill 35 #2, slot 1 decode #1")
    assert hb.first_difference(mine, mine) is None
    assert hb.first_difference(mine, mine[:2]) == "yours made 3 llama_decode calls, the engine's 2"
    shorter = hb.side_by_side(mine[:2], theirs, 2)
    assert len(shorter) == 3 and not shorter[("", "same")].iloc[2]
    # steps without times, and work given as lists, read the same
    assert hb.pattern([[[0, 0, "decode", 1]]]) == hb.pattern([(1.0, [(0, 0, "decode", 1)])])
    with pytest.raises(ValueError, match="slot, request, action, n_tokens"):
        hb.pattern([(1.0, [{"slot": 0}])])


# ---------------------------------------------------------------- the embedded model

@pytest.fixture(scope="module")
def served():
    """The notebook's prompts served by the notebook's batcher and by the engine (quick size)."""
    batcher = notebook_batcher()
    with hb.context(2) as lab:
        prompts = hb.chat_tokens(lab.model, lab.vocab, notebook_questions())
        texts, steps = batcher(lab.ctx, lab.vocab, prompts, 2, 24, show=False)
        one_slot = batcher(lab.ctx, lab.vocab, prompts, 1, 24, show=False)
    return prompts, (texts, steps), one_slot, hb.engine_run(prompts, 2, 24)


@pytest.mark.slow
def test_the_notebooks_batcher_writes_the_engines_texts_and_steps(served):
    prompts, (texts, steps), _, ref = served
    assert texts == ref.texts and all(texts)
    assert hb.first_difference(steps, ref.steps) is None
    # the lesson needs different answer lengths and a slot refilled beside a decode
    assert {"stop", "length"} <= set(ref.finish_reasons)
    mixed = [w for _, w in steps if {a for _, _, a, _ in w} == {"prefill", "decode"}]
    assert len(mixed) >= 2
    assert all(len(w) <= 2 for _, w in steps)


@pytest.mark.slow
def test_the_comparison_can_fail(served):
    prompts, (texts, steps), (texts_1, steps_1), ref = served
    # one slot: other batches, other steps (the notebook shows this one)
    assert hb.first_difference(steps_1, ref.steps) is not None
    assert len(steps_1) > len(steps)
    # a batcher with one mistake is caught: logits read from the wrong entry change the texts,
    # the newest prompt seated first changes the steps
    src = batcher_source()
    mutants = {"wrong logits": ('llama_get_logits_ith(ctx, seat["i"])',
                                "llama_get_logits_ith(ctx, batch.n_tokens - 1)"),
               "newest first": ("waiting.popleft()", "waiting.pop()")}
    with hb.context(2) as lab:
        for name, (old, new) in mutants.items():
            assert old in src, name
            ns: dict = {}
            exec(src.replace(old, new), ns)
            got_texts, got_steps = ns["batcher"](lab.ctx, lab.vocab, prompts, 2, 24, show=False)
            if name == "wrong logits":
                assert got_texts != ref.texts
            else:
                assert hb.first_difference(got_steps, ref.steps) is not None


@pytest.mark.slow
@pytest.mark.parametrize("n_batch", [2048, 16])
def test_the_exercises_schedule_is_the_engines(served, n_batch):
    prompts = served[0][:3]
    ref = hb.engine_run(prompts, 2, 8, n_batch=n_batch)
    lens = answer_lengths(ref.steps, len(prompts))
    assert hb.pattern(hb.schedule([len(p) for p in prompts], 2, lens, n_batch)) == \
        hb.pattern(ref.steps)
    if n_batch == 16:
        assert any(n == 16 for _, w in ref.steps for _, _, a, n in w if a == "prefill")


@pytest.mark.slow
def test_the_worked_chunked_batcher_matches_the_engine_with_a_large_batch(served):
    import runpy
    sol = runpy.run_path(str(ROOT / "notebooks" / "solutions" / "02_build_a_batcher.py"))
    prompts, (texts, steps), _, ref = served
    with hb.context(2) as lab, hb.guarded_decode():
        texts_c, steps_c = sol["answer_2_3"](lab.ctx, lab.vocab, prompts, 2, 24, lab.n_batch)
    assert texts_c == ref.texts and hb.first_difference(steps_c, ref.steps) is None


@pytest.mark.slow
def test_guarded_decode_refuses_a_batch_over_n_batch():
    import llama_cpp
    with hb.context(2, n_batch=8) as lab:
        batch = llama_cpp.llama_batch_init(16, 0, 1)
        try:
            for i in range(9):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = 1, i, 1
                batch.seq_id[i][0], batch.logits[i] = 0, i == 8
            batch.n_tokens = 9
            with hb.guarded_decode(), pytest.raises(ValueError, match="n_batch = 8"):
                llama_cpp.llama_decode(lab.ctx, batch)
            batch.n_tokens = 8
            with hb.guarded_decode():
                assert llama_cpp.llama_decode(lab.ctx, batch) == 0
        finally:
            llama_cpp.llama_batch_free(batch)
    assert llama_cpp.llama_decode.__name__ == "llama_decode"     # put back
