"""The rendered edition (labkit.book): every page built, every link leading somewhere, the
language switch to the twin page; then, in headless Chromium, what a reader sees."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from labkit import book

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    return out, book.build(out)


def _page(language="en", name="05_slots_live", source="notebooks/05_slots_live.ipynb"):
    return book.Page(language, name, ROOT / source)


PAGES = book.pages()


# ------------------------------------------------------------------------------ the links

@pytest.mark.parametrize("href, page, want", [
    ("06_counterexamples.ipynb", _page(), "06_counterexamples.html"),
    ("06_counterexamples.ipynb#the-cache", _page(), "06_counterexamples.html#the-cache"),
    ("README.md", _page(), "index.html"),
    ("../docs/GLOSSARY.md", _page(), "glossary.html"),
    ("../../docs/GLOSSARY.md", _page("zh-TW", source="notebooks/zh-TW/05_slots_live.ipynb"),
     "glossary.html"),
    ("notebooks/zh-TW/04_split_vs_unified.ipynb", _page("zh-TW", "index", "README.zh-TW.md"),
     "04_split_vs_unified.html"),
    ("notebooks/README.md", _page("zh-TW", "index", "README.zh-TW.md"), "../en/index.html"),
    ("../docs/ENGINE.md", _page(), "../../../docs/ENGINE.md"),
    ("../labkit/engine/engine.py", _page(), "../../../labkit/engine/engine.py"),
    ("https://github.com/ggml-org/llama.cpp", _page(), "https://github.com/ggml-org/llama.cpp"),
    ("#a-heading", _page(), "#a-heading"),
])
def test_a_link_leads_to_its_page_or_its_file(href, page, want):
    assert book.rewrite_href(href, page, PAGES) == (want, True)


def test_a_link_to_a_file_that_does_not_exist_is_reported():
    assert book.rewrite_href("../docs/NOPE.md", _page(), PAGES) == \
        ("../../../docs/NOPE.md", False)
    assert book.rewrite_href("../../outside.md", _page(), PAGES)[1] is False


def test_with_a_source_url_files_lead_to_the_code_host():
    new, ok = book.rewrite_href("../docs/ENGINE.md#prompt-cache", _page(), PAGES,
                                source_url="https://example.org/labkit/blob/main/")
    assert (new, ok) == ("https://example.org/labkit/blob/main/docs/ENGINE.md#prompt-cache", True)


def test_every_notebook_has_a_twin_page_and_each_language_an_index_and_a_glossary():
    by_language = {lang: {p.name for p in PAGES if p.language == lang} for lang in book.LANGUAGES}
    assert by_language["en"] == by_language["zh-TW"]
    assert {"index", "glossary", "00_setup", "05_slots_live", "classroom"} <= by_language["en"]
    assert len(PAGES) == 2 * (len(list((ROOT / "notebooks").glob("*.ipynb"))) + 2)


def test_the_chinese_map_is_the_notebooks_section_of_the_chinese_readme():
    text = book.zh_map((ROOT / "README.zh-TW.md").read_text(encoding="utf-8"))
    assert text.startswith(book.ZH_MAP_HEADING) and "\n## " not in text
    assert "notebooks/zh-TW/05_slots_live.ipynb" in text


# ------------------------------------------------------------------------------ the build

def test_the_site_is_built_with_no_link_leading_nowhere(site):
    out, built = site
    assert built.broken == []
    for page in built.pages:
        text = (out / page.path).read_text(encoding="utf-8")
        assert f'<html lang="{page.language}">' in text and 'class="labkit-bar"' in text
    assert (out / "index.html").exists()


def test_a_broken_link_and_a_missing_anchor_are_caught(tmp_path):
    """The build's own failing case: a notebook linking to a missing file and to an anchor its
    target page does not have, and a markdown link at a code host's anchor that no heading
    gives (beside one that a heading does)."""
    root = tmp_path / "repo"
    for rel in ("notebooks/README.md", "README.zh-TW.md", "docs/GLOSSARY.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / "notebooks" / "zh-TW").mkdir()
    (root / "notebooks/README.md").write_text(
        "# map\n\n## The map: of it all\n\n[a](01_a.ipynb#no-such-heading)\n")
    (root / "README.zh-TW.md").write_text(
        "# x\n\n## 筆記本\n\n[a](notebooks/zh-TW/01_a.ipynb)\n"
        "[there](notebooks/README.md#the-map-of-it-all) [gone](notebooks/README.md#the-map)\n")
    (root / "docs/GLOSSARY.md").write_text("# glossary\n")
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# A\n\n[gone](../docs/GONE.md)")])
    for folder in ("notebooks", "notebooks/zh-TW"):
        nbformat.write(nb, root / folder / "01_a.ipynb")
    built = book.build(tmp_path / "out", root=root)
    assert sorted(built.broken) == [("en/01_a.html", "../docs/GONE.md"),
                                    ("en/index.html", "en/01_a.html#no-such-heading"),
                                    ("zh-TW/01_a.html", "../docs/GONE.md"),
                                    ("zh-TW/index.html", "en/index.html#the-map")]


# ------------------------------------------------------------------------------ as seen

# The prose a reader sees, as tests/browser_support.py reads it in JupyterLab: each rendered
# markdown block's text, code and formulas taken out.
PROSE = """(selector) => [...document.querySelectorAll(selector)].map(shown => {
  const prose = shown.cloneNode(true);
  prose.querySelectorAll('pre, code, script, .MathJax, .MathJax_Display, .MathJax_Preview, '
                         + 'mjx-container').forEach(e => e.remove());
  return prose.textContent;
})"""


# True once the page has no MathJax, or MathJax has finished its first typesetting: its startup
# signal "End" comes after the typeset (a hook registered after the signal runs at once). An idle
# queue is not enough: on a busy machine it is idle before the typesetting is queued.
TYPESET = """() => {
  const mj = window.MathJax;
  if (!mj || !mj.Hub || !mj.Hub.Register) return true;
  if (window.labkitTypeset === undefined) {
    window.labkitTypeset = false;
    mj.Hub.Register.StartupHook("End", () => { window.labkitTypeset = true; });
  }
  return window.labkitTypeset;
}"""


def what_a_reader_sees(out: Path, pages: list, formula_page: str | None = None) -> list[str]:
    """Each page in headless Chromium: it loads, every image appears, no markdown markup is
    left as text, every link on it leads to a file (and its anchor, when it names one), the
    language switch leads to the twin page, and the formulas of ``formula_page`` are typeset.
    What is wrong, one line each."""
    from markdown_support import left_over
    from playwright.sync_api import sync_playwright
    problems = []
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium"))
        try:
            page = chromium.new_page()
            for entry in pages:
                page.goto((out / entry.path).as_uri(), wait_until="load")
                page.wait_for_function(TYPESET, timeout=60000)
                images = page.eval_on_selector_all(
                    "img", "els => els.map(e => [e.complete && e.naturalWidth > 0, e.src.slice(0, 60)])")
                problems += [f"{entry.path}: an image does not show: {src}"
                             for ok, src in images if not ok]
                if entry.source.suffix == ".ipynb":
                    import nbformat
                    want = book.images_in(nbformat.read(entry.source, as_version=4))
                    shown = page.eval_on_selector_all(".jp-OutputArea-output img", "els => els.length")
                    if shown != want:
                        problems.append(f"{entry.path}: {shown} of the notebook's {want} images shown")
                    if page.eval_on_selector_all(".jp-OutputArea-output", "els => els.filter("
                                                 "e => e.textContent.includes('Error displaying widget')"
                                                 " || e.textContent.includes('VBox(children=')).length"):
                        problems.append(f"{entry.path}: a widget shown as an error or as its repr")
                prose = page.evaluate(PROSE, ".jp-MarkdownCell .jp-RenderedMarkdown"
                                      if entry.source.suffix == ".ipynb" else "main")
                for text in prose:
                    problems += [f"{entry.path}: markup shown as text: {m}" for m in left_over(text)]
                    if "$$" in text:
                        problems.append(f"{entry.path}: a formula is not typeset")
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                    if not href.startswith("file:"):
                        continue
                    parts = urlsplit(href)
                    target = Path(unquote(parts.path))
                    if not target.exists():
                        problems.append(f"{entry.path}: a link leads nowhere: {href}")
                    elif parts.fragment and target.suffix == ".html":
                        ids = re.findall(r'\sid="([^"]*)"', target.read_text(encoding="utf-8"))
                        if unquote(parts.fragment) not in map(unquote, ids):
                            problems.append(f"{entry.path}: no anchor {parts.fragment} in {target.name}")
                page.click("a.labkit-switch")
                page.wait_for_load_state("load")
                twin = f"{book.OTHER[entry.language]}/{entry.name}.html"
                if not page.url.endswith(twin) or \
                        page.evaluate("document.documentElement.lang") != book.OTHER[entry.language]:
                    problems.append(f"{entry.path}: the language switch leads to {page.url}")
            if formula_page:
                page.goto((out / formula_page).as_uri(), wait_until="load")
                page.wait_for_function(TYPESET, timeout=60000)
                if page.eval_on_selector_all(".MathJax, .MathJax_Display", "els => els.length") == 0:
                    problems.append(f"{formula_page}: MathJax typeset no formula")
        finally:
            chromium.close()
    return problems


def _browser():
    import sys
    sys.path.insert(0, str(ROOT / "tests"))
    from browser_support import browser_missing
    if reason := browser_missing():
        pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.browser
def test_every_page_as_a_reader_sees_it(site):
    _browser()
    out, built = site
    assert what_a_reader_sees(out, built.pages, "en/05_roofline.html") == []   # the speed formula


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.browser
def test_the_reader_check_sees_what_is_wrong(tmp_path):
    """Its failing case: a page with markers shown as text, an image that does not load, a
    link to nothing, an untypeset formula and a missing twin."""
    _browser()
    import nbformat
    root = tmp_path / "repo"
    (root / "notebooks" / "zh-TW").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "notebooks/README.md").write_text("# map\n\n[a](01_a.ipynb)\n")
    (root / "README.zh-TW.md").write_text("# x\n\n## 筆記本\n\n[a](notebooks/zh-TW/01_a.ipynb)\n")
    (root / "docs/GLOSSARY.md").write_text("# glossary\n")
    import base64
    import io

    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buf, format="PNG")
    code = nbformat.v4.new_code_cell("plot(); panel", outputs=[
        nbformat.v4.new_output("display_data", data={
            "image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": "<Figure>"}),
        nbformat.v4.new_output("display_data", data={        # a widget with no still
            book.WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "0" * 32},
            "text/plain": "VBox(children=(IntSlider(value=4),))"})])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# A\n\n**在餐廳裡：**第一位 ![x](missing.png)"), code])
    nbformat.write(nb, root / "notebooks" / "01_a.ipynb")
    nbformat.write(nb, root / "notebooks" / "zh-TW" / "01_a.ipynb")
    out = tmp_path / "out"
    built = book.build(out, root=root)
    (out / "zh-TW" / "01_a.html").unlink()
    page = out / "en" / "01_a.html"                          # the plot's picture lost on the way
    page.write_text(re.sub(r'<img [^>]*src="data:image/png[^>]*>', "", page.read_text(encoding="utf-8")),
                    encoding="utf-8")
    (out / "en" / "glossary.html").write_text(
        '<html lang="en"><body><nav class="labkit-bar"><a class="labkit-switch" '
        'href="../zh-TW/glossary.html">x</a></nav><main>$$x^2$$</main></body></html>')
    problems = what_a_reader_sees(out, [p for p in built.pages if p.language == "en"])
    text = "\n".join(problems)
    assert "en/01_a.html: markup shown as text: **在餐廳裡：**" in text
    assert "en/01_a.html: an image does not show" in text
    assert "en/01_a.html: the language switch leads to" in text or \
        "en/01_a.html: a link leads nowhere" in text
    assert "en/glossary.html: a formula is not typeset" in text
    assert "en/01_a.html: 0 of the notebook's 1 images shown" in text
    assert "en/01_a.html: a widget shown as an error or as its repr" in text


def test_a_page_keeps_a_panels_still_and_drops_its_live_widget():
    import nbformat
    view = {"version_major": 2, "version_minor": 0, "model_id": "0" * 32}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("panel", outputs=[
        nbformat.v4.new_output("display_data", data={
            book.WIDGET_VIEW: view, "text/plain": "VBox(...)",
            "text/html": '<p><b>Panel</b></p><img src="data:image/png;base64,AAAA"><table></table>'})])])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    assert book.images_in(nb) == 1
    page = book.without_live_widgets(nb)
    assert "widgets" not in page.metadata
    assert set(page.cells[0].outputs[0]["data"]) == {"text/plain", "text/html"}
