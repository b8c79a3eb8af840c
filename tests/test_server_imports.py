"""labkit's server reaches llama.cpp only through the engine: no module under labkit/server
imports llama_cpp, at the top of the file or late, inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import labkit

SERVER = Path(labkit.__file__).parent / "server"


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
