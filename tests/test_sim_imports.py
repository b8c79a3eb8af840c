"""The result tables read the simulator's record, never the simulator itself (no import
cycle anywhere in labkit: tests/test_import_graph.py)."""

import ast
from pathlib import Path

import pytest

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


def fails_alone(modules: list[str], path: str | None = None) -> dict[str, str]:
    """Each of ``modules`` imported in a fresh interpreter of its own (with ``path`` first on
    sys.path): those that fail, with the last line of the error. One process for them all would
    hide a module that works only once another has been imported."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [p for p in (path, os.environ.get("PYTHONPATH")) if p]))
    out = {}
    for m in modules:
        r = subprocess.run([sys.executable, "-c", f"import {m}"], capture_output=True, text=True,
                           env=env, timeout=120)
        if r.returncode:
            out[m] = (r.stderr.strip().splitlines() or ["?"])[-1]
    return out


@pytest.mark.slow
def test_each_module_imports_on_its_own(tmp_path):
    assert fails_alone([f"labkit.sim.{m}" for m in sorted(_graph())]) == {}
    # ...and a module that works only after another was imported is caught
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "b.py").write_text("import planted\nY = planted.a.X\n")     # never imports a
    assert list(fails_alone(["planted.a", "planted.b"], str(tmp_path))) == ["planted.b"]
