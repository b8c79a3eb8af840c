"""The notebooks' committed outputs: one dated reference run, refreshed by one command and
never stale.

    python -m authoring.outputs refresh              # every notebook of both editions
    python -m authoring.outputs refresh 05 zh-TW/05  # some of them
    python -m authoring.outputs check                # the code cells changed since their outputs

``refresh`` executes each notebook in a kernel of its own (nbclient, from the notebook's
folder, as a learner runs it), at the size :data:`SIZES` gives it (``LABKIT_QUICK=0`` for full
size), and saves it with its outputs. Every code cell then carries the hash of the source its
outputs came from (``metadata.labkit.source_sha256``), and the notebook the run's date, size
and machine (``metadata.labkit.reference_run``). Pictures are stored as 8-bit palette PNGs when
that makes them smaller, and an output over :data:`MAX_OUTPUT_BYTES` is reported.

``check`` (and ``tests/test_outputs.py``, in the fast lane) names each code cell whose source
is no longer the one its outputs were made from, so committed outputs are never stale: change a
cell, then refresh its notebook. nbval runs the notebooks with ``--nbval-lax``: the committed
outputs are examples of what a run shows, not expectations.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import io
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

from labkit.machine.atomic import write_atomic

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KEY = "labkit"
MAX_OUTPUT_BYTES = 300_000
INLINE_PNG = re.compile(r"(data:image/png;base64,)([A-Za-z0-9+/=]+)")

# The size each notebook's reference run uses: full, so that its figures mean something and its
# readings are read off the seed's own procedure. 05_slots_live at full size (the 12-document grid,
# both sets, both KV modes, 1/2/4 slots, three rounds, llama-server beside labkit's server) takes
# the longest: its time is the one its notebook states.
SIZES = {"00": "full", "01": "full", "02": "full", "03": "full", "04": "full",
         "05_roofline": "full", "05_slots_live": "full", "06": "full", "07": "full", "08": "full",
         "classroom": "full"}


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def notebooks(names: list[str] | None = None) -> list[Path]:
    """Both editions' notebooks, or those ``names`` picks ("05", "zh-TW/05", "classroom")."""
    every = sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "zh-TW").glob("*.ipynb"))
    if not names:
        return every
    picked = []
    for name in names:
        folder, _, stem = name.rpartition("/")
        found = [p for p in every if p.stem.startswith(stem)
                 and (p.parent.name == "zh-TW") == (folder == "zh-TW")]
        if not found:
            raise SystemExit(f"no notebook matches {name!r}")
        picked += found
    return picked


def size_of(path: Path) -> str:
    """The size :data:`SIZES` gives a notebook: by its whole name, else by its chapter."""
    return SIZES.get(path.stem, SIZES.get(path.stem.split("_")[0], "quick"))


def stale(nb) -> list[str]:
    """The code cells whose outputs were not made from their present source, each as "cell 12
    (id 3f2a...)": a cell with outputs and no hash, or with another source's hash. A notebook
    with no reference run and no outputs has none."""
    out = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        said = cell.get("metadata", {}).get(KEY, {}).get("source_sha256")
        ran = said is not None or cell.get("outputs")
        if ran and said != source_sha256(src):
            out.append(f"cell {i} (id {cell.get('id', '?')})")
    if nb.get("metadata", {}).get(KEY, {}).get("reference_run"):
        out += [f"cell {i} (id {c.get('id', '?')}): never run"
                for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
                and "source_sha256" not in c.get("metadata", {}).get(KEY, {})
                and f"cell {i} (id {c.get('id', '?')})" not in out]
    return out


def oversized(nb, limit: int = MAX_OUTPUT_BYTES) -> list[str]:
    """The outputs bigger than ``limit`` bytes (as stored), "cell 7: 412 kB"."""
    out = []
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            n = len(json.dumps(output))
            if n > limit:
                out.append(f"cell {i}: {n / 1000:.0f} kB")
    return out


def smaller_png(data: str) -> str:
    """A base64 PNG as an 8-bit palette PNG when that is smaller (matplotlib's are RGBA)."""
    from PIL import Image
    raw = base64.b64decode(data)
    with Image.open(io.BytesIO(raw)) as im:
        buf = io.BytesIO()
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
            buf, format="PNG", optimize=True)
    small = buf.getvalue()
    return base64.b64encode(small).decode("ascii") if len(small) < len(raw) else data


def stamp(nb, *, size: str, started: dt.datetime, seconds: float) -> None:
    """Each code cell's source hash, the run's facts, the pictures made smaller."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.setdefault(KEY, {})["source_sha256"] = source_sha256(cell.source)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                data["image/png"] = smaller_png(data["image/png"])
            page = data.get("text/html")
            if page and INLINE_PNG.search("".join(page)):     # a panel's still (lessons.widgets)
                data["text/html"] = INLINE_PNG.sub(
                    lambda m: m.group(1) + smaller_png(m.group(2)), "".join(page))
    from labkit.lessons.reference import this_device, this_machine
    nb.metadata.pop("widgets", None)        # an earlier run's widget state: the stills replace it
    nb.metadata[KEY] = {"reference_run": {
        "date": started.isoformat(timespec="seconds"), "size": size,
        "seconds": round(seconds), "machine": this_machine(), "device": this_device(),
        "python": platform.python_version()}}


def refresh(path: Path, size: str | None = None, timeout: int = 3600,
            reference: str = "cpu") -> dict:
    """Execute one notebook in a kernel of its own and save it with its outputs. Its measuring
    cells record their figures as reference run ``reference``'s (labkit.lessons.reference)."""
    import nbformat
    from nbclient import NotebookClient
    from labkit.lessons.reference import RECORD_ENV
    size = size or size_of(path)
    nb = nbformat.read(path, as_version=4)
    env = {"LABKIT_QUICK": "0" if size == "full" else "1", RECORD_ENV: reference}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    started, t0 = dt.datetime.now().astimezone(), time.monotonic()
    try:
        # no widget state saved: a reader with no kernel sees each panel's still instead
        # (labkit.lessons.widgets.Panel.still), and the notebook stays small
        NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    stamp(nb, size=size, started=started, seconds=time.monotonic() - t0)
    write_atomic(path, nbformat.writes(nb) + "\n")
    return {"path": path, "size": size, "seconds": time.monotonic() - t0,
            "bytes": path.stat().st_size, "oversized": oversized(nb)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m authoring.outputs", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("refresh", help="run notebooks and save their outputs")
    r.add_argument("names", nargs="*", help='"05", "zh-TW/05", "classroom" (default: all)')
    r.add_argument("--size", choices=("quick", "full"), help="instead of each notebook's own")
    r.add_argument("--timeout", type=int, default=3600, help="seconds a cell may take")
    r.add_argument("--reference", default="cpu", metavar="LABEL",
                   help="the reference run the measuring cells record as (data/reference/LABEL.json): "
                        "cpu, or gpu on a machine whose GPU llama.cpp offloads to")
    sub.add_parser("check", help="the code cells changed since their outputs were made")
    a = p.parse_args(argv)
    if a.command == "check":
        bad = 0
        for path in notebooks():
            for line in stale(json.loads(path.read_text(encoding="utf-8"))):
                print(f"{path.relative_to(ROOT)}: {line}: its outputs are stale; "
                      f"python -m authoring.outputs refresh {path.relative_to(NOTEBOOKS).with_suffix('')}")
                bad += 1
        return 1 if bad else 0
    failed = []
    for path in notebooks(a.names):
        name = path.relative_to(ROOT)
        print(f"running {name} at {a.size or size_of(path)} size ...", file=sys.stderr, flush=True)
        try:
            done = refresh(path, a.size, a.timeout, a.reference)
        except Exception as exc:          # a cell that raised, a timeout: this notebook is left
            failed.append(name)           # as it was, and the others still run
            last = [line for line in str(exc).splitlines() if line.strip()][-1:] or [repr(exc)]
            print(f"{name}: FAILED, left as it was: {type(exc).__name__}: {last[0][:300]}", flush=True)
            continue
        print(f"{name}: {done['seconds']:.0f} s, {done['bytes'] / 1000:.0f} kB"
              + "".join(f"; output over {MAX_OUTPUT_BYTES // 1000} kB: {x}" for x in done["oversized"]),
              flush=True)
    if failed:
        print(f"{len(failed)} notebook(s) failed: " + ", ".join(map(str, failed)), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
