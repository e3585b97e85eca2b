"""accelkit's layers import only downward, function-local imports included (they hid a compiler <-> model
cycle before). From the bottom:

    bottom    errors, the argument checks (accelkit.boundary), version, hardware, graph, data, devtools, the constants registry (accelkit.constants)
    porting   check, port, the support tables
    cost      accelkit.cost (Parallel, Kernel, rates), the families' execution models (accelkit.families)
              and the performance model (sim.estimate, report, constants, the host measurements it reads)
    compiler  passes, memory plan, placement, the program and its artifact
    workflow  what composes the others: serve, validate, peers, the host's validation, the profiler, sweeps (accelkit.workflow)
    runtime   Session, the runner, the vendor facades, the zoo, ModelBox
    viz       figures
    top       widgets, cli, tour, teach, the package root
"""

from __future__ import annotations

import ast
from pathlib import Path

import accelkit

ROOT = Path(accelkit.__file__).parent

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("bottom", ("accelkit.errors", "accelkit.boundary", "accelkit._version", "accelkit.hardware", "accelkit.graph", "accelkit.data",
                "accelkit.devtools", "accelkit.constants")),  # the constants registry imports nothing
    ("porting", ("accelkit.porting",)),
    ("cost", ("accelkit.cost", "accelkit.families", "accelkit.sim", "accelkit.sim.estimate", "accelkit.sim.report",
              "accelkit.sim.constants", "accelkit.sim.host")),  # sim's report/constants/host: names kept for readers
    ("compiler", ("accelkit.compiler",)),
    ("workflow", ("accelkit.sim.serve", "accelkit.sim.validate", "accelkit.sim.measured", "accelkit.sim.stacks",
                  "accelkit.sim.peers", "accelkit.sim.bench", "accelkit.sim.host_validation", "accelkit.profiler",
                  "accelkit.workflow")),
    ("runtime", ("accelkit.runtime", "accelkit.runner", "accelkit.samba", "accelkit.cerebras", "accelkit.poptorch",
                 "accelkit.vendor", "accelkit.zoo", "accelkit.box")),
    ("viz", ("accelkit.viz",)),
    # GroqFlow's facade draws groqview() with accelkit's own figures, so it sits above viz
    ("top", ("accelkit.groqflow", "accelkit.widgets", "accelkit.cli", "accelkit.tour", "accelkit.teach", "accelkit.hub",
             "accelkit.__main__", "accelkit")),  # hub: the workshop room (reads teach's verdicts)
]


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = ("accelkit", *p.relative_to(ROOT).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside ``if TYPE_CHECKING:``: an annotation's import, never run."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _old_name(node: ast.AST, parents: dict[ast.AST, ast.AST], tree: ast.Module) -> bool:
    """Inside a module-level ``def __getattr__``: a name that moved up a layer, kept working at its old import
    path (PEP 562: imported on first use, never when the module is imported). Each is listed in OLD_NAMES."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__" and parents.get(node) is tree:
            return True
    return False


def import_graph(old_names: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Every module's accelkit imports, module-level and function-local alike (``if TYPE_CHECKING`` aside, and a
    module's ``__getattr__`` that keeps a moved name's old path working: those go to ``old_names``)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        shims: set[str] = set()
        for node in ast.walk(tree):
            if _type_checking_only(node, parents):
                continue
            into = shims if _old_name(node, parents, tree) else found
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*pkg, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in (resolve(x) for x in targets if x.startswith("accelkit")):
                if not t:
                    continue
                into.add(t)
                # importing a.b.c runs a.b's __init__ first: that is an import too (the root aside, which
                # every submodule import runs and which imports the public API on purpose)
                parent = t.rpartition(".")[0]
                while parent and parent != "accelkit":
                    into.add(parent)
                    parent = parent.rpartition(".")[0]
        found.discard(name)
        if old_names is not None and shims:
            old_names[name] = {t for t in shims if t not in found and t != name}
        graph[name] = {t for t in found if not name.startswith(t + ".")}  # a module's own packages
    return graph


def layer(module: str) -> int:
    best = max(((i, len(p)) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes
                if module == p or module.startswith(p + ".")), key=lambda t: t[1], default=None)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        layer(module)


def test_no_layer_imports_a_layer_above_it() -> None:
    upward = [f"{m} [{LAYERS[layer(m)][0]}] imports {t} [{LAYERS[layer(t)][0]}]"
              for m, targets in sorted(import_graph().items()) for t in sorted(targets) if layer(t) > layer(m)]
    assert upward == [], "\n".join(upward)


def test_no_import_cycle_crosses_layers() -> None:
    """Strongly connected modules (Tarjan) must share a layer; a cycle that spans two layers is a failure,
    and so is any new cycle inside a layer."""
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    crossing = [c for c in cycles if len({layer(m) for m in c}) > 1]
    assert crossing == []
    # inside one layer a cycle still breaks an import that starts in the middle of it (a package's
    # __init__ half run): only these known ones remain, each to be removed, none to be added
    assert sorted(cycles) == sorted(KNOWN_CYCLES_WITHIN_A_LAYER), cycles


OLD_NAMES = {
    # compile searches over splits and plans with the performance model: it moved up to the workflow layer
    "accelkit.compiler": {"accelkit.workflow", "accelkit.workflow.compiling", "accelkit.workflow.compare"},
    "accelkit.compiler.program": {"accelkit.workflow", "accelkit.workflow.compiling"},
    # fallback_or_port compiles twice and compares: a workflow
    "accelkit.compiler.compare": {"accelkit.workflow", "accelkit.workflow.compare"},
}
"""Modules whose ``__getattr__`` keeps a name's old import path working after it moved up a layer (imported on
first use only, so no import cycle runs): each is listed here, and nothing else may import upward that way."""


def test_old_import_paths_are_the_listed_ones_only() -> None:
    found: dict[str, set[str]] = {}
    import_graph(found)
    assert found == OLD_NAMES


def test_old_import_paths_still_give_the_moved_names() -> None:
    import accelkit.compiler
    import accelkit.compiler.compare
    import accelkit.compiler.program
    from accelkit.workflow import compare, compiling

    assert accelkit.compiler.compile is accelkit.compiler.program.compile is compiling.compile is accelkit.compile
    assert accelkit.compiler.fallback_or_port is accelkit.compiler.compare.fallback_or_port is compare.fallback_or_port


KNOWN_CYCLES_WITHIN_A_LAYER = [
    ["accelkit.teach.checkers", "accelkit.teach.exercises", "accelkit.teach.solutions"],
]


def test_the_graph_sees_function_local_imports() -> None:
    """The test would be blind without this: compile() imports the porting check inside a function."""
    assert "accelkit.porting.check" in import_graph()["accelkit.compiler.program"]
    assert "accelkit.families.wafer" in import_graph()["accelkit.cerebras.cbtorch"]  # initialize(): a local import
    assert "accelkit.compiler.program" not in import_graph()["accelkit.compiler.manifest"]  # save needs no program
