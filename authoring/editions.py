"""The workbook's two editions: each notebook in ``notebooks/`` has a Traditional Chinese
twin in ``notebooks/zh-TW/`` with the same cells in the same order. Code cells are equal,
character for character, except the language line of the first code cell::

    nb.use_language("en")      # 語言 language: "en" | "zh-TW"

which says ``"zh-TW"`` in the Chinese edition. Markdown cells are the prose, one Chinese cell
for each English one.

How to keep them in step: edit the English notebook's code (or the Chinese one's, then copy
it back by hand), then run ::

    python -m authoring.editions sync      # copy every code cell from English to Chinese
    python -m authoring.editions sync 03   # the same for one notebook
    python -m authoring.editions check     # what differs, cell by cell (tests/test_editions.py)

``sync`` copies code cells and cell tags from each English notebook into its twin and keeps
the twin's Chinese prose, matching cells by their id (a twin's cell has its English cell's),
and the twin's own outputs: each edition carries the outputs of its own reference run
(:mod:`authoring.outputs`, which says when a cell's code changed after its outputs were made). A cell
added to the English edition arrives in the Chinese one with its English prose under a
``<!-- translate -->`` mark, which the check reports until someone translates it; a cell
removed from the English edition is removed from the twin. A twin that does not exist yet is
created the same way, all of its prose marked.

The check also reads the Chinese prose's bold and italic labels: one written with its
full-width punctuation inside the markers, ``**在餐廳裡：**第一位``, does not render (the reader
sees the asterisks), and the check says how to write it, ``**在餐廳裡**：第一位``.

And it reads the Chinese prose for the glossary's words: a term written another way than the
glossary chose (調度 where :mod:`labkit.lang.glossary` says 排程, 詞元 where it says token) is
named with its cell and the word to write. Code, formulas, links' targets, English titles in
italics and the seed passages quoted word for word in 「」 (:data:`labkit.lang.glossary.SEED_QUOTES`)
are not read: a program name, ``text_chunks``, keeps its spelling, and a seed keeps its words.

What the Chinese edition prints is Chinese too: :func:`english_printed_in` finds the English
phrases (three words or more) in a cell's outputs, and conftest.py fails each cell of a zh-TW
notebook that prints one when nbval runs it.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import nbformat

from labkit.lang.fonts import PREFERRED

ROOT = Path(__file__).resolve().parents[1] / "notebooks"
TWIN_DIR = "zh-TW"
LANGUAGE_LINE = re.compile(r'^nb\.use_language\("(?P<lang>[^"]*)"\)', re.M)
TRANSLATE_MARK = "<!-- translate -->"
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def english_notebooks(root: Path = ROOT) -> list[Path]:
    return sorted(root.glob("*.ipynb"))


def twin(path: Path) -> Path:
    """The Chinese edition of the English notebook ``path``."""
    return path.parent / TWIN_DIR / path.name


def _neutral(source: str) -> str:
    """The code with its language line's language taken out."""
    return LANGUAGE_LINE.sub('nb.use_language("…")', source)


def _with_language(source: str, language: str) -> str:
    return LANGUAGE_LINE.sub(f'nb.use_language("{language}")', source)


def language_of(nb) -> list[str]:
    """The languages named by the notebook's language lines, in order."""
    return [m["lang"] for c in nb.cells if c.cell_type == "code"
            for m in LANGUAGE_LINE.finditer(c.source)]


def _tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def _fresh(cell, language: str):
    """A copy of the English ``cell`` for the Chinese edition, with the same id: code with its
    language line set, prose marked for translation."""
    if cell.cell_type == "code":
        new = nbformat.v4.new_code_cell(_with_language(cell.source, language))
    elif cell.cell_type == "markdown":
        new = nbformat.v4.new_markdown_cell(f"{TRANSLATE_MARK}\n{cell.source}")
    else:
        new = nbformat.v4.new_raw_cell(cell.source)
    new["id"] = cell["id"]
    if _tags(cell):
        new.metadata["tags"] = _tags(cell)
    return new


def synced(english, chinese=None, language: str = "zh-TW"):
    """The Chinese notebook with every code cell and tag taken from ``english`` and the prose
    of ``chinese`` kept: cells are matched by their id, which a twin's cell shares with its
    English cell."""
    out = nbformat.v4.new_notebook()
    out.metadata = dict(english.metadata)
    if chinese is not None and "labkit" in chinese.metadata:   # its own reference run
        out.metadata["labkit"] = chinese.metadata["labkit"]
    else:
        out.metadata.pop("labkit", None)
    prose = {c["id"]: c for c in (chinese.cells if chinese is not None else [])
             if c.cell_type != "code"}
    ran = {c["id"]: c for c in (chinese.cells if chinese is not None else [])
           if c.cell_type == "code"}
    cells = []
    for en in english.cells:
        if en.cell_type == "code":
            new = _fresh(en, language)
            old = ran.get(en["id"])
            if old is not None:     # the twin's own outputs stay (authoring.outputs says if stale)
                new.outputs, new.execution_count = old.outputs, old.execution_count
                if "labkit" in old.metadata:
                    new.metadata["labkit"] = old.metadata["labkit"]
            cells.append(new)
            continue
        zh = prose.get(en["id"])
        if zh is None or zh.cell_type != en.cell_type:
            cells.append(_fresh(en, language))
            continue
        new = nbformat.v4.new_markdown_cell(zh.source) if zh.cell_type == "markdown" \
            else nbformat.v4.new_raw_cell(zh.source)
        new["id"] = en["id"]
        if _tags(en):
            new.metadata["tags"] = _tags(en)
        cells.append(new)
    out.cells = cells
    return out


# ---------------------------------------------------------------------------- the check

NOT_PROSE = [
    re.compile(r"```.*?```", re.S),            # code blocks
    re.compile(r"`[^`]*`"),                    # code spans
    re.compile(r"<!--.*?-->", re.S),           # comments
    re.compile(r"\]\([^)]*\)"),                # link targets
    re.compile(r"https?://\S+"),               # bare addresses
    re.compile(r"\$[^$]*\$"),                  # formulas
    re.compile(r"<[^>]+>"),                    # HTML tags
]
SKIP_IN_PROSE = NOT_PROSE + [
    re.compile(r"(?<![*\w])\*(?!\*)[^*\n]+\*(?!\*)"),  # *a title in italics* (a paper's)
]
# An English word: a letter, then letters, digits, apostrophes and hyphens (p50, held-out); a
# unit written with a slash is one word (tok/s). A piece of a program's name is no word: a flag
# (--kv-unified), a route (/props), a dotted or underscored name (llama.cpp, n_ctx_slot).
WORD = (r"(?<![A-Za-z0-9_.\-/])(?<![A-Za-z0-9]['’])"      # not inside a name, nor the s of 's
        r"[A-Za-z](?:[A-Za-z0-9-]|['’](?=[A-Za-z]))*"         # held-out, p50, don't
        r"(?:/[A-Za-z](?:[A-Za-z0-9-]|['’](?=[A-Za-z]))*)*"   # tok/s
        r"(?![A-Za-z0-9_/\-]|\.[A-Za-z0-9])")                 # not n_ of n_ctx, llama of llama.cpp


def english_run(words: int) -> re.Pattern:
    """``words`` or more English words in a row, apart only by spaces and commas."""
    return re.compile(rf"{WORD}(?:[ ,]+{WORD}){{{words - 1},}}")


# Five English words in a row, outside code, formulas and links: a sentence left untranslated.
ENGLISH_RUN = english_run(5)


def english_runs(markdown: str) -> list[str]:
    """Runs of five or more English words in a Chinese cell's prose, outside code, formulas,
    links and titles in italics; lines with a web address (a reference) are left out."""
    text = "\n".join(line for line in markdown.splitlines()
                     if "http://" not in line and "https://" not in line)
    for pattern in SKIP_IN_PROSE:
        text = pattern.sub(" ", text)
    return [m.group(0) for m in ENGLISH_RUN.finditer(text)]


# ---------------------------------------------------------------------------- what the Chinese edition prints

# English a Chinese notebook may print, three words or more in a row: a regular expression
# each, searched in the printed line; a phrase inside what it matches is allowed. Everything
# else the Chinese edition prints is in Chinese.
ENGLISH_ALLOWED_IN_OUTPUT = [
    "|".join(map(re.escape, PREFERRED)),      # a font's name (labkit.lang.fonts)
    r"NVML(：| 列出 GPU 時失敗：)[^）\n]*",      # NVML's own error (labkit.machine.gpu)
    r"(?<=模型)[：\s]+[^（\n]+",                # a model's name, from its GGUF (banner, doctor)
    r"^GPU \d+\s+[^：\n]+",                     # a GPU's device and name, as ggml or NVML give them
    r"\b(llama|ggml|gguf)_\w+: .*",              # a log line of llama.cpp (llama_context: ...)
    r"\b(srv|slot|que|main) +\w+: .*",           # and of llama-server (srv  load_model: ...)
    r"HTTP \d{3}[ :：（][^」\n]*",                # an error's body after its status, to its quote's end
    r"^Context size has been exceeded\.$",       # the body of the engine's HTTP 500, alone
    r"\b[\w-]+ (split|unified) np\d+\b",          # a classroom config, a key the code groups by
    r"參考 \w+：[^；\n]*",                         # a reference run's device and machine, as named by
]                                                 # llama.cpp and the CPU (labkit.lessons.reference)
# A printed line of Python (a function's source): a statement, an assignment, a call or a
# comment, after the line's number if it has one. Its words are the program's, not prose.
PYTHON_LINE = re.compile(r"^\s*(\d+\s+)?(#|@|(def|class|return|if|elif|else|for|while|with|"
                         r"try|except|yield|raise|assert|import|from)\b|[A-Za-z_][\w.\[\]\"']* *[-+*/]?= "
                         r"|[A-Za-z_][\w.]*\()", re.A)
# Three English words in a row in what a cell prints: a sentence, not a name or a unit.
PRINTED_RUN = english_run(3)
# Left out of what a cell prints before it is read: code spans, and quoted strings (a value's
# repr or JSON: a model's answer, a list of names), which are data, not words labkit chose; a
# quote a table's column width cut short counts as one ("'' vs ' railway station is f...").
SKIP_IN_OUTPUT = [re.compile(r"`[^`]*`"), re.compile(r"(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])"),
                  re.compile(r'"[^"\n]*"'), re.compile(r"(?<![A-Za-z])'[^'\n]*\.\.\.(?=\s|$)")]
_HTML_DROP = re.compile(r"<(style|script)\b.*?</\1>", re.S | re.I)
_HTML_TAG = re.compile(r"<[^>]+>")


def output_text(output) -> str:
    """The text people read in one output of a cell: its standard output, or a display's
    table (text/html, its tags and styles dropped) or text; a picture and a widget (with the
    text/plain of their repr, never shown) and standard error (libraries' warnings and
    progress bars) are left out."""
    import html
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "") if output.get("name") == "stdout" else ""
    data = output.get("data", {})
    if kind not in ("display_data", "execute_result") or any(
            k.startswith("image/") or k == "application/vnd.jupyter.widget-view+json" for k in data):
        return ""
    if "text/html" in data:
        page = _HTML_DROP.sub(" ", "".join(data["text/html"]))
        return html.unescape(_HTML_TAG.sub("\n", page))
    return "".join(data.get("text/plain", ""))


def printed_english(outputs) -> list[str]:
    """The English runs of three or more words in a cell's ``outputs`` (nbformat output
    dicts), other than those :data:`ENGLISH_ALLOWED_IN_OUTPUT` allows; code spans, quoted
    strings, lines of Python and lines with a web address are left out."""
    found = []
    for output in outputs:
        for line in output_text(output).splitlines():
            if "http://" in line or "https://" in line or PYTHON_LINE.match(line):
                continue
            for pattern in SKIP_IN_OUTPUT:
                line = pattern.sub(lambda m: " " * len(m.group(0)), line)
            allowed = [a.span() for pattern in ENGLISH_ALLOWED_IN_OUTPUT
                       for a in re.finditer(pattern, line)]
            found += [m.group(0) for m in PRINTED_RUN.finditer(line)
                      if not any(start <= m.start() and m.end() <= end for start, end in allowed)]
    return found


def english_printed_in(path, cell: int, outputs) -> list[str]:
    """One line per English phrase the Chinese notebook ``path`` printed in cell ``cell``,
    naming the notebook, the cell and the phrase (empty when it printed none)."""
    name = "/".join(Path(path).parts[-2:])
    return [f"{name} cell {cell}: English printed: {phrase!r}"
            for phrase in printed_english(outputs)]


def differences(english, chinese, language: str = "zh-TW") -> list[str]:
    """Where the two editions are out of step, one line each (empty when they agree):
    cell count, types, tags, code, and the language lines."""
    out = []
    if language_of(english) != ["en"]:
        out.append(f'English edition: one language line nb.use_language("en") expected, '
                   f"found {language_of(english)}")
    if language_of(chinese) != [language]:
        out.append(f'{language} edition: one language line nb.use_language("{language}") '
                   f"expected, found {language_of(chinese)}")
    if len(english.cells) != len(chinese.cells):
        out.append(f"{len(english.cells)} cells in English, {len(chinese.cells)} in {language}")
    for i, (en, zh) in enumerate(zip(english.cells, chinese.cells)):
        if en.cell_type != zh.cell_type or en.get("id") != zh.get("id"):
            out.append(f"cell {i}: {en.cell_type} {en.get('id')} in English, {zh.cell_type} "
                       f"{zh.get('id')} in {language}")
            continue
        if _tags(en) != _tags(zh):
            out.append(f"cell {i}: tags {_tags(en)} in English, {_tags(zh)} in {language}")
        if en.cell_type == "code" and _neutral(en.source) != _neutral(zh.source):
            diff = difflib.unified_diff(_neutral(en.source).splitlines(),
                                        _neutral(zh.source).splitlines(), "English", language,
                                        lineterm="", n=0)
            out.append(f"cell {i}: code differs\n  " + "\n  ".join(list(diff)[2:]))
    return out


def untranslated(chinese) -> list[str]:
    """Prose cells of the Chinese edition that are not (yet) Chinese: marked for translation,
    without a Chinese character, or with an English sentence left in them."""
    out = []
    for i, cell in enumerate(chinese.cells):
        if cell.cell_type != "markdown":
            continue
        lines = [l for l in cell.source.splitlines() if l.strip() and l.strip() != TRANSLATE_MARK]
        first = lines[0][:60] if lines else ""
        if TRANSLATE_MARK in cell.source:
            out.append(f"cell {i}: marked {TRANSLATE_MARK}: {first}")
        elif not CJK.search(cell.source):
            out.append(f"cell {i}: no Chinese: {first}")
        else:
            out.extend(f"cell {i}: English left: {run!r}" for run in english_runs(cell.source))
    return out


# A bold or italic label in Chinese prose keeps its full-width punctuation outside the markers:
# **在餐廳裡**：第一位. Inside them, **在餐廳裡：**第一位, CommonMark (and marked, JupyterLab's
# renderer) does not close the emphasis before the letter that follows, and the reader sees the
# asterisks, or bold that runs on to the next **.
FULL_WIDTH_STOPS = "，。、；：？！"
EMPHASIS_HOWTO = ("write **標籤**： with the full-width punctuation outside the markers: inside "
                  "them, CommonMark closes no emphasis before a letter, and the reader sees "
                  "the asterisks")
# A paragraph break, or a run of one or two asterisks (three or more are no label's).
_BREAK_OR_MARKER = re.compile(r"\n[ \t]*\n|(?<!\*)\*\*?(?!\*)")


def punctuation_inside_emphasis(markdown: str) -> list[tuple[str, str]]:
    """(span, fix) for each bold or italic span of ``markdown`` whose text ends in full-width
    punctuation (**在餐廳裡：**), with the fix: the punctuation moved outside (**在餐廳裡**：).
    Markers pair in order within a paragraph, as a writer means them; code, formulas, links'
    targets and HTML are left out, and so is a ``*`` with a space on each side (a list's bullet,
    2 * 3)."""
    text = markdown
    for pattern in NOT_PROSE:                       # blanked, so that places stay where they are
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    found, opened = [], {}
    for m in _BREAK_OR_MARKER.finditer(text):
        marker = m.group(0)
        if marker.startswith("\n"):
            opened = {}
            continue
        before, after = text[m.start() - 1:m.start()], text[m.end():m.end() + 1]
        if (before or " ").isspace() and (after or " ").isspace():
            continue
        opening = opened.pop(marker, None)
        if opening is None:
            opened[marker] = m
            continue
        inside = markdown[opening.end():m.start()]
        stops = len(inside) - len(inside.rstrip(FULL_WIDTH_STOPS))
        if 0 < stops < len(inside):
            found.append((markdown[opening.start():m.end()],
                          f"{marker}{inside[:-stops]}{marker}{inside[-stops:]}"))
    return found


def emphasis_to_fix(chinese) -> list[str]:
    """Bold and italic spans of the Chinese edition's prose with full-width punctuation inside
    their markers, each with how to write it."""
    return [f"cell {i}: {span} should read {fix} ({EMPHASIS_HOWTO})"
            for i, cell in enumerate(chinese.cells) if cell.cell_type == "markdown"
            for span, fix in punctuation_inside_emphasis(cell.source)]


# ------------------------------------------------------------------- the glossary's words

WORDS_HOWTO = "one word per term: labkit/lang/glossary.py"
_QUOTE = re.compile(r"「([^「」]*)」")
_ENGLISH_ITALICS = re.compile(r"(?<![*\w])\*(?!\*)[^*\n\u3400-\u9fff]+\*(?!\*)")


def prose_for_words(markdown: str) -> str:
    """``markdown`` with what the glossary check does not read blanked out: code, formulas,
    links' targets, HTML, English titles in italics, and the seed passages quoted word for word
    (「放上碼表」, :data:`labkit.lang.glossary.SEED_QUOTES`)."""
    from labkit.lang.glossary import SEED_QUOTES
    text = markdown
    for pattern in NOT_PROSE + [_ENGLISH_ITALICS]:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return _QUOTE.sub(lambda m: " " * len(m.group(0)) if m.group(1) in SEED_QUOTES
                      else m.group(0), text)


def words_to_fix(chinese) -> list[str]:
    """Words of the Chinese edition's prose that the glossary writes another way, one line per
    cell and word, with the word to write."""
    from labkit.lang.glossary import avoided
    return [f"cell {i}: {wrong} should read {right} ({WORDS_HOWTO})"
            for i, cell in enumerate(chinese.cells) if cell.cell_type == "markdown"
            for wrong, right in avoided(prose_for_words(cell.source)).items()]


def read(path: Path):
    return nbformat.read(path, as_version=4)


def write(nb, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def sync(root: Path = ROOT, names: list[str] | None = None) -> list[Path]:
    """Bring every Chinese edition (or those of the notebooks ``names``, "03_kv_bytes" or
    "03") in step with its English notebook; the files changed."""
    changed = []
    for en_path in english_notebooks(root):
        if names and not any(en_path.stem.startswith(n) for n in names):
            continue
        zh_path = twin(en_path)
        english = read(en_path)
        chinese = read(zh_path) if zh_path.exists() else None
        new = synced(english, chinese)
        if chinese is None or nbformat.writes(new) != nbformat.writes(chinese):
            write(new, zh_path)
            changed.append(zh_path)
    return changed


def report(root: Path = ROOT, names: list[str] | None = None) -> dict[str, list[str]]:
    """For each notebook (or those named): how its two editions differ, what is left to
    translate, the bold or italic labels to write with their punctuation outside, and the
    words the glossary writes another way."""
    out = {}
    for en_path in english_notebooks(root):
        if names and not any(en_path.stem.startswith(n) for n in names):
            continue
        zh_path = twin(en_path)
        if not zh_path.exists():
            out[en_path.name] = [f"no {TWIN_DIR} edition: run python -m authoring.editions sync"]
            continue
        chinese = read(zh_path)
        out[en_path.name] = (differences(read(en_path), chinese) + untranslated(chinese)
                             + emphasis_to_fix(chinese) + words_to_fix(chinese))
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["sync"]:
        for path in sync(names=argv[1:]):
            print(f"updated {path}")
        argv = ["check", *argv[1:]]
    if argv[:1] != ["check"]:
        print("usage: python -m authoring.editions sync [NN ...] | check [NN ...]", file=sys.stderr)
        return 2
    problems = report(names=argv[1:])
    for name, lines in problems.items():
        for line in lines:
            print(f"{name}: {line}")
    bad = sum(len(v) for v in problems.values())
    print(f"{len(problems)} notebooks, {bad} difference(s), untranslated cell(s), label(s) or "
          "word(s) to rewrite")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
