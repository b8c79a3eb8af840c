"""Plausible wrong answers to the exercises of notebook 03: each must fail with a hint."""

WRONG = {
    "3.1": [131072, 65536, "a lot"],
    "3.2": [180, 90 * 2**20],
    "3.5": [18, 0],
    "3.6": [0.25, 2],
    # reversed; split counted as the free pool; paged counted as a whole block; not a pair
    "3.7": [(6, 1638), (8192 - 410, 6), (1638, 16), 1638],
    # too short; no figure
    "3.3": ["it will not fit", "No, because Chinese takes more tokens per character than English "
            "with this tokenizer, so the pasted text is longer in tokens than a slot holds; I would "
            "measure real messages with the model's tokenizer first."],
    # one token per character; the answer forgotten; the ratio upside down; raises (it divides
    # by the tokens of an empty string)
    "3.4": [lambda n, s, tok, a: n - a,
            lambda n, s, tok, a: int(n * len(s) / len(tok(s))),
            lambda n, s, tok, a: int((n - a) * len(tok(s)) / len(s)),
            lambda n, s, tok, a: (n - a) * len(s) / len(tok(s.strip(s)))],
}
