"""The matcher's modules import one another in one direction: their import graph has no cycle,
and every import of one matcher module by another is at the top of the module, where a reader
sees it (an import inside a function is how a cycle hides). Read from the source with `ast`,
so that an import inside a function counts as one at the top.

An edge goes to the module an import names: `from matcher.services import enqueue` to
matcher.services.enqueue, `from matcher.services import drop_if_empty` to the package
matcher.services (its __init__). Importing a submodule first runs its package's __init__,
which imports the package's submodules: that implicit edge is not counted, else every package
that re-exports its modules would be a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

MATCHER = Path(__file__).resolve().parent.parent
ROOT = MATCHER.parent

# Importers allowed to import matcher modules inside a function, each for its reason.
FUNCTION_LEVEL_EXEMPT = {
    # Django imports an app's AppConfig module while the app registry is still loading, before
    # any model can be; MatcherConfig.ready() is where the modules that register themselves
    # (cycles, parameters, /metrics) are imported, once it is ready.
    "matcher.apps",
}


def matcher_modules() -> dict[str, Path]:
    """{module name: path} of the matcher package, its tests and migrations left out."""
    found = {}
    for path in sorted(MATCHER.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "tests" in parts or "migrations" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _in_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
    return False


def imports(name: str, path: Path, modules: set[str]) -> Iterator[tuple[str, int, bool]]:
    """(imported matcher module, line, inside a function) of every import in the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # A name that is a submodule is an edge to it; any other, to the module imported from.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        inside = _in_function(node, parents)
        for target in dict.fromkeys(targets):
            if target in modules and target != name:
                yield target, node.lineno, inside


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """({module: the matcher modules it imports}, [(module, line, imported) inside functions])."""
    modules = matcher_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    inside: list[tuple[str, int, str]] = []
    for name, path in modules.items():
        for target, line, in_function in imports(name, path, set(modules)):
            graph[name].add(target)
            if in_function:
                inside.append((name, line, target))
    return graph, inside


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as [a, b, ..., a], or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def test_the_graph_finds_a_cycle_where_there_is_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_matcher_modules_import_one_another_without_a_cycle():
    graph, _ = import_graph()
    # The modules were read and their imports resolved, submodules named from their package too.
    assert "matcher.services.enqueue" in graph["matcher.services"]
    assert "matcher.services.housekeeping" in graph["matcher.services.enqueue"]
    assert "matcher.taskqueue_priorities" in graph["matcher.services.housekeeping"]
    cycle = find_cycle(graph)
    assert not cycle, "the matcher's modules import in a circle: " + " -> ".join(cycle)


def test_no_matcher_module_imports_another_inside_a_function():
    _, inside = import_graph()
    found = [(m, line, t) for m, line, t in inside if m not in FUNCTION_LEVEL_EXEMPT]
    assert not found, "matcher modules imported inside a function (import them at the top):\n" + (
        "\n".join(f"  {m}:{line} -> {t}" for m, line, t in found)
    )
    assert any(m == "matcher.apps" for m, _, _ in inside)  # the exempt ones are still seen
