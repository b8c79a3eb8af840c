"""The result tables read the simulator's record, never the simulator itself (no import
cycle anywhere in labkit: tests/test_import_graph.py)."""

import ast
import importlib
from pathlib import Path

import labkit.sim

SIM = Path(labkit.sim.__file__).parent


def _imports(path: Path) -> set[str]:
    """Sibling modules of labkit.sim that ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:                                   # from . import a, b
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labkit.sim."):
            found.add(node.module.split(".")[2])
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in SIM.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return {m: _imports(SIM / f"{m}.py") & modules for m in modules}


def test_metrics_builds_on_the_record_alone():
    graph = _graph()
    assert "engine" not in graph["metrics"]
    assert graph["record"] <= {"cost"}
    src = (SIM / "metrics.py").read_text()
    assert "engine" not in {n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)}


def test_each_module_imports_on_its_own():
    for m in sorted(_graph()):
        importlib.import_module(f"labkit.sim.{m}")
