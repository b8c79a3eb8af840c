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

Each file is written whole or not at all (:mod:`labkit.machine.atomic`), worksheet.csv last:
a folder holding a worksheet.csv holds the rest of its run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..machine.atomic import figure_bytes, write_atomic
from .reading import reading_markdown
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


class NotSaved(OSError):
    """A result that could not be saved in full. ``unsaved`` names the files not written, in
    the order they were to be written (the first is the one that failed); ``folder`` is where;
    ``reason`` is the system's (``No space left on device``). Every file that was written is
    whole, and ``worksheet.csv``, written last, is always among the unsaved: a folder without
    it is not a finished run (the classroom merge looks for it)."""

    def __init__(self, folder: Path, unsaved: list[str], cause: OSError):
        self.folder, self.unsaved = Path(folder), list(unsaved)
        self.reason = cause.strerror or str(cause)
        super().__init__(cause.errno, self.reason, str(folder))

    def __str__(self) -> str:
        from ..lang.i18n import pick
        shown = [n for n in self.unsaved if not n.startswith("plots/")]
        if any(n.startswith("plots/") for n in self.unsaved):
            shown.append("plots/")
        return pick(f"could not save {', '.join(shown)} in {self.folder}/ ({self.reason})",
                    f"無法在 {self.folder}/ 存下 {'、'.join(shown)}（{self.reason}）")


def result_files(result) -> dict[str, bytes | str]:
    """Every file of a result's folder, by its name in the folder, rendered in memory, in the
    order :func:`save_result` writes them: ``worksheet.csv`` last."""
    import matplotlib.pyplot as plt
    ws = result.worksheet()
    rows = result.rows.copy()
    for col in ("usage", "timings"):
        if col in rows:
            rows[col] = rows[col].map(lambda v: json.dumps(v) if v is not None else "")
    head = (f"TTFT threshold: {result.ttft_threshold_s:g} s (your own acceptance threshold, "
            "not a measured speed). Numbers are medians over rounds; see rounds.csv.\n\n")
    files: dict[str, bytes | str] = {
        "rounds.csv": result.rounds().to_csv(index=False),
        "requests.csv": rows.to_csv(index=False),
        "requests.json": result.rows.to_json(orient="records", indent=1, default_handler=str),
        "timing_agreement.csv": timing_agreement(result.rows).to_csv(index=False),
        "memory.csv": result.memory.to_csv(index=False),
        "runs.json": json.dumps(_jsonable(result.runs), indent=1),
        "environment.json": json.dumps(_jsonable(result.env), indent=1),
    }
    for name, fig in result.plots.items():
        try:
            files[f"plots/{name}.png"] = figure_bytes(fig, "png", dpi=110, bbox_inches="tight")
        finally:
            plt.close(fig)
    files["worksheet.md"] = head + to_markdown(ws) + reading_markdown(ws, result.rows)
    files["worksheet.csv"] = ws.to_csv(index=False)     # last: the mark of a finished run
    return files


def save_result(result, folder: Path) -> Path:
    """Write a result's files under ``folder``, each whole or not at all (written to a temporary
    file and renamed), ``worksheet.csv`` last. Raises :class:`NotSaved` when one cannot be
    written, naming it and the ones after it; the files before it stay, whole."""
    files = result_files(result)        # drawn before anything is written
    names = list(files)
    for i, name in enumerate(names):
        path = folder / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, files[name])
        except OSError as exc:
            raise NotSaved(folder, names[i:], exc) from exc
    return folder
