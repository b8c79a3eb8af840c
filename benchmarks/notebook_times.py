#!/usr/bin/env python
"""How long each notebook takes to run top to bottom, as the test suite runs it.

Runs every notebook in notebooks/ (the numbered lessons and the classroom notebook) in a
fresh kernel, one after the other, in quick mode unless --full, and prints one line per
notebook with its wall time, then a Markdown table to paste into docs/PERFORMANCE.md. The
time estimates in notebooks/README.md and in each notebook's header are rounded from these.

    python benchmarks/notebook_times.py                 # quick mode, about 5-10 minutes on 2 cores
    python benchmarks/notebook_times.py 02 05           # only the notebooks whose names start so
    python benchmarks/notebook_times.py --full 07       # full size (05 alone takes 20-40 minutes)
    python benchmarks/notebook_times.py --edition zh-TW # the Traditional Chinese edition
    python benchmarks/notebook_times.py --edition both  # each notebook in English, then in Chinese

Each line carries the 1-minute load average before and after, because a shared machine's
figures say little without it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_notebook(path: Path, quick: bool, timeout_s: int) -> tuple[float, str]:
    """Execute ``path`` in a fresh kernel; its wall time and "ok" or the first error."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    os.environ["LABKIT_QUICK"] = "1" if quick else "0"
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
        status = "ok"
    except CellExecutionError as exc:
        status = "error: " + str(exc).strip().splitlines()[-1][:120]
    except (CellTimeoutError, DeadKernelError) as exc:     # a hung or killed kernel: say so, go on
        status = f"error: {type(exc).__name__}"
    return time.perf_counter() - start, status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefixes", nargs="*", help="run only notebooks whose file names start so")
    ap.add_argument("--full", action="store_true", help="full size (LABKIT_QUICK=0)")
    ap.add_argument("--timeout", type=int, default=1800, help="per-cell timeout, seconds")
    ap.add_argument("--edition", choices=("en", "zh-TW", "both"), default="en",
                    help="which edition: English (notebooks/), Chinese (notebooks/zh-TW/), or "
                         "both, alternated notebook by notebook")
    a = ap.parse_args(argv)

    english = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if a.prefixes:
        english = [p for p in english if p.name.startswith(tuple(a.prefixes))]
    chinese = [p.parent / "zh-TW" / p.name for p in english]
    paths = {"en": english, "zh-TW": chinese,
             "both": [p for pair in zip(english, chinese) for p in pair]}[a.edition]
    if not paths:
        ap.error("no notebook matches")
    mode = "full" if a.full else "quick"
    print(f"# {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} · {platform.node()} · "
          f"{os.cpu_count()} CPUs · {mode} mode", file=sys.stderr)
    rows = []
    os.environ.setdefault("LABKIT_RESULTS", tempfile.mkdtemp(prefix="labkit-nbtimes-"))
    for path in paths:
        load_before = os.getloadavg()[0]
        wall, status = run_notebook(path, not a.full, a.timeout)
        name = path.stem if path.parent.name != "zh-TW" else f"zh-TW/{path.stem}"
        rows.append((name, wall, load_before, os.getloadavg()[0], status))
        print(f"{name:30s} {wall:7.1f} s  load {load_before:.1f} -> {os.getloadavg()[0]:.1f}  {status}",
              file=sys.stderr, flush=True)
    print(f"\n| notebook | {mode} mode, s | load before / after | result |")
    print("|---|---:|---|---|")
    for stem, wall, lb, la, status in rows:
        print(f"| {stem} | {wall:.0f} | {lb:.1f} / {la:.1f} | {status} |")
    return 0 if all(r[4] == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
