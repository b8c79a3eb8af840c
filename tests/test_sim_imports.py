"""The simulator's modules import one another in one direction only (no cycles), and the
result tables read the simulator's record, never the simulator itself."""

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


def test_no_import_cycle_between_sim_modules():
    graph = _graph()
    state: dict[str, int] = {}          # 1: on the current path, 2: done

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, f"import cycle: {' -> '.join(path + [m, n])}"
            if n not in state:
                visit(n, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_metrics_builds_on_the_record_alone():
    graph = _graph()
    assert "engine" not in graph["metrics"]
    assert graph["record"] <= {"cost"}
    src = (SIM / "metrics.py").read_text()
    assert "engine" not in {n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)}


def test_each_module_imports_on_its_own():
    for m in sorted(_graph()):
        importlib.import_module(f"labkit.sim.{m}")
