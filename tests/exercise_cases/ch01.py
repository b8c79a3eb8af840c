"""Plausible wrong answers to the exercises of notebook 01: each must fail with a hint."""


def _without_the_changed_line():
    """The worked answer with its one changed line put back: run_by_hand unchanged, prompts read
    next to decode tokens (continuous batching), which is exactly what 1.7 must not do."""
    import inspect
    import runpy
    from pathlib import Path
    solutions = Path(__file__).resolve().parents[2] / "notebooks" / "solutions" / "01_restaurant.py"
    source = inspect.getsource(runpy.run_path(str(solutions))["answer_1_6"])
    changed = 'if g["prompt_left"] and budget > 0 and not decoding:'
    assert changed in source, "the worked answer no longer has the line this case undoes"
    namespace = {}
    exec(source.replace(changed, 'if g["prompt_left"] and budget > 0:'), namespace)
    return namespace["answer_1_6"]


_continuous = _without_the_changed_line()


WRONG = {
    "1.1": [{"guest's order": "request", "table": "context", "table top": "slot",
             "notes": "KV cache", "refilling tables at every step": "continuous batching"},
            {"table": "slot"}, "slot",
            {"guest's order": "請求", "table": "桌面", "table top": "窗口", "notes": "已讀筆記",
             "refilling tables at every step": "連續批次"},
            # seed 000's restaurant words as keys, and copied as values
            {"正在辦的單": "正在辦的單", "窗口": "窗口", "桌面": "桌面", "已讀筆記": "已讀筆記",
             "每輪換桌名單": "每輪換桌名單"}],
    "1.2": [400, 10],
    "1.3": [1, 8],
    "1.4": [200, 3],
    # seconds instead of ms; without the attended cells; without the prompt pairs
    "1.5": [0.0569, 56.6 - 0.278, 56.88 - 0.159, 120],
    # too short; no figure from the run
    "1.7": ["no, it does not", "No. Continuous batching is only a scheduling decision taken between "
            "steps, and llama.cpp does it with plain cells; PagedAttention is about memory waste "
            "and lets a bigger batch fit, which matters on a GPU."],
    # the continuous schedule unchanged; a function that raises
    "1.6": [_continuous, lambda guests, slots, cost: [1 / 0]],
}
