"""Write a :class:`~labkit.bench.runner.BenchResult` to a folder.

    results/<timestamp>/
        worksheet.csv  worksheet.md     one line per config (median of rounds, gates)
        rounds.csv                      the same numbers for every round
        requests.csv   requests.json    every request, every round, errors included
        timing_agreement.csv            client vs server timing, per request
        memory.csv                      every memory sample
        runs.json                       per run: server command (API key masked), log file, facts
        environment.json                versions, llama.cpp build, GPUs, model sha256, configs
        plots/*.png                     the four standard figures
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .worksheet import timing_agreement, to_markdown


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=str))


def new_run_folder(base: Path, now: float | None = None) -> Path:
    """A results folder no other run has: ``base/YYYYmmdd-HHMMSS-mmm`` (local time to the
    millisecond), created exclusively, with ``-2``, ``-3``... added when another run took that
    name first (two runs started in the same millisecond, or on two machines sharing ``base``)."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now * 1000) % 1000:03d}"
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"{base}: 10,000 results folders named {stamp}-N already")


def save_result(result, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    ws = result.worksheet()
    ws.to_csv(folder / "worksheet.csv", index=False)
    head = (f"TTFT threshold: {result.ttft_threshold_s:g} s (your own acceptance threshold, "
            "not a measured speed). Numbers are medians over rounds; see rounds.csv.\n\n")
    (folder / "worksheet.md").write_text(head + to_markdown(ws))
    result.rounds().to_csv(folder / "rounds.csv", index=False)
    rows = result.rows.copy()
    for col in ("usage", "timings"):
        if col in rows:
            rows[col] = rows[col].map(lambda v: json.dumps(v) if v is not None else "")
    rows.to_csv(folder / "requests.csv", index=False)
    (folder / "requests.json").write_text(
        result.rows.to_json(orient="records", indent=1, default_handler=str))
    timing_agreement(result.rows).to_csv(folder / "timing_agreement.csv", index=False)
    result.memory.to_csv(folder / "memory.csv", index=False)
    (folder / "runs.json").write_text(json.dumps(_jsonable(result.runs), indent=1))
    (folder / "environment.json").write_text(json.dumps(_jsonable(result.env), indent=1))
    plots = folder / "plots"
    plots.mkdir(exist_ok=True)
    import matplotlib.pyplot as plt
    for name, fig in result.plots.items():
        fig.savefig(plots / f"{name}.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
    return folder
