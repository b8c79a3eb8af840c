"""Plausible wrong answers to the exercises of notebook 06: each must fail with a hint."""

WRONG = {
    "6.1": ["slots", "kv_unified", "槽數", "共用桌"],
    "6.2": ["finish_reason", "結束原因"],
    "6.3": [8, 9, 5, "9 個"],
    "6.4": [760, 780, 700, "約 760 個"],
    "6.6": [400, 397, "about 400 tokens", "約 400 個", 200],
    "6.5": ["keep it on", "開著比較好",
            "Continuous batching is always better because short requests never wait behind long "
            "ones, so I would never turn it off anywhere."],
}
