"""labkit reaches llama.cpp through its engine: no module outside ``labkit/engine`` imports
llama_cpp, at the top of the file or late, inside a function, except the lesson that teaches
the low-level API by calling it by hand (``labkit/lessons/handbuilt.py``, notebook 02)."""

from __future__ import annotations

import ast
from pathlib import Path

import labkit

PACKAGE = Path(labkit.__file__).parent
SERVER = PACKAGE / "server"
# Where llama_cpp may be imported: the engine, and the lesson built on the raw C API.
ALLOWED = ("engine/", "lessons/handbuilt.py")


def llama_cpp_imports(source: str) -> list[int]:
    """The line numbers of every import of llama_cpp (or of a module inside it) in
    ``source``, wherever it stands."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        if any(n == "llama_cpp" or n.startswith("llama_cpp.") for n in names):
            lines.append(node.lineno)
    return lines


def test_the_detector_finds_an_import_anywhere():
    source = ("import os\n"
              "def piece(vocab):\n"
              "    import llama_cpp\n"
              "    from llama_cpp.llama_grammar import JSON_GBNF\n"
              "    return os\n"
              "from labkit.engine import native\n"
              "import llama_cpp_extra\n")
    assert llama_cpp_imports(source) == [3, 4]
    assert llama_cpp_imports("from . import llama_cpp_like\nimport json\n") == []


def test_no_server_module_imports_llama_cpp():
    files = sorted(SERVER.rglob("*.py"))
    assert {"app.py", "routes.py", "shapes.py", "validate.py"} <= {p.name for p in files}
    found = {p.name: llama_cpp_imports(p.read_text()) for p in files}
    assert {name: lines for name, lines in found.items() if lines} == {}


def outside_the_engine(files: dict[str, str]) -> dict[str, list[int]]:
    """``{relative path: import lines}`` for the files of ``files`` (relative path -> source)
    that import llama_cpp where :data:`ALLOWED` does not let them."""
    found = {rel: llama_cpp_imports(src) for rel, src in files.items()
             if not rel.startswith(ALLOWED)}
    return {rel: lines for rel, lines in found.items() if lines}


def test_only_the_engine_and_the_hand_built_lesson_import_llama_cpp():
    files = {p.relative_to(PACKAGE).as_posix(): p.read_text() for p in PACKAGE.rglob("*.py")}
    assert "tools/doctor.py" in files and "engine/build.py" in files
    assert outside_the_engine(files) == {}


def test_an_import_outside_the_engine_is_reported():
    files = {"engine/native.py": "import llama_cpp\n",
             "lessons/handbuilt.py": "import llama_cpp\n",
             "tools/doctor.py": "def f():\n    from llama_cpp import Llama\n"}
    assert outside_the_engine(files) == {"tools/doctor.py": [2]}
