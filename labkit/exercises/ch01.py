"""Notebook 01 (the restaurant): the five parts, static batching's idle seats, slots and TTFT."""

from __future__ import annotations

from . import as_number, as_word, exercise

FIVE_PARTS = {
    "guest's order": "request",
    "table": "slot",
    "table top": "context",
    "notes": "kv cache",
    "refilling tables at every step": "continuous batching",
}
_ALIASES = {"kv": "kv cache", "kvcache": "kv cache", "kv-cache": "kv cache", "ctx": "context",
            "n ctx slot": "context", "sequence": "slot", "continuous": "continuous batching",
            "cont batching": "continuous batching", "requests": "request", "slots": "slot"}


@exercise("1.1", "Map each restaurant word to its llama.cpp part: a dict with the keys "
                 f"{list(FIVE_PARTS)} and values among request, slot, context, KV cache, "
                 "continuous batching.")
def _five_parts(answer):
    if not isinstance(answer, dict):
        return False, "answer with a dict such as {\"table\": \"slot\", ...}"
    got = {as_word(k): _ALIASES.get(as_word(v), as_word(v)) for k, v in answer.items()}
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
