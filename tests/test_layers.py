"""accelkit's layers import only downward, function-local imports included (they hid a compiler <-> model
cycle before). The layers are data in the package (``accelkit.layers.LAYERS``, bottom first), in the order and
with the names of the design document's "Layers" list (checked below when ``../shared/DESIGN.md`` is there).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

import accelkit
from accelkit.layers import LAYERS

ROOT = Path(accelkit.__file__).parent
DESIGN = ROOT.parent.parent / "shared" / "DESIGN.md"


def design_layers(text: str) -> list[str]:
    """The layer names of the fenced block under "## Layers", bottom first (each line: names, then the concern
    after two or more spaces)."""
    section = text.split("## Layers", 1)[1]
    block = section.split("```", 2)[1]
    names = [re.split(r"\s{2,}", line.strip())[0] for line in block.splitlines() if line.strip()]
    return names[::-1]


def test_the_layers_are_the_design_documents() -> None:
    if not DESIGN.is_file():
        pytest.skip(f"{DESIGN} is not here (the design document lives beside the repository)")
    assert [name for name, _ in LAYERS] == design_layers(DESIGN.read_text(encoding="utf-8"))


def test_design_layers_reads_the_block_bottom_first() -> None:
    text = "intro\n## Layers (each imports ...)\n\n```\nviz        figures\ncompiler   passes\n```\nafter ```x```\n"
    assert design_layers(text) == ["compiler", "viz"]


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
    module's ``__getattr__`` that keeps a moved name's old path working: those go to ``old_names``). Parsed once
    per test run."""
    graph, shims = _parsed()
    if old_names is not None:
        old_names.update(shims)
    return {k: set(v) for k, v in graph.items()}


@functools.cache
def _parsed() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    old_names: dict[str, set[str]] = {}
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
        if shims:
            old_names[name] = {t for t in shims if t not in found and t != name}
        graph[name] = {t for t in found if not name.startswith(t + ".")}  # a module's own packages
    return graph, old_names


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


KNOWN_CYCLES_WITHIN_A_LAYER: list[list[str]] = []  # none left: none may be added


def test_the_graph_sees_function_local_imports() -> None:
    """The test would be blind without this: compile() imports the porting check inside a function."""
    assert "accelkit.porting.check" in import_graph()["accelkit.compiler.program"]
    assert "accelkit.families.wafer" in import_graph()["accelkit.facades.cerebras.cbtorch"]  # initialize(): a local import
    assert "accelkit.compiler.program" not in import_graph()["accelkit.compiler.manifest"]  # save needs no program


def test_every_accelkit_import_names_a_module() -> None:
    """An import of a path that is no file (an old path kept by an import hook, a typo) would be invisible to
    the checks above: accelkit's own code imports every module by its real path."""
    mods = _modules()
    unresolved = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                unresolved += [f"{name}: {a.name}" for a in node.names
                               if a.name.startswith("accelkit.") and a.name not in mods]
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("accelkit"):
                if node.module not in mods:
                    unresolved.append(f"{name}: {node.module}")
    assert unresolved == []


def test_the_facades_old_import_paths_are_the_same_modules() -> None:
    import importlib

    import accelkit.facades
    from accelkit.facades.old_paths import MOVED

    for old, new in MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new)
    import accelkit.poptorch.options
    import accelkit.samba.utils
    from accelkit.facades.poptorch import options
    from accelkit.facades.samba import utils
    assert accelkit.samba.utils is utils and accelkit.poptorch.options is options
    assert accelkit.poptorch.options.Options is options.Options  # one class under either path
    assert options.__spec__.name == "accelkit.facades.poptorch.options"  # its own spec, not the alias's
    assert accelkit.facades.old_paths.new_name("accelkit.samba.utils") == "accelkit.facades.samba.utils"
    assert accelkit.facades.old_paths.new_name("accelkit.sambaX") is None
