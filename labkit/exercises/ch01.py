"""Notebook 01 (the restaurant): the five parts, static batching's idle seats, slots and TTFT,
one step's cost by hand, and whether continuous batching needs PagedAttention."""

from __future__ import annotations

from . import CODE, as_number, as_word, call, choice, exercise, open_question

FIVE_PARTS = {
    "guest's order": "request",
    "table": "slot",
    "table top": "context",
    "notes": "kv cache",
    "refilling tables at every step": "continuous batching",
}
# Each part's other names: the glossary's (English and Traditional Chinese, the seeds' words
# among them) and a few abbreviations learners write.
_ABBREVIATIONS = {
    "request": ("requests",),
    "slot": ("slots", "sequence"),
    "context": ("ctx", "n ctx slot"),
    "kv cache": ("kv", "kvcache"),
    "continuous batching": ("continuous", "cont batching"),
}


def _parts() -> dict[str, tuple[str, ...]]:
    from ..glossary import options
    return {k.lower(): tuple(v) + _ABBREVIATIONS.get(k.lower(), ())
            for k, v in options(*_ABBREVIATIONS).items()}


def _part(word):
    try:
        return choice(word, _parts())
    except ValueError:
        return as_word(word)


@exercise("1.1", "Map each restaurant word to its llama.cpp part: a dict with the keys "
                 f"{list(FIVE_PARTS)} and values among request, slot, context, KV cache, "
                 "continuous batching.")
def _five_parts(answer):
    if not isinstance(answer, dict):
        return False, "answer with a dict such as {\"table\": \"slot\", ...}"
    got = {as_word(k): _part(v) for k, v in answer.items()}
    missing = [k for k in FIVE_PARTS if k not in got]
    if missing:
        return False, f"the dict lacks {missing}"
    wrong = [k for k, v in FIVE_PARTS.items() if got[k] != v]
    if wrong:
        return False, (f"look again at {wrong}: the glossary table at the top of the notebook "
                       "has a 'restaurant' column")
    return True, ""


def static_idle_steps(outputs=(10, 20, 40, 400)) -> int:
    """Steps the shortest guest's table sits idle in one static batch (one token per step)."""
    return max(outputs) - min(outputs)


@exercise("1.2", "Static batching, 4 slots, four guests arrive together wanting 10, 20, 40 and "
                 "400 output tokens (one token per step). For how many steps does the 10-token "
                 "guest's table sit empty before the next batch may start?")
def _idle(answer):
    v = as_number(answer)
    want = static_idle_steps()
    if v == want:
        return True, ""
    if v == 400:
        return False, "the 10-token guest was served during the first 10 of those 400 steps"
    return False, "the batch ends when its longest order is done; count from the short guest's last token"


def smallest_slots_for_ttft(limit_s: float = 1.0, rate: float = 4.0, mix: str = "mixed",
                            max_slots: int = 8):
    """The fewest slots whose p90 TTFT (continuous batching) is below ``limit_s``, or None."""
    from ..sim.experiments import restaurant_runs
    for s in range(1, max_slots + 1):
        run = restaurant_runs(slots=s, rate=rate, mix=mix, modes=("continuous",))["continuous"]
        if run.summary()["ttft_p90"] < limit_s:
            return s
    return None


@exercise("1.3", "In the control panel (continuous batching, 24 guests at 4 arrivals/s, mix 'mixed'), "
                 "what is the smallest number of slots for which the p90 TTFT is below 1 s?")
def _slots_for_ttft(answer):
    want = smallest_slots_for_ttft()
    v = as_number(answer)
    if v == want:
        return True, ""
    if v > want:
        return False, "fewer slots already do it: try panel.update(slots=...) going down"
    return False, "with that many slots p90 TTFT is still above 1 s: read the 'continuous' row"


@exercise("1.4", "One step carries one decode token for each of 3 generating slots plus a "
                 "200-token chunk of a new prompt. How many tokens does that llama_decode process?")
def _tokens_in_step(answer):
    v = as_number(answer)
    if v == 203:
        return True, ""
    if v == 200:
        return False, "the three generating slots each add their one decode token to the same batch"
    if v == 3:
        return False, "the prompt chunk rides in the same batch as the decode tokens"
    return False, "one batch = every decode token + the prompt tokens that fit"


def step_ms_of_1_4(cost=None) -> float:
    """The step of exercise 1.4 under the simulator's RTX 4090 preset, in milliseconds: three
    decoding slots of 300, 500 and 700 cells, and the first 200-token chunk of a prompt."""
    from ..sim import preset
    cost = cost or preset("rtx4090", "8b-q4")
    attended = (300 + 1) + (500 + 1) + (700 + 1) + 200
    pairs = 200 * (0 + 200 / 2)
    return 1000 * (cost.a + cost.b * 200 + cost.c * 3 + cost.d * attended
                   + getattr(cost, "e", 0.0) * pairs)


@exercise("1.5", "With the simulator's RTX 4090 preset, how many milliseconds does the step of "
                 "exercise 1.4 take if the generating slots hold 300, 500 and 700 cells before it "
                 "and the 200-token chunk starts a new prompt?")
def _step_ms(answer):
    want = step_ms_of_1_4()
    v = as_number(answer)
    if abs(v - want) <= 0.001 * want:
        return True, ""
    if abs(1000 * v - want) <= 0.001 * want:
        return False, "that looks like seconds; the question asks for milliseconds"
    if v < want:
        return False, ("some of the step's work is missing: every term of the cost formula "
                       "applies, and each sequence in the batch attends to all of its cells")
    return False, ("too much: count the cells each sequence holds once this step's tokens are "
                   "in, and the prompt pairs of a chunk that starts from an empty slot")


open_question(
    "1.6",
    "Seed 001 says continuous batching needs PagedAttention. From your live run, do you agree? "
    "What does PagedAttention add, and when would you want it?",
    model_answer=(
        "No. In my run the engine read a new prompt in 3 of its steps while the other slots "
        "kept decoding, on llama.cpp with one fixed stripe of cells per slot and no pages: "
        "continuous batching is a scheduling decision taken between steps (Orca, OSDI 2022). "
        "PagedAttention (vLLM, SOSP 2023) hands out KV memory in small blocks as sequences "
        "grow, so little memory sits reserved but unused and more sequences fit in one batch. "
        "I would want it when memory, not arithmetic, limits the batch: long and uneven "
        "requests on a GPU, where split stripes sized for the longest request leave most "
        "cells empty."),
    rubric=["disagrees, with the run's own evidence: steps that mixed a new prompt with "
            "other slots' decoding, and a KV cache without pages",
            "says what continuous batching is: the batch is rebuilt at every step",
            "says what PagedAttention is about: KV memory allocated in blocks on demand, "
            "less reserved-but-unused memory, so a bigger batch fits",
            "names when that matters: memory-bound batch size, long or uneven requests"],
    min_words=30, needs_number=True)


NO_CONT_CASES = [
    ([(0.0, 300, 4), (0.0, 120, 2), (0.01, 200, 3)], 2),
    ([(0.0, 64, 12), (0.005, 500, 3), (0.006, 80, 5), (0.2, 40, 2)], 3),
]


def no_cont_steps(guests, slots: int) -> list[float]:
    """The step durations of ``guests`` ((arrival, prompt, answer) tuples) on ``slots`` slots
    with llama.cpp's --no-cont-batching, from the simulator (RTX 4090 preset)."""
    from ..sim import Request, preset, simulate
    reqs = [Request(id=i, arrival=a, prompt_tokens=p, output_tokens=o)
            for i, (a, p, o) in enumerate(guests)]
    run = simulate(reqs, slots=slots, cost=preset("rtx4090", "8b-q4"), batching="no_cont")
    return [float(x) for x in run.steps["dur_s"]]


@exercise("1.7", "Write run_no_cont(guests, slots, cost): run_by_hand's loop, but a prompt is read "
                 "only in a step where no slot is generating (llama.cpp --no-cont-batching). "
                 "Return each step's duration.", kind=CODE)
def _no_cont(fn):
    import math

    from ..sim import preset
    cost = preset("rtx4090", "8b-q4")
    for guests, slots in NO_CONT_CASES:
        want = no_cont_steps(guests, slots)
        got = [float(x) for x in call(fn, [tuple(g) for g in guests], slots, cost)]
        if len(got) == len(want) and all(math.isclose(g, w, rel_tol=1e-9) for g, w in zip(got, want)):
            continue
        first = next((i for i, (g, w) in enumerate(zip(got, want))
                      if not math.isclose(g, w, rel_tol=1e-9)), min(len(got), len(want)))
        return False, (f"{len(guests)} guests on {slots} slots: your run has {len(got)} steps, "
                       f"llama.cpp's rule gives {len(want)}, and they first differ at step "
                       f"{first}. In that step, was any slot generating, and was a prompt read?")
    return True, ""
