"""Fit the step-cost model to a measured step trace.

The engine (and the simulator itself) records one row per ``llama_decode`` with
at least ``dur_s``, ``n_prefill_tokens``, ``n_decode`` and ``attended``. :func:`fit`
finds non-negative a, b, c, d, e minimising the squared relative error of

    dur_s ~ a + b * n_prefill_tokens + c * n_decode + d * attended + e * prefill_attn

(relative, so that hundreds of 8 ms decode steps and a few 5 s prompt steps are fitted
equally well: each step's error is divided by its time as a first fit predicts it, and
steps that fit cannot explain at all, disturbed by another process, are left out and
counted; ``weight="absolute"`` for seconds).

``prefill_attn`` (the prompt chunks' attention pairs, n x (h + n/2) per chunk) is taken
from the trace when it has the column, else computed from the engine's slot trace when
one is given, else estimated from the step rows (:mod:`labkit.sim.features`).

With five coefficients, exact non-negative least squares is simple: solve the ordinary
least-squares problem on every non-empty subset of the columns (31 of them) and keep the
best solution whose coefficients are all >= 0. That is the same answer an active-set NNLS
solver reaches, and each step is easy to follow.

How sure is each coefficient? ``fit(..., bootstrap=200)`` refits on 200 resamples of the
steps (drawn with replacement) and reports each coefficient's standard error and 95 %
interval over them. Steps measured one after the other are not independent (a busy
neighbour slows a whole stretch of them), so read the interval as a lower bound on the
uncertainty, and prefer a calibration trace that covers every term several times over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from .cost import COEFS, TERMS, StepCost
from .features import COLUMN as PREFILL_ATTN, prefill_attention

FEATURES = ("n_prefill_tokens", "n_decode", "attended", PREFILL_ATTN)


@dataclass
class Fit:
    """A fitted :class:`StepCost` and how well it explains the trace."""

    cost: StepCost
    r2: float                   # 1 - SS_res / SS_tot on dur_s
    rel_err: pd.Series          # (predicted - measured) / measured, per step
    predicted: np.ndarray
    n_steps: int
    dropped: int = 0            # rows ignored (non-finite or non-positive dur_s)
    active: tuple = field(default=COEFS)   # coefficients left free and non-zero
    terms: tuple = field(default=COEFS)    # coefficients the fit was allowed to use
    boot: pd.DataFrame | None = None       # one row of coefficients per bootstrap resample
    outliers: int = 0           # steps left out of the second, relative pass (see fit)

    def uncertainty(self) -> pd.DataFrame:
        """One row per coefficient: value, bootstrap standard error and 95 % interval
        (NaN without a bootstrap), unit and what it multiplies."""
        rows = []
        for k in COEFS:
            v = getattr(self.cost, k)
            b = self.boot[k] if self.boot is not None else None
            rows.append({"coef": k, "value": v,
                         "se": float(b.std(ddof=1)) if b is not None else float("nan"),
                         "lo95": float(b.quantile(0.025)) if b is not None else float("nan"),
                         "hi95": float(b.quantile(0.975)) if b is not None else float("nan"),
                         "unit": TERMS[k][1], "multiplies": TERMS[k][0],
                         "fitted": k in self.terms})
        return pd.DataFrame(rows).set_index("coef")

    def summary(self) -> dict:
        e = self.rel_err.abs()
        out = {
            "n_steps": self.n_steps, "outliers": self.outliers, "r2": self.r2,
            "median_abs_rel_err": float(e.median()) if len(e) else float("nan"),
            "p90_abs_rel_err": float(e.quantile(0.9)) if len(e) else float("nan"),
            **self.cost.as_dict(),
        }
        if self.boot is not None:
            out.update({f"{k}_se": float(self.boot[k].std(ddof=1)) for k in COEFS})
        return out

    def __repr__(self):
        s = self.summary()
        return (f"Fit({self.cost}; R^2={s['r2']:.4f}, median |rel err|="
                f"{s['median_abs_rel_err']:.1%}, n={self.n_steps})")


def design(df: pd.DataFrame, slots: pd.DataFrame | None = None) -> np.ndarray:
    """The fit's columns for each step: 1, prompt tokens, decoding sequences, attended
    cells, prefill attention pairs."""
    missing = [c for c in (*FEATURES[:3], "dur_s") if c not in df.columns]
    if missing:
        raise KeyError(f"step trace lacks column(s) {missing}")
    pa = prefill_attention(df, slots).to_numpy(dtype=float)
    return np.column_stack([np.ones(len(df))] + [df[c].to_numpy(dtype=float)
                                                 for c in FEATURES[:3]] + [pa])


_design = design


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
            if sse < best_sse - 1e-12 * max(1.0, best_sse):
                best = np.zeros(n)
                best[list(cols)] = sol
                best_sse, best_set = sse, cols
    return best / scale, best_set


def fit(trace: pd.DataFrame, *, intercept: bool = True, name: str = "fitted",
        terms=None, slots: pd.DataFrame | None = None, bootstrap: int = 0,
        seed: int = 0, weight: str = "relative", balance: str | None = None) -> Fit:
    """Fit a :class:`StepCost` to a step trace (one row per ``llama_decode``).

    Takes the engine's trace as is (columns ``step, t_start, t_end, dur_s, n_tokens,
    n_prefill_tokens, n_prefill_seqs, n_decode, attended, kv_used``) or a simulator's
    ``result.steps``. Rows with a non-finite or non-positive ``dur_s`` are dropped.

    - ``terms``: the coefficients that may be non-zero (default all of a, b, c, d, e;
      ``terms="abcd"`` fits the model without prefill attention);
      ``intercept=False`` forces a = 0.
    - ``slots``: the engine's slot trace of the same steps, for the exact prefill attention.
    - ``bootstrap``: number of resamples of the steps for the coefficients' uncertainty
      (:meth:`Fit.uncertainty`); 0 for none. ``seed`` makes them repeatable.
    - ``weight``: ``"relative"`` (default) minimises the squared *relative* errors, so an
      8 ms decode step counts as much as a 5 s prompt step and neither kind of step is
      sacrificed to the other (timing noise grows with the step's length);
      ``"absolute"`` minimises the squared errors in seconds, which lets the few longest
      steps decide everything.
    - ``balance``: a column of the trace (``"in_flight"``, say) whose groups count the same
      in the fit whatever their number of steps: each step's squared error is divided by
      its group's step count. None (default): every step counts the same.
    """
    df = trace
    y_all = df["dur_s"].to_numpy(dtype=float)
    X_all = design(df, slots)
    ok = np.isfinite(y_all) & (y_all > 0) & np.all(np.isfinite(X_all), axis=1)
    X, y = X_all[ok], y_all[ok]
    if balance is not None:
        if balance not in df.columns:
            raise KeyError(f"step trace lacks the balance column {balance!r}")
        grp = df[balance].to_numpy()[ok]
        _, inv, counts = np.unique(grp, return_inverse=True, return_counts=True)
        gw = np.sqrt(len(y) / (len(counts) * counts[inv].astype(float)))
    else:
        gw = np.ones(len(y))
    if len(y) < 2:
        raise ValueError("need at least two usable steps to fit")
    terms = tuple(COEFS if terms is None else terms)
    unknown = [t for t in terms if t not in COEFS]
    if unknown:
        raise ValueError(f"unknown coefficient(s) {unknown}; choose among {', '.join(COEFS)}")
    if not intercept:
        terms = tuple(t for t in terms if t != "a")
    allowed = [COEFS.index(t) for t in COEFS if t in terms]
    if weight not in ("relative", "absolute"):
        raise ValueError("weight must be 'relative' or 'absolute'")
    w = (1.0 / y if weight == "relative" else np.ones_like(y)) * gw
    Xw, yw = X * w[:, None], y * w
    coef, active = nnls_small(Xw, yw, allowed)
    keep = np.ones(len(y), dtype=bool)
    if weight == "relative":
        # Second pass: weigh each step by its *predicted* time, so that a step which
        # happened to run fast is not trusted more than one which ran slow (weights from
        # the measurement itself pull every coefficient down a little), and leave out the
        # steps the first fit cannot explain at all: more than 5 robust standard deviations
        # (and 5 %) off, typically a step during which another process took the CPU.
        first = X @ coef
        if np.all(first > 0):
            r = (y - first) / first
            spread = 1.4826 * np.median(np.abs(r - np.median(r)))
            keep = np.abs(r) <= max(5 * spread, 0.05)
            w = gw / first
            Xw, yw = (X * w[:, None])[keep], (y * w)[keep]
            coef, active = nnls_small(Xw, yw, allowed)
    pred = X @ coef
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    idx = df.index[ok]
    rel = pd.Series((pred - y) / y, index=idx, name="rel_err")
    a, b, c, d, e = (float(max(v, 0.0)) for v in coef)
    cost = StepCost(a, b, c, d, name=name, e=e)
    boot = None
    if bootstrap:
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(int(bootstrap)):
            i = rng.integers(0, len(yw), len(yw))
            draws.append(nnls_small(Xw[i], yw[i], allowed)[0])
        boot = pd.DataFrame(np.maximum(np.array(draws), 0.0), columns=list(COEFS))
    return Fit(cost=cost, r2=r2, rel_err=rel, predicted=pred, n_steps=int(ok.sum()),
               dropped=int((~ok).sum()), active=tuple(COEFS[i] for i in active),
               terms=terms, boot=boot, outliers=int((~keep).sum()))
