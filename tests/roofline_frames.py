"""A synthetic roofline sweep, as labkit.costs.roofline's measurement returns it: one decode and one
prefill row per batch size, with the measured / predicted ratios (tests of the table and plot)."""

import pandas as pd


def sweep_frame(batches=(1, 2, 4), decode=0.09, predicted=0.1, no_overlap=0.08) -> pd.DataFrame:
    """Decode at ``decode`` tok/s per stream (``predicted`` on the roofline, ``no_overlap``
    without overlap), prefill at 3.0 measured, 3.5 and 2.5 predicted, for each batch size."""
    rows = []
    for b in batches:
        rows += [{"batch": b, "phase": "decode", "measured_tok_s": decode * b,
                  "predicted_tok_s": predicted * b, "no_overlap_tok_s": no_overlap * b},
                 {"batch": b, "phase": "prefill", "measured_tok_s": 3.0, "predicted_tok_s": 3.5,
                  "no_overlap_tok_s": 2.5}]
    df = pd.DataFrame(rows)
    df["ratio"] = df["measured_tok_s"] / df["predicted_tok_s"]
    df["ratio_no_overlap"] = df["measured_tok_s"] / df["no_overlap_tok_s"]
    return df
