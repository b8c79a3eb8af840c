"""The rendered edition: the workbook as a static website, both languages, from one command.

    python -m labkit.book                    # builds results/book/, prints where to open it
    python -m labkit.book --out DIR
    python -m labkit.book --source-url https://example.org/labkit/blob/main/

The site is built with nbconvert (pure Python, installed with JupyterLab), with no Node and no
network: each notebook, as committed, with its outputs, becomes one HTML page; the map of
notebooks is each language's index (``notebooks/README.md`` for English, the notebooks
section of ``README.zh-TW.md`` for Chinese), and ``docs/GLOSSARY.md`` is the glossary, in both.
Every page carries a bar with the index, the glossary and the language switch, which leads to
the same page in the other edition. The formulas are typeset by a copy of MathJax 2 from the
``jupyter-server-mathjax`` package, so they render offline too.

Links are rewritten for the site: a link to a notebook, a README map or the glossary leads to
its page; a link to any other file of the repository leads to that file, relative to the
checkout the site was built from (by a relative path, wherever ``--out`` is), or under ``--source-url``
when one is given (a code host's address of the repository). A link whose target does not
exist is kept, and listed: the command prints each one and exits with status 1.

Layout::

    results/book/index.html          -> en/index.html
    results/book/en/index.html       the English map (notebooks/README.md)
    results/book/en/05_slots_live.html
    results/book/en/glossary.html
    results/book/zh-TW/...           the same pages from the Chinese edition
    results/book/_static/mathjax/    MathJax, when jupyter-server-mathjax is installed
"""

from __future__ import annotations

import argparse
import html
import json
import os
import posixpath
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .machine.atomic import write_atomic

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("en", "zh-TW")
OTHER = {"en": "zh-TW", "zh-TW": "en"}
DEFAULT_OUT = ROOT / "results" / "book"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"

BAR_WORDS = {
    "en": {"index": "Notebooks", "glossary": "Glossary", "switch": "中文版", "source": "source"},
    "zh-TW": {"index": "筆記本", "glossary": "詞彙表", "switch": "English", "source": "原始檔"},
}
TITLES = {"en": {"index": "labkit: the notebooks", "glossary": "labkit: glossary"},
          "zh-TW": {"index": "labkit：筆記本", "glossary": "labkit：詞彙表"}}
ZH_MAP_HEADING = "## 筆記本"


@dataclass
class Page:
    """One page of the site: where it comes from and where it goes."""
    language: str
    name: str            # "05_slots_live", "index", "glossary"
    source: Path         # the repository file it is made from

    @property
    def path(self) -> str:
        """Its path in the site, "en/05_slots_live.html"."""
        return f"{self.language}/{self.name}.html"


@dataclass
class Site:
    pages: list[Page]
    broken: list[tuple[str, str]] = field(default_factory=list)   # (page, href)
    # links into another page at an anchor: (page, target page, anchor), checked once built
    anchors: list[tuple[str, str, str]] = field(default_factory=list)


def pages(root: Path = ROOT) -> list[Page]:
    """Every page: both editions' notebooks, each language's index and glossary."""
    out = []
    for language in LANGUAGES:
        folder = root / "notebooks" / ("zh-TW" if language == "zh-TW" else "")
        out += [Page(language, p.stem, p) for p in sorted(folder.glob("*.ipynb"))]
        out.append(Page(language, "index", root / ("notebooks/README.md" if language == "en"
                                                   else "README.zh-TW.md")))
        out.append(Page(language, "glossary", root / "docs" / "GLOSSARY.md"))
    return out


def site_path_of(repo_path: str, language: str, all_pages: list[Page], root: Path = ROOT
                 ) -> str | None:
    """The site page a repository file becomes, for a page in ``language``: a notebook its
    page, a README map its language's index, the glossary the glossary of ``language``."""
    if repo_path == "docs/GLOSSARY.md":
        return f"{language}/glossary.html"
    for p in all_pages:
        if p.name != "glossary" and p.source == root / repo_path:
            return p.path
    return None


def rewrite_href(href: str, page: Page, all_pages: list[Page], root: Path = ROOT,
                 source_url: str | None = None, to_root: str = "../../..") -> tuple[str, bool]:
    """A link of ``page`` as the site needs it, and whether its target exists. A link to a
    page becomes a link to that page; a link to another repository file a link to the file
    (relative to the checkout, ``to_root`` from a language folder, or under ``source_url``);
    anything else is left alone."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("#", "mailto:", "data:")) or not parts.path:
        return href, True
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    source_dir = page.source.parent.relative_to(root).as_posix()
    repo_path = posixpath.normpath(posixpath.join(source_dir, parts.path))
    if repo_path.startswith("../"):
        return href, False
    target = site_path_of(repo_path, page.language, all_pages, root)
    if target is not None:
        return posixpath.relpath(target, posixpath.dirname(page.path)) + fragment, True
    exists = (root / repo_path).exists()
    if source_url:
        return source_url.rstrip("/") + "/" + repo_path + fragment, exists
    return posixpath.join(to_root, repo_path) + fragment, exists


_HREF = re.compile(r'(<a\s[^>]*?href=")([^"]*)(")', re.I)


def rewrite_links(body: str, page: Page, all_pages: list[Page], site: Site, root: Path = ROOT,
                  source_url: str | None = None, to_root: str = "../../..") -> str:
    def one(m):
        new, ok = rewrite_href(html.unescape(m[2]), page, all_pages, root, source_url, to_root)
        if not ok:
            site.broken.append((page.path, m[2]))
        target, _, anchor = new.partition("#")
        if anchor and target.endswith(".html") and "://" not in target:
            site.anchors.append((page.path, posixpath.normpath(
                posixpath.join(posixpath.dirname(page.path), target)), anchor))
        return m[1] + html.escape(new, quote=True) + m[3]
    return _HREF.sub(one, body)


def bar(page: Page) -> str:
    """The bar at the top of every page: index, glossary, the other language, the source."""
    w = BAR_WORDS[page.language]
    up = posixpath.relpath(".", posixpath.dirname(page.path))
    twin = f"{up}/{OTHER[page.language]}/{page.name}.html"
    style = ("position:sticky;top:0;z-index:1000;display:flex;gap:1.5em;padding:.5em 1em;"
             "background:#f5f5f5;border-bottom:1px solid #ddd;font:14px sans-serif")
    return (f'<nav class="labkit-bar" style="{style}">'
            f'<a href="index.html">{w["index"]}</a>'
            f'<a href="glossary.html">{w["glossary"]}</a>'
            f'<a class="labkit-switch" hreflang="{OTHER[page.language]}" '
            f'href="{html.escape(twin)}">{w["switch"]}</a></nav>')


def _with_bar(document: str, page: Page) -> str:
    document = re.sub(r"<html[^>]*>", f'<html lang="{page.language}">', document, count=1)
    return re.sub(r"(<body[^>]*>)", lambda m: m[1] + bar(page), document, count=1)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def without_live_widgets(nb):
    """The notebook as a page with no kernel shows it: each widget output keeps its still (a
    panel's title, figure and table as HTML: labkit.lessons.widgets.Panel.still) and loses the
    widget view, and the notebook its saved widget state, so that no widget script is fetched
    from the network to draw controls that nothing could move."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return nb


def images_in(nb) -> int:
    """How many pictures a page of ``nb`` shows: one per picture output, and those a panel's
    still inlines in its HTML (which nbconvert prefers to the picture)."""
    n = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                n += "".join(data["text/html"]).count("<img ")
            elif any(k in data for k in ("image/png", "image/jpeg", "image/svg+xml")):
                n += 1
    return n


def notebook_html(page: Page, mathjax_url: str | None) -> str:
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="lab")
    if mathjax_url:
        exporter.mathjax_url = mathjax_url
    nb = without_live_widgets(nbformat.read(page.source, as_version=4))
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": page.name}})
    return body


def zh_map(text: str) -> str:
    """The notebooks section of README.zh-TW.md: the Chinese map."""
    start = text.index(ZH_MAP_HEADING)
    end = text.find("\n## ", start + len(ZH_MAP_HEADING))
    return text[start:end if end >= 0 else None]


_HEADING = re.compile(r"<h([1-6])([^>]*)>(.*?)</h\1>", re.S)


def github_anchor(heading_html: str) -> str:
    """The anchor a code host gives a markdown heading (GitHub's rule: the heading's text in
    lower case, punctuation but hyphens dropped, each space a hyphen), which is what links
    written in the repository's markdown files use."""
    text = html.unescape(re.sub(r"<[^>]+>", "", heading_html)).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def with_github_anchors(body: str) -> str:
    """Each heading of a rendered markdown file keeps the id nbconvert gave it and gains, as an
    empty anchor inside it, the id a code host gives it, so that a link written for the code
    host (README.zh-TW.md to notebooks/README.md#...) also lands in the site."""
    def one(m):
        return f'<h{m[1]}{m[2]}><a id="{github_anchor(m[3])}"></a>{m[3]}</h{m[1]}>'
    return _HEADING.sub(one, body)


def markdown_html(page: Page, mathjax_url: str | None) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    text = page.source.read_text(encoding="utf-8")
    if page.name == "index" and page.language == "zh-TW":
        text = "# labkit\n\n" + zh_map(text)
    title = TITLES[page.language][page.name]
    script = (f'<script src="{html.escape(mathjax_url)}"></script>' if mathjax_url else "")
    body = with_github_anchors(markdown2html_mistune(text))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            "<style>body{font:16px/1.5 sans-serif;margin:0}main{max-width:72em;margin:auto;"
            "padding:1em 2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:.3em .5em;vertical-align:top}code{background:#f3f3f3;padding:0 .2em}"
            f"</style>{script}</head><body><main>{body}</main></body></html>\n")


def copy_mathjax(out: Path) -> str | None:
    """MathJax into the site (from jupyter-server-mathjax); the URL pages load it from,
    relative to a language folder. None when the package is not installed."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = out / "_static" / "mathjax"
    if not (target / "MathJax.js").exists():
        shutil.copytree(static, target, dirs_exist_ok=True)
    return f"../_static/mathjax/MathJax.js?config={MATHJAX_CONFIG}"


def build(out: Path = DEFAULT_OUT, root: Path = ROOT, source_url: str | None = None,
          progress=None) -> Site:
    """Build the whole site into ``out``; returns its pages and the links that lead nowhere."""
    all_pages = pages(root)
    site = Site(all_pages)
    out.mkdir(parents=True, exist_ok=True)
    mathjax_url = copy_mathjax(out)
    # From a language folder to the checkout (results/book/en/ -> ../../..), wherever out is.
    to_root = Path(os.path.relpath(root.resolve(), (out / "en").resolve())).as_posix()
    for i, page in enumerate(all_pages):
        if progress:
            progress(i, len(all_pages), page)
        maker = notebook_html if page.source.suffix == ".ipynb" else markdown_html
        document = maker(page, mathjax_url)
        document = _with_bar(rewrite_links(document, page, all_pages, site, root, source_url,
                                           to_root), page)
        target = out / page.path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, document)
    for source, target, anchor in site.anchors:
        ids = set(re.findall(r'\sid="([^"]*)"', (out / target).read_text(encoding="utf-8")))
        if anchor not in ids and unquote(anchor) not in ids:
            site.broken.append((source, f"{target}#{anchor}"))
    write_atomic(out / "index.html",
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="refresh" content="0; url=en/index.html"><title>labkit</title></head>'
        '<body><a href="en/index.html">labkit: the notebooks</a> · '
        '<a href="zh-TW/index.html">labkit：筆記本</a></body></html>\n')
    write_atomic(out / "pages.json", json.dumps([p.path for p in all_pages], indent=1))
    return site


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m labkit.book", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder "
                   f"(default {DEFAULT_OUT.relative_to(ROOT)})")
    p.add_argument("--source-url", help="where links to the repository's files lead (a code "
                   "host's address of the repository); default: the checkout itself")
    a = p.parse_args(argv)

    def progress(i, n, page):
        print(f"[{i + 1}/{n}] {page.path}", file=sys.stderr, flush=True)
    site = build(a.out, source_url=a.source_url, progress=progress)
    print(f"built {len(site.pages)} pages: open {a.out / 'index.html'}")
    for page, href in site.broken:
        print(f"{page}: a link leads nowhere: {href}", file=sys.stderr)
    return 1 if site.broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
