"""What a reader sees of the workbook's markdown: the notebooks' markdown cells and the
repository's markdown files rendered by a CommonMark renderer (markdown-it-py, with the tables
and strikethrough that JupyterLab's renderer, marked, and GitHub also read), and the bold and
italic spans that do not render as the writer meant.

CommonMark decides from the characters on each side whether a ``*`` or ``_`` opens or closes
emphasis. One that follows punctuation closes only before a space or more punctuation, so
``**Time:** text`` closes and ``**在餐廳裡：**第一位`` does not. What the reader then sees is
one of two things, and :func:`unrendered_emphasis` finds both:

- the markers themselves, as text: ``**在餐廳裡：**第一位`` (a ``*`` in ``2 * 3``, the ``_``
  of ``n_ctx`` or a character escaped on purpose, ``\\*``, are not markers);
- bold inside bold: when a later ``**`` closes, the markers pair up wrongly, and
  ``**給工程師的說法。**那張單是一個**請求**`` shows the whole run up to 請求 in bold.

Code (spans and blocks), HTML and formulas are not prose and are not looked at.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
# Folders that hold no markdown of the workbook's own: hidden ones, and those git ignores
# (.gitignore; benchmarks/gpu/carry/ is what benchmarks/gpu/pack.py writes).
LEFT_OUT = {"results", "build", "dist", "carry", "__pycache__"}

# text_join is left out so that an escaped character (\*) stays a token of its own.
RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("text_join")

# Stands in the shown text for what is not text: code, HTML, an escaped character, an image.
OTHER = "\x00"
# Formulas, which JupyterLab hands to MathJax before markdown sees them: $$...$$ and $...$.
FORMULA = re.compile(r"\$\$.+?\$\$|\$(?=\S)[^$\n]+?(?<=\S)\$", re.S)

# Emphasis markers left in shown text: a pair of doubled markers around a word or a phrase
# (**在餐廳裡：**), a pair of single ones (*開放題。*, _標籤：_), a doubled marker alone. A
# single ``_`` opens only at the start of a word and closes only at the end of one, as in
# CommonMark, so the ``_`` inside n_ctx_seq is not one.
LEFT_OVER = re.compile(r"""
      (\*\*|__) (?=\S) (?:(?!\1).)*? (?<=\S) \1
    | (?<!\*) \* (?=[^\s*]) [^*]*? (?<=[^\s*]) \* (?!\*)
    | (?<!\w) _ (?=[^\s_]) [^_]*? (?<=[^\s_]) _ (?![A-Za-z0-9_])
    | \*\* | __
""", re.X | re.S)

NESTED = {"strong_open": "bold inside bold", "em_open": "italics inside italics"}


def _shown(token) -> str:
    """What the reader sees of an inline token, as far as markers go."""
    if token.type == "text":
        return token.content
    if token.type in ("softbreak", "hardbreak"):
        return "\n"
    if token.type in ("code_inline", "html_inline", "text_special", "image"):
        return OTHER
    return ""        # markup the renderer used: emphasis and links opened and closed


def _source(tokens) -> str:
    """The inline tokens written back as markdown, near enough to find them in the source."""
    return "".join(t.markup if t.type.startswith(("strong_", "em_"))
                   else f"`{t.content}`" if t.type == "code_inline"
                   else "\n" if t.type.endswith("break") else t.content for t in tokens)


def _nested(children) -> list[tuple[str, str]]:
    """(what, span) for each bold holding a bold (italics holding italics) in one run of
    inline tokens; the span is the outer one, from its opening marker to its closing one."""
    found = []
    for kind, what in NESTED.items():
        close = kind.replace("_open", "_close")
        depth, outer, nested = 0, 0, False
        for i, token in enumerate(children):
            if token.type == kind:
                depth += 1
                if depth == 1:
                    outer, nested = i, False
                else:
                    nested = True
            elif token.type == close:
                depth -= 1
                if depth == 0 and nested:
                    found.append((what, _source(children[outer:i + 1])))
    return found


def left_over(text: str) -> list[str]:
    """The emphasis markers left in ``text``, the text a reader sees (formulas taken out), each
    with what it stands around: ``**在餐廳裡：**``."""
    return [m.group(0) for m in LEFT_OVER.finditer(FORMULA.sub(OTHER, text))]


def unrendered_emphasis(markdown: str) -> list[tuple[int, str, str]]:
    """(line, what, span) for each bold or italic span of ``markdown`` that does not render:
    markers left as text, or emphasis inside emphasis of its own kind. Lines count from 1."""
    found = []
    for block in RENDERER.parse(markdown):
        if block.type != "inline":
            continue
        line = block.map[0] + 1 if block.map else 1
        text = "".join(map(_shown, block.children))
        found += [(line, "markers shown as text", span) for span in left_over(text)]
        found += [(line, what, span) for what, span in _nested(block.children)]
    return found


# ------------------------------------------------------------------- the workbook's markdown

def markdown_files(root: Path = ROOT) -> list[Path]:
    """Every notebook and markdown file under ``root``, hidden and ignored folders left out."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in LEFT_OUT]
        found += [Path(folder) / f for f in files if f.endswith((".md", ".ipynb"))]
    return sorted(found)


def markdown_texts(path: Path) -> list[tuple[str, str]]:
    """(where, markdown) for each markdown cell of a notebook ("cell 4"), or the whole file."""
    if path.suffix != ".ipynb":
        return [("", path.read_text(encoding="utf-8"))]
    cells = nbformat.read(path, as_version=4).cells
    return [(f"cell {i}", c.source) for i, c in enumerate(cells) if c.cell_type == "markdown"]
