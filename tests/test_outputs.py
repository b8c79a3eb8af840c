"""Committed outputs are never stale (labkit.outputs): every code cell with outputs carries the
hash of the source they came from, and a changed cell is named."""

import base64
import io
import json

import nbformat
import pytest

from labkit import outputs

NOTEBOOKS = outputs.notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_committed_output_is_stale(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert outputs.stale(nb) == [], (
        f"{path.name}: code changed since its outputs were made; "
        f"python -m labkit.outputs refresh {path.stem}")
    assert outputs.oversized(nb) == []


def _run(sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    for cell in nb.cells:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    import datetime as dt
    outputs.stamp(nb, size="quick", started=dt.datetime(2026, 12, 3), seconds=1)
    return json.loads(nbformat.writes(nb))


def test_a_fresh_run_is_not_stale():
    assert outputs.stale(_run(["x = 1", "print(x)"])) == []


def test_a_cell_changed_after_its_run_is_named():
    nb = _run(["x = 1", "print(x)"])
    nb["cells"][1]["source"] = "print(x + 1)"
    (line,) = outputs.stale(nb)
    assert line.startswith("cell 1 (id ")


def test_outputs_with_no_hash_and_a_cell_never_run_are_named():
    nb = _run(["x = 1"])
    nb["cells"].append(json.loads(json.dumps(nbformat.v4.new_code_cell("y = 2"))))   # added later
    assert outputs.stale(nb) == [f"cell 1 (id {nb['cells'][1]['id']}): never run"]
    pasted = json.loads(json.dumps(nb))
    pasted["metadata"].pop("labkit")
    pasted["cells"][0]["metadata"].pop("labkit")
    assert outputs.stale(pasted) == [f"cell 0 (id {pasted['cells'][0]['id']})"]


def test_a_clean_notebook_with_no_run_is_not_stale():
    nb = json.loads(nbformat.writes(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x = 1")])))
    assert outputs.stale(nb) == []


def test_an_oversized_output_is_named():
    nb = _run(["x = 1"])
    nb["cells"][0]["outputs"][0]["text"] = "x" * (outputs.MAX_OUTPUT_BYTES + 1)
    assert outputs.oversized(nb) == ["cell 0: 300 kB"]


def test_pictures_are_stored_smaller_and_still_pictures():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(range(100), [i * i for i in range(100)])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    raw = base64.b64encode(buf.getvalue()).decode()
    small = outputs.smaller_png(raw)
    assert len(small) < len(raw)
    with Image.open(io.BytesIO(base64.b64decode(small))) as im:
        assert im.size == (600, 400)


@pytest.mark.parametrize("names, want", [(["05"], ["05_roofline.ipynb", "05_slots_live.ipynb"]),
                                         (["05_s"], ["05_slots_live.ipynb"]),
                                         (["zh-TW/05"], ["zh-TW/05_roofline.ipynb",
                                                         "zh-TW/05_slots_live.ipynb"])])
def test_names_pick_notebooks_of_one_edition(names, want):
    got = [str(p.relative_to(outputs.NOTEBOOKS)) for p in outputs.notebooks(names)]
    assert got == want
    with pytest.raises(SystemExit, match="no notebook matches"):
        outputs.notebooks(["99"])
