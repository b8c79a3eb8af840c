"""`labkit.notebook` is the notebooks' one namespace, ``nb``: every ``nb.<name>`` a notebook or
a worked solution uses is listed in its ``__all__`` and resolves; the modules behind it never
import it back; importing it stays light (no llama.cpp)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from labkit import notebook

ROOT = Path(__file__).resolve().parents[1]
NB_NAME = re.compile(r"\bnb\.([A-Za-z_]\w*)")


def names_used_by_the_notebooks() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                for name in NB_NAME.findall(cell.source):
                    used.setdefault(name, set()).add(path.name)
    for path in sorted((ROOT / "notebooks" / "solutions").glob("*.py")):
        for name in NB_NAME.findall(path.read_text()):
            used.setdefault(name, set()).add(path.name)
    return used


def test_the_scan_finds_the_notebooks_names():
    used = names_used_by_the_notebooks()
    assert {"banner", "pick", "ask", "run_requests", "read_worksheet"} <= set(used)


def test_every_name_the_notebooks_use_is_exported():
    used = names_used_by_the_notebooks()
    missing = {n: sorted(where) for n, where in used.items() if n not in notebook.__all__}
    assert not missing, f"add these to labkit.notebook.__all__ (and import them): {missing}"


def test_every_exported_name_resolves():
    assert len(set(notebook.__all__)) == len(notebook.__all__), "a name is listed twice"
    for name in notebook.__all__:
        assert getattr(notebook, name, None) is not None, name


def imported_modules(module: str) -> set[str]:
    """Absolute names of the modules ``labkit/<module>.py`` imports, anywhere in its body
    (``from . import x`` and ``from .x import y`` both count as ``labkit.x``)."""
    tree = ast.parse((ROOT / "labkit" / f"{module}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:                      # a module directly under labkit/
                base = "labkit" + (f".{base}" if base else "")
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
    return out


def test_the_helpers_never_import_the_facade():
    """The modules behind ``nb`` depend on leaf modules only, never on labkit.notebook."""
    assert {"labkit.live", "labkit.planning", "labkit.runenv"} <= imported_modules("notebook")
    for module in ("live", "planning", "runenv", "widgets", "plots"):
        assert "labkit.notebook" not in imported_modules(module), module


def test_runenv_imports_the_standard_library_only():
    tree = ast.parse((ROOT / "labkit" / "runenv.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, "runenv is a leaf: no labkit imports"
            assert node.module.split(".")[0] in sys.stdlib_module_names | {"__future__"}
        elif isinstance(node, ast.Import):
            assert all(a.name.split(".")[0] in sys.stdlib_module_names for a in node.names)


@pytest.mark.slow
def test_importing_the_facade_does_not_load_llama_cpp():
    """A fresh interpreter: in this one another test may already have loaded llama.cpp."""
    code = ("import sys, labkit.notebook as nb; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'llama_cpp' "
            "or m.startswith('labkit.engine')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
