"""The decode-heavy set: twelve short story requests, each answered with a long, fixed-length
story. Timing only: a story has no answer key.

The extraction sets are mostly prompt (about 178 prompt tokens for a 35-token answer), and a
prompt is read at the same rate whatever the number of slots, so more slots barely change
their throughput. Here each prompt is one line and each answer :data:`ANSWER_TOKENS` tokens
(``max_tokens`` with ``ignore_eos``, so every answer has exactly that length and every run
does the same work): the time goes into decoding, the part that batching speeds up.

The worksheet's ``correct`` and ``all correct`` columns read ``not graded (timing only)``
(:data:`labkit.bench.grading.NOT_GRADED`) and its verdict rests on the context and TTFT
gates. :func:`workload_body` is what :func:`labkit.bench.workload.generate` writes to
``data/workloads/decode_heavy.json``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Callable

from .grading import NOT_GRADED
from .prompt import Prompt

NAME = "decode_heavy"
ANSWER_TOKENS = 200     # about 150 English words
SYSTEM = "You are a storyteller. Write simple, vivid stories in plain English."
REQUEST = "Write a 150-word story about {topic}."
WARMUP_TOPIC = "a kitchen that never closes"
TOPICS = ["a lighthouse keeper", "a lost umbrella", "a robot that learns to paint",
          "a night train", "a small dragon", "the last bookshop in town", "a garden on a roof",
          "a message in a bottle", "a clock that runs backwards", "a friendly ghost",
          "a bicycle race", "a snowy mountain village"]


def prompt() -> Prompt:
    """The story prompt: a system line and no worked example (the warm-up request is one more
    story)."""
    return Prompt(system=SYSTEM, example_document=REQUEST.format(topic=WARMUP_TOPIC),
                  example_answer=None, max_tokens=ANSWER_TOKENS)


def workload_body(prompt_tokens: Callable[[list[dict]], int], common: dict) -> dict:
    """The workload file's content. ``prompt_tokens(messages)``: the model's token count of a
    whole prompt, template applied; ``common``: the fields every workload file records
    (seed, generator, tokenizer model)."""
    p = prompt()
    requests = [REQUEST.format(topic=t) for t in TOPICS]
    return {"name": NAME,
            "description": (f"12 one-line story requests, each answered with exactly "
                            f"{ANSWER_TOKENS} tokens (ignore_eos): decode-heavy, timing only."),
            **common, "not_graded": NOT_GRADED, "max_tokens": ANSWER_TOKENS, "ignore_eos": True,
            "prompt": asdict(p), "system_preamble": "",
            "documents": [{"id": f"STORY-{i + 1:02d}", "answer": None,
                           "prompt_tokens": prompt_tokens(p.messages(text)), "text": text}
                          for i, text in enumerate(requests)]}
