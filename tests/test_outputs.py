"""Committed outputs are never stale (authoring.outputs): every code cell with outputs carries the
hash of the source they came from, and a changed cell is named."""

import base64
import io
import json

import nbformat
import pytest

from authoring import outputs

NOTEBOOKS = outputs.notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_committed_output_is_stale(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert outputs.stale(nb) == [], (
        f"{path.name}: code changed since its outputs were made; "
        f"python -m authoring.outputs refresh {path.stem}")
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


# ------------------------------------------------------------------------------ the reference run

def _reference(path):
    return json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("labkit", {}).get(
        "reference_run")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_notebook_shows_a_reference_run_that_opens_with_the_banner(path):
    """What a reader sees on a code host before installing anything: every code cell's outputs
    from one dated run, the banner (versions, machine, model, mode: which size) first."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    run = _reference(path)
    assert run, f"{path.name} has no reference run: python -m authoring.outputs refresh {path.stem}"
    assert {"date", "size", "machine", "device", "seconds"} <= set(run)
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    printed = "".join("".join(o.get("text", "")) for o in first["outputs"])
    assert printed.startswith("labkit ") and ("mode:" in printed or "模式：" in printed), printed[:200]
    assert ("quick (" in printed or "快速（" in printed) == (run["size"] == "quick")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.parent.name == "zh-TW"],
                         ids=lambda p: p.stem)
def test_the_chinese_edition_shows_no_english_sentence_in_its_committed_outputs(path):
    from authoring.editions import english_printed_in
    nb = nbformat.read(path, as_version=4)          # multi-line texts joined, as a run gives them
    found = [line for i, c in enumerate(nb.cells) if c.cell_type == "code"
             for line in english_printed_in(path, i, c.get("outputs", []))]
    assert found == []


def test_a_chinese_output_with_an_english_sentence_is_caught():
    from authoring.editions import english_printed_in
    out = [nbformat.v4.new_output("stream", name="stdout", text="已儲存：the file was saved here\n")]
    assert english_printed_in("notebooks/zh-TW/x.ipynb", 3, out) == [
        "zh-TW/x.ipynb cell 3: English printed: 'the file was saved here'"]


def test_the_reference_figures_come_from_the_committed_run():
    """Each measuring notebook's committed table shows the figures data/reference/cpu.json
    holds for it: the file and the outputs were made by the same run."""
    from labkit.lessons import reference
    runs = reference.load()
    assert "cpu" in runs, "no CPU reference run: python -m authoring.outputs refresh"
    for name, rows in reference.QUANTITIES.items():
        entry = runs["cpu"]["notebooks"][name]
        path = outputs.NOTEBOOKS / f"{name}.ipynb"
        assert entry["size"] == _reference(path)["size"], name
        nb = json.loads(path.read_text(encoding="utf-8"))
        (cell,) = [c for c in nb["cells"] if c["cell_type"] == "code"
                   and f'nb.beside_reference("{name}"' in "".join(c["source"])]
        shown = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                        for o in cell["outputs"])
        assert "this run is reference run 'cpu'" in shown, name
        for key, value in entry["values"].items():
            assert f"{round(value, 3):g}"[:4] in shown, (name, key, value)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def widgets_without_a_still(nb) -> list[str]:
    """The widget outputs a reader with no kernel would see as a repr: no HTML still beside."""
    return [f"cell {i}" for i, c in enumerate(nb["cells"]) for o in c.get("outputs", [])
            if WIDGET_VIEW in o.get("data", {}) and "text/html" not in o["data"]]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_committed_widget_shows_a_still_to_a_reader_with_no_kernel(path):
    assert widgets_without_a_still(json.loads(path.read_text(encoding="utf-8"))) == []


def test_a_widget_with_no_still_is_named():
    nb = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "data": {WIDGET_VIEW: {}, "text/plain": "VBox()"}}]}]}
    assert widgets_without_a_still(nb) == ["cell 0"]


def test_each_notebook_runs_at_its_own_size_and_the_committed_run_says_which():
    assert outputs.size_of(outputs.NOTEBOOKS / "05_slots_live.ipynb") == "full"
    assert outputs.size_of(outputs.NOTEBOOKS / "05_roofline.ipynb") == "full"
    assert outputs.size_of(outputs.NOTEBOOKS / "zh-TW" / "08_capacity_planning.ipynb") == "full"
    for path in NOTEBOOKS:
        run = _reference(path)
        if run:
            assert run["size"] == outputs.size_of(path), path.name


def test_a_refreshed_notebook_keeps_no_widget_state_and_its_pictures_are_made_smaller():
    import datetime as dt
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("panel")])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": {}}}}
    from PIL import Image
    buf = io.BytesIO()
    Image.effect_noise((200, 120), 40).convert("RGBA").save(buf, format="PNG")
    png = base64.b64encode(buf.getvalue()).decode()
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
        "image/png": png, "text/html": f'<img src="data:image/png;base64,{png}">'})]
    outputs.stamp(nb, size="full", started=dt.datetime(2026, 12, 4), seconds=1)
    assert "widgets" not in nb.metadata
    data = nb.cells[0].outputs[0]["data"]
    assert len(data["image/png"]) <= len(png)
    inline = outputs.INLINE_PNG.search(data["text/html"]).group(2)
    assert inline == data["image/png"]                   # the still's picture, made smaller alike
