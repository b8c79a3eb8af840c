"""labkit's modules import one another in one direction: no module imports a module that
imports it back, directly or through others, whether at the top of the file or late, inside
a function (a late import only hides a cycle: move one import and a name silently vanishes).
The data flow of docs/ARCHITECTURE.md is this graph."""

from __future__ import annotations

import ast
from pathlib import Path

import labkit

PKG = Path(labkit.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str) -> set[str]:
    """Modules of labkit that ``path`` imports, anywhere but under ``if TYPE_CHECKING:``."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rsplit(".", 1)[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    body = list(tree.body)
    # imports guarded by `if TYPE_CHECKING:` never run
    nodes = []
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        nodes.extend(n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("labkit"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("labkit"):
                continue
            found.add(mod)
            for a in node.names:                     # from . import x: x may be a module
                found.add(f"{mod}.{a.name}")
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        deps = {d for d in _imports(path, name) if d in files and d != name}
        graph[name] = deps
    return graph


def test_no_import_cycle_in_labkit():
    graph = _graph()
    assert "labkit.settings" in graph and "labkit.notebook" in graph
    state: dict[str, int] = {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph[m]):
            # a package's __init__ importing its own submodules is not a cycle back to it
            if m.startswith(n + "."):
                continue
            assert state.get(n) != 1, f"import cycle: {' -> '.join(path + [m, n])}"
            if n not in state:
                visit(n, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_the_leaves_import_no_other_labkit_module_but_their_own():
    graph = {m: deps - {"labkit"} for m, deps in _graph().items()}   # the package root is light
    assert graph["labkit.machine.runenv"] == set()
    assert graph["labkit.machine.gpu"] <= {"labkit.lang", "labkit.lang.i18n"}   # its messages
    assert graph["labkit.models.kv"] == set()
    assert graph["labkit.lang.choice"] == set()
    assert graph["labkit.settings"] <= {"labkit.models", "labkit.models.kv", "labkit.machine",
                                        "labkit.machine.runenv"}
    assert graph["labkit.models.catalog"] <= {"labkit.models", "labkit.models.kv",
                                              "labkit.models.gguf"}
    assert graph["labkit.models.embedded"] == set() and graph["labkit.models.gguf"] == set()


#: labkit's layers, lowest first. A module may import from its own layer and from the layers
#: below it, never from one above: the data flow of docs/ARCHITECTURE.md, as a rule.
LAYERS = (
    "labkit.lang",        # the two languages: which one, messages, glossary, fonts
    "labkit.machine",     # the run environment and the GPUs
    "labkit.models",      # model files and shapes, KV bytes per token
    "labkit.settings",    # every server setting, once
    "labkit.engine",      # the slot engine on llama.cpp
    "labkit.sim",         # the batching simulator
    "labkit.server",      # the HTTP front and the launcher
    "labkit.tools",       # labkit doctor
    "labkit.bench",       # the measurement harness
    "labkit.costs",       # roofline, capacity, planning
    "labkit.lessons",     # the lessons' helpers
    "labkit.exercises",   # the checked exercises
    "labkit.notebook",    # what the notebooks import
    "labkit.book",        # the rendered edition, built from the notebooks as committed
    "labkit.cli",         # the labkit command
    "labkit.__main__",
)


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the layer holding ``module`` (None: the package root itself)."""
    for i, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return i
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import in ``graph`` that reaches a layer above the importer's."""
    found = []
    for module, deps in sorted(graph.items()):
        here = layer_of(module)
        for dep in sorted(deps):
            there = layer_of(dep)
            if here is not None and there is not None and there > here:
                found.append(f"{module} imports {dep} ({LAYERS[there]} is above {LAYERS[here]})")
    return found


def test_every_module_lives_in_a_layer():
    assert [m for m in _graph() if m != "labkit" and layer_of(m) is None] == []


def test_no_layer_imports_one_above_it():
    assert upward_imports(_graph()) == []


def test_an_upward_import_is_caught():
    graph = {"labkit.models.kv": {"labkit.engine.native"},
             "labkit.engine.engine": {"labkit.models.kv"}}
    assert upward_imports(graph) == [
        "labkit.models.kv imports labkit.engine.native (labkit.engine is above labkit.models)"]
    assert layer_of("labkit.lessonsx") is None
    assert layer_of("labkit.lessons.live") == LAYERS.index("labkit.lessons")


#: What only maintainers and CI run, beside the package (docs/ARCHITECTURE.md, "Beside the
#: package"): labkit never imports it, so `pip install labkit` works without it.
BESIDE = ("authoring", "benchmarks", "tests")


def imports_from_beside(source: str) -> list[str]:
    """The imports in ``source`` that reach a folder of :data:`BESIDE`, at any depth of the file."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and not node.level
                 and node.module else [])
        found += [n for n in names if n.split(".")[0] in BESIDE]
    return found


def test_the_package_never_imports_the_maintainers_tools():
    bad = {str(p.relative_to(PKG.parent)): imports_from_beside(p.read_text())
           for p in PKG.rglob("*.py")}
    assert {k: v for k, v in bad.items() if v} == {}
    # ...and the check sees one, at the top of a file or late, inside a function
    assert imports_from_beside("import authoring.editions\n") == ["authoring.editions"]
    assert imports_from_beside("def f():\n    from authoring import seed_audit\n") == ["authoring"]
    assert imports_from_beside("from labkit.lang import fonts\n") == []
