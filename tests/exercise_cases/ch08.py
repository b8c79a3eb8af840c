"""Plausible wrong answers to the exercises of notebook 08: each must fail with a hint."""

WRONG = {
    "8.1": [2 / 12, -0.2, -16.67, 0.5],
    "8.2": [0.016, 0.096, 0.03],
    "8.3": [600 / 730, 600 / 720, 600 / 700, 600 / (4 * 730 / 24 - 20), 600 / (4 * 730 / 24),
            600 / (24 - 20 * 24 / 730), 12],
    "8.4": ["bursts", "爆發", "鋸齒狀"],
    "8.5": [16 * 2048 * 131072 / 1e9, 0.25, 2, 40],
    "8.6": ["buy", "We buy because it is cheaper in the long run and private, and renting costs "
                   "more every month than owning a card does for our team of developers here."],
}
