"""Every notebook as a learner meets it: opened in JupyterLab in a real (headless) browser, run
from the Run menu, top to bottom.

A notebook fails on any error output, on a code cell that never ran, on a widget that does
not render, and on bold or italics that JupyterLab shows with its asterisks or runs on into the
next span (what tests/test_rendered_markdown.py finds without a browser); in notebook 01,
moving a slider of the batching panel must redraw the panel. One screenshot per notebook lands
in results/browser/. Needs the `playwright` package and a `chromium` on PATH (`.ci/run`
installs Debian's); without them the tests skip and say so.

nbval runs every notebook's code already, so the default run drives only :data:`DRIVEN`:
each kind of control panel once and each edition at least once. The other notebooks are
marked `long` and run with ``--lane=long`` (.ci/run) or ``--lane=all``.
"""

import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from browser_support import DRIVEN, JupyterLab, LabNotebook, browser_missing

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EDITIONS = NOTEBOOKS + sorted((ROOT / "notebooks" / "zh-TW").glob("*.ipynb"))   # both languages
SCREENSHOTS = ROOT / "results" / "browser"
# Quick mode takes seconds to minutes per notebook; a loaded 2-core machine is much slower.
NOTEBOOK_TIMEOUT_S = 15 * 60


def in_the_browser(test):
    """Marks a test that drives JupyterLab in Chromium: slow, and in the browser lane."""
    return pytest.mark.slow(pytest.mark.browser(test))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a copy of the notebooks (what it saves stays out of the checkout)."""
    if reason := browser_missing():
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    root.mkdir()
    (root / "zh-TW").mkdir()
    for path in EDITIONS:
        shutil.copy(path, root / path.relative_to(ROOT / "notebooks"))
    with JupyterLab(root, results=base / "results", home=base / "home") as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium"))
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def notebook_page(lab, browser):
    """A fresh browser page; afterwards the notebook's kernel, and what it started, are stopped."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        yield page
    finally:
        page.close()
        lab.shut_down_kernels()


def _name(path):
    """The notebook's path inside the lab's folder: 05_slots_live.ipynb, zh-TW/05_slots_live.ipynb."""
    return path.relative_to(ROOT / "notebooks").as_posix()


def _panels(path) -> set[str]:
    """The kinds of control panel a notebook's code cells build (``widgets.gantt_panel``)."""
    cells = nbformat.read(path, as_version=4).cells
    return {m for c in cells if c.cell_type == "code"
            for m in re.findall(r"\bwidgets\.(\w+_panel)\(", c.source)}


def test_the_default_set_drives_every_panel_and_both_editions():
    driven = [ROOT / "notebooks" / name for name in DRIVEN]
    assert all(path in EDITIONS for path in driven), DRIVEN
    every = set().union(*map(_panels, EDITIONS))
    assert len(every) >= 7, every               # the panels of 01, 03, 04, 05, 07, 08, classroom
    assert set().union(*map(_panels, driven)) == every
    assert {"zh-TW" in path.parts for path in driven} == {False, True}


def _lane(path):
    """A notebook as a test parameter: those outside :data:`DRIVEN` are in the `long` lane."""
    name = _name(path)
    return pytest.param(path, id=name.removesuffix(".ipynb"),
                        marks=() if name in DRIVEN else pytest.mark.long)


@pytest.mark.parametrize("path", [_lane(p) for p in EDITIONS])
@in_the_browser
def test_notebook_runs_in_jupyterlab(path, lab, notebook_page, capsys):
    name = _name(path)
    nb = LabNotebook(notebook_page, lab, name)
    started = time.monotonic()
    outcome = "did not finish"
    try:
        nb.open()
        nb.run_all()
        nb.wait_until_done(NOTEBOOK_TIMEOUT_S)
        problems = nb.problems()
        if name == "01_restaurant.ipynb" and not problems:
            before, after = nb.move_slider("Same guests, three ways of batching", "slots (tables)")
            if after == before:
                problems.append("moving the batching panel's 'slots (tables)' slider left its "
                                "output as it was")
            problems += nb.problems()
        outcome = "FAILED" if problems else "ok"
    finally:
        # Photographed whatever happened: a failure is easier to read in its picture.
        shot = nb.screenshot(SCREENSHOTS / f"{name.removesuffix('.ipynb').replace('/', '_')}.png")
        with capsys.disabled():
            print(f"\n{name}: {outcome} after {time.monotonic() - started:.0f} s in "
                  f"JupyterLab; screenshot {shot}")
    assert not problems, f"{name} in JupyterLab:\n" + "\n".join(problems)


# What a learner would see go wrong, one cell each, after a warning that is not an error.
CHECKS_NOTEBOOK = [
    "import warnings\nwarnings.warn('a warning on stderr is not an error')",
    "import ipywidgets\nipywidgets.IntSlider(3, description='fine')",
    "from IPython.display import display\n"
    "display({'application/vnd.jupyter.widget-view+json': {'model_id': '0' * 32, "
    "'version_major': 2, 'version_minor': 0}, 'text/plain': 'a widget without a model'}, raw=True)",
    "raise ValueError('on purpose')",
    "print('never runs: Run All stops at the error')",
]
# And in a markdown cell: a label written right, one whose markers stay as text, one whose bold
# runs on to the next span.
CHECKS_PROSE = ("**在餐廳裡**：第一位客人進門。**在餐廳裡：**第一位客人進門。\n\n"
                "**給工程師的說法。**那張單是一個**請求**（request）。")


@in_the_browser
def test_the_checks_see_what_a_learner_sees(lab, notebook_page):
    """The checks above on a notebook made to fail: they must name exactly the broken cells."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CHECKS_NOTEBOOK]
                                  + [nbformat.v4.new_markdown_cell(CHECKS_PROSE)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # cell 4 never runs (cell 3 raises first) but carries a committed output, as every notebook
    # with a reference run does: it must still be reported, not taken for a cell that ran
    nb.cells[4].execution_count = 7
    nb.cells[4].outputs = [nbformat.v4.new_output("stream", name="stdout", text="from the reference run\n")]
    nbformat.write(nb, lab.root / "checks.ipynb")
    page = LabNotebook(notebook_page, lab, "checks.ipynb")
    page.open()
    page.run_all()
    page.wait_until_done(300)
    problems = page.problems()
    assert [p.split(" ")[1] for p in problems] == ["2", "2", "3", "4", "5", "5"], problems
    assert "Error displaying widget" in problems[0] and "1 widget output(s), 0 rendered" in problems[1]
    assert "ValueError: on purpose" in problems[2] and "did not run" in problems[3]
    assert problems[4] == "cell 5 (markdown): markers shown as text: **在餐廳裡：**"
    assert problems[5] == "cell 5 (markdown): bold inside bold: 給工程師的說法。那張單是一個請求"
