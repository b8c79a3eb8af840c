"""The worksheet: per-request rows in, one line per configuration out.

These are pure functions of the rows DataFrame that :mod:`labkit.bench.runner` produces
(one row per request, run-level columns repeated on each row), so they can be checked on
hand-made inputs.

Arithmetic (per run = one config, one round):

- ``wall_s``: the run's wall time, from its start until its last request ended.
- ``output_tok_s`` = sum of ``completion_tokens`` / ``wall_s``; left empty (NaN) when any
  request failed, because a partial batch is not a batch.
- ``ttft_p50_s`` / ``ttft_p90_s`` / ``ttft_max_s``: over the requests that showed a first
  visible token (numpy's default, linear-interpolated percentiles).
- ``completion_p50_s`` / ``completion_max_s``: send to end, per request.
- ``errors``: requests with an error; ``correct``: requests whose answer graded correct.

The worksheet line of a config is the **median over its rounds** of each of those numbers;
``*_rounds`` columns keep the per-round values. The three gates hold only if they hold in
**every** round:

- ``fits_context``: no request was refused for its size, and none ran out of room while
  generating (its slot full, or a unified pool run dry: "Context size has been exceeded.");
- ``ttft_ok``: every request showed its first token within ``ttft_threshold_s``;
- ``all_correct``: every answer graded correct.

A timing-only run (a synthetic model's random weights, :mod:`labkit.bench.timing`, or the
decode-heavy set, :mod:`labkit.bench.stories`) is not graded: ``correct`` and ``all_correct``
read why (``not graded (synthetic weights)``, ``not graded (timing only)``) and the verdict
rests on the other two gates, which it says.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..lang.i18n import TITLES, UNGRADED_NOTE
from .grading import not_graded

CONFIG_KEYS = ["server", "model_sha256", "kv_mode", "pool_n_ctx", "slots", "n_ctx_slot",
               "in_flight", "load", "workload", "cache_prompt"]
#: Where the layers ran (:func:`labkit.bench.runner.device_of`): kept on every line, and part of
#: a config's identity when the rows have them.
DEVICE_KEYS = ["device", "backend", "n_gpu_layers"]
METRICS = ["wall_s", "output_tok_s", "ttft_p50_s", "ttft_p90_s", "ttft_max_s",
           "completion_p50_s", "completion_max_s", "errors", "correct", "n_requests",
           "sampled_peak_mib"]


def _pct(values, q: float) -> float:
    v = pd.Series(values, dtype=float).dropna()
    return float(np.percentile(v, q)) if len(v) else math.nan


def is_context_refusal(error) -> bool:
    """A request refused before it started because its prompt cannot fit (llama-server's HTTP 400
    ``exceed_context_size_error``)."""
    return isinstance(error, str) and ("exceed_context_size_error" in error
                                       or "exceeds the available context" in error)


def is_out_of_room(error) -> bool:
    """A request that was running when the cells ran out: llama-server (and labkit's engine) end
    every request in flight with "Context size has been exceeded." when a unified pool runs dry."""
    return isinstance(error, str) and "Context size has been exceeded" in error


def run_summary(rows: pd.DataFrame, ttft_threshold_s: float = 10.0) -> pd.DataFrame:
    """One line per run (config x round): the worksheet's numbers before the median."""
    out = []
    for (run_id,), g in rows.groupby(["run_id"], sort=False):
        first = g.iloc[0]
        errors = int(g["error"].notna().sum())
        tokens = pd.to_numeric(g["completion_tokens"], errors="coerce")
        wall = float(first["wall_s"])
        ttft = pd.to_numeric(g["ttft_s"], errors="coerce")
        refused = int(g["error"].map(is_context_refusal).sum())
        full_slot = ((g["finish_reason"] == "length")
                     & (pd.to_numeric(g["prompt_tokens"], errors="coerce") + tokens
                        >= float(first["n_ctx_slot"]))).sum() \
            if pd.notna(first["n_ctx_slot"]) else 0
        out_of_room = int(g["error"].map(is_out_of_room).sum()) + int(full_slot)
        peak = first.get("peak_memory_bytes")
        reasons = g["grade_reason"] if "grade_reason" in g else pd.Series([None])
        ungraded = reasons.iloc[0] if reasons.map(not_graded).all() else None
        n_correct = int(g["correct"].fillna(False).astype(bool).sum())
        out.append({
            **{k: first[k] for k in CONFIG_KEYS},
            **{k: first[k] for k in DEVICE_KEYS if k in first},
            "round": int(first["round"]), "run_id": run_id,
            "wall_s": wall,
            "output_tok_s": float(tokens.sum() / wall) if errors == 0 and wall > 0 else math.nan,
            "ttft_p50_s": _pct(ttft, 50), "ttft_p90_s": _pct(ttft, 90),
            "ttft_max_s": float(ttft.max()) if ttft.notna().any() else math.nan,
            "completion_p50_s": _pct(g["completion_s"], 50),
            "completion_max_s": float(pd.to_numeric(g["completion_s"]).max()),
            "errors": errors, "correct": ungraded or n_correct,
            "n_requests": len(g),
            "sampled_peak_mib": float(peak) / 2**20 if peak is not None and pd.notna(peak)
            else math.nan,
            "memory": first.get("memory_label", "not measured"),
            "fits_context": refused == 0 and out_of_room == 0,
            "ttft_ok": bool(ttft.notna().all() and ttft.max() <= ttft_threshold_s),
            "all_correct": ungraded or n_correct == len(g),
        })
    return pd.DataFrame(out)


def worksheet(rows: pd.DataFrame, ttft_threshold_s: float = 10.0) -> pd.DataFrame:
    """One line per config: the median over rounds, per-round throughput, the three gates.

    ``ttft_threshold_s`` is your own acceptance threshold (the seed's example: a first
    visible token within 10 seconds), not a measured speed.
    """
    runs = run_summary(rows, ttft_threshold_s)
    if runs.empty:
        return runs
    out = []
    # str() each value: pandas' string dtype keeps a missing value missing, and a server
    # measured by URL may leave some config fields (the pool, the KV mode) unknown.
    ident = CONFIG_KEYS + [k for k in DEVICE_KEYS if k in runs]
    keys = runs[ident].apply(lambda r: "|".join(map(str, r)), axis=1)
    for _, g in runs.groupby(keys, sort=False):
        g = g.sort_values("round")
        line = {k: g.iloc[0][k] for k in ident}
        line["rounds"] = len(g)
        for m in METRICS:
            if g[m].map(not_graded).all():
                line[m] = g[m].iloc[0]
                continue
            line[m] = float(g[m].median()) if g[m].notna().any() else math.nan
        line["memory"] = g.iloc[0]["memory"]
        line["output_tok_s_rounds"] = " / ".join(
            "-" if pd.isna(v) else f"{v:.1f}" for v in g["output_tok_s"])
        gates = [k for k in ("fits_context", "ttft_ok", "all_correct")
                 if not g[k].map(not_graded).all()]
        for gate in ("fits_context", "ttft_ok", "all_correct"):
            line[gate] = bool(g[gate].all()) if gate in gates else g[gate].iloc[0]
        failed = [TITLES[k] for k in gates if not line[k]]
        line["verdict"] = "pass" if not failed else "fail: " + ", ".join(failed)
        if "all_correct" not in gates:
            line["verdict"] += UNGRADED_NOTE
        out.append(line)
    return pd.DataFrame(out)


def to_markdown(df: pd.DataFrame, digits: int = 2) -> str:
    """A GitHub-flavoured Markdown table, column titles from :data:`TITLES` (a column already
    renamed for display keeps its name); yes/no and the verdict in the language in use."""
    from ..lang.i18n import pick, worksheet_value

    def cell(v):
        if isinstance(v, (bool, np.bool_)):
            return pick("yes", "是") if v else pick("no", "否")
        if isinstance(v, str):
            v = worksheet_value(v)
        if isinstance(v, (float, np.floating)):
            if math.isnan(v):
                return "-"
            return f"{v:.{digits}f}" if not float(v).is_integer() or abs(v) < 1 else f"{v:.0f}"
        return str(v).replace("|", "\\|")
    cols = list(df.columns)
    lines = ["| " + " | ".join(TITLES.get(c, c) for c in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(cell(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def timing_agreement(rows: pd.DataFrame) -> pd.DataFrame:
    """Client-side vs server-side timing, per successful request.

    - ``gen_client_s`` = end - first content chunk (client clock) against
      ``gen_server_s`` = the server's ``predicted_ms`` (first to last sampled token);
    - ``busy_client_s`` = end - send against ``busy_server_s`` = prompt_ms + predicted_ms
      (only equal when the request did not wait in the server's queue).

    ``*_rel`` = client / server - 1. Requests of one token or less generation are skipped
    (nothing to compare).
    """
    ok = rows[rows["error"].isna() & rows["predicted_ms"].notna()
              & (pd.to_numeric(rows["completion_tokens"], errors="coerce") > 1)].copy()
    ok["gen_client_s"] = ok["end_s"] - ok["first_chunk_s"]
    ok["gen_server_s"] = ok["predicted_ms"] / 1e3
    ok["gen_rel"] = ok["gen_client_s"] / ok["gen_server_s"] - 1
    ok["busy_client_s"] = ok["end_s"] - ok["send_s"]
    ok["busy_server_s"] = (ok["prompt_ms"] + ok["predicted_ms"]) / 1e3
    ok["busy_rel"] = ok["busy_client_s"] / ok["busy_server_s"] - 1
    return ok[["run_id", "doc_id", "completion_tokens", "gen_client_s", "gen_server_s",
               "gen_rel", "busy_client_s", "busy_server_s", "busy_rel"]]
