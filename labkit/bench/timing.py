"""Timing-only runs: a synthetic model (random weights) measured on the real workloads' shape.

A synthetic model (:mod:`labkit.models.synthetic`) has a real model's layers and heads but answers
with noise, so grading it would only measure noise. ``labkit bench --model synthetic:NAME``
therefore sends a *fixed-length* workload instead:

- **the same prompts**: the real workloads' documents, unchanged. A synthetic model carries
  the embedded model's tokenizer, so every prompt has exactly the token count the workloads
  were sized with (``prompt_tokens`` in ``data/workloads/*.json``);
- **answers of the real answers' length**: ``max_tokens`` is the token count of the answer
  key's JSON plus the end-of-turn token (the median over the documents: 35 tokens for the
  short set), with ``ignore_eos`` so no answer stops early;
- **at least one request per slot**: the documents are repeated, in order, up to the largest
  slot count measured, the same requests for every configuration (``--slots 1 2 4 8 16``
  sends 16);
- **no grading**: the worksheet's correct and all-correct columns read
  ``not graded (timing only)``, and the verdict comes from the two gates that still
  mean something here: fits context and TTFT;
- **TTFT counts the first streamed content**, whitespace included: random text has no
  "visible answer" to wait for, and a greedy random model may well start with a space.
"""

from __future__ import annotations

import json
import statistics

from .workload import Document, Workload, load_workload

# What the worksheet's correctness columns read for a synthetic model.
NOT_GRADED = "not graded (synthetic weights)"


def synthetic_model(model: str | None) -> str | None:
    """``model``'s synthetic name (``"llama-3.2-1b:q4_0"``) when it is a synthetic model (a
    ``synthetic:`` name, or a file written by :mod:`labkit.models.synthetic`), else None."""
    from ..models.files import describe
    return describe(model, with_hash=False).synthetic


def answer_tokens(model_path: str, workload: Workload) -> int:
    """The median token count of the workload's expected answers (their JSON, as the prompt's
    worked example writes it), plus one for the end-of-turn token a real model ends with.
    Only the model's vocabulary is loaded, not its weights."""
    from ..engine.native import tokenize
    from ..engine.vocabulary import vocabulary
    with vocabulary(model_path) as vocab:
        counts = [len(tokenize(vocab, json.dumps(d.answer), add_special=False,
                               parse_special=False))
                  for d in workload.documents if d.answer is not None]
    return int(statistics.median(counts)) + 1 if counts else workload.prompt.max_tokens


def fixed_length(workload: Workload, n_requests: int, max_tokens: int) -> Workload:
    """``workload``'s documents repeated in order to at least ``n_requests``, ungraded, every
    answer ``max_tokens`` long (``meta``: ``not_graded``, ``max_tokens``, ``ignore_eos``)."""
    docs = workload.documents
    n = max(n_requests, len(docs))
    repeated = [Document(f"{d.id}#{i // len(docs) + 1}" if i >= len(docs) else d.id, d.text,
                         None, d.prompt_tokens)
                for i, d in ((i, docs[i % len(docs)]) for i in range(n))]
    meta = {**workload.meta, "not_graded": NOT_GRADED, "max_tokens": max_tokens,
            "ignore_eos": True, "source_documents": len(docs)}
    return Workload(workload.name, repeated, workload.prompt,
                    f"{workload.description} Timing only: {n} requests, answers of "
                    f"{max_tokens} tokens, not graded.", workload.system_preamble, meta)


def plan(workloads, model: str | None, slots, max_docs: int | None = None) -> list[Workload]:
    """The timing-only versions of ``workloads`` (names or objects) for ``model``, with at
    least one request per slot of the largest of ``slots``. :func:`labkit.bench.measure`
    sends them with their fixed answer length and ``ignore_eos`` (``runner.default_sampling``)."""
    from ..models.files import resolve_model
    path = str(resolve_model(model))
    wls = [load_workload(w) if isinstance(w, str) else w for w in workloads]
    if max_docs:
        wls = [w.head(max_docs) for w in wls]
    most = max(int(s) for s in slots)
    return [fixed_length(w, most, answer_tokens(path, w)) for w in wls]
