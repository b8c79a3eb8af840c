"""The notebooks keep the workbook's shape: committed with one reference run's outputs or with
none, a banner first, what you will be able to do and how long it takes, Summary and Exercises at
the end, quick mode read through labkit, no server left running past its cell. (nbval executes
them; this checks form.)"""

import re
from pathlib import Path

import nbformat
import pytest

from labkit import notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb"))


def test_the_notebooks_exist():
    names = [p.name for p in NOTEBOOKS]
    assert names[:9] == ["00_setup.ipynb", "01_restaurant.ipynb", "01_slot_engine.ipynb",
                         "02_build_a_batcher.ipynb", "03_kv_bytes.ipynb", "03_kv_capacity.ipynb",
                         "04_slot_context.ipynb", "04_split_vs_unified.ipynb",
                         "05_roofline.ipynb"]   # a chapter's parts sort in their order
    assert {"05_slots_live.ipynb", "06_counterexamples.ipynb", "07_scheduling.ipynb",
            "08_capacity_planning.ipynb"} <= set(names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_shape(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    # Committed with the outputs of one reference run (authoring.outputs), or with none at all.
    assert nb.metadata.get("labkit", {}).get("reference_run") or all(
        not c.outputs and c.execution_count is None for c in code), \
        "outputs that no reference run made: python -m authoring.outputs refresh"
    # Opens with goals and time, then the banner.
    assert re.search(r"After this (notebook|part) you will be able to", nb.cells[0].source)
    assert re.search(r"\*\*Machine time:\*\*.*CPU.*GPU", nb.cells[0].source, re.S)
    assert "nb.banner()" in code[0].source and "setup" in code[0].metadata.get("tags", [])
    # Ends with a summary and exercises, every exercise cell tagged and unanswered.
    assert "## Summary" in md and "## Exercises" in md
    exercise_cells = [c for c in code if "exercise" in c.metadata.get("tags", [])]
    assert exercise_cells and all(re.search(r"^answer_\d+_\d+ = \.\.\.$", c.source, re.M)
                                  for c in exercise_cells)
    # Quick mode through labkit only; servers only inside a with block.
    src = "\n".join(c.source for c in code)
    assert "LABKIT_QUICK" not in src and "os.environ" not in src
    assert not re.search(r"\bstart\(", src), "start servers with `with launch(...)`"
    # Both voices: the restaurant and llama.cpp.
    assert "restaurant" in md.lower() and "llama.cpp" in md


def test_quick_mode_helper(monkeypatch):
    for v, want in [("1", True), ("yes", True), ("0", False), ("", False), ("false", False)]:
        monkeypatch.setenv("LABKIT_QUICK", v)
        assert notebook.quick() is want
    monkeypatch.setenv("LABKIT_QUICK", "1")
    assert notebook.pick("q", "f") == "q"
    monkeypatch.delenv("LABKIT_QUICK")
    assert notebook.pick("q", "f") == "f"


def test_banner_is_short_and_names_the_model():
    text = notebook.banner_text()
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("labkit ") and "llama-cpp-python" in lines[0]
    assert "sha256" in lines[2] and "CPUs" in lines[1]


def test_recipe_keeps_hash_and_flags(tmp_path, monkeypatch):
    from labkit.server.launch import ServerConfig
    monkeypatch.setenv("LABKIT_RESULTS", str(tmp_path))
    rec = notebook.recipe(ServerConfig(n_ctx=2048, n_slots=2, kv_unified=False))
    assert len(rec["model"]["sha256"]) == 64
    flags = rec["flags"]
    assert flags[flags.index("-c") + 1] == "2048" and "--no-kv-unified" in flags
    assert "--port" not in flags
    path = notebook.save_recipe(rec)
    assert path.parent == tmp_path and path.read_text().startswith("{")


def test_compute_path_without_gpu():
    r = {"llama_cpp": {"gpu_offload": False}, "gpus": [], "gpu_note": "no NVIDIA GPU found"}
    p = notebook.compute_path(r)
    assert p["path"] == "cpu" and p["n_gpu_layers"] == 0 and "no NVIDIA GPU" in p["why"]
    r = {"llama_cpp": {"gpu_offload": True}, "gpus": [{"index": 0}], "gpu_note": None}
    assert notebook.compute_path(r)["path"] == "gpu"


def test_document_grows_to_the_asked_length():
    text = notebook.document(100, lambda t: len(t.split()))
    assert len(text.split()) >= 100
    assert notebook.document(100, lambda t: len(t.split())) == text      # same seed, same text
