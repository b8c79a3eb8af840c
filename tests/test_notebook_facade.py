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
from test_import_graph import _graph

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
    assert {"banner", "pick", "ask", "run_requests", "beside_reference"} <= set(used)


def test_every_name_the_notebooks_use_is_exported():
    used = names_used_by_the_notebooks()
    missing = {n: sorted(where) for n, where in used.items() if n not in notebook.__all__}
    assert not missing, f"add these to labkit.notebook.__all__ (and import them): {missing}"


def test_every_exported_name_resolves():
    assert len(set(notebook.__all__)) == len(notebook.__all__), "a name is listed twice"
    for name in notebook.__all__:
        assert getattr(notebook, name, None) is not None, name


def test_the_helpers_never_import_the_facade():
    """The modules behind ``nb`` never import labkit.notebook: it is the top of the graph."""
    graph = _graph()
    assert {"labkit.lessons.live", "labkit.costs.planning", "labkit.machine.runenv"} <= graph["labkit.notebook"]
    assert [m for m, deps in graph.items() if "labkit.notebook" in deps] == []


@pytest.mark.parametrize("path", ["machine/runenv.py", "lang/choice.py"])
def test_the_leaves_import_the_standard_library_only(path):
    tree = ast.parse((ROOT / "labkit" / path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path} is a leaf: no labkit imports"
            assert node.module.split(".")[0] in sys.stdlib_module_names | {"__future__"}
        elif isinstance(node, ast.Import):
            assert all(a.name.split(".")[0] in sys.stdlib_module_names for a in node.names)


def labkit_imports_past_the_facade(source: str) -> list[str]:
    """The imports of labkit in ``source`` that do not go through labkit.notebook."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "labkit":
            names = [a.name for a in node.names]
            if node.module == "labkit.notebook" or (node.module == "labkit" and names == ["notebook"]):
                continue
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "labkit"]
    return found


def test_a_notebook_reaches_labkit_only_through_the_facade():
    bad = {}
    sources = [(p, c.source) for p in sorted((ROOT / "notebooks").rglob("*.ipynb"))
               for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"]
    sources += [(p, p.read_text()) for p in sorted((ROOT / "notebooks" / "solutions").glob("*.py"))]
    for path, source in sources:
        if found := labkit_imports_past_the_facade(source):
            bad.setdefault(path.relative_to(ROOT).as_posix(), []).extend(found)
    assert bad == {}, "import these through labkit.notebook (add them to EXPORTS)"


def test_an_import_past_the_facade_is_caught():
    source = ("from labkit import notebook as nb\nfrom labkit.notebook import kv\n"
              "from labkit.models import kv\nimport labkit.sim\n"
              "def f():\n    from labkit import widgets\n")
    assert labkit_imports_past_the_facade(source) == [
        "from labkit.models import kv", "import labkit.sim", "from labkit import widgets"]


def test_every_export_names_where_it_lives():
    for name, where in notebook.EXPORTS.items():
        module, _, attr = where.partition(":")
        assert module.startswith("labkit."), name
        assert (attr or module.rsplit(".", 1)[1]) == name or name in {"sim_engine"}, \
            f"{name} is exported under another name than its own: {where}"
    with pytest.raises(AttributeError, match="no attribute 'not_there'"):
        notebook.not_there


@pytest.mark.slow
def test_importing_the_facade_does_not_load_llama_cpp():
    """A fresh interpreter: in this one another test may already have loaded llama.cpp."""
    code = ("import sys, labkit.notebook as nb; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'llama_cpp' "
            "or m.startswith('labkit.engine')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
