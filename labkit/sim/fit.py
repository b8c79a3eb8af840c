"""Fit the step-cost model to a measured step trace.

The engine (and the simulator itself) records one row per ``llama_decode`` with
at least ``dur_s``, ``n_prefill_tokens``, ``n_decode`` and ``attended``. :func:`fit`
finds non-negative a, b, c, d minimising the squared error of

    dur_s ~ a + b * n_prefill_tokens + c * n_decode + d * attended

With only four coefficients, exact non-negative least squares is simple: solve
the ordinary least-squares problem on every non-empty subset of the columns (15 of them)
and keep the best solution whose coefficients are all >= 0. That is the same
answer an active-set NNLS solver reaches, and each step is easy to follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from .cost import StepCost

FEATURES = ("n_prefill_tokens", "n_decode", "attended")
COEFS = ("a", "b", "c", "d")


@dataclass
class Fit:
    """A fitted :class:`StepCost` and how well it explains the trace."""

    cost: StepCost
    r2: float                   # 1 - SS_res / SS_tot on dur_s
    rel_err: pd.Series          # (predicted - measured) / measured, per step
    predicted: np.ndarray
    n_steps: int
    dropped: int = 0            # rows ignored (non-finite or non-positive dur_s)
    active: tuple = field(default=COEFS)   # coefficients left free (the others are 0)

    def summary(self) -> dict:
        e = self.rel_err.abs()
        return {
            "n_steps": self.n_steps, "r2": self.r2,
            "median_abs_rel_err": float(e.median()) if len(e) else float("nan"),
            "p90_abs_rel_err": float(e.quantile(0.9)) if len(e) else float("nan"),
            **self.cost.as_dict(),
        }

    def __repr__(self):
        s = self.summary()
        return (f"Fit({self.cost}; R^2={s['r2']:.4f}, median |rel err|="
                f"{s['median_abs_rel_err']:.1%}, n={self.n_steps})")


def _design(df: pd.DataFrame) -> np.ndarray:
    missing = [c for c in (*FEATURES, "dur_s") if c not in df.columns]
    if missing:
        raise KeyError(f"step trace lacks column(s) {missing}")
    X = np.column_stack([np.ones(len(df))] + [df[c].to_numpy(dtype=float) for c in FEATURES])
    return X


def nnls_small(X: np.ndarray, y: np.ndarray, allowed=None) -> tuple[np.ndarray, tuple]:
    """Exact non-negative least squares for a handful of columns, by trying every subset.

    ``allowed``: indices of columns that may be non-zero (default: all).
    Returns ``(coefficients, indices of the non-zero columns)``.
    """
    n = X.shape[1]
    allowed = tuple(range(n)) if allowed is None else tuple(allowed)
    # Scale columns so one tiny and one huge feature do not upset lstsq.
    scale = np.linalg.norm(X, axis=0)
    scale[scale == 0] = 1.0
    Xs = X / scale
    best, best_sse, best_set = np.zeros(n), float(np.dot(y, y)), ()
    for size in range(1, len(allowed) + 1):
        for cols in combinations(allowed, size):
            sol, *_ = np.linalg.lstsq(Xs[:, cols], y, rcond=None)
            if np.any(sol < 0):
                continue
            r = y - Xs[:, cols] @ sol
            sse = float(r @ r)
            if sse < best_sse - 1e-15 * max(1.0, best_sse):
                best = np.zeros(n)
                best[list(cols)] = sol
                best_sse, best_set = sse, cols
    return best / scale, best_set


def fit(trace: pd.DataFrame, *, intercept: bool = True, name: str = "fitted") -> Fit:
    """Fit a :class:`StepCost` to a step trace (one row per ``llama_decode``).

    Takes the engine's trace as is (columns ``step, t_start, t_end, dur_s, n_tokens,
    n_prefill_tokens, n_prefill_seqs, n_decode, attended, kv_used``; only ``dur_s``
    and the three features are used) or a simulator's ``result.steps``.
    Rows with a non-finite or non-positive ``dur_s`` are dropped.
    ``intercept=False`` forces a = 0.
    """
    df = trace
    y_all = df["dur_s"].to_numpy(dtype=float)
    X_all = _design(df)
    ok = np.isfinite(y_all) & (y_all > 0) & np.all(np.isfinite(X_all), axis=1)
    X, y = X_all[ok], y_all[ok]
    if len(y) < 2:
        raise ValueError("need at least two usable steps to fit")
    allowed = range(4) if intercept else range(1, 4)
    coef, active = nnls_small(X, y, allowed)
    pred = X @ coef
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    idx = df.index[ok]
    rel = pd.Series((pred - y) / y, index=idx, name="rel_err")
    cost = StepCost(*(float(max(c, 0.0)) for c in coef), name=name)
    return Fit(cost=cost, r2=r2, rel_err=rel, predicted=pred, n_steps=int(ok.sum()),
               dropped=int((~ok).sum()), active=tuple(COEFS[i] for i in active))
