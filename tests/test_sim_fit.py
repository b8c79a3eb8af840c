"""labkit.sim.fit: weighting the groups of a trace equally (``balance``)."""

import numpy as np
import pandas as pd
import pytest

from labkit.sim import StepCost, fit


def _decode_steps(n_steps, n_decode, step_s, group):
    """Decode-only steps of ``n_decode`` sequences, each lasting ``step_s``."""
    return pd.DataFrame({"step": range(n_steps), "dur_s": step_s, "n_prefill_tokens": 0,
                         "n_decode": n_decode, "attended": 0, "prefill_attn": 0.0,
                         "in_flight": group})


def test_balance_gives_each_group_the_same_weight():
    # One-sequence steps of 10 ms (many) and two-sequence steps of 19.2 ms (few): with only
    # a and c free both are met exactly, whatever the weights...
    tr = pd.concat([_decode_steps(400, 1, 0.010, 1), _decode_steps(20, 2, 0.0192, 2)],
                   ignore_index=True)
    for bal in (None, "in_flight"):
        f = fit(tr, terms="ac", balance=bal)
        assert f.cost.a == pytest.approx(0.0008, rel=1e-6)
        assert f.cost.c == pytest.approx(0.0092, rel=1e-6)
    # ...but with c alone, the fit must compromise: per step it sides with the many
    # one-sequence steps, balanced it sits halfway (in relative error) between the groups.
    plain = fit(tr, terms="c").cost.c
    balanced = fit(tr, terms="c", balance="in_flight").cost.c
    assert abs(plain - 0.010) < abs(balanced - 0.010)
    # balanced: the relative errors of the two groups are equal and opposite
    e1, e2 = balanced / 0.010 - 1, 2 * balanced / 0.0192 - 1
    assert e1 == pytest.approx(-e2, abs=0.002)


def test_balance_is_the_plain_fit_when_groups_are_the_same_size():
    rng = np.random.default_rng(1)
    tr = pd.concat([_decode_steps(50, 1, 0.0, 1), _decode_steps(50, 2, 0.0, 2)],
                   ignore_index=True)
    tr["attended"] = rng.integers(10, 2000, len(tr))
    cost = StepCost(0.002, 0.0, 0.008, 3e-6)
    tr["dur_s"] = cost.predict(tr) * (1 + 0.02 * rng.standard_normal(len(tr)))
    a = fit(tr, terms="acd").cost.as_dict()
    b = fit(tr, terms="acd", balance="in_flight").cost.as_dict()
    for k in a:
        assert b[k] == pytest.approx(a[k], rel=1e-9, abs=1e-15)


def test_balance_needs_the_column():
    tr = _decode_steps(10, 1, 0.01, 1).drop(columns=["in_flight"])
    with pytest.raises(KeyError):
        fit(tr, balance="in_flight")


def test_calibration_fit_traces_passes_balance_on():
    from labkit.bench.calibration import fit_traces
    rows = []
    t = 0.0
    for g, (n, k, dur) in enumerate([(300, 1, 0.010), (30, 2, 0.0192)], start=1):
        for i in range(n):
            rows.append({"step": len(rows), "t_start": t, "dur_s": dur,
                         "n_prefill_tokens": 0, "n_prefill_seqs": 0, "n_decode": k,
                         "attended": 0, "prefill_attn": 0.0, "in_flight": g})
            t += dur
    steps = pd.DataFrame(rows)
    steps["t_end"] = steps["t_start"] + steps["dur_s"]
    plain = fit_traces(steps, bootstrap=0, terms="c").cost.c
    balanced = fit_traces(steps, bootstrap=0, terms="c", balance="in_flight").cost.c
    assert balanced < plain          # pulled towards the few two-sequence steps (9.6 ms each)
