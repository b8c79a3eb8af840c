"""What llguidance costs per generated token, next to what a decode step costs.

One :class:`labkit.engine.guidance.Guide` (the array schema of the differential suite)
replays a 23-token answer ``--rounds`` times: per token, computing the mask and checking the
picked token (``allows``), applying the mask to the logits (``mask``, done only when the pick
is refused) and consuming the token (``accept``). Then the engine generates ``--tokens``
tokens without a grammar and reports its time per token. Prints medians and p90s in ms, with
the machine's load.

    .venv/bin/python benchmarks/guidance_mask.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from differential_cases import MORE_SCHEMAS  # noqa: E402

from labkit.models.embedded import default_model_path  # noqa: E402
from labkit.engine import Engine, EngineConfig, SamplingParams  # noqa: E402
from labkit.engine.guidance import Guide, schema_grammar, tokenizer  # noqa: E402
from labkit.engine.native import tokenize  # noqa: E402

ANSWER = '{\n  "colours": [\n    "red",\n    "blue",\n    "green"\n  ]\n}'


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    with Engine(EngineConfig(default_model_path(), n_ctx=1024, n_slots=1)) as eng:
        vocab = eng._vocab
        t = time.perf_counter()
        tokenizer(vocab)
        print(f"tokenizer, built once per vocabulary: {time.perf_counter() - t:.3f} s")
        toks = tokenize(vocab, ANSWER, False, False)
        res: dict[str, list[float]] = {"compile": [], "allows": [], "mask": [], "accept": []}
        grammar = schema_grammar(MORE_SCHEMAS["array"][0])
        for _ in range(args.rounds):
            t = time.perf_counter()
            g = Guide(vocab, grammar)
            res["compile"].append(time.perf_counter() - t)
            logits = np.zeros(g.n_vocab, dtype=np.float32)
            for tok in toks:
                t = time.perf_counter()
                assert g.allows(tok)
                res["allows"].append(time.perf_counter() - t)
                logits[:] = 0.0
                t = time.perf_counter()
                g.mask(logits)
                res["mask"].append(time.perf_counter() - t)
                t = time.perf_counter()
                g.accept(tok)
                res["accept"].append(time.perf_counter() - t)
        print(f"{len(toks)} tokens x {args.rounds} rounds; load {os.getloadavg()}")
        for k, v in res.items():
            ms = np.array(v) * 1e3
            print(f"  {k:8s} median {np.median(ms):.3f} ms  p90 {np.percentile(ms, 90):.3f} ms")
        prompt = eng.tokenize(eng.apply_template([{"role": "user", "content": "Tell a story."}]))
        f = eng.submit(prompt, SamplingParams(max_tokens=args.tokens, temperature=0,
                                              ignore_eos=True)).result(300)
        print(f"decode, no grammar: {f.timings['predicted_per_token_ms']:.2f} ms per token "
              f"({f.usage['completion_tokens']} tokens); load {os.getloadavg()}")


if __name__ == "__main__":
    main()
